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
//! cores take lanes (`crate::lanes`, `[interface] queues`): flows hashed to TUN queues, each lane
//! with its own SAs (RFC 9611), its own socket and its worker(s).
//! With one worker (the default below four cores, see [`Tuning`]) a single thread drives both
//! halves; each half still has its own engine.

use crate::control::{self, ControlServer};
use crate::inbound::Inbound;
use crate::log::{Level, log_event};
use crate::metrics::MetricsServer;
use crate::outbound::Outbound;
use crate::sys;
use ipsec::{Engine, SaEvent, Time};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::os::fd::RawFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Poll timeout: how soon a stop request, a status request or a lifetime timer is noticed.
const POLL_MS: i32 = 100;

/// Configured (src, dst) of inbound SAs by (SPI, IP protocol).
pub type InboundAddrs = HashMap<(u32, u8), (IpAddr, IpAddr)>;

macro_rules! counters {
    ($($(#[doc = $doc:literal])* $f:ident,)*) => {
        /// Counters of the node (the engine counts its own drops).
        #[derive(Debug, Clone, Default)]
        pub struct NodeCounters { $($(#[doc = $doc])* pub $f: u64,)* }

        impl NodeCounters {
            /// `(field, doc comment)` of every counter: the metrics' help text (`crate::metrics`).
            pub const HELP: &'static [(&'static str, &'static str)] =
                &[$((stringify!($f), concat!($($doc),*)),)*];
            /// As JSON.
            pub fn to_json(&self) -> Value {
                json!({ $(stringify!($f): self.$f,)* })
            }
            /// Adds `o` to these counters.
            pub fn add(&mut self, o: &NodeCounters) {
                $(self.$f += o.$f;)*
            }
        }
    };
}

counters! {
    /// Packets read from the TUN device (segments, after splitting super-packets).
    tun_rx,
    /// Packets written to the TUN device (before coalescing).
    tun_tx,
    /// Datagrams/packets received on the carrier.
    net_rx,
    /// Protected packets sent on the carrier.
    net_tx,
    /// IKE messages (RFC 3948 non-ESP marker) dropped: no IKE daemon in this node yet.
    ike_dropped,
    /// NAT-keepalives received and ignored (RFC 3948 §2.3).
    keepalives,
    /// Datagrams too short to hold an SPI.
    runts,
    /// Packets the packet filter blocked (both directions; per-rule hits in `filter`).
    filter_blocked,
    /// Oversize DF/IPv6 packets dropped before sealing, answered with ICMP "too big" (`icmp`).
    icmp_too_big,
    /// Packets the SPD said to bypass, sent in clear by `[network] bypass-device`.
    bypass_forwarded,
    /// Packets the SPD said to bypass, dropped: no `bypass-device`, or it refused them.
    bypass_unforwarded,
    /// Protected packets the carrier cannot send (AH over UDP).
    unsendable,
    /// Send errors (unreachable, refused).
    send_errors,
    /// TUN write errors (per write, which may carry a coalesced super-packet).
    tun_write_errors,
    /// TUN reads that returned a packet the offload code refused (counted, skipped).
    tun_read_errors,
    /// Batches handed to the engine.
    batches,
    /// read(2) calls on the TUN device.
    tun_reads,
    /// Write batches to the TUN device.
    tun_write_batches,
    /// write(2)/writev(2) calls on the TUN device: a super-packet coalesced from several
    /// decrypted segments (`gro`) is one.
    tun_writes,
    /// send system calls on the carrier.
    send_syscalls,
    /// receive system calls on the carrier.
    recv_syscalls,
}

/// Which speed-ups the data path uses. All on by default (two workers from four cores up);
/// `HIPSEC_NODE_TUNING` (a comma list of `no-mmsg`, `no-gso`, `no-gro`, `no-offload`,
/// `no-buffers`, `sockbuf=BYTES`, `one-worker`, `two-workers`, `no-realtime`) changes them, for kernels that lack one and for
/// measuring each one's worth (`hipsec bench tunnel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// recvmmsg/sendmmsg on the UDP carrier.
    pub mmsg: bool,
    /// UDP GSO (UDP_SEGMENT) on send; needs `mmsg`.
    pub gso: bool,
    /// UDP GRO on receive; needs `mmsg`.
    pub gro: bool,
    /// TUN virtio-net header with TSO/checksum offloads and GRO on write.
    pub tun_offload: bool,
    /// Larger TUN transmit queue, and socket buffers of `socket_buffer` bytes set with
    /// SO_RCVBUFFORCE/SO_SNDBUFFORCE (not capped by `net.core.[rw]mem_max`).
    pub big_buffers: bool,
    /// Socket buffer bytes with `big_buffers` (word `sockbuf=BYTES`).
    pub socket_buffer: usize,
    /// Worker threads: 1 (both halves) or 2 (one per half).
    pub workers: usize,
    /// Data-path threads as `[data-path] scheduling` says (word `no-realtime`: always
    /// SCHED_OTHER, to measure what real-time scheduling is worth).
    pub realtime: bool,
}

/// Cores from which a node runs two workers by default. On two cores (`hipsec bench tunnel`:
/// both nodes, iperf3 and kernel TCP on one machine; medians of 3, three batches) two workers
/// per node moved no more data (4.0 vs 4.2, 5.0 vs 4.8 Gbit/s) for more CPU (2.3 vs 1.8 and
/// 2.3 vs 2.1 µs/KB): the second thread wakes up for the few packets of the other direction.
const TWO_WORKERS_FROM_CORES: usize = 4;

/// Socket buffers of the carrier (forced, so also where `net.core.[rw]mem_max` is smaller).
/// Measured on two cores (`hipsec bench tunnel`, medians of 3 alternating runs): 16 MiB did no
/// better than 4 MiB (4.54 vs 4.56 Gbit/s); with TUN offloads the queues stay short.
pub const DEFAULT_SOCKET_BUFFER: usize = 4 << 20;

impl Default for Tuning {
    fn default() -> Tuning {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Tuning {
            mmsg: true,
            gso: true,
            gro: true,
            tun_offload: true,
            big_buffers: true,
            socket_buffer: DEFAULT_SOCKET_BUFFER,
            workers: if cores >= TWO_WORKERS_FROM_CORES { 2 } else { 1 },
            realtime: true,
        }
    }
}

impl Tuning {
    /// From a comma list of `no-…`/`one-worker` words; unknown words are returned as errors.
    pub fn parse(s: &str) -> Result<Tuning, String> {
        let mut t = Tuning::default();
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "no-mmsg" => t.mmsg = false,
                "no-gso" => t.gso = false,
                "no-gro" => t.gro = false,
                "no-offload" => t.tun_offload = false,
                "no-buffers" => t.big_buffers = false,
                "one-worker" => t.workers = 1,
                "two-workers" => t.workers = 2,
                "no-realtime" => t.realtime = false,
                w if w.starts_with("sockbuf=") => {
                    t.socket_buffer = w["sockbuf=".len()..]
                        .parse()
                        .ok()
                        .filter(|&b| (4096..=1 << 30).contains(&b))
                        .ok_or_else(|| format!("HIPSEC_NODE_TUNING: {w:?}: want 4096..=2^30"))?;
                }
                other => return Err(format!("HIPSEC_NODE_TUNING: unknown word {other:?}")),
            }
        }
        if !t.mmsg {
            (t.gso, t.gro) = (false, false);
        }
        Ok(t)
    }

    /// From the environment (`HIPSEC_NODE_TUNING`), defaults if unset.
    pub fn from_env() -> Result<Tuning, String> {
        Tuning::parse(&std::env::var("HIPSEC_NODE_TUNING").unwrap_or_default())
    }
}

/// Status requests and the workers' answers: the control thread bumps `requested`; each worker
/// notices at its next loop turn and publishes a snapshot of its engine and counters.
#[derive(Debug)]
pub struct Board {
    requested: AtomicU64,
    slots: Vec<Mutex<(u64, Value)>>,
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
        let g = self.requested.fetch_add(1, Ordering::AcqRel) + 1;
        let deadline = Instant::now() + std::time::Duration::from_secs(1);
        loop {
            let fresh = self.slots.iter().all(|s| s.lock().map_or(true, |s| s.0 >= g));
            if fresh || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.slots.iter().map(|s| s.lock().map(|s| s.1.clone()).unwrap_or(Value::Null)).collect()
    }
}

/// Runs `workers` on threads of their own (named `hipsec-out`, `hipsec-in` or `hipsec-io`, as
/// `top -H` shows them) and answers `control` on this thread until `stop` is set; a worker that
/// fails sets `stop` for all. Returns the first worker error.
pub fn run_all(
    workers: Vec<Worker>,
    control: Option<&ControlServer>,
    metrics: Option<&MetricsServer>,
    filter: Option<&crate::filter_stage::SharedFilter>,
    stop: &AtomicBool,
    start: Instant,
) -> io::Result<()> {
    let board = Board::new(workers.len());
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for mut w in workers {
            let role = match (&w.out, &w.inb) {
                (Some(_), None) => "hipsec-out",
                (None, Some(_)) => "hipsec-in",
                _ => "hipsec-io",
            };
            // Lanes after the first get their number (`top -H` shows "hipsec-io1").
            let name = if w.lane == 0 { role.to_string() } else { format!("{role}{}", w.lane) };
            let board = &board;
            let h = std::thread::Builder::new().name(name).spawn_scoped(s, move || {
                w.apply_scheduling();
                let r = w.run(stop, board);
                if r.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                r
            });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The scope waits for the workers already started: stop them first.
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        // The control socket first (if any), then the metrics listener (if any).
        let fds: Vec<RawFd> =
            control.iter().map(|c| c.fd()).chain(metrics.iter().map(|m| m.fd())).collect();
        let mut ready = vec![false; fds.len()];
        while !stop.load(Ordering::Relaxed) {
            if fds.is_empty() {
                std::thread::sleep(std::time::Duration::from_millis(POLL_MS as u64));
                continue;
            }
            if sys::poll_readable(&fds, &mut ready, POLL_MS).is_err() {
                continue;
            }
            if let Some(m) = metrics.filter(|_| ready.last() == Some(&true)) {
                // The same snapshot as `status`, so metrics and status never disagree.
                m.serve(|| {
                    let now = Time(start.elapsed().as_micros() as u64);
                    crate::metrics::render(&control::status_value(&board.collect(), now))
                });
            }
            // With a control socket, ready[0] is its readiness.
            if ready[0] {
                if let Some(c) = control {
                    c.serve(|cmd| match cmd {
                        "status" => {
                            let now = Time(start.elapsed().as_micros() as u64);
                            let s = control::status_json(&board.collect(), now);
                            match filter {
                                Some(f) => {
                                    let mut v: Value = serde_json::from_str(&s).unwrap_or_default();
                                    v["filter"] = crate::filter_stage::lock(f).status();
                                    v.to_string()
                                }
                                None => s,
                            }
                        }
                        // Rules are re-read without a restart; a bad file keeps the old ones.
                        "reload-filter" => match filter {
                            Some(f) => match crate::filter_stage::lock(f).reload() {
                                Ok(()) => json!({ "reloaded": true }).to_string(),
                                Err(e) => {
                                    json!({ "reloaded": false, "error": e.to_string() }).to_string()
                                }
                            },
                            None => json!({ "error": "this node has no [filter]" }).to_string(),
                        },
                        other => json!({
                            "error": format!(
                                "unknown command {other:?}; try \"status\" or \"reload-filter\""
                            )
                        })
                        .to_string(),
                    });
                }
            }
        }
        let mut first_err = Ok(());
        for h in handles {
            let r = h.join().unwrap_or_else(|_| Err(io::Error::other("worker panicked")));
            if first_err.is_ok() {
                first_err = r;
            }
        }
        first_err
    })
}

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
    fn apply_scheduling(&mut self) {
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
            parts.push(control::engine_json(&o.engine, &o.counters, now));
        }
        if let Some((i, _)) = &self.inb {
            parts.push(control::engine_json(&i.engine, &i.counters, now));
        }
        let mut v = control::merge(&parts);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_words() {
        let t = Tuning::parse("no-gso, one-worker").unwrap_or_default();
        assert!(t.mmsg && !t.gso && t.gro && t.tun_offload && t.workers == 1);
        let t = Tuning::parse("no-mmsg,two-workers,sockbuf=65536").unwrap_or_default();
        assert!(!t.mmsg && !t.gso && !t.gro && t.workers == 2 && t.socket_buffer == 65536);
        assert!(Tuning::parse("sockbuf=12").is_err());
        assert!(Tuning::parse("no-such").is_err());
        assert_eq!(Tuning::parse("").ok(), Some(Tuning::default()));
    }

    #[test]
    fn counters_add() {
        let mut a = NodeCounters { tun_rx: 2, ..Default::default() };
        a.add(&NodeCounters { tun_rx: 3, net_tx: 1, ..Default::default() });
        assert_eq!((a.tun_rx, a.net_tx), (5, 1));
        assert_eq!(a.to_json()["tun_rx"], 5);
    }
}
