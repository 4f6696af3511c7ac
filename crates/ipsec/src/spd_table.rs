//! The SPD as a table that changes while traffic flows (RFC 4301 §4.4.1): entries carry a
//! stable id given by whoever installed them and a priority (lower matches first, then the
//! order of installation, as `ip xfrm policy` orders them), so a key manager can add, replace
//! and remove one entry without rebuilding the rest. Replacing an entry at the same priority
//! keeps its place: repointing a policy to a new SA is one step (make-before-break rekeying).
//!
//! Lookups stay flat in the number of entries for the usual shape of a node with many peers,
//! one entry per peer host (RFC 4301 §4.4.1.1 selectors with a single destination address):
//! entries whose destination (or, for the mirrored inbound entries, source) is one address are
//! also filed in a hash map by that address, so a lookup visits the entries of the packet's
//! addresses and the others ("rest": prefixes, catch-alls), and takes the first in order.
//! The maps are keyed randomly, so addresses chosen by an attacker do not collide.
//!
//! Each entry also remembers when it last raised an acquire (RFC 4301 §4.4.1.1: a packet needs
//! an SA that does not exist yet), so that acquires are rate-limited per policy.

use crate::spd::{Action, SpdEntry};
use crate::types::Time;
use std::collections::BTreeMap;

/// Randomly keyed per process (aHash with `getrandom` seeds), as std's SipHash is, at a
/// fraction of its cost per lookup: the per-packet path hashes one address.
type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;
use std::net::IpAddr;
use wire::IpLayout;

/// Stable id of an SPD entry, chosen by the control plane.
pub type PolicyId = u64;

/// Priority of entries added without one (`Engine::add_policy`, the node config).
pub const DEFAULT_PRIORITY: u32 = 1000;

/// Ids from here up are given by [`SpdTable::push`] to entries added without an id.
const AUTO_ID_BASE: PolicyId = 1 << 63;

use crate::keyed_index::Home;
use crate::spd_hosts::{HostIndex, Order};

/// An entry as the table files it, beside its [`Hot`] line (in `SpdTable::hot`, at the same
/// index): `entry` keeps the entry as given, for the control plane.
#[derive(Debug)]
struct Slot {
    entry: SpdEntry,
    id: PolicyId,
    order: Order,
    last_acquire: Option<Time>,
}

/// All a packet's lookup reads of an entry, in one cache line: a copy of the selector and the
/// action, with a single-SA bundle's handle inline, so that matching and finding the SA cost
/// one line and no further pointer (the action's `Vec`) to follow. Built from the entry when
/// it is set and never changed after (entries are replaced whole, `SpdTable::set`).
///
/// The lines sit side by side in their own table (`SpdTable::hot`), apart from the rest of
/// each entry (`Slot`, 120 bytes more): with thousands of peers each packet meets a cold
/// entry, and a table three times denser spreads those lines over a third of the pages, so
/// over fewer TLB entries (`hipsec bench sas --sas 1,10000` sealing at 10,000 SAs, where doubling the SA
/// table's stride instead cost 2–4 ns a packet).
#[derive(Debug)]
#[repr(C, align(64))]
struct Hot {
    selector: crate::spd::Selector,
    verdict: Kind,
    /// The SA of a `Protect` with exactly one SA (`Kind::One`).
    sa: u32,
    /// Where `Option<Slot>` keeps its tag (`Live`): in this line, which every lookup reads.
    live: crate::types::Live,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Discard,
    Bypass,
    /// `Protect` with one SA, whose handle is in `Hot::sa`.
    One,
    /// Any other `Protect`: the handles are in the entry's action.
    Bundle,
}

impl Hot {
    fn of(e: &SpdEntry) -> Hot {
        let (verdict, sa) = match &e.action {
            Action::Discard => (Kind::Discard, 0),
            Action::Bypass => (Kind::Bypass, 0),
            Action::Protect(v) => match v.as_slice() {
                [h] => u32::try_from(*h).map_or((Kind::Bundle, 0), |h| (Kind::One, h)),
                _ => (Kind::Bundle, 0),
            },
        };
        Hot { selector: e.selector.clone(), verdict, sa, live: crate::types::Live::Yes }
    }
}

const _: () = assert!(std::mem::size_of::<Option<Hot>>() == 64);

/// What the entry a lookup found says, read from its first cache line where it can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict<'a> {
    /// Drop.
    Discard,
    /// Send as is.
    Bypass,
    /// Apply these outbound SAs in order; usually one.
    Protect(Sas<'a>),
}

/// The SAs of a `Protect` verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sas<'a> {
    /// The usual case: one SA.
    One(usize),
    /// Any other bundle (none: fail closed).
    Many(&'a [usize]),
}

impl Sas<'_> {
    /// The handles, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        let (one, many) = match self {
            Sas::One(h) => (Some(*h), &[][..]),
            Sas::Many(v) => (None, *v),
        };
        one.into_iter().chain(many.iter().copied())
    }
}

/// A packet's addresses and their hashes in the per-address indexes ([`SpdTable::probe`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Probe {
    dst: Option<(IpAddr, u64)>,
    src: Option<(IpAddr, u64)>,
}

/// Where an entry is filed besides the ordered list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Dst(IpAddr),
    Src(IpAddr),
    Rest,
}

/// Ordered SPD entries with ids and priorities, indexed by single addresses.
#[derive(Debug, Default)]
pub struct SpdTable {
    slots: Vec<Option<Slot>>,
    /// Each entry's lookup line, at its index in `slots`.
    hot: Vec<Option<Hot>>,
    free: Vec<usize>,
    by_id: HashMap<PolicyId, usize>,
    all: BTreeMap<Order, usize>,
    by_dst: HostIndex,
    by_src: HostIndex,
    rest: BTreeMap<Order, usize>,
    next_seq: u64,
    next_auto: PolicyId,
    /// Counts changes (push, set, remove): a verdict remembered under one generation holds
    /// only while it is current.
    generation: u64,
    /// How many times the entries' `Protect` actions name each SA index, so that the engine
    /// can tell whether a freed SA slot may be reused ([`SpdTable::names`]) without walking
    /// every entry (which made filing an SA O(free slots × policies)). A map, not a `Vec`
    /// indexed by handle: a policy may name any handle, and one naming a huge index must not
    /// allocate up to it.
    sa_refs: HashMap<usize, u32>,
}

/// The SA handles an action names (each once per mention).
fn handles(a: &Action) -> &[usize] {
    match a {
        Action::Protect(v) => v.as_slice(),
        _ => &[],
    }
}

fn host(p: &crate::spd::Prefix) -> Option<IpAddr> {
    let full = if p.addr.is_ipv4() { 32 } else { 128 };
    (p.len == full).then_some(p.addr)
}

fn key_of(e: &SpdEntry) -> Key {
    match (host(&e.selector.dst), host(&e.selector.src)) {
        (Some(d), _) => Key::Dst(d),
        (None, Some(s)) => Key::Src(s),
        (None, None) => Key::Rest,
    }
}

fn addr(b: &[u8]) -> Option<IpAddr> {
    match b.len() {
        4 => <[u8; 4]>::try_from(b).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(b).ok().map(IpAddr::from),
        _ => None,
    }
}

impl SpdTable {
    /// True if no entry is installed.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Changes so far; see the field.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    fn slot(&self, i: usize) -> Option<&Slot> {
        self.slots.get(i).and_then(Option::as_ref)
    }

    fn hot(&self, i: usize) -> Option<&Hot> {
        self.hot.get(i).and_then(Option::as_ref)
    }

    /// `(id, priority, entry)` in match order.
    pub fn iter(&self) -> impl Iterator<Item = (PolicyId, u32, &SpdEntry)> {
        self.all.values().filter_map(|&i| self.slot(i)).map(|s| (s.id, s.order.0, &s.entry))
    }

    /// Appends an entry at [`DEFAULT_PRIORITY`] under a fresh id, which it returns.
    pub fn push(&mut self, e: SpdEntry) -> PolicyId {
        self.generation += 1;
        let id = AUTO_ID_BASE + self.next_auto;
        self.next_auto += 1;
        self.set(id, DEFAULT_PRIORITY, e);
        id
    }

    /// Installs entry `id`, or replaces it. A replacement at the same priority keeps its place
    /// (and its acquire timer); otherwise the entry goes after every entry of lower or equal
    /// priority. Returns the entry it replaced.
    pub fn set(&mut self, id: PolicyId, priority: u32, e: SpdEntry) -> Option<SpdEntry> {
        self.generation += 1;
        let (order, last_acquire, old) = match self.by_id.get(&id).copied() {
            Some(i) => {
                let keep = self.slot(i).map(|s| (s.order, s.last_acquire));
                let old = self.remove(id);
                match keep {
                    Some((o, t)) if o.0 == priority => (o, t, old),
                    _ => (self.next_order(priority), None, old),
                }
            }
            None => (self.next_order(priority), None, None),
        };
        let key = key_of(&e);
        for &h in handles(&e.action) {
            *self.sa_refs.entry(h).or_insert(0) += 1;
        }
        let hot = Hot::of(&e);
        let slot = Slot { id, order, entry: e, last_acquire };
        let i = crate::types::put_in_slot(&mut self.slots, self.free.pop(), slot);
        if self.hot.len() <= i {
            self.hot.resize_with(i + 1, || None);
        }
        self.hot[i] = Some(hot);
        self.by_id.insert(id, i);
        self.all.insert(order, i);
        match key {
            Key::Dst(a) => self.by_dst.insert(a, order, i),
            Key::Src(a) => self.by_src.insert(a, order, i),
            Key::Rest => {
                self.rest.insert(order, i);
            }
        }
        old
    }

    fn next_order(&mut self, priority: u32) -> Order {
        self.next_seq += 1;
        (priority, self.next_seq)
    }

    /// Removes entry `id`; returns it.
    pub fn remove(&mut self, id: PolicyId) -> Option<SpdEntry> {
        self.generation += 1;
        let i = self.by_id.remove(&id)?;
        let s = self.slots.get_mut(i).and_then(Option::take)?;
        if let Some(h) = self.hot.get_mut(i) {
            *h = None;
        }
        self.free.push(i);
        for h in handles(&s.entry.action) {
            if let Some(n) = self.sa_refs.get_mut(h) {
                *n -= 1;
                if *n == 0 {
                    self.sa_refs.remove(h);
                }
            }
        }
        self.all.remove(&s.order);
        match key_of(&s.entry) {
            Key::Dst(a) => self.by_dst.remove(a, s.order),
            Key::Src(a) => self.by_src.remove(a, s.order),
            Key::Rest => {
                self.rest.remove(&s.order);
            }
        }
        Some(s.entry)
    }

    /// The entry with id `id`.
    pub fn get(&self, id: PolicyId) -> Option<&SpdEntry> {
        self.by_id.get(&id).and_then(|&i| self.slot(i)).map(|s| &s.entry)
    }

    /// The first entry in match order that matches, with the handle [`SpdTable::acquire_due`]
    /// takes (RFC 4301 §4.4.1: ordered, first match).
    pub fn lookup(&self, p: &[u8], layout: &IpLayout) -> Option<(usize, &Action)> {
        self.find(p, layout).and_then(|i| self.slot(i).map(|s| (i, &s.entry.action)))
    }

    /// [`SpdTable::lookup`] without the action: the data path reads the entry's verdict from
    /// its first cache line ([`SpdTable::verdict`]).
    pub(crate) fn find(&self, p: &[u8], layout: &IpLayout) -> Option<usize> {
        self.find_probed(p, layout, &self.probe(p, layout, crate::types::no_prefetch))
    }

    /// Hashes the packet's addresses for the per-address indexes and starts fetching the
    /// index slots a lookup will read (`prefetch` is the CPU's, `types::Prefetch`): the
    /// first of a batch's three passes over its packets (`engine_batch.rs`), which lets the
    /// misses of many packets' lookups overlap.
    pub(crate) fn probe(
        &self,
        p: &[u8],
        layout: &IpLayout,
        prefetch: impl crate::types::Prefetch,
    ) -> Probe {
        let mut probe = Probe::default();
        if self.by_dst.is_empty() && self.by_src.is_empty() {
            return probe;
        }
        let (s, d) = layout.addrs(p);
        for (ix, a, out) in [(&self.by_dst, d, &mut probe.dst), (&self.by_src, s, &mut probe.src)] {
            if let Some(a) = addr(a).filter(|_| !ix.is_empty()) {
                *out = Some((a, ix.hash(&a, prefetch)));
            }
        }
        probe
    }

    /// The second pass: starts fetching the entries a probe's index slots name (their first
    /// line, `Hot`, all that `find_probed` and `verdict` read of a single-SA entry; the slot's
    /// `Option` tag is in it too, `Live`), as far as the home slots (fetched by the first
    /// pass) tell. An address whose home slot holds another (linear probing: some 20 % of
    /// lookups at the index's load) is not walked here, which would wait on the next slot's
    /// line: that line is prefetched instead, and `true` returned, for a third pass to
    /// finish with [`SpdTable::prefetch_displaced`] once it has arrived. At 10,000 SAs the
    /// walk here was most of this pass's growth, 3 ns a packet at one SA against 11–16 (a
    /// scratch timer in `hipsec bench sas --sas 1,10000`).
    pub(crate) fn prefetch_candidates(
        &self,
        probe: &Probe,
        prefetch: impl crate::types::Prefetch,
    ) -> bool {
        let mut displaced = false;
        for (ix, k) in [(&self.by_dst, probe.dst), (&self.by_src, probe.src)] {
            let Some((a, h)) = k else { continue };
            match ix.first_at_home(&a, h) {
                Home::Here(i) => self.prefetch_hot(i, prefetch),
                Home::Vacant => {}
                Home::Taken => {
                    ix.prefetch_after_home(h, prefetch);
                    displaced = true;
                }
            }
        }
        displaced
    }

    /// The third pass, for a probe [`SpdTable::prefetch_candidates`] found displaced: walks
    /// its index slots and starts fetching the entries they name.
    pub(crate) fn prefetch_displaced(&self, probe: &Probe, prefetch: impl crate::types::Prefetch) {
        for (ix, k) in [(&self.by_dst, probe.dst), (&self.by_src, probe.src)] {
            if let Some(i) = k.and_then(|(a, h)| ix.first(&a, h)) {
                self.prefetch_hot(i, prefetch);
            }
        }
    }

    /// Starts fetching the lookup lines of entry `i`.
    fn prefetch_hot(&self, i: usize, prefetch: impl crate::types::Prefetch) {
        if let Some(slot) = self.hot.get(i) {
            let base = std::ptr::from_ref(slot).cast::<u8>();
            for off in (0..std::mem::size_of::<Hot>()).step_by(64) {
                prefetch(base.wrapping_add(off));
            }
        }
    }

    /// [`SpdTable::find`] with the packet's `probe` (of this packet, taken since the last
    /// change to the table).
    pub(crate) fn find_probed(&self, p: &[u8], layout: &IpLayout, probe: &Probe) -> Option<usize> {
        let matches = |i: usize| self.hot(i).is_some_and(|h| h.selector.matches(p, layout));
        fn better(best: &mut Option<(Order, usize)>, c: Option<(Order, usize)>) {
            if let Some(c) = c {
                if best.is_none_or(|b| c.0 < b.0) {
                    *best = Some(c);
                }
            }
        }
        let mut best: Option<(Order, usize)> = None;
        if let Some((d, h)) = probe.dst {
            better(&mut best, self.by_dst.first_match(&d, h, matches));
        }
        if let Some((s, h)) = probe.src {
            better(&mut best, self.by_src.first_match(&s, h, matches));
        }
        // The rest only up to the best found so far: an entry after it cannot win.
        let bound = best.map(|b| b.0);
        let r = self
            .rest
            .iter()
            .take_while(|(o, _)| bound.is_none_or(|b| **o < b))
            .find(|(_, i)| matches(**i))
            .map(|(o, i)| (*o, *i));
        better(&mut best, r);
        best.map(|(_, i)| i)
    }

    /// What the entry `find` returned as `i` says.
    pub(crate) fn verdict(&self, i: usize) -> Option<Verdict<'_>> {
        let h = self.hot(i)?;
        Some(match h.verdict {
            Kind::Discard => Verdict::Discard,
            Kind::Bypass => Verdict::Bypass,
            Kind::One => Verdict::Protect(Sas::One(h.sa as usize)),
            Kind::Bundle => match &self.slot(i)?.entry.action {
                Action::Protect(v) => Verdict::Protect(Sas::Many(v)),
                // `Hot::of` files every other action under its own kind.
                Action::Discard => Verdict::Discard,
                Action::Bypass => Verdict::Bypass,
            },
        })
    }

    /// The action of the entry `lookup` returned as `i`.
    pub fn action(&self, i: usize) -> Option<&Action> {
        self.slot(i).map(|s| &s.entry.action)
    }

    /// If the entry `lookup` returned as `i` may raise an acquire at `now` (none in the last
    /// `interval`), records it and returns the entry's id.
    pub fn acquire_due(&mut self, i: usize, now: Time, interval: Time) -> Option<PolicyId> {
        let s = self.slots.get_mut(i).and_then(Option::as_mut)?;
        match s.last_acquire {
            Some(t) if now.0.saturating_sub(t.0) < interval.0 => None,
            _ => {
                s.last_acquire = Some(now);
                Some(s.id)
            }
        }
    }

    /// True if some entry's `Protect` action names SA index `sa`, in constant time (the
    /// tests hold it to a walk over every entry).
    pub fn names(&self, sa: usize) -> bool {
        self.sa_refs.contains_key(&sa)
    }
}

#[cfg(test)]
#[path = "spd_table_tests.rs"]
mod tests;
