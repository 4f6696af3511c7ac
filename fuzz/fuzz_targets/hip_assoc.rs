//! Fuzz target: two `hip::assoc` endpoints on the simulated network of `crates/hip/tests/sim`,
//! with the input as a mutator on the link: each HIP packet in flight takes a byte that passes
//! it, drops it, or (with the following bytes) replaces, XORs or truncates it (its checksum is
//! then refilled, so the change meets the MAC, signature and state checks). Through the base
//! exchange, a rekey from each side, a move of host 0 and a CLOSE with a new exchange, the
//! endpoints must never panic, and each side's data path (built from the events) must stay what
//! the endpoint says it holds; once the input is used up and the link is clean for long enough,
//! both sides must hold matching pairs again.
#![no_main]

#[path = "../../crates/hip/tests/sim/mod.rs"]
mod sim;
#[path = "common/mutate.rs"]
mod mutate;

use hip::assoc::Timers;
use libfuzzer_sys::fuzz_target;
use sim::{LinkParams, Sim, addr, addr_n, endpoint, hit};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use wire::Time;

fuzz_target!(|data: &[u8]| {
    let t = Timers::default();
    let a = endpoint(Time::ZERO, 0, addr(0), t, 1);
    let b = endpoint(Time::ZERO, 1, addr(1), t, 2);
    let mut s = Sim::new(a, b, LinkParams::CLEAN, 3);
    let input = Rc::new(RefCell::new(data.to_vec()));
    let feed = Rc::clone(&input);
    s.mangle = Some(Box::new(move |m: &mut Vec<u8>| {
        let mut d = feed.borrow_mut();
        let Some(&how) = d.first() else { return true };
        match how {
            0..=159 => {
                d.remove(0);
                true
            }
            160..=191 => {
                d.remove(0);
                false
            }
            _ => {
                let take = d.len().min(1 + usize::from(how % 16) * 4);
                let chunk: Vec<u8> = d.drain(..take).collect();
                *m = mutate::mutate(how, m, &chunk[1..]);
                true
            }
        }
    }));
    let step = |_: &Sim| Ok(());
    let run = |s: &mut Sim, until: Time| {
        if let Err(e) = s.run_until(until, step) {
            panic!("{e}");
        }
    };
    s.sides[0].ep.initiate(Time::ZERO, hit(1), addr(1));
    s.sides[1].ep.initiate(Time::ZERO, hit(0), addr(0));
    run(&mut s, Time::from_millis(3_000));
    let _ = s.sides[0].ep.rekey(s.local(0), &hit(1));
    run(&mut s, Time::from_millis(6_000));
    let _ = s.sides[1].ep.rekey(s.local(1), &hit(0));
    run(&mut s, Time::from_millis(9_000));
    s.move_to(0, addr_n(0, 1));
    run(&mut s, Time::from_millis(12_000));
    let _ = s.sides[1].ep.close(s.local(1), &hit(0));
    run(&mut s, Time::from_millis(15_000));
    s.sides[1].ep.initiate(s.local(1), hit(0), addr_n(0, 1));
    s.sides[0].ep.initiate(s.local(0), hit(1), addr(1));
    run(&mut s, Time::from_millis(60_000));
    // The input is used up after at most as many packets as it has bytes; then the link is
    // clean: a lost association is noticed by its pending UPDATE (31 s of retransmissions) or
    // its failed setup, and set up again (retries wait at most 16 s).
    s.mangle = None;
    let end = s.now + Duration::from_secs(100);
    run(&mut s, end);
    let mut seen = false;
    let more = s.now + Duration::from_secs(20);
    let r = s.run_until(more, |s| {
        if s.quiet() {
            s.matched()?;
            seen = true;
        }
        Ok(())
    });
    if let Err(e) = r {
        panic!("{e}");
    }
    assert!(seen, "no quiet moment in the last 20 s");
});
