//! Replay window tests: fixed cases, ESN inference at the 2^32 boundary, and a proptest against a
//! naive model (a set of every accepted number).
use super::*;
use proptest::prelude::*;
use std::collections::HashSet;

/// The obviously-correct model: accept s iff s > 0, not seen, and s > top - size.
struct Naive {
    size: u64,
    top: u64,
    seen: HashSet<u64>,
}

impl Naive {
    fn accept(&mut self, s: u64) -> Result<(), DropReason> {
        if s == 0 {
            return Err(DropReason::BadSeq);
        }
        if s <= self.top && s + self.size <= self.top {
            return Err(DropReason::TooOld);
        }
        if !self.seen.insert(s) {
            return Err(DropReason::Replayed);
        }
        self.top = self.top.max(s);
        Ok(())
    }
}

#[test]
fn basic() {
    let mut w = ReplayWindow::new(64, false).unwrap();
    assert_eq!(w.check_and_commit(SeqNum(1)), Ok(()));
    assert_eq!(w.check_and_commit(SeqNum(1)), Err(DropReason::Replayed));
    assert_eq!(w.check_and_commit(SeqNum(100)), Ok(()));
    assert_eq!(w.check_and_commit(SeqNum(36)), Err(DropReason::TooOld));
    assert_eq!(w.check_and_commit(SeqNum(37)), Ok(()));
    assert_eq!(w.check_and_commit(SeqNum(0)), Err(DropReason::BadSeq));
}

#[test]
fn check_does_not_commit() {
    let mut w = ReplayWindow::new(32, false).unwrap();
    assert_eq!(w.check(SeqNum(5)), Ok(()));
    assert_eq!(w.check(SeqNum(5)), Ok(()));
    w.commit(SeqNum(5));
    assert_eq!(w.check(SeqNum(5)), Err(DropReason::Replayed));
}

#[test]
fn no_overflow_at_the_top_of_the_esn_space() {
    let mut w = ReplayWindow::new(64, true).unwrap();
    w.commit(SeqNum(u64::MAX));
    assert_eq!(w.check(SeqNum(u64::MAX)), Err(DropReason::Replayed));
    assert_eq!(w.check(SeqNum(u64::MAX - 63)), Ok(()));
    assert_eq!(w.check(SeqNum(u64::MAX - 64)), Err(DropReason::TooOld));
}

#[test]
fn sizes() {
    assert!(ReplayWindow::new(31, false).is_err());
    assert!(ReplayWindow::new(MAX_WINDOW + 1, false).is_err());
    for s in [0, 32, 64, 1000, 4096, MAX_WINDOW] {
        assert!(ReplayWindow::new(s, true).is_ok());
    }
}

#[test]
fn disabled_window_accepts_replays() {
    let mut w = ReplayWindow::new(0, false).unwrap();
    assert_eq!(w.check_and_commit(SeqNum(5)), Ok(()));
    assert_eq!(w.check_and_commit(SeqNum(5)), Ok(()));
}

#[test]
fn esn_inference_across_the_boundary() {
    let mut w = ReplayWindow::new(64, true).unwrap();
    // Top just below 2^32: a small low value means the next subspace.
    w.commit(SeqNum(0xffff_fff0));
    assert_eq!(w.infer(0xffff_fff5), SeqNum(0xffff_fff5));
    assert_eq!(w.infer(3), SeqNum(0x1_0000_0003));
    w.commit(SeqNum(0x1_0000_0003));
    // Window spans two subspaces: a high low value is the old subspace.
    assert_eq!(w.infer(0xffff_fff8), SeqNum(0xffff_fff8));
    assert_eq!(w.check(SeqNum(0xffff_fff0)), Err(DropReason::Replayed));
    assert_eq!(w.infer(10), SeqNum(0x1_0000_000a));
    // Before anything is received, the first subspace.
    let w = ReplayWindow::new(64, true).unwrap();
    assert_eq!(w.infer(1), SeqNum(1));
    assert_eq!(w.infer(0xffff_ffff), SeqNum(0xffff_ffff));
}

fn sizes_strategy() -> impl Strategy<Value = u32> {
    // 192 is the largest window kept inline, 193 the smallest on the heap.
    prop_oneof![
        Just(32u32),
        Just(64),
        Just(100),
        Just(128),
        Just(192),
        Just(193),
        Just(1024),
        Just(4096)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The bitmap agrees with the naive model on arbitrary arrival orders, with jumps large and small.
    #[test]
    fn agrees_with_naive_model(size in sizes_strategy(), steps in proptest::collection::vec((0u8..4, 0u64..5000), 1..400)) {
        let mut w = ReplayWindow::new(size, false).unwrap();
        let mut m = Naive { size: size as u64, top: 0, seen: HashSet::new() };
        let mut cursor: u64 = 1;
        for (kind, delta) in steps {
            let s = match kind {
                0 => cursor + delta % 8,                 // near the front
                1 => cursor.saturating_sub(delta % (size as u64 * 2)), // inside/left of the window
                2 => cursor + delta,                      // big jump
                _ => delta % 16,                          // very old / zero
            };
            cursor = cursor.max(s);
            prop_assert_eq!(w.check_and_commit(SeqNum(s)), m.accept(s), "seq {}", s);
            prop_assert_eq!(w.top().0, m.top);
        }
    }

    /// With ESN, the inferred number is the one the sender used whenever the sender stays within
    /// the window (RFC 4303 A2.2's guarantee), including across 2^32 boundaries.
    #[test]
    fn esn_inference_recovers_sender_numbers(size in sizes_strategy(), start_hi in 0u64..3, start_lo in 0xffff_f000u64..0xffff_ffff, steps in proptest::collection::vec(0u64..200, 1..300)) {
        let mut w = ReplayWindow::new(size, true).unwrap();
        let mut m = Naive { size: size as u64, top: 0, seen: HashSet::new() };
        let mut sent = (start_hi << 32) | start_lo;
        w.commit(SeqNum(sent));
        m.accept(sent).unwrap();
        for d in steps {
            // The sender moves forward; the network delivers something within the window.
            sent += d % 97;
            let delivered = sent.saturating_sub(d % size as u64).max(1);
            let inferred = w.infer(delivered as u32);
            prop_assert_eq!(inferred.0, delivered);
            prop_assert_eq!(w.check_and_commit(inferred), m.accept(delivered));
        }
    }
}
