//! FTP-like sessions (seed 003): `clients` TCP clients, each repeatedly opening a connection,
//! sending `size` bytes, closing its sending side and waiting for the sink's acknowledgement,
//! until a deadline. Every completed session is recorded with its start and its delay (connect
//! to acknowledgement: the time a user waits for a file transfer to finish).
//!
//! The sink (`hipsec-traffic sink --listen ADDR`) reads each connection to its end and answers
//! with the byte count it received (8 bytes, big endian), so that a session only counts when
//! every byte arrived. After `duration` no client starts a session; the ones running may finish
//! within `drain` (so that long sessions are not left out of the delays, which a hard stop
//! would do), and those still running then are cut and counted as `cut`, not as sessions (the
//! seed counts completed 10 MB transfers).

use crate::error::LabError;
use serde::{Deserialize, Serialize};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const CHUNK: usize = 64 * 1024;

/// A completed session.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Which client ran it (0-based).
    pub client: u32,
    /// Start, ms after the run began.
    pub start_ms: f64,
    /// Connect to acknowledgement, ms.
    pub delay_ms: f64,
    pub bytes: u64,
}

impl Session {
    /// The session's own throughput, kbit/s (the seed's "Avg Thrput" is the mean of these).
    pub fn kbit_s(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.delay_ms.max(1e-3)
    }
}

/// What `hipsec-traffic sessions` prints as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionsResult {
    pub clients: u32,
    pub size: u64,
    /// Length of the run, ms (until the last session ended or was cut).
    pub elapsed_ms: f64,
    pub sessions: Vec<Session>,
    /// Sessions running at the deadline, cut.
    pub cut: u64,
    /// Sessions that failed (refused, reset, short acknowledgement, timeout before the deadline).
    pub failed: u64,
    /// The first few failures, for the report.
    pub errors: Vec<String>,
}

/// Parameters of a run.
#[derive(Debug, Clone)]
pub struct SessionsParams {
    pub server: SocketAddr,
    pub clients: u32,
    pub size: u64,
    /// No session starts after this.
    pub duration: Duration,
    /// How long running sessions may go on after `duration`.
    pub drain: Duration,
}

/// The sink: for every connection on `listen`, read to the end and answer with the byte count.
/// Runs until killed.
pub fn sink(listen: SocketAddr) -> Result<(), LabError> {
    let l = TcpListener::bind(listen).map_err(|e| LabError::io(format!("binding {listen}"), e))?;
    for c in l.incoming() {
        match c {
            Ok(mut s) => {
                thread::spawn(move || {
                    let mut buf = vec![0u8; CHUNK];
                    let mut n: u64 = 0;
                    loop {
                        match s.read(&mut buf) {
                            Ok(0) => break,
                            Ok(k) => n += k as u64,
                            Err(e) if e.kind() == ErrorKind::Interrupted => {}
                            Err(_) => return,
                        }
                    }
                    let _ = s.write_all(&n.to_be_bytes());
                });
            }
            Err(e) => eprintln!("hipsec-traffic sink: accept: {e}"),
        }
    }
    Ok(())
}

enum Outcome {
    Done(Session),
    Cut,
    Failed(String),
}

fn remaining(deadline: Instant) -> Option<Duration> {
    deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// One session of client `client`; `t0` is the run's start.
fn one(p: &SessionsParams, client: u32, t0: Instant, deadline: Instant, buf: &[u8]) -> Outcome {
    let start = Instant::now();
    let Some(left) = remaining(deadline) else { return Outcome::Cut };
    let mut s = match TcpStream::connect_timeout(&p.server, left) {
        Ok(s) => s,
        Err(e) if timed_out(&e) && remaining(deadline).is_none() => return Outcome::Cut,
        Err(e) => return Outcome::Failed(format!("connect: {e}")),
    };
    let mut sent: u64 = 0;
    while sent < p.size {
        let Some(left) = remaining(deadline) else { return Outcome::Cut };
        if let Err(e) = s.set_write_timeout(Some(left)) {
            return Outcome::Failed(format!("write timeout: {e}"));
        }
        let k = (p.size - sent).min(buf.len() as u64) as usize;
        match s.write(&buf[..k]) {
            Ok(0) => return Outcome::Failed("connection closed while sending".into()),
            Ok(n) => sent += n as u64,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if timed_out(&e) => return Outcome::Cut,
            Err(e) => return Outcome::Failed(format!("send: {e}")),
        }
    }
    if let Err(e) = s.shutdown(Shutdown::Write) {
        return Outcome::Failed(format!("shutdown: {e}"));
    }
    let mut ack = [0u8; 8];
    let mut got = 0;
    while got < ack.len() {
        let Some(left) = remaining(deadline) else { return Outcome::Cut };
        if let Err(e) = s.set_read_timeout(Some(left)) {
            return Outcome::Failed(format!("read timeout: {e}"));
        }
        match s.read(&mut ack[got..]) {
            Ok(0) => return Outcome::Failed("sink closed without acknowledging".into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if timed_out(&e) => return Outcome::Cut,
            Err(e) => return Outcome::Failed(format!("acknowledgement: {e}")),
        }
    }
    let acked = u64::from_be_bytes(ack);
    if acked != p.size {
        return Outcome::Failed(format!("sink received {acked} of {} bytes", p.size));
    }
    Outcome::Done(Session {
        client,
        start_ms: start.duration_since(t0).as_secs_f64() * 1e3,
        delay_ms: start.elapsed().as_secs_f64() * 1e3,
        bytes: p.size,
    })
}

/// Runs the clients until the deadline and returns every session.
pub fn run(p: &SessionsParams) -> Result<SessionsResult, LabError> {
    if p.clients == 0 || p.size == 0 {
        return Err(LabError::InvalidOption {
            field: if p.clients == 0 { "--clients" } else { "--size" }.into(),
            reason: "must be at least 1".into(),
        });
    }
    let t0 = Instant::now();
    let last_start = t0 + p.duration;
    let deadline = last_start + p.drain;
    let out = Arc::new(Mutex::new(SessionsResult {
        clients: p.clients,
        size: p.size,
        elapsed_ms: 0.0,
        sessions: Vec::new(),
        cut: 0,
        failed: 0,
        errors: Vec::new(),
    }));
    let handles: Vec<_> = (0..p.clients)
        .map(|client| {
            let (p, out) = (p.clone(), Arc::clone(&out));
            thread::spawn(move || {
                let buf: Vec<u8> = (0..CHUNK).map(|i| (i * 7 + client as usize) as u8).collect();
                while remaining(last_start).is_some() {
                    let o = one(&p, client, t0, deadline, &buf);
                    let mut r = out.lock().unwrap_or_else(|e| e.into_inner());
                    match o {
                        Outcome::Done(s) => r.sessions.push(s),
                        Outcome::Cut => r.cut += 1,
                        Outcome::Failed(e) => {
                            r.failed += 1;
                            if r.errors.len() < 5 {
                                r.errors.push(format!("client {client}: {e}"));
                            }
                            drop(r);
                            // A refused or reset connection fails fast: do not spin.
                            thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
    let mut r = out.lock().unwrap_or_else(|e| e.into_inner()).clone();
    r.elapsed_ms = t0.elapsed().as_secs_f64() * 1e3;
    r.sessions.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    Ok(r)
}
