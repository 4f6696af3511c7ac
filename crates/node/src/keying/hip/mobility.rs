//! Host mobility (RFC 8046 §3.2.1): with a wildcard `[network] local` the node follows its
//! route's source address to each peer; when it changes (the host moved) it announces the new
//! locator by UPDATE, and as the peer it checks an announced locator with a signed echo before
//! moving its SAs there (§5.4). ESP in UDP from the new address is authenticated anyway, and
//! the data path follows it at once (NAT rebinding); the UPDATE keeps HIP itself, and a peer
//! that only receives, in step.

use super::{HipDriver, RETRANSMIT_US, State, TRIES, Transmit, take_update_id};
use crate::keying::plane::ControlPlane;
use crate::log::{Level, log_event};
use hip::HostIdentityTag;
use std::net::{IpAddr, SocketAddr, UdpSocket};

/// How often the route's source address is looked at.
const MOVE_CHECK_US: u64 = 100_000;

impl HipDriver {
    /// Our address towards `dst`: the configured one, or with a wildcard `local` the source
    /// address the routing table picks now (a connected UDP socket's local address; nothing is
    /// sent).
    pub(super) fn source_to(&self, dst: IpAddr) -> IpAddr {
        if !self.local.is_unspecified() {
            return self.local;
        }
        let any: SocketAddr = if dst.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        UdpSocket::bind(any)
            .and_then(|s| {
                s.connect(SocketAddr::new(dst, 9))?;
                s.local_addr()
            })
            .map_or(self.local, |a| a.ip())
    }

    /// Announces a new address to every peer it changed for, and resends what is not yet
    /// acknowledged.
    pub(super) fn moves(&mut self, now_us: u64) -> Vec<Transmit> {
        let mut out = Vec::new();
        if !self.local.is_unspecified() || now_us < self.next_move_check_us {
            return out;
        }
        self.next_move_check_us = now_us + MOVE_CHECK_US;
        let peers: Vec<HostIdentityTag> = self.assocs.keys().copied().collect();
        for peer in peers {
            let Some(a) = self.assocs.get(&peer) else { continue };
            let State::Established { est, .. } = &a.state else { continue };
            let now_src = self.source_to(a.locator);
            if now_src != a.local && !now_src.is_unspecified() {
                let id = take_update_id(&mut self.next_update_id);
                match hip::update::announce(&self.host, est, id, now_src, now_src, a.locator) {
                    Ok(bytes) => {
                        log_event!(Level::Info, "hip-moved", "peer" => peer.to_string(), "from" => a.local, "to" => now_src);
                        out.push(Transmit { to: a.locator, bytes: bytes.clone() });
                        if let Some(a) = self.assocs.get_mut(&peer) {
                            a.local = now_src;
                            a.announcing = Some((id, bytes, now_us + RETRANSMIT_US, 1));
                        }
                        self.counters.moves += 1;
                    }
                    Err(e) => {
                        log_event!(Level::Warn, "hip-update-failed", "peer" => peer.to_string(), "why" => e.to_string())
                    }
                }
                continue;
            }
            if let Some(a) = self.assocs.get_mut(&peer) {
                if let Some((_, bytes, at, tries)) = a.announcing.as_mut() {
                    if now_us >= *at && *tries < TRIES {
                        *tries += 1;
                        *at = now_us + (RETRANSMIT_US << (*tries - 1).min(6));
                        out.push(Transmit { to: a.locator, bytes: bytes.clone() });
                    }
                }
            }
        }
        out
    }

    /// An UPDATE (RFC 8046 §3.2.1): a peer's new locator to check, our check to answer, the
    /// peer's answer to our check, or the acknowledgement of our announcement.
    pub(super) fn on_update(
        &mut self,
        plane: &mut ControlPlane,
        sender: HostIdentityTag,
        from: IpAddr,
        bytes: &[u8],
    ) -> Vec<Transmit> {
        let here = self.here;
        let Some(a) = self.assocs.get_mut(&sender) else {
            self.counters.refused += 1;
            return Vec::new();
        };
        let State::Established { est, .. } = &a.state else {
            self.counters.refused += 1;
            return Vec::new();
        };
        let u = match hip::update::read(est, bytes, from, here) {
            Ok(u) => u,
            Err(e) => {
                self.counters.refused += 1;
                log_event!(Level::Debug, "hip-refused", "packet" => "UPDATE", "from" => from, "why" => e.to_string());
                return Vec::new();
            }
        };
        if let Some(out) = self.on_rekey_update(plane, sender, &u) {
            return out;
        }
        let Some(a) = self.assocs.get_mut(&sender) else { return Vec::new() };
        let State::Established { est, .. } = &a.state else { return Vec::new() };
        let mut out = Vec::new();
        if a.announcing.as_ref().is_some_and(|(id, ..)| u.acks.contains(id)) {
            a.announcing = None;
        }
        if let (Some(&new), Some(seq)) = (u.locators.first(), u.seq) {
            // The peer moved: ask for an echo at the new locator before using it.
            let mut nonce = vec![0u8; 16];
            if crypto::default_provider().fill_random(&mut nonce).is_ok() {
                let id = take_update_id(&mut self.next_update_id);
                match hip::update::acknowledge_and_check(
                    &self.host, est, seq, id, &nonce, here, new,
                ) {
                    Ok(b) => {
                        out.push(Transmit { to: new, bytes: b });
                        a.verifying = Some((new, nonce));
                    }
                    Err(e) => {
                        log_event!(Level::Warn, "hip-update-failed", "peer" => sender.to_string(), "why" => e.to_string())
                    }
                }
            }
        }
        if let Some(echo) = &u.echo_request {
            match hip::update::echo_back(&self.host, est, u.seq.unwrap_or(0), echo, here, from) {
                Ok(b) => out.push(Transmit { to: from, bytes: b }),
                Err(e) => {
                    log_event!(Level::Warn, "hip-update-failed", "peer" => sender.to_string(), "why" => e.to_string())
                }
            }
        }
        if let (Some(resp), Some((new, nonce))) = (&u.echo_response, &a.verifying) {
            if crypto::provider::constant_time_eq(resp, nonce) {
                let (old, new) = (a.locator, *new);
                a.locator = new;
                a.verifying = None;
                let port = self.esp_port;
                plane.move_endpoint(SocketAddr::new(old, port), SocketAddr::new(new, port));
                self.counters.locator_changes += 1;
                log_event!(Level::Info, "hip-locator-verified", "peer" => sender.to_string(), "from" => old, "to" => new);
            }
        }
        out
    }
}
