//! Fuzz target: two `ike::assoc` endpoints on the simulated network of `crates/ike/tests/sim`,
//! with the input as a mutator on the link: each datagram in flight takes a byte that passes it,
//! drops it, or (with the following bytes) replaces, XORs or truncates it. Through setup,
//! rekeys and IKE rekeys the endpoints must never panic, and each side's data path (built from
//! the events) must stay what the endpoint says it holds; once the input is used up and the
//! link is clean for long enough, both sides must hold matching SAs again.
#![no_main]

#[path = "../../crates/ike/tests/sim/mod.rs"]
mod sim;
#[path = "common/mutate.rs"]
mod mutate;

use ike::Time;
use libfuzzer_sys::fuzz_target;
use sim::{LinkParams, Sim, Timers, endpoint};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let t = Timers::short();
    let a = endpoint(Time::ZERO, 0, true, &t, 1);
    let b = endpoint(Time::ZERO, 1, false, &t, 2);
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
    if let Err(e) = s.run_until(Time::from_millis(120_000), step) {
        panic!("{e}");
    }
    // The input is used up after at most as many datagrams as it has bytes; then the link is
    // clean: a stale IKE SA is found dead by its next rekey (within 30 s, then 63 s of
    // retransmissions) and set up again (setup retries wait at most 16 s).
    s.mangle = None;
    let end = s.now + Duration::from_secs(200);
    if let Err(e) = s.run_until(end, step) {
        panic!("{e}");
    }
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
