//! The home agent's binding cache for home registrations (RFC 6275 §9.1, §10.1): one entry per
//! home address holding the care-of address, the last accepted Sequence Number, the SA the
//! registration came through and the expiry. Read §9.1 (the cache's fields) and §10.3.1–§10.3.2
//! (what a registration and a de-registration do to it).
//!
//! Layout for a million entries, chosen so that an update touches one cold cache line: the
//! entries live inside the hash table's buckets (home address → entry, 48 octets; see
//! `table.rs`), so a look-up finds the entry where it finds the key. Expiry uses a timer wheel with one slot per
//! second (at least as many slots as the longest lifetime allowed) whose slots list *home
//! addresses*, not entries: a registration appends its home address to the slot of its new
//! expiry second (the slot every update of that second appends to, so it is warm) and leaves
//! the old mention where it was. When [`BindingCache::expire`] reaches a second it looks each
//! mentioned address up and removes the entry only if it is really due; a mention whose entry
//! moved on or went away is dropped. So an update never visits the entry's old neighbours, as
//! a linked list would (two more cold lines at a million entries).
//!
//! Stale mentions are bounded: when the wheel holds more than twice as many mentions as there
//! are entries (plus a little), it is rebuilt from the table, one mention per entry. That costs
//! O(entries) once per at least as many updates — O(1) per update, amortized — and keeps the
//! wheel under 32 octets per entry. Look-up, insert, update and removal are O(1);
//! [`BindingCache::expire`] visits only the seconds that passed and the mentions filed under
//! them, so its cost does not depend on the number of entries.

mod table;

use std::net::Ipv6Addr;

use ipsec::{Spi, Time};

use table::HomeTable;

const MICROS: u64 = 1_000_000;
/// Mentions the wheel may hold beyond two per entry before it is rebuilt.
const SLACK_MENTIONS: usize = 1024;

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

/// A stored entry, beside its key in the table (28 octets; 44 with the key).
#[derive(Debug, Clone, Copy)]
struct Entry {
    care_of_address: Ipv6Addr,
    /// Whole seconds; saturates (a clock past 2^32 s only makes bindings last longer).
    expires_s: u32,
    spi: u32,
    sequence: u16,
}

impl Entry {
    fn binding(&self, home_address: Ipv6Addr) -> Binding {
        Binding {
            home_address,
            care_of_address: self.care_of_address,
            sequence: self.sequence,
            spi: Spi(self.spi),
            expires: Time(u64::from(self.expires_s) * MICROS),
        }
    }
}

fn secs_u32(s: u64) -> u32 {
    u32::try_from(s).unwrap_or(u32::MAX)
}

/// The binding cache (§9.1) with expiry by timer wheel.
#[derive(Debug, Clone)]
pub struct BindingCache {
    table: HomeTable<Entry>,
    /// Per second, the home addresses whose entries expired then when they were filed; the
    /// length is a power of two.
    slots: Vec<Vec<Ipv6Addr>>,
    /// Mentions in all slots.
    mentions: usize,
    /// Times the wheel was rebuilt.
    rebuilds: u64,
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
    /// Octets of one bucket of the table (key and entry), not counting the free buckets or the
    /// wheel (see [`BindingCache::memory_bytes`]).
    pub const ENTRY_BYTES: usize = HomeTable::<Entry>::BUCKET_BYTES;

    /// A cache for at most `capacity` entries whose lifetimes never exceed `max_lifetime_secs`.
    /// Memory for the entries is reserved as they come, not up front.
    pub fn new(capacity: usize, max_lifetime_secs: u32) -> BindingCache {
        // The longest lifetime a BU can carry is 65535 × 4 s (§6.1.7), under 2^18 seconds; a
        // longer one would only make entries lap the wheel, which `expire` handles.
        let secs = u64::from(max_lifetime_secs).min(1 << 18);
        let slots = usize::try_from((secs + 2).next_power_of_two().max(64)).unwrap_or(1 << 19);
        BindingCache {
            table: HomeTable::new(),
            slots: vec![Vec::new(); slots],
            mentions: 0,
            rebuilds: 0,
            cursor_s: 0,
            capacity: capacity.min(u32::MAX as usize),
        }
    }

    /// Reserves room for `n` more entries, so a later burst of registrations does not
    /// reallocate the table.
    pub fn reserve(&mut self, n: usize) {
        self.table.reserve(n);
    }

    /// Number of entries, including any that expired but were not yet removed by
    /// [`BindingCache::expire`].
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True if there are no entries.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The most entries the cache holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// True if a new entry would exceed the capacity.
    pub fn is_full(&self) -> bool {
        self.table.len() >= self.capacity
    }

    /// Octets the cache holds now: the table's buckets (a quarter or more of them free) and the
    /// wheel's mentions.
    pub fn memory_bytes(&self) -> usize {
        let buckets = self.table.buckets();
        let (mention, slot) = (size_of::<Ipv6Addr>(), size_of::<Vec<Ipv6Addr>>());
        let wheel: usize = self.slots.iter().map(|s| s.capacity() * mention + slot).sum();
        buckets * Self::ENTRY_BYTES + wheel
    }

    /// Mentions in the wheel now (one per entry after a rebuild, at most twice that plus a
    /// little before the next) and how many times it was rebuilt.
    pub fn wheel_mentions(&self) -> (usize, u64) {
        (self.mentions, self.rebuilds)
    }

    /// The binding for `home`, if it has not expired by `now`.
    pub fn get(&self, home: &Ipv6Addr, now: Time) -> Option<Binding> {
        let e = self.table.get(home)?;
        (u64::from(e.expires_s) > now.0 / MICROS).then(|| e.binding(*home))
    }

    /// Loads the entry for `home` into the CPU cache without using it: a batch that touches
    /// all its entries first lets their memory loads overlap.
    pub fn touch(&self, home: &Ipv6Addr) {
        self.table.touch(home);
    }

    /// Every entry (in no particular order), expired-but-not-removed ones included.
    pub fn iter(&self) -> impl Iterator<Item = Binding> + '_ {
        self.table.iter().map(|(h, e)| e.binding(*h))
    }

    /// Inserts or replaces the binding for `home_address`, to expire `lifetime_secs` after
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
        let expires_s = secs_u32(now_s.saturating_add(u64::from(lifetime_secs).max(1)));
        let new = Entry { care_of_address, expires_s, spi: spi.0, sequence };
        let full = self.is_full();
        let up = match self.table.get_mut(&home_address) {
            Some(e) => {
                let old = e.binding(home_address);
                *e = new;
                Upsert::Updated(old)
            }
            None if full => return None,
            None => {
                self.table.insert(home_address, new);
                Upsert::Created
            }
        };
        self.mention(home_address, expires_s);
        if self.mentions > 2 * self.table.len() + SLACK_MENTIONS {
            self.rebuild_wheel();
        }
        Some((up, new.binding(home_address)))
    }

    /// Removes the binding for `home`, returning it. Its mention in the wheel stays until its
    /// second comes, and is dropped then.
    pub(crate) fn remove(&mut self, home: &Ipv6Addr) -> Option<Binding> {
        self.table.remove(home).map(|e| e.binding(*home))
    }

    /// Removes and returns every binding whose lifetime ran out by `now` (earliest second
    /// first). Visits each second since the previous call once (at most one lap of the
    /// wheel) and only the mentions filed under those seconds.
    pub fn expire(&mut self, now: Time) -> Vec<Binding> {
        let now_s = now.0 / MICROS;
        let mut out = Vec::new();
        if now_s < self.cursor_s {
            return out;
        }
        let len = self.slots.len();
        let mask = len as u64 - 1;
        let seconds = (now_s - self.cursor_s).saturating_add(1).min(len as u64);
        let table = &mut self.table;
        for t in self.cursor_s..self.cursor_s + seconds {
            let slot = (t & mask) as usize;
            let Some(mentioned) = self.slots.get_mut(slot) else { continue };
            let before = mentioned.len();
            mentioned.retain(|home| {
                let Some(e) = table.get(home) else { return false };
                let expires_s = u64::from(e.expires_s);
                if expires_s <= now_s {
                    if let Some(e) = table.remove(home) {
                        out.push(e.binding(*home));
                    }
                    false
                } else {
                    // Kept only if due a lap (or more, after a jump in time) later; else the
                    // entry was filed again under its new second.
                    expires_s & mask == slot as u64
                }
            });
            self.mentions -= before - mentioned.len();
            // A busy second's memory goes back once it has passed.
            if mentioned.capacity() > 4 * mentioned.len() + 64 {
                mentioned.shrink_to(mentioned.len());
            }
        }
        self.cursor_s = now_s + 1;
        out.sort_by_key(|b| b.expires);
        out
    }

    fn slot_of(&self, expires_s: u64) -> usize {
        (expires_s & (self.slots.len() as u64 - 1)) as usize
    }

    /// Files `home` under second `expires_s`.
    fn mention(&mut self, home: Ipv6Addr, expires_s: u32) {
        let slot = self.slot_of(u64::from(expires_s));
        if let Some(s) = self.slots.get_mut(slot) {
            s.push(home);
            self.mentions += 1;
        }
    }

    /// Drops every stale mention: one mention per entry, in its expiry second's slot.
    fn rebuild_wheel(&mut self) {
        for s in &mut self.slots {
            s.clear();
        }
        self.mentions = 0;
        self.rebuilds += 1;
        let mask = self.slots.len() as u64 - 1;
        for (home, e) in self.table.iter() {
            if let Some(s) = self.slots.get_mut((u64::from(e.expires_s) & mask) as usize) {
                s.push(*home);
                self.mentions += 1;
            }
        }
    }
}
