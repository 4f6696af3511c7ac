//! The node's packet filter stage: rules from a file in the `filter` crate's language,
//! compiled to the flat-cost classifier (or, for the seed-002 comparison, the linear reference),
//! applied to packets leaving TUN (before protection) and entering TUN (after it). Reloadable
//! without a restart; a bad file keeps the running rules.

use crate::config::filter::{FilterConf, FilterEngine, FilterError, read_rules};
use filter::{Action, Classifier, Direction, LinearFilter, PacketKey, RuleSet};
use serde_json::{Value, json};

/// The filter shared by the outbound and inbound halves (one lock per batch, not per packet), so
/// that `keep state` entries made by outgoing packets admit the replies.
pub type SharedFilter = std::sync::Arc<std::sync::Mutex<FilterStage>>;

/// Locks the shared filter; a poisoned lock still yields the filter (its tables stay valid).
pub fn lock(f: &SharedFilter) -> std::sync::MutexGuard<'_, FilterStage> {
    f.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

enum Evaluator {
    Classifier(Box<Classifier>),
    Linear(Box<LinearFilter>),
}

/// The loaded filter with its counters.
pub struct FilterStage {
    conf: FilterConf,
    eval: Evaluator,
    rules: usize,
    passed: u64,
    blocked: u64,
    unparsable: u64,
    reloads: u64,
}

impl std::fmt::Debug for FilterStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterStage")
            .field("conf", &self.conf)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

fn build(conf: &FilterConf, rules: &RuleSet) -> Result<Evaluator, FilterError> {
    Ok(match conf.engine {
        FilterEngine::Classifier => {
            Evaluator::Classifier(Box::new(Classifier::compile(rules).map_err(|err| {
                FilterError::Compile { file: conf.rules.display().to_string(), err }
            })?))
        }
        FilterEngine::Linear => Evaluator::Linear(Box::new(LinearFilter::new(rules))),
    })
}

impl FilterStage {
    /// Reads and compiles the rule file.
    pub fn load(conf: &FilterConf) -> Result<FilterStage, FilterError> {
        let rules = read_rules(&conf.rules)?;
        let eval = build(conf, &rules)?;
        Ok(FilterStage {
            conf: conf.clone(),
            eval,
            rules: rules.rules.len(),
            passed: 0,
            blocked: 0,
            unparsable: 0,
            reloads: 0,
        })
    }

    /// Re-reads the rule file; on any error the running rules stay in force.
    pub fn reload(&mut self) -> Result<(), FilterError> {
        let rules = read_rules(&self.conf.rules)?;
        match (&mut self.eval, self.conf.engine) {
            (Evaluator::Classifier(c), _) => c.recompile(&rules).map_err(|err| {
                FilterError::Compile { file: self.conf.rules.display().to_string(), err }
            })?,
            (e, engine) => *e = build(&FilterConf { engine, ..self.conf.clone() }, &rules)?,
        }
        self.rules = rules.rules.len();
        self.reloads += 1;
        Ok(())
    }

    /// True if the IP packet may go on. `out`: leaving TUN (towards the network); otherwise
    /// entering TUN. A packet the filter cannot read is blocked (fail closed) and counted.
    pub fn admit(&mut self, out: bool, packet: &[u8]) -> bool {
        let dir = if out { Direction::Out } else { Direction::In };
        let Ok(key) = PacketKey::from_ip_packet(dir, packet) else {
            self.unparsable += 1;
            return false;
        };
        let v = match &mut self.eval {
            Evaluator::Classifier(c) => c.classify(&key),
            Evaluator::Linear(l) => l.classify(&key),
        };
        let pass = v.action == Action::Pass;
        if pass {
            self.passed += 1;
        } else {
            self.blocked += 1;
        }
        pass
    }

    /// Counters for `hipsec status`: totals and per-rule hits (rule index = line order).
    pub fn status(&self) -> Value {
        let hits = match &self.eval {
            Evaluator::Classifier(c) => c.hit_counts(),
            Evaluator::Linear(l) => l.hit_counts(),
        };
        json!({
            "rules_file": self.conf.rules.display().to_string(),
            "engine": self.conf.engine.name(),
            "rules": self.rules,
            "passed": self.passed,
            "blocked": self.blocked,
            "unparsable": self.unparsable,
            "reloads": self.reloads,
            "rule_hits": hits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(dst_port: u16) -> Vec<u8> {
        let mut out = Vec::new();
        wire::etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(40000, dst_port)
            .write(&mut out, b"x")
            .unwrap();
        out
    }

    fn stage(text: &str, engine: FilterEngine) -> (FilterStage, tempfile_path::TempPath) {
        let p = tempfile_path::TempPath::new(text);
        let s = FilterStage::load(&FilterConf { rules: p.0.clone(), engine }).unwrap();
        (s, p)
    }

    mod tempfile_path {
        /// A file under the temp dir, removed on drop.
        pub struct TempPath(pub std::path::PathBuf);
        impl TempPath {
            pub fn new(text: &str) -> TempPath {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static N: AtomicUsize = AtomicUsize::new(0);
                let p = std::env::temp_dir().join(format!(
                    "hipsec-filter-{}-{}.rules",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::write(&p, text).unwrap();
                TempPath(p)
            }
        }
        impl Drop for TempPath {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }

    #[test]
    fn both_engines_block_and_count_per_rule() {
        let rules = "block in proto udp from any to any port 9\npass out all\n";
        for engine in [FilterEngine::Classifier, FilterEngine::Linear] {
            let (mut s, _p) = stage(rules, engine);
            assert!(!s.admit(false, &udp(9)));
            assert!(s.admit(false, &udp(10)));
            assert!(s.admit(true, &udp(9)));
            assert!(!s.admit(false, &[0x45, 0, 0]), "garbage is blocked");
            let st = s.status();
            assert_eq!(st["blocked"], 1, "garbage counts as unparsable, not blocked");
            assert_eq!(st["passed"], 2);
            assert_eq!(st["unparsable"], 1);
            assert_eq!(st["rule_hits"][0], 1);
            assert_eq!(st["rule_hits"][1], 1);
        }
    }

    #[test]
    fn reload_keeps_old_rules_on_error() {
        let (mut s, p) =
            stage("block in proto udp from any to any port 9\n", FilterEngine::Classifier);
        std::fs::write(&p.0, "block in proto udp from any to any port http\n").unwrap();
        let e = s.reload().unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("column"), "{e}");
        assert!(!s.admit(false, &udp(9)), "old rules still in force");
        std::fs::write(&p.0, "pass all\n").unwrap();
        s.reload().unwrap();
        assert!(s.admit(false, &udp(9)));
        assert_eq!(s.status()["reloads"], 1);
    }
}
