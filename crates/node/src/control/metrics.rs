//! Optional Prometheus metrics: `GET /metrics` over HTTP/1.x (RFC 9112, request heads parsed
//! by `httparse`) answered in the OpenMetrics text format (rendered by `prometheus-client`),
//! from the same JSON document as `hipsec status` (`crate::control::status`), so the two
//! never disagree.
//!
//! The listener belongs to the front thread (`crate::control::front`), which reads request
//! heads non-blocking with deadlines and limits; only a complete, valid scrape reaches the
//! control thread, which renders the body.

use prometheus_client::encoding::{EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::Value;
use std::fmt::Write as _;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::AtomicU64;

/// `Content-Type` of the OpenMetrics text format 1.0.0, which `prometheus-client` writes and
/// Prometheus scrapes.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Headers looked at in a request head; a head with more is refused (400).
const MAX_HEADERS: usize = 64;

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

    /// The listener (non-blocking), for the front thread to accept from.
    pub fn listener(&self) -> &TcpListener {
        &self.listener
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

/// A request head so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// Not complete: wait for more bytes.
    Partial,
    /// Complete (or hopeless): how to answer.
    Done(Route),
}

/// Parses the bytes received so far (request line and header lines up to the empty line;
/// lines may end in CRLF or a bare LF, RFC 9112 §2.2).
pub fn parse_head(buf: &[u8]) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Partial) => Head::Partial,
        Ok(httparse::Status::Complete(_)) => Head::Done(route_of(&req)),
        Err(_) => Head::Done(Route::BadRequest),
    }
}

/// Routes a complete request head; one that is cut short is a bad request.
pub fn route(head: &[u8]) -> Route {
    match parse_head(head) {
        Head::Partial => Route::BadRequest,
        Head::Done(r) => r,
    }
}

fn route_of(req: &httparse::Request<'_, '_>) -> Route {
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Route::BadRequest;
    };
    // An HTTP/1.1 request must name its Host (RFC 9112 §3.2).
    if version == 1 && !req.headers.iter().any(|h| h.name.eq_ignore_ascii_case("host")) {
        return Route::BadRequest;
    }
    if target.is_empty() || target.bytes().any(|b| !b.is_ascii_graphic()) {
        return Route::BadRequest;
    }
    // origin-form "/metrics?query" or absolute-form "http://host:port/metrics" (§3.2.1-2).
    let path = match target.strip_prefix("http://") {
        Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => target,
    };
    let path = path.split('?').next().unwrap_or(path);
    if path != "/metrics" {
        return Route::NotFound;
    }
    match method {
        "GET" => Route::Metrics { head: false },
        "HEAD" => Route::Metrics { head: true },
        _ => Route::MethodNotAllowed,
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

/// A label value, escaped as OpenMetrics asks (`\\`, `\"`, `\n`); `prometheus-client` writes
/// label values as given.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct Escaped(String);

impl EncodeLabelValue for Escaped {
    fn encode(&self, e: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        for c in self.0.chars() {
            match c {
                '\\' => e.write_str("\\\\")?,
                '"' => e.write_str("\\\"")?,
                '\n' => e.write_str("\\n")?,
                c => e.write_char(c)?,
            }
        }
        Ok(())
    }
}

type Labels = Vec<(&'static str, Escaped)>;
type IntCounters = Family<Labels, Counter>;

fn labels(pairs: &[(&'static str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (*k, Escaped(v.to_string()))).collect()
}

/// Help text as `prometheus-client` wants it: it writes it as given and appends a full stop.
fn help(h: &str) -> String {
    let h = h.trim().replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
    h.strip_suffix('.').unwrap_or(&h).to_string()
}

/// A JSON key as part of a metric name: characters outside `[a-zA-Z0-9_]` become `_`.
fn name_part(key: &str) -> String {
    key.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// An integer counter family named `name` (written `name_total`) with one sample per
/// numeric value; non-numbers give no sample.
fn counters<'v>(
    reg: &mut Registry,
    name: &str,
    h: &str,
    samples: impl IntoIterator<Item = (Labels, &'v Value)>,
) {
    let f = IntCounters::default();
    for (l, v) in samples {
        if let Some(n) = v.as_u64() {
            f.get_or_create(&l).inc_by(n);
        }
    }
    reg.register(name, help(h), f);
}

/// An unlabelled integer counter `name` (written `name_total`), if `v` is a number.
fn counter(reg: &mut Registry, name: &str, h: &str, v: &Value) {
    if let Some(n) = v.as_u64() {
        let c = Counter::<u64>::default();
        c.inc_by(n);
        reg.register(name, help(h), c);
    }
}

/// The engine totals of the status document, with their help text.
const ENGINE_TOTALS: &[(&str, &str)] = &[
    ("protected", "Packets the engines protected with ESP/AH (outbound)."),
    ("decapsulated", "Packets the engines verified and decapsulated (inbound)."),
    ("bypassed", "Packets the SPD said to bypass."),
];

/// The metrics text for a `status` document (as made by `crate::control::status_value`),
/// ending in `# EOF`. Every drop reason of `ipsec::DropReason` is listed, zeros included; a
/// family without samples (no SAs yet) is left out, as `prometheus-client` does.
pub fn render(status: &Value) -> String {
    let mut reg = Registry::default();
    let up = Gauge::<i64>::default();
    up.set(1);
    reg.register("hipsec_up", help("1 while the node runs and answers."), up);
    if let Some(s) = status["uptime_s"].as_f64() {
        let g = Gauge::<f64, AtomicU64>::default();
        g.set(s);
        reg.register("hipsec_uptime_seconds", help("Seconds since the node started."), g);
    }

    let drops = &status["drops"];
    let zero = Value::from(0);
    let known = ipsec::DropReason::ALL
        .iter()
        .map(|r| (labels(&[("reason", r.name())]), drops.get(r.name()).unwrap_or(&zero)));
    // Names the engine may add that this build does not know.
    let other = drops
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !ipsec::DropReason::ALL.iter().any(|r| r.name() == *k))
        .map(|(k, v)| (labels(&[("reason", k.as_str())]), v));
    counters(
        &mut reg,
        "hipsec_drops",
        "Packets dropped, by reason (ipsec::DropReason: every drop is counted).",
        known.chain(other),
    );

    for (key, h) in ENGINE_TOTALS {
        let v = status["engine"].get(key).unwrap_or(&zero);
        counter(&mut reg, &format!("hipsec_engine_{key}"), h, v);
    }

    // One family per node counter: they count different things (packets, batches, system
    // calls), so a sum over a label would mean nothing (Prometheus naming practice).
    for (key, v) in status["node"].as_object().into_iter().flatten() {
        let h = crate::datapath::counters::NodeCounters::HELP
            .iter()
            .find(|(f, _)| f == key)
            .map_or_else(|| format!("Node counter {key}."), |(_, h)| h.to_string());
        counter(&mut reg, &format!("hipsec_node_{}", name_part(key)), &h, v);
    }

    let sas: &[Value] = status["sas"].as_array().map_or(&[], |v| v.as_slice());
    let sa_labels = |sa: &Value| -> Labels {
        let s = |k: &str| sa[k].as_str().unwrap_or("");
        labels(&[("spi", s("spi")), ("direction", s("direction")), ("proto", s("proto"))])
    };
    for (name, key, h) in [
        ("hipsec_sa_bytes", "bytes", "Bytes protected or verified with the SA."),
        ("hipsec_sa_packets", "packets", "Packets protected or verified with the SA."),
    ] {
        counters(&mut reg, name, h, sas.iter().map(|sa| (sa_labels(sa), &sa[key])));
    }
    let expired = Family::<Labels, Gauge>::default();
    for sa in sas {
        let v = match &sa["expired"] {
            Value::Bool(b) => Some(i64::from(*b)),
            other => other.as_i64(),
        };
        if let Some(v) = v {
            expired.get_or_create(&sa_labels(sa)).set(v);
        }
    }
    reg.register("hipsec_sa_expired", help("1 once the SA reached a hard lifetime."), expired);

    let cpu = Family::<Labels, Counter<f64, AtomicU64>>::default();
    for (i, w) in status["workers"].as_array().into_iter().flatten().enumerate() {
        // A worker without CPU time (null) gets no sample rather than a made-up one.
        let Some(s) = w["cpu_s"].as_f64() else { continue };
        let worker = i.to_string();
        let role = w["role"].as_str().unwrap_or("");
        cpu.get_or_create(&labels(&[("worker", &worker), ("role", role)])).inc_by(s);
    }
    reg.register(
        "hipsec_worker_cpu_seconds",
        help("CPU seconds (user + system) of each data-path worker thread."),
        cpu,
    );

    front_counters(&mut reg, &status["control"]["clients"]);

    let mut out = String::with_capacity(8192);
    // Writing into a String cannot fail; an error would leave a page without `# EOF`, which
    // a scraper rejects.
    let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
    out
}

/// The front thread's client counters (`status`'s `control.clients`), one family per counter
/// with the listener as label.
fn front_counters(reg: &mut Registry, clients: &Value) {
    const COUNTERS: &[(&str, &str)] = &[
        ("accepted", "Client connections accepted."),
        ("refused", "Client connections closed at once: the listener's table was full."),
        ("evicted", "Slow clients closed to make room for a new one."),
        ("denied", "Control socket clients that were neither root nor the node's user."),
        ("deadline_expired", "Requests not complete within the whole-request deadline."),
        ("idle_closed", "Requests abandoned by a client silent for the idle timeout."),
        ("too_long", "Requests over the size limit."),
        ("bad_requests", "Requests that were not valid."),
        ("slow_readers", "Clients dropped for not reading their reply or events."),
        ("accept_errors", "Failed accepts (out of descriptors or memory)."),
    ];
    let listeners = ["control_socket", "metrics"];
    for (key, h) in COUNTERS {
        let samples = listeners.iter().map(|l| (labels(&[("listener", l)]), &clients[*l][*key]));
        counters(reg, &format!("hipsec_clients_{key}"), h, samples);
    }
    let open = Family::<Labels, Gauge>::default();
    for l in listeners {
        if let Some(n) = clients[l]["open"].as_i64() {
            open.get_or_create(&labels(&[("listener", l)])).set(n);
        }
    }
    reg.register("hipsec_clients_open", help("Client connections open now."), open);
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
