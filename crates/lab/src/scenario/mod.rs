//! Scenarios (one per seed) and the public entry points the `hipsec lab` CLI calls: `list()`,
//! `run(name, opts)` with `RunOptions` (a `clap::Args` to flatten), and a progress/ETA line.

pub mod filter_rules;
pub mod ipsec_netperf;

use crate::error::LabError;
use crate::report::Report;
use crate::traffic::TrafficBin;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// The node pieces scenarios share, re-exported where callers have always found them.
pub use crate::node::{
    EspCarrier, EspSuite, FilterEngine, Mode, ModeGuard, ModeHook, NodeFilter, NodeHook, PlainOnly,
};

/// One line of `hipsec lab list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioInfo {
    pub name: &'static str,
    pub seed: &'static str,
    pub summary: &'static str,
    /// False while the scenario is only planned.
    pub available: bool,
}

/// Every scenario of DESIGN.md §5.
pub fn list() -> Vec<ScenarioInfo> {
    let s = |name, seed, summary, available| ScenarioInfo { name, seed, summary, available };
    vec![
        s(
            "ipsec-netperf",
            "004",
            "IPsec none/AH/ESP/AH+ESP over IPv4 and IPv6, netperf STREAM and RR tests, unlimited and 100 Mbit/s",
            true,
        ),
        s("mip6-binding", "000", "Mobile IPv6 home agent binding cache (planned)", false),
        s("hip-bex", "001", "HIP base exchange phase times (planned)", false),
        s(
            "filter-rules",
            "002",
            "packet filter cost versus rule count: hipsec classifier and linear, nftables chain and sets; 0 to 100000 rules",
            true,
        ),
        s("rekey-bandwidth", "003", "IKEv2 rekey delay and bandwidth (planned)", false),
    ]
}

/// Options of `hipsec lab run SCENARIO`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunOptions {
    /// Short runs, the whole scenario in under 3 minutes (the default).
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// Long runs with more repetitions (tens of minutes).
    #[arg(long)]
    pub full: bool,
    /// Only this link rate, e.g. 100mbit, 1gbit or unlimited (default: ipsec-netperf runs both
    /// unlimited and 100mbit; filter-rules runs 1gbit).
    #[arg(long, value_name = "RATE")]
    pub link: Option<String>,
    /// Results folder (default: lab-results/SCENARIO-UNIXTIME).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the JSON report on stdout instead of the Markdown table.
    #[arg(long)]
    pub json: bool,
    /// Path of the hipsec-traffic helper (default: beside the running executable).
    #[arg(long, value_name = "PATH")]
    pub traffic_bin: Option<PathBuf>,
    /// Seed figures file (default: ../shared/reference/seed-figures.toml from the repository).
    #[arg(long, value_name = "PATH")]
    pub seed_figures: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

impl RunOptions {
    pub fn profile(&self) -> &'static str {
        if self.full { "full" } else { "quick" }
    }

    pub(crate) fn traffic_bin(&self) -> Result<TrafficBin, LabError> {
        match &self.traffic_bin {
            Some(p) if p.is_file() => Ok(TrafficBin::Path(p.clone())),
            Some(p) => Err(LabError::InvalidOption {
                field: "--traffic-bin".into(),
                reason: format!("{} is not a file", p.display()),
            }),
            None => TrafficBin::locate(),
        }
    }

    pub(crate) fn seed_path(&self) -> PathBuf {
        if let Some(p) = &self.seed_figures {
            return p.clone();
        }
        let rel = "../shared/reference/seed-figures.toml";
        if let Ok(top) = crate::sys::run("git", &["rev-parse", "--show-toplevel"]) {
            let p = PathBuf::from(top.trim()).join(rel);
            if p.is_file() {
                return p;
            }
        }
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub report: Report,
    pub out_dir: PathBuf,
    pub files: Vec<PathBuf>,
    pub markdown: String,
}

/// Runs scenario `name` with the library's own hook (`none` only; the protected modes are
/// reported as pending). `hipsec lab` uses `run_with` and a `NodeHook`, which runs them all.
/// Prints the Markdown (or JSON with `--json`) on stdout.
pub fn run(name: &str, opts: &RunOptions) -> Result<RunSummary, LabError> {
    run_with(name, opts, &PlainOnly)
}

/// Like `run`, with a `ModeHook` that sets up the protected modes (the hipsec node plugs in here).
pub fn run_with(
    name: &str,
    opts: &RunOptions,
    hook: &dyn ModeHook,
) -> Result<RunSummary, LabError> {
    let report = match name {
        "ipsec-netperf" => ipsec_netperf::run(opts, hook).map_err(crate::sys::map_interrupted)?,
        "filter-rules" => filter_rules::run(opts, hook).map_err(crate::sys::map_interrupted)?,
        _ => {
            let known: Vec<&str> = list().iter().filter(|s| s.available).map(|s| s.name).collect();
            return Err(LabError::UnknownScenario { name: name.into(), known: known.join(", ") });
        }
    };
    let out_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("lab-results/{name}-{}", report.started_unix_s)));
    let files = report.write_all(&out_dir)?;
    let markdown = crate::report::markdown::render(&report);
    if opts.json {
        println!("{}", report.to_json()?);
    } else {
        println!("{markdown}");
        println!(
            "Written to {}: {}",
            out_dir.display(),
            files
                .iter()
                .filter_map(|f| f.file_name())
                .map(|f| f.to_string_lossy())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(RunSummary { report, out_dir, files, markdown })
}

/// A one-line progress display with an ETA from planned step durations.
#[derive(Debug)]
pub struct Progress {
    scenario: String,
    planned_total_s: f64,
    planned_done_s: f64,
    steps: usize,
    step: usize,
    start: Instant,
    enabled: bool,
}

impl Progress {
    pub fn new(scenario: &str, steps: usize, planned_total_s: f64, enabled: bool) -> Self {
        Progress {
            scenario: scenario.into(),
            planned_total_s,
            planned_done_s: 0.0,
            steps,
            step: 0,
            start: Instant::now(),
            enabled,
        }
    }

    /// Announces the next step, which is planned to take `planned_s`.
    pub fn step(&mut self, what: &str, planned_s: f64) {
        self.step += 1;
        let elapsed = self.start.elapsed().as_secs_f64();
        let eta = if self.planned_done_s > 0.0 {
            elapsed / self.planned_done_s * (self.planned_total_s - self.planned_done_s)
        } else {
            self.planned_total_s
        };
        self.planned_done_s += planned_s;
        if self.enabled {
            let mut e = std::io::stderr().lock();
            let _ = write!(
                e,
                "\r\x1b[2K[{}] {}/{} {what} · {:.0} s elapsed · ETA {:.0} s",
                self.scenario,
                self.step,
                self.steps,
                elapsed,
                eta.max(0.0)
            );
            let _ = e.flush();
        }
    }

    /// Takes `planned_s` and `steps` out of the plan (a mode that turned out to be pending).
    pub fn skip(&mut self, planned_s: f64, steps: usize) {
        self.planned_total_s = (self.planned_total_s - planned_s).max(self.planned_done_s);
        self.steps = self.steps.saturating_sub(steps).max(self.step);
    }

    pub fn finish(&self) {
        if self.enabled {
            eprintln!(
                "\r\x1b[2K[{}] done in {:.0} s",
                self.scenario,
                self.start.elapsed().as_secs_f64()
            );
        }
    }
}
