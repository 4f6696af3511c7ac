//! The home agent's answers where RFC 6275 names one for a case easily misread: a
//! de-registration with nothing to remove (§10.3.2), a Binding Update with the H bit clear for a
//! home address that holds a home registration (§9.5.1, §10.3.1), a Mobility Header whose
//! Payload Proto is not 59 (§6.1.1, §9.2), and Duplicate Address Detection before a home
//! address's first binding (§10.3.1). Each test quotes the sentence it checks.

use std::net::Ipv6Addr;

use ipsec::{Spi, Time};
use mip6::*;
use wire::mip6::{BaStatus, BindingUpdate, Body, Message, MhPacket, fill_checksum};

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
fn sa() -> Option<SaIdentity> {
    Some(SaIdentity { spi: Spi(0x4000), home_address: home() })
}
fn t(s: u64) -> Time {
    Time::from_secs(s)
}

fn agent() -> HomeAgent {
    HomeAgent::new(HomeAgentConfig {
        address: ha_addr(),
        home_prefix: a("2001:db8:1::"),
        home_prefix_len: 64,
        max_lifetime_units: 150,
        capacity: 2,
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

fn mh_of(b: &BindingUpdate) -> Vec<u8> {
    Message::new(Body::BindingUpdate(b.clone()))
        .to_vec_with_checksum(home(), ha_addr())
        .unwrap_or_default()
}

fn send_mh(ha: &mut HomeAgent, mh: &[u8], now: Time) -> Decision {
    let m =
        InboundMh { src: coa(), dst: ha_addr(), home_address_option: Some(home()), sa: sa(), mh };
    ha.handle(&m, now)
}

fn send(ha: &mut HomeAgent, b: &BindingUpdate, now: Time) -> Decision {
    send_mh(ha, &mh_of(b), now)
}

/// The status and sequence number of the BA in a reply (checksum verified, §6.1.1).
fn ba(reply: &Outgoing) -> (BaStatus, u16) {
    let ok =
        MhPacket::new_checked(&reply.mh[..]).is_ok_and(|p| p.verify_checksum(ha_addr(), home()));
    assert!(ok, "BA checksum");
    match Message::parse(&reply.mh).map(|m| m.body) {
        Ok(Body::BindingAck(b)) => (b.status, b.sequence),
        other => panic!("not a BA: {other:?}"),
    }
}

/// RFC 6275 §10.3.2: "To begin processing the Binding Update, the home agent MUST perform the
/// following test: If the receiving node has no entry marked as a home registration in its
/// Binding Cache for this mobile node, then this node MUST reject the Binding Update and SHOULD
/// return a Binding Acknowledgement to the mobile node, in which the Status field is set to 133
/// (not home agent for this mobile node)."
#[test]
fn deregistration_without_a_binding_is_refused_with_133() {
    for (what, b) in
        [("lifetime 0", bu(7, 0)), ("A clear", BindingUpdate { acknowledge: false, ..bu(7, 0) })]
    {
        let mut ha = agent();
        let d = send(&mut ha, &b, t(1));
        let Decision::Rejected { reason: Refusal::NothingToDeregister, reply } = d else {
            panic!("{what}: {d:?}")
        };
        // The SHOULD holds whatever the A bit says: the BA goes back, echoing the sequence.
        assert_eq!(ba(&reply), (BaStatus::NOT_HOME_AGENT_FOR_THIS_MOBILE_NODE, 7), "{what}");
        assert!(ha.cache().is_empty());
        assert_eq!(ha.counters().refused(Refusal::NothingToDeregister), 1);
        assert_eq!(ha.counters().deregistered, 0);
    }
    // Care-of address = home address is a de-registration too (§10.3.2), and is refused alike.
    let mut ha = agent();
    let b = bu(8, 100);
    let mh = mh_of(&b);
    let m = InboundMh { src: home(), dst: ha_addr(), home_address_option: None, sa: sa(), mh: &mh };
    let d = ha.handle(&m, t(1));
    assert!(matches!(d, Decision::Rejected { reason: Refusal::NothingToDeregister, .. }), "{d:?}");
    // With a binding, the same de-registration is accepted and removes it.
    let mut ha = agent();
    assert!(matches!(send(&mut ha, &bu(1, 100), t(1)), Decision::Accepted { .. }));
    let d = send(&mut ha, &bu(2, 0), t(2));
    assert!(matches!(d, Decision::Accepted { change: BindingChange::Deleted(_), .. }), "{d:?}");
}

/// RFC 6275 §6.1.8 lists status "139 Registration type change disallowed", and §9.5.1 has the
/// receiving node reject a Binding Update that would change a binding's type between a home
/// registration and a correspondent registration. §10.3.1's 131 ("If the node implements only
/// correspondent node functionality, or has not been configured to act as a home agent, then
/// the node MUST reject the Binding Update ... status field is set to 131 (home registration not
/// supported)") answers a home registration sent to a node that is no home agent: not this case.
/// A silent drop is what §9.5.1 prescribes for a correspondent registration that fails its
/// return-routability checks; but here the BU is authenticated by the mobile node's own SA, and
/// the answer that tells it what went wrong is 139, so that is what it gets. Without a home
/// registration the H-clear BU asks for route optimization, which this home agent does not
/// offer: 131, as before.
#[test]
fn h_bit_clear_over_a_home_registration_gets_139() {
    let mut ha = agent();
    assert!(matches!(send(&mut ha, &bu(1, 100), t(1)), Decision::Accepted { .. }));
    let before: Vec<Binding> = ha.cache().iter().collect();
    let not_h = BindingUpdate { home_registration: false, ..bu(2, 100) };
    let d = send(&mut ha, &not_h, t(2));
    let Decision::Rejected { reason: Refusal::RegistrationTypeChange, reply } = d else {
        panic!("{d:?}")
    };
    assert_eq!(ba(&reply), (BaStatus::REGISTRATION_TYPE_CHANGE_DISALLOWED, 2));
    assert_eq!(ha.cache().iter().collect::<Vec<_>>(), before, "the home registration stays");
    // Not for a home address without a binding: 131.
    let mut ha = agent();
    let d = send(&mut ha, &not_h, t(2));
    let Decision::Rejected { reason: Refusal::NotHomeRegistration, reply } = d else {
        panic!("{d:?}")
    };
    assert_eq!(ba(&reply).0, BaStatus::HOME_REGISTRATION_NOT_SUPPORTED);
}

/// RFC 6275 §6.1.1, Payload Proto: "Implementations conforming to this specification SHOULD
/// set the payload protocol type to IPPROTO_NONE (59 decimal)." §9.2: "The Payload Proto field
/// MUST be IPPROTO_NONE (59 decimal). Otherwise, the node MUST discard the message and SHOULD
/// send ICMP Parameter Problem, Code 0, directly to the Source Address of the packet".
#[test]
fn payload_proto_other_than_59_is_discarded() {
    let mut ha = agent();
    for proto in [6u8, 17, 58, 0] {
        let mut mh = mh_of(&bu(1, 100));
        mh[0] = proto;
        assert!(fill_checksum(home(), ha_addr(), &mut mh).is_ok());
        let d = send_mh(&mut ha, &mh, t(1));
        assert_eq!(d, Decision::Dropped(Refusal::BadPayloadProto), "payload proto {proto}");
    }
    assert!(ha.cache().is_empty(), "no binding registered");
    assert_eq!(ha.counters().refused(Refusal::BadPayloadProto), 4);
    assert!(Refusal::BadPayloadProto.is_silent());
    // The same BU with 59 registers.
    assert!(matches!(send(&mut ha, &bu(1, 100), t(1)), Decision::Accepted { .. }));
}

/// RFC 6275 §10.3.1: the home agent performs Duplicate Address Detection on the mobile node's
/// home address before it accepts the first home registration for it, and "If this Duplicate
/// Address Detection fails ..., then the home agent MUST reject the complete Binding Update and
/// MUST return a Binding Acknowledgement to the mobile node, in which the Status field is set to
/// 134 (Duplicate Address Detection failed)."
#[test]
fn dad_before_the_first_binding() {
    let mut ha = agent();
    ha.require_dad(true);
    // The first BU is held; the node is asked to probe.
    let d = send(&mut ha, &bu(1, 100), t(1));
    assert_eq!(d, Decision::AwaitingDad { home_address: home(), start: true });
    assert!(ha.cache().is_empty());
    assert_eq!(ha.awaiting_dad().collect::<Vec<_>>(), vec![home()]);
    // A retransmission replaces it without a second probe.
    let d = send(&mut ha, &bu(2, 100), t(2));
    assert_eq!(d, Decision::AwaitingDad { home_address: home(), start: false });
    // DAD found the address unused: the newest held BU registers, with its BA.
    let Some(Decision::Accepted { change: BindingChange::Created(b), reply: Some(r) }) =
        ha.dad_complete(home(), true, t(3))
    else {
        panic!("not registered")
    };
    assert_eq!((b.care_of_address, b.sequence), (coa(), 2));
    assert_eq!(ba(&r), (BaStatus::ACCEPTED, 2));
    assert_eq!(ha.counters().created, 1);
    // Later BUs for a bound home address need no DAD.
    assert!(matches!(send(&mut ha, &bu(3, 100), t(4)), Decision::Accepted { .. }));
    assert_eq!(ha.dad_complete(home(), true, t(4)), None, "nothing held");

    // DAD failed: BA 134, no binding.
    let mut ha = agent();
    ha.require_dad(true);
    assert!(matches!(send(&mut ha, &bu(9, 100), t(1)), Decision::AwaitingDad { start: true, .. }));
    let Some(Decision::Rejected { reason: Refusal::DuplicateAddress, reply }) =
        ha.dad_complete(home(), false, t(2))
    else {
        panic!("not refused")
    };
    assert_eq!(ba(&reply), (BaStatus::DUPLICATE_ADDRESS_DETECTION_FAILED, 9));
    assert_eq!(reply.dst, coa(), "to the care-of address, through a type 2 routing header");
    assert!(ha.cache().is_empty());
    assert_eq!(ha.counters().refused(Refusal::DuplicateAddress), 1);
    // A de-registration while DAD runs drops the held BU (and finds nothing to remove).
    assert!(matches!(send(&mut ha, &bu(10, 100), t(3)), Decision::AwaitingDad { start: true, .. }));
    assert!(matches!(send(&mut ha, &bu(11, 0), t(3)), Decision::Rejected { .. }));
    assert_eq!(ha.awaiting_dad().count(), 0);
}
