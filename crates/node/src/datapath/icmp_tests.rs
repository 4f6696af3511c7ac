//! Tests of `icmp`: the generated messages are read back with etherparse (fields and checksums).

use super::*;
use etherparse::{
    Icmpv4Header, Icmpv4Slice, Icmpv4Type, Icmpv6Slice, Icmpv6Type, Ipv4Header, Ipv4HeaderSlice,
    Ipv6HeaderSlice, PacketBuilder, icmpv4::DestUnreachableHeader,
};

const A4: [u8; 4] = [10, 0, 0, 1];
const B4: [u8; 4] = [10, 0, 0, 2];
const A6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const B6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// A UDP packet of `payload` bytes from A to B, with DF set when `df`.
fn udp4(payload: usize, df: bool) -> Vec<u8> {
    let mut p = Vec::new();
    PacketBuilder::ipv4(A4, B4, 64).udp(5000, 9).write(&mut p, &vec![0x5a; payload]).unwrap();
    let (mut h, _) = Ipv4Header::from_slice(&p).unwrap();
    h.dont_fragment = df;
    h.header_checksum = h.calc_header_checksum();
    p[..20].copy_from_slice(&h.to_bytes());
    p
}

fn udp6(payload: usize) -> Vec<u8> {
    let mut p = Vec::new();
    PacketBuilder::ipv6(A6, B6, 64).udp(5000, 9).write(&mut p, &vec![0x5a; payload]).unwrap();
    p
}

#[test]
fn needs_too_big_only_for_df_v4_and_any_v6() {
    assert!(needs_too_big(&udp4(1480, true), 1436));
    assert!(!needs_too_big(&udp4(1480, false), 1436), "IPv4 without DF is fragmented");
    assert!(!needs_too_big(&udp4(1400, true), 1436), "fits");
    assert!(needs_too_big(&udp6(1452), 1436));
    assert!(!needs_too_big(&udp6(1300), 1436));
    assert!(!needs_too_big(&[0u8; 2000], 1436), "not IP");
}

#[test]
fn v4_fragmentation_needed_fields_and_checksums() {
    let orig = udp4(1480, true);
    let mut out = [0u8; 1500];
    let n = too_big(&orig, 1436, &mut out).unwrap();
    assert_eq!(n, 576, "RFC 1812 §4.3.2.3: as much as fits in 576 bytes");
    let ip = Ipv4HeaderSlice::from_slice(&out[..n]).unwrap();
    assert_eq!((ip.source(), ip.destination()), (B4, A4), "from the original destination");
    assert_eq!(ip.protocol(), etherparse::IpNumber::ICMP);
    assert_eq!(ip.total_len() as usize, n);
    assert_eq!(ip.to_header().calc_header_checksum(), ip.header_checksum());
    let icmp = Icmpv4Slice::from_slice(&out[20..n]).unwrap();
    let want = Icmpv4Type::DestinationUnreachable(DestUnreachableHeader::FragmentationNeeded {
        next_hop_mtu: 1436,
    });
    assert_eq!(icmp.icmp_type(), want);
    let sum = Icmpv4Header::with_checksum(icmp.icmp_type(), icmp.payload()).checksum;
    assert_eq!(icmp.checksum(), sum);
    assert_eq!(icmp.payload(), &orig[..548], "the quote is the original packet's start");
    assert_eq!(wire::ip::internet_checksum(&out[20..n]), 0);
}

#[test]
fn v4_small_original_is_quoted_whole() {
    // A 100-byte packet over a (silly) 64-byte MTU: the whole packet fits in the quote.
    let orig = udp4(72, true);
    let mut out = [0u8; 1500];
    let n = too_big(&orig, 64, &mut out).unwrap();
    assert_eq!(n, 28 + orig.len());
    assert_eq!(&out[28..n], &orig[..]);
    assert!(too_big(&orig, 64, &mut [0u8; 100]).is_none(), "out too small");
}

#[test]
fn v6_packet_too_big_fields_and_checksum() {
    let orig = udp6(1452);
    let mut out = [0u8; 1500];
    let n = too_big(&orig, 1436, &mut out).unwrap();
    assert_eq!(n, 1280, "RFC 4443 §2.4 (c): up to the minimum IPv6 MTU");
    let ip = Ipv6HeaderSlice::from_slice(&out[..n]).unwrap();
    assert_eq!((ip.source(), ip.destination()), (B6, A6));
    assert_eq!(ip.next_header(), etherparse::IpNumber::IPV6_ICMP);
    assert_eq!(ip.payload_length() as usize, n - 40);
    let icmp = Icmpv6Slice::from_slice(&out[40..n]).unwrap();
    assert_eq!(icmp.icmp_type(), Icmpv6Type::PacketTooBig { mtu: 1436 });
    assert!(icmp.is_checksum_valid(B6, A6));
    assert_eq!(icmp.payload(), &orig[..1232]);
}

#[test]
fn never_about_icmp_errors() {
    let mut out = [0u8; 1500];
    // IPv4: a destination unreachable (type 3) with DF is not answered; an echo request is.
    let mut p = Vec::new();
    PacketBuilder::ipv4(A4, B4, 64).icmpv4_raw(3, 1, [0; 4]).write(&mut p, &[0; 1480]).unwrap();
    assert!(too_big(&p, 1436, &mut out).is_none());
    let mut p = Vec::new();
    PacketBuilder::ipv4(A4, B4, 64).icmpv4_echo_request(1, 1).write(&mut p, &[0; 1480]).unwrap();
    assert!(too_big(&p, 1436, &mut out).is_some());
    // IPv6: a packet too big (type 2) is not answered; an echo request (128) is.
    let mut p = Vec::new();
    PacketBuilder::ipv6(A6, B6, 64)
        .icmpv6(Icmpv6Type::PacketTooBig { mtu: 1280 })
        .write(&mut p, &[0; 1452])
        .unwrap();
    assert!(too_big(&p, 1436, &mut out).is_none());
    let mut p = Vec::new();
    PacketBuilder::ipv6(A6, B6, 64).icmpv6_echo_request(1, 1).write(&mut p, &[0; 1452]).unwrap();
    assert!(too_big(&p, 1436, &mut out).is_some());
}

#[test]
fn v6_icmp_error_behind_extension_header_is_found() {
    // Hop-by-hop options (8 bytes, next header ICMPv6) in front of a destination unreachable.
    let mut p = vec![0x60, 0, 0, 0, 0, 0, 0, 64];
    p.extend_from_slice(&A6);
    p.extend_from_slice(&B6);
    p.extend_from_slice(&[58, 0, 1, 4, 0, 0, 0, 0]);
    p.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
    p.resize(1500, 0);
    let len = (p.len() - 40) as u16;
    p[4..6].copy_from_slice(&len.to_be_bytes());
    assert!(too_big(&p, 1436, &mut [0u8; 1500]).is_none());
    p[48] = 128; // echo request: answered
    assert!(too_big(&p, 1436, &mut [0u8; 1500]).is_some());
}

#[test]
fn refusals() {
    let mut out = [0u8; 1500];
    // Non-first IPv4 fragment.
    let mut p = udp4(1480, false);
    p[7] = 10;
    assert!(too_big(&p, 1436, &mut out).is_none());
    // Multicast destination, unspecified source.
    let mut p = udp4(1480, true);
    p[16] = 239;
    assert!(too_big(&p, 1436, &mut out).is_none());
    let mut p = udp6(1452);
    p[8..24].fill(0);
    assert!(too_big(&p, 1436, &mut out).is_none());
    // Not IP, truncated.
    assert!(too_big(&[0x10; 40], 1436, &mut out).is_none());
    assert!(too_big(&[0x45, 0, 0], 1436, &mut out).is_none());
    assert!(too_big(&[0x60; 20], 1436, &mut out).is_none());
    assert!(too_big(&[], 1436, &mut out).is_none());
}
