//! Small newtypes named after RFC 4301/4303 terms: SPI, sequence number, and the time argument;
//! and the small pieces the engine's tables share (the prefetch hook, the `Option` tag marker,
//! slot filing).

use std::fmt;

/// Security Parameters Index (RFC 4303 §2.1). 1..=255 are reserved by IANA; 0 is never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Spi(pub u32);

impl Spi {
    /// True if the value may be used for an SA (RFC 4303 §2.1: 0 and 1..=255 are reserved).
    pub fn is_valid(self) -> bool {
        self.0 > 255
    }
}

impl fmt::Display for Spi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:08x}", self.0)
    }
}

/// A full 64-bit sequence number (RFC 4303 §2.2.1); without ESN only the low 32 bits are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SeqNum(pub u64);

impl SeqNum {
    /// The low 32 bits, which travel in the packet.
    pub fn low(self) -> u32 {
        self.0 as u32
    }
    /// The high 32 bits, which ESN carries only in the ICV computation.
    pub fn high(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// A monotonic timestamp in microseconds since an arbitrary origin chosen by the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Time(pub u64);

impl Time {
    /// From whole seconds.
    pub fn from_secs(s: u64) -> Time {
        Time(s.saturating_mul(1_000_000))
    }
    /// Adds seconds, saturating.
    pub fn plus_secs(self, s: u64) -> Time {
        Time(self.0.saturating_add(s.saturating_mul(1_000_000)))
    }
}

/// The CPU's prefetch instruction, as the node passes it to the batch calls
/// (`Engine::outbound_batch`): starts bringing the cache line at an address towards the core
/// and returns without waiting. This crate has no unsafe code, so it takes the instruction from
/// its caller; the engine only ever gives it addresses inside its own tables, SAs and packets.
///
/// A trait over functions rather than a function pointer: the node passes its `#[inline]`
/// function itself (a zero-sized function item), which then compiles into the batch loops as
/// the bare instruction. A pointer cost an indirect call per cache line, some fifteen a packet
/// when every packet meets another of thousands of SAs and one when they all meet one: on
/// `hipsec bench sas --sas 1,10000`, the 1-SA seal 4–5 ns faster and open's growth at 10,000
/// SAs 3–4 ns smaller.
pub trait Prefetch: Fn(*const u8) + Copy {}

impl<F: Fn(*const u8) + Copy> Prefetch for F {}

/// A [`Prefetch`] that does nothing (the batch calls then warm SAs by reading them), for
/// callers with no prefetch instruction to give.
pub fn no_prefetch(_: *const u8) {}

/// A [`Prefetch`] that records the addresses it is given, for the tests of what the batch
/// passes fetch (per thread, as the tests run in parallel).
#[cfg(test)]
pub(crate) mod recorded {
    use std::cell::RefCell;

    thread_local! {
        static FETCHED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    }

    /// The prefetch: records `p`.
    pub(crate) fn record(p: *const u8) {
        FETCHED.with(|f| f.borrow_mut().push(p as usize));
    }

    /// Forgets what was recorded on this thread.
    pub(crate) fn clear() {
        FETCHED.with(|f| f.borrow_mut().clear());
    }

    /// The addresses recorded on this thread since the last `clear`, in order.
    pub(crate) fn fetched() -> Vec<usize> {
        FETCHED.with(|f| f.borrow().clone())
    }
}

/// A field with one valid value, whose 2^64 − 1 invalid ones are the largest niche in any
/// struct that holds it (larger than a `Vec` capacity's or a two-variant enum's 64-bit tag's):
/// `Option` of that struct keeps its tag in this field, so a hot table of
/// `Option<T>` tells `Some` from `None` by reading the line the marker is declared in. Without
/// it the compiler picks a niche of its own (in `SecurityAssociation`, the replay window's
/// line; in an SPD slot, its third line), and every lookup of a cold entry reads, and waits
/// for, a line it would not otherwise need (`hipsec bench sas --sas 1,10000` shows it).
#[derive(Debug, Clone, Copy)]
#[repr(u64)]
pub(crate) enum Live {
    /// The only value.
    Yes = 1,
}

/// Files `v` in slot `reuse` of `slots` (a free slot the caller chose) or in a new slot at the
/// end, and returns its index: how the SA tables and the SPD give out stable indexes.
pub(crate) fn put_in_slot<T>(slots: &mut Vec<Option<T>>, reuse: Option<usize>, v: T) -> usize {
    match reuse {
        Some(i) if i < slots.len() => {
            slots[i] = Some(v);
            i
        }
        _ => {
            slots.push(Some(v));
            slots.len() - 1
        }
    }
}
