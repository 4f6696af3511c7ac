//! The `hip` part of `status`: our HIT, counters, each association (never keys).

use super::HipDriver;
use serde_json::{Value, json};

impl HipDriver {
    /// The `hip` part of `status`.
    pub fn status(&self) -> Value {
        let pairs = self.ep.pairs();
        let assocs: Vec<Value> = self
            .ep
            .views()
            .iter()
            // A CLOSED one (§4.4.4) holds no SAs and only answers a repeated CLOSE until the
            // peer's resends are over: not an association any more to the operator.
            .filter(|a| a.state != "CLOSED")
            .map(|a| {
                let p = self.peers.get(&a.peer);
                let initiator = p.is_some_and(|p| p.initiator);
                let mut v = json!({
                    "peer_hit": a.peer.to_string(),
                    "locator": a.locator.to_string(),
                    "local": self.ep.local().to_string(),
                    "role": if initiator { "initiator" } else { "responder" },
                    "state": a.state,
                });
                if let Some(s) = pairs.iter().find(|s| s.peer == a.peer && s.sending) {
                    v["spi_in"] = json!(format!("{:08x}", s.spi_in));
                    v["spi_out"] = json!(format!("{:08x}", s.spi_out));
                    if let Some(suite) = p.and_then(|p| p.sas.suite.as_ref()) {
                        v["suite"] = json!(suite);
                    }
                }
                if let Some(step) = a.rekey {
                    v["rekey"] = json!(step);
                }
                if let Some(p) = p {
                    if let (true, Some(us)) = (p.initiator, p.bex_us) {
                        v["base_exchange_us"] = json!(us);
                    }
                    for (k, t) in [("t2_us", p.t2_us), ("t3_us", p.t3_us), ("t4_us", p.t4_us)] {
                        if let Some(t) = t {
                            v[k] = json!(t);
                        }
                    }
                }
                v
            })
            .collect();
        json!({
            "hit": self.host.hit().to_string(),
            "locator": self.local.to_string(),
            "puzzle_k": self.ep.puzzle_k(),
            "r1_generation": self.ep.r1_generation(),
            "counters": self.counters,
            "last_notify": self.last_notify(),
            "associations": assocs,
        })
    }
}
