//! The mobile node against the home agent through function calls on a virtual clock (RFC 6275
//! §11.7.1, §11.7.3, §11.8): register, refresh before the lifetime runs out, move,
//! retransmit with back-off, resynchronise after status 135, de-register.

use std::net::Ipv6Addr;

use ipsec::{Spi, Time};
use mip6::*;
use wire::mip6::{BaStatus, BindingAck, Body, DestinationOptions, Message};

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap_or(Ipv6Addr::UNSPECIFIED)
}
const HOME: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0x100);
const HA: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);

fn pair(first_seq: u16) -> (HomeAgent, MobileNode) {
    let ha = HomeAgent::new(HomeAgentConfig {
        address: HA,
        home_prefix: a("2001:db8:1::"),
        home_prefix_len: 64,
        max_lifetime_units: 100,
        capacity: 10,
    });
    let cfg = MobileNodeConfig { home_address: HOME, home_agent: HA, lifetime_units: 150 };
    (ha, MobileNode::new(cfg, a("2001:db8:2::7"), first_seq))
}

/// One BU through the home agent (in the mobile node's SA) and the BA back to the node.
fn exchange(ha: &mut HomeAgent, mn: &mut MobileNode, bu: &Outgoing, now: Time) -> AckOutcome {
    let hao = match bu.extension {
        Extension::HomeAddressOption(h) => Some(h),
        _ => None,
    };
    let sa = Some(SaIdentity { spi: Spi(0x500), home_address: HOME });
    let m = InboundMh { src: bu.src, dst: bu.dst, home_address_option: hao, sa, mh: &bu.mh };
    match ha.handle(&m, now) {
        Decision::Accepted { reply: Some(r), .. } | Decision::Rejected { reply: r, .. } => {
            assert_eq!(r.dst, bu.src);
            mn.on_binding_ack(r.src, HOME, &r.mh)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn register_refresh_move_deregister() {
    let (mut ha, mut mn) = pair(7);
    let t0 = Time::from_secs(100);
    assert_eq!(mn.deadline(), Some(Time(0)), "a new node registers at once");
    let bu = mn.poll(t0).and_then(Result::ok).unwrap_or_else(|| panic!("no BU"));
    // Sent from the care-of address with a Home Address option (§11.7.1).
    assert_eq!(
        (bu.src, bu.dst, bu.extension),
        (a("2001:db8:2::7"), HA, Extension::HomeAddressOption(HOME))
    );
    let ext = bu.extension_bytes(50).unwrap_or_default();
    assert_eq!(
        DestinationOptions::parse(&ext).ok().and_then(|(d, _)| d.find_home_address()),
        Some(HOME)
    );
    let Ok(Body::BindingUpdate(b)) = Message::parse(&bu.mh).map(|m| m.body) else { panic!() };
    assert!(b.acknowledge && b.home_registration && b.sequence == 7 && b.lifetime == 150);
    // The home agent caps 150 units to 100 (400 s); the node refreshes at 3/4 of that.
    let AckOutcome::Registered(r) = exchange(&mut ha, &mut mn, &bu, t0) else { panic!() };
    assert_eq!(
        (r.lifetime_units, r.expires, r.refresh_at),
        (100, t0.plus_secs(400), t0.plus_secs(300))
    );
    assert_eq!(mn.deadline(), Some(t0.plus_secs(300)));
    assert!(mn.poll(t0.plus_secs(299)).is_none());
    let t1 = t0.plus_secs(300);
    let bu = mn.poll(t1).and_then(Result::ok).unwrap_or_else(|| panic!("no refresh"));
    assert_eq!(mn.pending_sequence(), Some(8));
    assert!(matches!(exchange(&mut ha, &mut mn, &bu, t1), AckOutcome::Registered(_)));
    // A move registers the new care-of address at once.
    let bu = mn.move_to(a("2001:db8:3::9"), t1.plus_secs(1)).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(exchange(&mut ha, &mut mn, &bu, t1.plus_secs(1)), AckOutcome::Registered(_)));
    assert_eq!(
        ha.cache().get(&HOME, t1.plus_secs(1)).map(|b| b.care_of_address),
        Some(a("2001:db8:3::9"))
    );
    // De-registration.
    let bu = mn.deregister(t1.plus_secs(2)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(exchange(&mut ha, &mut mn, &bu, t1.plus_secs(2)), AckOutcome::Deregistered);
    assert!(ha.cache().is_empty());
    assert_eq!(mn.deadline(), None);
}

#[test]
fn retransmission_backs_off_with_new_sequence_numbers() {
    let (_, mut mn) = pair(1);
    let mut now = Time::from_secs(10);
    let mut seqs = Vec::new();
    let mut gaps = Vec::new();
    let mut last = now;
    for _ in 0..8 {
        let _ = mn.poll(now).and_then(Result::ok).unwrap_or_else(|| panic!("no BU"));
        seqs.push(mn.pending_sequence().unwrap_or_default());
        gaps.push(now.0 - last.0);
        last = now;
        now = mn.deadline().unwrap_or(now);
    }
    assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(
        &gaps[1..],
        &[1_500_000, 3_000_000, 6_000_000, 12_000_000, 24_000_000, 32_000_000, 32_000_000]
    );
}

#[test]
fn status_135_resynchronises_and_stale_acks_are_ignored() {
    let (mut ha, mut mn) = pair(500);
    let t0 = Time::from_secs(1);
    let bu = mn.poll(t0).and_then(Result::ok).unwrap_or_else(|| panic!());
    assert!(matches!(exchange(&mut ha, &mut mn, &bu, t0), AckOutcome::Registered(_)));
    // The node restarts with an old sequence number: the home agent answers 135 with 500.
    let (_, mut fresh) = pair(3);
    let bu = fresh.poll(t0).and_then(Result::ok).unwrap_or_else(|| panic!());
    assert_eq!(
        exchange(&mut ha, &mut fresh, &bu, t0),
        AckOutcome::Resynchronized { last_accepted: 500 }
    );
    assert_eq!(fresh.deadline(), Some(Time(0)));
    let bu = fresh.poll(t0).and_then(Result::ok).unwrap_or_else(|| panic!());
    assert_eq!(fresh.pending_sequence(), Some(501));
    assert!(matches!(exchange(&mut ha, &mut fresh, &bu, t0), AckOutcome::Registered(_)));
    // A BA with another sequence number, a wrong checksum, or from elsewhere is ignored.
    let bu = fresh.poll(Time::from_secs(10_000)).and_then(Result::ok).unwrap_or_else(|| panic!());
    let _ = bu;
    let ba = |seq| {
        let m = Message::new(Body::BindingAck(BindingAck {
            sequence: seq,
            lifetime: 5,
            ..BindingAck::default()
        }));
        m.to_vec_with_checksum(HA, HOME).unwrap_or_default()
    };
    assert_eq!(fresh.on_binding_ack(HA, HOME, &ba(9)), AckOutcome::Ignored);
    assert_eq!(fresh.on_binding_ack(a("2001:db8:1::2"), HOME, &ba(502)), AckOutcome::Ignored);
    let mut bad = ba(502);
    bad[9] ^= 1;
    assert_eq!(fresh.on_binding_ack(HA, HOME, &bad), AckOutcome::Ignored);
    assert!(matches!(fresh.on_binding_ack(HA, HOME, &ba(502)), AckOutcome::Registered(_)));
    // A rejection ends the attempt.
    let _ = fresh.poll(Time::from_secs(20_000));
    let seq = fresh.pending_sequence().unwrap_or_default();
    let m = Message::new(Body::BindingAck(BindingAck {
        status: BaStatus::NOT_HOME_SUBNET,
        sequence: seq,
        ..BindingAck::default()
    }));
    let rej = m.to_vec_with_checksum(HA, HOME).unwrap_or_default();
    assert_eq!(
        fresh.on_binding_ack(HA, HOME, &rej),
        AckOutcome::Rejected(BaStatus::NOT_HOME_SUBNET)
    );
    assert_eq!(fresh.deadline(), None);
}
