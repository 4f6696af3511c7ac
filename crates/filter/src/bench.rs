//! The filter benchmark behind `hipsec bench filter`: ns per packet of the classifier (uncached
//! and with its flow cache) and of the linear reference, at growing rule counts, as ratios.

use std::fmt;
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use crate::classifier::Classifier;
use crate::key::PacketKey;
use crate::linear::LinearFilter;
use crate::parse::parse_rules;
use crate::rule::{Direction, RuleSet};

/// Rule counts measured when the caller has no preference.
pub const DEFAULT_RULE_COUNTS: [usize; 5] = [10, 100, 1000, 5000, 100_000];
/// Above this many rules the linear evaluator is not measured (it would take too long).
pub const LINEAR_MAX_RULES: usize = 10_000;
/// Distinct packets in the uncached runs.
pub const PACKETS: usize = 4096;
/// Distinct flows the cached run cycles over.
pub const FLOWS: usize = 1024;
/// Timed repetitions per figure; the median is reported.
pub const REPETITIONS: usize = 7;
/// The goal: classifier ns at the largest rule count over ns at the smallest.
pub const TARGET_RATIO: f64 = 1.5;

/// Figures for one rule count.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BenchPoint {
    /// Rules in the generated set.
    pub rules: usize,
    /// Mask shapes (hash tables) after compilation.
    pub shapes: usize,
    /// Hash-table entries after port-range expansion.
    pub entries: usize,
    /// Median ns per packet, classifier without flow cache.
    pub classifier_ns: f64,
    /// Median ns per packet, classifier with flow cache (all hits after warm-up).
    pub cached_ns: f64,
    /// Median ns per packet, linear evaluator; `None` above [`LINEAR_MAX_RULES`].
    pub linear_ns: Option<f64>,
    /// `classifier_ns` over `classifier_ns` at the smallest rule count.
    pub classifier_ratio: f64,
    /// `linear_ns` over `classifier_ns`: how much faster the classifier is.
    pub linear_over_classifier: Option<f64>,
    /// Why this point has no figures (the rule set did not compile), else `None`.
    pub error: Option<String>,
}

/// The whole table.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BenchReport {
    /// One entry per rule count, in ascending order.
    pub points: Vec<BenchPoint>,
    /// Distinct packets per uncached run.
    pub packets: usize,
    /// Flows of the cached run.
    pub flows: usize,
    /// Repetitions per figure.
    pub repetitions: usize,
    /// Time spent per rule count, in milliseconds.
    pub duration_per_point_ms: u128,
    /// Classifier ns at the largest rule count over ns at the smallest.
    pub largest_over_smallest: f64,
    /// [`TARGET_RATIO`].
    pub target_ratio: f64,
    /// `largest_over_smallest <= target_ratio`.
    pub meets_target: bool,
}

/// SplitMix64: a small deterministic generator, enough for test data.
#[derive(Clone, Debug)]
pub struct Prng(u64);

impl Prng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Prng {
        Prng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi` (slightly biased; fine for test data).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

fn v4_rule_addr(r: &mut Prng) -> Ipv4Addr {
    Ipv4Addr::new(10, r.byte(), r.byte(), r.byte())
}

fn v6_rule_addr(r: &mut Prng) -> Ipv6Addr {
    let w = |r: &mut Prng| r.next_u64() as u16;
    Ipv6Addr::new(0xfd00 | (w(r) & 0xff), w(r), w(r), w(r), w(r), w(r), w(r), w(r))
}

fn rule_port(r: &mut Prng) -> u64 {
    r.range(1, 30_000)
}

fn rule_range(r: &mut Prng) -> String {
    let lo = r.range(1024, 29_000);
    let width = if r.range(0, 1) == 0 { r.range(1, 64) } else { r.range(65, 999) };
    format!("{lo}:{}", lo + width)
}

/// A rule set of `count` rules in the style of a site policy: IPv4 and IPv6 hosts and prefixes,
/// exact ports and ranges, quick and non-quick, in ten templates used in turn. All rules name
/// addresses in 10.0.0.0/8 or fd00::/8, so none matches [`traffic`].
pub fn generate_rules(count: usize, seed: u64) -> String {
    let mut r = Prng::new(seed);
    let mut out = String::with_capacity(count * 64);
    for i in 0..count {
        let line = match i % 10 {
            0 => format!(
                "block in quick proto tcp from {} to any port {}",
                v4_rule_addr(&mut r),
                rule_port(&mut r)
            ),
            1 => format!(
                "pass in proto tcp from any to {}/24 port {} keep state",
                v4_rule_addr(&mut r),
                rule_range(&mut r)
            ),
            2 => format!("block in from {}/16 to any", v4_rule_addr(&mut r)),
            3 => format!(
                "block in proto udp from {} to any port {}",
                v6_rule_addr(&mut r),
                rule_port(&mut r)
            ),
            4 => format!(
                "pass out quick proto tcp from {}/64 to {}/48",
                v6_rule_addr(&mut r),
                v6_rule_addr(&mut r)
            ),
            5 => format!(
                "block in proto icmp from {}/24 to any icmp-type {}",
                v4_rule_addr(&mut r),
                r.range(0, 40)
            ),
            6 => format!(
                "block quick proto udp from any port {} to {}",
                rule_port(&mut r),
                v4_rule_addr(&mut r)
            ),
            7 => format!(
                "pass in proto tcp from {} to {}/24 port {}",
                v4_rule_addr(&mut r),
                v4_rule_addr(&mut r),
                rule_range(&mut r)
            ),
            8 => format!(
                "block in proto tcp from {}/48 to any port {}",
                v6_rule_addr(&mut r),
                rule_range(&mut r)
            ),
            _ => format!("pass in quick from {} to {}", v4_rule_addr(&mut r), v4_rule_addr(&mut r)),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `count` packet keys between 192.0.2.0/24 and 198.51.100.0/24 or within 2001:db8::/32:
/// 70% IPv4, 60% TCP, 30% UDP, 10% ICMP, 80% inbound.
pub fn traffic(count: usize, seed: u64) -> Vec<PacketKey> {
    let mut r = Prng::new(seed);
    (0..count)
        .map(|_| {
            let (src, dst) = if r.range(0, 9) < 7 {
                (
                    IpAddr::V4(Ipv4Addr::new(192, 0, 2, r.byte())),
                    IpAddr::V4(Ipv4Addr::new(198, 51, 100, r.byte())),
                )
            } else {
                let h = |r: &mut Prng| r.next_u64() as u16;
                (
                    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, h(&mut r), h(&mut r))),
                    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, h(&mut r), h(&mut r))),
                )
            };
            let dir = if r.range(0, 9) < 8 { Direction::In } else { Direction::Out };
            let pick = r.range(0, 9);
            let icmp = if src.is_ipv4() { 1 } else { 58 };
            let sport = r.range(32_768, 60_999) as u16;
            let dport = [80u16, 443, 53, 8080, 25][r.range(0, 4) as usize];
            match pick {
                0..=5 => PacketKey::new(dir, src, dst, 6, sport, dport),
                6..=8 => PacketKey::new(dir, src, dst, 17, sport, dport),
                _ => PacketKey {
                    icmp_type: Some(if src.is_ipv4() { 8 } else { 128 }),
                    ..PacketKey::new(dir, src, dst, icmp, 0, 0)
                },
            }
        })
        .collect()
}

/// One timed run of about `per_rep`: ns per call of `f`, feeding `keys` from `*pos` on,
/// round and round.
fn sample(
    keys: &[PacketKey],
    pos: &mut usize,
    per_rep: Duration,
    mut f: impl FnMut(&PacketKey),
) -> f64 {
    const CHUNK: usize = 64;
    if keys.is_empty() {
        return 0.0;
    }
    let start = Instant::now();
    let mut done = 0u64;
    loop {
        for _ in 0..CHUNK {
            if let Some(k) = keys.get(*pos) {
                f(k);
            }
            *pos = if *pos + 1 >= keys.len() { 0 } else { *pos + 1 };
        }
        done += CHUNK as u64;
        if start.elapsed() >= per_rep {
            break;
        }
    }
    start.elapsed().as_nanos() as f64 / done as f64
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(0.0)
}

/// One rule count under test, with its samples.
struct Subject {
    point: BenchPoint,
    classifier: Option<Classifier>,
    linear: Option<LinearFilter>,
    uncached: Vec<f64>,
    cached: Vec<f64>,
    linear_samples: Vec<f64>,
}

fn prepare(rules: usize) -> Subject {
    let mut subject = Subject {
        point: BenchPoint {
            rules,
            shapes: 0,
            entries: 0,
            classifier_ns: 0.0,
            cached_ns: 0.0,
            linear_ns: None,
            classifier_ratio: 0.0,
            linear_over_classifier: None,
            error: None,
        },
        classifier: None,
        linear: None,
        uncached: Vec::with_capacity(REPETITIONS),
        cached: Vec::with_capacity(REPETITIONS),
        linear_samples: Vec::with_capacity(REPETITIONS),
    };
    let set: RuleSet = match parse_rules(&generate_rules(rules, 0x00f1_17e2 ^ rules as u64)) {
        Ok(s) => s,
        Err(e) => {
            subject.point.error = Some(e.to_string());
            return subject;
        }
    };
    match Classifier::compile(&set) {
        Ok(c) => {
            subject.point.shapes = c.shape_count();
            subject.point.entries = c.entry_count();
            subject.classifier = Some(c);
        }
        Err(e) => subject.point.error = Some(e.to_string()),
    }
    if rules <= LINEAR_MAX_RULES {
        subject.linear = Some(LinearFilter::new(&set));
    }
    subject
}

/// Measure every rule count in `rule_counts` (sorted, duplicates dropped) for about
/// `duration_per_point` each. The repetitions of all rule counts are interleaved, so a
/// background load that comes and goes affects every column alike; each figure is the median
/// of [`REPETITIONS`] runs. Reads the clock: call it from a CLI, never from a test that
/// asserts on timing.
pub fn run(rule_counts: &[usize], duration_per_point: Duration) -> BenchReport {
    let mut counts = rule_counts.to_vec();
    counts.sort_unstable();
    counts.dedup();
    let mut subjects: Vec<Subject> = counts.iter().map(|&n| prepare(n)).collect();
    let keys = traffic(PACKETS, 0x7aff_1c00);
    let flows = &keys[..FLOWS.min(keys.len())];
    let per_rep = duration_per_point / (3 * REPETITIONS as u32);
    // Warm-up: page in the tables, fill the flow caches.
    for s in &mut subjects {
        if let Some(c) = s.classifier.as_mut() {
            for k in &keys {
                black_box(c.classify_uncached(k));
            }
            for k in flows {
                black_box(c.classify(k));
            }
        }
    }
    let (mut p1, mut p2, mut p3) = (0, 0, 0);
    for _ in 0..REPETITIONS {
        for s in &mut subjects {
            if let Some(c) = s.classifier.as_mut() {
                let ns = sample(&keys, &mut p1, per_rep, |k| {
                    black_box(c.classify_uncached(black_box(k)));
                });
                s.uncached.push(ns);
                let ns = sample(flows, &mut p2, per_rep, |k| {
                    black_box(c.classify(black_box(k)));
                });
                s.cached.push(ns);
            }
            if let Some(l) = s.linear.as_ref() {
                let ns = sample(&keys, &mut p3, per_rep, |k| {
                    black_box(l.evaluate(black_box(k)));
                });
                s.linear_samples.push(ns);
            }
        }
    }
    let mut points: Vec<BenchPoint> = subjects
        .into_iter()
        .map(|s| {
            let mut p = s.point;
            if p.error.is_none() {
                p.classifier_ns = median(s.uncached);
                p.cached_ns = median(s.cached);
                if !s.linear_samples.is_empty() {
                    let lin = median(s.linear_samples);
                    p.linear_ns = Some(lin);
                    p.linear_over_classifier = Some(lin / p.classifier_ns.max(f64::MIN_POSITIVE));
                }
            }
            p
        })
        .collect();
    let base = points.iter().find(|p| p.error.is_none()).map_or(0.0, |p| p.classifier_ns);
    for p in &mut points {
        if base > 0.0 && p.error.is_none() {
            p.classifier_ratio = p.classifier_ns / base;
        }
    }
    let largest_over_smallest =
        points.iter().rev().find(|p| p.error.is_none()).map_or(0.0, |p| p.classifier_ratio);
    BenchReport {
        points,
        packets: PACKETS,
        flows: FLOWS,
        repetitions: REPETITIONS,
        duration_per_point_ms: duration_per_point.as_millis(),
        largest_over_smallest,
        target_ratio: TARGET_RATIO,
        meets_target: largest_over_smallest <= TARGET_RATIO,
    }
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>8} {:>7} {:>9} {:>14} {:>11} {:>11} {:>10} {:>14}",
            "rules",
            "shapes",
            "entries",
            "classifier ns",
            "cached ns",
            "linear ns",
            "vs first",
            "linear/class."
        )?;
        for p in &self.points {
            if let Some(e) = &p.error {
                writeln!(f, "{:>8} error: {e}", p.rules)?;
                continue;
            }
            let lin = p.linear_ns.map_or("-".to_string(), |v| format!("{v:.1}"));
            let speedup = p.linear_over_classifier.map_or("-".to_string(), |v| format!("{v:.1}x"));
            writeln!(
                f,
                "{:>8} {:>7} {:>9} {:>14.1} {:>11.1} {:>11} {:>9.2}x {:>14}",
                p.rules,
                p.shapes,
                p.entries,
                p.classifier_ns,
                p.cached_ns,
                lin,
                p.classifier_ratio,
                speedup
            )?;
        }
        writeln!(
            f,
            "largest/smallest classifier ns: {:.2} (target <= {:.1}: {})",
            self.largest_over_smallest,
            self.target_ratio,
            if self.meets_target { "met" } else { "NOT met" }
        )
    }
}
