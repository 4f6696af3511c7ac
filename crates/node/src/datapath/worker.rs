//! Worker threads of the data path: each runs poll(2) over its descriptors and drives one or
//! both halves (outbound: TUN → seal → carrier, inbound: carrier → open → TUN).
//!
//! How work is split between threads (DESIGN rule 5, per-SA hot state that does not bounce):
//! with two workers, one thread owns the outbound half and with it every outbound SA (sequence
//! numbers, hence GCM/ChaCha nonces, are never shared: a second thread sealing with the same SA
//! would need an atomic counter per packet or risk nonce reuse), the other owns the inbound half
//! and every inbound SA (replay windows are updated by one thread). The two share only the TUN
//! descriptor (one reads, the other writes) and the carrier socket (one sends, the other
//! receives), which the kernel allows without locks. A bulk TCP transfer loads the sealing thread
//! on one host and the opening thread on the other, one core each on a two-core machine. More
//! cores take lanes (`super::lanes`, `[interface] queues`): flows hashed to TUN queues, each lane
//! with its own SAs (RFC 9611), its own socket and its worker(s).
//! With one worker (the default below four cores, see [`super::tuning::Tuning`]) a single thread drives both
//! halves; each half still has its own engine.

use super::board::Board;
use super::inbound::Inbound;
use super::outbound::Outbound;
use super::snapshot;
use crate::log::{Level, log_event};
use crate::sys;
use ipsec::{Engine, SaEvent, Time};
use serde_json::{Value, json};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Poll timeout: how soon a stop request, a status request or a lifetime timer is noticed.
pub const POLL_MS: i32 = 100;

/// One worker thread: its halves and its place on the board.
#[derive(Debug)]
pub struct Worker {
    /// TUN → carrier, if this worker has it.
    pub out: Option<(Outbound, RawFd)>,
    /// Carrier → TUN, if this worker has it; with the carrier's descriptors.
    pub inb: Option<(Inbound, Vec<RawFd>)>,
    /// The lane (TUN queue and carrier socket) it serves.
    pub lane: usize,
    /// Index of this worker's slot on the board.
    pub slot: usize,
    /// The node's start (time origin of the engines).
    pub start: Instant,
    /// (direction, SPI as `status` writes it) of the BEET SAs, which the engine runs as
    /// transport mode: `status` names their mode "beet".
    pub beet: Vec<(&'static str, String)>,
    /// The scheduling class asked for; the thread records what it got in `scheduled`.
    pub scheduling: crate::config::Scheduling,
    /// The scheduling class the thread runs with (set when it starts).
    scheduled: crate::config::Scheduling,
}

impl Worker {
    /// A worker of `lane` with the given halves, publishing on board slot `slot`.
    pub fn new(
        out: Option<(Outbound, RawFd)>,
        inb: Option<(Inbound, Vec<RawFd>)>,
        lane: usize,
        slot: usize,
        start: Instant,
    ) -> Worker {
        Worker {
            out,
            inb,
            lane,
            slot,
            start,
            beet: Vec::new(),
            scheduling: crate::config::Scheduling::Other,
            scheduled: crate::config::Scheduling::Other,
        }
    }

    /// Puts the calling thread (this worker's) into the asked scheduling class; without the
    /// privilege it stays an ordinary thread and says so once in the log.
    pub fn apply_scheduling(&mut self) {
        use crate::config::Scheduling;
        if self.scheduling != Scheduling::Fifo {
            return;
        }
        match sys::set_thread_fifo(1) {
            Ok(()) => self.scheduled = Scheduling::Fifo,
            Err(e) => crate::log::log_event!(
                crate::log::Level::Warn,
                "realtime-refused",
                "lane" => self.lane,
                "error" => e.to_string(),
                "action" => "data path runs as an ordinary thread (SCHED_OTHER)"
            ),
        }
    }

    fn now(&self) -> Time {
        Time(self.start.elapsed().as_micros() as u64)
    }

    /// Runs until `stop` is set.
    pub fn run(&mut self, stop: &AtomicBool, board: &Board) -> io::Result<()> {
        let mut fds = Vec::new();
        if let Some((_, fd)) = &self.out {
            fds.push(*fd);
        }
        let first_in = fds.len();
        if let Some((_, v)) = &self.inb {
            fds.extend(v);
        }
        let mut ready = vec![false; fds.len()];
        let mut last_timer = self.now();
        let mut served = 0;
        while !stop.load(Ordering::Relaxed) {
            sys::poll_readable(&fds, &mut ready, POLL_MS)?;
            let now = self.now();
            if let Some((o, _)) = &mut self.out {
                if ready[0] {
                    o.on_readable(now)?;
                }
            }
            if let Some((i, _)) = &mut self.inb {
                for (k, r) in ready[first_in..].iter().enumerate() {
                    if *r {
                        i.on_readable(k, now)?;
                    }
                }
            }
            let want = board.requested.load(Ordering::Acquire);
            if want != served {
                served = want;
                let snap = self.snapshot(now);
                if let Ok(mut s) = board.slots[self.slot].lock() {
                    *s = (want, snap);
                }
            }
            if now.0.saturating_sub(last_timer.0) >= 1_000_000 {
                last_timer = now;
                for e in self.engines_mut() {
                    e.poll(now);
                    for ev in e.drain_events() {
                        log_sa_event(&ev);
                    }
                }
            }
        }
        Ok(())
    }

    fn engines_mut(&mut self) -> Vec<&mut Engine> {
        let mut v = Vec::new();
        if let Some((o, _)) = &mut self.out {
            v.push(&mut o.engine);
        }
        if let Some((i, _)) = &mut self.inb {
            v.push(&mut i.engine);
        }
        v
    }

    fn snapshot(&self, now: Time) -> Value {
        let role = match (&self.out, &self.inb) {
            (Some(_), Some(_)) => "both",
            (Some(_), None) => "out",
            _ => "in",
        };
        let mut parts = Vec::new();
        if let Some((o, _)) = &self.out {
            parts.push(snapshot::engine_json(&o.engine, &o.counters, now));
        }
        if let Some((i, _)) = &self.inb {
            parts.push(snapshot::engine_json(&i.engine, &i.counters, now));
        }
        let mut v = snapshot::merge(&parts);
        for sa in v["sas"].as_array_mut().into_iter().flatten() {
            sa["lane"] = json!(self.lane);
            if self.beet.iter().any(|(dir, spi)| sa["direction"] == *dir && sa["spi"] == *spi) {
                sa["mode"] = json!("beet");
            }
        }
        v["role"] = json!(role);
        v["lane"] = json!(self.lane);
        v["scheduling"] = json!(self.scheduled.as_str());
        v["cpu_s"] = json!(crate::netns::thread_self_cpu_seconds().unwrap_or(f64::NAN));
        v
    }
}

/// Logs an SA lifetime event (RFC 4301 §4.4.2.1): soft is the time to rekey, hard stops the SA.
fn log_sa_event(ev: &SaEvent) {
    match ev {
        SaEvent::SoftExpired { spi, limit } => log_event!(
            Level::Info,
            "sa-soft-expired",
            "spi" => spi.to_string(),
            "limit" => limit
        ),
        SaEvent::HardExpired { spi, limit } => log_event!(
            Level::Warn,
            "sa-hard-expired",
            "spi" => spi.to_string(),
            "limit" => limit
        ),
    }
}
