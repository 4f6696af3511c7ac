//! A hash index whose slot for a key can be found, and prefetched, before it is read.
//!
//! Why not `HashMap`: with thousands of SAs, a batch's lookups are cold, and a map hides where
//! a key's entry lives until the lookup itself walks there, one dependent miss after another.
//! Here the batch first hashes every packet's key and prefetches its slot
//! ([`KeyedIndex::prefetch_slot`]), then probes once those lines are on their way.
//!
//! Open addressing with linear probing, at most half full, removal by backward shift (no
//! tombstones, so probe lengths stay short however SAs come and go). Keys are hashed with a
//! random key per index (aHash's `RandomState`), so that a peer choosing SPIs cannot aim its
//! entries at one run of slots (RFC 4301 leaves SPI choice to the receiver, but a manually
//! keyed peer or a hostile responder picks its own).
//!
//! Slots are aligned (the `A` parameter, [`SlotAlign`]): a slot whose size and alignment are
//! equal and divide 64 bytes never straddles two cache lines, so a lookup meets one line and
//! its prefetch is one instruction with no branch. Unaligned, where a slot fell depended on
//! where the allocator put the table: the SAD's 32-byte slots sat at 16 or 48 bytes into a line
//! in some runs of `bench sas`, so half of them straddled two lines, and which half was
//! decided by the hash, a branch no predictor learns.

use ahash::RandomState;
use std::hash::Hash;

/// The alignment of a [`KeyedIndex`]'s slots: one of [`Align16`], [`Align32`], [`Align64`].
/// Pick the one that rounds the slot (`Option<(K, V)>`) up to a size that divides 64 bytes.
pub trait SlotAlign: Copy + Default + std::fmt::Debug {}

/// Slots aligned to 16 bytes (entries of up to 16).
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(16))]
pub struct Align16;

/// Slots aligned to 32 bytes (entries of up to 32: the SAD's).
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(32))]
pub struct Align32;

/// Slots aligned to a cache line (entries of up to 64: the SPD host index's 56 bytes).
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(64))]
pub struct Align64;

impl SlotAlign for Align16 {}
impl SlotAlign for Align32 {}
impl SlotAlign for Align64 {}

/// One slot: the entry, aligned as `A` (a zero-length array adds `A`'s alignment, no bytes).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct Slot<K, V, A> {
    _align: [A; 0],
    entry: Option<(K, V)>,
}

impl<K, V, A> Slot<K, V, A> {
    const EMPTY: Self = Slot { _align: [], entry: None };

    /// True if no slot of this type can straddle two cache lines.
    const ONE_LINE: bool = std::mem::size_of::<Self>() <= std::mem::align_of::<Self>()
        && 64 % std::mem::align_of::<Self>() == 0;
}

/// What a key's home slot holds ([`KeyedIndex::home`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home<V> {
    /// The key, with this value.
    Here(V),
    /// Nothing: the key is not in the index.
    Vacant,
    /// Another key: the key, if present, lies in a later slot (linear probing).
    Taken,
}

impl<V> Home<V> {
    /// The same answer with the value, if any, mapped by `f`.
    pub fn map<W>(self, f: impl FnOnce(V) -> W) -> Home<W> {
        match self {
            Home::Here(v) => Home::Here(f(v)),
            Home::Vacant => Home::Vacant,
            Home::Taken => Home::Taken,
        }
    }
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct KeyedIndex<K, V, A = Align64> {
    slots: Vec<Slot<K, V, A>>,
    len: usize,
    hasher: RandomState,
}

impl<K: Hash + Eq + Copy, V: Copy, A: SlotAlign> Default for KeyedIndex<K, V, A> {
    fn default() -> Self {
        KeyedIndex { slots: Vec::new(), len: 0, hasher: RandomState::new() }
    }
}

impl<K: Hash + Eq + Copy, V: Copy, A: SlotAlign> KeyedIndex<K, V, A> {
    /// True if every slot lies in one cache line, wherever the table is allocated: what a
    /// user that picked `A` for that asserts at compile time (the SAD, `engine.rs`).
    pub const SLOT_IN_ONE_LINE: bool = Slot::<K, V, A>::ONE_LINE;

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

    /// Starts fetching every cache line the first slot of this hash spans: one, for slots
    /// aligned to their size (`SlotAlign`); for others, two at some indexes. A prefetch of
    /// such a slot's first byte alone left the rest to a demand miss in the lookup:
    /// `valgrind --tool=cachegrind` over `bench sas --sas 10000` counted 1.54 missed lines
    /// per outbound lookup while the SPD host index's 56-byte slots were 8-aligned.
    ///
    /// Slots smaller than a line (the SAD's 32 bytes) also start the line of the slot after,
    /// the one a probe reads next: the same line for a slot in a line's first half, the next
    /// line for one in its second. Linear probing at a load of up to a half goes on to the
    /// next slot in some 20 % of lookups, and at 10,000 SAs that read was a dependent miss:
    /// the inbound lookups of `bench sas --sas 1,10000` took 10–16 ns a packet against 6–7
    /// at one SA (a scratch timer). With this prefetch, over 12 alternating binary pairs, the
    /// open ratio was lower in 9 (median 1.110 against 1.118). The SPD host index's
    /// 64-byte slots do not take it: there the extra line every lookup fetches cost as much
    /// as the misses it saved (seal median 1.099 against 1.098, 12 pairs); their displaced
    /// addresses are walked in a pass of their own instead (`SpdTable::prefetch_candidates`).
    pub fn prefetch_slot(&self, hash: u64, prefetch: impl crate::types::Prefetch) {
        let first = self.slot_addr(hash);
        prefetch(first);
        if Slot::<K, V, A>::ONE_LINE {
            // Known when compiled: no test, no branch (see the module documentation).
            if std::mem::size_of::<Slot<K, V, A>>() < 64 {
                prefetch(self.slot_addr(hash.wrapping_add(1)));
            }
            return;
        }
        // The slot's last byte, when it lies on the next line.
        let last = first.wrapping_add(std::mem::size_of::<Slot<K, V, A>>() - 1);
        if (first as usize) / 64 != (last as usize) / 64 {
            prefetch(last);
        }
    }

    /// What the home slot of `hash` (the one [`KeyedIndex::prefetch_slot`] fetches first)
    /// says of `k`, given `hash == self.hash(k)`, without reading further: for a batch pass
    /// that must not wait on a second line (`SpdTable::prefetch_candidates`).
    pub fn home(&self, hash: u64, k: &K) -> Home<V> {
        match self.slots.get(hash as usize & self.mask()).map(|s| &s.entry) {
            Some(Some((key, v))) if key == k => Home::Here(*v),
            Some(Some(_)) => Home::Taken,
            Some(None) | None => Home::Vacant,
        }
    }

    /// Looks `k` up, given `hash == self.hash(k)`.
    pub fn get_hashed(&self, hash: u64, k: &K) -> Option<V> {
        let mask = self.mask();
        let mut i = hash as usize & mask;
        loop {
            match &self.slots.get(i)?.entry {
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
            match &mut self.slots[i].entry {
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
            match &self.slots.get(hole)?.entry {
                None => return None,
                Some((key, v)) if key == k => break *v,
                Some(_) => hole = (hole + 1) & mask,
            }
        };
        self.slots[hole].entry = None;
        self.len -= 1;
        let mut j = (hole + 1) & mask;
        while let Some((key, _)) = self.slots[j].entry {
            let home = self.hash(&key) as usize & mask;
            // The entry at j may fill the hole if its home is not cyclically in (hole, j].
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole].entry = self.slots[j].entry.take();
                hole = j;
            }
            j = (j + 1) & mask;
        }
        Some(v)
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (K, V)> + '_ {
        self.slots.iter().filter_map(|s| s.entry)
    }

    fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, vec![Slot::EMPTY; cap]);
        self.len = 0;
        for (k, v) in old.into_iter().filter_map(|s| s.entry) {
            self.insert(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    use crate::types::recorded::{clear, fetched, record};

    /// `prefetch_slot` asks for every cache line of the slot, also where a slot that is not
    /// aligned to its size (48 bytes, 16-aligned) straddles two; it failed while only the
    /// first byte was prefetched.
    #[test]
    fn prefetch_slot_covers_every_line_of_the_slot() {
        let mut ix: KeyedIndex<u64, [u64; 4], Align16> = KeyedIndex::default();
        for i in 0..64u64 {
            ix.insert(i, [i; 4]);
        }
        let size = std::mem::size_of::<Slot<u64, [u64; 4], Align16>>();
        assert_eq!(size, 48);
        assert!(64 % size != 0, "the test needs a slot that straddles lines ({size} bytes)");
        let mut straddled = 0;
        for h in 0..ix.slots.len() as u64 {
            clear();
            ix.prefetch_slot(h, record);
            let start = ix.slot_addr(h) as usize;
            let lines: Vec<usize> = (start / 64..=(start + size - 1) / 64).collect();
            straddled += usize::from(lines.len() > 1);
            let got: Vec<usize> = fetched().iter().map(|a| a / 64).collect();
            for l in &lines {
                assert!(got.contains(l), "slot {h}: line {l} of {lines:?} not fetched ({got:?})");
            }
        }
        assert!(straddled > 0, "no slot straddled two lines: the check above proved nothing");
    }

    /// The SAD's slots (`Engine`'s `KeyedIndex<SadKey, SadEntry, Align32>`) each lie in one
    /// cache line wherever the table was allocated, and their prefetch is that line and the
    /// next slot's (the same line, or the next), wrapping at the table's end. Without the
    /// alignment, 32-byte slots 16 bytes into a line straddle at every other index.
    #[test]
    fn sad_slots_take_one_line_and_prefetch_the_next_slot() {
        use crate::sad::{SadEntry, SadKey};
        type S = Slot<SadKey, SadEntry, Align32>;
        let mut ix: KeyedIndex<SadKey, SadEntry, Align32> = KeyedIndex::default();
        for i in 0..1000u64 {
            let e = SadEntry { idx: i as u32, key_lines: 10, sa_lines: 3, key_at: 0 };
            ix.insert(i, e);
        }
        for h in 0..ix.slots.len() as u64 {
            clear();
            ix.prefetch_slot(h, record);
            let start = ix.slot_addr(h) as usize;
            assert_eq!(start / 64, (start + size_of::<S>() - 1) / 64, "slot {h} straddles");
            let next = ix.slots.as_ptr().wrapping_add((h as usize + 1) % ix.slots.len()) as usize;
            assert_eq!(fetched(), vec![start, next]);
        }
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
                // The home slot alone: never a wrong value, never "absent" for a present key.
                match ix.home(h, &key) {
                    Home::Here(v) => prop_assert_eq!(Some(v), model.get(&key).copied()),
                    Home::Vacant => prop_assert!(!model.contains_key(&key)),
                    Home::Taken => {}
                }
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
