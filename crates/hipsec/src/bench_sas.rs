//! `hipsec bench sas`: how the node scales with the number of SAs and peers (issue 10).
//!
//! 1. Per packet: seal (SPD lookup + ESP) and open (SAD lookup + replay + ESP + inbound SPD) with
//!    N SAs to N/2 distinct peers (one policy per peer host), packets spread round-robin (in a scattered order, see `visit`) over
//!    every peer, beside the same with one peer, in the same run: ns per packet and the ratio.
//! 2. Install rate through the in-process control interface (`node::keying::plane`): the SAs
//!    keyed on the calling thread, one envelope to a lane that files them in its tables and
//!    engine (the lane here is a thread serving the mailbox exactly as a worker does between
//!    batches, without TUN or sockets), acknowledged.
//! 3. Memory per SA: the process's resident set before and after those installs.
//!
//! The command-line install rate is measured on a real node by the netns test
//! `crates/hipsec/tests/control_plane.rs` and reported in the issue note.

use ipsec::spd::{Action, Prefix, Selector, SpdEntry};
use ipsec::{Engine, Mode, PacketBuf, PolicyId, SaParams, Spi, Time, sa::Protocol};
use node::datapath::mailbox::{self, Event, OutKey, PolicyAction, PolicySpec, Update};
use node::datapath::tables::{InTables, OutTables};
use node::keying::plane::{ControlPlane, EndpointDefaults, SaSpec, WorkerPort};
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// Arguments of `hipsec bench sas`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchSasArgs {
    /// SA counts to measure (each is N/2 peers with a pair each; 1 means one outbound and one
    /// inbound SA).
    #[arg(long, value_delimiter = ',', default_value = "1,100,10000")]
    pub sas: Vec<usize>,
    /// Inner IP packet size in bytes (small packets show the per-packet work; large ones the
    /// cipher).
    #[arg(long, default_value_t = 128)]
    pub size: usize,
    /// Packets in a row to one peer before the next (1: strict round-robin, every packet to
    /// another SA; TCP flows arrive in bursts, which keep an SA's state in cache).
    #[arg(long, default_value_t = 1)]
    pub burst: usize,
    /// The order peers are visited in each round: "scattered" (a fixed stride through them,
    /// as peers that send in no particular order are met) or "sequential" (the order their
    /// state was allocated in, which the hardware prefetcher streams in: a best case).
    #[arg(long, default_value = "scattered", value_parser = ["scattered", "sequential"])]
    pub order: String,
    /// Seconds of measurement per count, and again for the raw AEAD (in rounds that alternate
    /// with the 1-SA reference's; medians are reported).
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// The ESP AEAD every SA uses (and the raw reference). Its key state is part of what a
    /// packet meets cold: AES-GCM's round keys and GHASH table fill 9 cache lines in AWS-LC,
    /// ChaCha20-Poly1305's 32-byte key one or two, so comparing the two separates the key's
    /// share of the growth from the stack's own.
    #[arg(long, default_value = "aes128gcm", value_parser = ["aes128gcm", "aes256gcm", "chacha20poly1305"])]
    pub suite: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The AEAD of `--suite`, read by the SA file's own suite parser.
fn suite_alg(suite: &str) -> Result<crypto::AeadAlg, String> {
    match suite.parse::<crypto::EspSuite>().map_err(|e| format!("--suite {suite}: {e}"))?.encr {
        crypto::EncrAlg::Aead(alg) => Ok(alg),
        _ => Err(format!("--suite {suite}: not an AEAD")),
    }
}

/// One SA count's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// SAs (outbound + inbound).
    pub sas: usize,
    /// Peers.
    pub peers: usize,
    /// Seal, ns per packet (median of rounds).
    pub seal_ns: f64,
    /// Open, ns per packet.
    pub open_ns: f64,
    /// seal_ns / the 1-SA figure: the median of the ratios of rounds that alternate with the
    /// 1-SA pair's own rounds (`interleaved`).
    pub seal_ratio: f64,
    /// open_ns / the 1-SA figure, taken as `seal_ratio` is.
    pub open_ratio: f64,
    /// SAs per second through the in-process control interface (plus their policies).
    pub install_per_s: f64,
    /// Resident memory added per SA installed (bytes; engines, tables, control records).
    pub bytes_per_sa: f64,
    /// The reference: the raw AEAD sealing the same bytes with one key per peer, taken in the
    /// same order (ns per call), and its ratio to the 1-key figure: how much of the growth is
    /// the cipher's own state going cold rather than the stack's lookups.
    pub raw_seal_ns: f64,
    /// raw_seal_ns / the 1-key figure.
    pub raw_ratio: f64,
    /// The raw AEAD again, each key prefetched `ipsec::engine::PREFETCH_LEAD` calls ahead
    /// (`Aead::warm`, the engine's lead): what the cipher's own state costs when its misses are overlapped as the stack
    /// overlaps them, a floor for the stack's own ratio.
    pub raw_warm_ns: f64,
    /// raw_warm_ns / the 1-key figure (with the same prefetch).
    pub raw_warm_ratio: f64,
    /// The raw AEAD once more, prefetched the same way, with one key per SA (every outbound and
    /// inbound context the node holds, each used once per round, as the node's seal-then-open
    /// rounds use them), against two keys: the ratio a node would show if its own state took no
    /// room in the cache at all, only its ciphers' keys. The floor for `seal_ratio` and
    /// `open_ratio` with this cipher library on this machine.
    pub key_floor_ratio: f64,
    /// The bare reference against two SAs: the raw AEAD behind the least state and lookup
    /// any stack needs per SA (an SPI hash slot and a counter line; see `Bare`), one SA per
    /// SA the node holds, prefetched as the engine does. How near the key floor a stack can
    /// come here; the stack's own lines beyond these are what `seal_ratio` adds on top.
    pub bare_ratio: f64,
    /// The stack's own work per sealed packet beside the cipher's: seal_ns − raw_seal_ns (SPD
    /// lookup, SA state, headers, counters).
    pub stack_seal_ns: f64,
    /// stack_seal_ns / the 1-SA figure.
    pub stack_seal_ratio: f64,
    /// open_ns − raw_seal_ns (SAD lookup, replay window, headers, inbound SPD check).
    pub stack_open_ns: f64,
    /// stack_open_ns / the 1-SA figure.
    pub stack_open_ratio: f64,
}

/// The peer the `i`-th packet goes to: runs of `burst` packets, every peer once per round, in
/// a scattered order (a stride coprime to `peers`). Visiting peers in the order their state was
/// allocated would let the hardware prefetcher stream the next key in, which a node whose peers
/// send in no particular order never sees: measured here, AES-GCM alone over 5,000 keys costs
/// 1.0× the one-key figure in allocation order and 1.3× scattered.
fn visit(i: usize, burst: usize, peers: usize, scattered: bool) -> usize {
    const STRIDE: usize = 7919;
    let k = (i / burst.max(1)) % peers.max(1);
    if !scattered || peers % STRIDE == 0 { k } else { (k * STRIDE) % peers }
}

fn peer_addr(p: usize) -> Ipv4Addr {
    Ipv4Addr::new(100, 64 + (p >> 16) as u8, (p >> 8) as u8, p as u8)
}

fn inner_addr(p: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 128 + (p >> 16) as u8, (p >> 8) as u8, p as u8)
}

fn params(spi: u32, src: Ipv4Addr, dst: Ipv4Addr, alg: crypto::AeadAlg) -> SaParams {
    // The cipher key and the 4-byte salt (RFC 4106 §8.1, RFC 7634 §4).
    let key: Vec<u8> = (0..alg.key_len() as u8 + 4)
        .map(|i| (spi as u8).wrapping_mul(31).wrapping_add(i))
        .collect();
    SaParams {
        spi: Spi(spi),
        // An AEAD needs no integrity transform (RFC 4303 §3.2).
        protocol: Protocol::Esp(crypto::EspSuite {
            encr: crypto::EncrAlg::Aead(alg),
            integ: crypto::IntegAlg::None,
        }),
        mode: Mode::Tunnel,
        src: IpAddr::V4(src),
        dst: IpAddr::V4(dst),
        enc_key: Zeroizing::new(key),
        auth_key: Zeroizing::new(Vec::new()),
        esn: false,
        replay_window: 128,
        soft: Default::default(),
        hard: Default::default(),
    }
}

const LOCAL: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const INNER_LOCAL: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

fn host(a: Ipv4Addr) -> Prefix {
    Prefix { addr: IpAddr::V4(a), len: 32 }
}

/// A sender engine (outbound SA and a host policy per peer) and a receiver engine (the
/// matching inbound SAs and mirrored policies), as two nodes would hold them.
fn engines(peers: usize, alg: crypto::AeadAlg) -> Result<(Engine, Engine), String> {
    let provider = node::datapath::cipher::provider();
    let (mut tx, mut rx) = (Engine::new(provider), Engine::new(provider));
    // As the node's lanes have them (`keying::manual::build_engine_for`).
    tx.set_prefetch(node::sys::prefetch);
    rx.set_prefetch(node::sys::prefetch);
    let selector = |p: usize| Selector {
        src: host(INNER_LOCAL),
        dst: host(inner_addr(p)),
        proto: None,
        src_ports: None,
        dst_ports: None,
    };
    // Each engine is built in passes of its own, as two nodes (or two lanes, each keying its
    // SAs on its own thread) build theirs, and as the control plane installs a batch
    // (`ControlPlane::install`, then `set_policies`): the SAs first, then the policies.
    // Interleaving the two engines' allocations would spread each one's over twice the memory,
    // which no node does.
    let outs: Vec<usize> = (0..peers)
        .map(|p| {
            let pr = params(0x1000_0000 + p as u32, LOCAL, peer_addr(p), alg);
            tx.add_outbound(&pr, Time(0)).map(|h| h.0).map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    for (p, h) in outs.into_iter().enumerate() {
        let entry = SpdEntry { selector: selector(p), action: Action::Protect(vec![h]) };
        tx.set_policy(p as PolicyId + 1, 1000, entry).map_err(|e| e.to_string())?;
    }
    let ins: Vec<usize> = (0..peers)
        .map(|p| {
            let pr = params(0x1000_0000 + p as u32, LOCAL, peer_addr(p), alg);
            rx.add_inbound(&pr, Time(0)).map(|h| h.0).map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    for (p, hi) in ins.into_iter().enumerate() {
        // The receiving peer's inbound entry: the mirror of its own outbound policy
        // (inner(p) → us), which is this very selector.
        let entry = SpdEntry { selector: selector(p), action: Action::Protect(vec![hi]) };
        rx.set_inbound_policy(p as PolicyId + 1, 1000, entry).map_err(|e| e.to_string())?;
    }
    Ok((tx, rx))
}

/// An IPv4/UDP packet of `size` bytes from us to peer `p`'s inner address.
fn packet(p: usize, size: usize) -> Vec<u8> {
    let size = size.max(28);
    let mut v = vec![0u8; size];
    v[0] = 0x45;
    v[2..4].copy_from_slice(&(size as u16).to_be_bytes());
    v[8] = 64;
    v[9] = 17;
    v[12..16].copy_from_slice(&INNER_LOCAL.octets());
    v[16..20].copy_from_slice(&inner_addr(p).octets());
    let c = wire::ip::internet_checksum(&v[..20]);
    v[10..12].copy_from_slice(&c.to_be_bytes());
    v[20..22].copy_from_slice(&4000u16.to_be_bytes());
    v[22..24].copy_from_slice(&5000u16.to_be_bytes());
    v[24..26].copy_from_slice(&((size - 20) as u16).to_be_bytes());
    v
}

/// Packets sealed, then opened, at a time: the data path's batch (its buffers stay in cache,
/// as a lane's do; only the SAs change from packet to packet).
const BATCH: usize = 256;

type Results = Vec<Result<ipsec::Processed, ipsec::DropReason>>;

/// Seal and open over `peers` peers, a round at a time (one pass over every peer).
struct Packets {
    tx: Engine,
    rx: Engine,
    peers: usize,
    burst: usize,
    scattered: bool,
    per_round: usize,
    template: Vec<u8>,
    /// Each peer's destination and header checksum (see `Packets::new`).
    headers: Vec<([u8; 4], [u8; 2])>,
    bufs: Vec<PacketBuf>,
    results: Results,
}

impl Packets {
    fn new(peers: usize, args: &BenchSasArgs) -> Result<Packets, String> {
        let (tx, rx) = engines(peers, suite_alg(&args.suite)?)?;
        let burst = args.burst.max(1);
        // A round visits every peer `burst` times in a row, and is long enough to time.
        let per_round = (peers * burst).max(4096).div_ceil(BATCH) * BATCH;
        // One packet, re-addressed to each peer as it is loaded (destination and header
        // checksum, 4 + 2 bytes from a small per-peer table): the packet bytes themselves cost
        // the same cache traffic for one peer as for 5,000, as fresh packets from a TUN device
        // do. (A copy of a whole distinct packet per peer, as this bench took before, read
        // 640 kB of packets round after round at 5,000 peers and 128 bytes, evicting the
        // engine's own state; at one peer it read 128 bytes.)
        let headers = (0..peers)
            .map(|p| {
                let v = packet(p, args.size);
                ([v[16], v[17], v[18], v[19]], [v[10], v[11]])
            })
            .collect();
        let head = ipsec::buf::DEFAULT_HEADROOM;
        Ok(Packets {
            tx,
            rx,
            peers,
            burst,
            scattered: args.order == "scattered",
            per_round,
            template: packet(0, args.size),
            headers,
            bufs: (0..BATCH).map(|_| PacketBuf::new(head + args.size + 256, head)).collect(),
            results: vec![Err(ipsec::DropReason::Malformed); BATCH],
        })
    }
}

impl Rounds for Packets {
    /// One round: (seal ns, open ns) per packet.
    fn round(&mut self) -> Result<(f64, f64), String> {
        let check = |rs: &Results, what: &str| {
            rs.iter().find_map(|r| r.as_ref().err()).map_or(Ok(()), |d| Err(format!("{what}: {d}")))
        };
        let (mut t_seal, mut t_open) = (Duration::ZERO, Duration::ZERO);
        let (head, now) = (ipsec::buf::DEFAULT_HEADROOM, Time(1));
        for chunk in 0..self.per_round / BATCH {
            for (k, b) in self.bufs.iter_mut().enumerate() {
                let i = chunk * BATCH + k;
                b.load(&self.template, head).map_err(|e| format!("{e:?}"))?;
                let (dst, csum) = self.headers[visit(i, self.burst, self.peers, self.scattered)];
                let ip = b.as_mut_slice();
                ip[16..20].copy_from_slice(&dst);
                ip[10..12].copy_from_slice(&csum);
            }
            // The batch calls, as the node's lanes make them.
            let t = Instant::now();
            self.tx.outbound_batch(&mut self.bufs, &mut self.results, now);
            t_seal += t.elapsed();
            check(&self.results, "seal")?;
            let t = Instant::now();
            self.rx.inbound_batch(&mut self.bufs, &mut self.results, now);
            t_open += t.elapsed();
            check(&self.results, "open")?;
        }
        let n = self.per_round as f64;
        Ok((t_seal.as_nanos() as f64 / n, t_open.as_nanos() as f64 / n))
    }
}

/// A setup measured a round at a time: two figures per round (seal and open ns per packet;
/// the raw AEAD gives its one figure twice).
trait Rounds {
    fn round(&mut self) -> Result<(f64, f64), String>;
}

/// Medians over rounds that alternate between `base` and `other`: each one's two figures, and
/// the medians of each pair of rounds' ratios (other / base), in that order. Alternating
/// round by round means both meet the same moments of a shared machine (a neighbour's burst
/// on the memory bus, a frequency change), which separate runs of a second each did not: on
/// the 2-vCPU VM, the 10,000-SA figure of one binary ranged over 1.6× from run to run.
fn interleaved<R: Rounds>(base: &mut R, other: &mut R, seconds: f64) -> Result<[f64; 6], String> {
    let mut v: [Vec<f64>; 6] = Default::default();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < deadline || v[0].len() < 3 {
        let (bs, bo) = base.round()?;
        let (s, o) = other.round()?;
        for (k, x) in [bs, bo, s, o, s / bs, o / bo].into_iter().enumerate() {
            v[k].push(x);
        }
    }
    Ok(v.map(|mut x| median(&mut x)))
}

/// The raw AEAD (AES-128-GCM through the provider, as the engine keys it) sealing `size`
/// bytes with one key per peer, the keys visited as `Packets` visits the SAs.
struct Raw {
    keys: Vec<Box<dyn crypto::Aead>>,
    burst: usize,
    scattered: bool,
    per_round: usize,
    buf: Vec<u8>,
    n: u64,
}

impl Raw {
    /// `count` keys (one per peer for the `raw` columns, one per SA for `keys`).
    fn new(count: usize, args: &BenchSasArgs) -> Result<Raw, String> {
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
        })
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
        Ok((self.one_round(None)?, self.one_round(Some(ipsec::engine::PREFETCH_LEAD))?))
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
struct Bare {
    sas: Vec<BareSa>,
    index: ipsec::keyed_index::KeyedIndex<u32, u32>,
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
    fn new(count: usize, args: &BenchSasArgs) -> Result<Bare, String> {
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
        let prefetch = node::sys::prefetch;
        let n = self.sas.len();
        let spi_at = |i: usize| bare_spi(visit(i, self.burst, n, self.scattered));
        // Hashes and found SAs of the calls ahead, by call number modulo the ring's length.
        let mut hashes = [0u64; 4 * LEAD];
        let mut found = [0u32; 4 * LEAD];
        let ring = 4 * LEAD;
        let mut tag = [0u8; 16];
        let t = Instant::now();
        for i in 0..self.per_round + 3 * LEAD {
            // Three leads ahead: hash the SPI and start fetching its index slot.
            let h = self.index.hash(&spi_at(i));
            prefetch(self.index.slot_addr(h));
            hashes[i % ring] = h;
            // Two leads ahead: read the slot, start fetching the SA's line.
            if let Some(j) = i.checked_sub(LEAD) {
                let sa = self.index.get_hashed(hashes[j % ring], &spi_at(j)).ok_or("bare: lost")?;
                found[j % ring] = sa;
                prefetch(std::ptr::from_ref(&self.sas[sa as usize]).cast());
            }
            // One lead ahead: the SA's line is in; start fetching its key.
            if let Some(j) = i.checked_sub(2 * LEAD) {
                self.sas[found[j % ring] as usize].key.warm();
            }
            // Now: count and seal.
            if let Some(j) = i.checked_sub(3 * LEAD) {
                let sa = &mut self.sas[found[j % ring] as usize];
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

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get((v.len().max(1) - 1) / 2).copied().unwrap_or(f64::NAN)
}

fn rss_bytes() -> f64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|x| x.parse::<f64>().ok()))
        .unwrap_or(f64::NAN);
    pages * 4096.0
}

/// A lane without I/O: serves its mailbox as a worker does between batches.
fn lane(mb: mailbox::Mailbox, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let provider = node::datapath::cipher::provider();
    let (mut out_e, mut in_e) = (Engine::new(provider), Engine::new(provider));
    let (mut out_t, mut in_t) = (OutTables::default(), InTables::default());
    let mut peer = None;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let Some(env) = mb.next() else {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        };
        let mut errors = Vec::new();
        for (k, u) in env.updates.into_iter().enumerate() {
            let r = match u {
                Update::AddInbound { .. } | Update::DelInbound { .. } => in_t.apply(&mut in_e, u),
                Update::SetPolicy { id, spec } => out_t
                    .apply(&mut out_e, Update::SetPolicy { id, spec: spec.clone() }, &mut peer)
                    .and_then(|_| in_t.apply(&mut in_e, Update::SetPolicy { id, spec })),
                other => out_t.apply(&mut out_e, other, &mut peer),
            };
            if let Err(e) = r {
                errors.push((k, e));
            }
        }
        mb.emit(Event::Applied { ticket: env.ticket, worker: mb.worker, errors });
    }
    // Keeps the engines alive until here, so the resident set counts them.
    drop((out_e, in_e, out_t, in_t));
}

/// SAs per second through the control interface, and bytes of memory per SA.
pub(crate) fn install(sas: usize) -> Result<(f64, f64), String> {
    let peers = (sas / 2).max(1);
    let (ev_tx, ev_rx) = std::sync::mpsc::channel();
    let (mb, port) = mailbox::mailbox(0, ev_tx).map_err(|e| e.to_string())?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = std::sync::Arc::clone(&stop);
    let th = std::thread::spawn(move || lane(mb, s2));
    let mut plane = ControlPlane::new(
        vec![WorkerPort { lane: 0, out: true, inb: true, port }],
        ev_rx,
        Instant::now(),
        EndpointDefaults { udp_port: Some(4500), peer: None },
    );
    let spec = |p: SaParams| SaSpec { params: p, lane: 0, endpoint: None, beet: false, name: None };
    let ins: Vec<SaSpec> = (0..peers)
        .map(|p| {
            spec(params(0x2000_0000 + p as u32, peer_addr(p), LOCAL, crypto::AeadAlg::Aes128Gcm))
        })
        .collect();
    let outs: Vec<SaSpec> = (0..peers)
        .map(|p| {
            spec(params(0x1000_0000 + p as u32, LOCAL, peer_addr(p), crypto::AeadAlg::Aes128Gcm))
        })
        .collect();
    let policies: Vec<(PolicyId, PolicySpec)> = (0..peers)
        .map(|p| {
            let key =
                OutKey { spi: 0x1000_0000 + p as u32, proto: 50, dst: IpAddr::V4(peer_addr(p)) };
            let selector = Selector {
                src: host(INNER_LOCAL),
                dst: host(inner_addr(p)),
                proto: None,
                src_ports: None,
                dst_ports: None,
            };
            let spec = PolicySpec {
                selector,
                action: PolicyAction::Protect(vec![key]),
                in_sas: vec![(0x2000_0000 + p as u32, 50)],
                priority: 1000,
            };
            (p as PolicyId + 1, spec)
        })
        .collect();
    let rss0 = rss_bytes();
    let t = Instant::now();
    plane.install(ins, outs, false).map_err(|e| e.to_string())?;
    plane.set_policies(policies).map_err(|e| e.to_string())?;
    let secs = t.elapsed().as_secs_f64();
    let rss1 = rss_bytes();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = th.join();
    let n = (2 * peers) as f64;
    Ok((n / secs, (rss1 - rss0) / n))
}

/// Runs the benchmark.
pub fn measure_all(args: &BenchSasArgs) -> Result<Vec<Row>, String> {
    if args.sas.is_empty() || args.sas.iter().any(|&n| n == 0 || n > 1_000_000) {
        return Err("--sas: counts in 1..=1000000".into());
    }
    if !(28..=9000).contains(&args.size) {
        return Err(format!("--size {}: 28..=9000", args.size));
    }
    let mut rows: Vec<Row> = Vec::new();
    let (mut base, mut base_raw) = (Packets::new(1, args)?, Raw::new(1, args)?);
    let mut base_pair = Raw::new(2, args)?;
    let mut base_bare = Bare::new(2, args)?;
    for &n in &args.sas {
        let peers = (n / 2).max(1);
        eprintln!("bench sas: {n} SAs ({peers} peers)");
        // One SA pair against itself: its rounds alternate with a copy of the same setup.
        let mut other = Packets::new(peers, args)?;
        let [base_seal, base_open, seal, open, seal_ratio, open_ratio] =
            interleaved(&mut base, &mut other, args.seconds)?;
        drop(other);
        let mut other_raw = Raw::new(peers, args)?;
        let [raw1, _, raw, raw_warm, raw_ratio, raw_warm_ratio] =
            interleaved(&mut base_raw, &mut other_raw, args.seconds)?;
        drop(other_raw);
        // The keys alone, one per SA the node holds (`Row::key_floor_ratio`).
        let mut all_keys = Raw::new(2 * peers, args)?;
        let [_, _, _, _, _, key_floor_ratio] =
            interleaved(&mut base_pair, &mut all_keys, args.seconds)?;
        drop(all_keys);
        let mut bare = Bare::new(2 * peers, args)?;
        let [_, _, _, _, bare_ratio, _] = interleaved(&mut base_bare, &mut bare, args.seconds)?;
        drop(bare);
        let (rate, bytes) = install(n)?;
        let (base_stack_seal, base_stack_open) = (base_seal - raw1, base_open - raw1);
        rows.push(Row {
            sas: n,
            peers,
            seal_ns: seal,
            open_ns: open,
            seal_ratio,
            open_ratio,
            install_per_s: rate,
            bytes_per_sa: bytes,
            raw_seal_ns: raw,
            raw_ratio,
            raw_warm_ns: raw_warm,
            raw_warm_ratio,
            key_floor_ratio,
            bare_ratio,
            stack_seal_ns: seal - raw,
            stack_seal_ratio: (seal - raw) / base_stack_seal,
            stack_open_ns: open - raw,
            stack_open_ratio: (open - raw) / base_stack_open,
        });
    }
    Ok(rows)
}

/// Runs and prints.
pub fn run(args: &BenchSasArgs) -> Result<(), String> {
    let rows = measure_all(args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!(
        "bench sas: {}, tunnel mode, {}-byte packets spread over every peer ({} in a row); \
         {} order; ratios against 1 SA pair (medians of alternating rounds); raw: the AEAD alone, \
         one key per peer, same order; raw pf: the same with each key prefetched {} calls ahead, as \
         the engine does; keys: raw pf with one key per SA (all the contexts the node holds), \
         the floor for seal and open's ratios; bare: keys behind an SPI index and a counter line \
         per SA, the least state a stack keeps; stack: seal or open minus raw, the work besides \
         the cipher's",
        args.suite,
        args.size,
        args.burst,
        args.order,
        ipsec::engine::PREFETCH_LEAD
    );
    println!(
        "{:>7} {:>6} {:>9} {:>6} {:>9} {:>6} {:>9} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7} {:>12} {:>9}",
        "SAs",
        "peers",
        "seal ns",
        "ratio",
        "open ns",
        "ratio",
        "raw ns",
        "ratio",
        "raw pf",
        "keys",
        "bare",
        "stack s",
        "stack o",
        "install SA/s",
        "B/SA"
    );
    for r in &rows {
        println!(
            "{:>7} {:>6} {:>9.1} {:>6.3} {:>9.1} {:>6.3} {:>9.1} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>7.3} {:>7.3} {:>12.0} {:>9.0}",
            r.sas,
            r.peers,
            r.seal_ns,
            r.seal_ratio,
            r.open_ns,
            r.open_ratio,
            r.raw_seal_ns,
            r.raw_ratio,
            r.raw_warm_ratio,
            r.key_floor_ratio,
            r.bare_ratio,
            r.stack_seal_ratio,
            r.stack_open_ratio,
            r.install_per_s,
            r.bytes_per_sa
        );
    }
    Ok(())
}
