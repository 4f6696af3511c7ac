//! The batch entry points of [`Engine`]: the same outcomes, packet by packet, as calling
//! [`Engine::outbound`] or [`Engine::inbound`] in a loop, with the lookups done first.
//!
//! Why: with thousands of SAs to peers that send in no particular order, every packet's policy,
//! SA and keyed cipher are cold, and one packet's chain of lookups (hash bucket → policy → SA →
//! cipher state) is a row of cache misses, each waiting on the one before. Doing every packet's
//! lookups first, then touching every SA they found, lets the CPU overlap the misses of
//! different packets, whose lookups do not depend on each other; the crypto then runs on warm
//! state. `hipsec bench sas` measures the effect (issue 10).

use super::Engine;
use crate::buf::PacketBuf;
use crate::drop::DropReason;
use crate::engine::Processed;
use crate::spd_table::Verdict;
use crate::types::Time;
use wire::{IpLayout, proto};

/// Packets whose lookups are done together: enough for the CPU to overlap their misses, few
/// enough that what they warm is still in the nearest cache when its packet's turn comes.
const GROUP: usize = 16;

impl Engine {
    /// Outbound processing of a batch; `results[i]` receives packet i's outcome.
    pub fn outbound_batch(
        &mut self,
        bufs: &mut [PacketBuf],
        results: &mut [Result<Processed, DropReason>],
        now: Time,
    ) {
        // The scratch list keeps its capacity from batch to batch: no allocation per packet.
        let mut found = std::mem::take(&mut self.batch_found);
        for (bufs, results) in bufs.chunks_mut(GROUP).zip(results.chunks_mut(GROUP)) {
            found.clear();
            found.extend(bufs.iter().map(|b| {
                let layout = IpLayout::parse(b.as_slice()).ok()?;
                Some((layout, self.spd.find(b.as_slice(), &layout)))
            }));
            for i in found.iter().filter_map(|f| f.and_then(|(_, i)| i)) {
                if let Some(Verdict::Protect(sas)) = self.spd.verdict(i) {
                    for sa in sas.iter().filter_map(|h| self.outbound.get(h)?.as_ref()) {
                        sa.warm_out();
                    }
                }
            }
            for ((b, r), f) in bufs.iter_mut().zip(results.iter_mut()).zip(found.iter()) {
                let out = match f {
                    None => Err(DropReason::Malformed),
                    Some((layout, i)) => self.outbound_found(b, layout, *i, now),
                };
                *r = self.tally(out);
            }
        }
        self.batch_found = found;
    }

    /// Inbound processing of a batch; `results[i]` receives packet i's outcome.
    pub fn inbound_batch(
        &mut self,
        bufs: &mut [PacketBuf],
        results: &mut [Result<Processed, DropReason>],
        now: Time,
    ) {
        // Look up the SA of each packet's outer ESP/AH header (consecutive packets of one SA
        // share one lookup), then touch those SAs: two short loops of independent loads, whose
        // misses overlap. The processing below starts from the SA found here (the engine's
        // one-entry SAD memo, `last_in`), rather than hashing the SPI again.
        for (bufs, results) in bufs.chunks_mut(GROUP).zip(results.chunks_mut(GROUP)) {
            let mut last: Option<(u32, u8)> = None;
            let mut found: [Option<((u32, u8), usize)>; GROUP] = [None; GROUP];
            for (b, f) in bufs.iter().zip(found.iter_mut()) {
                let Some(key) = outer_spi(b.as_slice()) else { continue };
                if last != Some(key) {
                    last = Some(key);
                    *f = self.sad.get(&key).map(|&i| (key, i));
                }
            }
            for sa in found.iter().flatten().filter_map(|&(_, i)| self.inbound.get(i)?.as_ref()) {
                sa.warm_in();
            }
            for ((b, r), f) in bufs.iter_mut().zip(results.iter_mut()).zip(found) {
                // The SAD is not changed within a batch, so the memo is what a lookup would
                // find.
                if f.is_some() {
                    self.last_in = f;
                }
                *r = self.inbound(b, now);
            }
        }
    }
}

/// (SPI, protocol) of a packet's outermost ESP or AH header, if it has one.
fn outer_spi(p: &[u8]) -> Option<(u32, u8)> {
    let layout = IpLayout::parse(p).ok()?;
    let at = match layout.next_header {
        proto::ESP => layout.header_len,
        proto::AH => layout.header_len + 4,
        _ => return None,
    };
    let b = p.get(at..at + 4)?;
    Some((u32::from_be_bytes([b[0], b[1], b[2], b[3]]), layout.next_header))
}
