//! The `hip` part of `status`: our HIT, counters, each association (never keys).

use super::{HipDriver, State};
use serde_json::{Value, json};

impl HipDriver {
    /// The `hip` part of `status`.
    pub fn status(&self) -> Value {
        let assocs: Vec<Value> = self
            .assocs
            .iter()
            .map(|(hit, a)| {
                let mut v = json!({
                    "peer_hit": hit.to_string(),
                    "locator": a.locator.to_string(),
                    "local": a.local.to_string(),
                    "role": if a.initiator { "initiator" } else { "responder" },
                });
                match &a.state {
                    State::I1Sent(_) => v["state"] = json!("I1-SENT"),
                    State::I2Sent(_) => v["state"] = json!("I2-SENT"),
                    State::Established { est, .. } => {
                        v["state"] = json!("ESTABLISHED");
                        v["spi_in"] = json!(format!("{:08x}", est.esp.spi_in));
                        v["spi_out"] = json!(format!("{:08x}", est.esp.spi_out));
                        v["suite"] = json!(est.esp.suite.to_string());
                    }
                    State::Closing { .. } => v["state"] = json!("CLOSING"),
                }
                if let Some(step) = super::rekey::pending(a) {
                    v["rekey"] = json!(step);
                }
                if let (true, Some(us)) = (a.initiator, a.bex_us) {
                    v["base_exchange_us"] = json!(us);
                }
                for (k, t) in [("t2_us", a.t2_us), ("t3_us", a.t3_us), ("t4_us", a.t4_us)] {
                    if let Some(t) = t {
                        v[k] = json!(t);
                    }
                }
                v
            })
            .collect();
        json!({
            "hit": self.host.hit().to_string(),
            "locator": self.local.to_string(),
            "puzzle_k": self.responder.puzzle_k(),
            "r1_generation": self.responder.generation(),
            "counters": self.counters,
            "last_notify": self.last_notify(),
            "associations": assocs,
        })
    }
}
