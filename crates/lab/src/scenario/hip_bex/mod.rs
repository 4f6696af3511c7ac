//! Scenario `hip-bex`, seed 001 (HIPL measurements, Ben Jemaa et al. 2009): the HIP base
//! exchange between two hosts and its phases (the seed's Figure 3: T1 responder I1→R1, T2
//! initiator R1→I2 with the puzzle and Diffie-Hellman, T3 responder I2→R2, T4 initiator R2→first
//! ESP, T_be first I1 out→first ESP out; Tables 4 and 5), ping round trips with and without HIP
//! (Table 6) and TCP/UDP throughput with and without HIP (Table 7); the seed's device pairs (A2
//! laptop → PC and A3 with a tablet, on Wi-Fi) as a Wi-Fi-like link and a CPU cap.
//!
//! Here: two namespaces on one veth, a hipsec node with `[hip]` in each ([`hosts`]), restarted
//! for every base exchange; the intervals from tcpdump on both veth ends ([`capture`]), the
//! node's own timers beside them ([`bex`]); a puzzle sweep over K; ping and iperf3 over the
//! association and over plain IPv6 ([`transfer`]); the device pairs on a netem link, A3 with the
//! initiator's node capped ([`devices`]); the report with the seed's figures beside ours
//! ([`table`], the device pairs' in [`device_table`]).

pub mod bex;
pub mod capture;
pub mod compare;
pub mod device_table;
pub mod devices;
pub mod hosts;
pub mod plan;
pub mod table;
pub mod transfer;

use crate::error::LabError;
use crate::node::ModeHook;
use crate::report::{Machine, Pending, Report, SCHEMA, SeedFigures};
use crate::scenario::common::{Progress, RunOptions, Scenario, background_load_pct, unix_now_s};
use crate::traffic::runner::RunParams;
use hosts::HipHosts;
pub use plan::{Plan, Results, SEED_K, plan};
use plan::{bex_s, device_s, planned_s, rtt_s, run_s};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub const NAME: &str = "hip-bex";
pub const SEED_TABLE: &str = "hip_base_exchange";

/// The scenario in the registry.
#[derive(Debug, Clone, Copy)]
pub struct HipBex;

impl Scenario for HipBex {
    fn name(&self) -> &'static str {
        NAME
    }

    fn seed(&self) -> &'static str {
        "001"
    }

    fn summary(&self) -> &'static str {
        "HIP base exchange phases T1..T4 and T_be from captures, a puzzle sweep, RTT and TCP/UDP throughput with and without HIP"
    }

    fn run(&self, opts: &RunOptions, _hook: &dyn ModeHook) -> Result<Report, LabError> {
        // The HIP hosts are started here, from the hipsec binary itself: ModeHook has no HIP
        // method (yet), and this scenario needs nodes restarted per run.
        run_plan(opts, hosts::locate_hipsec().as_deref(), &plan(opts)?)
    }

    fn comparisons(
        &self,
        report: &Report,
    ) -> Result<Vec<crate::report::compare::Comparison>, LabError> {
        compare::comparisons(report)
    }
}

/// Runs `plan` with the hipsec binary `exe` (None: the scenario is pending).
pub fn run_plan(opts: &RunOptions, exe: Option<&Path>, plan: &Plan) -> Result<Report, LabError> {
    let started = Instant::now();
    let started_unix_s = unix_now_s();
    let seed = SeedFigures::load(&opts.seed_path(), SEED_TABLE);
    let mut report = Report {
        schema: SCHEMA.into(),
        scenario: NAME.into(),
        profile: opts.profile().into(),
        params: RunParams {
            warmup_ms: 0,
            duration_ms: plan.throughput_s * 1000,
            repetitions: plan.runs,
        },
        started_unix_s,
        wall_s: 0.0,
        machine: Machine::describe(),
        cases: Vec::new(),
        pending: Vec::new(),
        seed: Some(seed.clone()),
        notes: Vec::new(),
        sections: Vec::new(),
        charts: Vec::new(),
        extra: None,
    };
    let Some(exe) = exe.filter(|e| e.is_file()) else {
        report.pending.push(Pending {
            mode: "HIP".into(),
            reason: "no hipsec binary found (HIPSEC_BIN, the running hipsec, or beside the running executable)".into(),
        });
        return Ok(report);
    };
    let background = background_load_pct()?;
    let planned = planned_s(plan);
    if !opts.no_progress {
        eprintln!(
            "[{NAME}] {} profile: {} base exchanges at K = {SEED_K}, K sweep {:?} × {}, RTT, throughput on {} link(s), {} device pairs × {} base exchanges on a Wi-Fi-like link; planned {planned:.0} s",
            opts.profile(),
            plan.runs,
            plan.sweep,
            plan.sweep_runs,
            plan.links.len(),
            devices::DEVICES.len(),
            plan.device_runs
        );
    }
    let device_steps = if plan.device_runs > 0 { 1 } else { 0 };
    let steps = 3 + plan.sweep.len() + device_steps;
    let mut progress = Progress::new(NAME, steps, planned, !opts.no_progress);
    let work: PathBuf = std::env::temp_dir().join(format!("hlab-hipbex-{}", std::process::id()));
    std::fs::create_dir_all(&work)
        .map_err(|e| LabError::io(format!("creating {}", work.display()), e))?;
    let mut hosts = HipHosts::new(exe)?;
    let mut sweep = Vec::new();
    for k in &plan.sweep {
        progress.step(
            &format!("K = {k}: {} base exchanges", plan.sweep_runs),
            plan.sweep_runs as f64 * run_s(*k),
        );
        sweep.push(bex::series(&mut hosts, *k, plan.sweep_runs, &work, "", false)?);
    }
    progress.step(
        &format!("K = {SEED_K}: {} base exchanges", plan.runs),
        plan.runs as f64 * run_s(SEED_K),
    );
    // The main series last: its final association carries the RTT and throughput tests.
    let main = bex::series(&mut hosts, SEED_K, plan.runs, &work, "", true)?;
    sweep.push(main.clone());
    sweep.sort_by_key(|s| s.k);
    let mut notes = Vec::new();
    let (rtt, throughput) = if main.runs.last().is_some_and(|r| r.established) {
        progress.step("RTT", rtt_s(plan));
        let rtt = transfer::rtt(&hosts, plan.pings)?;
        progress.step("throughput", planned - progress_done(plan));
        let thr = transfer::throughput(&mut hosts, &plan.links, plan.throughput_s)?;
        (Some(rtt), thr)
    } else {
        notes.push("The last base exchange of the main series did not establish: no RTT or throughput figures.".into());
        (None, Vec::new())
    };
    let devices = if plan.device_runs > 0 {
        progress.step(
            &format!(
                "device pairs on a Wi-Fi-like link: {} × {}",
                devices::DEVICES.len(),
                plan.device_runs
            ),
            devices::DEVICES.len() as f64 * device_s(plan),
        );
        devices::run(&mut hosts, plan.device_runs, plan.pings, plan.device_throughput_s, &work)?
    } else {
        Vec::new()
    };
    hosts.stop();
    drop(hosts);
    let _ = std::fs::remove_dir_all(&work);
    progress.finish();
    let results = Results { main, sweep, rtt, throughput, devices };
    notes.extend(table::notes(&results, plan));
    notes.extend(device_table::notes(&results.devices, plan));
    notes.push(format!("Background load before the run: {background:.0} % of the machine (2 cores shared by both nodes, two tcpdumps and ping/iperf3)."));
    if cfg!(debug_assertions) {
        notes.push("The lab was built without optimisation (debug profile); build with --release for figures.".into());
    }
    report.notes = notes;
    report.sections = table::sections(&results, &seed);
    report.sections.extend(device_table::sections(&results, &seed));
    report.charts = table::charts(&results, &seed);
    report.extra = serde_json::to_value(&results).ok();
    report.wall_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Planned seconds of everything before the throughput step and after it (the device pairs).
fn progress_done(plan: &Plan) -> f64 {
    bex_s(plan) + rtt_s(plan) + devices::DEVICES.len() as f64 * device_s(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_and_full_plans() {
        let q = plan(&RunOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((q.runs, q.sweep.clone(), q.links.len()), (10, vec![0, 16], 2));
        assert!(planned_s(&q) < 120.0, "{}", planned_s(&q));
        // The device pairs add under 40 s to the quick profile.
        assert_eq!((q.device_runs, q.device_throughput_s), (5, Some(1)));
        let added = devices::DEVICES.len() as f64 * device_s(&q);
        assert!(added > 20.0 && added < 40.0, "{added}");
        let none = Plan { device_runs: 0, ..q.clone() };
        assert!((planned_s(&q) - planned_s(&none) - added).abs() < 1e-9);
        let f = plan(&RunOptions { full: true, ..RunOptions::default() })
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.sweep.len(), 12);
        assert_eq!(f.device_runs, 20);
        assert!(!f.sweep.contains(&SEED_K));
        let one = plan(&RunOptions { link: Some("unlimited".into()), ..RunOptions::default() })
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(one.links, vec![("unlimited".to_string(), None)]);
    }
}
