//! Scripted scenarios of two `hip::assoc` endpoints on the simulated network: each shows one
//! piece of the association's life (RFC 7401 §4.4) with exact expectations.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod sim;

use hip::assoc::Timers;
use sim::{LinkParams, Sim, addr, addr_n, endpoint, hit};
use std::time::Duration;
use wire::Time;

fn ms(v: u64) -> Time {
    Time::from_millis(v)
}

fn pair(link: LinkParams) -> Sim {
    let t = Timers::default();
    let a = endpoint(Time::ZERO, 0, addr(0), t, 1);
    let b = endpoint(Time::ZERO, 1, addr(1), t, 2);
    Sim::new(a, b, link, 3)
}

fn ok(_: &Sim) -> Result<(), String> {
    Ok(())
}

/// I1, R1, I2, R2 on a clean link: both sides ESTABLISHED with crossed pairs once the
/// Initiator's first ESP packet has moved the Responder out of R2-SENT.
#[test]
fn base_exchange_establishes_matching_pairs() {
    let mut s = pair(LinkParams::CLEAN);
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.run_until(ms(15), ok).unwrap();
    // Four one-way trips of 5 ms: the Responder has sent R2 and waits in R2-SENT.
    assert_eq!(s.sides[1].ep.state(&hit(0)), "R2-SENT");
    assert_eq!(s.sides[0].ep.state(&hit(1)), "I2-SENT");
    // The Initiator's first ESP packet (sent every 500 ms) moves the Responder on.
    s.run_until(ms(600), ok).unwrap();
    s.matched().unwrap();
    assert_eq!(s.sides[0].ep.stats().retransmits, 0);
}

/// The first I1 and the first I2 are lost: each is resent after 1 s (§4.4.3) and the exchange
/// completes.
#[test]
fn lost_i1_and_i2_are_retransmitted() {
    let mut s = pair(LinkParams::CLEAN);
    let mut n = 0;
    s.mangle = Some(Box::new(move |b: &mut Vec<u8>| {
        let ty = b.get(2).copied().unwrap_or(0) & 0x7f;
        let first = (ty == 1 && n & 1 == 0) || (ty == 3 && n & 2 == 0);
        if ty == 1 {
            n |= 1;
        }
        if ty == 3 {
            n |= 2;
        }
        !first
    }));
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.run_until(ms(3_000), ok).unwrap();
    s.matched().unwrap();
    assert_eq!(s.sides[0].ep.stats().retransmits, 2);
}

/// Both hosts start at once: the crossing I1s and I2s are resolved by HIT order (§4.4.2) and
/// one association results.
#[test]
fn simultaneous_initiation_gives_one_association() {
    let mut s = pair(LinkParams::CLEAN);
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.sides[1].ep.initiate(Time::ZERO, hit(0), addr(0));
    s.run_until(ms(3_000), ok).unwrap();
    s.matched().unwrap();
    assert_eq!(s.sides[0].dp.established + s.sides[1].dp.established, 2);
}

/// Rekey by UPDATE from either side, three times: new pairs every time, the old ones removed,
/// no ESP packet meets a missing SA.
#[test]
fn rekeys_make_before_break() {
    let mut s = pair(LinkParams { delay_min_us: 20_000, ..LinkParams::CLEAN });
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.run_until(ms(1_000), ok).unwrap();
    s.matched().unwrap();
    let first = s.sides[0].dp.spis().1;
    for (k, side) in [0usize, 1, 0].into_iter().enumerate() {
        let t = s.local(side);
        s.sides[side].ep.rekey(t, &hit(1 - side)).unwrap();
        s.run_until(ms(2_000 + 1_000 * k as u64), |s| s.no_black_hole()).unwrap();
        s.matched().unwrap();
    }
    assert_ne!(s.sides[0].dp.spis().1, first);
    assert_eq!(s.sides[0].dp.rekeys, 3);
    assert_eq!(s.sides[1].dp.rekeys, 3);
    assert_eq!(s.sides[0].dp.esp_missed + s.sides[1].dp.esp_missed, 0);
}

/// Side 0 moves: its UPDATE with LOCATOR_SET, the peer's signed echo to the new locator, the
/// echo back; then the peer sends there (RFC 8046 §3.2.1).
#[test]
fn a_move_is_verified_before_use() {
    let mut s = pair(LinkParams::CLEAN);
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.run_until(ms(500), ok).unwrap();
    s.move_to(0, addr_n(0, 1));
    s.run_until(ms(1_500), ok).unwrap();
    s.matched().unwrap();
    assert_eq!(s.sides[1].peer_locator, addr_n(0, 1));
    // A rekey still works at the new locator.
    let t = s.local(1);
    s.sides[1].ep.rekey(t, &hit(0)).unwrap();
    s.run_until(ms(2_500), ok).unwrap();
    s.matched().unwrap();
    assert_eq!(s.sides[0].dp.rekeys, 1);
}

/// CLOSE, CLOSE_ACK: both sides remove their pairs at once and hold nothing once the CLOSED
/// state's wait for a repeated CLOSE is over.
#[test]
fn close_leaves_no_state() {
    let mut s = pair(LinkParams::CLEAN);
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.run_until(ms(500), ok).unwrap();
    let t = s.local(1);
    s.sides[1].ep.close(t, &hit(0)).unwrap();
    s.run_until(ms(600), ok).unwrap();
    assert!(s.sides[0].dp.pairs.is_empty() && s.sides[1].dp.pairs.is_empty());
    assert_eq!((s.sides[0].dp.closed, s.sides[1].dp.closed), (1, 1));
    s.run_until(ms(60_000), ok).unwrap();
    s.empty().unwrap();
}

/// A CLOSE nobody acknowledges: after the retransmissions the association ends anyway.
#[test]
fn an_unanswered_close_times_out() {
    let mut s = pair(LinkParams::CLEAN);
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.run_until(ms(500), ok).unwrap();
    s.mangle = Some(Box::new(|_| false));
    let t = s.local(0);
    s.sides[0].ep.close(t, &hit(1)).unwrap();
    s.run_until(ms(60_000), ok).unwrap();
    assert_eq!(s.sides[0].ep.associations(), 0);
    assert_eq!(s.sides[0].dp.down, 1);
}

/// The Responder restarts and initiates again: the old Initiator, ESTABLISHED, answers its I1
/// with R1 and its I2 by replacing the old pairs (§4.4.2).
#[test]
fn a_restarted_peer_gets_a_new_association() {
    let mut s = pair(LinkParams::CLEAN);
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.run_until(ms(500), ok).unwrap();
    let old = s.sides[0].dp.spis().0;
    let t = s.local(1);
    s.restart(1, endpoint(t, 1, addr(1), Timers::default(), 9));
    s.sides[1].ep.initiate(t, hit(0), addr(0));
    s.run_until(ms(1_200), ok).unwrap();
    s.matched().unwrap();
    assert!(s.sides[0].dp.spis().0.is_disjoint(&old));
    assert_eq!(s.sides[0].dp.down, 1);
    let _ = Duration::ZERO;
}

/// Garbage, truncations and replays of every packet the exchange sent (I1 to CLOSE_ACK, with
/// their checksums refilled) move nothing: each is dropped and counted, the association stays
/// as it was (RFC 7401 §6: a packet that does not verify is dropped).
#[test]
fn garbage_and_replays_move_nothing() {
    let mut s = pair(LinkParams::CLEAN);
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let log = std::rc::Rc::clone(&seen);
    s.mangle = Some(Box::new(move |b: &mut Vec<u8>| {
        log.borrow_mut().push(b.clone());
        true
    }));
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.run_until(ms(600), ok).unwrap();
    let t = s.local(0);
    s.sides[0].ep.rekey(t, &hit(1)).unwrap();
    s.run_until(ms(1_200), ok).unwrap();
    s.matched().unwrap();
    let before = (s.sides[0].dp.spis(), s.sides[1].dp.spis());
    let mut rng = fastrand::Rng::with_seed(7);
    let packets = seen.borrow().clone();
    for i in 0..2 {
        let t = s.local(i);
        let from = addr(1 - i);
        for p in &packets {
            let _ = s.sides[i].ep.handle(t, from, p);
            let mut cut = p[..rng.usize(0..p.len())].to_vec();
            let _ = wire::hip::fill_checksum(from, addr(i), &mut cut);
            assert!(s.sides[i].ep.handle(t, from, &cut).is_err() || cut.len() == p.len());
            let mut flip = p.clone();
            let at = rng.usize(0..flip.len());
            flip[at] ^= 1 << rng.u8(0..8);
            let _ = wire::hip::fill_checksum(from, addr(i), &mut flip);
            let _ = s.sides[i].ep.handle(t, from, &flip);
        }
        for _ in 0..200 {
            let junk: Vec<u8> = (0..rng.usize(0..300)).map(|_| rng.u8(..)).collect();
            assert!(s.sides[i].ep.handle(t, from, &junk).is_err());
        }
    }
    s.mangle = None;
    s.run_until(ms(1_300), ok).unwrap();
    // Replayed I1s were answered with R1s (stateless) and replayed UPDATEs re-acknowledged;
    // nothing else changed.
    s.matched().unwrap();
    assert_eq!((s.sides[0].dp.spis(), s.sides[1].dp.spis()), before);
    assert!(s.sides[0].ep.stats().dropped > 200 && s.sides[1].ep.stats().dropped > 200);
}

/// A puzzle solver from outside (the node's lanes) is used for R1 and its answer checked; the
/// status view follows the states (§4.4.2 names) and a rekey's step.
#[test]
fn an_outside_solver_and_the_status_view() {
    let mut s = pair(LinkParams { delay_min_us: 20_000, ..LinkParams::CLEAN });
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let c = std::sync::Arc::clone(&calls);
    s.sides[0].ep.set_solver(Box::new(move |p, suite, i, r, seed| {
        c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        p.solve(suite, i, r, seed)
    }));
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    assert_eq!(s.sides[0].ep.view(&hit(1)).unwrap().state, "I1-SENT");
    s.run_until(ms(50), ok).unwrap();
    assert_eq!(s.sides[0].ep.view(&hit(1)).unwrap().state, "I2-SENT");
    s.run_until(ms(700), ok).unwrap();
    s.matched().unwrap();
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1);
    let t = s.local(1);
    s.sides[1].ep.rekey(t, &hit(0)).unwrap();
    let v = s.sides[1].ep.view(&hit(0)).unwrap();
    assert_eq!((v.state, v.rekey, v.locator), ("ESTABLISHED", Some("offered"), addr(0)));
    s.run_until(ms(730), ok).unwrap();
    assert_eq!(s.sides[0].ep.views()[0].rekey, Some("answered"));
    s.run_until(ms(800), ok).unwrap();
    assert_eq!(s.sides[0].ep.views()[0].rekey, None);
    assert_eq!(s.sides[0].ep.view(&hit(0)), None);
}

/// A driver that cannot tell the endpoint of ESP arrivals sets the R2-SENT wait to zero: the
/// Responder then sends on the pair as soon as its timers run after R2 left (the old node's
/// behaviour), and the Initiator has installed it by the time that traffic arrives.
#[test]
fn a_zero_r2_sent_wait_switches_at_once() {
    let t = Timers { r2_sent: Duration::ZERO, ..Timers::default() };
    let a = endpoint(Time::ZERO, 0, addr(0), t, 1);
    let b = endpoint(Time::ZERO, 1, addr(1), t, 2);
    let mut s = Sim::new(a, b, LinkParams::CLEAN, 3);
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.run_until(ms(16), ok).unwrap();
    assert_eq!(s.sides[1].ep.state(&hit(0)), "ESTABLISHED");
    assert_eq!(s.sides[1].dp.sending.len(), 1);
    s.run_until(ms(30), |s| s.no_black_hole()).unwrap();
    s.matched().unwrap();
}

/// The host that was closed wants the peer again at once: its CLOSED state (kept for repeated
/// CLOSEs) gives way to a new base exchange (§4.4.2 CLOSED: a datagram to send starts another
/// incarnation).
#[test]
fn a_closed_host_can_initiate_at_once() {
    let mut s = pair(LinkParams::CLEAN);
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.run_until(ms(600), ok).unwrap();
    let t = s.local(0);
    s.sides[0].ep.close(t, &hit(1)).unwrap();
    s.run_until(ms(700), ok).unwrap();
    assert_eq!(s.sides[1].ep.state(&hit(0)), "CLOSED");
    let t = s.local(1);
    s.sides[1].ep.initiate(t, hit(0), addr(0));
    s.run_until(ms(1_300), ok).unwrap();
    s.matched().unwrap();
}
