//! The compiled classifier: a bounded flow cache and `keep state` table in front of the
//! tuple-space search, per-rule hit counters, and IPFilter semantics (last match, `quick`).

use crate::flowtable::{SetAssoc, flow_hash, same_flow};
use crate::key::PacketKey;
use crate::rule::{Action, RuleSet};
use crate::tuple::{CompileError, TupleSpace};

/// Default cap on distinct mask shapes (each costs at most one hash probe per packet).
pub const DEFAULT_MAX_SHAPES: usize = 64;
/// Default cap on hash-table entries after port-range expansion.
pub const DEFAULT_MAX_ENTRIES: usize = 1 << 22;
/// Default flow-cache slots.
pub const DEFAULT_CACHE_ENTRIES: usize = 16 * 1024;
/// Default state-table slots.
pub const DEFAULT_STATE_ENTRIES: usize = 16 * 1024;

/// The decision for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Verdict {
    /// Pass or block.
    pub action: Action,
    /// The deciding rule (index in the rule set), or `None` when the default action applied
    /// (or a state entry outlived the rule set that created it).
    pub rule: Option<usize>,
}

/// Bounds and sizes of a [`Classifier`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassifierConfig {
    /// Cap on distinct mask shapes; compiling more gives [`CompileError::TooManyShapes`].
    pub max_shapes: usize,
    /// Cap on table entries; exceeding it gives [`CompileError::TooManyEntries`].
    pub max_entries: usize,
    /// Flow-cache slots (rounded up to a power of two times 4).
    pub cache_entries: usize,
    /// State-table slots (rounded up to a power of two times 4).
    pub state_entries: usize,
    /// Seed of the table hashes; the node should set a random one.
    pub hash_seed: u64,
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        ClassifierConfig {
            max_shapes: DEFAULT_MAX_SHAPES,
            max_entries: DEFAULT_MAX_ENTRIES,
            cache_entries: DEFAULT_CACHE_ENTRIES,
            state_entries: DEFAULT_STATE_ENTRIES,
            hash_seed: 0x5eed_f117_e125_0001,
        }
    }
}

/// Counters of the cached path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClassifierStats {
    /// Packets answered from the flow cache.
    pub cache_hits: u64,
    /// Packets that missed the flow cache.
    pub cache_misses: u64,
    /// Flow-cache entries evicted to make room.
    pub cache_evictions: u64,
    /// Packets passed by a state entry.
    pub state_hits: u64,
    /// State entries created by `keep state` rules.
    pub states_created: u64,
    /// State entries evicted to make room.
    pub state_evictions: u64,
    /// State entries currently held.
    pub states: usize,
}

/// Per-rule data needed after the search.
#[derive(Clone, Copy, Debug)]
struct RuleMeta {
    action: Action,
    keep_state: bool,
}

/// The compiled rule set with its flow cache and state table.
#[derive(Debug)]
pub struct Classifier {
    space: TupleSpace,
    meta: Vec<RuleMeta>,
    default_action: Action,
    config: ClassifierConfig,
    /// Exact key → verdict; flushed on recompile.
    cache: SetAssoc<PacketKey, Verdict>,
    /// Flow (key with `icmp_type: None`) → creating rule; kept across recompiles.
    state: SetAssoc<PacketKey, Option<usize>>,
    hits: Vec<u64>,
    stats: ClassifierStats,
}

fn compile_parts(
    rules: &RuleSet,
    config: &ClassifierConfig,
) -> Result<(TupleSpace, Vec<RuleMeta>), CompileError> {
    let space =
        TupleSpace::compile(&rules.rules, config.max_shapes, config.max_entries, config.hash_seed)?;
    let meta = rules
        .rules
        .iter()
        .map(|r| RuleMeta {
            action: r.action,
            keep_state: r.keep_state && r.action == Action::Pass,
        })
        .collect();
    Ok((space, meta))
}

/// The state-table key of a packet's flow.
#[inline]
fn flow_of(key: &PacketKey) -> PacketKey {
    PacketKey { icmp_type: None, ..*key }
}

impl Classifier {
    /// Compile with [`ClassifierConfig::default`].
    pub fn compile(rules: &RuleSet) -> Result<Classifier, CompileError> {
        Classifier::compile_with(rules, ClassifierConfig::default())
    }

    /// Compile with the given bounds and table sizes.
    pub fn compile_with(
        rules: &RuleSet,
        config: ClassifierConfig,
    ) -> Result<Classifier, CompileError> {
        let (space, meta) = compile_parts(rules, &config)?;
        Ok(Classifier {
            hits: vec![0; meta.len()],
            space,
            meta,
            default_action: rules.default_action,
            config,
            cache: SetAssoc::new(config.cache_entries),
            state: SetAssoc::new(config.state_entries),
            stats: ClassifierStats::default(),
        })
    }

    /// Replace the rules. The flow cache is flushed and hit counters restart at zero; state
    /// entries survive (established flows keep passing) but no longer name a rule. On error the
    /// old rules stay in force.
    pub fn recompile(&mut self, rules: &RuleSet) -> Result<(), CompileError> {
        let (space, meta) = compile_parts(rules, &self.config)?;
        self.space = space;
        self.hits = vec![0; meta.len()];
        self.meta = meta;
        self.default_action = rules.default_action;
        self.cache.clear();
        self.state.for_each_value_mut(|rule| *rule = None);
        Ok(())
    }

    /// The verdict of the rules alone: no flow cache, no state, no counters. Cost does not grow
    /// with the number of rules (at most one probe per mask shape).
    #[inline]
    pub fn classify_uncached(&self, key: &PacketKey) -> Verdict {
        match self.space.lookup(key) {
            Some(rule) => Verdict {
                action: self.meta.get(rule).map_or(self.default_action, |m| m.action),
                rule: Some(rule),
            },
            None => Verdict { action: self.default_action, rule: None },
        }
    }

    /// The verdict for a packet: flow cache, then state table (the flow or its reverse), then
    /// the rules. A pass by a `keep state` rule creates a state entry. Counts hits.
    pub fn classify(&mut self, key: &PacketKey) -> Verdict {
        let seed = self.config.hash_seed;
        let hash = flow_hash(seed, key);
        let verdict = if let Some(v) = self.cache.get(hash, key) {
            self.stats.cache_hits += 1;
            v
        } else {
            self.stats.cache_misses += 1;
            let v = self.classify_miss(key);
            if self.cache.insert(hash, *key, v).is_some() {
                self.stats.cache_evictions += 1;
            }
            v
        };
        if let Some(h) = verdict.rule.and_then(|r| self.hits.get_mut(r)) {
            *h += 1;
        }
        verdict
    }

    fn classify_miss(&mut self, key: &PacketKey) -> Verdict {
        let seed = self.config.hash_seed;
        let fwd = flow_of(key);
        let rev = fwd.reversed();
        let state = self
            .state
            .get(flow_hash(seed, &fwd), &fwd)
            .or_else(|| self.state.get(flow_hash(seed, &rev), &rev));
        if let Some(rule) = state {
            self.stats.state_hits += 1;
            return Verdict { action: Action::Pass, rule };
        }
        let v = self.classify_uncached(key);
        let keep = v.rule.and_then(|r| self.meta.get(r)).is_some_and(|m| m.keep_state);
        if keep {
            self.stats.states_created += 1;
            self.forget_cached_flow(&fwd);
            if let Some((old, _)) = self.state.insert(flow_hash(seed, &fwd), fwd, v.rule) {
                self.stats.state_evictions += 1;
                self.forget_cached_flow(&old);
            }
        }
        v
    }

    /// Drop cached verdicts of a flow and of its reverse (any ICMP type): they were computed
    /// without (or with) a state entry that has just appeared (or gone).
    fn forget_cached_flow(&mut self, flow: &PacketKey) {
        let seed = self.config.hash_seed;
        for f in [*flow, flow.reversed()] {
            self.cache.remove_where(flow_hash(seed, &f), |k| same_flow(k, &f));
        }
    }

    /// Drop all state entries (and the cached verdicts that may depend on them).
    pub fn flush_state(&mut self) {
        self.state.clear();
        self.cache.clear();
    }

    /// Packets decided by rule `rule` through [`classify`](Self::classify) since the last
    /// compile (0 for an index out of range).
    pub fn hits(&self, rule: usize) -> u64 {
        self.hits.get(rule).copied().unwrap_or(0)
    }

    /// All hit counters, indexed by rule.
    pub fn hit_counts(&self) -> &[u64] {
        &self.hits
    }

    /// Cache and state counters.
    pub fn stats(&self) -> ClassifierStats {
        ClassifierStats { states: self.state.len(), ..self.stats }
    }

    /// Number of rules compiled.
    pub fn rule_count(&self) -> usize {
        self.meta.len()
    }

    /// Number of distinct mask shapes (hash tables) after compilation.
    pub fn shape_count(&self) -> usize {
        self.space.shape_count()
    }

    /// Number of hash-table entries after port-range expansion.
    pub fn entry_count(&self) -> usize {
        self.space.entry_count()
    }

    /// Slots of the flow cache and of the state table.
    pub fn capacities(&self) -> (usize, usize) {
        (self.cache.capacity(), self.state.capacity())
    }

    /// The action for packets no rule matches.
    pub fn default_action(&self) -> Action {
        self.default_action
    }

    /// The configuration in force.
    pub fn config(&self) -> &ClassifierConfig {
        &self.config
    }
}
