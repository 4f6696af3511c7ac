//! The engine's own figures: a sender and a receiver engine sealing and opening batches of
//! packets spread over every peer.

use super::args::{BenchSasArgs, suite_alg};
use super::peers::{INNER_LOCAL, LOCAL, host, inner_addr, params, peer_addr, spis, visit};
use super::rounds::Rounds;
use ipsec::spd::{Action, Selector, SpdEntry};
use ipsec::{Engine, PacketBuf, PolicyId, Time};
use std::time::{Duration, Instant};

/// A sender engine (outbound SA and a host policy per peer) and a receiver engine (the
/// matching inbound SAs and mirrored policies), as two nodes would hold them.
fn engines(peers: usize, alg: crypto::AeadAlg, spis: &[u32]) -> Result<(Engine, Engine), String> {
    let provider = node::datapath::cipher::provider();
    let (mut tx, mut rx) = (Engine::new(provider), Engine::new(provider));
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
        .zip(spis)
        .map(|(p, &spi)| {
            let pr = params(spi, LOCAL, peer_addr(p), alg);
            tx.add_outbound(&pr, Time(0)).map(|h| h.0).map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    for (p, h) in outs.into_iter().enumerate() {
        let entry = SpdEntry { selector: selector(p), action: Action::Protect(vec![h]) };
        tx.set_policy(p as PolicyId + 1, 1000, entry).map_err(|e| e.to_string())?;
    }
    let ins: Vec<usize> = (0..peers)
        .zip(spis)
        .map(|(p, &spi)| {
            let pr = params(spi, LOCAL, peer_addr(p), alg);
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
pub(super) struct Packets {
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
    pub(super) fn new(peers: usize, args: &BenchSasArgs) -> Result<Packets, String> {
        let spis = spis(peers, args.spis == "random")?;
        let (tx, rx) = engines(peers, suite_alg(&args.suite)?, &spis)?;
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
            self.tx.outbound_batch(&mut self.bufs, &mut self.results, now, node::sys::prefetch);
            t_seal += t.elapsed();
            check(&self.results, "seal")?;
            let t = Instant::now();
            self.rx.inbound_batch(&mut self.bufs, &mut self.results, now, node::sys::prefetch);
            t_open += t.elapsed();
            check(&self.results, "open")?;
        }
        let n = self.per_round as f64;
        Ok((t_seal.as_nanos() as f64 / n, t_open.as_nanos() as f64 / n))
    }
}
