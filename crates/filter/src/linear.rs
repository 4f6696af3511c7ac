//! The linear reference evaluator: rules checked one by one in file order with IPFilter
//! semantics. Kept for tests and for the seed comparison; its cost grows with the rule count.

use std::collections::HashMap;

use crate::classifier::Verdict;
use crate::key::PacketKey;
use crate::rule::{Action, Rule, RuleSet};

/// Evaluates a [`RuleSet`] rule by rule.
#[derive(Clone, Debug)]
pub struct LinearFilter {
    rules: Vec<Rule>,
    default_action: Action,
    /// Flow (key with `icmp_type: None`) → creating rule. Unbounded: this is a model.
    states: HashMap<PacketKey, usize>,
    hits: Vec<u64>,
}

impl LinearFilter {
    /// Take a copy of the rules.
    pub fn new(rules: &RuleSet) -> LinearFilter {
        LinearFilter {
            rules: rules.rules.clone(),
            default_action: rules.default_action,
            states: HashMap::new(),
            hits: vec![0; rules.rules.len()],
        }
    }

    /// The verdict of the rules alone: the first matching `quick` rule, else the last matching
    /// rule, else the default action.
    pub fn evaluate(&self, key: &PacketKey) -> Verdict {
        let mut last = None;
        for (i, r) in self.rules.iter().enumerate() {
            if r.matches(key) {
                last = Some((i, r.action));
                if r.quick {
                    break;
                }
            }
        }
        match last {
            Some((i, action)) => Verdict { action, rule: Some(i) },
            None => Verdict { action: self.default_action, rule: None },
        }
    }

    /// The verdict with `keep state`: a state entry for the flow or its reverse passes the
    /// packet; otherwise the rules decide, and a pass by a `keep state` rule records the flow.
    /// Counts hits. The state map grows without bound (reference model only).
    pub fn classify(&mut self, key: &PacketKey) -> Verdict {
        let fwd = PacketKey { icmp_type: None, ..*key };
        let state = self.states.get(&fwd).or_else(|| self.states.get(&fwd.reversed())).copied();
        let v = match state {
            Some(rule) => Verdict { action: Action::Pass, rule: Some(rule) },
            None => {
                let v = self.evaluate(key);
                if let Some(i) = v.rule {
                    if self.rules.get(i).is_some_and(|r| r.keep_state && r.action == Action::Pass) {
                        self.states.insert(fwd, i);
                    }
                }
                v
            }
        };
        if let Some(h) = v.rule.and_then(|r| self.hits.get_mut(r)) {
            *h += 1;
        }
        v
    }

    /// Hit counters of [`classify`](Self::classify), indexed by rule.
    pub fn hit_counts(&self) -> &[u64] {
        &self.hits
    }

    /// Number of rules.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }
}

// Here rather than in `rule.rs`: matching a rule needs a packet's key, and `key.rs` already
// uses the rule model (directions, protocol numbers); this keeps the two out of a circle.
impl Rule {
    /// True if every field of the rule matches the packet.
    pub fn matches(&self, key: &PacketKey) -> bool {
        self.dir.is_none_or(|d| d == key.dir)
            && self.proto.is_none_or(|p| p == key.proto)
            && self.from.matches(key.src, key.src_port)
            && self.to.matches(key.dst, key.dst_port)
            && self.icmp_type.is_none_or(|t| key.icmp_type == Some(t))
    }
}
