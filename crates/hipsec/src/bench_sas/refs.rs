//! The references the engine's figures are read against: the AEAD alone (`Raw`, one key per
//! peer or per SA) and behind the least state any stack keeps per SA (`Bare`).

use super::args::{BenchSasArgs, suite_alg};
use super::peers::visit;
use super::rounds::Rounds;
use std::time::Instant;

/// The raw AEAD of `--suite` (through the data path's provider, as the engine keys it) sealing
/// `--size` bytes with a key per peer or per SA, the keys visited as `Packets` visits the SAs.
pub(super) struct Raw {
    keys: Vec<Box<dyn crypto::Aead>>,
    burst: usize,
    scattered: bool,
    per_round: usize,
    buf: Vec<u8>,
    n: u64,
    /// Only the prefetched pass (the `keys` column, which reports nothing else).
    warm_only: bool,
}

impl Raw {
    /// `count` keys (one per peer for the `raw` columns, one per SA for `keys`).
    pub(super) fn new(count: usize, args: &BenchSasArgs) -> Result<Raw, String> {
        let provider = node::datapath::cipher::provider();
        let alg = suite_alg(&args.suite)?;
        let keys = (0..count)
            .map(|p| {
                let k: Vec<u8> = (0..alg.key_len() as u8)
                    .map(|i| (p as u8).wrapping_mul(31).wrapping_add(i))
                    .collect();
                provider.aead(alg, &k).map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()?;
        let burst = args.burst.max(1);
        Ok(Raw {
            keys,
            burst,
            scattered: args.order == "scattered",
            per_round: (count * burst).max(4096),
            buf: vec![0u8; args.size],
            n: 0,
            warm_only: false,
        })
    }

    /// Like `new`, but each round runs only the prefetched pass and reports it as both figures
    /// (for `Row::key_floor_ratio`, which reads nothing else: the unprefetched pass would only
    /// take half of each second's rounds).
    pub(super) fn warm_only(count: usize, args: &BenchSasArgs) -> Result<Raw, String> {
        Ok(Raw { warm_only: true, ..Raw::new(count, args)? })
    }

    /// One pass over every key: ns per call. With `ahead`, each call first asks the key
    /// `ahead` calls later to prefetch itself (`Aead::warm`), as the engine's batch calls do.
    fn one_round(&mut self, ahead: Option<usize>) -> Result<f64, String> {
        let (mut tag, mut nonce) = ([0u8; 16], [0u8; 12]);
        let peers = self.keys.len();
        let t = Instant::now();
        for i in 0..self.per_round {
            if let Some(a) = ahead {
                self.keys[visit(i + a, self.burst, peers, self.scattered)].warm();
            }
            self.n += 1;
            nonce[4..].copy_from_slice(&self.n.to_be_bytes());
            self.keys[visit(i, self.burst, peers, self.scattered)]
                .seal_in_place(&nonce, &[0u8; 8], &mut self.buf, &mut tag)
                .map_err(|e| e.to_string())?;
        }
        Ok(t.elapsed().as_nanos() as f64 / self.per_round as f64)
    }
}

impl Rounds for Raw {
    /// One round: ns per call as it comes, then with each key prefetched as many calls ahead
    /// as the engine's batch calls prefetch (`PREFETCH_LEAD`).
    fn round(&mut self) -> Result<(f64, f64), String> {
        let warm = |r: &mut Raw| r.one_round(Some(ipsec::engine::PREFETCH_LEAD));
        if self.warm_only {
            let w = warm(self)?;
            return Ok((w, w));
        }
        Ok((self.one_round(None)?, warm(self)?))
    }
}

/// One SA of the bare reference (`Bare`): the least an ESP stack keeps per SA besides its key,
/// a line with the sequence counter and byte count that every packet updates (RFC 4303 §3.3.3,
/// RFC 4301 §4.4.2.1), and the key.
#[repr(align(64))]
struct BareSa {
    seq: u64,
    bytes: u64,
    key: Box<dyn crypto::Aead>,
}

/// The bare reference: the raw AEAD behind the least lookup any SA-keyed stack does, `count`
/// SAs found by SPI through the engine's own hash index (one slot line), each updating its
/// counter line and sealing with its key, everything prefetched as the engine prefetches
/// (index slot three leads ahead, SA line two, key one). What a stack with no state beyond
/// that would show: how close to the key floor any stack can get on this machine.
pub(super) struct Bare {
    sas: Vec<BareSa>,
    index: ipsec::keyed_index::KeyedIndex<u32, u32, ipsec::keyed_index::Align16>,
    burst: usize,
    scattered: bool,
    per_round: usize,
    buf: Vec<u8>,
}

/// SPI of the bare reference's SA `i`.
fn bare_spi(i: usize) -> u32 {
    0x3000_0000 + i as u32
}

impl Bare {
    pub(super) fn new(count: usize, args: &BenchSasArgs) -> Result<Bare, String> {
        let raw = Raw::new(count, args)?;
        let mut index = ipsec::keyed_index::KeyedIndex::default();
        for i in 0..count {
            index.insert(bare_spi(i), i as u32);
        }
        Ok(Bare {
            sas: raw.keys.into_iter().map(|key| BareSa { seq: 0, bytes: 0, key }).collect(),
            index,
            burst: raw.burst,
            scattered: raw.scattered,
            per_round: raw.per_round,
            buf: raw.buf,
        })
    }
}

impl Rounds for Bare {
    fn round(&mut self) -> Result<(f64, f64), String> {
        const LEAD: usize = ipsec::engine::PREFETCH_LEAD;
        // Long enough for the three stages' leads.
        const RING: usize = 4 * LEAD;
        let prefetch = node::sys::prefetch;
        let n = self.sas.len();
        let spi_at = |i: usize| bare_spi(visit(i, self.burst, n, self.scattered));
        // Hashes and found SAs of the calls ahead, by call number modulo the ring's length.
        let mut hashes = [0u64; RING];
        let mut found = [0u32; RING];
        let mut tag = [0u8; 16];
        let t = Instant::now();
        for i in 0..self.per_round + 3 * LEAD {
            // Three leads ahead: hash the SPI and start fetching its index slot.
            let h = self.index.hash(&spi_at(i));
            self.index.prefetch_slot(h, prefetch);
            hashes[i % RING] = h;
            // Two leads ahead: read the slot, start fetching the SA's line.
            if let Some(j) = i.checked_sub(LEAD) {
                let sa = self.index.get_hashed(hashes[j % RING], &spi_at(j)).ok_or("bare: lost")?;
                found[j % RING] = sa;
                prefetch(std::ptr::from_ref(&self.sas[sa as usize]).cast());
            }
            // One lead ahead: the SA's line is in; start fetching its key.
            if let Some(j) = i.checked_sub(2 * LEAD) {
                self.sas[found[j % RING] as usize].key.warm();
            }
            // Now: count and seal.
            if let Some(j) = i.checked_sub(3 * LEAD) {
                let sa = &mut self.sas[found[j % RING] as usize];
                sa.seq += 1;
                sa.bytes += self.buf.len() as u64;
                let mut nonce = [0u8; 12];
                nonce[4..].copy_from_slice(&sa.seq.to_be_bytes());
                sa.key
                    .seal_in_place(&nonce, &sa.seq.to_be_bytes(), &mut self.buf, &mut tag)
                    .map_err(|e| e.to_string())?;
            }
        }
        let ns = t.elapsed().as_nanos() as f64 / self.per_round as f64;
        Ok((ns, ns))
    }
}
