//! The front thread: owns the control socket, the metrics listener and every client
//! connection (`control::conn`), reads and writes them non-blocking under limits and
//! deadlines, and passes complete requests to the control thread over a channel, so that no
//! client — slow, silent, flooding or not reading — delays the keying drivers' timers.
//!
//! ```text
//!   clients ⇄ front thread ── Job (request parsed, scrape) + wake ──► control thread
//!                          ◄── ToFront (reply, monitor event) + wake ──┘
//! ```

use super::commands::{self, Request};
use super::conn::{self, Admit, Close, Conn, FrontCounters, Kind, Limits, Line, Phase};
use super::exec::error_reply;
use super::metrics::{self, Head, MetricsServer, Route};
use super::socket::ControlServer;
use super::stream::{Stream, poll};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// Longest poll(2) wait: the stop flag is looked at this often.
const POLL_MS: u64 = 100;
/// Connections accepted per listener per turn, so a flood of connects cannot starve the
/// clients already in the table.
const ACCEPTS_PER_TURN: usize = 64;
/// Bytes read per connection per turn (fairness between a bulk request and the others).
const READ_PER_TURN: usize = 1 << 20;
const CHUNK: usize = 64 << 10;
/// How long a listener is left alone after accept(2) failed for want of descriptors (or
/// memory): it stays readable meanwhile, and polling it would spin.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// A complete request for the control thread.
#[derive(Debug)]
pub enum Job {
    /// A parsed control request (never `Monitor`: the front thread keeps those itself).
    Command {
        /// Its reply names this.
        id: u64,
        /// The request.
        request: Request,
        /// Its text was at least this big: the control thread trims the heap after it.
        bulk: bool,
    },
    /// A valid scrape: the control thread renders the metrics text.
    Scrape {
        /// Its reply names this.
        id: u64,
    },
}

/// What the control thread sends back.
#[derive(Debug)]
pub enum ToFront {
    /// The answer to job `id`: the JSON reply line (without newline) or the metrics text.
    Reply(u64, Zeroizing<Vec<u8>>),
    /// One event line (with its newline) for every monitor client.
    Event(Arc<[u8]>),
}

/// The control thread's end: jobs to do, where replies and events go, the counters.
#[derive(Debug)]
pub struct FrontLink {
    jobs: Receiver<Job>,
    to_front: Sender<ToFront>,
    wake_front: UnixDatagram,
    woken: UnixDatagram,
    /// The front thread's counters (shown in `status`).
    pub counters: Arc<FrontCounters>,
}

impl FrontLink {
    /// Descriptor the control thread polls: readable when jobs wait.
    pub fn fd(&self) -> RawFd {
        self.woken.as_raw_fd()
    }

    /// The jobs waiting now.
    pub fn take_jobs(&self) -> Vec<Job> {
        let mut b = [0u8; 64];
        while self.woken.recv(&mut b).is_ok() {}
        self.jobs.try_iter().collect()
    }

    /// Sends the answer to job `id`.
    pub fn reply(&self, id: u64, body: Zeroizing<Vec<u8>>) {
        let _ = self.to_front.send(ToFront::Reply(id, body));
        let _ = self.wake_front.send(&[1]);
    }

    /// Streams one event line to the monitor clients (if any).
    pub fn event(&self, line: &str) {
        if self.counters.monitors() == 0 {
            return;
        }
        let mut b = Vec::with_capacity(line.len() + 1);
        b.extend_from_slice(line.as_bytes());
        b.push(b'\n');
        let _ = self.to_front.send(ToFront::Event(b.into()));
        let _ = self.wake_front.send(&[1]);
    }
}

#[derive(Debug)]
struct Slot {
    conn: Conn,
    stream: Stream,
    /// The job it waits for.
    id: u64,
}

/// The front thread's state.
#[derive(Debug)]
pub struct Front<'a> {
    control: Option<&'a ControlServer>,
    metrics: Option<&'a MetricsServer>,
    jobs: Sender<Job>,
    from_control: Receiver<ToFront>,
    wake_control: UnixDatagram,
    woken: UnixDatagram,
    counters: Arc<FrontCounters>,
    limits: Limits,
    slots: Vec<Option<Slot>>,
    /// Per listener (control, metrics): not polled until then (see [`ACCEPT_PAUSE`]).
    paused: [Option<Instant>; 2],
    next_id: u64,
    chunk: Zeroizing<Vec<u8>>,
}

/// A front thread over these listeners and the control thread's end of its channels.
pub fn new<'a>(
    control: Option<&'a ControlServer>,
    metrics: Option<&'a MetricsServer>,
    limits: Limits,
) -> io::Result<(Front<'a>, FrontLink)> {
    let (jobs_tx, jobs_rx) = mpsc::channel();
    let (to_front, from_control) = mpsc::channel();
    let (woken_control, wake_control) = UnixDatagram::pair()?;
    let (woken_front, wake_front) = UnixDatagram::pair()?;
    for s in [&woken_control, &wake_control, &woken_front, &wake_front] {
        s.set_nonblocking(true)?;
    }
    let counters = Arc::new(FrontCounters::default());
    let link = FrontLink {
        jobs: jobs_rx,
        to_front,
        wake_front,
        woken: woken_control,
        counters: counters.clone(),
    };
    let front = Front {
        control,
        metrics,
        jobs: jobs_tx,
        from_control,
        wake_control,
        woken: woken_front,
        counters,
        limits,
        slots: Vec::new(),
        paused: [None; 2],
        next_id: 1,
        chunk: Zeroizing::new(vec![0; CHUNK]),
    };
    Ok((front, link))
}

impl Front<'_> {
    /// Serves until `stop` is set.
    pub fn run(&mut self, stop: &AtomicBool) {
        let mut pfds: Vec<libc::pollfd> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            let wait = self
                .slots
                .iter()
                .flatten()
                .filter_map(|s| s.conn.next_deadline(&self.limits))
                .chain(self.paused.iter().flatten().copied())
                .min()
                .map_or(Duration::from_millis(POLL_MS), |d| d.saturating_duration_since(now))
                .min(Duration::from_millis(POLL_MS));
            pfds.clear();
            let listen = |fd: RawFd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            pfds.push(listen(self.woken.as_raw_fd()));
            self.paused.iter_mut().for_each(|p| *p = p.filter(|&t| t > now));
            let fd = |fd: Option<RawFd>, paused: Option<Instant>| {
                fd.filter(|_| paused.is_none()).unwrap_or(-1)
            };
            pfds.push(listen(fd(self.control.map(|c| c.fd()), self.paused[0])));
            pfds.push(listen(fd(self.metrics.map(|m| m.fd()), self.paused[1])));
            for s in &self.slots {
                let (fd, events) = match s {
                    None => (-1, 0),
                    Some(s) => {
                        let mut ev = 0;
                        if matches!(s.conn.phase, Phase::Reading | Phase::Monitor | Phase::Draining)
                        {
                            ev |= libc::POLLIN;
                        }
                        if !s.conn.pending().is_empty() {
                            ev |= libc::POLLOUT;
                        }
                        (s.stream.fd(), ev)
                    }
                };
                pfds.push(libc::pollfd { fd, events, revents: 0 });
            }
            // Round up so a deadline is not missed by a millisecond and polled for again.
            if poll(&mut pfds, wait.as_millis() as i32 + 1).is_err() {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            let now = Instant::now();
            if pfds[0].revents != 0 {
                let mut b = [0u8; 64];
                while self.woken.recv(&mut b).is_ok() {}
            }
            self.take_from_control(now);
            for i in 0..self.slots.len() {
                let revents = pfds.get(3 + i).map_or(0, |p| p.revents);
                if revents != 0 {
                    self.service(i, revents, now);
                }
            }
            if pfds[1].revents != 0 {
                self.accept(Kind::Control, now);
            }
            if pfds[2].revents != 0 {
                self.accept(Kind::Metrics, now);
            }
            self.expire(Instant::now());
        }
    }

    fn open_conns(&self) -> impl Iterator<Item = (usize, &Conn)> + Clone {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|s| (i, &s.conn)))
    }

    fn accept(&mut self, kind: Kind, now: Instant) {
        for _ in 0..ACCEPTS_PER_TURN {
            let r = match (kind, self.control, self.metrics) {
                (Kind::Control, Some(c), _) => c.listener().accept().map(|(s, _)| Stream::Unix(s)),
                (Kind::Metrics, _, Some(m)) => m.listener().accept().map(|(s, _)| Stream::Tcp(s)),
                _ => return,
            };
            match r {
                Ok(stream) => self.admit(kind, stream, now),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // EMFILE, ENFILE, ENOBUFS: the pending client stays queued; try later.
                Err(e) => {
                    self.counters.of(kind).accept_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(listener = %match kind { Kind::Control => "control_socket", Kind::Metrics => "metrics" }, error = e.to_string(), "accept-failed");
                    self.paused[kind as usize] = Some(now + ACCEPT_PAUSE);
                    return;
                }
            }
        }
    }

    fn admit(&mut self, kind: Kind, mut stream: Stream, now: Instant) {
        let counters = self.counters.clone();
        let c = counters.of(kind);
        if let Stream::Unix(s) = &stream {
            let uid = crate::sys::peer_uid(s.as_raw_fd()).unwrap_or(u32::MAX);
            if uid != 0 && uid != crate::sys::euid() {
                c.denied.fetch_add(1, Ordering::Relaxed);
                let _ = s.set_nonblocking(true);
                let _ = stream.write(b"{\"ok\":false,\"error\":\"permission denied: only root and the node's user may use this socket\"}\n");
                return;
            }
        }
        let nonblocking = match &stream {
            Stream::Unix(s) => s.set_nonblocking(true),
            Stream::Tcp(s) => s.set_nonblocking(true),
        };
        if nonblocking.is_err() {
            return;
        }
        match conn::admit(self.open_conns(), kind, now, &self.limits) {
            Admit::Accept => {}
            Admit::Evict(i) => self.close(i, Some(Close::Evicted)),
            Admit::Refuse => {
                c.refused.fetch_add(1, Ordering::Relaxed);
                // One try, never waited for: the client learns why if it is listening.
                let _ = stream.write(match kind {
                    Kind::Control => b"{\"ok\":false,\"error\":\"too many clients\"}\n",
                    Kind::Metrics => {
                        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    }
                });
                return;
            }
        }
        c.accepted.fetch_add(1, Ordering::Relaxed);
        c.open.fetch_add(1, Ordering::Relaxed);
        let slot = Slot { conn: Conn::new(kind, now), stream, id: 0 };
        match self.slots.iter().position(Option::is_none) {
            Some(i) => self.slots[i] = Some(slot),
            None => self.slots.push(Some(slot)),
        }
    }

    /// Closes slot `i`, counting `why` if the table closed it.
    fn close(&mut self, i: usize, why: Option<Close>) {
        let Some(s) = self.slots.get_mut(i).and_then(Option::take) else { return };
        let c = self.counters.of(s.conn.kind);
        c.open.fetch_sub(1, Ordering::Relaxed);
        if let Some(why) = why {
            c.closed(why);
        }
        if s.conn.phase == Phase::Monitor {
            self.counters.monitors.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn expire(&mut self, now: Instant) {
        for i in 0..self.slots.len() {
            let why = self.slots[i].as_ref().and_then(|s| s.conn.expired(now, &self.limits));
            if let Some(why) = why {
                self.close(i, Some(why));
            }
        }
    }

    fn take_from_control(&mut self, now: Instant) {
        while let Ok(m) = self.from_control.try_recv() {
            match m {
                ToFront::Reply(id, body) => {
                    let Some(i) = self.slots.iter().position(|s| {
                        s.as_ref().is_some_and(|s| s.id == id && s.conn.phase == Phase::Waiting)
                    }) else {
                        continue; // the client left meanwhile
                    };
                    let Some(s) = self.slots[i].as_mut() else { continue };
                    s.conn.phase = Phase::Writing;
                    match s.conn.kind {
                        // Queued in two steps: pushing onto `body` could move it and leave a
                        // copy of an `ike-keys` answer behind unzeroized.
                        Kind::Control => {
                            s.conn.queue(&body, now);
                            s.conn.queue(b"\n", now);
                        }
                        Kind::Metrics => {
                            let head = s.id & HEAD_FLAG != 0;
                            let text = || String::from_utf8_lossy(&body).into_owned();
                            s.conn.queue(&metrics::response(Route::Metrics { head }, text), now);
                        }
                    }
                    self.flush(i, now);
                }
                ToFront::Event(line) => {
                    for i in 0..self.slots.len() {
                        let Some(s) = self.slots[i].as_mut() else { continue };
                        if s.conn.phase != Phase::Monitor {
                            continue;
                        }
                        if s.conn.pending().len() + line.len() > self.limits.max_monitor_backlog {
                            self.close(i, Some(Close::SlowReader));
                            continue;
                        }
                        s.conn.queue(&line, now);
                        self.flush(i, now);
                    }
                }
            }
        }
    }

    /// Reads and writes what slot `i`'s poll result allows.
    fn service(&mut self, i: usize, revents: libc::c_short, now: Instant) {
        if revents & libc::POLLOUT != 0 {
            self.flush(i, now);
        }
        let phase = self.slots.get(i).and_then(Option::as_ref).map(|s| s.conn.phase);
        if phase == Some(Phase::Waiting) {
            // Gone while the control thread works for it: its answer will be dropped.
            if revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                self.close(i, None);
            }
        } else if revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            self.read(i, now);
        }
    }

    /// Writes what slot `i` has pending; closes it when its reply is out or it has gone.
    fn flush(&mut self, i: usize, now: Instant) {
        let Some(s) = self.slots.get_mut(i).and_then(Option::as_mut) else { return };
        loop {
            let pending = s.conn.pending();
            if pending.is_empty() {
                break;
            }
            match s.stream.write(pending) {
                Ok(0) => return self.close(i, None),
                Ok(n) => s.conn.wrote(n, now),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.close(i, None),
            }
        }
        if s.conn.phase == Phase::Writing {
            if s.conn.linger {
                s.stream.shutdown_write();
                s.conn.drain(now);
            } else {
                self.close(i, None);
            }
        }
    }

    fn read(&mut self, i: usize, now: Instant) {
        let Some(s) = self.slots.get_mut(i).and_then(Option::as_mut) else { return };
        let mut eof = false;
        let mut got = 0;
        while got < READ_PER_TURN {
            match s.stream.read(&mut self.chunk) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    got += n;
                    if s.conn.phase == Phase::Reading {
                        s.conn.received(&self.chunk[..n], now);
                        let max = match s.conn.kind {
                            Kind::Control => self.limits.max_request,
                            Kind::Metrics => self.limits.max_head,
                        };
                        if s.conn.rbuf.len() > max {
                            break;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.close(i, None),
            }
        }
        match s.conn.phase {
            Phase::Reading => self.request(i, eof, now),
            // A monitor client says nothing; its hangup ends the subscription.
            Phase::Monitor | Phase::Draining if eof => self.close(i, None),
            _ => {}
        }
    }

    /// Looks at slot `i`'s request so far and acts on it once complete.
    fn request(&mut self, i: usize, eof: bool, now: Instant) {
        let counters = self.counters.clone();
        let Some(s) = self.slots.get_mut(i).and_then(Option::as_mut) else { return };
        let c = counters.of(s.conn.kind);
        if eof && s.conn.rbuf.is_empty() {
            return self.close(i, None);
        }
        let answer: Vec<u8> = match s.conn.kind {
            Kind::Control => match conn::control_line(&s.conn.rbuf, eof, self.limits.max_request) {
                Line::More => return,
                Line::TooLong => {
                    c.too_long.fetch_add(1, Ordering::Relaxed);
                    s.conn.linger = !eof;
                    b"{\"ok\":false,\"error\":\"request too long\"}\n".to_vec()
                }
                Line::Done(line) => {
                    s.conn.rbuf = Zeroizing::new(Vec::new());
                    match commands::parse(&line) {
                        Err(e) => {
                            c.bad.fetch_add(1, Ordering::Relaxed);
                            let mut v = error_reply(&e.field, &e.message).to_string().into_bytes();
                            v.push(b'\n');
                            v
                        }
                        Ok(Request::Monitor) => {
                            s.conn.phase = Phase::Monitor;
                            self.counters.monitors.fetch_add(1, Ordering::Relaxed);
                            s.conn.queue(b"{\"ok\":true,\"monitor\":true}\n", now);
                            return self.flush(i, now);
                        }
                        Ok(request) => {
                            let bulk = line.len() >= super::server::TRIM_AFTER;
                            let id = self.next_id << 1;
                            self.next_id += 1;
                            return self.hand_over(i, Job::Command { id, request, bulk });
                        }
                    }
                }
            },
            Kind::Metrics => {
                let head = if s.conn.rbuf.len() > self.limits.max_head {
                    c.too_long.fetch_add(1, Ordering::Relaxed);
                    s.conn.linger = !eof;
                    Head::Done(Route::BadRequest)
                } else {
                    match metrics::parse_head(&s.conn.rbuf) {
                        Head::Partial if eof => Head::Done(Route::BadRequest),
                        h => h,
                    }
                };
                match head {
                    Head::Partial => return,
                    Head::Done(Route::Metrics { head }) => {
                        let id = (self.next_id << 1) | if head { HEAD_FLAG } else { 0 };
                        self.next_id += 1;
                        return self.hand_over(i, Job::Scrape { id });
                    }
                    Head::Done(route) => {
                        if route == Route::BadRequest {
                            c.bad.fetch_add(1, Ordering::Relaxed);
                        }
                        metrics::response(route, String::new)
                    }
                }
            }
        };
        s.conn.rbuf = Zeroizing::new(Vec::new());
        s.conn.phase = Phase::Writing;
        s.conn.queue(&answer, now);
        self.flush(i, now);
    }

    /// Gives slot `i`'s job to the control thread; the slot waits (its deadlines stop).
    fn hand_over(&mut self, i: usize, job: Job) {
        let Some(s) = self.slots.get_mut(i).and_then(Option::as_mut) else { return };
        s.conn.rbuf = Zeroizing::new(Vec::new());
        s.conn.phase = Phase::Waiting;
        s.id = match &job {
            Job::Command { id, .. } | Job::Scrape { id } => *id,
        };
        if self.jobs.send(job).is_err() {
            return self.close(i, None); // the control thread has stopped
        }
        let _ = self.wake_control.send(&[1]);
    }
}

/// The low bit of a scrape's job id: a HEAD request (the answer without its body).
const HEAD_FLAG: u64 = 1;

#[cfg(test)]
#[path = "front_tests.rs"]
mod tests;
