//! The front thread's connection table, without I/O: each client's read and write buffers with
//! their limits, its deadlines (idle, whole request, stalled reader), the per-listener limit on
//! open connections, and the counters of every refusal and timeout. `control::front` drives it
//! with the bytes its sockets give and take.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// The two listeners a client can come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The control socket: one request line, one JSON line back (or a monitor stream).
    Control,
    /// `/metrics`: one HTTP/1.x request head, one response.
    Metrics,
}

/// Bounds of the table; [`Limits::DEFAULT`] is what the node uses.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open connections per listener; one more is refused (or displaces a slow one, see
    /// `evict_after`).
    pub max_conns: usize,
    /// From accept to a complete request, however the bytes trickle in.
    pub request_deadline: Duration,
    /// Longest silence while a request is incomplete.
    pub idle: Duration,
    /// When the table is full, a client still sending its request after this long is closed to
    /// make room for the newcomer: a crowd of slow clients cannot lock out a quick one.
    pub evict_after: Duration,
    /// Longest time a reply may sit unread before the client is dropped.
    pub write_stall: Duration,
    /// Largest control request (`commands::MAX_REQUEST`).
    pub max_request: usize,
    /// Largest HTTP request head.
    pub max_head: usize,
    /// Event bytes a monitor client may have waiting; beyond, it is dropped (it cannot keep up).
    pub max_monitor_backlog: usize,
}

impl Limits {
    /// The node's limits.
    pub const DEFAULT: Limits = Limits {
        max_conns: 256,
        request_deadline: Duration::from_secs(2),
        idle: Duration::from_millis(1500),
        evict_after: Duration::from_millis(250),
        write_stall: Duration::from_secs(2),
        max_request: super::commands::MAX_REQUEST,
        max_head: 8192,
        max_monitor_backlog: 256 << 10,
    };
}

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Its request is arriving.
    Reading,
    /// Its request is with the control thread (its deadlines wait: the delay is ours).
    Waiting,
    /// Its reply is being written; closed once written.
    Writing,
    /// A `hipsec monitor` client: event lines are written as they come.
    Monitor,
    /// Its refusal is written and our side shut: what it still sends is read and dropped
    /// until it closes (else the kernel would reset the connection and the refusal be lost),
    /// for at most an idle timeout of silence or a request deadline in all.
    Draining,
}

/// Why the table closed a connection (each reason has a counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Close {
    /// The request was not complete within the whole-request deadline.
    Deadline,
    /// Nothing arrived for the idle timeout while the request was incomplete.
    Idle,
    /// Displaced by a newcomer while the table was full.
    Evicted,
    /// The reply (or a monitor's events) went unread.
    SlowReader,
    /// Done draining a refused request (not counted again: the refusal was).
    Drained,
}

/// One client.
#[derive(Debug)]
pub struct Conn {
    /// Its listener.
    pub kind: Kind,
    /// Its phase.
    pub phase: Phase,
    /// The request so far (zeroized when dropped or grown: it may hold keys).
    pub rbuf: Zeroizing<Vec<u8>>,
    /// Reply bytes not yet written, from `wpos` (zeroized: `ike-keys` replies hold keys).
    pub wbuf: Zeroizing<Vec<u8>>,
    /// How much of `wbuf` is written.
    pub wpos: usize,
    /// When it was accepted.
    pub opened: Instant,
    /// Its last read (or accept).
    pub last_read: Instant,
    /// Since when its pending output has made no progress (None with nothing pending).
    pub stalled_since: Option<Instant>,
    /// Once its reply is out: drain rather than close (a refusal of a request still arriving).
    pub linger: bool,
}

impl Conn {
    /// A client just accepted.
    pub fn new(kind: Kind, now: Instant) -> Conn {
        Conn {
            kind,
            phase: Phase::Reading,
            rbuf: Zeroizing::new(Vec::new()),
            wbuf: Zeroizing::new(Vec::new()),
            wpos: 0,
            opened: now,
            last_read: now,
            stalled_since: None,
            linger: false,
        }
    }

    /// Its reply is written: it now drains what the client still sends (see [`Phase::Draining`]).
    pub fn drain(&mut self, now: Instant) {
        self.phase = Phase::Draining;
        self.opened = now;
        self.last_read = now;
    }

    /// Appends received bytes. Growing moves the buffer: the old copy is zeroized first.
    pub fn received(&mut self, bytes: &[u8], now: Instant) {
        self.last_read = now;
        grow_zeroizing(&mut self.rbuf, bytes);
    }

    /// Queues reply bytes.
    pub fn queue(&mut self, bytes: &[u8], now: Instant) {
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
        }
        grow_zeroizing(&mut self.wbuf, bytes);
        self.stalled_since.get_or_insert(now);
    }

    /// Bytes waiting to be written.
    pub fn pending(&self) -> &[u8] {
        &self.wbuf[self.wpos..]
    }

    /// Records that `n` pending bytes were written.
    pub fn wrote(&mut self, n: usize, now: Instant) {
        self.wpos = (self.wpos + n).min(self.wbuf.len());
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
            self.stalled_since = None;
        } else if n > 0 {
            self.stalled_since = Some(now);
        }
    }

    /// Whether it has been closed by a deadline at `now`, and why.
    pub fn expired(&self, now: Instant, l: &Limits) -> Option<Close> {
        match self.phase {
            Phase::Reading => {
                if now >= self.opened + l.request_deadline {
                    Some(Close::Deadline)
                } else if now >= self.last_read + l.idle {
                    Some(Close::Idle)
                } else {
                    None
                }
            }
            Phase::Draining => (now >= self.opened + l.request_deadline
                || now >= self.last_read + l.idle)
                .then_some(Close::Drained),
            Phase::Waiting => None,
            Phase::Writing | Phase::Monitor => {
                self.stalled_since.filter(|&t| now >= t + l.write_stall).map(|_| Close::SlowReader)
            }
        }
    }

    /// The next instant at which [`Conn::expired`] may change.
    pub fn next_deadline(&self, l: &Limits) -> Option<Instant> {
        match self.phase {
            Phase::Reading | Phase::Draining => {
                Some((self.opened + l.request_deadline).min(self.last_read + l.idle))
            }
            Phase::Waiting => None,
            Phase::Writing | Phase::Monitor => self.stalled_since.map(|t| t + l.write_stall),
        }
    }
}

/// `buf.extend_from_slice(bytes)`, but a reallocation copies into a fresh buffer and zeroizes
/// the old one (a plain `Vec` would free it with the request's keys still in it).
fn grow_zeroizing(buf: &mut Zeroizing<Vec<u8>>, bytes: &[u8]) {
    let need = buf.len() + bytes.len();
    if need > buf.capacity() {
        let mut bigger = Zeroizing::new(Vec::with_capacity(need.max(buf.capacity() * 2).max(512)));
        bigger.extend_from_slice(buf);
        *buf = bigger; // the old one is zeroized as it drops
    }
    buf.extend_from_slice(bytes);
}

/// What a control request's bytes amount to so far.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// Not complete yet.
    More,
    /// Complete: the line without its newline and trailing white space.
    Done(Zeroizing<Vec<u8>>),
    /// Longer than the limit without a newline.
    TooLong,
}

/// A control request: one line; `eof` when the client has shut its side (a last line without
/// a newline counts). Bytes after the newline are ignored (one request per connection).
pub fn control_line(buf: &[u8], eof: bool, max: usize) -> Line {
    let end = match buf.iter().position(|&b| b == b'\n') {
        Some(i) => i,
        None if buf.len() > max => return Line::TooLong,
        None if eof => buf.len(),
        None => return Line::More,
    };
    if end > max {
        return Line::TooLong;
    }
    let mut line = &buf[..end];
    while let Some((last, rest)) = line.split_last() {
        if !last.is_ascii_whitespace() {
            break;
        }
        line = rest;
    }
    let mut out = Zeroizing::new(Vec::with_capacity(line.len()));
    out.extend_from_slice(line);
    Line::Done(out)
}

/// A listener's counters (shared with the control thread, which shows them in `status` under
/// `control.clients` and so in `/metrics`).
#[derive(Debug, Default)]
pub struct ListenerCounters {
    /// Connections accepted into the table.
    pub accepted: AtomicU64,
    /// Connections closed at once because the table was full.
    pub refused: AtomicU64,
    /// Slow clients closed to make room (see [`Limits::evict_after`]).
    pub evicted: AtomicU64,
    /// Clients that were neither root nor the node's user (control socket).
    pub denied: AtomicU64,
    /// Requests incomplete at the whole-request deadline.
    pub deadline: AtomicU64,
    /// Requests abandoned by an idle client.
    pub idle: AtomicU64,
    /// Requests over the size limit.
    pub too_long: AtomicU64,
    /// Requests that were not valid (HTTP 400, unparsable control line).
    pub bad: AtomicU64,
    /// Clients dropped for not reading their reply (or, for monitors, their events).
    pub slow_readers: AtomicU64,
    /// accept(2) failures other than "none pending" (out of descriptors, ...).
    pub accept_errors: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
}

impl ListenerCounters {
    /// Counts a close by the table.
    pub fn closed(&self, why: Close) {
        let c = match why {
            Close::Deadline => &self.deadline,
            Close::Idle => &self.idle,
            Close::Evicted => &self.evicted,
            Close::SlowReader => &self.slow_readers,
            Close::Drained => return,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters as the `status` document shows them.
    pub fn json(&self) -> Value {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        json!({
            "open": g(&self.open), "accepted": g(&self.accepted), "refused": g(&self.refused),
            "evicted": g(&self.evicted), "denied": g(&self.denied),
            "deadline_expired": g(&self.deadline), "idle_closed": g(&self.idle),
            "too_long": g(&self.too_long), "bad_requests": g(&self.bad),
            "slow_readers": g(&self.slow_readers), "accept_errors": g(&self.accept_errors),
        })
    }
}

/// The counters of both listeners and the monitor clients.
#[derive(Debug, Default)]
pub struct FrontCounters {
    /// The control socket's.
    pub control: ListenerCounters,
    /// The metrics listener's.
    pub metrics: ListenerCounters,
    /// Monitor clients subscribed now.
    pub monitors: AtomicU64,
}

impl FrontCounters {
    /// One listener's counters.
    pub fn of(&self, k: Kind) -> &ListenerCounters {
        match k {
            Kind::Control => &self.control,
            Kind::Metrics => &self.metrics,
        }
    }

    /// Monitor clients now.
    pub fn monitors(&self) -> usize {
        self.monitors.load(Ordering::Relaxed) as usize
    }

    /// `status`'s `control.clients`.
    pub fn json(&self) -> Value {
        json!({ "control_socket": self.control.json(), "metrics": self.metrics.json() })
    }
}

/// What to do with a newcomer on a listener with `open` connections.
#[derive(Debug, PartialEq, Eq)]
pub enum Admit {
    /// Take it.
    Accept,
    /// Take it after closing the connection at this index (the oldest still sending).
    Evict(usize),
    /// Close it at once.
    Refuse,
}

/// Decides about a newcomer from `kind`, given the open connections with their table
/// indices: accepted below the limit; at the limit the oldest connection of that listener
/// still sending its request after `evict_after` makes room, else the newcomer is refused.
pub fn admit<'c>(
    conns: impl Iterator<Item = (usize, &'c Conn)> + Clone,
    kind: Kind,
    now: Instant,
    l: &Limits,
) -> Admit {
    let mine = conns.clone().filter(|(_, c)| c.kind == kind).count();
    if mine < l.max_conns {
        return Admit::Accept;
    }
    conns
        .filter(|(_, c)| {
            c.kind == kind && c.phase == Phase::Reading && now >= c.opened + l.evict_after
        })
        .min_by_key(|(_, c)| c.opened)
        .map_or(Admit::Refuse, |(i, _)| Admit::Evict(i))
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
