//! The built-in netperf-style engine run by `hipsec-traffic`: a server that sinks/echoes data and a
//! client that drives TCP_STREAM, UDP_STREAM, TCP_RR or UDP_RR through warm-up and a timed window.
//!
//! Protocol: one TCP control connection per test carrying JSON lines. Client → `Request`; server →
//! `Ready{data_port}`; client → `mark` (warm-up over) and `end <window ns> <messages sent in the
//! window>` (the count is optional for the server); server → `ServerReport`
//! counting what it received between the two, timed on its own clock, ending at the last datagram if
//! that came first.
//!
//! UDP_STREAM does not lean on the control lines' timing: the control connection shares the links
//! and the receiving side's queues with the flood, so `mark` can arrive late — with `end`, it
//! would leave an empty window (what two CI runs measured, 0 Mbit/s, most likely). Each
//! datagram's first byte says whether the client
//! sent it in the window ([`TAG_WINDOW`]) or not ([`TAG_WARMUP`]); the server counts the tagged ones
//! whenever the control lines arrive, and divides by the client's window length from the `end` line.
//! After `end` it keeps counting until it has as many as the client sent, or none came for
//! 250 ms: the path's queues can still hold a window's datagrams then (a third zero, once
//! the datagrams were tagged, came from waiting only 200 ms).

use super::{ClientResult, Request, RttStats, ServerReport, TestKind};
use crate::cpu::{ProcCpu, SystemCpu};
use crate::error::LabError;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(50);

/// First byte of a UDP_STREAM datagram the client sent before or after its measured window.
pub const TAG_WARMUP: u8 = 0;
/// First byte of a UDP_STREAM datagram the client sent inside its measured window.
pub const TAG_WINDOW: u8 = 1;
/// After `end`, how long the server waits for window datagrams still on their way: until it has
/// counted every one the client sent, or none came for `DRAIN_QUIET`, and at most `DRAIN_MAX`.
/// The path can hold a datagram for most of a second (the sending node's TUN queue takes 10000
/// packets) and can pause for tens of milliseconds on a busy 2-core machine; with the 20 ms
/// and 200 ms this had, a window whose datagrams were all still queued read 0 Mbit/s.
const DRAIN_QUIET: Duration = Duration::from_millis(250);
const DRAIN_MAX: Duration = Duration::from_secs(3);

fn io_err(what: &str) -> impl Fn(std::io::Error) -> LabError + '_ {
    move |e| LabError::io(what.to_string(), e)
}

/// Serves tests on every address in `listen` until killed (or after one test with `once`).
pub fn serve(listen: &[SocketAddr], once: bool) -> Result<(), LabError> {
    let mut handles = Vec::new();
    for addr in listen {
        let l = TcpListener::bind(addr)
            .map_err(|e| LabError::io(format!("binding control {addr}"), e))?;
        handles.push(thread::spawn(move || {
            for ctl in l.incoming() {
                match ctl {
                    Ok(ctl) => {
                        if let Err(e) = handle(ctl) {
                            eprintln!("hipsec-traffic server: {e}");
                        }
                    }
                    Err(e) => eprintln!("hipsec-traffic server: accept: {e}"),
                }
                if once {
                    break;
                }
            }
        }));
    }
    for h in handles {
        let _ = h.join();
    }
    Ok(())
}

#[derive(Debug, Default)]
struct Counters {
    bytes: AtomicU64,
    msgs: AtomicU64,
    last_rx_ns: AtomicU64,
    /// UDP_STREAM datagrams tagged [`TAG_WINDOW`], whenever they came.
    window_bytes: AtomicU64,
    window_msgs: AtomicU64,
    /// When (since `base`, ns) the first [`TAG_WINDOW`] datagram came; 0 = none yet.
    first_window_rx_ns: AtomicU64,
    stop: AtomicBool,
}

fn send_line<T: serde::Serialize>(w: &mut TcpStream, v: &T) -> Result<(), LabError> {
    let mut s =
        serde_json::to_string(v).map_err(|e| LabError::parse("control message", e.to_string()))?;
    s.push('\n');
    w.write_all(s.as_bytes()).map_err(io_err("writing control line"))
}

fn read_line(r: &mut impl BufRead, what: &str) -> Result<String, LabError> {
    let mut line = String::new();
    let n = r.read_line(&mut line).map_err(|e| LabError::io(format!("reading {what}"), e))?;
    if n == 0 {
        return Err(LabError::Traffic {
            test: what.into(),
            reason: "control connection closed".into(),
        });
    }
    Ok(line.trim().to_string())
}

fn handle(ctl: TcpStream) -> Result<(), LabError> {
    ctl.set_nodelay(true).map_err(io_err("TCP_NODELAY on control"))?;
    let mut w = ctl.try_clone().map_err(io_err("cloning control socket"))?;
    let mut r = BufReader::new(ctl);
    let req: Request = serde_json::from_str(&read_line(&mut r, "request")?)
        .map_err(|e| LabError::parse("request", e.to_string()))?;
    req.validate()?;
    let local = w.local_addr().map_err(io_err("control local address"))?.ip().to_canonical();
    let base = Instant::now();
    let c = Arc::new(Counters::default());
    let (port, worker) = start_sink(req, local, c.clone(), base)?;
    let r = send_line(&mut w, &super::Ready { data_port: port })
        .and_then(|()| window(req, &mut r, &mut w, &c, base));
    // On every way out, an error too (a malformed control line is the client's input): the
    // sink thread stops, rather than polling its socket for the rest of the server's life.
    c.stop.store(true, Ordering::Relaxed);
    let _ = worker.join();
    r
}

/// Serves the control lines of one test, `mark` then `end`, and answers `end` with the report.
fn window(
    req: Request,
    r: &mut BufReader<TcpStream>,
    w: &mut TcpStream,
    c: &Counters,
    base: Instant,
) -> Result<(), LabError> {
    let mut mark = None;
    // A read error means the client went away: stop quietly.
    while let Ok(line) = read_line(r, "mark/end") {
        let now_ns = base.elapsed().as_nanos() as u64;
        let cpu = ProcCpu::read_self()?;
        let bytes = c.bytes.load(Ordering::Relaxed);
        let msgs = c.msgs.load(Ordering::Relaxed);
        let (word, arg) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        match word {
            "mark" => mark = Some((now_ns, bytes, msgs, cpu)),
            "end" => {
                let Some((t0, b0, m0, cpu0)) = mark else {
                    return Err(LabError::Traffic {
                        test: req.test.to_string(),
                        reason: "end before mark".into(),
                    });
                };
                let cpu_us = cpu.since(&cpu0);
                let report = if req.test == TestKind::UdpStream {
                    // The datagrams tagged in the window, over the client's window. The end
                    // line: `end <window ns> [<datagrams sent in the window>]`.
                    let mut args = arg.split_whitespace();
                    let window_ns =
                        args.next().and_then(|w| w.parse::<u64>().ok()).ok_or_else(|| {
                            LabError::parse("end line", format!("`{line}` has no window length"))
                        })?;
                    let sent = args.next().and_then(|n| n.parse::<u64>().ok());
                    let on_time = c.window_msgs.load(Ordering::Relaxed);
                    let drain_ns = drain(c, base, sent).as_nanos() as u64;
                    let msgs = c.window_msgs.load(Ordering::Relaxed);
                    let first = c.first_window_rx_ns.load(Ordering::Relaxed);
                    ServerReport {
                        bytes: c.window_bytes.load(Ordering::Relaxed),
                        msgs,
                        elapsed_ns: window_ns.max(1),
                        cpu_us,
                        queue_delay_ns: (first != 0).then(|| first.saturating_sub(t0)),
                        drain_ns: Some(drain_ns),
                        late_msgs: Some(msgs.saturating_sub(on_time)),
                    }
                } else {
                    let last = c.last_rx_ns.load(Ordering::Relaxed);
                    let t1 = if last > t0 && last < now_ns { last } else { now_ns };
                    ServerReport {
                        bytes: bytes - b0,
                        msgs: msgs - m0,
                        elapsed_ns: t1.saturating_sub(t0).max(1),
                        cpu_us,
                        queue_delay_ns: None,
                        drain_ns: None,
                        late_msgs: None,
                    }
                };
                return send_line(w, &report);
            }
            other => {
                return Err(LabError::parse("control line", format!("unexpected `{other}`")));
            }
        }
    }
    Ok(())
}

/// Waits until `sent` window datagrams were counted, or no datagram came for [`DRAIN_QUIET`]
/// (or [`DRAIN_MAX`] passed): window datagrams may still be queued behind the `end` line's
/// arrival. Returns how long it waited.
fn drain(c: &Counters, base: Instant, sent: Option<u64>) -> Duration {
    let start = Instant::now();
    while start.elapsed() < DRAIN_MAX {
        if sent.is_some_and(|n| c.window_msgs.load(Ordering::Relaxed) >= n) {
            break;
        }
        let last = Duration::from_nanos(c.last_rx_ns.load(Ordering::Relaxed));
        if base.elapsed().saturating_sub(last) >= DRAIN_QUIET {
            break;
        }
        thread::sleep(Duration::from_millis(2));
    }
    start.elapsed()
}

fn start_sink(
    req: Request,
    local: IpAddr,
    c: Arc<Counters>,
    base: Instant,
) -> Result<(u16, thread::JoinHandle<()>), LabError> {
    let note = move |c: &Counters, bytes: usize| {
        c.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        c.msgs.fetch_add(1, Ordering::Relaxed);
        c.last_rx_ns.store(base.elapsed().as_nanos() as u64, Ordering::Relaxed);
    };
    let resp = vec![0x5a_u8; req.resp_size];
    match req.test {
        TestKind::TcpStream | TestKind::TcpRr => {
            let l = TcpListener::bind((any(local), 0)).map_err(io_err("binding data listener"))?;
            let port = l.local_addr().map_err(io_err("data listener address"))?.port();
            l.set_nonblocking(true).map_err(io_err("non-blocking data listener"))?;
            let h = thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(30);
                let mut s = loop {
                    match l.accept() {
                        Ok((s, _)) => break s,
                        Err(_) if c.stop.load(Ordering::Relaxed) || Instant::now() > deadline => {
                            return;
                        }
                        Err(_) => thread::sleep(Duration::from_millis(1)),
                    }
                };
                let _ = s.set_nonblocking(false);
                let _ = s.set_nodelay(true);
                if req.test == TestKind::TcpStream {
                    let mut buf = vec![0u8; 256 * 1024];
                    while let Ok(n @ 1..) = s.read(&mut buf) {
                        c.bytes.fetch_add(n as u64, Ordering::Relaxed);
                        c.last_rx_ns.store(base.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    }
                } else {
                    let mut buf = vec![0u8; req.msg_size];
                    while s.read_exact(&mut buf).is_ok() {
                        note(&c, buf.len());
                        if s.write_all(&resp).is_err() {
                            break;
                        }
                    }
                }
            });
            Ok((port, h))
        }
        TestKind::UdpStream | TestKind::UdpRr => {
            let s = UdpSocket::bind((any(local), 0)).map_err(io_err("binding data socket"))?;
            let port = s.local_addr().map_err(io_err("data socket address"))?.port();
            s.set_read_timeout(Some(POLL)).map_err(io_err("data socket timeout"))?;
            let h = thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                while !c.stop.load(Ordering::Relaxed) {
                    match s.recv_from(&mut buf) {
                        Ok((n, from)) => {
                            note(&c, n);
                            if req.test == TestKind::UdpStream && n > 0 && buf[0] == TAG_WINDOW {
                                c.window_bytes.fetch_add(n as u64, Ordering::Relaxed);
                                if c.window_msgs.fetch_add(1, Ordering::Relaxed) == 0 {
                                    let at = base.elapsed().as_nanos() as u64;
                                    c.first_window_rx_ns.store(at.max(1), Ordering::Relaxed);
                                }
                            }
                            if req.test == TestKind::UdpRr {
                                let _ = s.send_to(&resp, from);
                            }
                        }
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                        Err(_) => {}
                    }
                }
            });
            Ok((port, h))
        }
    }
}

/// What the client is asked to run.
#[derive(Debug, Clone, Copy)]
pub struct ClientParams {
    pub server: SocketAddr,
    /// Where the data goes, if not to the control address (e.g. an address behind a tunnel,
    /// while the control connection, which marks the measured window, stays outside it).
    pub data_ip: Option<IpAddr>,
    pub req: Request,
    pub warmup: Duration,
    pub duration: Duration,
}

fn connect_control(server: SocketAddr) -> Result<TcpStream, LabError> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpStream::connect_timeout(&server, Duration::from_secs(1)) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() > deadline => {
                return Err(LabError::io(format!("connecting to traffic server {server}"), e));
            }
            Err(_) => thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Phase clock shared by all client loops: warm-up, then the measured window.
struct Window<'a> {
    ctl: &'a mut TcpStream,
    mark_at: Instant,
    end_at: Instant,
    started: Option<(Instant, ProcCpu, SystemCpu)>,
    ended: Option<(Instant, ProcCpu, SystemCpu)>,
}

impl Window<'_> {
    fn measuring(&self) -> bool {
        self.started.is_some()
    }

    /// Advances the phase at `now`; returns false when the window has closed. `sent`: messages
    /// sent in the window so far (the server waits for that many UDP_STREAM datagrams).
    fn tick(&mut self, now: Instant, sent: u64) -> Result<bool, LabError> {
        if self.started.is_none() && now >= self.mark_at {
            self.ctl.write_all(b"mark\n").map_err(io_err("sending mark"))?;
            self.started = Some((Instant::now(), ProcCpu::read_self()?, SystemCpu::read()?));
        } else if let Some((t0, ..)) = &self.started
            && now >= self.end_at
        {
            let t1 = Instant::now();
            let window_ns = (t1 - *t0).as_nanos() as u64;
            self.ended = Some((t1, ProcCpu::read_self()?, SystemCpu::read()?));
            self.ctl
                .write_all(format!("end {window_ns} {sent}\n").as_bytes())
                .map_err(io_err("sending end"))?;
            return Ok(false);
        }
        Ok(true)
    }
}

#[derive(Debug, Default)]
struct Tally {
    sent_bytes: u64,
    sent_msgs: u64,
    transactions: u64,
    errors: u64,
    rtt_ns: Vec<u64>,
}

/// The unspecified address of `ip`'s family: data sockets accept on every address of the host,
/// so a client may send its data to another address than the control connection's.
fn any(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    }
}

/// Tries a TCP connection to `server` up to `tries` times; an accepted or a refused connection
/// proves a round trip (a SYN out, a SYN-ACK or RST back). Returns the attempt that answered.
pub fn probe(server: SocketAddr, tries: u32, timeout: Duration) -> Result<u32, LabError> {
    let mut last = String::from("no attempt");
    for n in 1..=tries.max(1) {
        let t0 = Instant::now();
        match TcpStream::connect_timeout(&server, timeout) {
            Ok(_) => return Ok(n),
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => return Ok(n),
            Err(e) => last = e.to_string(),
        }
        // A fast failure (no route yet, unreachable): wait out the rest of the attempt.
        if let Some(rest) = timeout.checked_sub(t0.elapsed()) {
            thread::sleep(rest);
        }
    }
    Err(LabError::Traffic {
        test: "probe".into(),
        reason: format!("{server} did not answer {tries} connection attempts: {last}"),
    })
}

/// Runs one test against a server and returns the combined result.
pub fn run_client(p: &ClientParams) -> Result<ClientResult, LabError> {
    p.req.validate()?;
    let mut ctl = connect_control(p.server)?;
    ctl.set_nodelay(true).map_err(io_err("TCP_NODELAY on control"))?;
    ctl.set_read_timeout(Some(p.warmup + p.duration + Duration::from_secs(10)))
        .map_err(io_err("control timeout"))?;
    let mut r = BufReader::new(ctl.try_clone().map_err(io_err("cloning control socket"))?);
    send_line(&mut ctl, &p.req)?;
    let ready: super::Ready = serde_json::from_str(&read_line(&mut r, "ready")?)
        .map_err(|e| LabError::parse("ready", e.to_string()))?;
    let data = SocketAddr::new(p.data_ip.unwrap_or(p.server.ip()), ready.data_port);
    let now = Instant::now();
    let mut win = Window {
        ctl: &mut ctl,
        mark_at: now + p.warmup,
        end_at: now + p.warmup + p.duration,
        started: None,
        ended: None,
    };
    let mut t = Tally::default();
    let mut msg = vec![0xa5_u8; p.req.msg_size];
    let mut resp = vec![0u8; p.req.resp_size.max(65536)];
    // Keep the data socket alive until the server's report is in.
    let _keep: Box<dyn std::any::Any> = match p.req.test {
        TestKind::TcpStream | TestKind::TcpRr => {
            let mut s = TcpStream::connect_timeout(&data, Duration::from_secs(5))
                .map_err(io_err("connecting data"))?;
            s.set_nodelay(p.req.test == TestKind::TcpRr).map_err(io_err("TCP_NODELAY on data"))?;
            s.set_read_timeout(Some(Duration::from_secs(5))).map_err(io_err("data timeout"))?;
            loop {
                let t0 = Instant::now();
                s.write_all(&msg).map_err(io_err("writing data"))?;
                if p.req.test == TestKind::TcpRr {
                    s.read_exact(&mut resp[..p.req.resp_size])
                        .map_err(io_err("reading response"))?;
                }
                let t1 = Instant::now();
                if win.measuring() {
                    t.sent_bytes += msg.len() as u64;
                    t.sent_msgs += 1;
                    if p.req.test == TestKind::TcpRr {
                        t.transactions += 1;
                        t.rtt_ns.push((t1 - t0).as_nanos() as u64);
                    }
                }
                if !win.tick(t1, t.sent_msgs)? {
                    break;
                }
            }
            Box::new(s)
        }
        TestKind::UdpStream | TestKind::UdpRr => {
            let local: SocketAddr =
                if data.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
            let s = UdpSocket::bind(local).map_err(io_err("binding client data socket"))?;
            s.connect(data).map_err(io_err("connecting data socket"))?;
            s.set_read_timeout(Some(Duration::from_millis(200))).map_err(io_err("data timeout"))?;
            loop {
                msg[0] = if win.measuring() { TAG_WINDOW } else { TAG_WARMUP };
                let t0 = Instant::now();
                let sent = s.send(&msg).is_ok();
                let ok = if p.req.test == TestKind::UdpRr {
                    sent && s.recv(&mut resp).is_ok()
                } else {
                    sent
                };
                let t1 = Instant::now();
                if win.measuring() {
                    if sent {
                        t.sent_bytes += msg.len() as u64;
                        t.sent_msgs += 1;
                    }
                    if !ok {
                        t.errors += 1; // ENOBUFS on send, or a lost request/response
                    } else if p.req.test == TestKind::UdpRr {
                        t.transactions += 1;
                        t.rtt_ns.push((t1 - t0).as_nanos() as u64);
                    }
                }
                if !win.tick(t1, t.sent_msgs)? {
                    break;
                }
            }
            Box::new(s)
        }
    };
    let report: ServerReport = serde_json::from_str(&read_line(&mut r, "server report")?)
        .map_err(|e| LabError::parse("server report", e.to_string()))?;
    let (Some((t0, c0, s0)), Some((t1, c1, s1))) = (win.started, win.ended) else {
        return Err(LabError::Traffic {
            test: p.req.test.to_string(),
            reason: "window never closed".into(),
        });
    };
    Ok(ClientResult {
        req: p.req,
        elapsed_ns: (t1 - t0).as_nanos() as u64,
        sent_bytes: t.sent_bytes,
        sent_msgs: t.sent_msgs,
        transactions: t.transactions,
        errors: t.errors,
        rtt: RttStats::from_ns(&mut t.rtt_ns),
        client_cpu_us: c1.since(&c0),
        system: s1.since(&s0),
        server: report,
    })
}
