//! What a run measures ([`Plan`], per profile and `--link`) and what it found ([`Results`]).

use super::bex::Series;
use super::devices::DeviceSeries;
use super::transfer::{Rtt, Throughput};
use crate::error::LabError;
use crate::scenario::common::RunOptions;
use crate::topology::parse_rate;
use serde::{Deserialize, Serialize};

pub use super::bex::SEED_K;

/// What a run measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Base exchanges at the seed's K.
    pub runs: usize,
    /// Other difficulties of the sweep (the seed's K is the main series) and their runs each.
    pub sweep: Vec<u8>,
    pub sweep_runs: usize,
    /// Pings per RTT figure.
    pub pings: u32,
    /// Links of the throughput tests (None: unlimited) and seconds per test.
    pub links: Vec<(String, Option<u64>)>,
    pub throughput_s: u64,
    /// Base exchanges per device pair on the Wi-Fi-like link (0: no device series), and seconds
    /// per throughput test there (None: no throughput tests there).
    pub device_runs: usize,
    pub device_throughput_s: Option<u64>,
    pub full: bool,
}

/// The plan of a profile (and of `--link`).
pub fn plan(opts: &RunOptions) -> Result<Plan, LabError> {
    let link = |n: &str| -> Result<(String, Option<u64>), LabError> {
        let n = n.to_ascii_lowercase();
        let r = if n == "unlimited" { None } else { Some(parse_rate(&n)?) };
        Ok((n, r))
    };
    let links = match &opts.link {
        Some(l) => vec![link(l)?],
        None if opts.full => vec![link("10mbit")?, link("100mbit")?, link("unlimited")?],
        None => vec![link("10mbit")?, link("unlimited")?],
    };
    Ok(if opts.full {
        Plan {
            runs: 30,
            sweep: (0..=24).step_by(2).filter(|k| *k != SEED_K).collect(),
            sweep_runs: 10,
            pings: 200,
            links,
            throughput_s: 10,
            device_runs: 20,
            device_throughput_s: Some(10),
            full: true,
        }
    } else {
        Plan {
            runs: 10,
            sweep: vec![0, 16],
            sweep_runs: 5,
            pings: 50,
            links,
            throughput_s: 3,
            device_runs: 5,
            device_throughput_s: Some(1),
            full: false,
        }
    })
}

/// Everything measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// At the seed's K.
    pub main: Series,
    /// Every K, ascending (the main series included).
    pub sweep: Vec<Series>,
    pub rtt: Option<Rtt>,
    pub throughput: Vec<Throughput>,
    /// The seed's device pairs on the Wi-Fi-like link (A2, A3).
    #[serde(default)]
    pub devices: Vec<DeviceSeries>,
}

/// Planned seconds of one base exchange at difficulty `k`: restarting both nodes and the
/// trigger (≈ 1.2 s), plus the puzzle: 2^K tries at ≈ 1.7 million per second (measured: K = 16
/// took 20-37 ms here).
pub fn run_s(k: u8) -> f64 {
    1.2 + (1u64 << k.min(40)) as f64 / 1.7e6
}

/// Planned seconds of every base exchange of `plan`.
pub fn bex_s(plan: &Plan) -> f64 {
    plan.runs as f64 * run_s(SEED_K)
        + plan.sweep.iter().map(|k| plan.sweep_runs as f64 * run_s(*k)).sum::<f64>()
}

/// Planned seconds of one RTT step: two rounds of pings 10 ms apart.
pub fn rtt_s(plan: &Plan) -> f64 {
    2.0 * f64::from(plan.pings) * 0.011
}

/// Planned seconds of one series of four throughput tests of `secs` (1 s omitted, ≈ 0.5 s to
/// start iperf3).
pub fn tests_s(secs: u64) -> f64 {
    4.0 * (secs as f64 + 1.5)
}

/// Planned seconds of one device series: its base exchanges, RTT and throughput tests (the
/// Wi-Fi-like link's ≈ 1 ms round trips add little to a base exchange).
pub fn device_s(plan: &Plan) -> f64 {
    if plan.device_runs == 0 {
        return 0.0;
    }
    plan.device_runs as f64 * run_s(SEED_K)
        + rtt_s(plan) * 1.1
        + plan.device_throughput_s.map_or(0.0, tests_s)
}

pub fn planned_s(plan: &Plan) -> f64 {
    let bex = bex_s(plan);
    let thr = plan.links.len() as f64 * tests_s(plan.throughput_s);
    let devices = super::devices::DEVICES.len() as f64 * device_s(plan);
    bex + rtt_s(plan) + thr + devices + 3.0
}
