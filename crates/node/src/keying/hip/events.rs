//! What the endpoint's events ask of the data path (`hip::assoc`'s make-before-break): the
//! first pair of an association goes in with the policy between the HITs in one envelope; a
//! rekey's new inbound SA goes in beside the old one, outbound moves on `SwitchOutbound`, the
//! old inbound SA is retired after [`REKEY_GRACE`]; at the end the SAs go and a known peer's
//! policy becomes its trap again, so the next packet starts a new base exchange.

use super::{HipDriver, install};
use crate::datapath::mailbox::{InKey, OutKey};
use crate::keying::plane::{ControlPlane, SaSpec, in_key_of, out_key_of};
use hip::HostIdentityTag;
use hip::assoc::{DownReason, Event};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// How long an old inbound SA outlives a rekey.
pub const REKEY_GRACE: Duration = Duration::from_secs(2);

/// An association's SAs in the data path.
#[derive(Debug, Default)]
pub(super) struct Sas {
    /// The pair the policy points at: (inbound SPI, its key, outbound key).
    pub(super) current: Option<(u32, InKey, OutKey)>,
    /// A rekey's new pair: its inbound SA is in; its outbound SA waits for the switch.
    pub(super) next: Option<(u32, InKey, SaSpec)>,
    /// The pair before the last switch, until its removal retires its inbound SA.
    pub(super) previous: Option<(u32, InKey)>,
    /// The peer's locator the SAs send to.
    pub(super) locator: Option<IpAddr>,
    /// The ESP suite, for status.
    pub(super) suite: Option<String>,
}

impl HipDriver {
    fn endpoint(&self, locator: IpAddr) -> SocketAddr {
        SocketAddr::new(locator, self.esp_port)
    }

    pub(super) fn on_event(&mut self, plane: &mut ControlPlane, e: Event, now_us: u64) {
        // One span per association, by the peer's HIT (a filter `[hip{peer=…}]` shows it alone).
        let span = tracing::info_span!("hip", peer = %e.peer());
        let _hip = span.enter();
        let me = self.host.hit();
        match e {
            Event::InstallPair { peer, keys, locator } => {
                let (inb, outb) =
                    install::pair(&me, &peer, &keys, self.endpoint(locator), !self.conf.encap);
                if let Some(lines) = &mut self.exported {
                    // On the wire: the locators (the HITs never travel, RFC 7402 §5).
                    let k = &keys;
                    lines.extend(crypto::wireshark::esp_sa_record(
                        locator, self.here, k.spi_in, k.suite, &k.enc_in, &k.auth_in,
                    ));
                    lines.extend(crypto::wireshark::esp_sa_record(
                        self.here,
                        locator,
                        k.spi_out,
                        k.suite,
                        &k.enc_out,
                        &k.auth_out,
                    ));
                }
                let (k_in, k_out) = (in_key_of(&inb.params), out_key_of(&outb.params));
                let id = *self.policies.entry(peer).or_insert_with(|| {
                    let id = self.next_policy;
                    self.next_policy += 1;
                    id
                });
                let p = self.peers.entry(peer).or_default();
                p.sas.locator = Some(locator);
                p.sas.suite = Some(keys.suite.to_string());
                let r = match p.sas.current {
                    // SAs and policy in one envelope: one acknowledgement before R2 leaves
                    // (Responder) or the first ESP packet can (Initiator).
                    None => {
                        let policy = install::policy(&me, &peer, k_out, k_in);
                        p.sas.current = Some((keys.spi_in, k_in, k_out));
                        plane.install_then(vec![inb], vec![outb], false, vec![(id, policy)])
                    }
                    Some((_, cur_in, _)) => {
                        p.sas.next = Some((keys.spi_in, k_in, outb));
                        plane.install_successor(cur_in, inb)
                    }
                };
                if let Err(err) = r {
                    tracing::warn!(peer = %peer, why = err.to_string(), "hip-install-failed");
                }
            }
            Event::SwitchOutbound { peer, spi_in, spi_out } => {
                let Some(p) = self.peers.get_mut(&peer) else { return };
                match (p.sas.current, p.sas.next.take()) {
                    (Some((cur_spi, cur_in, cur_out)), Some((spi, k_in, outb)))
                        if spi == spi_in =>
                    {
                        match plane.switch_outbound(cur_out, outb) {
                            Ok(k_out) => {
                                p.sas.previous = Some((cur_spi, cur_in));
                                p.sas.current = Some((spi, k_in, k_out));
                            }
                            Err(err) => {
                                tracing::warn!(peer = %peer, why = err.to_string(), "hip-switch-failed");
                            }
                        }
                    }
                    (_, next) => p.sas.next = next,
                }
                tracing::info!(peer = %peer, spi_in = %format!("{spi_in:08x}"), spi_out = %format!("{spi_out:08x}"), "hip-sending");
            }
            Event::RemovePair { peer, spi_in, .. } => {
                let Some(p) = self.peers.get_mut(&peer) else { return };
                if p.sas.previous.is_some_and(|(s, _)| s == spi_in) {
                    if let Some((_, k)) = p.sas.previous.take() {
                        plane.retire_after(k, REKEY_GRACE);
                    }
                } else if p.sas.next.as_ref().is_some_and(|(s, ..)| *s == spi_in) {
                    if let Some((_, k, _)) = p.sas.next.take() {
                        let _ = plane.remove(&[k], &[]);
                    }
                } else if p.sas.current.is_some_and(|(s, ..)| s == spi_in) {
                    if let Some((_, k_in, k_out)) = p.sas.current.take() {
                        if let Err(err) = plane.remove(&[k_in], &[k_out]) {
                            tracing::warn!(peer = %peer, why = err.to_string(), "hip-remove-failed");
                        }
                    }
                }
            }
            Event::Established { peer, locator, initiator } => {
                let p = self.peers.entry(peer).or_default();
                if initiator {
                    self.counters.established_initiator += 1;
                    p.bex_us = Some(now_us.saturating_sub(p.started_us));
                } else {
                    self.counters.established_responder += 1;
                }
                let (spi_in, spi_out) = self
                    .ep
                    .pairs()
                    .into_iter()
                    .find(|v| v.peer == peer && v.sending)
                    .map_or((0, 0), |v| (v.spi_in, v.spi_out));
                tracing::info!(peer = %peer, locator = %locator, spi_in = %format!("{spi_in:08x}"), spi_out = %format!("{spi_out:08x}"), "hip-established");
            }
            Event::Rekeyed { peer, spi_in, .. } => {
                self.counters.rekeys += 1;
                tracing::info!(peer = %peer, spi_in = %format!("{spi_in:08x}"), "hip-rekeyed");
            }
            Event::PeerMoved { peer, locator } => {
                let port = self.esp_port;
                if let Some(p) = self.peers.get_mut(&peer) {
                    if let Some(old) = p.sas.locator.replace(locator) {
                        plane.move_endpoint(
                            SocketAddr::new(old, port),
                            SocketAddr::new(locator, port),
                        );
                    }
                }
                self.counters.locator_changes += 1;
                tracing::info!(peer = %peer, to = %locator, "hip-locator-verified");
            }
            Event::Closed { peer } => {
                self.counters.closed += 1;
                self.teardown(plane, peer, "closed");
            }
            Event::Down { peer, reason } => {
                if reason == DownReason::SetupTimedOut {
                    self.counters.timed_out += 1;
                }
                tracing::warn!(peer = %peer, why = format!("{reason:?}"), "hip-down");
                if reason != DownReason::Replaced {
                    self.teardown(plane, peer, "down");
                }
            }
        }
    }

    /// The association's SAs are gone (their `RemovePair`s came first): the policy between
    /// the HITs becomes the trap again for a known peer, or goes.
    fn teardown(&mut self, plane: &mut ControlPlane, peer: HostIdentityTag, why: &str) {
        let me = self.host.hit();
        let had = self.peers.remove(&peer).is_some();
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
        };
        if let Err(e) = r {
            tracing::warn!(peer = %peer, why = e.to_string(), "hip-teardown-failed");
        }
        if had {
            tracing::info!(peer = %peer, why = why.to_string(), "hip-closed");
        }
    }
}
