//! Interop check of `wire::hip` against an independent implementation: Wireshark's HIP
//! dissector. Builds a whole base exchange (I1, R1, I2, R2), an UPDATE pair (LOCATOR_SET, SEQ,
//! ACK, ECHO), a NOTIFY and CLOSE/CLOSE_ACK between two IPv6 addresses with real checksums,
//! writes them as a pcap of raw IPv6 packets (linktype 101, next header 139) and asks tshark
//! for each packet's type, checksum status, parameter types and expert messages.
//!
//! tshark 4.0 predates parts of HIPv2: it calls R1_COUNTER (129), DH_GROUP_LIST (511) and
//! TRANSPORT_FORMAT_LIST (2049) "Unknown" (it still lists their type numbers) and reads HOST_ID
//! with the HIPv1 layout, warning "Unknown algorithm type" on an RFC 7401 ECDSA HOST_ID and
//! "Trailing stray characters" on the FQDN it then reads from the v1 offset. Those are accepted
//! by name; anything else it says, and any malformed packet, fails the test.

use std::net::{IpAddr, Ipv6Addr};
use std::process::Command;

use wire::hip::*;

const HIT_A: [u8; 16] = [0x20, 0x01, 0x00, 0x21, 0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const HIT_B: [u8; 16] = [0x20, 0x01, 0x00, 0x21, 0xbb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];

fn addr_a() -> Ipv6Addr {
    "2001:db8:1::a".parse().unwrap_or(Ipv6Addr::LOCALHOST)
}
fn addr_b() -> Ipv6Addr {
    "2001:db8:2::b".parse().unwrap_or(Ipv6Addr::LOCALHOST)
}

fn ecdsa_host_id(name: &str) -> HostId {
    let mut hi = EcdsaCurve::NIST_P256.0.to_be_bytes().to_vec();
    hi.push(4);
    hi.extend_from_slice(&[0x42; 64]);
    HostId {
        algorithm: HiAlgorithm::ECDSA,
        host_identity: hi,
        di_type: DiType::FQDN,
        domain_identifier: name.as_bytes().to_vec(),
    }
}

fn sig() -> HipSignature {
    HipSignature { algorithm: HiAlgorithm::ECDSA, signature: vec![0x5a; 64] }
}

fn mac() -> HipMac {
    HipMac { mac: vec![0x3c; 32] }
}

/// The exchange: (message, sent by A?).
fn exchange() -> Vec<(Message, bool)> {
    let from_a = |t| Header::new(t, HIT_A, HIT_B);
    let from_b = |t| Header::new(t, HIT_B, HIT_A);
    let i = vec![0x11; 32];
    let locator = |spi, lifetime, a| LocatorEntry {
        traffic_type: TrafficType::BOTH,
        preferred: spi == 0,
        lifetime,
        locator: if spi == 0 {
            Locator::Address(a)
        } else {
            Locator::EspSpiAddress { spi, address: a }
        },
    };
    // ENCRYPTED with NULL-ENCRYPT: no IV, the HOST_ID parameter in clear (§5.2.18).
    let encrypted_hi =
        emit_params(&[ecdsa_host_id("initiator.example").into()]).unwrap_or_default();
    vec![
        (
            Message::new(from_a(PacketType::I1))
                .with(DhGroupList { groups: vec![DhGroupId::NIST_P256, DhGroupId::MODP_2048] }),
            true,
        ),
        (
            Message::new(from_b(PacketType::R1))
                .with(R1Counter { counter: 1 })
                .with(Puzzle { k: 10, lifetime: 37, opaque: 0xbeef, i: i.clone() })
                .with(DhGroupList { groups: vec![DhGroupId::NIST_P256] })
                .with(DiffieHellman::new(DhGroupId::NIST_P256, vec![4; 65]))
                .with(HipCipher { ciphers: vec![CipherId::AES_128_CBC, CipherId::NULL_ENCRYPT] })
                .with(ecdsa_host_id("responder.example"))
                .with(HitSuiteList { suites: vec![HitSuiteId::RSA_DSA_SHA256] })
                .with(TransportFormatList { formats: vec![ParamType::ESP_TRANSFORM] })
                .with(EspTransform { suites: vec![EspSuite::AES_128_CBC_HMAC_SHA256] })
                .with(HipSignature2 { algorithm: HiAlgorithm::ECDSA, signature: vec![7; 64] })
                .with(EchoRequestUnsigned { data: vec![1, 2, 3, 4, 5] }),
            false,
        ),
        (
            Message::new(from_a(PacketType::I2))
                .with(EspInfo { keymat_index: 0, old_spi: 0, new_spi: 0x1000_0001 })
                .with(Solution { k: 10, opaque: 0xbeef, i, j: vec![0x22; 32] })
                .with(DiffieHellman::new(DhGroupId::NIST_P256, vec![4; 65]))
                .with(HipCipher { ciphers: vec![CipherId::NULL_ENCRYPT] })
                .with(Encrypted { iv_and_data: encrypted_hi })
                .with(TransportFormatList { formats: vec![ParamType::ESP_TRANSFORM] })
                .with(EspTransform { suites: vec![EspSuite::AES_128_CBC_HMAC_SHA256] })
                .with(mac())
                .with(sig())
                .with(EchoResponseUnsigned { data: vec![1, 2, 3, 4, 5] }),
            true,
        ),
        (
            Message::new(from_b(PacketType::R2))
                .with(EspInfo { keymat_index: 0, old_spi: 0, new_spi: 0x2000_0002 })
                .with(HipMac2 { mac: vec![0x3d; 32] })
                .with(sig()),
            false,
        ),
        (
            Message::new(from_a(PacketType::UPDATE))
                .with(EspInfo { keymat_index: 0, old_spi: 0x1000_0001, new_spi: 0x1000_0001 })
                .with(LocatorSet {
                    locators: vec![
                        locator(0, 600, addr_a()),
                        locator(0x1000_0001, 600, "2001:db8:3::a".parse().unwrap_or(addr_a())),
                    ],
                })
                .with(Seq { update_id: 1 })
                .with(EchoRequestSigned { data: vec![9; 8] })
                .with(mac())
                .with(sig()),
            true,
        ),
        (
            Message::new(from_b(PacketType::UPDATE))
                .with(Seq { update_id: 7 })
                .with(Ack { update_ids: vec![1] })
                .with(EchoResponseSigned { data: vec![9; 8] })
                .with(mac())
                .with(sig()),
            false,
        ),
        (
            Message::new(from_a(PacketType::UPDATE))
                .with(Ack { update_ids: vec![7] })
                .with(mac())
                .with(sig()),
            true,
        ),
        (
            Message::new(from_b(PacketType::NOTIFY))
                .with(Notification {
                    notify_type: NotifyType::NO_DH_PROPOSAL_CHOSEN,
                    data: vec![DhGroupId::NIST_P384.0],
                })
                .with(sig()),
            false,
        ),
        (
            Message::new(from_a(PacketType::CLOSE))
                .with(EchoRequestSigned { data: vec![8; 4] })
                .with(mac())
                .with(sig()),
            true,
        ),
        (
            Message::new(from_b(PacketType::CLOSE_ACK))
                .with(EchoResponseSigned { data: vec![8; 4] })
                .with(mac())
                .with(sig()),
            false,
        ),
    ]
}

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    p.extend_from_slice(&[IPPROTO_HIP, 64]);
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    p.extend_from_slice(payload);
    p
}

/// A classic pcap file (magic a1b2c3d4, version 2.4) of raw IP packets (LINKTYPE_RAW, 101).
fn pcap(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut f = Vec::new();
    for v in [0xa1b2_c3d4u32.to_le_bytes(), [2, 0, 4, 0], [0; 4], [0; 4]] {
        f.extend_from_slice(&v);
    }
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&101u32.to_le_bytes());
    for (n, p) in packets.iter().enumerate() {
        f.extend_from_slice(&(1_700_000_000u32 + n as u32).to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(p);
    }
    f
}

/// What tshark says about one packet.
#[derive(Debug)]
struct Dissected {
    packet_type: String,
    checksum_status: String,
    param_types: Vec<u16>,
    malformed: bool,
    experts: Vec<String>,
}

fn run_tshark(file: &std::path::Path) -> Option<Vec<Dissected>> {
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(file)
        .args(["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"])
        .args(["-e", "hip.packet_type", "-e", "hip.checksum.status", "-e", "hip.type"])
        .args(["-e", "_ws.malformed", "-e", "_ws.expert.message", "-e", "frame.protocols"])
        .output()
        .ok()?;
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let get = |i: usize| f.get(i).copied().unwrap_or_default().to_string();
            let split = |s: String| -> Vec<String> {
                s.split('|').filter(|x| !x.is_empty()).map(str::to_string).collect()
            };
            Dissected {
                packet_type: get(0),
                checksum_status: get(1),
                param_types: split(get(2)).iter().filter_map(|t| t.parse().ok()).collect(),
                malformed: !get(3).is_empty()
                    || get(4).contains("Malformed")
                    || get(5).contains("malformed"),
                experts: split(get(4)),
            }
        })
        .collect();
    Some(rows)
}

fn tshark_present() -> bool {
    Command::new("tshark").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn tshark_dissects_every_hip_packet() {
    if !tshark_present() {
        println!("SKIPPED: needs tshark");
        return;
    }
    let (a, b) = (addr_a(), addr_b());
    let mut packets = Vec::new();
    let mut want = Vec::new();
    for (m, from_a) in exchange() {
        let (src, dst) = if from_a { (a, b) } else { (b, a) };
        let mut hip = m.to_vec().unwrap_or_default();
        fill_checksum(IpAddr::V6(src), IpAddr::V6(dst), &mut hip).unwrap_or_default();
        assert!(verify_checksum(IpAddr::V6(src), IpAddr::V6(dst), &hip));
        // Our own parser reads back what we built.
        assert_eq!(Message::parse(&hip).ok().as_ref(), Some(&m));
        let types: Vec<u16> = m.params.iter().map(|p| p.param_type().0).collect();
        want.push((m.header.packet_type.0, "1", types));
        packets.push(ipv6(src, dst, &hip));
    }
    // The I1 again with one bit of the checksum flipped: tshark must call it Bad (0).
    let mut bad = packets[0].clone();
    bad[40 + 5] ^= 0x01;
    want.push((1, "0", want[0].2.clone()));
    packets.push(bad);
    // A CLOSE whose Header Length claims 8 octets more than the datagram holds: the control
    // case showing that a malformed packet is detected by this harness.
    let mut short = packets[packets.len() - 3].clone();
    short[40 + 1] += 1;
    packets.push(short);

    let dir = std::env::temp_dir().join(format!("hip_tshark_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_default();
    let file = dir.join("hip.pcap");
    std::fs::write(&file, pcap(&packets)).unwrap_or_default();
    let Some(rows) = run_tshark(&file) else {
        println!("SKIPPED: needs tshark");
        return;
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(rows.len(), packets.len(), "{rows:#?}");

    let allowed = ["Unknown algorithm type", "Bad checksum"];
    for (n, (row, (ty, status, types))) in rows.iter().zip(&want).enumerate() {
        println!("packet {}: {row:?}", n + 1);
        assert_eq!(row.packet_type, ty.to_string(), "packet {} type: {row:?}", n + 1);
        let good = if *status == "1" { ["1", "Good"] } else { ["0", "Bad"] };
        assert!(good.contains(&row.checksum_status.as_str()), "packet {} checksum: {row:?}", n + 1);
        assert_eq!(&row.param_types, types, "packet {} parameters: {row:?}", n + 1);
        assert!(!row.malformed, "packet {} malformed: {row:?}", n + 1);
        for e in &row.experts {
            // The v1 HOST_ID reading also fetches the FQDN 6 octets late (HIPv1 had no
            // Algorithm field before the HI), running into the padding: only with a HOST_ID.
            let v1_fqdn = types.contains(&ParamType::HOST_ID.0) && e.contains("Trailing stray");
            assert!(v1_fqdn || allowed.iter().any(|a| e.contains(a)), "packet {}: {e}", n + 1);
        }
        if *status == "0" {
            assert!(row.experts.iter().any(|e| e.contains("Bad checksum")), "{row:?}");
        }
    }
    println!("control: {:?}", rows.last());
    let control = rows.last().map(|r| r.malformed);
    assert_eq!(control, Some(true), "the truncated control packet must show as malformed");
}
