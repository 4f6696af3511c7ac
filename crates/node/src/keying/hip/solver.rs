//! The initiator's puzzle search on several cores (RFC 7401 §4.1.2 leaves how to search to the
//! initiator). `hip::puzzle::Puzzle::solve_lane` splits the counters into lanes; here each
//! lane gets a thread of its own for the one search, and the first to find #J stops the
//! others. At K = 10 the search is ~0.4 ms of hashing on one core, the largest part of T2.

use hip::HostIdentityTag;
use hip::puzzle::{Lane, Puzzle};
use hip::suite::HitSuite;
use std::sync::atomic::{AtomicBool, Ordering};

/// Below this K a search is a few dozen hashes: a thread would cost more than it saves.
const MIN_K: u8 = 6;

/// Searches with `threads` threads (this one included); #J and the hashes all lanes made.
pub fn solve(
    threads: usize,
    p: &Puzzle,
    suite: HitSuite,
    hit_i: &HostIdentityTag,
    hit_r: &HostIdentityTag,
    seed: &[u8],
) -> Result<(Vec<u8>, u64), hip::Error> {
    if threads <= 1 || p.k < MIN_K {
        return p.solve(suite, hit_i, hit_r, seed);
    }
    let of = threads as u64;
    let found = AtomicBool::new(false);
    let stop = || found.load(Ordering::Relaxed);
    let run = |index: u64| {
        let r = p.solve_lane(suite, hit_i, hit_r, seed, Lane { index, of }, &stop);
        if matches!(r, Ok((Some(_), _))) {
            found.store(true, Ordering::Relaxed);
        }
        r
    };
    let mut results = Vec::with_capacity(threads);
    std::thread::scope(|s| {
        let others: Vec<_> = (1..of).map(|i| s.spawn(move || run(i))).collect();
        results.push(run(0));
        for h in others {
            // A lane that panicked is a lane that found nothing.
            results.push(h.join().unwrap_or(Ok((None, 0))));
        }
    });
    let mut tries = 0;
    let mut best: Option<Vec<u8>> = None;
    for r in results {
        let (j, n) = r?;
        tries += n;
        if best.is_none() {
            best = j;
        }
    }
    best.map(|j| (j, tries))
        .ok_or_else(|| hip::Error::Config(format!("no puzzle solution found (K = {})", p.k)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every thread count finds a #J the puzzle accepts.
    #[test]
    fn threads_find_a_valid_solution() {
        let hi = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, b"i");
        let hr = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, b"r");
        let s = HitSuite::EcdsaSha384;
        for (k, threads) in [(0u8, 4usize), (8, 1), (8, 2), (10, 3), (10, 4)] {
            let p = Puzzle { k, i: vec![9u8; 48] };
            let (j, tries) = solve(threads, &p, s, &hi, &hr, &[1u8; 48]).unwrap_or_else(|e| {
                panic!("K = {k}, {threads} threads: {e}");
            });
            assert!(tries >= 1);
            p.verify(s, &hi, &hr, &j).unwrap_or_else(|e| panic!("K = {k}: {e}"));
        }
    }
}
