//! What `filter-rules` measures: who filters ([`Implementation`]), the points of each profile
//! ([`plan`]), the generated rules ([`rules_text`]), and how long each point is planned to take.

use crate::node::{INNER_V4, INNER_V6};
use crate::traffic::runner::RunParams;
use crate::traffic::{Request, TestKind};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::Duration;

pub const NAME: &str = "filter-rules";
pub(super) const SEED_TABLE: &str = "filter_rules";
/// Seed of `filter::bench::generate_rules` (fixed: every run filters with the same rules).
pub const RULE_SEED: u64 = 0x0002_f11e;
/// The role whose traffic is filtered.
pub const FILTER_HOST: &str = "h2";
/// The nodes' TUN devices (see `crate::node::config`).
pub const TUN_DEVICES: [&str; 2] = ["hlab4", "hlab6"];
/// `nft -f` gets this long per rule set before the row is given up.
pub const NFT_LOAD_TIMEOUT: Duration = Duration::from_secs(150);

/// Who filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Implementation {
    Off,
    Classifier,
    Linear,
    NftLinear,
    NftSets,
}

impl Implementation {
    pub fn label(self) -> &'static str {
        match self {
            Implementation::Off => "filter off",
            Implementation::Classifier => "hipsec classifier",
            Implementation::Linear => "hipsec linear",
            Implementation::NftLinear => "nft linear",
            Implementation::NftSets => "nft sets",
        }
    }

    pub(super) fn is_node(self) -> bool {
        matches!(self, Implementation::Classifier | Implementation::Linear)
    }
}

/// One measured configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    pub imp: Implementation,
    /// Rules installed (0 = filter on with an empty rule set; ignored for `Off`).
    pub rules: usize,
}

impl Point {
    pub fn mode(&self) -> String {
        match self.imp {
            Implementation::Off => Implementation::Off.label().into(),
            i => format!("{} {}", i.label(), self.rules),
        }
    }
}

/// What a run measures: points in order, tests, run parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub points: Vec<Point>,
    pub tests: Vec<Request>,
    pub params: RunParams,
}

/// The profile's plan. Quick (≈ 2.5 min): off, classifier 0/100/5000/100000, linear 5000, nft
/// linear and sets 5000, off again; 3 × 1 s per test. Full (≈ 20 min): every rule count for
/// every implementation, 5 × 2 s per test.
pub fn plan(full: bool) -> Plan {
    let p = |imp, rules| Point { imp, rules };
    use Implementation::*;
    let tests = vec![
        Request { test: TestKind::TcpStream, msg_size: 16384, resp_size: 1 },
        Request { test: TestKind::UdpStream, msg_size: 1024, resp_size: 1 },
    ];
    if !full {
        return Plan {
            points: vec![
                p(Off, 0),
                p(Classifier, 0),
                p(Classifier, 100),
                p(Classifier, 5000),
                p(Classifier, 100_000),
                p(Linear, 5000),
                p(NftLinear, 5000),
                p(NftSets, 5000),
                p(Off, 0),
            ],
            tests,
            params: RunParams { warmup_ms: 300, duration_ms: 1000, repetitions: 3 },
        };
    }
    let counts = [0, 100, 1000, 5000, 100_000];
    let mut points = vec![p(Off, 0)];
    for imp in [Classifier, Linear, NftSets, NftLinear] {
        for &n in &counts {
            if imp == NftLinear && n > NFT_LINEAR_MAX {
                continue;
            }
            points.push(p(imp, n));
        }
    }
    points.push(p(Off, 0));
    Plan { points, tests, params: RunParams { warmup_ms: 500, duration_ms: 2000, repetitions: 5 } }
}

/// Above this many rules a linear nft chain is not measured. 100000 rules load in about 4 s
/// (`nft -f`, ~550 MB of nft's memory) on the lab machine, so nothing is capped today; the limit
/// stays as the knob, and a load is given up after [`NFT_LOAD_TIMEOUT`] anyway.
pub const NFT_LINEAR_MAX: usize = 100_000;

/// True if `rule` could match a packet between the tunnel's inner addresses (either way).
fn touches_test_traffic(rule: &filter::Rule) -> bool {
    let ours: [IpAddr; 4] =
        [INNER_V4[0].into(), INNER_V4[1].into(), INNER_V6[0].into(), INNER_V6[1].into()];
    let side = |net: Option<filter::IpNet>| net.is_none_or(|n| ours.iter().any(|a| n.contains(*a)));
    side(rule.from.net) && side(rule.to.net)
}

/// `count` rules from `filter::bench::generate_rules` (which avoids the bench traffic's
/// addresses) minus any rule that could match the tunnel's inner addresses (10.99.0.0/24 and
/// fd00:99::/64 lie inside the generator's 10.0.0.0/8 and fd00::/8), in the rule language.
pub fn rules_text(count: usize) -> String {
    let mut extra = count / 50 + 16;
    loop {
        let text = filter::bench::generate_rules(count + extra, RULE_SEED);
        let mut out = String::with_capacity(text.len());
        let mut kept = 0;
        for line in text.lines() {
            if kept == count {
                break;
            }
            let keep = filter::parse_rules(line)
                .map(|s| s.rules.iter().all(|r| !touches_test_traffic(r)))
                .unwrap_or(false);
            if keep {
                out.push_str(line);
                out.push('\n');
                kept += 1;
            }
        }
        if kept == count {
            return out;
        }
        extra *= 2;
    }
}

/// Seconds a client run costs beyond warm-up and window; seconds to start/stop a node pair.
const CLIENT_OVERHEAD_S: f64 = 0.15;
const SETUP_S: f64 = 2.0;

pub(super) fn planned_point_s(plan: &Plan, p: &Point) -> f64 {
    let case = plan.params.repetitions as f64
        * ((plan.params.warmup_ms + plan.params.duration_ms) as f64 / 1e3 + CLIENT_OVERHEAD_S);
    let load = match p.imp {
        Implementation::NftLinear => p.rules as f64 * 1e-4,
        Implementation::NftSets => 0.5,
        _ => 0.0,
    };
    case * plan.tests.len() as f64 + SETUP_S + load
}

/// The link rate used when `--link` is not given.
pub const DEFAULT_LINK: &str = "1gbit";

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
