//! `ike::assoc` endpoints on the simulated network of `sim/`: setup, rekeys and terminate on a
//! clean link; INITIAL_CONTACT after a restart (RFC 7296 §2.4); one setup retry chain per
//! connection with back-off; and ≥ 10,000 seeded scenarios of delay, loss, reordering,
//! duplication, restarts and clock jumps, with the invariants checked at every step.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod sim;

use ike::Time;
use ike::assoc::Target;
use sim::{CHILD, CONN, LinkParams, Sim, Timers, endpoint};
use std::time::Duration;

fn secs(s: u64) -> Time {
    Time::from_millis(s * 1_000)
}

fn pair(link: LinkParams, timers: &Timers, seed: u64) -> Sim {
    let a = endpoint(Time::ZERO, 0, true, timers, seed);
    let b = endpoint(Time::ZERO, 1, false, timers, seed ^ 0x5a5a);
    Sim::new(a, b, link, seed)
}

fn ok(_: &Sim) -> Result<(), String> {
    Ok(())
}

/// Runs to `until`; then the state must be matched at a moment with nothing on the link.
fn settle(s: &mut Sim, until: Time) {
    let mut seen = false;
    s.run_until(until, |s| {
        if s.quiet() {
            s.matched()?;
            seen = true;
        }
        Ok(())
    })
    .unwrap();
    assert!(seen, "no quiet moment before {until:?}");
}

#[test]
fn setup_rekeys_and_terminate_on_a_clean_link() {
    let t = Timers::short();
    let mut s = pair(LinkParams::CLEAN, &t, 1);
    s.run_until(secs(1), ok).unwrap();
    s.matched().unwrap();
    // 30 s rekeys (less up to 5 s), 70 s IKE rekeys: several of each in 200 s.
    settle(&mut s, secs(200));
    assert!(s.sides[0].dp.child_rekeys >= 6, "{}", s.sides[0].dp.child_rekeys);
    assert_eq!(s.sides[0].dp.child_rekeys, s.sides[1].dp.child_rekeys);
    assert!(s.sides[0].dp.ike_rekeys >= 2);
    assert_eq!(s.hard_expired(), 0);
    s.sides[1].ep.rekey_child(s.local(1), CONN, CHILD).unwrap();
    s.sides[1].ep.rekey_ike(s.local(1), CONN).unwrap();
    settle(&mut s, secs(205));
    s.sides[0].ep.terminate(s.local(0), CONN, &Target::All).unwrap();
    // Our pairs leave the data path at once; the DELETE is still on its way (5 ms).
    s.run_until(s.now + Duration::from_millis(1), ok).unwrap();
    assert!(s.sides[0].dp.pairs.is_empty());
    assert!(!s.sides[1].dp.pairs.is_empty());
    s.run_until(secs(210), ok).unwrap();
    for side in &s.sides {
        assert_eq!(side.ep.associations(), 0);
        assert!(side.dp.pairs.is_empty());
        assert!(!side.ep.retry_pending(CONN));
    }
    // Nothing comes back: the connection is no longer wanted.
    s.run_until(secs(300), ok).unwrap();
    assert_eq!(s.sides[0].ep.associations(), 0);
}

/// RFC 7296 §2.4: "The INITIAL_CONTACT notification asserts that this IKE SA is the only IKE SA
/// currently active between the authenticated identities." and "It MAY be sent when an IKE SA
/// is established after a crash, and the recipient MAY use this information to delete any
/// other IKE SAs it has to the same authenticated identity without waiting for a timeout."
/// After either side restarts and sets up again, the survivor holds only the new IKE SA and its
/// CHILD SA — with DPD off and no rekey due, so nothing else could have told it.
#[test]
fn initial_contact_replaces_the_survivors_sas_after_a_restart() {
    let t = Timers {
        child: ike::assoc::Lifetimes::NEVER,
        ike: ike::assoc::Lifetimes::NEVER,
        ..Timers::short()
    };
    for restarted in [0, 1] {
        let mut s = pair(LinkParams::CLEAN, &t, 7);
        s.run_until(secs(1), ok).unwrap();
        s.matched().unwrap();
        let old = s.sides[1 - restarted].dp.spis().0;
        let now = s.local(restarted);
        let start = restarted == 0;
        s.restart(restarted, endpoint(now, restarted, start, &t, 99));
        if !start {
            // The responder comes back with start_action = start.
            s.sides[restarted].ep.initiate(now, CONN).unwrap();
        }
        // Bound: one initial exchange (2 round trips of 5 ms) after the restart.
        s.run_until(secs(1) + Duration::from_millis(100), ok).unwrap();
        s.matched().unwrap();
        let new = s.sides[1 - restarted].dp.spis().0;
        assert!(old.is_disjoint(&new), "the survivor kept {old:x?} beside {new:x?}");
        assert_eq!(s.sides[1 - restarted].ep.associations(), 1);
    }
}

/// A setup with no answer is retried with back-off (1, 2, 4, 8, 16, 16 s after each failure);
/// `initiate` during a pending retry brings it forward in the same chain instead of starting a
/// second one.
#[test]
fn one_setup_retry_chain_with_back_off() {
    let t = Timers::short();
    let dead = LinkParams { loss: 1.0, ..LinkParams::CLEAN };
    let mut s = pair(dead, &t, 3);
    // A setup gives up after 1+2+4+8+16+32 s of retransmissions.
    s.run_until(secs(63) + Duration::from_millis(500), ok).unwrap();
    assert_eq!(s.sides[0].ep.stats().setups, 1);
    assert!(s.sides[0].ep.retry_pending(CONN));
    s.run_until(secs(64), ok).unwrap();
    assert!(!s.sides[0].ep.retry_pending(CONN));
    assert_eq!(s.sides[0].ep.stats().setups, 2, "first retry 1 s after the failure");
    for _ in 0..3 {
        s.sides[0].ep.initiate(s.local(0), CONN).unwrap();
    }
    s.run_until(secs(70), ok).unwrap();
    assert_eq!(s.sides[0].ep.stats().setups, 2, "initiate while a setup runs adds nothing");
    s.run_until(secs(127) + Duration::from_millis(500), ok).unwrap();
    // The second attempt failed at 127 s; its retry waits 2 s; initiate brings it forward once.
    assert!(s.sides[0].ep.retry_pending(CONN));
    let before = s.sides[0].ep.stats().setups;
    s.sides[0].ep.initiate(s.local(0), CONN).unwrap();
    s.sides[0].ep.initiate(s.local(0), CONN).unwrap();
    s.run_until(secs(128), ok).unwrap();
    assert_eq!(s.sides[0].ep.stats().setups, before + 1);
    assert!(!s.sides[0].ep.retry_pending(CONN));
    // The link heals: the running attempt's retransmission gets through.
    s.link = LinkParams::CLEAN;
    s.run_until(secs(200), ok).unwrap();
    s.matched().unwrap();
}

/// A rekey the peer refuses (we ask for PFS, it has none configured: NO_PROPOSAL_CHOSEN) is
/// tried again after 2, 4, 8, 8 … s until the pair's hard lifetime, which then removes it on
/// both sides; the old pair carries the traffic all along, and the IKE SA stays.
#[test]
fn refused_rekey_is_retried_until_the_hard_lifetime() {
    let ta = Timers { pfs: Some(crypto::DhGroup::Curve25519), ..Timers::short() };
    let tb = Timers { child: ike::assoc::Lifetimes::NEVER, ..Timers::short() };
    let a = endpoint(Time::ZERO, 0, true, &ta, 5);
    let b = endpoint(Time::ZERO, 1, false, &tb, 6);
    let mut s = Sim::new(a, b, LinkParams::CLEAN, 5);
    s.run_until(secs(25), ok).unwrap();
    s.matched().unwrap();
    assert_eq!(s.sides[0].ep.stats().rekeys_failed, 0);
    // Rekey between 25 and 30 s; hard lifetime at 70 s: retries at +2, +4, +8, +8 … s.
    s.run_until(secs(69), |s| {
        if s.sides[0].dp.pairs.len() == 1 { Ok(()) } else { Err("the pair is gone early".into()) }
    })
    .unwrap();
    let failed = s.sides[0].ep.stats().rekeys_failed;
    assert!((5..=8).contains(&failed), "{failed} failed rekeys");
    assert_eq!(s.sides[0].dp.child_rekeys, 0);
    s.run_until(secs(71), ok).unwrap();
    assert!(s.sides[0].dp.pairs.is_empty() && s.sides[1].dp.pairs.is_empty());
    assert_eq!(s.hard_expired(), 1);
    assert_eq!(s.sides[0].ep.established(), 1, "the IKE SA stays");
}

/// DPD (§2.4): with the peer gone silent, a liveness check goes out `dpd_delay` after the last
/// message heard; when its retransmissions (63 s) are used up the IKE SA is down, its CHILD SA
/// removed, and the connection's setup retry chain starts.
#[test]
fn dead_peer_is_detected_and_the_connection_set_up_again() {
    let t = Timers { dpd: Duration::from_secs(10), ..Timers::short() };
    let mut s = pair(LinkParams::CLEAN, &t, 8);
    s.run_until(secs(1), ok).unwrap();
    s.matched().unwrap();
    s.link = LinkParams { loss: 1.0, ..LinkParams::CLEAN };
    // Child rekeys would find the silence too; push them out of the way.
    s.run_until(secs(1 + 10 + 62), ok).unwrap();
    assert_eq!(s.sides[0].ep.established(), 1);
    s.run_until(secs(1 + 10 + 64), ok).unwrap();
    assert_eq!(s.sides[0].ep.established(), 0);
    assert!(s.sides[0].dp.pairs.is_empty());
    assert!(s.sides[0].ep.stats().setups >= 2, "set up again");
    s.link = LinkParams::CLEAN;
    s.run_until(secs(200), ok).unwrap();
    // B never heard a DELETE; A's new IKE_AUTH carried INITIAL_CONTACT.
    s.matched().unwrap();
}

/// Terminating the child DELETEs its pairs on both sides (§1.4.1) and leaves the IKE SA up; an
/// unknown child or connection is refused by name.
#[test]
fn terminate_child_keeps_the_ike_sa() {
    let t = Timers::short();
    let mut s = pair(LinkParams::CLEAN, &t, 11);
    s.run_until(secs(1), ok).unwrap();
    s.matched().unwrap();
    let now = s.local(1);
    assert!(s.sides[1].ep.terminate(now, CONN, &Target::Child("other".into())).is_err());
    assert!(s.sides[1].ep.terminate(now, "other", &Target::All).is_err());
    s.sides[1].ep.terminate(now, CONN, &Target::Child(CHILD.into())).unwrap();
    s.run_until(secs(2), ok).unwrap();
    for side in &s.sides {
        assert!(side.dp.pairs.is_empty());
        assert_eq!(side.ep.established(), 1);
    }
}

/// The responder's flood limits (RFC 7296 §2.6: "When a responder detects a large number of
/// half-open IKE SAs, it SHOULD reply to IKE_SA_INIT requests with a response containing the
/// COOKIE notification."):
/// past `cookie_threshold` half-open SAs an IKE_SA_INIT without a cookie is answered with one
/// and keeps no state; past `half_open_per_peer` from one address it is dropped unanswered.
#[test]
fn cookie_threshold_and_half_open_per_peer_are_operator_limits() {
    let t = Timers::short();
    let requests: Vec<Vec<u8>> = (0..3)
        .map(|k| {
            let mut a = endpoint(Time::ZERO, 0, true, &t, 100 + k);
            a.poll_transmit().expect("IKE_SA_INIT").payload
        })
        .collect();
    let mut b = endpoint(Time::ZERO, 1, false, &t, 7);
    b.set_half_open_per_peer(2);
    assert_eq!(b.limits(), (64, 2));
    assert!(b.handle(Time::ZERO, sim::addr(0), &requests[0]).is_ok());
    assert!(b.handle(Time::ZERO, sim::addr(0), &requests[1]).is_ok());
    assert!(b.handle(Time::ZERO, sim::addr(0), &requests[2]).is_err());
    assert_eq!((b.half_open(), b.stats().blocked), (2, 1));
    assert_eq!(std::iter::from_fn(|| b.poll_transmit()).count(), 2, "the third got an answer");

    let mut c = endpoint(Time::ZERO, 1, false, &t, 8);
    c.set_cookie_threshold(1);
    assert!(c.handle(Time::ZERO, sim::addr(0), &requests[0]).is_ok());
    assert!(c.handle(Time::ZERO, sim::addr(0), &requests[1]).is_ok());
    assert_eq!((c.half_open(), c.stats().cookies, c.stats().init_refused), (1, 1, 1));
    let answers: Vec<_> = std::iter::from_fn(|| c.poll_transmit()).collect();
    let cookie = wire::ikev2::Packet::new_checked(&answers[1].payload[..]).unwrap();
    assert_eq!(cookie.spi_r(), 0, "a COOKIE answer keeps no state (no responder SPI)");
}

/// Two children on one connection, each with its own selectors (RFC 7296 §1.3: "The
/// CREATE_CHILD_SA exchange is used to create new Child SAs and to rekey both IKE SAs and Child
/// SAs."): the first comes
/// with IKE_AUTH, the second with CREATE_CHILD_SA right after; each is rekeyed and deleted on
/// its own, and a rekey of one leaves the other's pair sending.
#[test]
fn two_children_each_with_its_own_selectors_rekeyed_and_deleted_alone() {
    use ike::ChildPolicy;
    use ike::assoc::ChildConfig;
    use std::net::{IpAddr, Ipv4Addr};
    use wire::ikev2::TrafficSelector;
    let t = Timers::short();
    let host = |a, b, c| TrafficSelector::host(IpAddr::V4(Ipv4Addr::new(10, a, b, c)));
    let conn = |i: usize, start| {
        let (me, peer) = (1 + i as u8, 2 - i as u8);
        let mut c = sim::connection(i, start, &t);
        c.ike.local_ts = vec![host(0, me, 1)];
        c.ike.remote_ts = vec![host(0, peer, 1)];
        c.ike.more_children = vec![ChildPolicy {
            suites: c.ike.child_suites.clone(),
            local_ts: vec![host(1, me, 1)],
            remote_ts: vec![host(1, peer, 1)],
            mode: ike::Mode::Tunnel,
        }];
        c.more_children = vec![ChildConfig { name: "second".into(), lifetimes: t.child }];
        c
    };
    let a = sim::endpoint_with(Time::ZERO, 0, conn(0, true), 11);
    let b = sim::endpoint_with(Time::ZERO, 1, conn(1, false), 12);
    let mut eps = [a, b];
    // A clean link with no delay: move every datagram until both are quiet.
    let pump = |eps: &mut [ike::assoc::Endpoint; 2], now: Time| {
        for _ in 0..50 {
            let mut moved = false;
            for i in 0..2 {
                while let Some(t) = eps[i].poll_transmit() {
                    let _ = eps[1 - i].handle(now, sim::addr(i), &t.payload);
                    moved = true;
                }
                while eps[i].poll_event().is_some() {}
            }
            if !moved {
                return;
            }
        }
        panic!("the exchange does not settle");
    };
    let now = secs(1);
    pump(&mut eps, now);
    let kids = |ep: &ike::assoc::Endpoint| {
        let mut v: Vec<(String, u32, u32, bool)> =
            ep.children().into_iter().map(|c| (c.child, c.spi_in, c.spi_out, c.sending)).collect();
        v.sort();
        v
    };
    let (ka, kb) = (kids(&eps[0]), kids(&eps[1]));
    let names: Vec<&str> = ka.iter().map(|k| k.0.as_str()).collect();
    assert_eq!(names, [CHILD, "second"], "A: {ka:x?}");
    assert_eq!(kb.len(), 2, "B: {kb:x?}");
    for (x, y) in ka.iter().zip(&kb) {
        assert_eq!((x.0.as_str(), x.1, x.2), (y.0.as_str(), y.2, y.1), "pairs not crossed");
        assert!(x.3 && y.3, "each child sends on its pair");
    }
    // Rekey the second child only: its pair is new, the first child's is the same.
    eps[1].rekey_child(now, CONN, "second").unwrap();
    pump(&mut eps, now);
    let after = kids(&eps[0]);
    let sending: Vec<_> = after.iter().filter(|k| k.3).collect();
    assert_eq!(sending.len(), 2, "{after:x?}");
    assert!(
        sending.iter().any(|k| k.0 == CHILD && k.1 == ka[0].1),
        "first child moved: {after:x?}"
    );
    assert!(sending.iter().any(|k| k.0 == "second" && k.1 != ka[1].1), "not rekeyed: {after:x?}");
    // Delete the second child: the first and the IKE SA stay.
    eps[0].terminate(now, CONN, &Target::Child("second".into())).unwrap();
    pump(&mut eps, now);
    for ep in &eps {
        let k = kids(ep);
        assert!(k.iter().all(|k| k.0 == CHILD) && !k.is_empty(), "{k:x?}");
        assert_eq!(ep.established(), 1);
    }
}

/// A further child the peer refuses (its selectors meet none of the peer's: TS_UNACCEPTABLE)
/// is asked for again with the rekey back-off (2 s doubling to 8 s here), while the first
/// child and the IKE SA stay up.
#[test]
fn a_refused_further_child_is_asked_for_again_with_back_off() {
    use ike::ChildPolicy;
    use ike::assoc::{ChildConfig, Event};
    use std::net::{IpAddr, Ipv4Addr};
    use wire::ikev2::TrafficSelector;
    let t = Timers::short();
    let host = |a, b, c| TrafficSelector::host(IpAddr::V4(Ipv4Addr::new(10, a, b, c)));
    let mut a_conn = sim::connection(0, true, &t);
    a_conn.ike.local_ts = vec![host(0, 1, 1)];
    a_conn.ike.remote_ts = vec![host(0, 2, 1)];
    a_conn.ike.more_children = vec![ChildPolicy {
        suites: a_conn.ike.child_suites.clone(),
        local_ts: vec![host(1, 1, 1)],
        remote_ts: vec![host(1, 2, 1)],
        mode: ike::Mode::Tunnel,
    }];
    a_conn.more_children = vec![ChildConfig { name: "second".into(), lifetimes: t.child }];
    let mut b_conn = sim::connection(1, false, &t);
    b_conn.ike.local_ts = vec![host(0, 2, 1)];
    b_conn.ike.remote_ts = vec![host(0, 1, 1)];
    let mut eps = [
        sim::endpoint_with(Time::ZERO, 0, a_conn, 21),
        sim::endpoint_with(Time::ZERO, 1, b_conn, 22),
    ];
    let mut refusals = Vec::new();
    let mut now = secs(1);
    while now < secs(40) {
        for _ in 0..50 {
            let mut moved = false;
            for i in 0..2 {
                while let Some(x) = eps[i].poll_transmit() {
                    let _ = eps[1 - i].handle(now, sim::addr(i), &x.payload);
                    moved = true;
                }
                while let Some(e) = eps[i].poll_event() {
                    if let Event::ChildFailed { child, .. } = e {
                        assert_eq!((i, child.as_str()), (0, "second"));
                        refusals.push(now);
                    }
                }
            }
            if !moved {
                break;
            }
        }
        let next = eps.iter_mut().filter_map(|e| e.poll_timeout()).min().unwrap_or(secs(40));
        now = next.max(now + Duration::from_millis(1));
        for e in &mut eps {
            e.handle_timeout(now);
        }
    }
    let gaps: Vec<u64> =
        refusals.windows(2).map(|w| (w[1].as_micros() - w[0].as_micros()) / 1_000_000).collect();
    println!("refused at {refusals:?}, gaps {gaps:?} s");
    assert!(refusals.len() >= 4, "asked again, several times: {refusals:?}");
    assert_eq!(&gaps[..3], [2, 4, 8], "the back-off: {gaps:?}");
    assert!(gaps[3..].iter().all(|&g| g == 8), "capped at 8 s: {gaps:?}");
    let names: Vec<String> = eps[0].children().into_iter().map(|c| c.child).collect();
    assert_eq!(names, [CHILD], "the first child stays up: {names:?}");
    assert_eq!(eps[0].established(), 1);
}
