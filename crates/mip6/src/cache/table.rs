//! The binding cache's table: home address → entry, open addressing with linear probing, the
//! entry stored beside its key in the bucket.
//!
//! Why not the standard `HashMap`: at a million entries a registration's cost is the memory
//! load of its bucket, and a batch of registrations is fast only if those loads overlap. The
//! standard map finds a bucket in two dependent loads (its control bytes, then the bucket),
//! and its look-up is long enough that few fit in the CPU's window at once. Here the slot
//! follows from the hash alone, so [`HomeTable::touch`] is one load, and a batch's loads run
//! side by side (see `examples/cache_update_cost.rs`). The hash is keyed at random per table,
//! as `HashMap`'s is, so no one can choose home addresses that collide; and only a mobile node
//! with an SA gets an entry at all.
//!
//! Removal shifts the following entries of the probe run back (no tombstones), so probe runs
//! stay as short as the load allows: at most three quarters of the buckets are used.

use std::net::Ipv6Addr;

/// An open-addressing map from home address to `V`.
#[derive(Debug, Clone)]
pub(crate) struct HomeTable<V> {
    buckets: Vec<Option<(Ipv6Addr, V)>>,
    len: usize,
    hasher: ahash::RandomState,
}

impl<V: Copy> HomeTable<V> {
    pub(crate) fn new() -> HomeTable<V> {
        HomeTable { buckets: Vec::new(), len: 0, hasher: ahash::RandomState::new() }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Buckets allocated (used or not).
    pub(crate) fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Octets of one bucket.
    pub(crate) const BUCKET_BYTES: usize = std::mem::size_of::<Option<(Ipv6Addr, V)>>();

    fn mask(&self) -> usize {
        self.buckets.len().wrapping_sub(1)
    }

    fn ideal(&self, home: &Ipv6Addr) -> usize {
        (self.hasher.hash_one(home) as usize) & self.mask()
    }

    /// The bucket holding `home`, if any.
    fn find(&self, home: &Ipv6Addr) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask();
        let mut i = self.ideal(home);
        // A quarter of the buckets are always free, so a probe run ends.
        loop {
            match self.buckets.get(i)? {
                None => return None,
                Some((k, _)) if k == home => return Some(i),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    pub(crate) fn get(&self, home: &Ipv6Addr) -> Option<&V> {
        let i = self.find(home)?;
        self.buckets.get(i)?.as_ref().map(|(_, v)| v)
    }

    pub(crate) fn get_mut(&mut self, home: &Ipv6Addr) -> Option<&mut V> {
        let i = self.find(home)?;
        self.buckets.get_mut(i)?.as_mut().map(|(_, v)| v)
    }

    /// Loads `home`'s first bucket into the CPU cache: no load waits on another. The whole
    /// bucket is read, as a bucket (48 octets) may straddle two cache lines.
    pub(crate) fn touch(&self, home: &Ipv6Addr) {
        if self.len != 0 {
            std::hint::black_box(self.buckets.get(self.ideal(home)).copied());
        }
    }

    /// Makes room for `n` more entries without growing again.
    pub(crate) fn reserve(&mut self, n: usize) {
        let want = self.len.saturating_add(n);
        if want.saturating_mul(4) > self.buckets.len().saturating_mul(3) {
            self.resize(want.saturating_mul(4).div_ceil(3).next_power_of_two().max(16));
        }
    }

    /// Inserts or replaces `home`'s value; returns the old one.
    pub(crate) fn insert(&mut self, home: Ipv6Addr, value: V) -> Option<V> {
        if let Some(v) = self.get_mut(&home) {
            return Some(std::mem::replace(v, value));
        }
        self.reserve(1);
        self.place(home, value);
        None
    }

    /// Puts an absent `home` in the first free bucket of its probe run (there is room: the
    /// caller reserved it).
    fn place(&mut self, home: Ipv6Addr, value: V) {
        let mask = self.mask();
        let mut i = self.ideal(&home);
        while let Some(Some(_)) = self.buckets.get(i) {
            i = (i + 1) & mask;
        }
        if let Some(b) = self.buckets.get_mut(i) {
            *b = Some((home, value));
            self.len += 1;
        }
    }

    /// Removes `home`, shifting the rest of its probe run back so no gap breaks a later look-up.
    pub(crate) fn remove(&mut self, home: &Ipv6Addr) -> Option<V> {
        let mut hole = self.find(home)?;
        let (_, value) = self.buckets.get_mut(hole)?.take()?;
        self.len -= 1;
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let Some(Some((k, _))) = self.buckets.get(j) else { break };
            // The entry at j may move into the hole only if the hole lies on its probe path,
            // between its ideal bucket and j.
            let ideal = self.ideal(k);
            if (j.wrapping_sub(ideal) & mask) >= (j.wrapping_sub(hole) & mask) {
                let moved = self.buckets.get_mut(j).and_then(Option::take);
                if let Some(b) = self.buckets.get_mut(hole) {
                    *b = moved;
                }
                hole = j;
            }
        }
        Some(value)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Ipv6Addr, &V)> + '_ {
        self.buckets.iter().filter_map(|b| b.as_ref().map(|(k, v)| (k, v)))
    }

    fn resize(&mut self, buckets: usize) {
        let old = std::mem::replace(&mut self.buckets, vec![None; buckets]);
        self.len = 0;
        for (home, value) in old.into_iter().flatten() {
            self.place(home, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    fn addr(k: u8) -> Ipv6Addr {
        Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, u16::from(k))
    }

    proptest! {
        /// The table agrees with the standard `HashMap` after any sequence of inserts and
        /// removes over a small key space (so probe runs collide, wrap and shift back).
        #[test]
        fn matches_hashmap(ops in prop::collection::vec((any::<bool>(), 0u8..40, any::<u32>()), 1..400)) {
            let mut t = HomeTable::new();
            let mut m = HashMap::new();
            for (ins, k, v) in ops {
                if ins {
                    prop_assert_eq!(t.insert(addr(k), v), m.insert(addr(k), v));
                } else {
                    prop_assert_eq!(t.remove(&addr(k)), m.remove(&addr(k)));
                }
                prop_assert_eq!(t.len(), m.len());
                for k in 0..40 {
                    prop_assert_eq!(t.get(&addr(k)), m.get(&addr(k)));
                }
            }
            let mut got: Vec<(Ipv6Addr, u32)> = t.iter().map(|(k, v)| (*k, *v)).collect();
            let mut want: Vec<(Ipv6Addr, u32)> = m.into_iter().collect();
            got.sort();
            want.sort();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn load_stays_under_three_quarters() {
        let mut t = HomeTable::new();
        for k in 0..=255u8 {
            t.insert(addr(k), k);
            assert!(t.len() * 4 <= t.buckets() * 3, "{} in {}", t.len(), t.buckets());
        }
        assert_eq!(t.get(&addr(200)), Some(&200));
    }
}
