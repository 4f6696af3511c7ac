//! `hipsec monitor`: the control plane's events as JSON lines, one per event, to every client
//! that asked (as `ip xfrm monitor` prints kernel events). The front thread (`control::front`)
//! holds the clients and writes the lines with a bounded backlog each; a client that cannot
//! keep up or has gone is dropped. Punted packets are shown by size only.

use crate::datapath::mailbox::{Event, PuntKind};
use serde_json::{Value, json};
use std::time::SystemTime;

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
