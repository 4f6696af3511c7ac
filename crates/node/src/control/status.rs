//! The `status` document: the workers' snapshots (`crate::datapath::snapshot`) merged, with
//! the node's uptime and each worker's load.

use crate::datapath::snapshot::merge;
use ipsec::Time;
use serde_json::{Value, json};

/// The `status` document from the workers' snapshots: merged SAs and counters, and per worker
/// its role, CPU seconds and counters (its load). Also the source of the Prometheus metrics
/// (`crate::control::metrics::render`).
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
