//! The benchmark's generated data (rules compile within the caps, none matches the traffic)
//! and a tiny run of `bench::run` for its shape, never its timings.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use filter::bench::{self, generate_rules, traffic};
use filter::{Classifier, LinearFilter, parse_rules};

#[test]
fn generated_rules_compile_and_miss_the_traffic() {
    let set = parse_rules(&generate_rules(3000, 7)).unwrap();
    assert_eq!(set.rules.len(), 3000);
    let c = Classifier::compile(&set).unwrap();
    assert!(c.shape_count() <= filter::DEFAULT_MAX_SHAPES);
    let lin = LinearFilter::new(&set);
    let keys = traffic(500, 9);
    assert!(keys.iter().any(|k| k.src.is_ipv6()) && keys.iter().any(|k| k.src.is_ipv4()));
    for k in &keys {
        assert_eq!(lin.evaluate(k).rule, None, "{k:?}");
        assert_eq!(c.classify_uncached(k), lin.evaluate(k));
    }
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(generate_rules(50, 1), generate_rules(50, 1));
    assert_ne!(generate_rules(50, 1), generate_rules(50, 2));
    assert_eq!(traffic(20, 3), traffic(20, 3));
}

#[test]
fn tiny_run_reports_every_point() {
    let report = bench::run(&[20, 10, 20], Duration::from_millis(30));
    let rules: Vec<usize> = report.points.iter().map(|p| p.rules).collect();
    assert_eq!(rules, [10, 20]);
    for p in &report.points {
        assert!(p.error.is_none());
        assert!(p.classifier_ns > 0.0 && p.cached_ns > 0.0);
        assert!(p.linear_ns.is_some());
    }
    assert_eq!(report.points[0].classifier_ratio, 1.0);
    assert!(report.to_string().contains("largest/smallest"));
}
