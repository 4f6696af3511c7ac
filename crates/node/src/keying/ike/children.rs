//! One CHILD SA of an IKE SA in the data path: the SA pairs the `ike` endpoint's events install,
//! switch to and remove, and the one set of policies (the child's traffic selectors) they share.
//! The endpoint decides the order, make-before-break (DESIGN rule 4, RFC 7296 §2.8); this module
//! only carries it out: an install admits the new inbound SA beside the live ones at once, a
//! switch points every policy at the new outbound SA, a removal takes the outbound SA at once
//! and retires the inbound one after [`REKEY_GRACE`] for packets sealed before the switch.

use super::install::{self, ChildSpecs};
use crate::config::connection::{ChildConf, ConnectionConf};
use crate::datapath::mailbox::{InKey, OutKey, PolicyAction, PolicySpec};
use crate::keying::handover::SignallingEvent;
use crate::keying::plane::{ControlPlane, SaSpec, in_key_of, out_key_of};
use ike::ChildSaKeys;
use ipsec::spd_table::PolicyId;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// How long an old inbound SA stays after a rekey, for packets sealed before the switch.
pub const REKEY_GRACE: Duration = Duration::from_secs(2);

/// What a child's data path needs from its driver.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The control plane.
    pub plane: &'a mut ControlPlane,
    /// The connection.
    pub conn: &'a ConnectionConf,
    /// The child's configuration.
    pub child: &'a ChildConf,
    /// Our outer address.
    pub local: IpAddr,
    /// Where the peer's ESP in UDP goes.
    pub esp_peer: SocketAddr,
    /// The pair's ESP goes over raw IP (no NAT and no `encap`, RFC 7296 §2.23), not in UDP.
    pub raw_ip: bool,
    /// The next free IKE policy id (advanced as policies are made).
    pub next_policy: &'a mut PolicyId,
    /// Now, in the driver's milliseconds.
    pub now_ms: u64,
    /// When the datagram being handled was read (the end of an exchange, for its delay).
    pub received: Instant,
    /// Where a `mip6 = "signalling"` child's SAs go instead of the data path.
    pub signalling: &'a mut Vec<SignallingEvent>,
}

/// A pair in the data path.
#[derive(Debug)]
pub struct Pair {
    /// Its inbound SA.
    pub in_key: InKey,
    /// Its outbound SA.
    pub out_key: OutKey,
    /// When it was installed.
    pub up_ms: u64,
    /// Its suite's name (after a rekey with PFS it names the group, §1.2).
    pub suite: String,
    /// Its ESP goes as IP protocol 50 (no NAT, no `encap`), not in UDP.
    pub raw_ip: bool,
}

/// A child's pairs (by inbound SPI) and policies.
#[derive(Debug)]
pub struct ChildPath {
    /// `connection/child`.
    pub name: String,
    /// Its pairs.
    pub pairs: HashMap<u32, Pair>,
    /// Its policies (all pairs share them).
    pub policies: Vec<PolicyId>,
    active_out: Option<OutKey>,
    /// Our rekeys asked for, by the old pair's inbound SPI.
    asked: HashMap<u32, Instant>,
    /// Microseconds from our rekey asked to the new pair sending, and to its response read
    /// (the exchange alone), the most recent last (at most 1000).
    delays_us: Vec<(u64, u64)>,
    /// CHILD rekeys completed (either side's).
    pub rekeys: u64,
}

fn warn(what: &'static str, name: &str, e: impl std::fmt::Display) {
    tracing::warn!(child = %name, why = e.to_string(), "{}", what);
}

impl ChildPath {
    /// A child with no pair yet.
    pub fn new(name: String) -> ChildPath {
        ChildPath {
            name,
            pairs: HashMap::new(),
            policies: Vec::new(),
            active_out: None,
            asked: HashMap::new(),
            delays_us: Vec::new(),
            rekeys: 0,
        }
    }

    /// Whether outbound traffic goes on this pair.
    pub fn sending(&self, spi_in: u32) -> bool {
        self.pairs.get(&spi_in).is_some_and(|p| Some(p.out_key) == self.active_out)
    }

    /// We asked for a rekey of the pair `spi_in`.
    pub fn rekey_started(&mut self, spi_in: u32) {
        self.asked.insert(spi_in, Instant::now());
    }

    /// Pair `new` succeeds `old` (installed and, if ours, sending already); `received`: when
    /// the datagram that completed the exchange was read.
    pub fn rekeyed(&mut self, old: u32, new: u32, received: Instant) {
        self.rekeys += 1;
        let ours = self.asked.remove(&old);
        tracing::info!(child = %self.name, old_spi_in = %format!("{old:08x}"), spi_in = %format!("{new:08x}"), by = %if ours.is_some() { "us" } else { "peer" }, "child-sa-rekeyed");
        if let Some(t) = ours {
            if self.delays_us.len() >= 1000 {
                self.delays_us.remove(0);
            }
            let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
            self.delays_us.push((us(t.elapsed()), us(received.saturating_duration_since(t))));
        }
    }

    /// Installs a pair; with `switch` its outbound SA sends at once (in the same envelope).
    pub fn install(&mut self, k: &ChildSaKeys, switch: bool, cx: &mut Ctx<'_>) {
        let ChildSpecs { inbound, outbound } = install::child_specs(
            k,
            cx.child,
            (cx.local, cx.esp_peer, cx.raw_ip),
            (&self.name, cx.plane.lanes()),
        );
        let (in_key, out_key) = (in_key_of(&inbound.params), out_key_of(&outbound.params));
        let suite = crate::config::proposal::esp_suite_name(&k.suite);
        if cx.child.mip6 {
            if !self.hand_over(k, inbound, outbound, switch, cx) {
                return;
            }
        } else if self.policies.is_empty() {
            let policies = install::child_policies(k, out_key, in_key);
            let ids: Vec<PolicyId> =
                (0..policies.len() as u64).map(|i| *cx.next_policy + i).collect();
            *cx.next_policy += policies.len() as u64;
            // The pair and its policies in one envelope: one acknowledgement per setup less.
            let then = ids.iter().copied().zip(policies).collect();
            let r = cx.plane.install_then(vec![inbound], vec![outbound], false, then);
            if let Err(e) = r {
                return warn("child-sa-install-failed", &self.name, e);
            }
            self.policies = ids;
            self.active_out = Some(out_key);
            tracing::info!(child = %self.name, spi_in = %format!("{:08x}", k.spi_in), spi_out = %format!("{:08x}", k.spi_out), peer = %cx.esp_peer, esp = %if cx.raw_ip { "ip" } else { "udp" }, suite = %suite, "child-sa-up");
        } else {
            // Admitted beside a live pair's inbound SA (every policy of the child lists it).
            let beside = self.pairs.values().max_by_key(|p| p.up_ms).map(|p| p.in_key);
            let then = if switch { self.repointed(out_key, cx) } else { Vec::new() };
            let r = match beside {
                Some(b) => cx.plane.install_successor_with(b, inbound, Some(outbound), then),
                None => cx
                    .plane
                    .install(vec![inbound], vec![outbound], false)
                    .and_then(|()| cx.plane.set_policies(then)),
            };
            if let Err(e) = r {
                return warn("child-sa-install-failed", &self.name, e);
            }
            if switch {
                self.active_out = Some(out_key);
            }
        }
        self.pairs
            .insert(k.spi_in, Pair { in_key, out_key, up_ms: cx.now_ms, suite, raw_ip: cx.raw_ip });
    }

    /// A `mip6 = "signalling"` child (RFC 4877 §4.4): its pair goes to the Mobile IPv6 role,
    /// with the selectors' addresses as the SAs' (transport mode: the home address and the home
    /// agent, RFC 3776 §4.1), not the IKE SA's outer ones, which change as the node moves.
    fn hand_over(
        &mut self,
        k: &ChildSaKeys,
        mut inbound: SaSpec,
        mut outbound: SaSpec,
        send: bool,
        cx: &mut Ctx<'_>,
    ) -> bool {
        let single = crate::config::connection::single_v6;
        let (Some(local), Some(remote)) = (single(&k.local_ts), single(&k.remote_ts)) else {
            warn(
                "child-sa-install-failed",
                &self.name,
                "mip6 selectors are not one IPv6 address each",
            );
            return false;
        };
        // The pair is known by the keys `install` made (before the addresses change below).
        let out_key = out_key_of(&outbound.params);
        let (l, r) = (IpAddr::V6(local), IpAddr::V6(remote));
        (inbound.params.src, inbound.params.dst) = (r, l);
        (outbound.params.src, outbound.params.dst) = (l, r);
        if self.pairs.is_empty() {
            tracing::info!(child = %self.name, spi_in = %format!("{:08x}", k.spi_in), spi_out = %format!("{:08x}", k.spi_out), to = %"mip6", "child-sa-up");
        }
        cx.signalling.push(SignallingEvent::Install {
            connection: cx.conn.name.clone(),
            local,
            remote,
            sa_in: Box::new(inbound.params),
            sa_out: Box::new(outbound.params),
            send,
        });
        if send {
            self.active_out = Some(out_key);
        }
        true
    }

    /// The child's policies, pointed at outbound SA `to`.
    fn repointed(&self, to: OutKey, cx: &Ctx<'_>) -> Vec<(PolicyId, PolicySpec)> {
        self.policies
            .iter()
            .filter_map(|id| {
                let mut p = cx.plane.policies().get(id)?.clone();
                p.action = PolicyAction::Protect(vec![to]);
                Some((*id, p))
            })
            .collect()
    }

    /// Points every policy of the child at the outbound SA of pair `spi_in`, in one envelope.
    pub fn switch(&mut self, spi_in: u32, cx: &mut Ctx<'_>) {
        let Some(to) = self.pairs.get(&spi_in).map(|p| p.out_key) else { return };
        if self.active_out == Some(to) {
            return;
        }
        if cx.child.mip6 {
            cx.signalling.push(SignallingEvent::Send {
                connection: cx.conn.name.clone(),
                spi_out: ipsec::Spi(to.spi),
            });
            self.active_out = Some(to);
            return;
        }
        let specs = self.repointed(to, cx);
        match cx.plane.set_policies(specs) {
            Ok(()) => self.active_out = Some(to),
            Err(e) => warn("child-sa-switch-failed", &self.name, e),
        }
    }

    /// The pair `spi_in` is gone (DELETE either way, its hard lifetime, or the IKE SA's end;
    /// the endpoint moved outbound off it first). Its outbound SA goes at once, its inbound
    /// one after the grace period; with the last pair the policies go too, and at once.
    pub fn remove(&mut self, spi_in: u32, cx: &mut Ctx<'_>) {
        let Some(old) = self.pairs.remove(&spi_in) else { return };
        self.asked.remove(&spi_in);
        if self.active_out == Some(old.out_key) {
            self.active_out = None;
        }
        if cx.child.mip6 {
            cx.signalling.push(SignallingEvent::Remove {
                connection: cx.conn.name.clone(),
                spi_in: ipsec::Spi(old.in_key.0),
                spi_out: ipsec::Spi(old.out_key.spi),
            });
        } else if self.pairs.is_empty() {
            // Fail closed: no policy is left pointing at an SA that is gone.
            let pols: Vec<PolicyId> = self
                .policies
                .iter()
                .copied()
                .filter(|id| cx.plane.policies().contains_key(id))
                .collect();
            let ins: Vec<InKey> =
                [old.in_key].into_iter().filter(|k| cx.plane.inbound().contains_key(k)).collect();
            let outs: Vec<OutKey> =
                [old.out_key].into_iter().filter(|k| cx.plane.outbound().contains_key(k)).collect();
            let r = cx.plane.remove_policies(&pols).and_then(|()| cx.plane.remove(&ins, &outs));
            if let Err(e) = r {
                warn("child-sa-remove-failed", &self.name, e);
            }
            self.policies.clear();
        } else {
            if let Err(e) = cx.plane.remove(&[], &[old.out_key]) {
                warn("child-sa-remove-failed", &self.name, e);
            }
            // The grace ends before the SA's own hard lifetime would (the data path would
            // drop it then anyway, and report a hard expiry for an SA that was replaced).
            let life = match u64::try_from(cx.child.life_time.as_millis()) {
                Ok(0) | Err(_) => u64::MAX,
                Ok(ms) => ms,
            };
            let left = (old.up_ms.saturating_add(life)).saturating_sub(cx.now_ms);
            let grace = REKEY_GRACE.min(Duration::from_millis(left.saturating_sub(100)));
            cx.plane.retire_after(old.in_key, grace);
            tracing::debug!(child = %self.name, spi_in = %format!("{spi_in:08x}"), grace_ms = grace.as_millis() as u64, "child-sa-retired");
        }
        if self.pairs.is_empty() {
            tracing::info!(child = %self.name, spi_in = %format!("{spi_in:08x}"), "child-sa-down");
        }
    }

    /// Our CHILD rekeys: (count, median µs from asked to new pair sending, median µs of the
    /// exchange alone: asked to response read).
    pub fn rekey_delay(&self) -> (usize, Option<u64>, Option<u64>) {
        let median = |mut v: Vec<u64>| {
            v.sort_unstable();
            v.get(v.len().saturating_sub(1) / 2).copied()
        };
        let total = median(self.delays_us.iter().map(|d| d.0).collect());
        let exchange = median(self.delays_us.iter().map(|d| d.1).collect());
        (self.delays_us.len(), total, exchange)
    }
}
