//! Property tests: the compiled classifier (uncached and cached, with `keep state`) agrees with
//! the linear reference evaluator on random rule sets and packets aimed at those rules.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{PacketSeed, arb_packet_seed, arb_ruleset, build_packet};
use filter::{Classifier, ClassifierConfig, LinearFilter, PacketKey, RuleSet};
use proptest::prelude::*;

/// Generous bounds so random rule sets compile; the caps have their own tests.
fn roomy() -> ClassifierConfig {
    ClassifierConfig {
        max_shapes: 100_000,
        max_entries: 10_000_000,
        state_entries: 1 << 16,
        ..ClassifierConfig::default()
    }
}

fn packets(seeds: &[PacketSeed], set: &RuleSet) -> Vec<PacketKey> {
    seeds.iter().map(|s| build_packet(s, &set.rules)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn uncached_matches_linear(
        set in arb_ruleset(24, true),
        seeds in prop::collection::vec(arb_packet_seed(), 1..48),
    ) {
        let c = Classifier::compile_with(&set, roomy()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let lin = LinearFilter::new(&set);
        for k in packets(&seeds, &set) {
            prop_assert_eq!(c.classify_uncached(&k), lin.evaluate(&k), "key {:?}", k);
        }
    }

    /// Rules the parser would reject (mixed families, ports on any protocol, keep state on
    /// block) still have one meaning, and both evaluators agree on it.
    #[test]
    fn uncached_matches_linear_unchecked_rules(
        set in arb_ruleset(24, false),
        seeds in prop::collection::vec(arb_packet_seed(), 1..48),
    ) {
        let c = Classifier::compile_with(&set, roomy()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let lin = LinearFilter::new(&set);
        for k in packets(&seeds, &set) {
            prop_assert_eq!(c.classify_uncached(&k), lin.evaluate(&k), "key {:?}", k);
        }
    }

    /// Cached classification with state, against the linear model with state, over a packet
    /// sequence with repeats and return traffic. A tiny flow cache forces evictions.
    #[test]
    fn cached_with_state_matches_linear(
        set in arb_ruleset(16, true),
        seeds in prop::collection::vec((arb_packet_seed(), 0u8..4), 1..40),
        tiny_cache in any::<bool>(),
    ) {
        let config = ClassifierConfig {
            cache_entries: if tiny_cache { 8 } else { 4096 },
            ..roomy()
        };
        let mut c = Classifier::compile_with(&set, config).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut lin = LinearFilter::new(&set);
        let mut seq: Vec<PacketKey> = Vec::new();
        for (s, extra) in &seeds {
            let k = build_packet(s, &set.rules);
            seq.push(k);
            match extra {
                0 => seq.push(k.reversed()),
                1 => seq.push(k),
                2 => {
                    if let Some(first) = seq.first().copied() {
                        seq.push(first.reversed());
                    }
                }
                _ => {}
            }
        }
        for _round in 0..2 {
            for k in &seq {
                prop_assert_eq!(c.classify(k), lin.classify(k), "key {:?}", k);
            }
        }
        prop_assert_eq!(c.stats().state_evictions, 0);
        prop_assert_eq!(c.hit_counts(), lin.hit_counts());
    }
}
