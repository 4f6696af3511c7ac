//! Byte-vector tests for the IP layout helpers.
use super::*;

// IPv4 UDP packet 192.0.2.1 -> 192.0.2.2, 4 bytes of data, TTL 64.
fn v4_udp() -> Vec<u8> {
    let mut p = vec![
        0x45, 0x00, 0x00, 0x20, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 192, 0, 2, 1, 192,
        0, 2, 2, // ipv4
        0x04, 0xd2, 0x16, 0x2e, 0x00, 0x0c, 0x00, 0x00, // udp
        1, 2, 3, 4,
    ];
    set_total_len(&mut p, IpVersion::V4).unwrap();
    p
}

// IPv6 with a hop-by-hop header (one PadN) and a destination options header, then UDP.
fn v6_ext() -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0, 0, 0, 0, 64];
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    p.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop -> dest opts, PadN(4)
    p.extend_from_slice(&[17, 0, 0x3e, 4, 9, 9, 9, 9]); // dest opts -> udp, mutable option 0x3e
    p.extend_from_slice(&[0x04, 0xd2, 0x16, 0x2e, 0x00, 0x0c, 0x00, 0x00, 1, 2, 3, 4]);
    set_total_len(&mut p, IpVersion::V6).unwrap();
    p
}

#[test]
fn v4_layout_and_checksum() {
    let p = v4_udp();
    let l = IpLayout::parse(&p).unwrap();
    assert_eq!(l.version, IpVersion::V4);
    assert_eq!((l.header_len, l.next_header, l.next_header_offset, l.total_len), (20, 17, 9, 32));
    assert!(!l.is_fragment);
    assert_eq!(internet_checksum(&p[..20]), 0, "header checksum must verify");
    assert!(validate(&p).is_ok());
}

#[test]
fn v6_layout_walks_extension_headers() {
    let p = v6_ext();
    let l = IpLayout::parse(&p).unwrap();
    assert_eq!((l.header_len, l.next_header, l.next_header_offset), (56, 17, 48));
    assert_eq!(l.total_len, p.len());
}

#[test]
fn rejects_garbage() {
    assert!(IpLayout::parse(&[]).is_err());
    assert!(IpLayout::parse(&[0x55; 40]).is_err());
    let mut p = v4_udp();
    p.truncate(25);
    assert!(IpLayout::parse(&p).is_err());
    let mut p = v6_ext();
    p[49] = 200; // destination options header claims 1608 bytes
    assert!(IpLayout::parse(&p).is_err());
}

#[test]
fn ah_mutable_fields_v4() {
    let p = v4_udp();
    let l = IpLayout::parse(&p).unwrap();
    let mut buf = [0u8; AH_MAX_HEADER];
    let z = ah_zero_mutable(&p, &l, &mut buf).unwrap();
    assert_eq!(z[8], 0, "ttl");
    assert_eq!(&z[10..12], &[0, 0], "checksum");
    assert_eq!(&z[6..8], &[0, 0], "flags");
    assert_eq!(&z[12..20], &p[12..20], "addresses are immutable");
}

#[test]
fn ah_mutable_fields_v6() {
    let mut p = v6_ext();
    p[1] = 0xab; // flow label
    let l = IpLayout::parse(&p).unwrap();
    let mut buf = [0u8; AH_MAX_HEADER];
    let z = ah_zero_mutable(&p, &l, &mut buf).unwrap();
    assert_eq!((z[0], z[1], z[7]), (0x60, 0, 0));
    assert_eq!(&z[52..56], &[0, 0, 0, 0], "mutable option data zeroed");
    assert_eq!(&z[42..44], &[1, 4], "PadN option type and length kept");
}

/// The plain RFC 1071 loop, the reference the fast sum is checked against.
fn reference_sum(data: &[u8], initial: u16) -> u16 {
    let mut sum = initial as u32;
    for c in data.chunks(2) {
        sum += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[test]
fn ones_complement_sum_rfc1071_example() {
    // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
    let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
    assert_eq!(ones_complement_sum(&d, 0), 0xddf2);
    assert_eq!(ones_complement_sum(&d[..7], 0), reference_sum(&d[..7], 0));
    assert_eq!(!ones_complement_sum(&v4_udp()[..20], 0), internet_checksum(&v4_udp()[..20]));
    // A region whose checksum field is right sums to 0xffff.
    assert_eq!(ones_complement_sum(&v4_udp()[..20], 0), 0xffff);
}

proptest::proptest! {
    #[test]
    fn ones_complement_sum_matches_reference(
        data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000),
        initial in proptest::prelude::any::<u16>(),
    ) {
        let fast = ones_complement_sum(&data, initial);
        let slow = reference_sum(&data, initial);
        // 0x0000 and 0xffff are the same number in ones' complement.
        proptest::prop_assert!(fast == slow || (fast | slow) == 0xffff && (fast & slow) == 0);
    }
}
