//! The control socket (a Unix stream socket): one command line in, one JSON document out.
//! `status` reports SAs (RFC 4301 §4.4.2 usage, RFC 4303 §3.4.3 replay state), every drop counter
//! by name and the node's packet totals.

use crate::worker::NodeCounters;
use ipsec::{Engine, SecurityAssociation, Time};
use serde_json::{Value, json};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a client may take to send its command; the data path waits meanwhile.
const CLIENT_TIMEOUT: Duration = Duration::from_millis(200);

/// The listening control socket; removes its file when dropped.
#[derive(Debug)]
pub struct ControlServer {
    listener: UnixListener,
    path: PathBuf,
}

impl ControlServer {
    /// Binds `path`, replacing a stale socket file left by a node that died.
    pub fn bind(path: &Path) -> io::Result<ControlServer> {
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{}: another node answers on this socket", path.display()),
            ));
        }
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        Ok(ControlServer { listener, path: path.to_path_buf() })
    }

    /// Descriptor to poll.
    pub fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// Answers every pending client; `answer` maps a command to the reply.
    pub fn serve(&self, mut answer: impl FnMut(&str) -> String) {
        loop {
            let (stream, _) = match self.listener.accept() {
                Ok(x) => x,
                Err(_) => return,
            };
            // A misbehaving client costs at most CLIENT_TIMEOUT and is then dropped.
            let _ = Self::one(stream, &mut answer);
        }
    }

    fn one(stream: UnixStream, answer: &mut impl FnMut(&str) -> String) -> io::Result<()> {
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
        stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
        let mut line = String::new();
        BufReader::new((&stream).take(256)).read_line(&mut line)?;
        let mut reply = answer(line.trim());
        reply.push('\n');
        (&stream).write_all(reply.as_bytes())
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Sends `command` to the node at `path` and returns its reply.
pub fn query(path: &Path, command: &str) -> io::Result<String> {
    let mut s = UnixStream::connect(path)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(command.as_bytes())?;
    s.write_all(b"\n")?;
    s.shutdown(std::net::Shutdown::Write)?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out.trim_end().to_string())
}

fn sa_json(sa: &SecurityAssociation, dir: &str, now: Time) -> Value {
    let u = sa.usage();
    let (src, dst) = sa.addrs();
    let (proto, suite) = match sa.protocol() {
        ipsec::sa::Protocol::Esp(s) => ("esp", s.to_string()),
        ipsec::sa::Protocol::Ah(i) => ("ah", i.name().to_string()),
    };
    let mut v = json!({
        "direction": dir,
        "spi": sa.spi().to_string(),
        "proto": proto,
        "suite": suite,
        "mode": if sa.mode() == ipsec::Mode::Tunnel { "tunnel" } else { "transport" },
        "src": src.to_string(),
        "dst": dst.to_string(),
        "bytes": u.bytes,
        "packets": u.packets,
        "age_s": now.0.saturating_sub(u.installed.0) as f64 / 1e6,
        "expired": u.is_hard_expired(),
    });
    if dir == "in" {
        v["replay_window"] = json!(sa.replay().size());
        v["replay_top"] = json!(sa.replay().top().0);
    } else {
        v["seq_out"] = json!(sa.last_seq_out().0);
    }
    v
}

/// One engine's part of the status: its SAs, every drop counter by name, its totals and the
/// node counters of the half that drives it.
pub fn engine_json(engine: &Engine, node: &NodeCounters, now: Time) -> Value {
    let mut sas: Vec<Value> = engine.outbound_sas().map(|s| sa_json(s, "out", now)).collect();
    sas.extend(engine.inbound_sas().map(|s| sa_json(s, "in", now)));
    let drops: serde_json::Map<String, Value> =
        engine.counters().iter().map(|(r, n)| (r.name().to_string(), json!(n))).collect();
    let t = engine.totals();
    json!({
        "sas": sas,
        "drops": drops,
        "engine": {
            "protected": t.out_packets,
            "decapsulated": t.in_packets,
            "bypassed": t.bypassed,
        },
        "node": node.to_json(),
    })
}

/// Adds the numbers of `b` into `a`, key by key (objects recursively).
fn add_numbers(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(x) => add_numbers(x, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (a @ Value::Number(_), Value::Number(b)) => {
            *a = json!(a.as_u64().unwrap_or(0) + b.as_u64().unwrap_or(0));
        }
        _ => {}
    }
}

/// Merges parts made by [`engine_json`] (or merged ones): SAs listed outbound first, counters
/// summed.
pub fn merge(parts: &[Value]) -> Value {
    let mut out_sas = Vec::new();
    let mut in_sas = Vec::new();
    let mut doc = json!({ "drops": {}, "engine": {}, "node": {} });
    for p in parts {
        for sa in p["sas"].as_array().into_iter().flatten() {
            if sa["direction"] == "out" {
                out_sas.push(sa.clone())
            } else {
                in_sas.push(sa.clone())
            }
        }
        for k in ["drops", "engine", "node"] {
            add_numbers(&mut doc[k], &p[k]);
        }
    }
    out_sas.extend(in_sas);
    doc["sas"] = Value::Array(out_sas);
    doc
}

/// The `status` document from the workers' snapshots: merged SAs and counters, and per worker
/// its role, CPU seconds and counters (its load). Also the source of the Prometheus metrics
/// (`crate::metrics::render`).
pub fn status_value(workers: &[Value], now: Time) -> Value {
    let mut doc = merge(workers);
    doc["uptime_s"] = json!(now.0 as f64 / 1e6);
    doc["workers"] = workers
        .iter()
        .map(|w| {
            json!({ "lane": w["lane"], "role": w["role"], "scheduling": w["scheduling"],
                    "cpu_s": w["cpu_s"], "node": w["node"] })
        })
        .collect();
    doc
}

/// [`status_value`] as JSON text.
pub fn status_json(workers: &[Value], now: Time) -> String {
    status_value(workers, now).to_string()
}
