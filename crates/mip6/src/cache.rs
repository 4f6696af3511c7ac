//! The home agent's binding cache for home registrations (RFC 6275 §9.1, §10.1): one entry per
//! home address holding the care-of address, the last accepted Sequence Number, the SA the
//! registration came through and the expiry. Read §9.1 (the cache's fields) and §10.3.1–§10.3.2
//! (what a registration and a de-registration do to it).
//!
//! Layout for a million entries: the entries sit densely in one `Vec` (removal swaps the last
//! one into the hole); a hash map takes a home address to its index; a timer wheel with one
//! slot per second (at least as many slots as the longest lifetime allowed) holds a doubly
//! linked list of the entries expiring in that second, threaded through the entries by index.
//! Insert, update (which moves the entry to its new second), remove and look-up are O(1);
//! [`BindingCache::expire`] visits the seconds that passed since its last call and touches only
//! the entries due in them, so its cost does not depend on the number of entries.

use std::collections::HashMap;
use std::net::Ipv6Addr;

use ipsec::{Spi, Time};

/// "No entry" in the wheel's links.
const NIL: u32 = u32::MAX;
const MICROS: u64 = 1_000_000;

/// One binding as the cache's users see it (§9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The mobile node's home address (the key).
    pub home_address: Ipv6Addr,
    /// Its care-of address.
    pub care_of_address: Ipv6Addr,
    /// The Sequence Number of the last accepted Binding Update (§9.5.1).
    pub sequence: u16,
    /// The SPI of the inbound SA the registration arrived in (RFC 3776 §4.1).
    pub spi: Spi,
    /// When the binding expires (whole seconds).
    pub expires: Time,
}

/// A stored entry: the binding and its links in the timer wheel (56 octets).
#[derive(Debug, Clone, Copy)]
struct Entry {
    home_address: Ipv6Addr,
    care_of_address: Ipv6Addr,
    expires_s: u64,
    spi: u32,
    prev: u32,
    next: u32,
    sequence: u16,
}

impl Entry {
    fn binding(&self) -> Binding {
        Binding {
            home_address: self.home_address,
            care_of_address: self.care_of_address,
            sequence: self.sequence,
            spi: Spi(self.spi),
            expires: Time(self.expires_s.saturating_mul(MICROS)),
        }
    }
}

/// The binding cache (§9.1) with expiry by timer wheel.
#[derive(Debug, Clone)]
pub struct BindingCache {
    entries: Vec<Entry>,
    index: HashMap<Ipv6Addr, u32, ahash::RandomState>,
    /// Heads of the per-second lists; the length is a power of two.
    slots: Vec<u32>,
    /// The first second [`BindingCache::expire`] has not processed yet; every entry expires
    /// at or after it.
    cursor_s: u64,
    capacity: usize,
}

/// What an insert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upsert {
    /// A new entry.
    Created,
    /// An existing entry changed; this was it before.
    Updated(Binding),
}

impl BindingCache {
    /// Octets of one stored entry, not counting the index (see [`BindingCache::memory_bytes`]).
    pub const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();

    /// A cache for at most `capacity` entries whose lifetimes never exceed `max_lifetime_secs`.
    /// Memory for the entries is reserved as they come, not up front.
    pub fn new(capacity: usize, max_lifetime_secs: u32) -> BindingCache {
        // The longest lifetime a BU can carry is 65535 × 4 s (§6.1.7), under 2^18 seconds; a
        // longer one would only make entries lap the wheel, which `expire` handles.
        let secs = u64::from(max_lifetime_secs).min(1 << 18);
        let slots = (secs + 2).next_power_of_two().max(64);
        BindingCache {
            entries: Vec::new(),
            index: HashMap::default(),
            slots: vec![NIL; usize::try_from(slots).unwrap_or(1 << 19)],
            cursor_s: 0,
            capacity: capacity.min(NIL as usize),
        }
    }

    /// Reserves room for `n` more entries (entries and index), so a later burst of
    /// registrations does not reallocate.
    pub fn reserve(&mut self, n: usize) {
        self.entries.reserve(n);
        self.index.reserve(n);
    }

    /// Number of entries, including any that expired but were not yet removed by
    /// [`BindingCache::expire`].
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The most entries the cache holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// True if a new entry would exceed the capacity.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.capacity
    }

    /// Octets the cache holds now: entries, index (key, value and one control octet per
    /// bucket) and wheel, by their allocated capacities.
    pub fn memory_bytes(&self) -> usize {
        self.entries.capacity() * Self::ENTRY_BYTES
            + self.index.capacity() * (std::mem::size_of::<(Ipv6Addr, u32)>() + 1)
            + self.slots.len() * std::mem::size_of::<u32>()
    }

    /// The binding for `home`, if it has not expired by `now`.
    pub fn get(&self, home: &Ipv6Addr, now: Time) -> Option<Binding> {
        let e = self.entries.get(*self.index.get(home)? as usize)?;
        (e.expires_s > now.0 / MICROS).then(|| e.binding())
    }

    /// Loads the entry for `home` (and its index bucket) into the CPU cache without using it:
    /// a batch that touches all its entries first lets their memory loads overlap.
    pub fn touch(&self, home: &Ipv6Addr) {
        let e = self.index.get(home).and_then(|i| self.entries.get(*i as usize));
        std::hint::black_box(e.map(|e| e.expires_s));
    }

    /// Every entry (in no particular order), expired-but-not-removed ones included.
    pub fn iter(&self) -> impl Iterator<Item = Binding> + '_ {
        self.entries.iter().map(Entry::binding)
    }

    /// Inserts or replaces the binding for `b.home_address`, to expire `lifetime_secs` after
    /// `now` (whole seconds); returns what happened and the new binding. Fails with `None`
    /// when a new entry would exceed the capacity.
    pub(crate) fn upsert(
        &mut self,
        home_address: Ipv6Addr,
        care_of_address: Ipv6Addr,
        sequence: u16,
        spi: Spi,
        lifetime_secs: u32,
        now: Time,
    ) -> Option<(Upsert, Binding)> {
        // Time never runs backwards for the wheel: every entry expires at or after the cursor.
        let now_s = (now.0 / MICROS).max(self.cursor_s.saturating_sub(1));
        let expires_s = now_s.saturating_add(u64::from(lifetime_secs).max(1));
        if let Some(&i) = self.index.get(&home_address) {
            let old = self.entries.get(i as usize)?.binding();
            self.unlink(i);
            let e = self.entries.get_mut(i as usize)?;
            e.care_of_address = care_of_address;
            e.sequence = sequence;
            e.spi = spi.0;
            e.expires_s = expires_s;
            let new = e.binding();
            self.link(i);
            return Some((Upsert::Updated(old), new));
        }
        if self.is_full() {
            return None;
        }
        let i = u32::try_from(self.entries.len()).ok()?;
        let e = Entry {
            home_address,
            care_of_address,
            expires_s,
            spi: spi.0,
            prev: NIL,
            next: NIL,
            sequence,
        };
        self.entries.push(e);
        self.index.insert(home_address, i);
        self.link(i);
        Some((Upsert::Created, e.binding()))
    }

    /// Removes the binding for `home`, returning it.
    pub(crate) fn remove(&mut self, home: &Ipv6Addr) -> Option<Binding> {
        let i = *self.index.get(home)?;
        self.remove_at(i)
    }

    /// Removes and returns every binding whose lifetime ran out by `now` (earliest second
    /// first). Visits each second since the previous call once (at most one lap of the
    /// wheel) and only the entries filed under those seconds.
    pub fn expire(&mut self, now: Time) -> Vec<Binding> {
        let now_s = now.0 / MICROS;
        let mut out = Vec::new();
        if now_s < self.cursor_s {
            return out;
        }
        let mask = self.slots.len() as u64 - 1;
        let seconds = (now_s - self.cursor_s).saturating_add(1).min(self.slots.len() as u64);
        for t in self.cursor_s..self.cursor_s + seconds {
            let mut i = self.slots.get((t & mask) as usize).copied().unwrap_or(NIL);
            let mut due = Vec::new();
            while let Some(e) = self.entries.get(i as usize) {
                if e.expires_s <= now_s {
                    due.push(e.home_address);
                }
                i = e.next;
            }
            for home in &due {
                if let Some(b) = self.remove(home) {
                    out.push(b);
                }
            }
        }
        self.cursor_s = now_s + 1;
        out.sort_by_key(|b| b.expires);
        out
    }

    fn slot_of(&self, expires_s: u64) -> usize {
        (expires_s & (self.slots.len() as u64 - 1)) as usize
    }

    /// Puts entry `i` at the head of its second's list.
    fn link(&mut self, i: u32) {
        let Some(expires_s) = self.entries.get(i as usize).map(|e| e.expires_s) else { return };
        let slot = self.slot_of(expires_s);
        let head = self.slots.get(slot).copied().unwrap_or(NIL);
        if let Some(h) = self.entries.get_mut(head as usize) {
            h.prev = i;
        }
        if let Some(e) = self.entries.get_mut(i as usize) {
            e.prev = NIL;
            e.next = head;
        }
        if let Some(s) = self.slots.get_mut(slot) {
            *s = i;
        }
    }

    /// Takes entry `i` out of its second's list.
    fn unlink(&mut self, i: u32) {
        let Some(&Entry { prev, next, expires_s, .. }) = self.entries.get(i as usize) else {
            return;
        };
        if let Some(p) = self.entries.get_mut(prev as usize) {
            p.next = next;
        } else {
            let slot = self.slot_of(expires_s);
            if let Some(s) = self.slots.get_mut(slot) {
                *s = next;
            }
        }
        if let Some(n) = self.entries.get_mut(next as usize) {
            n.prev = prev;
        }
    }

    /// Removes entry `i`: unlinks it, moves the last entry into its place and re-points the
    /// moved entry's neighbours and index at the new place.
    fn remove_at(&mut self, i: u32) -> Option<Binding> {
        let removed = *self.entries.get(i as usize)?;
        self.unlink(i);
        self.index.remove(&removed.home_address);
        let last = u32::try_from(self.entries.len() - 1).ok()?;
        self.entries.swap_remove(i as usize);
        if i != last
            && let Some(&Entry { prev, next, expires_s, home_address, .. }) =
                self.entries.get(i as usize)
        {
            if let Some(p) = self.entries.get_mut(prev as usize) {
                p.next = i;
            } else {
                let slot = self.slot_of(expires_s);
                if let Some(s) = self.slots.get_mut(slot) {
                    *s = i;
                }
            }
            if let Some(n) = self.entries.get_mut(next as usize) {
                n.prev = i;
            }
            self.index.insert(home_address, i);
        }
        Some(removed.binding())
    }
}
