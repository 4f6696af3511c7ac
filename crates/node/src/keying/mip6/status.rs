//! The `home_agent` part of `status` (binding cache count and a sample, refusals by reason,
//! never keys) and the bindings as monitor events.

use super::HomeAgentRuntime;
use super::json::{binding_json, refusal_name};
use serde_json::{Value, json};

/// Entries of the binding cache shown in `status` (a large cache shows its count and these).
pub const SAMPLE: usize = 16;

impl HomeAgentRuntime {
    /// The `home_agent` part of `status`.
    pub fn status(&self) -> Value {
        let (rt, now) = (self, self.now());
        let cache = rt.ha.cache();
        let sample: Vec<Value> = cache.iter().take(SAMPLE).map(|b| binding_json(&b, now)).collect();
        let c = rt.ha.counters();
        let mut refused: serde_json::Map<String, Value> =
            c.refusals().map(|(r, n)| (refusal_name(r).to_string(), json!(n))).collect();
        for (name, n) in &rt.esp_refused {
            refused.insert(format!("esp_{name}"), json!(n));
        }
        json!({
            "interface": rt.conf.interface,
            "address": rt.conf.address.to_string(),
            "home_prefix": format!("{}/{}", rt.conf.home_prefix, rt.conf.home_prefix_len),
            "mobile_nodes": rt.conf.mobile_nodes.len(),
            "binding_cache": {
                "count": cache.len(),
                "capacity": cache.capacity(),
                "memory_bytes": cache.memory_bytes(),
                "sample": sample,
            },
            "bindings": {
                "created": c.created, "updated": c.updated,
                "deregistered": c.deregistered, "expired": c.expired,
            },
            "refused": refused,
            "link": rt.counters,
            "signalling": rt.sigs.status(),
            "forwarding": rt.fwd.status(),
        })
    }
}
