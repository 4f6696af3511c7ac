//! The bench's synthetic peers: their addresses, their SAs' parameters, and the order packets
//! visit them in.

use ipsec::spd::Prefix;
use ipsec::{Mode, SaParams, Spi, sa::Protocol};
use std::net::{IpAddr, Ipv4Addr};
use zeroize::Zeroizing;

/// The peer the `i`-th packet goes to: runs of `burst` packets, every peer once per round, in
/// a scattered order (a stride coprime to `peers`). Visiting peers in the order their state was
/// allocated would let the hardware prefetcher stream the next key in, which a node whose peers
/// send in no particular order never sees: measured here, AES-GCM alone over 5,000 keys costs
/// 1.0× the one-key figure in allocation order and 1.3× scattered.
pub(super) fn visit(i: usize, burst: usize, peers: usize, scattered: bool) -> usize {
    const STRIDE: usize = 7919;
    let k = (i / burst.max(1)) % peers.max(1);
    if !scattered || peers % STRIDE == 0 { k } else { (k * STRIDE) % peers }
}

/// The SPI of each peer's SA pair (`--spis`): a run from 0x10000000, or distinct random ones
/// (never 0–255: 0 names no SA and 1–255 are reserved, RFC 4303 §2.1).
pub(super) fn spis(peers: usize, random: bool) -> Result<Vec<u32>, String> {
    if !random {
        return Ok((0..peers).map(|p| 0x1000_0000 + p as u32).collect());
    }
    let provider = node::datapath::cipher::provider();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(peers);
    while out.len() < peers {
        let spi = crypto::random_spi(provider).map_err(|e| format!("--spis random: {e}"))?;
        if seen.insert(spi) {
            out.push(spi);
        }
    }
    Ok(out)
}

pub(super) fn peer_addr(p: usize) -> Ipv4Addr {
    Ipv4Addr::new(100, 64 + (p >> 16) as u8, (p >> 8) as u8, p as u8)
}

pub(super) fn inner_addr(p: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 128 + (p >> 16) as u8, (p >> 8) as u8, p as u8)
}

pub(super) fn params(spi: u32, src: Ipv4Addr, dst: Ipv4Addr, alg: crypto::AeadAlg) -> SaParams {
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

pub(super) const LOCAL: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
pub(super) const INNER_LOCAL: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

pub(super) fn host(a: Ipv4Addr) -> Prefix {
    Prefix { addr: IpAddr::V4(a), len: 32 }
}
