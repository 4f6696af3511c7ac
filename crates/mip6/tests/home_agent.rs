//! Every path through the home agent's Binding Update processing (RFC 6275 §9.5.1, §10.3.1,
//! §10.3.2; RFC 3776 §4.1, §5): accepted, updated, de-registered, each BA status, each silent
//! drop, the Binding Error for unsupported messages, and the counters.

use std::net::Ipv6Addr;

use ipsec::{Spi, Time};
use mip6::*;
use wire::mip6::{
    BaStatus, BeStatus, BindingUpdate, Body, Message, MhPacket, MobilityOption, RoutingHeader2,
    TestInit,
};

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap_or(Ipv6Addr::UNSPECIFIED)
}
fn ha_addr() -> Ipv6Addr {
    a("2001:db8:1::1")
}
fn home() -> Ipv6Addr {
    a("2001:db8:1::100")
}
fn coa() -> Ipv6Addr {
    a("2001:db8:2::7")
}
fn sa_for(h: Ipv6Addr) -> Option<SaIdentity> {
    Some(SaIdentity { spi: Spi(0x4000), home_address: h })
}

fn agent(capacity: usize) -> HomeAgent {
    HomeAgent::new(HomeAgentConfig {
        address: ha_addr(),
        home_prefix: a("2001:db8:1::"),
        home_prefix_len: 64,
        max_lifetime_units: 150,
        capacity,
    })
}

fn bu(sequence: u16, lifetime: u16) -> BindingUpdate {
    BindingUpdate {
        sequence,
        acknowledge: true,
        home_registration: true,
        lifetime,
        ..BindingUpdate::default()
    }
}

/// Sends `b` from `src` with a Home Address option naming `h`, in `sa`.
fn send(
    ha: &mut HomeAgent,
    b: &BindingUpdate,
    src: Ipv6Addr,
    h: Ipv6Addr,
    sa: Option<SaIdentity>,
    now: Time,
) -> Decision {
    let mh = Message::new(Body::BindingUpdate(b.clone()))
        .to_vec_with_checksum(h, ha_addr())
        .unwrap_or_default();
    let m = InboundMh { src, dst: ha_addr(), home_address_option: Some(h), sa, mh: &mh };
    ha.handle(&m, now)
}

fn t(s: u64) -> Time {
    Time::from_secs(s)
}

/// The BA in a reply: checks the routing header and checksum (§6.1.1, §6.4) and returns it.
fn ba_of(reply: &Outgoing, h: Ipv6Addr) -> wire::mip6::BindingAck {
    assert_eq!(reply.src, ha_addr());
    assert_eq!(reply.extension, Extension::RoutingHeader2(h));
    let rh = reply.extension_bytes(135).unwrap_or_default();
    assert_eq!(RoutingHeader2::parse(&rh).ok().map(|r| r.home_address), Some(h));
    let p = MhPacket::new_checked(&reply.mh[..]).ok();
    assert!(p.is_some_and(|p| p.verify_checksum(ha_addr(), h)));
    match Message::parse(&reply.mh).map(|m| m.body) {
        Ok(Body::BindingAck(ba)) => ba,
        other => panic!("not a BA: {other:?}"),
    }
}

#[test]
fn register_refresh_move_and_deregister() {
    let mut ha = agent(10);
    let Decision::Accepted { change: BindingChange::Created(b), reply: Some(r) } =
        send(&mut ha, &bu(10, 100), coa(), home(), sa_for(home()), t(100))
    else {
        panic!("not accepted")
    };
    assert_eq!((b.home_address, b.care_of_address, b.sequence), (home(), coa(), 10));
    assert_eq!(b.spi, Spi(0x4000));
    assert_eq!(b.expires, t(500));
    let ba = ba_of(&r, home());
    assert_eq!((ba.status, ba.sequence, ba.lifetime), (BaStatus::ACCEPTED, 10, 100));
    assert_eq!(r.dst, coa());

    // A longer lifetime than the cap is shortened to 150 units (§10.3.1).
    let d = send(&mut ha, &bu(11, 1000), coa(), home(), sa_for(home()), t(200));
    let Decision::Accepted { change: BindingChange::Updated { old, new }, reply: Some(r) } = d
    else {
        panic!("{d:?}")
    };
    assert_eq!((old.sequence, new.sequence, new.expires), (10, 11, t(800)));
    assert_eq!(ba_of(&r, home()).lifetime, 150);

    // A move through the Alternate Care-of Address option (§6.2.5) from another source.
    let mut m = bu(12, 50);
    m.options.push(MobilityOption::AlternateCareOfAddress(a("2001:db8:3::9")));
    let d = send(&mut ha, &m, coa(), home(), sa_for(home()), t(300));
    assert!(matches!(d, Decision::Accepted { change: BindingChange::Updated { .. }, .. }));
    assert_eq!(
        ha.cache().get(&home(), t(300)).map(|b| b.care_of_address),
        Some(a("2001:db8:3::9"))
    );

    // A flag clear: accepted without a BA.
    let mut quiet = bu(13, 50);
    quiet.acknowledge = false;
    let d = send(&mut ha, &quiet, coa(), home(), sa_for(home()), t(301));
    assert!(matches!(d, Decision::Accepted { reply: None, .. }));

    // Lifetime 0 de-registers (§10.3.2); a second one finds nothing and is refused with 133
    // (see `rfc_cases.rs`).
    let d = send(&mut ha, &bu(14, 0), coa(), home(), sa_for(home()), t(302));
    let Decision::Accepted { change: BindingChange::Deleted(gone), reply: Some(r) } = d else {
        panic!("{d:?}")
    };
    assert_eq!(gone.sequence, 13);
    assert_eq!(ba_of(&r, home()).lifetime, 0);
    assert!(ha.cache().is_empty());
    let d = send(&mut ha, &bu(15, 0), coa(), home(), sa_for(home()), t(303));
    assert!(matches!(d, Decision::Rejected { reason: Refusal::NothingToDeregister, .. }));
    let c = ha.counters();
    assert_eq!((c.created, c.updated, c.deregistered, c.refused_total()), (1, 3, 1, 1));
}

#[test]
fn deregistration_from_home_with_care_of_equal_home() {
    let mut ha = agent(10);
    send(&mut ha, &bu(1, 100), coa(), home(), sa_for(home()), t(1));
    // Back home: sent from the home address, no Home Address option (§11.5.4, §10.3.2).
    let mh = Message::new(Body::BindingUpdate(bu(2, 100)))
        .to_vec_with_checksum(home(), ha_addr())
        .unwrap_or_default();
    let m = InboundMh {
        src: home(),
        dst: ha_addr(),
        home_address_option: None,
        sa: sa_for(home()),
        mh: &mh,
    };
    let d = ha.handle(&m, t(2));
    let Decision::Accepted { change: BindingChange::Deleted(_), reply: Some(r) } = d else {
        panic!("{d:?}")
    };
    assert_eq!((r.dst, r.extension), (home(), Extension::None));
    assert!(ha.cache().is_empty());
}

#[test]
fn sequence_out_of_window_carries_last_accepted() {
    let mut ha = agent(10);
    send(&mut ha, &bu(0xfffe, 100), coa(), home(), sa_for(home()), t(1));
    for (seq, ok) in
        [(0xfffe, false), (0x7ffe, false), (0xffff, true), (0, true), (0xffff, false), (5, true)]
    {
        let d = send(&mut ha, &bu(seq, 100), coa(), home(), sa_for(home()), t(2));
        match d {
            Decision::Accepted { .. } => assert!(ok, "seq {seq} accepted"),
            Decision::Rejected { reason: Refusal::OutOfWindow, reply } => {
                assert!(!ok, "seq {seq} refused");
                let ba = ba_of(&reply, home());
                assert_eq!(ba.status, BaStatus::SEQUENCE_NUMBER_OUT_OF_WINDOW);
                let last = ha.cache().get(&home(), t(2)).map(|b| b.sequence);
                assert_eq!(Some(ba.sequence), last);
            }
            other => panic!("seq {seq}: {other:?}"),
        }
    }
    assert_eq!(ha.counters().refused(Refusal::OutOfWindow), 3);
    // After expiry there is no last number to compare with: any sequence registers.
    ha.expire(t(10_000));
    assert!(matches!(
        send(&mut ha, &bu(1, 100), coa(), home(), sa_for(home()), t(10_001)),
        Decision::Accepted { .. }
    ));
}

#[test]
fn rejection_statuses() {
    let mut ha = agent(1);
    ha.serve_only([home(), a("2001:db8:1::200")]);
    let status = |d: &Decision| match d {
        Decision::Rejected { reply, .. } => Some(ba_of(reply, reply_home(reply)).status),
        _ => None,
    };
    fn reply_home(r: &Outgoing) -> Ipv6Addr {
        match r.extension {
            Extension::RoutingHeader2(h) => h,
            _ => r.dst,
        }
    }
    let mut not_h = bu(1, 100);
    not_h.home_registration = false;
    let d = send(&mut ha, &not_h, coa(), home(), sa_for(home()), t(1));
    assert_eq!(status(&d), Some(BaStatus::HOME_REGISTRATION_NOT_SUPPORTED));
    let off = a("2001:db8:9::100");
    let d = send(&mut ha, &bu(1, 100), coa(), off, sa_for(off), t(1));
    assert_eq!(status(&d), Some(BaStatus::NOT_HOME_SUBNET));
    let other = a("2001:db8:1::300");
    let d = send(&mut ha, &bu(1, 100), coa(), other, sa_for(other), t(1));
    assert_eq!(status(&d), Some(BaStatus::NOT_HOME_AGENT_FOR_THIS_MOBILE_NODE));
    assert!(matches!(
        send(&mut ha, &bu(1, 100), coa(), home(), sa_for(home()), t(1)),
        Decision::Accepted { .. }
    ));
    // Capacity 1: a second mobile node finds no room (130).
    let second = a("2001:db8:1::200");
    let d = send(&mut ha, &bu(1, 100), coa(), second, sa_for(second), t(1));
    assert_eq!(status(&d), Some(BaStatus::INSUFFICIENT_RESOURCES));
    // Each rejection echoes the BU's sequence number and leaves the cache alone.
    assert_eq!(ha.cache().len(), 1);
    let c = ha.counters();
    for r in [
        Refusal::NotHomeRegistration,
        Refusal::NotHomeSubnet,
        Refusal::NotHomeAgentForThisMobileNode,
        Refusal::InsufficientResources,
    ] {
        assert_eq!(c.refused(r), 1, "{r}");
        assert_eq!(
            r.ba_status().map(|s| s.0),
            Some(match r {
                Refusal::NotHomeRegistration => 131,
                Refusal::NotHomeSubnet => 132,
                Refusal::NotHomeAgentForThisMobileNode => 133,
                _ => 130,
            })
        );
    }
}

#[test]
fn rfc3776_sa_check_and_silent_drops() {
    let mut ha = agent(10);
    send(&mut ha, &bu(1, 100), coa(), home(), sa_for(home()), t(1));
    let before: Vec<Binding> = ha.cache().iter().collect();
    // In the clear.
    let d = send(&mut ha, &bu(2, 100), a("2001:db8:6::6"), home(), None, t(2));
    assert_eq!(d, Decision::Dropped(Refusal::Unprotected));
    // In another mobile node's SA, claiming this home address.
    let d =
        send(&mut ha, &bu(2, 100), a("2001:db8:6::6"), home(), sa_for(a("2001:db8:1::200")), t(2));
    assert_eq!(d, Decision::Dropped(Refusal::WrongSa));
    // A multicast care-of address.
    let d = send(&mut ha, &bu(2, 100), a("ff02::1"), home(), sa_for(home()), t(2));
    assert_eq!(d, Decision::Dropped(Refusal::BadCareOf));
    // Bad checksum: computed for the care-of address instead of the home address (§6.1.1).
    let mh = Message::new(Body::BindingUpdate(bu(2, 100)))
        .to_vec_with_checksum(coa(), ha_addr())
        .unwrap_or_default();
    let m = InboundMh {
        src: coa(),
        dst: ha_addr(),
        home_address_option: Some(home()),
        sa: sa_for(home()),
        mh: &mh,
    };
    assert_eq!(ha.handle(&m, t(2)), Decision::Dropped(Refusal::BadChecksum));
    // Malformed: truncated and a bad option length.
    let m = InboundMh { mh: &mh[..7], ..m };
    assert_eq!(ha.handle(&m, t(2)), Decision::Dropped(Refusal::Malformed));
    // A BA sent to the home agent is ignored.
    let ack = Message::new(Body::BindingAck(wire::mip6::BindingAck::default()))
        .to_vec_with_checksum(home(), ha_addr())
        .unwrap_or_default();
    let m = InboundMh { mh: &ack, ..m };
    assert_eq!(ha.handle(&m, t(2)), Decision::Dropped(Refusal::NotForHomeAgent));
    assert_eq!(ha.cache().iter().collect::<Vec<_>>(), before);
    let c = ha.counters();
    for r in [
        Refusal::Unprotected,
        Refusal::WrongSa,
        Refusal::BadCareOf,
        Refusal::BadChecksum,
        Refusal::Malformed,
        Refusal::NotForHomeAgent,
    ] {
        assert_eq!(c.refused(r), 1, "{r}");
        assert!(r.is_silent());
    }
}

#[test]
fn return_routability_is_answered_unsupported() {
    let mut ha = agent(10);
    let hoti = Message::new(Body::HomeTestInit(TestInit { cookie: [1; 8], options: vec![] }));
    let unknown = Message::new(Body::Unknown { mh_type: wire::mip6::MhType(42), data: vec![0; 2] });
    let brr = Message::new(Body::BindingRefreshRequest(vec![]));
    for m in [hoti, unknown, brr] {
        let mh = m.to_vec_with_checksum(home(), ha_addr()).unwrap_or_default();
        let inb =
            InboundMh { src: home(), dst: ha_addr(), home_address_option: None, sa: None, mh: &mh };
        let Decision::Rejected { reason: Refusal::UnsupportedMessage, reply } =
            ha.handle(&inb, t(1))
        else {
            panic!("not answered")
        };
        let Ok(Body::BindingError(be)) = Message::parse(&reply.mh).map(|m| m.body) else {
            panic!()
        };
        assert_eq!(be.status, BeStatus::UNRECOGNIZED_MH_TYPE);
        assert_eq!(reply.dst, home());
    }
    assert_eq!(ha.counters().refused(Refusal::UnsupportedMessage), 3);
}

#[test]
fn expiry_through_the_home_agent() {
    let mut ha = agent(10);
    send(&mut ha, &bu(1, 1), coa(), home(), sa_for(home()), t(100));
    let other = a("2001:db8:1::200");
    send(&mut ha, &bu(1, 2), coa(), other, sa_for(other), t(100));
    assert!(ha.expire(t(103)).is_empty());
    assert_eq!(ha.cache().get(&home(), t(104)), None, "expired entries are not looked up");
    let gone = ha.expire(t(104));
    assert_eq!(gone.iter().map(|b| b.home_address).collect::<Vec<_>>(), vec![home()]);
    assert_eq!(ha.expire(t(200)).len(), 1);
    assert_eq!(ha.counters().expired, 2);
}

#[test]
fn batch_gives_the_same_decisions_as_one_by_one() {
    use mip6::workload;
    let mut w1 = workload::Workload::new(50, t(1));
    let mut w2 = w1.clone();
    let mut ups = w1.prepare_updates(40);
    let _ = w2.prepare_updates(40);
    ups.push(ups[0].clone()); // a replay: out of window in both
    let one: Vec<bool> = ups.iter().map(|u| w1.apply(u, t(2))).collect();
    let accepted = w2.apply_batch(&ups, t(2));
    assert_eq!(one.iter().filter(|a| **a).count(), accepted);
    assert_eq!(accepted, 40);
    assert_eq!(w1.home_agent.counters(), w2.home_agent.counters());
    let snap = |w: &workload::Workload| {
        let mut v: Vec<Binding> = w.home_agent.cache().iter().collect();
        v.sort_by_key(|b| b.home_address);
        v
    };
    assert_eq!(snap(&w1), snap(&w2));
}
