//! Ending associations: CLOSE and CLOSE_ACK (RFC 7401 §6.14, §6.15), and the teardown that
//! follows (SAs removed, a known peer's policy back to its trap).

use super::{HipDriver, RETRANSMIT_US, State, Transmit, install};
use crate::keying::plane::ControlPlane;
use crate::log::{Level, log_event};
use hip::HostIdentityTag;
use std::net::IpAddr;

impl HipDriver {
    /// `hipsec hip close HIT`: sends CLOSE (§6.14); the association ends on the CLOSE_ACK, or
    /// when the retransmissions run out.
    pub fn close(&mut self, peer: HostIdentityTag, now_us: u64) -> Result<Vec<Transmit>, String> {
        let mut a =
            self.assocs.remove(&peer).ok_or_else(|| format!("no association with {peer}"))?;
        let (est, in_key, out_key) = match a.state {
            State::Established { est, in_key, out_key, .. } => (est, in_key, out_key),
            other => {
                a.state = other;
                self.assocs.insert(peer, a);
                return Err(format!("the association with {peer} is not established"));
            }
        };
        let mut nonce = vec![0u8; 16];
        crypto::default_provider().fill_random(&mut nonce).map_err(|e| e.to_string())?;
        let close = hip::close::close(&self.host, &est, &nonce, a.local, a.locator)
            .map_err(|e| e.to_string())?;
        let out = vec![Transmit { to: a.locator, bytes: close.clone() }];
        a.state = State::Closing { est, in_key, out_key, nonce, close };
        a.resend_at_us = now_us + RETRANSMIT_US;
        a.tries = 1;
        log_event!(Level::Info, "hip-close", "peer" => peer.to_string());
        self.assocs.insert(peer, a);
        Ok(out)
    }

    pub(super) fn on_close(
        &mut self,
        plane: &mut ControlPlane,
        sender: HostIdentityTag,
        from: IpAddr,
        bytes: &[u8],
    ) -> Vec<Transmit> {
        let ack = match self.assocs.get(&sender).map(|a| &a.state) {
            Some(State::Established { est, .. } | State::Closing { est, .. }) => {
                hip::close::on_close(&self.host, est, bytes, from, self.here)
            }
            _ => {
                self.refuse("CLOSE", from, "no association with this HIT");
                return Vec::new();
            }
        };
        match ack {
            Ok(ack) => {
                self.teardown(plane, sender, "peer-closed");
                vec![Transmit { to: from, bytes: ack }]
            }
            Err(e) => {
                self.refuse("CLOSE", from, e);
                Vec::new()
            }
        }
    }

    pub(super) fn on_close_ack(
        &mut self,
        plane: &mut ControlPlane,
        sender: HostIdentityTag,
        from: IpAddr,
        bytes: &[u8],
    ) {
        let r = match self.assocs.get(&sender).map(|a| &a.state) {
            Some(State::Closing { est, nonce, .. }) => {
                hip::close::on_close_ack(est, nonce, bytes, from, self.here)
            }
            _ => {
                self.refuse("CLOSE_ACK", from, "no CLOSE of ours to this HIT");
                return;
            }
        };
        match r {
            Ok(()) => self.teardown(plane, sender, "closed"),
            Err(e) => self.refuse("CLOSE_ACK", from, e),
        }
    }

    /// Ends an association: its SAs go, and the policy between the HITs becomes the trap
    /// again for a known peer (the next packet starts a new exchange) or goes.
    pub(super) fn teardown(&mut self, plane: &mut ControlPlane, peer: HostIdentityTag, why: &str) {
        let Some(a) = self.assocs.remove(&peer) else { return };
        if let State::Established { in_key, out_key, .. } | State::Closing { in_key, out_key, .. } =
            a.state
        {
            let me = self.host.hit();
            let trap = self
                .traps
                .iter()
                .find(|(_, i)| self.conf.peers.get(**i).is_some_and(|p| p.hit == peer))
                .map(|(id, _)| *id);
            let r = match (trap, self.policies.get(&peer).copied()) {
                (Some(id), _) => plane.set_policies(vec![(id, install::trap(&me, &peer))]),
                (None, Some(id)) => {
                    self.policies.remove(&peer);
                    plane.remove_policies(&[id])
                }
                (None, None) => Ok(()),
            }
            .and_then(|()| plane.remove(&[in_key], &[out_key]));
            if let Err(e) = r {
                log_event!(Level::Warn, "hip-teardown-failed", "peer" => peer.to_string(), "why" => e.to_string());
            }
        }
        self.counters.closed += 1;
        log_event!(Level::Info, "hip-closed", "peer" => peer.to_string(), "why" => why);
    }
}
