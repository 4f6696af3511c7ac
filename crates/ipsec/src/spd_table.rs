//! The SPD as a table that changes while traffic flows (RFC 4301 §4.4.1): entries carry a
//! stable id given by whoever installed them and a priority (lower matches first, then the
//! order of installation, as `ip xfrm policy` orders them), so a key manager can add, replace
//! and remove one entry without rebuilding the rest. Replacing an entry at the same priority
//! keeps its place: repointing a policy to a new SA is one step (make-before-break rekeying).
//!
//! Each entry also remembers when it last raised an acquire (RFC 4301 §4.4.1.1: a packet needs
//! an SA that does not exist yet), so that acquires are rate-limited per policy.

use crate::spd::{Action, SpdEntry};
use crate::types::Time;
use wire::IpLayout;

/// Stable id of an SPD entry, chosen by the control plane.
pub type PolicyId = u64;

/// Priority of entries added without one (`Engine::add_policy`, the node config).
pub const DEFAULT_PRIORITY: u32 = 1000;

/// Ids from here up are given by [`SpdTable::push`] to entries added without an id.
const AUTO_ID_BASE: PolicyId = 1 << 63;

#[derive(Debug, Clone, Copy)]
struct Meta {
    id: PolicyId,
    priority: u32,
    last_acquire: Option<Time>,
}

/// Ordered SPD entries with ids and priorities.
#[derive(Debug, Default)]
pub struct SpdTable {
    entries: Vec<SpdEntry>,
    meta: Vec<Meta>,
    next_auto: PolicyId,
}

impl SpdTable {
    /// True if no entry is installed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entries in match order.
    pub fn entries(&self) -> &[SpdEntry] {
        &self.entries
    }

    /// `(id, priority, entry)` in match order.
    pub fn iter(&self) -> impl Iterator<Item = (PolicyId, u32, &SpdEntry)> {
        self.meta.iter().zip(&self.entries).map(|(m, e)| (m.id, m.priority, e))
    }

    /// Appends an entry at [`DEFAULT_PRIORITY`] under a fresh id, which it returns.
    pub fn push(&mut self, e: SpdEntry) -> PolicyId {
        let id = AUTO_ID_BASE + self.next_auto;
        self.next_auto += 1;
        self.set(id, DEFAULT_PRIORITY, e);
        id
    }

    /// Installs entry `id`, or replaces it. A replacement at the same priority keeps its place
    /// (and its acquire timer); otherwise the entry goes after every entry of lower or equal
    /// priority. Returns the entry it replaced.
    pub fn set(&mut self, id: PolicyId, priority: u32, e: SpdEntry) -> Option<SpdEntry> {
        if let Some(i) = self.position(id) {
            if self.meta[i].priority == priority {
                return Some(std::mem::replace(&mut self.entries[i], e));
            }
            let old = self.remove(id);
            self.insert(id, priority, e);
            return old;
        }
        self.insert(id, priority, e);
        None
    }

    fn insert(&mut self, id: PolicyId, priority: u32, e: SpdEntry) {
        let at = self.meta.partition_point(|m| m.priority <= priority);
        self.entries.insert(at, e);
        self.meta.insert(at, Meta { id, priority, last_acquire: None });
    }

    /// Removes entry `id`; returns it.
    pub fn remove(&mut self, id: PolicyId) -> Option<SpdEntry> {
        let i = self.position(id)?;
        self.meta.remove(i);
        Some(self.entries.remove(i))
    }

    /// The entry with id `id`.
    pub fn get(&self, id: PolicyId) -> Option<&SpdEntry> {
        self.position(id).map(|i| &self.entries[i])
    }

    fn position(&self, id: PolicyId) -> Option<usize> {
        self.meta.iter().position(|m| m.id == id)
    }

    /// Index and action of the first entry that matches (RFC 4301 §4.4.1: ordered, first match).
    pub fn lookup(&self, p: &[u8], layout: &IpLayout) -> Option<(usize, &Action)> {
        self.entries
            .iter()
            .enumerate()
            .find(|(_, e)| e.selector.matches(p, layout))
            .map(|(i, e)| (i, &e.action))
    }

    /// If entry `i` may raise an acquire at `now` (none in the last `interval`), records it and
    /// returns the entry's id.
    pub fn acquire_due(&mut self, i: usize, now: Time, interval: Time) -> Option<PolicyId> {
        let m = self.meta.get_mut(i)?;
        match m.last_acquire {
            Some(t) if now.0.saturating_sub(t.0) < interval.0 => None,
            _ => {
                m.last_acquire = Some(now);
                Some(m.id)
            }
        }
    }

    /// Every SA index named by a `Protect` action, once per entry that names it.
    pub fn referenced(&self) -> impl Iterator<Item = usize> + '_ {
        self.entries
            .iter()
            .flat_map(|e| match &e.action {
                Action::Protect(v) => v.as_slice(),
                _ => &[],
            })
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spd::{Prefix, Selector};

    fn entry(dst: &str, action: Action) -> SpdEntry {
        let any: Prefix = "0.0.0.0/0".parse().unwrap_or(Prefix::any(false));
        let dst = dst.parse().unwrap_or(any);
        SpdEntry {
            selector: Selector { src: any, dst, proto: None, src_ports: None, dst_ports: None },
            action,
        }
    }

    fn ids(t: &SpdTable) -> Vec<PolicyId> {
        t.iter().map(|(id, _, _)| id).collect()
    }

    #[test]
    fn priority_then_installation_order() {
        let mut t = SpdTable::default();
        t.set(1, 100, entry("10.0.0.1", Action::Bypass));
        t.set(2, 50, entry("10.0.0.2", Action::Bypass));
        t.set(3, 100, entry("10.0.0.3", Action::Bypass));
        t.set(4, 0, entry("10.0.0.4", Action::Discard));
        assert_eq!(ids(&t), [4, 2, 1, 3]);
        // Same priority: replaced in place. Other priority: moved.
        t.set(2, 50, entry("10.0.0.2", Action::Protect(vec![7])));
        assert_eq!(ids(&t), [4, 2, 1, 3]);
        assert_eq!(t.get(2).map(|e| e.action.clone()), Some(Action::Protect(vec![7])));
        t.set(4, 200, entry("10.0.0.4", Action::Discard));
        assert_eq!(ids(&t), [2, 1, 3, 4]);
        assert!(t.remove(1).is_some());
        assert!(t.remove(1).is_none());
        assert_eq!(ids(&t), [2, 3, 4]);
        assert_eq!(t.referenced().collect::<Vec<_>>(), [7]);
        let auto = t.push(entry("10.0.0.9", Action::Bypass));
        assert!(auto >= AUTO_ID_BASE);
        assert_eq!(ids(&t), [2, 3, 4, auto], "default priority 1000 sorts after 200");
    }

    #[test]
    fn acquire_rate_limited_per_entry() {
        let mut t = SpdTable::default();
        t.set(1, 1, entry("10.0.0.1", Action::Protect(vec![])));
        t.set(2, 1, entry("10.0.0.2", Action::Protect(vec![])));
        let sec = Time::from_secs(1);
        assert_eq!(t.acquire_due(0, Time(10), sec), Some(1));
        assert_eq!(t.acquire_due(0, Time(999_999), sec), None);
        assert_eq!(t.acquire_due(1, Time(20), sec), Some(2), "limits are per policy");
        assert_eq!(t.acquire_due(0, Time(1_000_010), sec), Some(1));
        assert_eq!(t.acquire_due(9, Time(0), sec), None);
    }
}
