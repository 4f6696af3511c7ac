//! Optional Prometheus metrics: a tiny HTTP/1.1 server (RFC 9112) answering `GET /metrics` in
//! the Prometheus text exposition format 0.0.4, rendered from the same JSON document as
//! `hipsec status` (`crate::control::status_value`), so the two never disagree.
//!
//! The listener is non-blocking and polled by the control thread (`crate::worker::run_all`),
//! beside the control socket: the data-path workers never wait for it. One connection carries
//! one request; a client that is slow to send it costs at most [`CLIENT_TIMEOUT`] and is then
//! dropped, and bytes from a client are parsed without any panicking index.

use serde_json::Value;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// How long a client may take to send its request head (and to take the answer).
pub const CLIENT_TIMEOUT: Duration = Duration::from_millis(200);

/// Largest request head read; a longer one is refused (a scrape sends a few hundred bytes).
const MAX_HEAD: usize = 8192;

/// Clients answered per [`MetricsServer::serve`] call, so that a crowd of connections cannot
/// keep the control thread from the control socket and the stop flag.
const MAX_CLIENTS_PER_TURN: usize = 16;

/// `Content-Type` of the text exposition format 0.0.4 (as Prometheus's own client libraries
/// send it).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The listening metrics socket.
#[derive(Debug)]
pub struct MetricsServer {
    listener: TcpListener,
}

impl MetricsServer {
    /// Binds `addr` (non-blocking).
    pub fn bind(addr: SocketAddr) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        Ok(MetricsServer { listener })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Descriptor to poll.
    pub fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// Answers pending clients; `body` renders the metrics text (called only for a valid scrape).
    pub fn serve(&self, mut body: impl FnMut() -> String) {
        for _ in 0..MAX_CLIENTS_PER_TURN {
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(_) => return,
            };
            if let Err(e) = one(stream, &mut body) {
                crate::log::log_event!(
                    crate::log::Level::Debug,
                    "metrics-client-error",
                    "peer" => peer.to_string(),
                    "error" => e.to_string()
                );
            }
        }
    }
}

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /metrics` (`head`: `HEAD /metrics`, the same answer without the body).
    Metrics {
        /// HEAD rather than GET.
        head: bool,
    },
    /// `/metrics` with another method: 405.
    MethodNotAllowed,
    /// Another path: 404.
    NotFound,
    /// Not an HTTP/1.x request head (RFC 9112 §2.2, §3, §5; an HTTP/1.1 request without
    /// `Host`, §3.2): 400.
    BadRequest,
}

/// A `tchar` of RFC 9110 §5.6.2 (method and header names are tokens).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// Routes a complete request head (request line and header lines; the empty line may be
/// missing). Lines may end in CRLF or a bare LF (RFC 9112 §2.2 lets a server accept LF).
pub fn route(head: &[u8]) -> Route {
    let mut lines = head.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let Some(request_line) = lines.next() else { return Route::BadRequest };
    let mut parts = request_line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Route::BadRequest;
    };
    let http11 = match version {
        b"HTTP/1.1" => true,
        b"HTTP/1.0" => false,
        _ => return Route::BadRequest,
    };
    if !is_token(method) || target.is_empty() || target.iter().any(|b| !b.is_ascii_graphic()) {
        return Route::BadRequest;
    }
    let mut host = false;
    for line in lines.take_while(|l| !l.is_empty()) {
        // field-line = field-name ":" OWS field-value OWS; no space before the colon (§5.1).
        let Some(colon) = line.iter().position(|&b| b == b':') else { return Route::BadRequest };
        let name = &line[..colon];
        if !is_token(name) {
            return Route::BadRequest;
        }
        host |= name.eq_ignore_ascii_case(b"host");
    }
    if http11 && !host {
        return Route::BadRequest;
    }
    // origin-form "/metrics?query" or absolute-form "http://host:port/metrics" (§3.2.1-2).
    let path = match target.strip_prefix(b"http://") {
        Some(rest) => rest.iter().position(|&b| b == b'/').map_or(&b"/"[..], |i| &rest[i..]),
        None => target,
    };
    let path = path.split(|&b| b == b'?').next().unwrap_or(path);
    if path != b"/metrics" {
        return Route::NotFound;
    }
    match method {
        b"GET" => Route::Metrics { head: false },
        b"HEAD" => Route::Metrics { head: true },
        _ => Route::MethodNotAllowed,
    }
}

/// Where the request head ends (after its empty line), if it is complete.
fn head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The full response to `route`; `body` is called only for a scrape.
pub fn response(route: Route, body: impl FnOnce() -> String) -> Vec<u8> {
    let (status, ctype, extra, text, head) = match route {
        Route::Metrics { head } => ("200 OK", CONTENT_TYPE, "", body(), head),
        Route::MethodNotAllowed => (
            "405 Method Not Allowed",
            "text/plain",
            "Allow: GET, HEAD\r\n",
            "use GET /metrics\n".into(),
            false,
        ),
        Route::NotFound => ("404 Not Found", "text/plain", "", "try GET /metrics\n".into(), false),
        Route::BadRequest => ("400 Bad Request", "text/plain", "", "bad request\n".into(), false),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{extra}\
         Connection: close\r\n\r\n",
        text.len()
    )
    .into_bytes();
    if !head {
        out.extend_from_slice(text.as_bytes());
    }
    out
}

/// Reads one request head within [`CLIENT_TIMEOUT`] and answers it; the connection then closes.
fn one(mut stream: TcpStream, body: &mut impl FnMut() -> String) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    let route = loop {
        if let Some(end) = head_end(&buf) {
            break route(&buf[..end]);
        }
        if buf.len() > MAX_HEAD {
            break Route::BadRequest;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "request head too slow"));
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut chunk)? {
            // The client closed its side before an empty line: answer what it sent.
            0 if buf.is_empty() => return Ok(()),
            0 => break Route::BadRequest,
            n => buf.extend_from_slice(&chunk[..n]),
        }
    };
    stream.write_all(&response(route, body))?;
    stream.flush()
}

/// One family: its HELP and TYPE lines. Help text escapes `\` and line breaks (exposition
/// format 0.0.4).
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let help = help.trim().replace('\\', "\\\\").replace('\n', "\\n");
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A label value with `\`, `"` and line breaks escaped (exposition format 0.0.4).
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A sample value from JSON: integers as they are, floats in Go's spelling of the special
/// values; None (no sample) for anything that is not a number (a worker without CPU time).
fn number(v: &Value) -> Option<String> {
    if let Some(u) = v.as_u64() {
        return Some(u.to_string());
    }
    if let Some(i) = v.as_i64() {
        return Some(i.to_string());
    }
    let f = v.as_f64()?;
    Some(if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        f.to_string()
    })
}

fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: &Value) {
    let Some(v) = number(value) else { return };
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (k, val)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{k}=\"{}\"", label_value(val));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {v}");
}

/// A JSON key as part of a metric name: characters outside `[a-zA-Z0-9_]` become `_`.
fn name_part(key: &str) -> String {
    key.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// The engine totals of the status document, with their help text.
const ENGINE_TOTALS: &[(&str, &str)] = &[
    ("protected", "Packets the engines protected with ESP/AH (outbound)."),
    ("decapsulated", "Packets the engines verified and decapsulated (inbound)."),
    ("bypassed", "Packets the SPD said to bypass."),
];

/// The metrics text for a `status` document (as made by `crate::control::status_value`).
/// Every family has HELP and TYPE lines, also when it has no samples (no SAs yet); every drop
/// reason of `ipsec::DropReason` is listed, zeros included.
pub fn render(status: &Value) -> String {
    let mut out = String::with_capacity(8192);
    family(&mut out, "hipsec_up", "gauge", "1 while the node runs and answers.");
    let _ = writeln!(out, "hipsec_up 1");
    family(&mut out, "hipsec_uptime_seconds", "gauge", "Seconds since the node started.");
    sample(&mut out, "hipsec_uptime_seconds", &[], &status["uptime_s"]);

    family(
        &mut out,
        "hipsec_drops_total",
        "counter",
        "Packets dropped, by reason (ipsec::DropReason; DESIGN rule 2: every drop is counted).",
    );
    let drops = &status["drops"];
    let zero = Value::from(0);
    for r in ipsec::DropReason::ALL {
        sample(
            &mut out,
            "hipsec_drops_total",
            &[("reason", r.name())],
            drops.get(r.name()).unwrap_or(&zero),
        );
    }
    // Names the engine may add that this build does not know.
    for (k, v) in drops.as_object().into_iter().flatten() {
        if !ipsec::DropReason::ALL.iter().any(|r| r.name() == k) {
            sample(&mut out, "hipsec_drops_total", &[("reason", k.as_str())], v);
        }
    }

    for (key, help) in ENGINE_TOTALS {
        let name = format!("hipsec_engine_{key}_total");
        family(&mut out, &name, "counter", help);
        sample(&mut out, &name, &[], status["engine"].get(key).unwrap_or(&zero));
    }

    // One family per node counter: they count different things (packets, batches, system
    // calls), so a sum over a label would mean nothing (Prometheus naming practice).
    for (key, v) in status["node"].as_object().into_iter().flatten() {
        let name = format!("hipsec_node_{}_total", name_part(key));
        let help = crate::datapath::counters::NodeCounters::HELP
            .iter()
            .find(|(f, _)| f == key)
            .map_or_else(|| format!("Node counter {key}."), |(_, h)| h.to_string());
        family(&mut out, &name, "counter", &help);
        sample(&mut out, &name, &[], v);
    }

    let sas: &[Value] = status["sas"].as_array().map_or(&[], |v| v.as_slice());
    let sa_labels = |sa: &Value| -> [(&'static str, String); 3] {
        let s = |k: &str| sa[k].as_str().unwrap_or("").to_string();
        [("spi", s("spi")), ("direction", s("direction")), ("proto", s("proto"))]
    };
    for (name, key, kind, help) in [
        ("hipsec_sa_bytes_total", "bytes", "counter", "Bytes protected or verified with the SA."),
        (
            "hipsec_sa_packets_total",
            "packets",
            "counter",
            "Packets protected or verified with the SA.",
        ),
        ("hipsec_sa_expired", "expired", "gauge", "1 once the SA reached a hard lifetime."),
    ] {
        family(&mut out, name, kind, help);
        for sa in sas {
            let l = sa_labels(sa);
            let labels: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let v = match &sa[key] {
                Value::Bool(b) => Value::from(u8::from(*b)),
                other => other.clone(),
            };
            sample(&mut out, name, &labels, &v);
        }
    }

    family(
        &mut out,
        "hipsec_worker_cpu_seconds_total",
        "counter",
        "CPU seconds (user + system) of each data-path worker thread.",
    );
    for (i, w) in status["workers"].as_array().into_iter().flatten().enumerate() {
        let worker = i.to_string();
        let role = w["role"].as_str().unwrap_or("");
        let labels = [("worker", worker.as_str()), ("role", role)];
        sample(&mut out, "hipsec_worker_cpu_seconds_total", &labels, &w["cpu_s"]);
    }
    out
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
