//! Byte-vector tests for `wire::hip`, assembled by hand field by field from the figures of
//! RFC 7401 §5.1–5.2, RFC 7402 §5.1 and RFC 8046 §4 (each test names its figure), plus round-trip
//! property tests. tests/hip_tshark.rs checks the same codec against Wireshark's dissector.

use super::*;
use crate::error::WireError;
use proptest::prelude::*;
use std::net::{IpAddr, Ipv6Addr};

const HIT_I: [u8; 16] = [0x20, 0x01, 0x00, 0x21, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
const HIT_R: [u8; 16] = [0x20, 0x01, 0x00, 0x21, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf, 1, 2, 3, 4, 5, 6];

/// §5.1 Figure: Next Header 59, Header Length 5 ((5 + 1) × 8 = 48 octets), 0 bit, Packet Type
/// I1, Version 2, RES 0, fixed 1, Checksum 0, Controls 0, the two HITs; then §5.2.6
/// DH_GROUP_LIST (511) with three groups (7, 8, 11) and one octet of padding.
fn i1_bytes() -> Vec<u8> {
    let mut v = vec![59, 5, 0x01, 0x21, 0, 0, 0, 0];
    v.extend_from_slice(&HIT_I);
    v.extend_from_slice(&HIT_R);
    v.extend_from_slice(&[0x01, 0xff, 0x00, 0x03, 7, 8, 11, 0]);
    v
}

#[test]
fn header_fields_from_figure() {
    let b = i1_bytes();
    let p = Packet::new_checked(&b[..]).unwrap();
    assert_eq!(p.next_header(), 59);
    assert_eq!(p.header_length(), 5);
    assert_eq!(p.len(), 48);
    assert_eq!(p.packet_type(), PacketType::I1);
    assert_eq!(p.version(), 2);
    assert_eq!(p.controls(), 0);
    assert_eq!(p.sender_hit(), HIT_I);
    assert_eq!(p.receiver_hit(), HIT_R);
    let params: Vec<_> = p.params().collect::<Result<_, _>>().unwrap();
    assert_eq!(params.len(), 1);
    assert_eq!(params[0].param_type, ParamType::DH_GROUP_LIST);
    assert!(params[0].is_critical());
    assert_eq!(params[0].offset, 40);
    assert_eq!(params[0].contents, &[7, 8, 11]);
    let groups = p.get::<DhGroupList>().unwrap().unwrap().groups;
    assert_eq!(groups, [DhGroupId::NIST_P256, DhGroupId::NIST_P384, DhGroupId::MODP_2048]);
    assert_eq!(p.get::<Seq>(), Ok(None));
    assert_eq!(p.get::<HostId>(), Ok(None));
    let m = Message::parse(&b).unwrap();
    let want = Message::new(Header::new(PacketType::I1, HIT_I, HIT_R)).with(DhGroupList {
        groups: vec![DhGroupId::NIST_P256, DhGroupId::NIST_P384, DhGroupId::MODP_2048],
    });
    assert_eq!(m, want);
    assert_eq!(want.to_vec().unwrap(), b);
}

#[test]
fn header_errors_name_the_field() {
    let b = i1_bytes();
    let e = Packet::new_checked(&b[..39]).unwrap_err();
    assert_eq!(e, WireError::Truncated { what: "hip header", len: 39, need: 40 });
    let mut x = b.clone();
    x[1] = 6; // 56 octets claimed, 48 present
    assert_eq!(
        Packet::new_checked(&x[..]).unwrap_err(),
        WireError::BadLength { what: "hip header length", value: 56 }
    );
    x[1] = 3; // 32 octets: shorter than the fixed header
    assert_eq!(
        Packet::new_checked(&x[..]).unwrap_err(),
        WireError::BadLength { what: "hip header length", value: 32 }
    );
    let mut x = b.clone();
    x[3] = 0x11;
    assert_eq!(
        Packet::new_checked(&x[..]).unwrap_err(),
        WireError::BadValue { what: "hip version", value: 1 }
    );
    let mut x = b.clone();
    x[3] = 0x20;
    assert_eq!(
        Packet::new_checked(&x[..]).unwrap_err(),
        WireError::BadValue { what: "hip fixed bit 1", value: 0 }
    );
    let mut x = b.clone();
    x[2] |= 0x80;
    assert_eq!(
        Packet::new_checked(&x[..]).unwrap_err(),
        WireError::BadValue { what: "hip fixed bit 0", value: 1 }
    );
    // Bytes past the Header Length are not part of the packet.
    let mut long = b.clone();
    long.extend_from_slice(&[0xff; 8]);
    assert_eq!(Packet::new_checked(&long[..]).unwrap().as_bytes(), &b[..]);
}

#[test]
fn params_refuse_misorder_and_overrun() {
    // SEQ (385) after ACK (449): out of order (§5.2.1).
    let mut b = i1_bytes()[..40].to_vec();
    b.extend_from_slice(&[0x01, 0xc1, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0]);
    b.extend_from_slice(&[0x01, 0x81, 0, 4, 0, 0, 0, 2, 0, 0, 0, 0]);
    b.truncate(40 + 8);
    b.extend_from_slice(&[0x01, 0x81, 0, 4, 0, 0, 0, 2]);
    b[1] = (b.len() / 8 - 1) as u8;
    let p = Packet::new_checked(&b[..]).unwrap();
    let got: Vec<_> = p.params().collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1], Err(WireError::BadValue { what: "parameter order", value: 385 }));
    assert!(Message::parse(&b).is_err());
    // A Length that runs past the packet.
    let mut b = i1_bytes();
    b[43] = 9;
    let p = Packet::new_checked(&b[..]).unwrap();
    assert_eq!(
        p.params().next().unwrap(),
        Err(WireError::BadLength { what: "parameter length", value: 9 })
    );
    // Equal types may repeat (two ESP_INFO in an UPDATE).
    let e = EspInfo { keymat_index: 0, old_spi: 1, new_spi: 2 };
    let m = Message::new(Header::new(PacketType::UPDATE, HIT_I, HIT_R))
        .with(e)
        .with(EspInfo { new_spi: 3, ..e })
        .with(Seq { update_id: 9 });
    assert_eq!(Message::parse(&m.to_vec().unwrap()).unwrap(), m);
    let spis: Vec<u32> = m.find_all::<EspInfo>().map(|x| x.new_spi).collect();
    assert_eq!(spis, [2, 3]);
    assert_eq!(m.find::<Seq>(), Some(&Seq { update_id: 9 }));
    assert_eq!(m.find::<Ack>(), None);
    assert_eq!(m.get(ParamType::SEQ), Some(&Param::Seq(Seq { update_id: 9 })));
    // And the builder refuses what the parser refuses.
    let bad = Message::new(Header::new(PacketType::UPDATE, HIT_I, HIT_R))
        .with(Ack { update_ids: vec![1] })
        .with(Seq { update_id: 2 });
    assert_eq!(bad.to_vec(), Err(WireError::BadValue { what: "parameter order", value: 385 }));
}

fn tlv(p: &impl ParamRepr) -> Vec<u8> {
    p.to_vec().unwrap()
}

fn round<P: ParamRepr + PartialEq + std::fmt::Debug>(p: P, want: &[u8]) {
    assert_eq!(tlv(&p), want);
    let raw = Params::new(want).next().unwrap().unwrap();
    assert_eq!(P::from_raw(&raw).unwrap(), p);
}

#[test]
fn fixed_size_params_from_figures() {
    // RFC 7402 §5.1.1: Type 65, Length 12, Reserved, KEYMAT Index, OLD SPI, NEW SPI; 16 octets.
    round(
        EspInfo { keymat_index: 0x40, old_spi: 0, new_spi: 0x1122_3344 },
        &[0, 65, 0, 12, 0, 0, 0, 0x40, 0, 0, 0, 0, 0x11, 0x22, 0x33, 0x44],
    );
    // §5.2.3: Type 129, Length 12, Reserved (4), counter (8).
    round(R1Counter { counter: 7 }, &[0, 129, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
    // §5.2.16: Type 385, Length 4, Update ID, padding 4.
    round(Seq { update_id: 0xdead_beef }, &[1, 0x81, 0, 4, 0xde, 0xad, 0xbe, 0xef]);
}

#[test]
fn puzzle_and_solution_from_figures() {
    // §5.2.4: #K 10, Lifetime 37 (2^5 s), Opaque 0x0102, #I of RHASH_len/8 = 32 octets
    // (SHA-256); Length 36, no padding (40 octets).
    let i: Vec<u8> = (0..32).collect();
    let mut want = vec![0x01, 0x01, 0, 36, 10, 37, 1, 2];
    want.extend_from_slice(&i);
    round(Puzzle { k: 10, lifetime: 37, opaque: 0x0102, i: i.clone() }, &want);
    // §5.2.5: #K, Reserved, Opaque, #I, #J; Length 4 + 2 × 32 = 68, no padding (72).
    let j = vec![0xaa; 32];
    let mut want = vec![0x01, 0x41, 0, 68, 10, 0, 1, 2];
    want.extend_from_slice(&i);
    want.extend_from_slice(&j);
    round(Solution { k: 10, opaque: 0x0102, i, j }, &want);
    // An odd #I/#J area cannot be split.
    assert_eq!(
        Solution::parse(&[1, 0, 0, 0, 9]),
        Err(WireError::BadLength { what: "SOLUTION #I/#J", value: 1 })
    );
}

#[test]
fn diffie_hellman_and_lists_from_figures() {
    // §5.2.7: Group ID 7, Public Value Length 65, an uncompressed P-256 point; Length 68.
    let pv = [4u8; 65];
    let mut want = vec![0x02, 0x01, 0, 68, 7, 0, 65];
    want.extend_from_slice(&pv);
    round(DiffieHellman::new(DhGroupId::NIST_P256, pv.to_vec()), &want);
    // Two values (§5.2.7 allows two); a third is refused.
    let two = DiffieHellman {
        values: vec![
            DhPublicValue { group: DhGroupId::NIST_P256, public_value: vec![1, 2] },
            DhPublicValue { group: DhGroupId::MODP_2048, public_value: vec![3] },
        ],
    };
    round(two, &[0x02, 0x01, 0, 9, 7, 0, 2, 1, 2, 11, 0, 1, 3, 0, 0, 0]);
    assert_eq!(
        DiffieHellman::parse(&[7, 0, 0, 8, 0, 0, 9, 0, 0]),
        Err(WireError::BadLength { what: "DIFFIE_HELLMAN length", value: 3 })
    );
    assert!(DiffieHellman::parse(&[7, 0, 5, 1]).is_err());
    // §5.2.8: Cipher IDs 4, 2, 1 (16 bits each), Length 6, padding 6.
    round(
        HipCipher {
            ciphers: vec![CipherId::AES_256_CBC, CipherId::AES_128_CBC, CipherId::NULL_ENCRYPT],
        },
        &[0x02, 0x43, 0, 6, 0, 4, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0],
    );
    // §5.2.10: suite IDs in the high nibble: 2 → 0x20, 1 → 0x10.
    round(
        HitSuiteList { suites: vec![HitSuiteId::ECDSA_SHA384, HitSuiteId::RSA_DSA_SHA256] },
        &[0x02, 0xcb, 0, 2, 0x20, 0x10, 0, 0],
    );
    assert_eq!(
        HitSuiteList::parse(&[0x21]),
        Err(WireError::BadValue { what: "HIT_SUITE_LIST ID", value: 0x21 })
    );
    // §5.2.11: TF type ESP_TRANSFORM (4095).
    round(
        TransportFormatList { formats: vec![ParamType::ESP_TRANSFORM] },
        &[0x08, 0x01, 0, 2, 0x0f, 0xff, 0, 0],
    );
    // RFC 7402 §5.1.2: Reserved, Suite IDs 9, 8; Length 6.
    round(
        EspTransform {
            suites: vec![EspSuite::AES_256_CBC_HMAC_SHA256, EspSuite::AES_128_CBC_HMAC_SHA256],
        },
        &[0x0f, 0xff, 0, 6, 0, 0, 0, 9, 0, 8, 0, 0, 0, 0, 0, 0],
    );
    // §5.2.17: ACK with two peer Update IDs.
    round(Ack { update_ids: vec![1, 2] }, &[0x01, 0xc1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0]);
    assert!(Ack::parse(&[0, 0, 1]).is_err());
}

#[test]
fn host_id_from_figure() {
    // §5.2.9: HI Length 66 (ECC Curve 1 = P-256, then a 64-octet public key), DI-type 1 (FQDN),
    // DI Length 11, Algorithm 7 (ECDSA). HI Length does not count the Algorithm field.
    let mut hi = vec![0, 1];
    hi.extend_from_slice(&[0x55; 64]);
    let h = HostId {
        algorithm: HiAlgorithm::ECDSA,
        host_identity: hi.clone(),
        di_type: DiType::FQDN,
        domain_identifier: b"example.org".to_vec(),
    };
    let mut want = vec![0x02, 0xc1, 0, 6 + 66 + 11, 0, 66, 0x10, 11, 0, 7];
    want.extend_from_slice(&hi);
    want.extend_from_slice(b"example.org");
    want.push(0);
    assert_eq!(h.curve(), Some(EcdsaCurve::NIST_P256.0));
    assert_eq!(h.ecc_public_key(), Some(&[0x55; 64][..]));
    round(h, &want);
    // A DI Length past the Contents.
    assert_eq!(
        HostId::parse(&[0, 1, 0x10, 5, 0, 7, 0xaa, b'x']),
        Err(WireError::Truncated { what: "HOST_ID domain identifier", len: 1, need: 5 })
    );
}

#[test]
fn locator_set_from_rfc8046_figure() {
    // RFC 8046 §4: Traffic Type 0, Locator Type 0, Locator Length 4, P set, Lifetime 600,
    // IPv6 address; then Type 1 (SPI + address), Length 5, not preferred.
    let a: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let b: Ipv6Addr = "2001:db8::2".parse().unwrap();
    let set = LocatorSet {
        locators: vec![
            LocatorEntry {
                traffic_type: TrafficType::BOTH,
                preferred: true,
                lifetime: 600,
                locator: Locator::Address(a),
            },
            LocatorEntry {
                traffic_type: TrafficType::DATA,
                preferred: false,
                lifetime: 60,
                locator: Locator::EspSpiAddress { spi: 0x0102_0304, address: b },
            },
        ],
    };
    let mut want = vec![0x00, 0xc1, 0, 52, 0, 0, 4, 1, 0, 0, 2, 0x58];
    want.extend_from_slice(&a.octets());
    want.extend_from_slice(&[2, 1, 5, 0, 0, 0, 0, 60, 1, 2, 3, 4]);
    want.extend_from_slice(&b.octets());
    round(set, &want);
    // Type 0 with a Locator Length other than 4.
    let mut bad = vec![0, 0, 5, 0, 0, 0, 0, 0];
    bad.extend_from_slice(&[0; 20]);
    assert_eq!(
        LocatorSet::parse(&bad),
        Err(WireError::BadLength { what: "LOCATOR_SET locator length", value: 5 })
    );
    // An unknown type passes through.
    let other = LocatorSet::parse(&[1, 9, 1, 0, 0, 0, 0, 1, 0xa, 0xb, 0xc, 0xd]).unwrap();
    assert_eq!(
        other.locators[0].locator,
        Locator::Other { locator_type: LocatorType(9), data: vec![0xa, 0xb, 0xc, 0xd] }
    );
}

#[test]
fn opaque_and_signature_params_from_figures() {
    // §5.2.19: Reserved, Notify Message Type 14 (NO_DH_PROPOSAL_CHOSEN), data: the DH list.
    round(
        Notification { notify_type: NotifyType::NO_DH_PROPOSAL_CHOSEN, data: vec![7, 11] },
        &[0x03, 0x40, 0, 6, 0, 0, 0, 14, 7, 11, 0, 0, 0, 0, 0, 0],
    );
    // §5.2.14: SIG alg 7, signature; Length 2 + 4.
    round(
        HipSignature { algorithm: HiAlgorithm::ECDSA, signature: vec![1, 2, 3, 4] },
        &[0xf1, 0x01, 0, 6, 0, 7, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0],
    );
    // §5.2.18: Reserved (4), IV + data kept opaque (here a 16-octet IV and 16 octets).
    let enc = Encrypted { iv_and_data: (0..32).collect() };
    let (iv, ct) = enc.split(16).unwrap();
    assert_eq!((iv.len(), ct[0]), (16, 16));
    assert!(enc.split(33).is_err());
    let mut want = vec![0x02, 0x81, 0, 36, 0, 0, 0, 0];
    want.extend(0..32u8);
    round(enc, &want);
    // §5.2.21 and §5.2.23: the unsigned echoes and their numbers (63661, 63425).
    round(EchoRequestUnsigned { data: vec![9; 3] }, &[0xf8, 0xad, 0, 3, 9, 9, 9, 0]);
    round(EchoResponseUnsigned { data: vec![9; 4] }, &[0xf7, 0xc1, 0, 4, 9, 9, 9, 9]);
    round(HipMac { mac: vec![0xee; 4] }, &[0xf0, 0x41, 0, 4, 0xee, 0xee, 0xee, 0xee]);
    round(HipMac2 { mac: vec![] }, &[0xf0, 0x81, 0, 0, 0, 0, 0, 0]);
}

/// RFC 1071 the slow way, for the known-answer test.
fn naive_checksum(chunks: &[&[u8]]) -> u16 {
    let all: Vec<u8> = chunks.concat();
    let mut sum: u32 = 0;
    for w in all.chunks(2) {
        let hi = u32::from(w[0]) << 8;
        let lo = w.get(1).map_or(0, |b| u32::from(*b));
        sum += hi | lo;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[test]
fn checksum_known_answer() {
    let src: IpAddr = "2001:db8::1".parse().unwrap();
    let dst: IpAddr = "2001:db8::2".parse().unwrap();
    let mut b = i1_bytes();
    let mut ph = Vec::new();
    if let (IpAddr::V6(s), IpAddr::V6(d)) = (src, dst) {
        ph.extend_from_slice(&s.octets());
        ph.extend_from_slice(&d.octets());
    }
    ph.extend_from_slice(&(b.len() as u32).to_be_bytes());
    ph.extend_from_slice(&[0, 0, 0, 139]);
    let want = naive_checksum(&[&ph, &b]);
    assert_eq!(compute_checksum(src, dst, &b), want);
    fill_checksum(src, dst, &mut b).unwrap();
    assert_eq!(u16::from_be_bytes([b[4], b[5]]), want);
    assert!(verify_checksum(src, dst, &b));
    assert!(Packet::new_checked(&b[..]).unwrap().verify_checksum(src, dst));
    // The checksum field itself does not feed compute_checksum.
    assert_eq!(compute_checksum(src, dst, &b), want);
    // Any flipped bit, or other addresses, fail.
    for bit in [0usize, 13, 8 * 20 + 3, 8 * 47 + 7] {
        let mut x = b.clone();
        x[bit / 8] ^= 1 << (bit % 8);
        assert!(!verify_checksum(src, dst, &x), "bit {bit}");
    }
    let other: IpAddr = "2001:db8::3".parse().unwrap();
    assert!(!verify_checksum(src, other, &b));
    // IPv4 pseudo-header: src, dst, zero, protocol 139, length (16 bits).
    let s4: IpAddr = "192.0.2.1".parse().unwrap();
    let d4: IpAddr = "192.0.2.2".parse().unwrap();
    let mut ph4 = vec![192, 0, 2, 1, 192, 0, 2, 2, 0, 139];
    ph4.extend_from_slice(&(b.len() as u16).to_be_bytes());
    assert_eq!(compute_checksum(s4, d4, &b), naive_checksum(&[&ph4, &b[..4], &b[6..]]));
    fill_checksum(s4, d4, &mut b).unwrap();
    assert!(verify_checksum(s4, d4, &b));
    assert!(fill_checksum(s4, d4, &mut [0; 39]).is_err());
}

fn r1_like() -> Message {
    Message::new(Header::new(PacketType::R1, HIT_R, HIT_I))
        .with(R1Counter { counter: 3 })
        .with(Puzzle { k: 8, lifetime: 37, opaque: 0x1234, i: vec![0x77; 32] })
        .with(DiffieHellman::new(DhGroupId::NIST_P256, vec![4; 65]))
        .with(HipCipher { ciphers: vec![CipherId::AES_128_CBC] })
        .with(HostId {
            algorithm: HiAlgorithm::ECDSA,
            host_identity: vec![0, 1, 9, 9],
            di_type: DiType::NONE,
            domain_identifier: vec![],
        })
        .with(HitSuiteList { suites: vec![HitSuiteId::ECDSA_SHA384] })
        .with(TransportFormatList { formats: vec![ParamType::ESP_TRANSFORM] })
        .with(HipSignature2 { algorithm: HiAlgorithm::ECDSA, signature: vec![5; 64] })
        .with(EchoRequestUnsigned { data: vec![1, 2, 3] })
}

#[test]
fn signed_portion_covers_up_to_the_signature() {
    let m = r1_like();
    let full = m.to_vec().unwrap();
    let part = m.to_vec_before(ParamType::HIP_SIGNATURE_2).unwrap();
    let sig_at = Packet::new_checked(&full[..])
        .unwrap()
        .find(ParamType::HIP_SIGNATURE_2)
        .unwrap()
        .unwrap()
        .offset;
    assert_eq!(part.len(), sig_at);
    assert_eq!(usize::from(part[1]), sig_at / 8 - 1);
    assert_eq!(&part[2..], &full[2..sig_at]);
    // The received-packet path gives the same bytes, whatever the checksum was.
    let mut sent = full.clone();
    let (a, b): (IpAddr, IpAddr) = ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap());
    fill_checksum(a, b, &mut sent).unwrap();
    let p = Packet::new_checked(&sent[..]).unwrap();
    assert_eq!(p.to_vec_before(ParamType::HIP_SIGNATURE_2).unwrap(), part);
    // Asking for a type beyond every parameter covers the whole packet.
    assert_eq!(m.to_vec_before(ParamType(u16::MAX)).unwrap(), full);
    // HIP_SIGNATURE_2 zeroes the Receiver's HIT and PUZZLE's Opaque and #I (§5.2.15).
    let mut z = part.clone();
    zero_for_signature_2(&mut z).unwrap();
    let mut m0 = m.clone();
    m0.header.receiver_hit = [0; 16];
    if let Some(Param::Puzzle(pz)) = m0.params.get_mut(1) {
        pz.opaque = 0;
        pz.i = vec![0; 32];
    }
    assert_eq!(z, m0.to_vec_before(ParamType::HIP_SIGNATURE_2).unwrap());
    // HIP_MAC_2 (§5.2.13): the R2 with the sender's HOST_ID inserted in type order.
    let r2 = Message::new(Header::new(PacketType::R2, HIT_R, HIT_I))
        .with(EspInfo { keymat_index: 0, old_spi: 0, new_spi: 5 })
        .with(HipMac2 { mac: vec![1; 32] })
        .with(HipSignature { algorithm: HiAlgorithm::ECDSA, signature: vec![2; 64] });
    let mut with_hi = r2.clone();
    with_hi.params.insert(1, m.params[4].clone());
    let mac_input = with_hi.to_vec_before(ParamType::HIP_MAC_2).unwrap();
    assert_eq!(mac_input.len(), 40 + 16 + m.params[4].buffer_len());
}

#[test]
fn emit_checks_sizes() {
    let m = Message::new(Header::new(PacketType::NOTIFY, HIT_I, HIT_R))
        .with(Notification { notify_type: NotifyType::INVALID_SYNTAX, data: vec![0; 2010] });
    assert_eq!(
        m.to_vec().err(),
        Some(WireError::BadLength { what: "hip packet length", value: 2064 })
    );
    // 2004 octets of contents fill the largest packet exactly: (255 + 1) × 8.
    let mut fits = m.clone();
    if let Some(Param::Notification(n)) = fits.params.get_mut(0) {
        n.data.truncate(2000);
    }
    assert_eq!(fits.to_vec().map(|v| (v.len(), v[1])), Ok((2048, 255)));
    let mut short = vec![0; 10];
    assert!(Seq { update_id: 1 }.emit(&mut short).is_err());
    assert!(Solution { k: 1, opaque: 0, i: vec![1], j: vec![] }.to_vec().is_err());
    assert!(DiffieHellman { values: vec![] }.to_vec().is_err());
    let mut h = Header::new(PacketType(0x80), HIT_I, HIT_R);
    assert!(Message::new(h).to_vec().is_err());
    h.packet_type = PacketType::CLOSE;
    assert_eq!(Message::new(h).to_vec().unwrap().len(), 40);
}

fn any_param() -> impl Strategy<Value = Param> {
    let bytes = |n| prop::collection::vec(any::<u8>(), 0..n);
    let v6 = any::<[u8; 16]>().prop_map(Ipv6Addr::from);
    let entry = (
        any::<u8>(),
        any::<bool>(),
        any::<u32>(),
        prop_oneof![
            v6.clone().prop_map(Locator::Address),
            (any::<u32>(), v6).prop_map(|(spi, address)| Locator::EspSpiAddress { spi, address }),
            (2u8.., prop::collection::vec(any::<[u8; 4]>(), 0..4)).prop_map(|(t, d)| {
                Locator::Other { locator_type: LocatorType(t), data: d.concat() }
            }),
        ],
    )
        .prop_map(|(t, preferred, lifetime, locator)| LocatorEntry {
            traffic_type: TrafficType(t),
            preferred,
            lifetime,
            locator,
        });
    let dh = (any::<u8>(), bytes(100))
        .prop_map(|(g, public_value)| DhPublicValue { group: DhGroupId(g), public_value });
    prop_oneof![
        (any::<u16>(), any::<u32>(), any::<u32>()).prop_map(|(keymat_index, old_spi, new_spi)| {
            EspInfo { keymat_index, old_spi, new_spi }.into()
        }),
        any::<u64>().prop_map(|counter| R1Counter { counter }.into()),
        prop::collection::vec(entry, 0..4).prop_map(|locators| LocatorSet { locators }.into()),
        (any::<u8>(), any::<u8>(), any::<u16>(), bytes(40))
            .prop_map(|(k, lifetime, opaque, i)| Puzzle { k, lifetime, opaque, i }.into()),
        (any::<u8>(), any::<u16>(), bytes(40)).prop_map(|(k, opaque, i)| {
            let j = i.iter().map(|b| b ^ 0x5a).collect();
            Solution { k, opaque, i, j }.into()
        }),
        any::<u32>().prop_map(|update_id| Seq { update_id }.into()),
        prop::collection::vec(any::<u32>(), 0..5).prop_map(|update_ids| Ack { update_ids }.into()),
        bytes(8)
            .prop_map(|g| DhGroupList { groups: g.into_iter().map(DhGroupId).collect() }.into()),
        prop::collection::vec(dh, 1..=2).prop_map(|values| DiffieHellman { values }.into()),
        prop::collection::vec(any::<u16>(), 0..5)
            .prop_map(|c| HipCipher { ciphers: c.into_iter().map(CipherId).collect() }.into()),
        bytes(64).prop_map(|iv_and_data| Encrypted { iv_and_data }.into()),
        (any::<u16>(), bytes(80), 0u8..16, bytes(30)).prop_map(|(a, hi, t, di)| {
            HostId {
                algorithm: HiAlgorithm(a),
                host_identity: hi,
                di_type: DiType(t),
                domain_identifier: di,
            }
            .into()
        }),
        prop::collection::vec(0u8..16, 0..5)
            .prop_map(|s| HitSuiteList { suites: s.into_iter().map(HitSuiteId).collect() }.into()),
        (any::<u16>(), bytes(20)).prop_map(|(t, data)| Notification {
            notify_type: NotifyType(t),
            data
        }
        .into()),
        bytes(20).prop_map(|data| EchoRequestSigned { data }.into()),
        bytes(20).prop_map(|data| EchoResponseSigned { data }.into()),
        prop::collection::vec(any::<u16>(), 0..4).prop_map(|f| {
            TransportFormatList { formats: f.into_iter().map(ParamType).collect() }.into()
        }),
        prop::collection::vec(any::<u16>(), 0..6)
            .prop_map(|s| EspTransform { suites: s.into_iter().map(EspSuite).collect() }.into()),
        bytes(64).prop_map(|mac| HipMac { mac }.into()),
        bytes(64).prop_map(|mac| HipMac2 { mac }.into()),
        (any::<u16>(), bytes(80)).prop_map(|(a, signature)| {
            HipSignature2 { algorithm: HiAlgorithm(a), signature }.into()
        }),
        (any::<u16>(), bytes(80)).prop_map(|(a, signature)| HipSignature {
            algorithm: HiAlgorithm(a),
            signature
        }
        .into()),
        bytes(20).prop_map(|data| EchoRequestUnsigned { data }.into()),
        bytes(20).prop_map(|data| EchoResponseUnsigned { data }.into()),
        (1000u16..2000, bytes(30)).prop_map(|(t, contents)| Param::raw(ParamType(t), contents)),
    ]
}

proptest! {
    /// repr → emit → parse gives the same repr, for every parameter type, and a whole message
    /// of them (sorted as §5.2.1 wants) round-trips too.
    #[test]
    fn param_round_trip(mut ps in prop::collection::vec(any_param(), 0..8), t in 1u8..20) {
        for p in &ps {
            let mut v = vec![0; p.buffer_len()];
            p.emit(&mut v).unwrap();
            prop_assert_eq!(v.len() % 8, 0);
            let raw = Params::new(&v).next().unwrap().unwrap();
            prop_assert_eq!(&Param::from_raw(&raw).unwrap(), p);
        }
        ps.sort_by_key(Param::param_type);
        let m = Message { header: Header::new(PacketType(t), HIT_I, HIT_R), params: ps };
        if let Ok(bytes) = m.to_vec() {
            prop_assert_eq!(Message::parse(&bytes).unwrap(), m.clone());
            prop_assert_eq!(parse_params(&bytes[40..]).unwrap(), m.params.clone());
            prop_assert_eq!(emit_params(&m.params).unwrap(), bytes[40..].to_vec());
        } else {
            prop_assert!(m.buffer_len() > MAX_PACKET_LEN);
        }
    }

    /// Views never panic on arbitrary bytes, and whatever parses re-emits to bytes that parse
    /// to the same repr (what the hip_packet fuzz target checks at scale).
    #[test]
    fn arbitrary_bytes(body in prop::collection::vec(any::<u8>(), 0..300), hdr in any::<bool>()) {
        let mut b = body.clone();
        if hdr {
            b = i1_bytes()[..40].to_vec();
            b.extend_from_slice(&body[..body.len() / 8 * 8]);
            b[1] = (b.len() / 8 - 1) as u8;
        }
        if let Ok(p) = Packet::new_checked(&b[..]) {
            let _ = (p.packet_type(), p.checksum(), p.params().count(), p.find(ParamType::HOST_ID));
            let _ = p.to_vec_before(ParamType::HIP_MAC);
        }
        for raw in Params::new(&body).flatten() {
            let _ = Param::from_raw(&raw);
        }
        if let Ok(m) = Message::parse(&b) {
            prop_assert_eq!(Message::parse(&m.to_vec().unwrap()).unwrap(), m);
        }
    }
}
