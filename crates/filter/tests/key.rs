//! `PacketKey::from_ip_packet` on IPv4/IPv6 packets, extension headers, fragments, truncated
//! and random input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::IpAddr;

use etherparse::PacketBuilder;
use filter::{Direction, KeyError, PacketKey};
use proptest::prelude::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn v4_tcp() -> Vec<u8> {
    let b = PacketBuilder::ipv4([192, 0, 2, 1], [198, 51, 100, 2], 64).tcp(40000, 443, 1, 1000);
    let mut out = Vec::new();
    b.write(&mut out, b"hello").unwrap();
    out
}

/// IPv6 header + hop-by-hop + destination options + `rest` (protocol `last`).
fn v6_with_exts(last: u8, rest: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    let plen = (16 + rest.len()) as u16;
    p.extend_from_slice(&plen.to_be_bytes());
    p.push(0); // next: hop-by-hop
    p.push(64);
    p.extend_from_slice(&ip6("2001:db8::1"));
    p.extend_from_slice(&ip6("2001:db8::2"));
    p.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop → dest opts, PadN
    p.extend_from_slice(&[last, 0, 1, 4, 0, 0, 0, 0]); // dest opts → last
    p.extend_from_slice(rest);
    p
}

fn ip6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().unwrap().octets()
}

#[test]
fn ipv4_tcp() {
    let k = PacketKey::from_ip_packet(Direction::In, &v4_tcp()).unwrap();
    assert_eq!(
        k,
        PacketKey::new(Direction::In, ip("192.0.2.1"), ip("198.51.100.2"), 6, 40000, 443)
    );
}

#[test]
fn ipv4_icmp_echo() {
    let b = PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).icmpv4_echo_request(1, 2);
    let mut out = Vec::new();
    b.write(&mut out, &[]).unwrap();
    let k = PacketKey::from_ip_packet(Direction::Out, &out).unwrap();
    assert_eq!((k.proto, k.icmp_type, k.src_port), (1, Some(8), 0));
}

#[test]
fn ipv6_udp_after_extension_headers() {
    let udp = [0x13, 0x88, 0x00, 0x35, 0, 8, 0, 0]; // 5000 → 53
    let k = PacketKey::from_ip_packet(Direction::In, &v6_with_exts(17, &udp)).unwrap();
    assert_eq!(
        k,
        PacketKey::new(Direction::In, ip("2001:db8::1"), ip("2001:db8::2"), 17, 5000, 53)
    );
    let icmp6 = [128, 0, 0, 0, 0, 1, 0, 1];
    let k = PacketKey::from_ip_packet(Direction::In, &v6_with_exts(58, &icmp6)).unwrap();
    assert_eq!((k.proto, k.icmp_type), (58, Some(128)));
}

fn v4_fragment(offset_units: u16, more: bool, payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let flags_off = (if more { 0x2000 } else { 0 }) | offset_units;
    let mut p = vec![0x45, 0];
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&[0, 7]);
    p.extend_from_slice(&flags_off.to_be_bytes());
    p.extend_from_slice(&[64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    p.extend_from_slice(payload);
    p
}

#[test]
fn ipv4_fragments() {
    let udp = [0x13, 0x88, 0x00, 0x35, 0, 16, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
    let first = PacketKey::from_ip_packet(Direction::In, &v4_fragment(0, true, &udp)).unwrap();
    assert_eq!((first.src_port, first.dst_port), (5000, 53));
    let later = PacketKey::from_ip_packet(Direction::In, &v4_fragment(1, false, &udp)).unwrap();
    assert_eq!((later.proto, later.src_port, later.dst_port), (17, 0, 0));
}

#[test]
fn ipv6_non_first_fragment_has_no_ports() {
    let mut p = vec![0x60, 0, 0, 0, 0, 16, 44, 64];
    p.extend_from_slice(&ip6("2001:db8::1"));
    p.extend_from_slice(&ip6("2001:db8::2"));
    // Fragment header: next = UDP, offset 1 (8 bytes), M = 0.
    p.extend_from_slice(&[17, 0, 0, 8, 0, 0, 0, 9]);
    p.extend_from_slice(&[0x13, 0x88, 0x00, 0x35, 0, 0, 0, 0]);
    let k = PacketKey::from_ip_packet(Direction::In, &p).unwrap();
    assert_eq!((k.proto, k.src_port, k.dst_port, k.icmp_type), (17, 0, 0, None));
    // The same as a first fragment (offset 0, M = 1) has ports.
    p[40..48].copy_from_slice(&[17, 0, 0, 1, 0, 0, 0, 9]);
    let k = PacketKey::from_ip_packet(Direction::In, &p).unwrap();
    assert_eq!((k.src_port, k.dst_port), (5000, 53));
}

#[test]
fn truncated_transport_is_an_error() {
    let p = v4_fragment(0, false, &[0x13, 0x88]);
    assert_eq!(
        PacketKey::from_ip_packet(Direction::In, &p),
        Err(KeyError::TruncatedTransport { proto: 17, len: 2, needed: 4 })
    );
    let e = PacketKey::from_ip_packet(Direction::In, &[]).unwrap_err();
    assert!(matches!(e, KeyError::Ip(_)), "{e}");
    let e = PacketKey::from_ip_packet(Direction::In, &v4_tcp()[..30]).unwrap_err();
    assert!(e.to_string().starts_with("bad IP header"), "{e}");
}

proptest! {
    #[test]
    fn never_panics_on_garbage(bytes in prop::collection::vec(any::<u8>(), 0..120)) {
        let _ = PacketKey::from_ip_packet(Direction::In, &bytes);
    }

    #[test]
    fn never_panics_on_damaged_packets(
        which in 0usize..2,
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        cut in any::<usize>(),
    ) {
        let mut p = if which == 0 { v4_tcp() } else { v6_with_exts(17, &[1, 2, 3, 4, 0, 8, 0, 0]) };
        for (i, x) in flips {
            let n = p.len();
            p[i % n] ^= x;
        }
        let n = p.len();
        p.truncate(cut % (n + 1));
        let _ = PacketKey::from_ip_packet(Direction::Out, &p);
    }
}
