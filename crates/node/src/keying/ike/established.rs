//! An established IKE SA in the node: the `ike` crate's [`Session`] and the CHILD SAs it put in
//! the data path, its timers (CHILD and IKE rekeys, liveness) and what its events mean for
//! the control plane. CHILD rekeys are make-before-break (DESIGN rule 4, RFC 7296 §2.8): the
//! new inbound SA joins the old one's policies at once; outbound switches when we started the
//! rekey (the peer installed first), or when the peer deletes the old pair if it started it;
//! the old inbound SA is retired after a grace period for packets still in flight.

use super::install::{self, ChildSpecs};
use crate::config::connection::{ChildConf, ConnectionConf};
use crate::datapath::mailbox::{InKey, OutKey};
use crate::datapath::mailbox::{PolicyAction, PolicySpec};
use crate::keying::handover::SignallingEvent;
use crate::keying::plane::SaSpec;
use crate::keying::plane::{ControlPlane, in_key_of, out_key_of};
use crate::log::{Level, log_event};
use ike::ChildSaKeys;
use ike::session::{Event, Output, Request, Session};
use ipsec::spd_table::PolicyId;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// How long an old inbound SA stays after a rekey, for packets sealed before the switch.
pub const REKEY_GRACE: Duration = Duration::from_secs(2);
/// After a failed CHILD rekey of ours, the first retry; each further failure doubles the wait
/// up to [`REKEY_RETRY_MAX_MS`]. Retries go on until the pair's hard lifetime.
pub const REKEY_RETRY_MS: u64 = 10_000;
/// The longest wait between two rekey tries.
pub const REKEY_RETRY_MAX_MS: u64 = 60_000;

/// What an established IKE SA needs from its driver.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The control plane.
    pub plane: &'a mut ControlPlane,
    /// The connection.
    pub conn: &'a ConnectionConf,
    /// Our outer address.
    pub local: IpAddr,
    /// Where the peer's ESP in UDP goes.
    pub esp_peer: SocketAddr,
    /// The next free IKE policy id (advanced as policies are made).
    pub next_policy: &'a mut PolicyId,
    /// Now, in the driver's milliseconds.
    pub now_ms: u64,
    /// A random value for rand_time.
    pub jitter: u64,
    /// When the datagram being handled was read (the end of an exchange, for its delay).
    pub received: Instant,
    /// Where a `mip6 = "signalling"` child's SAs go instead of the data path.
    pub signalling: &'a mut Vec<SignallingEvent>,
}

/// A CHILD SA pair in the data path.
#[derive(Debug)]
struct Pair {
    spi_in: u32,
    in_key: InKey,
    out_key: OutKey,
    up_ms: u64,
    rekey_at_ms: Option<u64>,
    /// When the data path drops the pair (its hard lifetime).
    expires_ms: u64,
    /// Our rekeys of this pair that failed in a row, and the last one's reason.
    rekey_failures: u32,
    rekey_error: Option<String>,
    /// A rekey the peer started: outbound moves here once the peer deletes the old pair.
    awaiting_switch: bool,
}

/// The session and its pairs. All pairs of the connection's child share one set of policies
/// (its traffic selectors), which send on `active_out` and admit every pair's inbound SA.
pub struct Up {
    /// The IKE SA's exchanges.
    pub session: Session,
    name: String,
    suite: String,
    pairs: Vec<Pair>,
    policies: Vec<PolicyId>,
    active_out: Option<OutKey>,
    /// Inbound SPIs of pairs whose rekey we asked for, and when we asked.
    rekeying: HashMap<u32, Instant>,
    /// Microseconds from our CREATE_CHILD_SA request to the new pair installed and sending,
    /// and to its response read (the exchange alone: 2 messages and the crypto), the most
    /// recent last (at most 1000).
    rekey_delays_us: Vec<(u64, u64)>,
    ike_rekey_at_ms: Option<u64>,
    dpd_at_ms: Option<u64>,
    /// CHILD rekeys completed.
    pub rekeys: u64,
}

impl std::fmt::Debug for Up {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Up").field("pairs", &self.pairs).finish_non_exhaustive()
    }
}

fn child_conf(conn: &ConnectionConf) -> Option<&ChildConf> {
    conn.children.first()
}

/// Whether the child's SAs go to a Mobile IPv6 role (`mip6 = "signalling"`), not the data path.
fn for_role(cx: &Ctx<'_>) -> bool {
    child_conf(cx.conn).is_some_and(|c| c.mip6)
}

fn rekey_at(c: &ChildConf, now_ms: u64, jitter: u64) -> Option<u64> {
    if c.rekey_time.is_zero() {
        return None;
    }
    let rand = c.rand_time.as_millis() as u64;
    let j = if rand == 0 { 0 } else { jitter % rand };
    Some(now_ms + (c.rekey_time.as_millis() as u64).saturating_sub(j))
}

fn warn(what: &'static str, name: &str, e: impl std::fmt::Display) {
    log_event!(Level::Warn, what, "child" => name, "why" => e.to_string());
}

impl Up {
    /// Takes over a session and installs its first CHILD SA.
    pub fn new(session: Session, first: ChildSaKeys, cx: &mut Ctx<'_>) -> Up {
        let ike_rekey = cx.conn.rekey_time.as_millis() as u64;
        let dpd = cx.conn.dpd_delay.as_millis() as u64;
        let name =
            format!("{}/{}", cx.conn.name, child_conf(cx.conn).map_or("-", |c| c.name.as_str()));
        let mut up = Up {
            session,
            name,
            suite: String::new(),
            pairs: Vec::new(),
            policies: Vec::new(),
            active_out: None,
            rekeying: HashMap::new(),
            rekey_delays_us: Vec::new(),
            ike_rekey_at_ms: (ike_rekey > 0).then_some(cx.now_ms + ike_rekey),
            dpd_at_ms: (dpd > 0).then_some(cx.now_ms + dpd),
            rekeys: 0,
        };
        up.install(&first, None, cx);
        up
    }

    /// Installs a pair. The first gets the child's policies; later ones (rekeys, or at the end
    /// that wins a rekey collision the peer's pair, which comes with `rekeys: None` and which
    /// the peer then deletes, §2.8.1) join them: their inbound SA is admitted at once, their
    /// outbound SA waits to be switched to unless this end started the rekey.
    fn install(&mut self, k: &ChildSaKeys, rekeys: Option<u32>, cx: &mut Ctx<'_>) {
        let Some(cc) = child_conf(cx.conn) else { return };
        let ChildSpecs { inbound, outbound } =
            install::child_specs(k, cc, cx.local, cx.esp_peer.ip(), cx.esp_peer, &self.name);
        let (in_key, out_key) = (in_key_of(&inbound.params), out_key_of(&outbound.params));
        let rekey_at_ms = rekey_at(cc, cx.now_ms, cx.jitter);
        if cc.mip6 {
            if !self.hand_over(k, inbound, outbound, rekeys, cx) {
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
            log_event!(Level::Info, "child-sa-up", "child" => self.name, "spi_in" => format!("{:08x}", k.spi_in), "spi_out" => format!("{:08x}", k.spi_out), "peer" => cx.esp_peer);
        } else {
            // Admitted beside a live pair's inbound SA (every policy of the child lists it).
            let beside = rekeys
                .and_then(|o| self.pairs.iter().find(|p| p.spi_in == o))
                .or(self.pairs.last())
                .map(|p| p.in_key);
            // When we started the rekey the peer installed its inbound SA before answering, so
            // the policies move to the new outbound SA at once — in the same envelope as both
            // SAs: one acknowledgement to wait for.
            let switch = rekeys.is_some_and(|o| self.rekeying.contains_key(&o));
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
        // After a rekey with PFS the suite names its group (IKE_AUTH's pair has none, §1.2).
        self.suite = crate::config::proposal::esp_suite_name(&k.suite);
        let asked = rekeys.and_then(|o| self.rekeying.remove(&o));
        let ours = asked.is_some();
        if let Some(old) = rekeys {
            self.rekeys += 1;
            if let Some(p) = self.pairs.iter_mut().find(|p| p.spi_in == old) {
                p.rekey_at_ms = None;
            }
            log_event!(Level::Info, "child-sa-rekeyed", "child" => self.name, "old_spi_in" => format!("{old:08x}"), "spi_in" => format!("{:08x}", k.spi_in), "spi_out" => format!("{:08x}", k.spi_out), "by" => if ours { "us" } else { "peer" });
        }
        self.pairs.push(Pair {
            spi_in: k.spi_in,
            in_key,
            out_key,
            up_ms: cx.now_ms,
            rekey_at_ms,
            expires_ms: cx.now_ms + cc.life_time.as_millis() as u64,
            rekey_failures: 0,
            rekey_error: None,
            awaiting_switch: rekeys.is_some() && !ours,
        });
        if ours {
            // We started the rekey: the peer installed its inbound SA before answering.
            self.switch_to(out_key, cx);
            if let Some(t) = asked {
                if self.rekey_delays_us.len() >= 1000 {
                    self.rekey_delays_us.remove(0);
                }
                let exchange = cx.received.saturating_duration_since(t).as_micros() as u64;
                self.rekey_delays_us.push((t.elapsed().as_micros() as u64, exchange));
            }
        }
    }

    /// A `mip6 = "signalling"` child (RFC 4877 §4.4): its pair goes to the Mobile IPv6 role,
    /// with the selectors' addresses as the SAs' (transport mode: the home address and the home
    /// agent, RFC 3776 §4.1), not the IKE SA's outer ones, which change as the node moves.
    fn hand_over(
        &mut self,
        k: &ChildSaKeys,
        mut inbound: SaSpec,
        mut outbound: SaSpec,
        rekeys: Option<u32>,
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
        let first = self.pairs.is_empty();
        // As for the data path: send on the new pair at once when it is the first one or when
        // this end asked for the rekey (the peer installed first).
        let send = first || rekeys.is_some_and(|o| self.rekeying.contains_key(&o));
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
        if first {
            log_event!(Level::Info, "child-sa-up", "child" => self.name, "spi_in" => format!("{:08x}", k.spi_in), "spi_out" => format!("{:08x}", k.spi_out), "to" => "mip6");
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

    /// Points every policy of the child at outbound SA `to`, in one envelope.
    fn switch_to(&mut self, to: OutKey, cx: &mut Ctx<'_>) {
        if self.active_out == Some(to) {
            return;
        }
        if for_role(cx) {
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

    /// The pair whose inbound SPI is `spi_in` is gone (DELETE either way). If it was the one
    /// sending, outbound moves to the newest other pair first; its inbound SA stays for the
    /// grace period.
    fn remove(&mut self, spi_in: u32, cx: &mut Ctx<'_>) {
        let Some(i) = self.pairs.iter().position(|p| p.spi_in == spi_in) else { return };
        let old = self.pairs.remove(i);
        if for_role(cx) {
            // Outbound moves to the newest pair first, then the old pair goes: the peer deleted
            // it, so nothing more arrives in it.
            if self.active_out == Some(old.out_key) {
                self.active_out = None;
                let next =
                    self.pairs.iter().rev().find(|p| p.awaiting_switch).or(self.pairs.last());
                if let Some(n) = next.map(|p| p.out_key) {
                    self.switch_to(n, cx);
                }
            }
            for p in &mut self.pairs {
                p.awaiting_switch = false;
            }
            self.signalling_removed(&old, cx);
            if self.pairs.is_empty() {
                log_event!(Level::Info, "child-sa-down", "child" => self.name, "spi_in" => format!("{spi_in:08x}"));
            }
            return;
        }
        if self.pairs.is_empty() {
            let r = cx
                .plane
                .remove_policies(&self.policies)
                .and_then(|()| cx.plane.remove(&[old.in_key], &[old.out_key]));
            if let Err(e) = r {
                warn("child-sa-remove-failed", &self.name, e);
            }
            self.policies.clear();
            self.active_out = None;
            log_event!(Level::Info, "child-sa-down", "child" => self.name, "spi_in" => format!("{spi_in:08x}"));
            return;
        }
        if self.active_out == Some(old.out_key) {
            let next = self.pairs.iter().rev().find(|p| p.awaiting_switch).or(self.pairs.last());
            if let Some(n) = next.map(|p| p.out_key) {
                self.switch_to(n, cx);
            }
        }
        for p in &mut self.pairs {
            p.awaiting_switch = false;
        }
        if let Err(e) = cx.plane.remove(&[], &[old.out_key]) {
            warn("child-sa-remove-failed", &self.name, e);
        }
        cx.plane.retire_after(old.in_key, REKEY_GRACE);
    }

    fn signalling_removed(&self, p: &Pair, cx: &mut Ctx<'_>) {
        cx.signalling.push(SignallingEvent::Remove {
            connection: cx.conn.name.clone(),
            spi_in: ipsec::Spi(p.in_key.0),
            spi_out: ipsec::Spi(p.out_key.spi),
        });
    }

    /// Removes every pair and the child's policies (the IKE SA closed).
    pub fn remove_all(&mut self, cx: &mut Ctx<'_>) {
        if for_role(cx) {
            for p in std::mem::take(&mut self.pairs) {
                self.signalling_removed(&p, cx);
            }
            self.active_out = None;
            log_event!(Level::Info, "child-sa-down", "child" => self.name);
            return;
        }
        let ins: Vec<InKey> = self
            .pairs
            .iter()
            .map(|p| p.in_key)
            .filter(|k| cx.plane.inbound().contains_key(k))
            .collect();
        let outs: Vec<OutKey> = self
            .pairs
            .iter()
            .map(|p| p.out_key)
            .filter(|k| cx.plane.outbound().contains_key(k))
            .collect();
        let pols: Vec<PolicyId> = self
            .policies
            .iter()
            .copied()
            .filter(|id| cx.plane.policies().contains_key(id))
            .collect();
        self.pairs.clear();
        self.policies.clear();
        self.active_out = None;
        let r = cx.plane.remove_policies(&pols).and_then(|()| cx.plane.remove(&ins, &outs));
        if let Err(e) = r {
            warn("child-sa-remove-failed", &self.name, e);
        }
        log_event!(Level::Info, "child-sa-down", "child" => self.name);
    }

    /// Acts on a session's output; returns the datagrams to send.
    pub fn apply(&mut self, out: Output, cx: &mut Ctx<'_>) -> Vec<Vec<u8>> {
        for e in out.events {
            match e {
                Event::InstallChild { keys, rekeys } => self.install(&keys, rekeys, cx),
                Event::RemoveChild { spi_in, .. } => self.remove(spi_in, cx),
                Event::PeerAlive => {}
                Event::IkeRekeyed { spi_i, spi_r } => {
                    log_event!(Level::Info, "ike-sa-rekeyed", "connection" => cx.conn.name, "spi_i" => format!("{spi_i:016x}"), "spi_r" => format!("{spi_r:016x}"));
                    let ike = cx.conn.rekey_time.as_millis() as u64;
                    self.ike_rekey_at_ms = (ike > 0).then_some(cx.now_ms + ike);
                }
                Event::RequestFailed { request, error } => {
                    // Losing a rekey collision to the peer (§2.8.1) is a normal outcome: the
                    // peer's pair takes over.
                    let superseded = matches!(error, ike::Error::Superseded(_));
                    if let Request::RekeyChild(spi) = request {
                        self.rekeying.remove(&spi);
                        if !superseded {
                            self.rekey_failed(spi, &error.to_string(), cx.now_ms);
                        }
                    }
                    let level = if superseded { Level::Info } else { Level::Warn };
                    log_event!(level, "ike-request-failed", "connection" => cx.conn.name, "request" => format!("{request:?}"), "why" => error.to_string());
                }
                Event::IkeClosed => {
                    log_event!(Level::Info, "ike-sa-down", "connection" => cx.conn.name);
                    self.remove_all(cx);
                }
            }
        }
        out.send
    }

    /// Timers: retransmission, CHILD and IKE rekeys, liveness. Returns datagrams.
    pub fn tick(&mut self, cx: &mut Ctx<'_>) -> Vec<Vec<u8>> {
        let now = cx.now_ms;
        let mut out = self.session.on_timeout(now);
        let mut reqs = Vec::new();
        for p in &mut self.pairs {
            if p.rekey_at_ms.is_some_and(|t| now >= t) && !self.rekeying.contains_key(&p.spi_in) {
                p.rekey_at_ms = None;
                self.rekeying.insert(p.spi_in, Instant::now());
                reqs.push(Request::RekeyChild(p.spi_in));
            }
        }
        if self.ike_rekey_at_ms.is_some_and(|t| now >= t) {
            self.ike_rekey_at_ms = None;
            reqs.push(Request::RekeyIke);
        }
        if let Some(t) = self.dpd_at_ms.filter(|&t| now >= t) {
            let _ = t;
            self.dpd_at_ms = Some(now + cx.conn.dpd_delay.as_millis() as u64);
            reqs.push(Request::Liveness);
        }
        for r in reqs {
            match self.session.request(now, r) {
                Ok(o) => {
                    out.send.extend(o.send);
                    out.events.extend(o.events);
                }
                Err(e) => {
                    if let Request::RekeyChild(s) = r {
                        self.rekeying.remove(&s);
                        self.rekey_failed(s, &e.to_string(), now);
                    }
                    log_event!(Level::Warn, "ike-request-failed", "connection" => cx.conn.name, "request" => format!("{r:?}"), "why" => e.to_string())
                }
            }
        }
        self.apply(out, cx)
    }

    /// Our rekey of the pair with inbound SPI `spi_in` failed (refused, bad answer): it is tried
    /// again after [`REKEY_RETRY_MS`], doubling up to [`REKEY_RETRY_MAX_MS`], while the pair
    /// lives; the old pair keeps carrying traffic meanwhile.
    fn rekey_failed(&mut self, spi_in: u32, why: &str, now_ms: u64) {
        let Some(p) = self.pairs.iter_mut().find(|p| p.spi_in == spi_in) else { return };
        p.rekey_failures = p.rekey_failures.saturating_add(1);
        p.rekey_error = Some(why.to_owned());
        let wait = REKEY_RETRY_MS
            .saturating_mul(1 << p.rekey_failures.saturating_sub(1).min(6))
            .min(REKEY_RETRY_MAX_MS);
        let at = now_ms.saturating_add(wait);
        p.rekey_at_ms = (at < p.expires_ms).then_some(at);
        log_event!(Level::Warn, "child-sa-rekey-failed", "child" => self.name, "spi_in" => format!("{spi_in:08x}"), "failures" => p.rekey_failures, "retry_in_s" => p.rekey_at_ms.map(|t| t.saturating_sub(now_ms) / 1000), "why" => why);
    }

    /// Asks for a request now (`hipsec rekey`, `terminate`).
    pub fn request(&mut self, r: Request, cx: &mut Ctx<'_>) -> Vec<Vec<u8>> {
        if let Request::RekeyChild(s) = r {
            self.rekeying.insert(s, Instant::now());
        }
        match self.session.request(cx.now_ms, r) {
            Ok(o) => self.apply(o, cx),
            Err(e) => {
                if let Request::RekeyChild(s) = r {
                    self.rekeying.remove(&s);
                }
                log_event!(Level::Warn, "ike-request-failed", "connection" => cx.conn.name, "request" => format!("{r:?}"), "why" => e.to_string());
                Vec::new()
            }
        }
    }

    /// Our CHILD rekeys: (count, median µs from request sent to new pair sending, median µs
    /// of the exchange alone: request sent to response read).
    pub fn rekey_delay(&self) -> (usize, Option<u64>, Option<u64>) {
        let median = |mut v: Vec<u64>| {
            v.sort_unstable();
            v.get(v.len().saturating_sub(1) / 2).copied()
        };
        let total = median(self.rekey_delays_us.iter().map(|d| d.0).collect());
        let exchange = median(self.rekey_delays_us.iter().map(|d| d.1).collect());
        (self.rekey_delays_us.len(), total, exchange)
    }

    /// Inbound SPIs of the pairs, newest last.
    pub fn child_spis(&self) -> Vec<u32> {
        self.pairs.iter().map(|p| p.spi_in).collect()
    }

    /// `status` of the pairs.
    pub fn children_json(&self, now_ms: u64) -> Vec<Value> {
        self.pairs
            .iter()
            .map(|p| {
                let state = if now_ms >= p.expires_ms {
                    "past its hard lifetime"
                } else if p.rekey_failures > 0 {
                    "installed, rekey failing (retrying)"
                } else if self.active_out == Some(p.out_key) {
                    "installed, sending"
                } else if p.awaiting_switch {
                    "rekeyed by the peer, awaiting its delete"
                } else {
                    "installed, receiving"
                };
                json!({
                    "name": self.name,
                    "spi_in": format!("{:08x}", p.in_key.0),
                    "spi_out": format!("{:08x}", p.out_key.spi),
                    "suite": self.suite,
                    "policies": self.policies.len(),
                    "installed_s": now_ms.saturating_sub(p.up_ms) / 1000,
                    "rekey_in_s": p.rekey_at_ms.map(|t| t.saturating_sub(now_ms) / 1000),
                    "expires_in_s": p.expires_ms.saturating_sub(now_ms) / 1000,
                    "rekey_failures": p.rekey_failures,
                    "rekey_error": p.rekey_error,
                    "state": if self.rekeying.contains_key(&p.spi_in) { "rekeying" } else { state },
                })
            })
            .collect()
    }
}
