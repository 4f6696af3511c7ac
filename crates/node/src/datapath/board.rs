//! The status board: how the control thread asks every worker for a snapshot of its engine and
//! counters without touching the data path's state (each worker answers at its next loop turn).

use serde_json::Value;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Status requests and the workers' answers: the control thread bumps `requested`; each worker
/// notices at its next loop turn and publishes a snapshot of its engine and counters.
#[derive(Debug)]
pub struct Board {
    pub(crate) requested: AtomicU64,
    pub(crate) slots: Vec<Mutex<(u64, Value)>>,
}

impl Board {
    /// A board for `workers` workers.
    pub fn new(workers: usize) -> Board {
        Board {
            requested: AtomicU64::new(0),
            slots: (0..workers).map(|_| Mutex::new((0, Value::Null))).collect(),
        }
    }

    /// Asks every worker for a snapshot and waits (up to a second) for all of them.
    pub fn collect(&self) -> Vec<Value> {
        self.collect_waking(|| {})
    }

    /// [`Board::collect`], calling `wake` once the request is posted, so that idle workers
    /// publish at once rather than at their next poll.
    pub fn collect_waking(&self, wake: impl Fn()) -> Vec<Value> {
        let g = self.requested.fetch_add(1, Ordering::AcqRel) + 1;
        wake();
        let deadline = Instant::now() + std::time::Duration::from_secs(1);
        loop {
            let fresh = self.slots.iter().all(|s| s.lock().map_or(true, |s| s.0 >= g));
            if fresh || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        self.slots.iter().map(|s| s.lock().map(|s| s.1.clone()).unwrap_or(Value::Null)).collect()
    }
}
