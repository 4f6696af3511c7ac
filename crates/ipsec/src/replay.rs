//! Anti-replay window (RFC 4303 §3.4.3) as the RFC 6479 bitmap of 64-bit blocks, with extended
//! sequence number inference (RFC 4303 Appendix A2). `check` runs before the ICV is verified and
//! `commit` only after, so that forged packets cannot move the window (boringtun does the same).

use crate::drop::DropReason;
use crate::types::SeqNum;

/// Largest window accepted. RFC 4303 asks for at least 32 and recommends 64; we go well past 4096.
pub const MAX_WINDOW: u32 = 1 << 16;

/// A receiver's replay window.
///
/// Exactly one cache line, aligned to one, so that checking a packet against it costs at most
/// one miss (the SA embeds it, `sa.rs`).
#[derive(Debug, Clone)]
#[repr(align(64))]
pub struct ReplayWindow {
    /// Window size in packets; 0 disables the check (the receiver's choice, RFC 4303 §3.4.3).
    size: u32,
    esn: bool,
    /// Highest sequence number accepted so far (0: none yet).
    top: u64,
    /// Bit `s % 64` of block `(s / 64) & mask` is set when `s` has been accepted.
    blocks: Blocks,
    mask: u64,
}

/// The window size is outside `0` or `32..=MAX_WINDOW`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("replay window size {0} is out of range (0 to disable, or 32..=65536)")]
pub struct BadWindowSize(pub u32);

/// Blocks held in the window itself: windows up to 192 packets (the node's default is 128)
/// need no separate allocation, so checking one costs no cache miss beyond the SA's own.
const INLINE_BLOCKS: usize = 4;

/// The bitmap's blocks: inline for small windows, on the heap for large ones.
#[derive(Debug, Clone)]
enum Blocks {
    Inline([u64; INLINE_BLOCKS]),
    Heap(Box<[u64]>),
}

impl Blocks {
    fn get(&self) -> &[u64] {
        match self {
            Blocks::Inline(b) => b,
            Blocks::Heap(b) => b,
        }
    }

    fn get_mut(&mut self) -> &mut [u64] {
        match self {
            Blocks::Inline(b) => b,
            Blocks::Heap(b) => b,
        }
    }
}

impl ReplayWindow {
    /// A window of `size` packets; `esn` selects 64-bit sequence numbers.
    pub fn new(size: u32, esn: bool) -> Result<ReplayWindow, BadWindowSize> {
        if size != 0 && !(32..=MAX_WINDOW).contains(&size) {
            return Err(BadWindowSize(size));
        }
        // One more block than the window needs, so the block holding `top` and the one holding the
        // window's left edge never collide (RFC 6479 §2.3). Power of two for masking.
        let n = ((size as usize).div_ceil(64) + 1).next_power_of_two();
        Ok(ReplayWindow {
            size,
            esn,
            top: 0,
            blocks: if n <= INLINE_BLOCKS {
                Blocks::Inline([0; INLINE_BLOCKS])
            } else {
                Blocks::Heap(vec![0; n].into_boxed_slice())
            },
            mask: n as u64 - 1,
        })
    }

    /// Window size.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Highest sequence number accepted.
    pub fn top(&self) -> SeqNum {
        SeqNum(self.top)
    }

    /// Infers the full sequence number from the 32 bits in the packet (RFC 4303 Appendix A2.2);
    /// without ESN it is just those bits.
    pub fn infer(&self, seq_low: u32) -> SeqNum {
        if !self.esn {
            return SeqNum(seq_low as u64);
        }
        let th = (self.top >> 32) as u32;
        let tl = self.top as u32;
        // A disabled check still needs a window to guess the high bits; use the RFC's default.
        let w = if self.size == 0 { 64 } else { self.size };
        let bottom = tl.wrapping_sub(w - 1);
        let high = if tl >= w - 1 {
            // Case A: the window lies within one 2^32 subspace.
            if seq_low >= bottom { th } else { th.wrapping_add(1) }
        } else if seq_low >= bottom {
            // Case B: the window spans two subspaces and seq is in the lower (older) one.
            th.wrapping_sub(1)
        } else {
            th
        };
        // Before anything was received th = 0 and case B would say "previous subspace".
        if high == u32::MAX && th == 0 {
            return SeqNum(seq_low as u64);
        }
        SeqNum(((high as u64) << 32) | seq_low as u64)
    }

    /// Checks a full sequence number without changing the window.
    pub fn check(&self, seq: SeqNum) -> Result<(), DropReason> {
        let s = seq.0;
        if s == 0 {
            return Err(DropReason::BadSeq);
        }
        if self.size == 0 || s > self.top {
            return Ok(());
        }
        // `s <= top` here, so the subtraction cannot underflow (an addition could overflow near
        // 2^64 with ESN).
        if self.top - s >= self.size as u64 {
            return Err(DropReason::TooOld);
        }
        if self.blocks.get()[((s >> 6) & self.mask) as usize] & (1 << (s & 63)) != 0 {
            return Err(DropReason::Replayed);
        }
        Ok(())
    }

    /// Records `seq` as received (call only after the ICV verified).
    pub fn commit(&mut self, seq: SeqNum) {
        let s = seq.0;
        if self.size == 0 {
            self.top = self.top.max(s);
            return;
        }
        if s > self.top {
            let old_block = self.top >> 6;
            let new_block = s >> 6;
            // Clear the blocks the window slides over; at most all of them.
            let n = (new_block - old_block).min(self.mask + 1);
            for i in 1..=n {
                self.blocks.get_mut()[((old_block + i) & self.mask) as usize] = 0;
            }
            self.top = s;
        }
        self.blocks.get_mut()[((s >> 6) & self.mask) as usize] |= 1 << (s & 63);
    }

    /// `check` then `commit`, for callers that have already authenticated the packet.
    pub fn check_and_commit(&mut self, seq: SeqNum) -> Result<(), DropReason> {
        self.check(seq)?;
        self.commit(seq);
        Ok(())
    }
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
