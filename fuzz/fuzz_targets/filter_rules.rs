//! Fuzz target for the filter crate: rule text through parse → emit → parse → compile →
//! classify (checked against the linear evaluator), and raw bytes through `from_ip_packet`.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use filter::{Classifier, Direction, LinearFilter, PacketKey, parse_rules};
use libfuzzer_sys::fuzz_target;

/// A few keys derived from the input bytes, plus fixed ones.
fn keys(data: &[u8]) -> Vec<PacketKey> {
    let mut out = vec![
        PacketKey::new(
            Direction::In,
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            6,
            1234,
            80,
        ),
        PacketKey::new(
            Direction::Out,
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            17,
            53,
            53,
        ),
    ];
    for chunk in data.chunks(13).take(8) {
        let mut b = [0u8; 13];
        b[..chunk.len()].copy_from_slice(chunk);
        let v4 = |o: usize| IpAddr::V4(Ipv4Addr::new(b[o], b[o + 1], b[o + 2], b[o + 3]));
        out.push(PacketKey {
            dir: if b[0] & 1 == 0 { Direction::In } else { Direction::Out },
            src: v4(1),
            dst: v4(5),
            proto: b[9],
            src_port: u16::from_be_bytes([b[10], b[11]]),
            dst_port: u16::from(b[12]) * 257,
            icmp_type: (b[9] == 1).then_some(b[12]),
        });
    }
    let rev: Vec<PacketKey> = out.iter().map(PacketKey::reversed).collect();
    out.extend(rev);
    out
}

fuzz_target!(|data: &[u8]| {
    // Packet parsing must never panic, whatever the bytes.
    let _ = PacketKey::from_ip_packet(Direction::In, data);

    let text = String::from_utf8_lossy(data);
    let Ok(rules) = parse_rules(&text) else {
        return;
    };
    // The canonical text parses back to the same rules.
    let emitted = rules.to_string();
    assert_eq!(parse_rules(&emitted).ok().as_ref(), Some(&rules), "round trip of {emitted:?}");

    let Ok(mut classifier) = Classifier::compile(&rules) else {
        return; // over the shape or entry cap: an explicit error, fine
    };
    let mut linear = LinearFilter::new(&rules);
    for k in keys(data) {
        assert_eq!(classifier.classify_uncached(&k), linear.evaluate(&k), "{k:?}");
        assert_eq!(classifier.classify(&k), linear.classify(&k), "{k:?}");
    }
});
