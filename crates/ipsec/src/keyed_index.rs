//! A hash index whose slot for a key can be found, and prefetched, before it is read.
//!
//! Why not `HashMap`: with thousands of SAs, a batch's lookups are cold, and a map hides where
//! a key's entry lives until the lookup itself walks there, one dependent miss after another.
//! Here the batch first hashes every packet's key and prefetches its slot
//! ([`KeyedIndex::prefetch_slot`]), then probes once those lines are on their way (issue 10).
//!
//! Open addressing with linear probing, at most half full, removal by backward shift (no
//! tombstones, so probe lengths stay short however SAs come and go). Keys are hashed with a
//! random key per index (aHash's `RandomState`), so that a peer choosing SPIs cannot aim its
//! entries at one run of slots (RFC 4301 leaves SPI choice to the receiver, but a manually
//! keyed peer or a hostile responder picks its own).

use ahash::RandomState;
use std::hash::Hash;

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct KeyedIndex<K, V> {
    slots: Vec<Option<(K, V)>>,
    len: usize,
    hasher: RandomState,
}

impl<K: Hash + Eq + Copy, V: Copy> Default for KeyedIndex<K, V> {
    fn default() -> Self {
        KeyedIndex { slots: Vec::new(), len: 0, hasher: RandomState::new() }
    }
}

impl<K: Hash + Eq + Copy, V: Copy> KeyedIndex<K, V> {
    /// The key's hash, to pass to `slot_addr` and `get_hashed`.
    pub fn hash(&self, k: &K) -> u64 {
        self.hasher.hash_one(k)
    }

    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// The address of the first slot a lookup of this hash reads, for a prefetch. It is never
    /// dereferenced here; with no slots it is a dangling but harmless address.
    pub fn slot_addr(&self, hash: u64) -> *const u8 {
        self.slots.as_ptr().wrapping_add(hash as usize & self.mask()).cast()
    }

    /// Starts fetching every cache line the first slot of this hash spans. A slot whose size
    /// does not divide 64 bytes straddles two lines at some indexes (the SPD's host index
    /// keeps an address and its entry's order in 56 bytes, so most of its slots do), and a
    /// prefetch of the slot's first byte alone left the rest to a demand miss in the lookup:
    /// `valgrind --tool=cachegrind` over `bench sas --sas 10000` counted 1.54 missed lines
    /// per outbound lookup, against 0.92 for the SAD's 16-byte slots.
    pub fn prefetch_slot(&self, hash: u64, prefetch: impl crate::types::Prefetch) {
        let first = self.slot_addr(hash);
        prefetch(first);
        // The slot's last byte, when it lies on the next line (never for slots whose size
        // divides 64, such as the SAD's: no second call for them).
        let last = first.wrapping_add(std::mem::size_of::<Option<(K, V)>>() - 1);
        if (first as usize) / 64 != (last as usize) / 64 {
            prefetch(last);
        }
    }

    /// Looks `k` up, given `hash == self.hash(k)`.
    pub fn get_hashed(&self, hash: u64, k: &K) -> Option<V> {
        let mask = self.mask();
        let mut i = hash as usize & mask;
        loop {
            match self.slots.get(i)? {
                None => return None,
                Some((key, v)) if key == k => return Some(*v),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    /// Looks `k` up.
    pub fn get(&self, k: &K) -> Option<V> {
        self.get_hashed(self.hash(k), k)
    }

    /// True if `k` is in the index.
    pub fn contains_key(&self, k: &K) -> bool {
        self.get(k).is_some()
    }

    /// Entries in the index.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the index holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Inserts or replaces; returns the value replaced.
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.mask();
        let mut i = self.hash(&k) as usize & mask;
        loop {
            match &mut self.slots[i] {
                slot @ None => {
                    *slot = Some((k, v));
                    self.len += 1;
                    return None;
                }
                Some((key, old)) if *key == k => return Some(std::mem::replace(old, v)),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    /// Removes `k`; returns its value. The entries after it in its run move back into the
    /// hole where their own probe allows, so that every remaining key is still reached
    /// without passing an empty slot.
    pub fn remove(&mut self, k: &K) -> Option<V> {
        let mask = self.mask();
        let mut hole = self.hash(k) as usize & mask;
        let v = loop {
            match self.slots.get(hole)? {
                None => return None,
                Some((key, v)) if key == k => break *v,
                Some(_) => hole = (hole + 1) & mask,
            }
        };
        self.slots[hole] = None;
        self.len -= 1;
        let mut j = (hole + 1) & mask;
        while let Some((key, _)) = self.slots[j] {
            let home = self.hash(&key) as usize & mask;
            // The entry at j may fill the hole if its home is not cyclically in (hole, j].
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[j].take();
                hole = j;
            }
            j = (j + 1) & mask;
        }
        Some(v)
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (K, V)> + '_ {
        self.slots.iter().flatten().copied()
    }

    fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, vec![None; cap]);
        self.len = 0;
        for (k, v) in old.into_iter().flatten() {
            self.insert(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    thread_local! {
        static FETCHED: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    fn record(p: *const u8) {
        FETCHED.with(|f| f.borrow_mut().push(p as usize));
    }

    /// `prefetch_slot` asks for every cache line of the slot, also where a 56-byte slot (the
    /// SPD host index's) straddles two; it failed while only the first byte was prefetched.
    #[test]
    fn prefetch_slot_covers_every_line_of_the_slot() {
        let mut ix: KeyedIndex<std::net::IpAddr, [u64; 4]> = KeyedIndex::default();
        for i in 0..64u8 {
            ix.insert(std::net::IpAddr::from([10, 0, 0, i]), [u64::from(i); 4]);
        }
        let size = std::mem::size_of::<Option<(std::net::IpAddr, [u64; 4])>>();
        assert!(64 % size != 0, "the test needs a slot that straddles lines ({size} bytes)");
        let mut straddled = 0;
        for h in 0..ix.slots.len() as u64 {
            FETCHED.with(|f| f.borrow_mut().clear());
            ix.prefetch_slot(h, record);
            let start = ix.slot_addr(h) as usize;
            let lines: Vec<usize> = (start / 64..=(start + size - 1) / 64).collect();
            straddled += usize::from(lines.len() > 1);
            let got: Vec<usize> = FETCHED.with(|f| f.borrow().iter().map(|a| a / 64).collect());
            for l in &lines {
                assert!(got.contains(l), "slot {h}: line {l} of {lines:?} not fetched ({got:?})");
            }
        }
        assert!(straddled > 0, "no slot straddled two lines: the check above proved nothing");
    }

    proptest! {
        /// Any sequence of inserts and removes leaves the index agreeing with std's HashMap
        /// (an independent implementation) on every key ever used, and on its length.
        #[test]
        fn agrees_with_hashmap(ops in proptest::collection::vec((any::<bool>(), 0u16..64, any::<u32>()), 0..400)) {
            let mut ix = KeyedIndex::<(u32, u8), u32>::default();
            let mut model = HashMap::new();
            for (insert, k, v) in ops {
                let key = (u32::from(k) * 7, (k % 3) as u8);
                if insert {
                    prop_assert_eq!(ix.insert(key, v), model.insert(key, v));
                } else {
                    prop_assert_eq!(ix.remove(&key), model.remove(&key));
                }
                prop_assert_eq!(ix.len(), model.len());
            }
            for k in 0u16..64 {
                let key = (u32::from(k) * 7, (k % 3) as u8);
                prop_assert_eq!(ix.get(&key), model.get(&key).copied());
                let h = ix.hash(&key);
                prop_assert_eq!(ix.get_hashed(h, &key), model.get(&key).copied());
            }
            let mut all: Vec<_> = ix.iter().collect();
            all.sort_unstable();
            let mut want: Vec<_> = model.into_iter().collect();
            want.sort_unstable();
            prop_assert_eq!(all, want);
        }
    }

    #[test]
    fn empty_index_finds_nothing() {
        let ix = KeyedIndex::<u32, u32>::default();
        assert_eq!(ix.get(&1), None);
        assert!(ix.is_empty());
        let mut ix = ix;
        assert_eq!(ix.remove(&1), None);
    }
}
