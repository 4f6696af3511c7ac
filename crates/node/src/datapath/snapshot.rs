//! What a worker publishes about itself for `status` and `/metrics`: its SAs (RFC 4301 §4.4.2
//! usage, RFC 4303 §3.4.3 replay state, never keys), every drop counter by name and its counters.
//! The control thread merges the workers' snapshots (`crate::control::status`).

use super::counters::NodeCounters;
use ipsec::{Engine, SecurityAssociation, Time};
use serde_json::{Value, json};

/// One SA as `status` shows it (no keys).
pub fn sa_json(sa: &SecurityAssociation, dir: &str, now: Time) -> Value {
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
