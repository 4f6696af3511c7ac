//! Shared helpers for the ipsec integration tests: SA parameters with deterministic keys, and
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]
//! IPv4/IPv6 UDP/TCP packets built with etherparse.
#![allow(dead_code)]

use crypto::{EspSuite, IntegAlg};
use etherparse::PacketBuilder;
use ipsec::{Lifetime, Mode, SaParams, Spi, sa::Protocol};
use std::net::IpAddr;
use zeroize::Zeroizing;

pub const V4_OUTER: (&str, &str) = ("192.0.2.1", "192.0.2.2");
pub const V6_OUTER: (&str, &str) = ("2001:db8::1", "2001:db8::2");

/// SPI steps for tests that give SA n the SPI base + n × step. `SPI_RUN`: SPIs in a run, each
/// inbound SA in a direct slot of its own in the SAD (`ipsec::sad`).
pub const SPI_RUN: u32 = 1;
/// SPIs 2^20 apart: all share their low bits, so one inbound SA holds the direct slot and the
/// others are found through the SAD's hashed index.
pub const SPI_SHARED_LOW_BITS: u32 = 1 << 20;

/// Each packet in its own buffer with 128 bytes of headroom, as a batch call takes them.
pub fn bufs_of(pkts: &[Vec<u8>]) -> Vec<ipsec::PacketBuf> {
    pkts.iter()
        .map(|p| {
            let mut b = ipsec::PacketBuf::with_max_packet();
            b.load(p, 128).unwrap();
            b
        })
        .collect()
}

pub fn key(len: usize, seed: u8) -> Zeroizing<Vec<u8>> {
    Zeroizing::new((0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect())
}

pub fn addrs(v6: bool) -> (IpAddr, IpAddr) {
    let (s, d) = if v6 { V6_OUTER } else { V4_OUTER };
    (s.parse().unwrap(), d.parse().unwrap())
}

pub fn esp_params(suite: EspSuite, mode: Mode, v6_outer: bool, esn: bool, spi: u32) -> SaParams {
    let (src, dst) = addrs(v6_outer);
    SaParams {
        spi: Spi(spi),
        protocol: Protocol::Esp(suite),
        mode,
        src,
        dst,
        enc_key: key(suite.encr.key_len(), spi as u8),
        auth_key: key(suite.integ.key_len(), spi as u8 ^ 0x5a),
        esn,
        replay_window: 128,
        soft: Lifetime::default(),
        hard: Lifetime::default(),
    }
}

pub fn ah_params(integ: IntegAlg, mode: Mode, v6_outer: bool, esn: bool, spi: u32) -> SaParams {
    let (src, dst) = addrs(v6_outer);
    SaParams {
        spi: Spi(spi),
        protocol: Protocol::Ah(integ),
        mode,
        src,
        dst,
        enc_key: Zeroizing::new(vec![]),
        auth_key: key(integ.key_len(), spi as u8 ^ 0x33),
        esn,
        replay_window: 128,
        soft: Lifetime::default(),
        hard: Lifetime::default(),
    }
}

/// A UDP (or TCP when `tcp`) packet between the documentation addresses with `payload`.
pub fn packet(v6: bool, tcp: bool, payload: &[u8]) -> Vec<u8> {
    let b = if v6 {
        PacketBuilder::ipv6(
            [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10],
            [0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20],
            64,
        )
    } else {
        PacketBuilder::ipv4([10, 1, 0, 16], [10, 2, 0, 32], 64)
    };
    let mut out = Vec::new();
    if tcp {
        b.tcp(40000, 5001, 12345, 65535).write(&mut out, payload).unwrap();
    } else {
        b.udp(40000, 5001).write(&mut out, payload).unwrap();
    }
    out
}

pub fn all_ah() -> Vec<IntegAlg> {
    ["sha1", "sha256", "sha384", "sha512", "gmac128", "gmac256"]
        .iter()
        .filter_map(|n| IntegAlg::from_name(n))
        .collect()
}
