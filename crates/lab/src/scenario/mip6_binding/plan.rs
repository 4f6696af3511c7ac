//! What a profile runs and what a run's figures come to: per ESP suite, `runs` generator runs
//! (each against a fresh home agent) of a register phase (every mobile node once: entries
//! created) and a rate ramp (refreshes at each offered rate), and their medians; then the
//! forwarding phase ([`ForwardPlan`]).

use super::home::RunOutcome;
use super::stream_rr::{ForwardPlan, ForwardResults};
use crate::error::LabError;
use crate::mip6gen::{Phase, Suite};
use crate::scenario::common::RunOptions;

/// The seed's run: 5000 Binding Updates.
pub const SEED_UPDATES: u32 = 5000;
/// Share of Binding Acknowledgements that may go missing at a ramp step that still counts as
/// "no BA lost" (0.1 %: a few packets of the start or end of a step).
pub const LOSS_OK: f64 = 0.001;

/// A profile.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    /// Mobile nodes (each creates one entry in the register phase); at least the seed's 5000.
    pub nodes: u32,
    /// Generator runs per suite (medians over them).
    pub runs: usize,
    /// Offered rates of the ramp, BU/s.
    pub ramp: Vec<u64>,
    /// Seconds per ramp step.
    pub step_ms: u64,
    /// Unanswered BUs allowed in the register phase.
    pub window: usize,
    /// BUs opened for the ESP-only rate.
    pub esp_only: u32,
    /// The forwarding phase after the binding-rate runs (None: not run).
    #[serde(default)]
    pub forward: Option<ForwardPlan>,
}

/// The quick (default) or full profile.
pub fn plan(opts: &RunOptions) -> Result<Plan, LabError> {
    if opts.link.is_some() {
        return Err(LabError::InvalidOption {
            field: "--link".into(),
            reason:
                "mip6-binding runs on an unshaped veth (the seed's 100Base-T was not its bound)"
                    .into(),
        });
    }
    Ok(if opts.full {
        Plan {
            nodes: 20_000,
            runs: 5,
            ramp: vec![50_000, 100_000, 150_000, 200_000, 250_000, 300_000, 350_000, 400_000],
            step_ms: 2000,
            window: 4096,
            esp_only: 100_000,
            forward: Some(ForwardPlan::profile(true)),
        }
    } else {
        Plan {
            nodes: 10_000,
            runs: 3,
            ramp: vec![50_000, 100_000, 150_000, 200_000, 250_000, 300_000],
            step_ms: 500,
            window: 4096,
            esp_only: 20_000,
            forward: Some(ForwardPlan::profile(false)),
        }
    })
}

/// Planned seconds of one generator run (start, register, ramp with settling, ESP only).
pub fn run_s(p: &Plan) -> f64 {
    1.5 + p.ramp.len() as f64 * (p.step_ms as f64 / 1000.0 + 0.35)
}

/// Planned seconds of the whole profile.
pub fn planned_s(p: &Plan) -> f64 {
    Suite::ALL.len() as f64 * p.runs as f64 * run_s(p)
        + p.forward.as_ref().map_or(0.0, ForwardPlan::planned_s)
}

/// The generator's arguments for `suite` under `p`.
pub fn gen_args(p: &Plan, suite: Suite) -> Vec<String> {
    let mut a = vec![
        "--suite".into(),
        suite.name().into(),
        "--nodes".into(),
        p.nodes.to_string(),
        "--window".into(),
        p.window.to_string(),
        "--step-ms".into(),
        p.step_ms.to_string(),
        "--esp-only".into(),
        p.esp_only.to_string(),
    ];
    if !p.ramp.is_empty() {
        a.push("--ramp".into());
        a.push(p.ramp.iter().map(u64::to_string).collect::<Vec<_>>().join(","));
    }
    a
}

/// One ramp step's medians.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepFigures {
    pub offered_per_s: u64,
    pub accepted_per_s: f64,
    /// Lost share of the BUs sent (median over runs).
    pub lost_share: f64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
}

/// One suite's medians.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SuiteFigures {
    pub suite: String,
    /// Binding-cache entries created per second in the register phase.
    pub created_per_s: f64,
    /// Entries the home agent reported created (median; should equal `nodes`).
    pub created: f64,
    pub register_p50_us: f64,
    pub register_p99_us: f64,
    pub register_lost: f64,
    pub ramp: Vec<StepFigures>,
    /// The highest accepted rate at a step with at most [`LOSS_OK`] lost (None: even the
    /// first step lost more).
    pub peak_lossless_per_s: Option<f64>,
    /// BUs opened by ESP alone per second (one core, no I/O).
    pub esp_only_per_s: f64,
    /// `created_per_s` / `esp_only_per_s`.
    pub ratio_to_esp_only: f64,
    /// Home agent CPU µs per Binding Update its link socket delivered (register and ramp
    /// together; the home agent's own `link.received` count).
    pub ha_cpu_us_per_bu: f64,
    /// Share of the BUs sent that never reached the home agent's link socket (lost on the way
    /// in: its receive queue overflowed); the rest of the ramp's losses are BAs the generator
    /// could not take in time.
    pub ha_missed_share: f64,
    /// Generator CPU µs per Binding Update sent.
    pub gen_cpu_us_per_bu: f64,
}

/// Everything the report is made from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Results {
    pub plan: Plan,
    pub suites: Vec<SuiteFigures>,
    /// Every run, as measured.
    pub runs: Vec<(String, Vec<RunOutcome>)>,
    /// The forwarding phase (None: not run, or it failed: the report's pending list says why).
    #[serde(default)]
    pub forward: Option<ForwardResults>,
}

/// The median of `v` (0 if empty).
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

fn register(o: &RunOutcome) -> Option<&Phase> {
    o.generator.phases.iter().find(|p| p.kind == "register")
}

/// Medians of `runs` of `suite`.
pub fn summarise(suite: Suite, plan: &Plan, runs: &[RunOutcome]) -> SuiteFigures {
    let reg = |f: fn(&Phase) -> f64| median(runs.iter().filter_map(register).map(f).collect());
    let ramp: Vec<StepFigures> = plan
        .ramp
        .iter()
        .map(|&rate| {
            let steps: Vec<&Phase> = runs
                .iter()
                .filter_map(|o| {
                    o.generator.phases.iter().find(|p| p.kind == "ramp" && p.offered_per_s == rate)
                })
                .collect();
            let m = |f: &dyn Fn(&Phase) -> f64| median(steps.iter().map(|p| f(p)).collect());
            StepFigures {
                offered_per_s: rate,
                accepted_per_s: m(&|p| p.accepted_per_s),
                lost_share: m(&|p| if p.sent > 0 { p.lost as f64 / p.sent as f64 } else { 0.0 }),
                latency_p50_us: m(&|p| p.latency_p50_us),
                latency_p99_us: m(&|p| p.latency_p99_us),
            }
        })
        .collect();
    let peak = ramp
        .iter()
        .filter(|s| s.lost_share <= LOSS_OK)
        .map(|s| s.accepted_per_s)
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
    let created_per_s = reg(|p| p.accepted_per_s);
    let esp_only_per_s = median(runs.iter().map(|o| o.generator.esp_only_per_s).collect());
    let answered =
        |o: &RunOutcome| o.generator.phases.iter().map(|p| p.accepted + p.refused).sum::<u64>();
    let sent = |o: &RunOutcome| o.generator.phases.iter().map(|p| p.sent).sum::<u64>();
    let per = |num: f64, den: u64| if den > 0 { num * 1e6 / den as f64 } else { 0.0 };
    SuiteFigures {
        suite: suite.name().into(),
        created_per_s,
        created: median(
            runs.iter().filter_map(|o| o.home_agent["bindings"]["created"].as_f64()).collect(),
        ),
        register_p50_us: reg(|p| p.latency_p50_us),
        register_p99_us: reg(|p| p.latency_p99_us),
        register_lost: reg(|p| p.lost as f64),
        ramp,
        peak_lossless_per_s: peak,
        esp_only_per_s,
        ratio_to_esp_only: if esp_only_per_s > 0.0 { created_per_s / esp_only_per_s } else { 0.0 },
        ha_cpu_us_per_bu: median(runs.iter().map(|o| per(o.ha_cpu_s, answered(o))).collect()),
        ha_missed_share: median(
            runs.iter()
                .map(|o| {
                    let sent = sent(o);
                    if sent > 0 { 1.0 - answered(o) as f64 / sent as f64 } else { 0.0 }
                })
                .collect(),
        ),
        gen_cpu_us_per_bu: median(runs.iter().map(|o| per(o.generator.cpu_s, sent(o))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_fit_and_cover_the_seed() {
        let q = plan(&RunOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(q.nodes >= SEED_UPDATES);
        assert!(planned_s(&q) < 150.0, "{}", planned_s(&q));
        let f = plan(&RunOptions { full: true, ..RunOptions::default() })
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(f.nodes >= q.nodes && f.runs >= q.runs);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert!(gen_args(&q, Suite::AesGcm).contains(&"aes128gcm".to_string()));
        assert!(q.forward.is_some() && f.forward.is_some());
    }
}
