//! The SPD's index of entries by one address (`SpdTable`'s `by_dst` and `by_src`): for each
//! address, its entries in match order.
//!
//! Almost every address has one entry (one policy per peer host), so the first sits inline in
//! a [`KeyedIndex`] slot beside the address, and the rare others in a side map. A lookup then
//! costs one slot, whose address is known from the hash alone: a batch hashes every packet's
//! addresses and prefetches their slots before it probes any (`engine_batch.rs`), so that with
//! thousands of peers the misses of many packets overlap instead of following one another
//! (`hipsec bench sas --sas 1,10000`). The index is keyed at random, so addresses chosen by an attacker do not collide.

use crate::keyed_index::{Home, KeyedIndex};
use std::net::IpAddr;

/// Match order: priority, then installation.
pub(crate) type Order = (u32, u64);

type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;

/// An address's first entry, and whether it has more (in `HostIndex::more`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    first: (Order, usize),
    more: bool,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct HostIndex {
    heads: KeyedIndex<IpAddr, Head>,
    /// Each address's entries after its first, in match order.
    more: HashMap<IpAddr, Vec<(Order, usize)>>,
}

impl HostIndex {
    pub(crate) fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// The hash [`HostIndex::first_match`] takes, after starting to fetch the slot it will
    /// read first (every line of it: `KeyedIndex::prefetch_slot`).
    pub(crate) fn hash(&self, a: &IpAddr, prefetch: impl crate::types::Prefetch) -> u64 {
        let h = self.heads.hash(a);
        self.heads.prefetch_slot(h, prefetch);
        h
    }

    /// Files entry `i` under `a` at `o`.
    pub(crate) fn insert(&mut self, a: IpAddr, o: Order, i: usize) {
        let Some(mut head) = self.heads.get(&a) else {
            self.heads.insert(a, Head { first: (o, i), more: false });
            return;
        };
        let more = self.more.entry(a).or_default();
        let e = if o < head.first.0 { std::mem::replace(&mut head.first, (o, i)) } else { (o, i) };
        let at = more.partition_point(|m| m.0 < e.0);
        more.insert(at, e);
        head.more = true;
        self.heads.insert(a, head);
    }

    /// Removes the entry filed under `a` at `o`.
    pub(crate) fn remove(&mut self, a: IpAddr, o: Order) {
        let Some(mut head) = self.heads.get(&a) else { return };
        if head.first.0 == o {
            match self.more.get_mut(&a).filter(|m| !m.is_empty()) {
                Some(m) => head.first = m.remove(0),
                None => {
                    self.heads.remove(&a);
                    self.more.remove(&a);
                    return;
                }
            }
        } else if let Some(m) = self.more.get_mut(&a) {
            m.retain(|e| e.0 != o);
        }
        head.more = self.more.get(&a).is_some_and(|m| !m.is_empty());
        if !head.more {
            self.more.remove(&a);
        }
        self.heads.insert(a, head);
    }

    /// The first-filed entry of `a` (its hash `h`) that `matches`; `None` if none does.
    pub(crate) fn first_match(
        &self,
        a: &IpAddr,
        h: u64,
        matches: impl Fn(usize) -> bool,
    ) -> Option<(Order, usize)> {
        let head = self.heads.get_hashed(h, a)?;
        if matches(head.first.1) {
            return Some(head.first);
        }
        if !head.more {
            return None;
        }
        self.more.get(a)?.iter().find(|e| matches(e.1)).copied()
    }

    /// The entry `first_match` would try first under `a` (for a prefetch of its slot).
    pub(crate) fn first(&self, a: &IpAddr, h: u64) -> Option<usize> {
        self.heads.get_hashed(h, a).map(|head| head.first.1)
    }

    /// [`HostIndex::first`] as far as `a`'s home slot tells (the slot [`HostIndex::hash`]
    /// prefetched), reading no further.
    pub(crate) fn first_at_home(&self, a: &IpAddr, h: u64) -> Home<usize> {
        self.heads.home(h, a).map(|head| head.first.1)
    }

    /// Starts fetching the slot after `a`'s home slot (`h`, its hash), the next a lookup reads
    /// when the home slot holds another address.
    pub(crate) fn prefetch_after_home(&self, h: u64, prefetch: impl crate::types::Prefetch) {
        self.heads.prefetch_slot(h.wrapping_add(1), prefetch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// Any sequence of inserts and removes: for every address, `first_match` finds what a
        /// plain ordered list of that address's entries finds (the model), for any predicate.
        #[test]
        fn agrees_with_ordered_lists(
            ops in proptest::collection::vec((any::<bool>(), 0u8..6, 0u32..4, 0usize..40), 0..200),
            pick in 0usize..40,
        ) {
            let mut ix = HostIndex::default();
            let mut model: BTreeMap<IpAddr, BTreeMap<Order, usize>> = BTreeMap::new();
            for (seq, (insert, a, prio, i)) in ops.into_iter().enumerate() {
                let a = IpAddr::from([10, 0, 0, a]);
                let list = model.entry(a).or_default();
                if insert {
                    let o = (prio, seq as u64);
                    ix.insert(a, o, i);
                    list.insert(o, i);
                } else if let Some((&o, _)) = list.iter().nth(i % list.len().max(1)) {
                    ix.remove(a, o);
                    list.remove(&o);
                }
            }
            for (a, list) in &model {
                let h = ix.hash(a, crate::types::no_prefetch);
                for want in [pick, usize::MAX] {
                    let got = ix.first_match(a, h, |i| i == want || want == usize::MAX);
                    let expect = list.iter().find(|&(_, &i)| i == want || want == usize::MAX);
                    prop_assert_eq!(got, expect.map(|(o, i)| (*o, *i)));
                }
                prop_assert_eq!(ix.first(a, h), list.values().next().copied());
            }
            prop_assert_eq!(ix.is_empty(), model.values().all(BTreeMap::is_empty));
        }
    }
}
