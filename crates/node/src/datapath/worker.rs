//! Worker threads of the data path: each runs poll(2) over its descriptors and drives one or
//! both halves (outbound: TUN → seal → carrier, inbound: carrier → open → TUN).
//!
//! How work is split between threads (per-SA hot state that does not bounce between cores):
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
use super::mailbox::{Event, Mailbox, Update};
use super::outbound::Outbound;
use super::snapshot;
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
    /// Where control-plane updates come from and events go (None: a fixed node, events logged).
    pub mailbox: Option<Mailbox>,
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
            mailbox: None,
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
            Err(e) => {
                tracing::warn!(
                    lane = self.lane,
                    error = e.to_string(),
                    action = "data path runs as an ordinary thread (SCHED_OTHER)",
                    "realtime-refused"
                )
            }
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
        let wake_at = fds.len();
        if let Some(m) = &self.mailbox {
            fds.push(m.fd());
        }
        let mut ready = vec![false; fds.len()];
        let mut last_timer = self.now();
        let mut served = 0;
        while !stop.load(Ordering::Relaxed) {
            sys::poll_readable(&fds, &mut ready, POLL_MS)?;
            let now = self.now();
            // Updates first: an SA acknowledged as installed must see the very next packet.
            if ready.get(wake_at) == Some(&true) {
                if let Some(m) = &self.mailbox {
                    m.clear_wake();
                }
            }
            let applied = self.apply_updates();
            if let Some((o, _)) = &mut self.out {
                // An installed SA may be the one held packets wait for: they go first.
                if applied {
                    o.release_held(now);
                }
                if ready[0] {
                    o.on_readable(now)?;
                }
            }
            if let Some((i, _)) = &mut self.inb {
                for (k, r) in ready[first_in..wake_at].iter().enumerate() {
                    if *r {
                        i.on_readable(k, now)?;
                    }
                }
            }
            self.forward_events(false, now);
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
                self.forward_events(true, now);
            }
        }
        Ok(())
    }

    /// Applies every queued envelope of updates, in order, and acknowledges each; true if
    /// there was one.
    fn apply_updates(&mut self) -> bool {
        let Some(m) = &self.mailbox else { return false };
        let mut applied = false;
        while let Some(env) = m.next() {
            applied = true;
            let mut errors = Vec::new();
            for (k, u) in env.updates.into_iter().enumerate() {
                if let Err(e) = Self::apply_one(&mut self.out, &mut self.inb, u) {
                    errors.push((k, e));
                }
            }
            m.emit(Event::Applied { ticket: env.ticket, worker: m.worker, errors });
        }
        applied
    }

    /// Routes one update to the half it concerns (policies and endpoints to both).
    fn apply_one(
        out: &mut Option<(Outbound, RawFd)>,
        inb: &mut Option<(Inbound, Vec<RawFd>)>,
        u: Update,
    ) -> Result<(), String> {
        match u {
            Update::AddOutbound { .. }
            | Update::DelOutbound { .. }
            | Update::SetEndpoint { .. } => match out {
                Some((o, _)) => o.apply(u),
                None => Err("this worker has no outbound half".into()),
            },
            Update::AddInbound { .. } | Update::DelInbound { .. } => match inb {
                Some((i, _)) => i.apply(u),
                None => Err("this worker has no inbound half".into()),
            },
            Update::SetPolicy { id, spec } => {
                if let Some((o, _)) = out {
                    o.apply(Update::SetPolicy { id, spec: spec.clone() })?;
                }
                match inb {
                    Some((i, _)) => i.apply(Update::SetPolicy { id, spec }),
                    None => Ok(()),
                }
            }
            Update::DelPolicy { id } => {
                if let Some((o, _)) = out {
                    o.apply(Update::DelPolicy { id })?;
                }
                match inb {
                    Some((i, _)) => i.apply(Update::DelPolicy { id }),
                    None => Ok(()),
                }
            }
            Update::MoveEndpoint { from, to } => {
                if let Some((o, _)) = out {
                    o.apply(Update::MoveEndpoint { from, to })?;
                }
                match inb {
                    Some((i, _)) => i.apply(Update::MoveEndpoint { from, to }),
                    None => Ok(()),
                }
            }
        }
    }

    /// Hands the engines' events (acquires at once; lifetimes when `timers`, after re-checking
    /// the time-based limits) and the inbound half's events to the control plane, or logs them
    /// when the node has none.
    fn forward_events(&mut self, timers: bool, now: Time) {
        let lane = self.lane;
        let mut sa_events = Vec::new();
        for (dir, e) in self.engines_mut() {
            if timers {
                e.poll(now);
            }
            if e.has_events() {
                sa_events.extend(e.drain_events().into_iter().map(|ev| (dir, ev)));
            }
        }
        let half_events = match &mut self.inb {
            Some((i, _)) if !i.events.is_empty() => std::mem::take(&mut i.events),
            _ => Vec::new(),
        };
        for (dir, ev) in sa_events {
            match &self.mailbox {
                Some(m) => m.emit(event_of(lane, dir, ev)),
                None => log_sa_event(&ev),
            }
        }
        if let Some(m) = &self.mailbox {
            half_events.into_iter().for_each(|e| m.emit(e));
        }
    }

    fn engines_mut(&mut self) -> impl Iterator<Item = (&'static str, &mut Engine)> {
        let o = self.out.as_mut().map(|(o, _)| ("out", &mut o.engine));
        let i = self.inb.as_mut().map(|(i, _)| ("in", &mut i.engine));
        o.into_iter().chain(i)
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

/// An engine event as the control plane gets it.
fn event_of(lane: usize, direction: &'static str, ev: SaEvent) -> Event {
    match ev {
        SaEvent::SoftExpired { spi, limit } => {
            Event::Lifetime { lane, direction, spi, hard: false, limit }
        }
        SaEvent::HardExpired { spi, limit } => {
            Event::Lifetime { lane, direction, spi, hard: true, limit }
        }
        SaEvent::Acquire { policy, src, dst, proto } => {
            Event::Acquire { lane, policy, src, dst, proto }
        }
    }
}

/// Logs an SA event (RFC 4301 §4.4.2.1): soft is the time to rekey, hard stops the SA; an
/// acquire asks for an SA a policy lacks.
fn log_sa_event(ev: &SaEvent) {
    match ev {
        SaEvent::SoftExpired { spi, limit } => {
            tracing::info!(spi = %spi, limit = %limit, "sa-soft-expired")
        }
        SaEvent::HardExpired { spi, limit } => {
            tracing::warn!(spi = %spi, limit = %limit, "sa-hard-expired")
        }
        SaEvent::Acquire { policy, src, dst, proto } => {
            tracing::info!(policy = %policy, src = %src, dst = %dst, proto = proto, "acquire")
        }
    }
}
