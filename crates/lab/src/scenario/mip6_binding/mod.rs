//! Scenario `mip6-binding`, seed 000 (HP-UX IPSec A.02.00 white paper, Mobile IPv6 section): a
//! home agent answering ESP-protected Binding Updates (RFC 3776) — binding-cache entries created
//! per second with ESP-AES and ESP-3DES (the seed's 690 and 370), here also AES-GCM, with the
//! BU→BA latency, the peak rate before Binding Acknowledgements are lost, and the machine's
//! ESP-only packet rate beside them.
//!
//! Here: two namespaces on a veth ([`home`]): the mobile nodes' foreign link with the load
//! generator (`hipsec-traffic mip6`, `crate::mip6gen`) playing thousands of mobile nodes, and a
//! hipsec node with `[home-agent]` listing them all. Per suite, `runs` generator runs against a
//! fresh home agent ([`mod@plan`]); the report with the seed's figures beside ours ([`table`],
//! [`compare`]).
//!
//! Then, unless the plan turns it off, the forwarding phase in a topology of
//! its own ([`forward`]): a correspondent node, a home agent with one mobile node's ESP tunnel
//! SAs, the mobile node on a foreign link; STREAM and RR from the correspondent to the home
//! address beside the plain path to the care-of address ([`stream_rr`]), and the delivery gap
//! when the mobile node moves under a paced stream ([`move_gap`]); reported by [`fwd_table`].

pub mod compare;
pub mod forward;
pub mod fwd_table;
pub mod home;
pub mod move_gap;
pub mod plan;
pub mod stream_rr;
pub mod table;

use crate::error::LabError;
use crate::mip6gen::Suite;
use crate::node::ModeHook;
use crate::report::{Machine, Pending, Report, SCHEMA, SeedFigures};
use crate::scenario::common::{Progress, RunOptions, Scenario, background_load_pct, unix_now_s};
use crate::traffic::runner::RunParams;
use home::HomeLink;
pub use plan::{Plan, Results, plan};
use std::path::Path;
use std::time::Instant;

pub const NAME: &str = "mip6-binding";
pub const SEED_TABLE: &str = "mip6_binding";

/// The scenario in the registry.
#[derive(Debug, Clone, Copy)]
pub struct Mip6Binding;

impl Scenario for Mip6Binding {
    fn name(&self) -> &'static str {
        NAME
    }

    fn seed(&self) -> &'static str {
        "000"
    }

    fn summary(&self) -> &'static str {
        "Mobile IPv6 home agent: ESP-protected binding-cache entries per second (AES-CBC, 3DES, AES-GCM), BU→BA latency, rate ramp, ESP-only rate; CN → HA → MN forwarding (STREAM/RR) and the delivery gap of a move"
    }

    fn run(&self, opts: &RunOptions, _hook: &dyn ModeHook) -> Result<Report, LabError> {
        // The home agent is started here, from the hipsec binary, afresh for every run (like
        // hip-bex's hosts): ModeHook has no home-agent method.
        let exe = crate::scenario::hip_bex::hosts::locate_hipsec();
        run_plan(opts, exe.as_deref(), &plan(opts)?)
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
    let seed = SeedFigures::load(&opts.seed_path(), SEED_TABLE);
    let mut report = Report {
        schema: SCHEMA.into(),
        scenario: NAME.into(),
        profile: opts.profile().into(),
        params: RunParams {
            warmup_ms: 0,
            duration_ms: plan.step_ms * plan.ramp.len() as u64,
            repetitions: plan.runs,
        },
        started_unix_s: unix_now_s(),
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
            mode: "home agent".into(),
            reason: "no hipsec binary found (HIPSEC_BIN, the running hipsec, or beside the running executable)".into(),
        });
        return Ok(report);
    };
    let bin = opts.traffic_bin()?;
    let traffic = bin.command();
    let background = background_load_pct()?;
    let planned = plan::planned_s(plan);
    if !opts.no_progress {
        eprintln!(
            "[{NAME}] {} profile: {} mobile nodes, {} suites × {} runs, ramp {:?} BU/s × {} ms; planned {planned:.0} s",
            opts.profile(),
            plan.nodes,
            Suite::ALL.len(),
            plan.runs,
            plan.ramp,
            plan.step_ms
        );
    }
    let forward_steps = plan.forward.as_ref().map_or(0, |f| 2 + f.ways().len() * 4);
    let mut progress = Progress::new(
        NAME,
        Suite::ALL.len() * plan.runs + forward_steps,
        planned,
        !opts.no_progress,
    );
    let mut link = HomeLink::new(exe)?;
    let mut runs = Vec::new();
    let mut suites = Vec::new();
    for suite in Suite::ALL {
        let mut outcomes = Vec::new();
        for i in 0..plan.runs {
            if crate::sys::interrupted() {
                return Err(LabError::Interrupted);
            }
            progress
                .step(&format!("{} run {}/{}", suite.name(), i + 1, plan.runs), plan::run_s(plan));
            link.start(plan.nodes, suite)?;
            outcomes.push(link.generate(&traffic, &plan::gen_args(plan, suite))?);
            link.stop();
        }
        suites.push(plan::summarise(suite, plan, &outcomes));
        runs.push((suite.name().to_string(), outcomes));
    }
    drop(link);
    let mut notes = vec![
        format!("Background load before the run: {background:.0} % of the machine (2 cores; the home agent and the generator share them)."),
        "Topology of the binding-rate runs: the mobile nodes' foreign link (generator) — home agent.".into(),
    ];
    let forward = match &plan.forward {
        None => None,
        Some(fp) => {
            // A forwarding phase that fails leaves the binding-rate figures standing: the
            // report lists it as pending with the reason.
            let run = forward::Forwarding::new(exe)
                .and_then(|mut fw| stream_rr::run(&mut fw, fp, &bin, &mut progress));
            match run {
                Ok(f) => {
                    notes.push(format!(
                        "Topology of the forwarding phase: correspondent — router — home link (home agent) and router — foreign link (mobile node); tunnel SAs {}; the mobile node was registered {:.1} s after it started.",
                        f.suite, f.registration_s
                    ));
                    Some(f)
                }
                Err(LabError::Interrupted) => return Err(LabError::Interrupted),
                Err(e) => {
                    report
                        .pending
                        .push(Pending { mode: "forwarding".into(), reason: e.to_string() });
                    None
                }
            }
        }
    };
    progress.finish();
    let results = Results { plan: plan.clone(), suites, runs, forward };
    for s in &results.suites {
        if s.created < f64::from(plan.nodes) {
            notes.push(format!(
                "{}: the home agent reported {:.0} entries created of {} mobile nodes (median): some Binding Updates were lost before the cache.",
                s.suite, s.created, plan.nodes
            ));
        }
    }
    if cfg!(debug_assertions) {
        notes.push("The lab was built without optimisation (debug profile); build with --release for figures.".into());
    }
    report.notes = notes;
    report.sections = table::sections(&results, &seed);
    report.charts = table::charts(&results, &seed);
    report.extra = serde_json::to_value(&results).ok();
    report.wall_s = started.elapsed().as_secs_f64();
    Ok(report)
}
