//! The load generator of `hipsec bench ike`: many sans-IO IKEv2 initiators (the `ike` crate)
//! on one UDP socket, each running IKE_SA_INIT and IKE_AUTH (RFC 7296 §1.2; the CHILD SA is
//! made in IKE_AUTH) against a responder node, then — unless told not to — deleting its IKE SA
//! with an INFORMATIONAL DELETE (§1.4.1) so the responder's state stays bounded, and starting
//! the next. Retransmissions follow §2.1 (the crate's timers). Datagrams are matched to their
//! initiator by the IKE SA initiator SPI.

use ike::initiator::{self, InitiatorAuth, InitiatorSaInit, SaInitNext};
use ike::session::{Request, Session};
use ike::{Config, Endpoints, Rejected};
use serde::Serialize;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How the generator runs.
#[derive(Debug, Clone)]
pub(crate) struct GenConfig {
    /// The initiators' connections (ids, credentials, proposals, selectors): one is one
    /// identity for every initiator; with several, the k-th initiator started takes the
    /// (k mod n)-th, so that distinct clients come one after another.
    pub(crate) configs: Vec<Config>,
    /// Virtual IPs each initiator asks for in IKE_AUTH (CP(CFG_REQUEST), RFC 7296 §3.15); empty:
    /// none.
    pub(crate) vips: Vec<std::net::IpAddr>,
    /// Initiators to start in all; `None`: as long as the generator runs.
    pub(crate) limit: Option<u64>,
    /// Where to bind (port 0: any).
    pub(crate) local: SocketAddr,
    /// The responder's IKE port.
    pub(crate) remote: SocketAddr,
    /// Initiators in flight at any time.
    pub(crate) concurrency: usize,
    /// Start handshakes at this rate (setups/s) rather than one as each finishes.
    pub(crate) rate: Option<f64>,
    /// DELETE each IKE SA once it is up.
    pub(crate) delete: bool,
}

/// Counters the generator thread advances and the measuring thread reads.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// IKE_AUTH responses that verified: an IKE SA with its CHILD SA is up on both ends.
    pub(crate) setups: AtomicU64,
    /// DELETE exchanges completed.
    pub(crate) deletes: AtomicU64,
    /// Exchanges given up (the peer refused, or stopped answering).
    pub(crate) failed: AtomicU64,
    /// Datagrams dropped by an initiator (unexpected or not verifying).
    pub(crate) dropped: AtomicU64,
    /// Requests sent again after a timeout (§2.1).
    pub(crate) retransmits: AtomicU64,
    /// IKE_SA_INIT requests sent again because the responder asked for a cookie (§2.6).
    pub(crate) cookie_resends: AtomicU64,
}

/// A snapshot of [`Counters`].
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Snapshot {
    /// Setups completed.
    pub setups: u64,
    /// Deletes completed.
    pub deletes: u64,
    /// Exchanges given up.
    pub failed: u64,
    /// Datagrams dropped.
    pub dropped: u64,
    /// Retransmissions.
    pub retransmits: u64,
    /// IKE_SA_INIT sent again for a cookie.
    pub cookie_resends: u64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> Snapshot {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Snapshot {
            setups: r(&self.setups),
            deletes: r(&self.deletes),
            failed: r(&self.failed),
            dropped: r(&self.dropped),
            retransmits: r(&self.retransmits),
            cookie_resends: r(&self.cookie_resends),
        }
    }
}

impl Snapshot {
    /// Counts from `earlier` to `self`.
    pub(crate) fn since(&self, earlier: &Snapshot) -> Snapshot {
        Snapshot {
            setups: self.setups - earlier.setups,
            deletes: self.deletes - earlier.deletes,
            failed: self.failed - earlier.failed,
            dropped: self.dropped - earlier.dropped,
            retransmits: self.retransmits - earlier.retransmits,
            cookie_resends: self.cookie_resends - earlier.cookie_resends,
        }
    }
}

/// One initiator's state.
enum Slot {
    Init(Box<InitiatorSaInit>),
    Auth(Box<InitiatorAuth>),
    Deleting(Box<Session>),
}

struct Gen<'a> {
    g: &'a GenConfig,
    sock: UdpSocket,
    ep: Endpoints,
    slots: HashMap<u64, Slot>,
    c: &'a Counters,
    start: Instant,
    /// The first failure's reason, for the report.
    first_error: Option<String>,
    /// Initiators started so far.
    spawned: u64,
}

fn add(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

impl Gen<'_> {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn send(&self, bytes: &[u8]) {
        // A full socket buffer loses the datagram; the retransmission timer recovers it.
        let _ = self.sock.send_to(bytes, self.g.remote);
    }

    fn fail(&mut self, why: String) {
        add(&self.c.failed);
        self.first_error.get_or_insert(why);
    }

    /// Starts one more initiator, unless the limit is reached.
    fn spawn(&mut self) -> Result<(), String> {
        if self.g.limit.is_some_and(|n| self.spawned >= n) {
            return Ok(());
        }
        let Some(config) = self.g.configs.get(self.spawned as usize % self.g.configs.len().max(1))
        else {
            return Err("no initiator configuration".into());
        };
        self.spawned += 1;
        let provider = crypto::default_provider();
        let (mut st, req) = initiator::start(config.clone(), provider, self.ep, self.now_ms())
            .map_err(|e| format!("starting an initiator: {e}"))?;
        if !self.g.vips.is_empty() {
            st.set_virtual_ips(self.g.vips.clone());
        }
        self.send(&req);
        self.slots.insert(st.spi_i(), Slot::Init(Box::new(st)));
        Ok(())
    }

    /// One datagram from the responder; returns true when its initiator is finished.
    fn datagram(&mut self, bytes: &[u8]) -> Result<bool, String> {
        let Ok(p) = wire::ikev2::Packet::new_checked(bytes) else {
            add(&self.c.dropped);
            return Ok(false);
        };
        let spi = p.spi_i();
        let Some(slot) = self.slots.remove(&spi) else {
            add(&self.c.dropped);
            return Ok(false);
        };
        let now = self.now_ms();
        let next = match slot {
            Slot::Init(st) => match st.handle(now, bytes) {
                Ok(SaInitNext::Resend(st, req)) => {
                    add(&self.c.cookie_resends);
                    self.send(&req);
                    Some(Slot::Init(Box::new(st)))
                }
                Ok(SaInitNext::Auth(st, req)) => {
                    self.send(&req);
                    Some(Slot::Auth(Box::new(st)))
                }
                Err(r) => self.rejected(r, |s| Slot::Init(Box::new(s))),
            },
            Slot::Auth(st) => match st.handle(bytes) {
                Ok(est) => {
                    add(&self.c.setups);
                    if self.g.delete {
                        let provider = crypto::default_provider();
                        let config = self.g.configs.first().cloned().ok_or("no configuration")?;
                        let (mut s, _keys) = Session::new(config, provider, est);
                        let out = s
                            .request(now, Request::DeleteIke)
                            .map_err(|e| format!("DELETE request: {e}"))?;
                        for b in &out.send {
                            self.send(b);
                        }
                        Some(Slot::Deleting(Box::new(s)))
                    } else {
                        None
                    }
                }
                Err(r) => self.rejected(r, |s| Slot::Auth(Box::new(s))),
            },
            Slot::Deleting(mut s) => {
                match s.handle(now, bytes) {
                    Ok(out) => {
                        for b in &out.send {
                            self.send(b);
                        }
                    }
                    Err(_) => add(&self.c.dropped),
                }
                if s.is_closed() {
                    add(&self.c.deletes);
                    None
                } else {
                    Some(Slot::Deleting(s))
                }
            }
        };
        match next {
            Some(slot) => {
                self.slots.insert(spi, slot);
                Ok(false)
            }
            None => Ok(true),
        }
    }

    fn rejected<S>(&mut self, r: Rejected<S>, back: impl FnOnce(S) -> Slot) -> Option<Slot> {
        let why = r.error().to_string();
        match r.into_state() {
            Some(s) => {
                add(&self.c.dropped);
                Some(back(s))
            }
            None => {
                self.fail(why);
                None
            }
        }
    }

    /// Retransmissions (§2.1); returns how many initiators gave up.
    fn timers(&mut self) -> usize {
        let now = self.now_ms();
        let mut resend = Vec::new();
        let mut gone = Vec::new();
        for (spi, slot) in self.slots.iter_mut() {
            let r = match slot {
                Slot::Init(s) => s.retransmit().on_timeout(now).map(|b| b.map(<[u8]>::to_vec)),
                Slot::Auth(s) => s.retransmit().on_timeout(now).map(|b| b.map(<[u8]>::to_vec)),
                Slot::Deleting(s) => {
                    if s.deadline_ms().is_some_and(|d| d <= now) {
                        let out = s.on_timeout(now);
                        if s.is_closed() {
                            Err(ike::Error::PeerMisbehaved(ike::PeerMisbehaved::UnexpectedMessage(
                                "no answer to DELETE",
                            )))
                        } else {
                            Ok(out.send.into_iter().next())
                        }
                    } else {
                        Ok(None)
                    }
                }
            };
            match r {
                Ok(Some(b)) => resend.push(b),
                Ok(None) => {}
                Err(e) => gone.push((*spi, e.to_string())),
            }
        }
        for b in resend {
            add(&self.c.retransmits);
            self.send(&b);
        }
        let n = gone.len();
        for (spi, why) in gone {
            self.slots.remove(&spi);
            self.fail(format!("gave up: {why}"));
        }
        n
    }
}

/// The generator's thread: its first failure's reason, if any.
pub(crate) type Worker = std::thread::JoinHandle<Result<Option<String>, String>>;

/// Runs the generator on a thread of its own in network namespace `ns` until `stop`.
pub(crate) fn spawn_in(
    ns: String,
    g: GenConfig,
    c: Arc<Counters>,
    stop: Arc<AtomicBool>,
) -> Result<Worker, String> {
    std::thread::Builder::new()
        .name("ike-generator".into())
        .spawn(move || -> Result<Option<String>, String> {
            node::netns::enter(&ns).map_err(|e| format!("setns {ns}: {e}"))?;
            run(&g, &c, &stop)
        })
        .map_err(|e| format!("generator thread: {e}"))
}

/// Runs the generator on the calling thread until `stop`; returns the first failure's reason.
pub(crate) fn run(
    g: &GenConfig,
    c: &Counters,
    stop: &Arc<AtomicBool>,
) -> Result<Option<String>, String> {
    let sock = UdpSocket::bind(g.local).map_err(|e| format!("binding {}: {e}", g.local))?;
    // At a fixed rate the loop must come round often enough to start handshakes on time.
    let tick = if g.rate.is_some() { 1 } else { 5 };
    sock.set_read_timeout(Some(Duration::from_millis(tick))).map_err(|e| e.to_string())?;
    let local = sock.local_addr().map_err(|e| e.to_string())?;
    let mut lg = Gen {
        g,
        sock,
        ep: Endpoints { local, remote: g.remote },
        slots: HashMap::with_capacity(g.concurrency * 2),
        c,
        start: Instant::now(),
        first_error: None,
        spawned: 0,
    };
    if g.rate.is_none() {
        for _ in 0..g.concurrency {
            lg.spawn()?;
        }
    }
    let mut started = 0u64;
    let mut buf = vec![0u8; 65_535];
    let mut last_timers = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        match lg.sock.recv_from(&mut buf) {
            Ok((n, from)) if from == g.remote => {
                let bytes = buf[..n].to_vec();
                if lg.datagram(&bytes)? && g.rate.is_none() {
                    lg.spawn()?;
                }
            }
            Ok(_) => add(&c.dropped),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(format!("receiving: {e}")),
        }
        if let Some(rate) = g.rate {
            let due = (lg.start.elapsed().as_secs_f64() * rate) as u64;
            while started < due && lg.slots.len() < g.concurrency {
                lg.spawn()?;
                started += 1;
            }
            // With every slot busy the responder is saturated: starts that are late are
            // skipped, not bunched up later (the measured rate then says so).
            started = started.max(due);
        }
        if last_timers.elapsed() >= Duration::from_millis(20) {
            last_timers = Instant::now();
            let gave_up = lg.timers();
            if g.rate.is_none() {
                for _ in 0..gave_up {
                    lg.spawn()?;
                }
            }
        }
    }
    Ok(lg.first_error)
}
