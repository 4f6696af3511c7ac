//! A fixed-capacity, set-associative hash table (4 ways per bucket, round-robin eviction) used
//! for the flow cache and the state table: no allocation after construction, bounded probes.

use crate::hash::{FastHasher, addr_bits, digest};
use crate::key::PacketKey;
use crate::rule::Direction;
use std::hash::Hasher;

/// Slots per bucket.
pub(crate) const WAYS: usize = 4;

#[derive(Clone, Copy, Debug)]
struct Bucket<K, V> {
    slots: [Option<(K, V)>; WAYS],
    victim: u8,
}

/// The table. Keys are compared in full; the caller supplies the hash, so entries that must be
/// found together (one flow, any ICMP type) can share a bucket.
#[derive(Debug)]
pub(crate) struct SetAssoc<K, V> {
    buckets: Vec<Bucket<K, V>>,
    mask: usize,
    len: usize,
}

impl<K: Copy + Eq, V: Copy> SetAssoc<K, V> {
    /// A table of at least `entries` slots (rounded up to a power-of-two number of buckets).
    pub(crate) fn new(entries: usize) -> SetAssoc<K, V> {
        let buckets = entries.div_ceil(WAYS).max(1).next_power_of_two();
        SetAssoc {
            buckets: vec![Bucket { slots: [None; WAYS], victim: 0 }; buckets],
            mask: buckets - 1,
            len: 0,
        }
    }

    /// Total slots.
    pub(crate) fn capacity(&self) -> usize {
        self.buckets.len() * WAYS
    }

    /// Occupied slots.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn bucket(&self, hash: u64) -> Option<&Bucket<K, V>> {
        self.buckets.get(hash as usize & self.mask)
    }

    #[inline]
    fn bucket_mut(&mut self, hash: u64) -> Option<&mut Bucket<K, V>> {
        self.buckets.get_mut(hash as usize & self.mask)
    }

    /// The value stored for `key`, whose hash is `hash`.
    #[inline]
    pub(crate) fn get(&self, hash: u64, key: &K) -> Option<V> {
        self.bucket(hash)?.slots.iter().flatten().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// Store `key → value`, replacing the value if the key is present; otherwise fill a free
    /// slot, or evict one round-robin and return it.
    pub(crate) fn insert(&mut self, hash: u64, key: K, value: V) -> Option<(K, V)> {
        let mut added = false;
        let evicted = {
            let b = self.bucket_mut(hash)?;
            if let Some(slot) = b.slots.iter_mut().flatten().find(|(k, _)| *k == key) {
                slot.1 = value;
                return None;
            }
            if let Some(free) = b.slots.iter_mut().find(|s| s.is_none()) {
                *free = Some((key, value));
                added = true;
                None
            } else {
                let i = usize::from(b.victim) % WAYS;
                b.victim = b.victim.wrapping_add(1);
                b.slots.get_mut(i).and_then(|s| s.replace((key, value)))
            }
        };
        if added {
            self.len += 1;
        }
        evicted
    }

    /// Remove every entry of the bucket of `hash` whose key satisfies `doomed`.
    pub(crate) fn remove_where(&mut self, hash: u64, mut doomed: impl FnMut(&K) -> bool) {
        let mut removed = 0;
        if let Some(b) = self.bucket_mut(hash) {
            for s in &mut b.slots {
                if s.as_ref().is_some_and(|(k, _)| doomed(k)) {
                    *s = None;
                    removed += 1;
                }
            }
        }
        self.len -= removed;
    }

    /// Apply `f` to every value.
    pub(crate) fn for_each_value_mut(&mut self, mut f: impl FnMut(&mut V)) {
        for b in &mut self.buckets {
            for (_, v) in b.slots.iter_mut().flatten() {
                f(v);
            }
        }
    }

    /// Empty the table (keeps its capacity).
    pub(crate) fn clear(&mut self) {
        for b in &mut self.buckets {
            *b = Bucket { slots: [None; WAYS], victim: 0 };
        }
        self.len = 0;
    }
}

/// The hash of a key's flow: direction, addresses, protocol and ports, not the ICMP type, so
/// all entries of one flow share a bucket.
#[inline]
pub(crate) fn flow_hash(seed: u64, key: &PacketKey) -> u64 {
    let (src, sf) = addr_bits(key.src);
    let (dst, df) = addr_bits(key.dst);
    let dir = match key.dir {
        Direction::In => 0,
        Direction::Out => 1,
    };
    let small = u64::from(key.proto)
        | (u64::from(key.src_port) << 8)
        | (u64::from(key.dst_port) << 24)
        | (dir << 40)
        | (u64::from(sf | (df << 2)) << 41);
    let mut h = FastHasher::with_seed(seed);
    h.add(digest(src, dst, small));
    h.finish()
}

/// True if `a` and `b` are the same flow (everything but the ICMP type equal).
#[inline]
pub(crate) fn same_flow(a: &PacketKey, b: &PacketKey) -> bool {
    a.dir == b.dir
        && a.src == b.src
        && a.dst == b.dst
        && a.proto == b.proto
        && a.src_port == b.src_port
        && a.dst_port == b.dst_port
}
