//! The Security Association Database's inbound index (RFC 4301 §4.4.2): inbound SAs by SPI
//! and protocol, as an arriving packet names them.
//!
//! Two tables. The authority is a [`KeyedIndex`] hashed with a random key, which holds every
//! inbound SA, so that no choice of SPIs makes lookups collide. In front of it sits
//! a direct-mapped table: slot `SPI mod size` holds the one SA whose SPI's low bits name it,
//! if any. An SA lands there when its slot is free; the others are found through the hash.
//! A receiver chooses its own inbound SPIs (RFC 4301 §4.1), and SPIs numbered in a run (a
//! manually keyed network's habit, or an allocator that hands out the low bits in order) each
//! get a direct slot. Those SPIs are then found without hashing and without linear probing's
//! second slot, and a batch's lookup prefetches exactly one line per packet, whose address
//! follows from the SPI alone. `hipsec bench sas --sas 1,10000`, 46 pairs alternating with the
//! hashed index alone: open at 10,000 SAs 1.087× the 1-SA figure against 1.1015×, some 7–8 ns
//! less per packet, seal unchanged; `--spis random` draws SPIs as the IKEv2 and HIP drivers do.
//!
//! An SPI that is not in its direct slot (another SA's there, or none) is looked up in the
//! hashed index, so the worst case, for a packet whose SPI matches nothing, is one line more
//! than the hashed index alone; an attacker choosing SPIs can force no more than that.

use crate::keyed_index::{Align32, KeyedIndex};

/// The SAD's key: an inbound SA's SPI and protocol number (50 ESP, 51 AH) in one word, so
/// that a lookup hashes and compares one integer.
pub(crate) type SadKey = u64;

/// The SAD key of an SPI and protocol number.
pub(crate) fn sad_key(spi: u32, protocol: u8) -> SadKey {
    (u64::from(spi) << 8) | u64::from(protocol)
}

/// A SAD entry: the inbound SA's slot, and where its cipher's expanded key lives
/// (`SecurityAssociation::key_lines`). With both in the one line a lookup reads, a batch
/// starts the SA's misses and its key's together (`engine_batch`), rather than first
/// waiting for the SA to learn where its key is. The key's address is only a prefetch hint:
/// it is never read through, so a stale one would cost time, not correctness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SadEntry {
    pub(crate) idx: u32,
    pub(crate) key_lines: u8,
    /// The lines of the SA that opening reads (`SecurityAssociation::open_lines`).
    pub(crate) sa_lines: u8,
    pub(crate) key_at: usize,
}

/// One direct slot: 32 bytes aligned to 32, so that it lies in one cache line wherever the
/// table was allocated (`keyed_index`'s module documentation tells why that matters).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(32))]
struct DirectSlot {
    entry: Option<(SadKey, SadEntry)>,
}

const _: () = assert!(size_of::<DirectSlot>() == 32);

// The hashed index's lookup reads one cache line too (`KeyedIndex`'s module documentation):
// 32-byte slots aligned to 32. Unaligned, half of them straddled two lines in `bench sas`.
const _: () = assert!(KeyedIndex::<SadKey, SadEntry, Align32>::SLOT_IN_ONE_LINE);

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Sad {
    /// Every inbound SA.
    index: KeyedIndex<SadKey, SadEntry, Align32>,
    /// Slot `spi & (len - 1)`: the SA with that SPI's low bits that got there first. A power of
    /// two at least twice the SAs held, or empty.
    direct: Vec<DirectSlot>,
}

/// The SPI in a SAD key (`sad_key`).
fn spi_of(key: SadKey) -> usize {
    (key >> 8) as usize
}

impl Sad {
    fn direct_at(&self, key: SadKey) -> usize {
        spi_of(key) & self.direct.len().wrapping_sub(1)
    }

    /// The SA's entry, through the hashed index (the control path's lookup).
    pub(crate) fn get(&self, key: &SadKey) -> Option<SadEntry> {
        self.index.get(key)
    }

    /// True if an SA has this SPI and protocol.
    pub(crate) fn contains_key(&self, key: &SadKey) -> bool {
        self.index.contains_key(key)
    }

    /// Inserts or replaces; returns the entry replaced.
    pub(crate) fn insert(&mut self, key: SadKey, e: SadEntry) -> Option<SadEntry> {
        let old = self.index.insert(key, e);
        if self.index.len() * 2 > self.direct.len() {
            self.rebuild_direct();
        } else {
            let at = self.direct_at(key);
            if let Some(slot) = self.direct.get_mut(at) {
                match &mut slot.entry {
                    Some((k, v)) if *k == key => *v = e,
                    Some(_) => {}
                    free @ None => *free = Some((key, e)),
                }
            }
        }
        old
    }

    /// Removes; returns the entry. Its direct slot stays free until an SA with those low bits
    /// is inserted or the table grows (an SA in the hashed index alone is still found).
    pub(crate) fn remove(&mut self, key: &SadKey) -> Option<SadEntry> {
        let e = self.index.remove(key)?;
        let at = self.direct_at(*key);
        if let Some(slot) = self.direct.get_mut(at) {
            if slot.entry.is_some_and(|(k, _)| k == *key) {
                slot.entry = None;
            }
        }
        Some(e)
    }

    /// Doubles the direct table (or more) and places every SA whose slot is free.
    fn rebuild_direct(&mut self) {
        let len = (self.index.len() * 2).next_power_of_two().max(16);
        self.direct = vec![DirectSlot::default(); len];
        // Entries in ascending key order, so that which SA gets a shared slot does not
        // depend on the hash's random key (the lookups are the same either way).
        let mut all: Vec<(SadKey, SadEntry)> = self.index.iter().collect();
        all.sort_unstable_by_key(|(k, _)| *k);
        for (k, e) in all {
            let at = self.direct_at(k);
            if let Some(slot) = self.direct.get_mut(at) {
                slot.entry.get_or_insert((k, e));
            }
        }
    }

    /// Starts fetching the direct slot of `key`: one line, whose address the SPI gives.
    pub(crate) fn prefetch_direct(&self, key: SadKey, prefetch: impl crate::types::Prefetch) {
        let at = self.direct_at(key);
        prefetch(self.direct.as_ptr().wrapping_add(at).cast());
    }

    /// The entry of `key` if its direct slot holds it; `None` means "ask the hashed index"
    /// ([`Sad::hash`], [`Sad::prefetch_hashed`], [`Sad::get_hashed`]).
    pub(crate) fn direct(&self, key: SadKey) -> Option<SadEntry> {
        match self.direct.get(self.direct_at(key))?.entry {
            Some((k, e)) if k == key => Some(e),
            _ => None,
        }
    }

    /// The key's hash in the hashed index.
    pub(crate) fn hash(&self, key: &SadKey) -> u64 {
        self.index.hash(key)
    }

    /// Starts fetching the hashed index's lines for this hash (`KeyedIndex::prefetch_slot`).
    pub(crate) fn prefetch_hashed(&self, hash: u64, prefetch: impl crate::types::Prefetch) {
        self.index.prefetch_slot(hash, prefetch);
    }

    /// Looks `key` up in the hashed index, given `hash == self.hash(key)`.
    pub(crate) fn get_hashed(&self, hash: u64, key: &SadKey) -> Option<SadEntry> {
        self.index.get_hashed(hash, key)
    }

    /// SAs held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.index.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::recorded::{clear, fetched, record};
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn entry(i: u32) -> SadEntry {
        SadEntry { idx: i, key_lines: 10, sa_lines: 3, key_at: 64 * i as usize }
    }

    /// What a batch does: the direct slot, then the hashed index for a key not there.
    fn batch_lookup(sad: &Sad, key: SadKey) -> Option<SadEntry> {
        sad.direct(key).or_else(|| sad.get_hashed(sad.hash(&key), &key))
    }

    proptest! {
        /// Any sequence of inserts and removes, with SPIs drawn so that many share their low
        /// bits (multiples of 4,096 apart) and both protocols, leaves the SAD agreeing with
        /// std's HashMap (an independent implementation) by either lookup, and the direct
        /// table never answering for a key it does not hold.
        #[test]
        fn agrees_with_hashmap(ops in proptest::collection::vec((any::<bool>(), 0u32..8, 0u32..12, any::<bool>(), any::<u32>()), 0..300)) {
            let mut sad = Sad::default();
            let mut model = HashMap::new();
            let key = |hi: u32, lo: u32, ah: bool| sad_key(0x100 + hi * 4096 + lo, if ah { 51 } else { 50 });
            for (insert, hi, lo, ah, v) in ops {
                let k = key(hi, lo, ah);
                if insert {
                    prop_assert_eq!(sad.insert(k, entry(v)), model.insert(k, entry(v)));
                } else {
                    prop_assert_eq!(sad.remove(&k), model.remove(&k));
                }
                prop_assert_eq!(sad.len(), model.len());
            }
            for hi in 0..8 {
                for lo in 0..12 {
                    for ah in [false, true] {
                        let k = key(hi, lo, ah);
                        let want = model.get(&k).copied();
                        prop_assert_eq!(sad.get(&k), want);
                        prop_assert_eq!(batch_lookup(&sad, k), want);
                        if let Some(e) = sad.direct(k) {
                            prop_assert_eq!(Some(e), want);
                        }
                    }
                }
            }
        }
    }

    /// SPIs in a run each get their own direct slot, found without the hashed index, and the
    /// prefetch of a key's slot is the one line that slot lies in. Fails if the direct table
    /// is not kept (every `direct` would be `None`) or a slot straddles two lines.
    #[test]
    fn spis_in_a_run_are_direct_and_prefetch_one_line() {
        let mut sad = Sad::default();
        for i in 0..1000u32 {
            sad.insert(sad_key(0x1000_0000 + i, 50), entry(i));
        }
        for i in 0..1000u32 {
            let k = sad_key(0x1000_0000 + i, 50);
            assert_eq!(sad.direct(k), Some(entry(i)), "SPI {i} not direct");
            clear();
            sad.prefetch_direct(k, record);
            let got = fetched();
            assert_eq!(got.len(), 1);
            let slot = sad.direct.as_ptr().wrapping_add(sad.direct_at(k)) as usize;
            assert_eq!(got[0], slot);
            assert_eq!(slot / 64, (slot + 31) / 64, "slot {i} straddles two lines");
        }
    }

    /// An SA that lost its direct slot to another is still found, also after the one in the
    /// slot is removed, and after the table grows.
    #[test]
    fn a_displaced_sa_is_found_through_the_hash() {
        let mut sad = Sad::default();
        let (a, b) = (sad_key(0x100, 50), sad_key(0x100 + (1 << 20), 50));
        sad.insert(a, entry(1));
        sad.insert(b, entry(2));
        assert_eq!(sad.direct(a), Some(entry(1)));
        assert_eq!(sad.direct(b), None);
        assert_eq!(batch_lookup(&sad, b), Some(entry(2)));
        sad.remove(&a);
        assert_eq!(batch_lookup(&sad, a), None);
        assert_eq!(batch_lookup(&sad, b), Some(entry(2)));
        for i in 0..100 {
            sad.insert(sad_key(0x2001 + i, 51), entry(i));
        }
        assert_eq!(batch_lookup(&sad, b), Some(entry(2)));
        // After the rebuild, b has its slot (a is gone).
        assert_eq!(sad.direct(b), Some(entry(2)));
    }
}
