//! The driver's part of `hipsec status`: every IKE SA with its state and CHILD SAs (SPIs,
//! suites, rekey counts and delays; never keys), as `swanctl --list-sas` shows them.

use super::{IkeDriver, State};
use serde_json::{Value, json};

impl IkeDriver {
    /// `status`: every IKE SA with its state and CHILD SA (SPIs, suite; never keys).
    pub fn status(&self, now_ms: u64) -> Value {
        let mut v: Vec<Value> = self
            .sas
            .values()
            .map(|e| {
                let mut j = json!({
                    "connection": self.conns[e.conn].conf.name,
                    "peer": e.peer.to_string(),
                    "state": e.state.name(),
                    "udp_encap": e.natt,
                    "age_s": now_ms.saturating_sub(e.created_ms) / 1000,
                });
                if let State::Up(up) = &e.state {
                    let ike = up.session.ike();
                    j["role"] = json!(if ike.role == ike::sk::Role::Initiator {
                        "initiator"
                    } else {
                        "responder"
                    });
                    j["spi_i"] = json!(format!("{:016x}", ike.spi_i));
                    j["spi_r"] = json!(format!("{:016x}", ike.spi_r));
                    j["suite"] = json!(crate::config::proposal::ike_suite_name(&ike.suite));
                    j["child_rekeys"] = json!(up.rekeys);
                    let (n, median, exchange) = up.rekey_delay();
                    j["our_rekeys"] = json!(n);
                    j["our_rekey_delay_median_us"] = json!(median);
                    j["our_rekey_exchange_median_us"] = json!(exchange);
                    j["children"] = json!(up.children_json(now_ms));
                }
                j
            })
            .collect();
        v.sort_by(|a, b| a["connection"].as_str().cmp(&b["connection"].as_str()));
        let s = self.stats;
        json!({
            "ike_sas": v,
            "counters": {
                "established": s.established,
                "failed": s.failed,
                "dropped": s.dropped,
                "unsupported": s.unsupported,
                "resent": s.resent,
                "init_refused": s.init_refused,
                "cookies": s.cookies,
            }
        })
    }
}
