//! The batch entry points of [`Engine`]: the same outcomes, packet by packet, as calling
//! [`Engine::outbound`] or [`Engine::inbound`] in a loop, with the lookups done first.
//!
//! Why: with thousands of SAs to peers that send in no particular order, every packet's policy,
//! SA and keyed cipher are cold, and one packet's chain of lookups (hash bucket → policy → SA →
//! cipher state) is a row of cache misses, each waiting on the one before. So the batch is
//! worked in passes, each a loop of independent loads whose misses the CPU overlaps:
//! 1. every packet's lookup: outbound, the SPD in three passes and a short fourth (hash the
//!    addresses and prefetch their index slots; read the slots and prefetch the entries they
//!    name, or the next slot's line for an address not in its home slot; for those, walk on
//!    and prefetch the entry; match, `SpdTable::probe`); inbound, the SAD in two and a short
//!    third (prefetch the direct slot; read it, and hash and prefetch the keys not there;
//!    probe those);
//! 2. the processing, which, before it seals packet i, prefetches the SA lines sealing reads
//!    for packet i + [`PREFETCH_AHEAD`], and the key of packet i + [`AHEAD`]'s SA from where
//!    line 1 of that SA, fetched by then, says it is; before it opens packet i, it prefetches
//!    the SA of packet i + [`AHEAD`] and its key together: the SAD entry the lookup found
//!    says where both are (`SadEntry`). So those lines arrive while the packets in between
//!    are processed, and no prefetch waits for a line (before, the SA itself was read to find
//!    its cipher, which was then asked to prefetch its key through a virtual call).
//!
//! Warming a whole group at once instead (the first version of this file) asked for some 160
//! lines together, far more than a core keeps in flight: most of them still arrived late.
//! `hipsec bench sas --sas 1,10000` measures the effect (seal and open at 10,000 SAs against 1).

use super::Engine;
use crate::buf::PacketBuf;
use crate::drop::DropReason;
use crate::engine::Processed;
use crate::sa::SecurityAssociation;
use crate::sad::{SadEntry, SadKey, sad_key};
use crate::spd_table::{Probe, Verdict};
use crate::types::{Prefetch, Time};
use wire::{IpLayout, proto};

/// How many packets ahead the processing pass prefetches an SA's key (both directions) and,
/// opening, the SA's own lines. Nothing waits for these lines before the packet itself, so a
/// short lead suffices. In `bench sas --sas 10000`, in runs that alternated versions round by
/// round in one process (the same SAs in the same memory, so that both met the same moments
/// of a shared machine), leads of 1, 2, 3 and 4 came out alike (within about 1 %, the bias
/// that comparison showed towards whichever version ran second); 6 and 8 were 2–4 % slower.
pub const AHEAD: usize = 2;

/// Cache lines of the expanded key of the data path's AEADs (`SadEntry::key_lines`): AWS-LC's
/// `EVP_AEAD_CTX`, whatever the AEAD (`node::datapath::cipher`).
const KEY_LINES: usize = 10;

/// How many packets ahead sealing prefetches an outbound SA's own lines, whose line 1 the
/// prefetch of its key reads `AHEAD` packets later (`SecurityAssociation::tail`; a table of
/// key addresses by handle, the earlier design, cost a line more per
/// packet and was 0.5 % slower at 10,000 SAs); and how far ahead the packets' own first bytes
/// are fetched.
const PREFETCH_AHEAD: usize = 8;

impl Engine {
    /// Outbound processing of a batch; `results[i]` receives packet i's outcome.
    /// `prefetch` is the CPU's prefetch instruction ([`Prefetch`]; `no_prefetch` without one).
    pub fn outbound_batch(
        &mut self,
        bufs: &mut [PacketBuf],
        results: &mut [Result<Processed, DropReason>],
        now: Time,
        prefetch: impl Prefetch,
    ) {
        // The scratch list keeps its capacity from batch to batch: no allocation per packet.
        // The policy lookups in three passes over the batch, each a loop of independent loads
        // whose misses overlap: hash each packet's addresses and prefetch their index slots;
        // read those slots and prefetch the entries they name; then match.
        let mut found = std::mem::take(&mut self.batch_found);
        found.clear();
        found.extend(bufs.iter().map(|b| {
            let layout = IpLayout::parse(b.as_slice()).ok()?;
            Some((layout, self.spd.probe(b.as_slice(), &layout, prefetch), None))
        }));
        let mut displaced = std::mem::take(&mut self.batch_displaced);
        displaced.clear();
        for (k, f) in found.iter().enumerate() {
            if let Some((_, probe, _)) = f {
                if self.spd.prefetch_candidates(probe, prefetch) {
                    displaced.push(k);
                }
            }
        }
        for (_, probe, _) in displaced.iter().filter_map(|&k| found.get(k)?.as_ref()) {
            self.spd.prefetch_displaced(probe, prefetch);
        }
        self.batch_displaced = displaced;
        for (b, f) in bufs.iter().zip(found.iter_mut()) {
            if let Some((layout, probe, i)) = f {
                *i = self.spd.find_probed(b.as_slice(), layout, probe);
            }
        }
        (0..PREFETCH_AHEAD).for_each(|j| self.warm_outbound(found.get(j), j >= AHEAD, prefetch));
        for k in 0..bufs.len().min(results.len()).min(found.len()) {
            self.warm_outbound(found.get(k + AHEAD), false, prefetch);
            self.warm_outbound(found.get(k + PREFETCH_AHEAD), true, prefetch);
            prefetch_packet(prefetch, bufs.get(k + PREFETCH_AHEAD));
            let out = match &found[k] {
                None => Err(DropReason::Malformed),
                Some((layout, _, i)) => self.outbound_found(&mut bufs[k], layout, *i, now),
            };
            results[k] = self.tally(out);
        }
        self.batch_found = found;
    }

    /// Starts fetching what sealing reads for the outbound SAs a packet's policy protects it
    /// with: first (`early`) the SAs' own lines; then their keys, from where each SA's line 1
    /// says they are (with line 4 for an IPv6 tunnel's outer header). The policy's entry was
    /// read by the lookup (`find_probed`).
    fn warm_outbound(
        &self,
        found: Option<&Option<(IpLayout, Probe, Option<usize>)>>,
        early: bool,
        prefetch: impl Prefetch,
    ) {
        let Some(Some((_, _, Some(i)))) = found else { return };
        let Some(Verdict::Protect(sas)) = self.spd.verdict(*i) else { return };
        for h in sas.iter() {
            match self.outbound.get(h) {
                Some(slot) if early => SecurityAssociation::prefetch_slot(slot, prefetch, 2),
                // Line 1, where these are, arrived since the early prefetch.
                Some(Some(sa)) => {
                    prefetch_key(sa.tail.key_at(), sa.key_nlines, prefetch);
                    if sa.reads_outer_tail() {
                        sa.prefetch_outer_tail(prefetch);
                    }
                }
                _ => {}
            }
        }
    }

    /// Inbound processing of a batch; `results[i]` receives packet i's outcome.
    /// `prefetch` as for [`Engine::outbound_batch`].
    pub fn inbound_batch(
        &mut self,
        bufs: &mut [PacketBuf],
        results: &mut [Result<Processed, DropReason>],
        now: Time,
        prefetch: impl Prefetch,
    ) {
        let found = self.inbound_lookups(bufs.iter().map(|b| outer_spi(b.as_slice())), prefetch);
        let n = bufs.len().min(results.len());
        self.open_found(found, &mut results[..n], prefetch, |e, k| {
            prefetch_packet(prefetch, bufs.get(k + PREFETCH_AHEAD));
            e.inbound(&mut bufs[k], now)
        });
    }

    /// [`Engine::inbound_from`] for a batch: packet i's IP header is in `bufs[i]` and its
    /// ESP/AH part in `src(i)` (a datagram in a receive buffer). The same outcomes, packet by
    /// packet, as calling `inbound_from` in a loop, with the SAD lookups and prefetches of
    /// [`Engine::inbound_batch`] done first (the ESP-in-UDP receive path of the node's lanes).
    pub fn inbound_from_batch<'s>(
        &mut self,
        bufs: &mut [PacketBuf],
        src: impl Fn(usize) -> &'s [u8],
        results: &mut [Result<Processed, DropReason>],
        now: Time,
        prefetch: impl Prefetch,
    ) {
        let keys = bufs.iter().enumerate().map(|(i, b)| split_outer_spi(b.as_slice(), src(i)));
        let found = self.inbound_lookups(keys, prefetch);
        let n = bufs.len().min(results.len());
        self.open_found(found, &mut results[..n], prefetch, |e, k| {
            if k + PREFETCH_AHEAD < n {
                prefetch_bytes(prefetch, src(k + PREFETCH_AHEAD));
            }
            e.inbound_from(&mut bufs[k], src(k), now)
        });
    }

    /// The processing pass of both inbound batches: before `open` handles packet k, the SA
    /// and key of packet k + [`AHEAD`] are prefetched and the SAD memo is set from the
    /// lookup (the SAD is not changed within a batch, so the memo is what a lookup would
    /// find). Hands `found` back to `batch_found_in` for its capacity.
    fn open_found(
        &mut self,
        found: Vec<Option<(SadKey, SadEntry)>>,
        results: &mut [Result<Processed, DropReason>],
        prefetch: impl Prefetch,
        mut open: impl FnMut(&mut Self, usize) -> Result<Processed, DropReason>,
    ) {
        (0..AHEAD).for_each(|j| self.warm_inbound(found.get(j), prefetch));
        for k in 0..results.len().min(found.len()) {
            self.warm_inbound(found.get(k + AHEAD), prefetch);
            if let Some((key, e)) = found[k] {
                self.last_in = Some((key, e.idx as usize));
            }
            results[k] = open(self, k);
        }
        self.batch_found_in = found;
    }

    /// The SAD lookups of a batch, given each packet's key (consecutive packets of one SA
    /// share one lookup), in passes of independent loads, as the SPD's: prefetch every key's
    /// direct slot (`Sad`), whose address the SPI gives; read those slots, and for a key not
    /// in its own, hash it and prefetch its slots in the hashed index; then probe those. The
    /// processing starts from the SA found here (the engine's one-entry SAD memo, `last_in`),
    /// rather than looking the SPI up again. The caller hands the list back to
    /// `batch_found_in` (kept for its capacity: no allocation per packet).
    fn inbound_lookups(
        &mut self,
        keys_of: impl Iterator<Item = Option<SadKey>>,
        prefetch: impl Prefetch,
    ) -> Vec<Option<(SadKey, SadEntry)>> {
        let mut keys = std::mem::take(&mut self.batch_keys_in);
        keys.clear();
        let mut last: Option<SadKey> = None;
        keys.extend(keys_of.map(|key| {
            let key = key?;
            if last == Some(key) {
                return None;
            }
            last = Some(key);
            self.sad.prefetch_direct(key, prefetch);
            Some(key)
        }));
        let mut displaced = std::mem::take(&mut self.batch_displaced_in);
        displaced.clear();
        let mut found = std::mem::take(&mut self.batch_found_in);
        found.clear();
        found.extend(keys.iter().enumerate().map(|(k, key)| {
            let key = (*key)?;
            if let Some(e) = self.sad.direct(key) {
                return Some((key, e));
            }
            let h = self.sad.hash(&key);
            self.sad.prefetch_hashed(h, prefetch);
            displaced.push((k, key, h));
            None
        }));
        for &(k, key, h) in &displaced {
            if let Some(f) = found.get_mut(k) {
                *f = self.sad.get_hashed(h, &key).map(|e| (key, e));
            }
        }
        self.batch_displaced_in = displaced;
        self.batch_keys_in = keys;
        found
    }

    /// Starts fetching the lines opening reads from the inbound SA a packet's outer header
    /// names, and its cipher's expanded key, all at once: the SAD entry says where both are
    /// (`SadEntry`), so nothing here waits for a line to arrive.
    fn warm_inbound(&self, found: Option<&Option<(SadKey, SadEntry)>>, prefetch: impl Prefetch) {
        let Some(Some((_, e))) = found else { return };
        if let Some(slot) = self.inbound.get(e.idx as usize) {
            SecurityAssociation::prefetch_slot(slot, prefetch, e.sa_lines);
        }
        prefetch_key(e.key_at, e.key_lines, prefetch);
    }
}

/// Starts fetching `lines` cache lines of a cipher's expanded key from `at`
/// (`SecurityAssociation::key_lines`).
fn prefetch_key(at: usize, lines: u8, prefetch: impl Prefetch) {
    let line = |l: usize| prefetch((at + 64 * l) as *const u8);
    match usize::from(lines) {
        // Unrolled: a loop over a count read from memory costs more instructions than the
        // prefetches themselves.
        KEY_LINES => (0..KEY_LINES).for_each(line),
        n => (0..n).for_each(line),
    }
}

/// Starts fetching a packet's first bytes and the headroom line before them (where ESP's
/// header goes when sealing): a batch's buffers were written by the kernel, or by the caller,
/// a whole batch earlier, and the SAs warmed since may have pushed them out of the nearest
/// cache.
fn prefetch_packet(prefetch: impl Prefetch, buf: Option<&PacketBuf>) {
    let Some(b) = buf else { return };
    let p = b.as_slice();
    prefetch(p.as_ptr().wrapping_sub(64));
    prefetch_bytes(prefetch, p);
}

/// Starts fetching a packet's or datagram's first bytes (up to four lines: the headers, IV
/// and the start of the payload, which sealing and opening read first).
fn prefetch_bytes(prefetch: impl Prefetch, p: &[u8]) {
    let start = p.as_ptr();
    for off in (0..p.len().min(256)).step_by(64) {
        prefetch(start.wrapping_add(off));
    }
}

/// The SAD key of a packet whose IP header is in `head` (as `Engine::inbound_from` takes it)
/// and whose ESP or AH part is `rest`.
fn split_outer_spi(head: &[u8], rest: &[u8]) -> Option<SadKey> {
    spi_key(IpLayout::parse(head).ok()?.next_header, rest)
}

/// The SAD key (`sad_key`) of a packet's outermost ESP or AH header, if it has one.
fn outer_spi(p: &[u8]) -> Option<SadKey> {
    let layout = IpLayout::parse(p).ok()?;
    spi_key(layout.next_header, p.get(layout.header_len..)?)
}

/// The SAD key of an ESP or AH header (`next_header`) that starts `rest`: ESP's SPI is its
/// first word, AH's its second (RFC 4303 §2, RFC 4302 §2).
fn spi_key(next_header: u8, rest: &[u8]) -> Option<SadKey> {
    let at = match next_header {
        proto::ESP => 0,
        proto::AH => 4,
        _ => return None,
    };
    let b = rest.get(at..at + 4)?;
    Some(sad_key(u32::from_be_bytes([b[0], b[1], b[2], b[3]]), next_header))
}
