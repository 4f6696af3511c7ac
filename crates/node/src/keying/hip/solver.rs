//! The initiator's puzzle search on several cores (RFC 7401 §4.1.2 leaves how to search to the
//! initiator). `hip::puzzle::Puzzle::solve_lane` splits the counters into lanes; the control
//! thread runs lane 0 and helper threads, started once with the driver and waiting on a
//! channel, run the others. Spawning them per search cost about 60 µs of a 0.3 ms search at
//! K = 10 (measured); a parked thread wakes in a fraction of that. The first lane to find #J
//! raises the search's stop flag; the control thread does not wait for the others to notice
//! (they check every 64 hashes), and their late answers are recognised by the search number.

use hip::HostIdentityTag;
use hip::puzzle::{Lane, Puzzle};
use hip::suite::HitSuite;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};

/// Below this K a search is a few dozen hashes: waking a thread would cost more than it saves.
const MIN_K: u8 = 6;

/// One lane's share of one search.
struct Job {
    search: u64,
    puzzle: Puzzle,
    suite: HitSuite,
    hit_i: HostIdentityTag,
    hit_r: HostIdentityTag,
    seed: Vec<u8>,
    lane: Lane,
    stop: Arc<AtomicBool>,
}

/// What a helper lane found: the search, and #J with the hashes it made.
type Answer = (u64, Result<(Option<Vec<u8>>, u64), hip::Error>);

/// The control thread's end of the helper threads.
pub struct Solver {
    helpers: Vec<Sender<Job>>,
    answers: Receiver<Answer>,
    next_search: std::cell::Cell<u64>,
}

impl std::fmt::Debug for Solver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Solver").field("threads", &(self.helpers.len() + 1)).finish()
    }
}

impl Solver {
    /// Searches with `threads` lanes: this thread and `threads - 1` helpers, started now.
    /// They end when the solver is dropped (their channel closes).
    pub fn new(threads: usize) -> Solver {
        let (answer_tx, answers) = channel();
        let mut helpers = Vec::new();
        for i in 1..threads.max(1) {
            let (tx, rx) = channel::<Job>();
            let answer_tx = answer_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("hip-puzzle-{i}"))
                .spawn(move || helper(rx, answer_tx));
            // Without the thread the search runs on fewer lanes: slower, still correct.
            if spawned.is_ok() {
                helpers.push(tx);
            }
        }
        Solver { helpers, answers, next_search: std::cell::Cell::new(0) }
    }

    /// #J for `p`, and the hashes the lanes made (those the helpers reported by then).
    pub fn solve(
        &self,
        p: &Puzzle,
        suite: HitSuite,
        hit_i: &HostIdentityTag,
        hit_r: &HostIdentityTag,
        seed: &[u8],
    ) -> Result<(Vec<u8>, u64), hip::Error> {
        if self.helpers.is_empty() || p.k < MIN_K {
            return p.solve(suite, hit_i, hit_r, seed);
        }
        let search = self.next_search.get().wrapping_add(1);
        self.next_search.set(search);
        let of = self.helpers.len() as u64 + 1;
        let stop = Arc::new(AtomicBool::new(false));
        let mut lanes = 1;
        for (k, h) in self.helpers.iter().enumerate() {
            let job = Job {
                search,
                puzzle: p.clone(),
                suite,
                hit_i: *hit_i,
                hit_r: *hit_r,
                seed: seed.to_vec(),
                lane: Lane { index: k as u64 + 1, of },
                stop: stop.clone(),
            };
            if h.send(job).is_ok() {
                lanes += 1;
            }
        }
        // A helper that is gone leaves its lane unsearched: search them all here instead.
        if lanes < of {
            stop.store(true, Ordering::Relaxed);
            return p.solve(suite, hit_i, hit_r, seed);
        }
        let flag = stop.clone();
        let (mine, mut tries) =
            p.solve_lane(suite, hit_i, hit_r, seed, Lane { index: 0, of }, &|| {
                flag.load(Ordering::Relaxed)
            })?;
        if let Some(j) = mine {
            stop.store(true, Ordering::Relaxed);
            return Ok((j, tries));
        }
        // Stopped: a helper found #J (or will report an error). Older searches' answers are
        // skipped.
        let mut heard = 1;
        while heard < lanes {
            let Ok((s, r)) = self.answers.recv() else { break };
            if s != search {
                continue;
            }
            heard += 1;
            let (j, n) = r?;
            tries += n;
            if let Some(j) = j {
                return Ok((j, tries));
            }
        }
        Err(hip::Error::Config(format!("no puzzle solution found (K = {})", p.k)))
    }
}

/// A helper thread: one lane per job until the solver is dropped.
fn helper(jobs: Receiver<Job>, answers: Sender<Answer>) {
    while let Ok(j) = jobs.recv() {
        let r = j.puzzle.solve_lane(j.suite, &j.hit_i, &j.hit_r, &j.seed, j.lane, &|| {
            j.stop.load(Ordering::Relaxed)
        });
        if matches!(r, Ok((Some(_), _))) {
            j.stop.store(true, Ordering::Relaxed);
        }
        if answers.send((j.search, r)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every thread count finds a #J the puzzle accepts, search after search (late answers
    /// of one search must not be taken for the next one's).
    #[test]
    fn threads_find_a_valid_solution() {
        let hi = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, b"i");
        let hr = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, b"r");
        let s = HitSuite::EcdsaSha384;
        for threads in [1usize, 2, 3, 4] {
            let solver = Solver::new(threads);
            for (round, k) in [0u8, 8, 10, 10, 8, 10].into_iter().enumerate() {
                let mut i = vec![9u8; 48];
                i[0] = round as u8;
                let p = Puzzle { k, i };
                let (j, tries) = solver.solve(&p, s, &hi, &hr, &[1u8; 48]).unwrap_or_else(|e| {
                    panic!("K = {k}, {threads} threads: {e}");
                });
                assert!(tries >= 1);
                p.verify(s, &hi, &hr, &j).unwrap_or_else(|e| panic!("K = {k}: {e}"));
            }
        }
    }
}
