//! `hipsec monitor`: the control plane's events as JSON lines, one per event, to every client
//! that asked (as `ip xfrm monitor` prints kernel events). A client that cannot keep up or has
//! gone is dropped; events are never queued for it. Punted packets are shown by size only.

use crate::datapath::mailbox::{Event, PuntKind};
use serde_json::{Value, json};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::{Duration, SystemTime};

/// Clients streaming events.
#[derive(Debug, Default)]
pub struct Monitors {
    clients: Vec<UnixStream>,
}

/// An event as a JSON object (`event` names its kind); `None` for acknowledgements.
pub fn event_json(e: &Event) -> Option<Value> {
    let time = crate::log::rfc3339_ms(SystemTime::now());
    let v = match e {
        Event::Applied { .. } => return None,
        Event::Lifetime { lane, direction, spi, hard, limit } => json!({
            "event": if *hard { "sa-hard-expired" } else { "sa-soft-expired" },
            "lane": lane, "direction": direction, "spi": spi.to_string(), "limit": limit,
        }),
        Event::Acquire { lane, policy, src, dst, proto } => json!({
            "event": "acquire", "lane": lane, "policy": policy,
            "src": src.to_string(), "dst": dst.to_string(), "proto": proto,
        }),
        Event::Rebound { lane, spi, from, to } => json!({
            "event": "nat-rebind", "lane": lane, "spi": spi.to_string(),
            "from": from.to_string(), "to": to.to_string(),
        }),
        Event::Punted { lane, kind, from, bytes } => json!({
            "event": "punted", "lane": lane, "from": from.to_string(), "bytes": bytes.len(),
            "kind": match kind {
                PuntKind::Ike => "ike",
                PuntKind::Hip => "hip",
                PuntKind::MobilityHeader => "mobility-header",
            },
        }),
    };
    let mut v = v;
    v["time"] = json!(time);
    Some(v)
}

/// An event from a keying driver (Mobile IPv6 bindings, ...) with its `time`, as
/// [`event_json`] stamps the lanes' events.
pub fn stamped(mut v: Value) -> Value {
    v["time"] = json!(crate::log::rfc3339_ms(SystemTime::now()));
    v
}

impl Monitors {
    /// Adds a client; it gets a first line saying it is subscribed.
    pub fn add(&mut self, s: UnixStream) {
        let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
        let mut w = &s;
        if w.write_all(b"{\"ok\":true,\"monitor\":true}\n").is_ok() {
            self.clients.push(s);
        }
    }

    /// Number of clients.
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    /// True without clients.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// Sends one event line to every client; drops those that fail.
    pub fn send(&mut self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.clients.retain(|c| {
            let mut w = c;
            w.write_all(line.as_bytes()).is_ok()
        });
    }
}
