//! An established IKE SA's CHILD SAs and timers: its pairs in the data path (which one each
//! child sends on), the rekey schedule with retries, the IKE SA's own rekey and DPD, and the
//! make-before-break order of installs, switches and removals (RFC 7296 §1.3, §2.4, §2.8).

use super::sink::Sink;
use super::{AssocId, ConnectionConfig, Event};
use crate::config::ChildSaKeys;
use crate::session::{Output, Request, Session};
use crate::time::Time;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A CHILD SA pair in the data path.
#[derive(Debug, Clone)]
pub(crate) struct Pair {
    pub(crate) spi_in: u32,
    pub(crate) spi_out: u32,
    pub(crate) rekey_at: Option<Time>,
    pub(crate) expires: Option<Time>,
    pub(crate) rekey_failures: u32,
    /// A successor exists (our rekey or the peer's completed).
    pub(crate) replaced: bool,
    /// The peer's rekey made this pair: outbound moves here when the old pair goes.
    pub(crate) awaiting_switch: bool,
    /// Its child (0: the first, IKE_AUTH's; then `more_children` in order).
    pub(crate) child: usize,
}

pub(crate) struct Up {
    pub(crate) session: Session,
    pub(crate) pairs: Vec<Pair>,
    /// Per child, the pair its traffic is sent on.
    pub(crate) active_out: HashMap<usize, u32>,
    pub(super) rekeying: HashSet<u32>,
    /// Further children whose CREATE_CHILD_SA failed: when to ask again (None: asked, no
    /// answer yet), and how many failures so far (the rekey back-off).
    pub(super) child_retry: BTreeMap<usize, (Option<Time>, u32)>,
    pub(super) ike_rekey_at: Option<Time>,
    pub(super) ike_rekey_failures: u32,
    pub(super) dpd_at: Option<Time>,
    pub(super) terminating: bool,
}

impl Up {
    /// Just established: no pair yet, the IKE SA's first rekey and DPD times.
    pub(super) fn new(session: Session, ike_rekey_at: Option<Time>, dpd_at: Option<Time>) -> Up {
        Up {
            session,
            pairs: Vec::new(),
            active_out: HashMap::new(),
            rekeying: HashSet::new(),
            child_retry: BTreeMap::new(),
            ike_rekey_at,
            ike_rekey_failures: 0,
            dpd_at,
            terminating: false,
        }
    }

    /// Whether `p`'s child sends on it.
    pub(super) fn sending(&self, p: &Pair) -> bool {
        self.active_out.get(&p.child) == Some(&p.spi_in)
    }

    /// The child a new pair belongs to: a rekey's, its predecessor's; else the first whose
    /// selectors hold the negotiated ones (§2.9; each child has its own).
    pub(super) fn child_of(
        &self,
        keys: &ChildSaKeys,
        rekeys: Option<u32>,
        cfg: &ConnectionConfig,
    ) -> usize {
        if let Some(p) = rekeys.and_then(|o| self.pairs.iter().find(|p| p.spi_in == o)) {
            return p.child;
        }
        let within = crate::auth::ts_within;
        cfg.ike
            .child_policies()
            .iter()
            .position(|c| {
                within(&keys.local_ts, &c.local_ts) && within(&keys.remote_ts, &c.remote_ts)
            })
            .unwrap_or(0)
    }

    /// Sends `req`, or reports it failed as the session would.
    pub(super) fn ask(&mut self, now: Time, req: Request, cfg: &ConnectionConfig) -> Output {
        match self.session.request(now.as_millis(), req) {
            Ok(out) => out,
            Err(_) => {
                self.request_failed(now, req, false, cfg);
                Output::default()
            }
        }
    }

    pub(super) fn request_failed(
        &mut self,
        now: Time,
        req: Request,
        superseded: bool,
        cfg: &ConnectionConfig,
    ) {
        match req {
            Request::RekeyChild(spi) => {
                self.rekeying.remove(&spi);
                if superseded {
                    return;
                }
                // Tried again with back-off until the pair's hard lifetime; the old pair carries
                // the traffic meanwhile.
                let Some(p) = self.pairs.iter_mut().find(|p| p.spi_in == spi) else { return };
                p.rekey_failures = p.rekey_failures.saturating_add(1);
                let at = now + cfg.rekey_retry.wait(p.rekey_failures);
                p.rekey_at = Some(at).filter(|at| p.expires.is_none_or(|e| *at < e));
            }
            Request::RekeyIke => {
                self.ike_rekey_failures = self.ike_rekey_failures.saturating_add(1);
                self.ike_rekey_at = Some(now + cfg.rekey_retry.wait(self.ike_rekey_failures));
            }
            _ => {}
        }
    }

    /// A new pair: the first one sends at once, as does one from our own rekey (the peer
    /// installed its inbound SA before answering); one from the peer's rekey waits for the old
    /// pair's removal, and one from a collision (`rekeys: None` after the first) for a switch
    /// the removals decide (§2.8.1).
    pub(super) fn install(
        &mut self,
        id: AssocId,
        now: Time,
        keys: ChildSaKeys,
        rekeys: Option<u32>,
        cfg: &ConnectionConfig,
        sink: &mut Sink<'_>,
    ) {
        let ours = rekeys.is_some_and(|o| self.rekeying.remove(&o));
        let c = self.child_of(&keys, rekeys, cfg);
        self.child_retry.remove(&c);
        let switch = !self.pairs.iter().any(|p| p.child == c) || ours;
        let (spi_in, spi_out) = (keys.spi_in, keys.spi_out);
        let child = cfg.child_name(c);
        let nat = self.session.ike().nat;
        sink.events.push_back(Event::InstallChild {
            assoc: id,
            child: child.clone(),
            keys: Box::new(keys),
            udp_encap: cfg.encap || nat.local_behind_nat || nat.remote_behind_nat,
        });
        if let Some(old) = rekeys {
            if let Some(p) = self.pairs.iter_mut().find(|p| p.spi_in == old) {
                p.rekey_at = None;
                p.replaced = true;
            }
            sink.events.push_back(Event::ChildRekeyed {
                assoc: id,
                child: child.clone(),
                old_spi_in: old,
                spi_in,
            });
        }
        let l = cfg.lifetimes(c);
        self.pairs.push(Pair {
            spi_in,
            spi_out,
            rekey_at: l.rekey_at(now, sink.rng),
            expires: l.hard().map(|h| now + h),
            rekey_failures: 0,
            replaced: false,
            awaiting_switch: rekeys.is_some() && !ours,
            child: c,
        });
        if switch {
            self.active_out.insert(c, spi_in);
            sink.events.push_back(Event::SwitchOutbound { assoc: id, child, spi_in, spi_out });
        }
    }

    /// A pair is gone (DELETE either way, or its hard lifetime). If it was sending, outbound
    /// moves first: to the pair the peer's rekey made, else the newest.
    pub(super) fn remove(
        &mut self,
        id: AssocId,
        spi_in: u32,
        cfg: &ConnectionConfig,
        sink: &mut Sink<'_>,
    ) {
        let Some(i) = self.pairs.iter().position(|p| p.spi_in == spi_in) else { return };
        let old = self.pairs.remove(i);
        self.rekeying.remove(&spi_in);
        let c = old.child;
        let child = cfg.child_name(c);
        if self.active_out.get(&c) == Some(&spi_in) {
            self.active_out.remove(&c);
            let mine = || self.pairs.iter().rev().filter(|p| p.child == c);
            let next = mine().find(|p| p.awaiting_switch).or_else(|| mine().next());
            if let Some(n) = next {
                self.active_out.insert(c, n.spi_in);
                sink.events.push_back(Event::SwitchOutbound {
                    assoc: id,
                    child: child.clone(),
                    spi_in: n.spi_in,
                    spi_out: n.spi_out,
                });
            }
        }
        for p in self.pairs.iter_mut().filter(|p| p.child == c) {
            p.awaiting_switch = false;
        }
        sink.events.push_back(Event::RemoveChild {
            assoc: id,
            child,
            spi_in: old.spi_in,
            spi_out: old.spi_out,
        });
    }

    pub(super) fn poll_timeout(&self) -> Option<Time> {
        let session = self.session.deadline_ms().map(Time::from_millis);
        let pairs = self.pairs.iter().flat_map(|p| [p.rekey_at, p.expires]).flatten();
        let retries = self.child_retry.values().filter_map(|r| r.0);
        [session, self.ike_rekey_at, self.dpd_at]
            .into_iter()
            .flatten()
            .chain(pairs)
            .chain(retries)
            .min()
    }

    pub(super) fn on_timeout(
        &mut self,
        now: Time,
        cfg: &ConnectionConfig,
        sink: &mut Sink<'_>,
        id: AssocId,
    ) -> Output {
        let mut out = self.session.on_timeout(now.as_millis());
        let mut reqs = Vec::new();
        let expired: Vec<(u32, bool)> = self
            .pairs
            .iter()
            .filter(|p| p.expires.is_some_and(|e| now >= e))
            .map(|p| (p.spi_in, p.replaced))
            .collect();
        for (spi_in, replaced) in expired {
            // The hard lifetime: the pair goes now, and the peer is told (§1.4.1).
            if !replaced {
                sink.stats.hard_expired += 1;
            }
            self.remove(id, spi_in, cfg, sink);
            reqs.push(Request::DeleteChild(spi_in));
        }
        for p in &mut self.pairs {
            if p.rekey_at.is_some_and(|t| now >= t) {
                p.rekey_at = None;
                // Already under way when an operator asked first.
                if self.rekeying.insert(p.spi_in) {
                    reqs.push(Request::RekeyChild(p.spi_in));
                    sink.events.push_back(Event::RekeyStarted {
                        assoc: id,
                        child: cfg.child_name(p.child),
                        spi_in: p.spi_in,
                    });
                }
            }
        }
        for (i, r) in &mut self.child_retry {
            if r.0.is_some_and(|t| now >= t) {
                // Out of the timers until it fails again (then back, one step further on).
                r.0 = None;
                reqs.push(Request::NewChild(*i));
            }
        }
        if self.ike_rekey_at.is_some_and(|t| now >= t) {
            self.ike_rekey_at = None;
            reqs.push(Request::RekeyIke);
        }
        if self.dpd_at.is_some_and(|t| now >= t) {
            self.dpd_at = Some(now + cfg.dpd_delay);
            reqs.push(Request::Liveness);
        }
        for r in reqs {
            let o = self.ask(now, r, cfg);
            out.send.extend(o.send);
            out.events.extend(o.events);
        }
        out
    }
}
