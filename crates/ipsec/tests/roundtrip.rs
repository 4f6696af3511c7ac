//! Round trips through two engines (sender outbound, receiver inbound) for every ESP suite and AH
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]
//! algorithm × tunnel/transport × IPv4/IPv6 × ESN, and AH+ESP bundles; proptest over payloads.
mod common;

use common::*;
use crypto::EspSuite;
use ipsec::engine::SaHandle;
use ipsec::{Engine, Mode, PacketBuf, Processed, Time};
use proptest::prelude::*;

fn pair(params: &[ipsec::SaParams]) -> (Engine, Engine, Vec<SaHandle>) {
    let mut tx = Engine::new(crypto::default_provider());
    let mut rx = Engine::new(crypto::default_provider());
    let mut hs = Vec::new();
    for p in params {
        hs.push(tx.add_outbound(p, Time(0)).unwrap());
        rx.add_inbound(p, Time(0)).unwrap();
    }
    (tx, rx, hs)
}

/// Seals `pkt` with the bundle, checks the wire form, opens it, and compares with the original.
fn round_trip(tx: &mut Engine, rx: &mut Engine, hs: &[SaHandle], pkt: &[u8], outer_proto: u8) {
    let mut buf = PacketBuf::with_max_packet();
    buf.load(pkt, ipsec::buf::DEFAULT_HEADROOM).unwrap();
    assert_eq!(
        tx.protect_with(hs, &mut buf, Time(1)),
        Ok(Processed::Protected { sa: hs[hs.len() - 1] })
    );
    let wire_form = buf.as_slice().to_vec();
    let l = wire::IpLayout::parse(&wire_form).expect("protected packet parses");
    assert_eq!(l.next_header, outer_proto);
    assert_eq!(l.total_len, wire_form.len());
    assert!(wire::ip::validate(&wire_form).is_ok());
    let r = rx.inbound(&mut buf, Time(2));
    assert!(matches!(r, Ok(Processed::Decapsulated { .. })), "{r:?}");
    assert_eq!(buf.as_slice(), pkt);
}

const MODES: [Mode; 2] = [Mode::Tunnel, Mode::Transport];

#[test]
fn every_esp_suite_mode_version_esn() {
    let mut cases = 0;
    for suite in EspSuite::all() {
        for mode in MODES {
            for v6 in [false, true] {
                for esn in [false, true] {
                    let p = esp_params(suite, mode, v6, esn, 0x1000);
                    let (mut tx, mut rx, hs) = pair(&[p]);
                    for (i, len) in [0usize, 1, 15, 16, 17, 200, 1400].into_iter().enumerate() {
                        let payload: Vec<u8> = (0..len).map(|x| (x * 7 + i) as u8).collect();
                        round_trip(&mut tx, &mut rx, &hs, &packet(v6, i % 2 == 0, &payload), 50);
                    }
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 10 * 2 * 2 * 2);
}

#[test]
fn every_ah_alg_mode_version_esn() {
    for integ in all_ah() {
        for mode in MODES {
            for v6 in [false, true] {
                for esn in [false, true] {
                    let p = ah_params(integ, mode, v6, esn, 0x2000);
                    let (mut tx, mut rx, hs) = pair(&[p]);
                    for len in [0usize, 3, 1000] {
                        round_trip(
                            &mut tx,
                            &mut rx,
                            &hs,
                            &packet(v6, len == 3, &vec![0xab; len]),
                            51,
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn tunnel_v4_in_v6_and_v6_in_v4() {
    for outer_v6 in [false, true] {
        let suite: EspSuite = "aes128gcm".parse().unwrap();
        let p = esp_params(suite, Mode::Tunnel, outer_v6, false, 0x3000);
        let (mut tx, mut rx, hs) = pair(&[p]);
        round_trip(&mut tx, &mut rx, &hs, &packet(!outer_v6, false, b"cross-family"), 50);
    }
}

#[test]
fn transport_sa_refuses_the_other_family() {
    let p = esp_params("aes128gcm".parse().unwrap(), Mode::Transport, true, false, 0x3100);
    let (mut tx, _rx, hs) = pair(&[p]);
    let mut buf = PacketBuf::with_max_packet();
    buf.load(&packet(false, false, b"v4 packet, v6 SA"), 128).unwrap();
    assert_eq!(tx.protect_with(&hs, &mut buf, Time(0)), Err(ipsec::DropReason::FamilyMismatch));
    assert_eq!(tx.counters().get(ipsec::DropReason::FamilyMismatch), 1);
}

#[test]
fn ah_plus_esp_bundle() {
    for v6 in [false, true] {
        for esp_mode in MODES {
            let esp = esp_params("aes256gcm".parse().unwrap(), esp_mode, v6, false, 0x4000);
            let ah = ah_params(
                crypto::IntegAlg::from_name("sha256").unwrap(),
                Mode::Transport,
                v6,
                false,
                0x4001,
            );
            let (mut tx, mut rx, hs) = pair(&[esp, ah]);
            // The inner packet's family must match the outer in transport mode.
            round_trip(&mut tx, &mut rx, &hs, &packet(v6, true, b"bundle"), 51);
        }
    }
}

#[test]
fn spd_protects_bypasses_and_discards() {
    use ipsec::spd::{Action, Prefix, Selector, SpdEntry};
    let p = esp_params("aes128gcm".parse().unwrap(), Mode::Tunnel, false, false, 0x5000);
    let (mut tx, mut rx, hs) = pair(&[p]);
    let any = Prefix::any(false);
    let sel =
        |proto, dports| Selector { src: any, dst: any, proto, src_ports: None, dst_ports: dports };
    tx.add_policy(SpdEntry { selector: sel(Some(6), None), action: Action::Bypass }).unwrap();
    tx.add_policy(SpdEntry {
        selector: sel(Some(17), Some((5001, 5001))),
        action: Action::Protect(vec![hs[0].0]),
    })
    .unwrap();
    tx.add_policy(SpdEntry { selector: sel(Some(17), Some((9, 9))), action: Action::Discard })
        .unwrap();
    let mut buf = PacketBuf::with_max_packet();
    let udp = packet(false, false, b"to 5001");
    buf.load(&udp, 128).unwrap();
    assert_eq!(tx.outbound(&mut buf, Time(0)), Ok(Processed::Protected { sa: hs[0] }));
    assert!(rx.inbound(&mut buf, Time(0)).is_ok());
    assert_eq!(buf.as_slice(), &udp[..]);
    buf.load(&packet(false, true, b"tcp"), 128).unwrap();
    assert_eq!(tx.outbound(&mut buf, Time(0)), Ok(Processed::Bypassed));
    // Port 9 hits discard; IPv6 hits nothing -> no_policy (fail closed).
    let mut discard = packet(false, false, b"x");
    discard[22..24].copy_from_slice(&9u16.to_be_bytes());
    buf.load(&discard, 128).unwrap();
    assert_eq!(tx.outbound(&mut buf, Time(0)), Err(ipsec::DropReason::PolicyDiscard));
    buf.load(&packet(true, false, b"v6"), 128).unwrap();
    assert_eq!(tx.outbound(&mut buf, Time(0)), Err(ipsec::DropReason::NoPolicy));
    assert_eq!(tx.counters().total(), 2);
    // A protect policy without SAs is refused, and an empty bundle never passes a packet.
    let empty = SpdEntry { selector: sel(None, None), action: Action::Protect(vec![]) };
    assert_eq!(tx.add_policy(empty), Err(ipsec::EngineError::EmptyBundle));
    buf.load(&udp, 128).unwrap();
    assert_eq!(tx.protect_with(&[], &mut buf, Time(0)), Err(ipsec::DropReason::NoSa));
    // SA removed: the policy still says protect, the packet is dropped, never sent in clear.
    tx.remove_outbound(hs[0]);
    buf.load(&udp, 128).unwrap();
    assert_eq!(tx.outbound(&mut buf, Time(0)), Err(ipsec::DropReason::NoSa));
    assert_eq!(tx.counters().get(ipsec::DropReason::NoSa), 2);
}

fn suites() -> impl Strategy<Value = EspSuite> {
    proptest::sample::select(EspSuite::all())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn esp_round_trips_any_payload(
        suite in suites(),
        tunnel in any::<bool>(),
        v6 in any::<bool>(),
        esn in any::<bool>(),
        tcp in any::<bool>(),
        payload in proptest::collection::vec(any::<u8>(), 0..1500),
    ) {
        let mode = if tunnel { Mode::Tunnel } else { Mode::Transport };
        let p = esp_params(suite, mode, v6, esn, 0x6000);
        let (mut tx, mut rx, hs) = pair(&[p]);
        let pkt = packet(v6, tcp, &payload);
        let mut buf = PacketBuf::with_max_packet();
        buf.load(&pkt, 128).unwrap();
        prop_assert_eq!(tx.protect_with(&hs, &mut buf, Time(0)), Ok(Processed::Protected { sa: hs[hs.len() - 1] }));
        prop_assert!(rx.inbound(&mut buf, Time(0)).is_ok());
        prop_assert_eq!(buf.as_slice(), &pkt[..]);
    }
}

#[test]
fn inbound_policy_checks_what_an_sa_may_carry() {
    use ipsec::spd::{Action, Prefix, Selector, SpdEntry};
    let a = esp_params("aes128gcm".parse().unwrap(), Mode::Tunnel, false, false, 0x7000);
    let b = esp_params("aes128gcm".parse().unwrap(), Mode::Tunnel, false, false, 0x7001);
    let mut tx = Engine::new(crypto::default_provider());
    let mut rx = Engine::new(crypto::default_provider());
    let ha = tx.add_outbound(&a, Time(0)).unwrap();
    let hb = tx.add_outbound(&b, Time(0)).unwrap();
    let ia = rx.add_inbound(&a, Time(0)).unwrap();
    let _ib = rx.add_inbound(&b, Time(0)).unwrap();
    // SA a may carry UDP from 10.1.0.0/16; SA b is allowed nothing; TCP may enter in clear.
    let sel = |proto| Selector {
        src: "10.1.0.0/16".parse::<Prefix>().unwrap(),
        dst: Prefix::any(false),
        proto: Some(proto),
        src_ports: None,
        dst_ports: None,
    };
    rx.add_inbound_policy(SpdEntry { selector: sel(17), action: Action::Protect(vec![ia.0]) })
        .unwrap();
    rx.add_inbound_policy(SpdEntry { selector: sel(6), action: Action::Bypass }).unwrap();
    assert_eq!(
        rx.add_inbound_policy(SpdEntry { selector: sel(1), action: Action::Protect(vec![9]) }),
        Err(ipsec::EngineError::UnknownSa(9))
    );
    let udp = packet(false, false, b"udp");
    let mut buf = PacketBuf::with_max_packet();
    buf.load(&udp, 128).unwrap();
    tx.protect_with(&[ha], &mut buf, Time(0)).unwrap();
    assert!(rx.inbound(&mut buf, Time(0)).is_ok());
    // The same traffic through SA b: authentic, but not traffic b may carry.
    buf.load(&udp, 128).unwrap();
    tx.protect_with(&[hb], &mut buf, Time(0)).unwrap();
    assert_eq!(rx.inbound(&mut buf, Time(0)), Err(ipsec::DropReason::InboundPolicyMismatch));
    // Cleartext: UDP from the protected range must not enter in clear; TCP may; IPv6 hits nothing.
    buf.load(&udp, 128).unwrap();
    assert_eq!(rx.check_clear(&buf), Err(ipsec::DropReason::InboundPolicyMismatch));
    buf.load(&packet(false, true, b"tcp"), 128).unwrap();
    assert_eq!(rx.check_clear(&buf), Ok(()));
    buf.load(&packet(true, true, b"v6"), 128).unwrap();
    assert_eq!(rx.check_clear(&buf), Err(ipsec::DropReason::NoPolicy));
    assert_eq!(rx.counters().get(ipsec::DropReason::InboundPolicyMismatch), 2);
}

/// The inbound check remembers its last verdict per SA (`Engine::inbound`): the memory must
/// follow every field the selectors read, and every change of the SPD. Fails if the memory
/// ignored the ports (the second packet would pass) or the SPD's generation (the packet after
/// the repoint would pass). Both inner families: an IPv4 flow is remembered in the SA's line
/// 1, an IPv6 one in line 3 (the `admitted` module), by different code.
#[test]
fn inbound_policy_memory_follows_the_flow_and_the_spd() {
    inbound_policy_memory(false);
    inbound_policy_memory(true);
}

fn inbound_policy_memory(v6: bool) {
    use etherparse::PacketBuilder;
    use ipsec::spd::{Action, Prefix, Selector, SpdEntry};
    let a = esp_params("aes128gcm".parse().unwrap(), Mode::Tunnel, false, false, 0x7100);
    let b = esp_params("aes128gcm".parse().unwrap(), Mode::Tunnel, false, false, 0x7101);
    let mut tx = Engine::new(crypto::default_provider());
    let mut rx = Engine::new(crypto::default_provider());
    let ha = tx.add_outbound(&a, Time(0)).unwrap();
    let ia = rx.add_inbound(&a, Time(0)).unwrap();
    let ib = rx.add_inbound(&b, Time(0)).unwrap();
    let (host, net) = if v6 {
        ("2001:db8:1::16/128", "2001:db8:1::/48")
    } else {
        ("10.1.0.16/32", "10.1.0.0/16")
    };
    let sel = |src: &str, dport: Option<(u16, u16)>| Selector {
        src: src.parse::<Prefix>().unwrap(),
        dst: Prefix::any(v6),
        proto: Some(17),
        src_ports: None,
        dst_ports: dport,
    };
    // First in order: one host's traffic to port 5002 belongs to SA b only.
    rx.set_inbound_policy(
        1,
        10,
        SpdEntry { selector: sel(host, Some((5002, 5002))), action: Action::Protect(vec![ib.0]) },
    )
    .unwrap();
    let wide = |h: usize| SpdEntry { selector: sel(net, None), action: Action::Protect(vec![h]) };
    rx.set_inbound_policy(2, 100, wide(ia.0)).unwrap();
    let udp = |dport: u16| {
        let mut out = Vec::new();
        let ip = if v6 {
            let src: std::net::Ipv6Addr = "2001:db8:1::16".parse().unwrap();
            let dst: std::net::Ipv6Addr = "2001:db8:2::32".parse().unwrap();
            PacketBuilder::ipv6(src.octets(), dst.octets(), 64)
        } else {
            PacketBuilder::ipv4([10, 1, 0, 16], [10, 2, 0, 32], 64)
        };
        ip.udp(40000, dport).write(&mut out, b"flow").unwrap();
        out
    };
    let mut buf = PacketBuf::with_max_packet();
    let mut through_a = |rx: &mut Engine, pkt: &[u8]| {
        buf.load(pkt, 128).unwrap();
        tx.protect_with(&[ha], &mut buf, Time(0)).unwrap();
        rx.inbound(&mut buf, Time(0)).map(|_| ())
    };
    let mismatch = Err(ipsec::DropReason::InboundPolicyMismatch);
    assert_eq!(through_a(&mut rx, &udp(5001)), Ok(()));
    assert_eq!(through_a(&mut rx, &udp(5001)), Ok(()));
    assert_eq!(through_a(&mut rx, &udp(5002)), mismatch, "the ports are part of the flow");
    assert_eq!(through_a(&mut rx, &udp(5001)), Ok(()));
    rx.set_inbound_policy(2, 100, wide(ib.0)).unwrap();
    assert_eq!(through_a(&mut rx, &udp(5001)), mismatch, "a changed SPD is looked up again");
    rx.set_inbound_policy(2, 100, wide(ia.0)).unwrap();
    assert_eq!(through_a(&mut rx, &udp(5001)), Ok(()));
    rx.remove_inbound_policy(2).unwrap();
    assert_eq!(through_a(&mut rx, &udp(5001)), mismatch, "no entry admits it any more");
}
