//! What every scenario shares: the [`Scenario`] trait it implements, the [`RunOptions`] it runs
//! with, the [`Progress`] line it drives, and small measurements of the machine. Scenarios import
//! from here, never from `scenario/mod.rs` (which registers them).

use crate::error::LabError;
use crate::node::ModeHook;
use crate::report::Report;
use crate::report::compare::Comparison;
use crate::traffic::TrafficBin;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// A scenario of the lab: one seed's measurement. `scenario/mod.rs` lists it in its
/// registry; `hipsec lab list` shows the first three methods and `hipsec lab run NAME` calls
/// `run`, then writes and prints the report.
pub trait Scenario: Sync {
    /// The name `hipsec lab run` takes, e.g. `ipsec-netperf`.
    fn name(&self) -> &'static str;
    /// The seed it reproduces (`seed-figures.toml`), e.g. `004`.
    fn seed(&self) -> &'static str;
    /// One line for `hipsec lab list`.
    fn summary(&self) -> &'static str;
    /// Runs the profile `opts` asks for and returns the report, not yet written. `hook` sets up
    /// the protected modes (hipsec nodes); a mode it cannot set up is reported as pending.
    fn run(&self, opts: &RunOptions, hook: &dyn ModeHook) -> Result<Report, LabError>;
    /// Each number the seed published beside our figure for it, read from a report this
    /// scenario wrote (its `seed` table and `extra`); the HTML page draws them. A report whose
    /// `extra` does not parse gives an error naming the field.
    fn comparisons(&self, _report: &Report) -> Result<Vec<Comparison>, LabError> {
        Ok(Vec::new())
    }
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

    /// The seed figures to read: `--seed-figures`, else the shared reference beside the
    /// checkout (`../shared/reference/seed-figures.toml`, the authoritative copy), else the
    /// repository's own copy (`docs/reference/seed-figures.toml`, so that a fresh clone's
    /// report still sets the published figures beside ours).
    pub(crate) fn seed_path(&self) -> PathBuf {
        if let Some(p) = &self.seed_figures {
            return p.clone();
        }
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let top = crate::sys::run("git", &["rev-parse", "--show-toplevel"])
            .ok()
            .map(|t| PathBuf::from(t.trim()));
        let candidates: Vec<PathBuf> = [SHARED_SEED_FIGURES, REPO_SEED_FIGURES]
            .iter()
            .flat_map(|rel| top.iter().chain([&manifest]).map(move |t| t.join(rel)))
            .collect();
        candidates
            .iter()
            .find(|p| p.is_file())
            .cloned()
            .unwrap_or_else(|| manifest.join(SHARED_SEED_FIGURES))
    }
}

/// The shared reference, relative to the repository's top.
const SHARED_SEED_FIGURES: &str = "../shared/reference/seed-figures.toml";
/// The repository's copy of it, relative to the repository's top.
const REPO_SEED_FIGURES: &str = "docs/reference/seed-figures.toml";

/// Seconds since the Unix epoch (0 if the clock is before it): a report's `started_unix_s`.
pub(crate) fn unix_now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Machine busy % over half a second before a run: other processes inflate machine-wide CPU.
pub(crate) fn background_load_pct() -> Result<f64, LabError> {
    let a = crate::cpu::SystemCpu::read()?;
    std::thread::sleep(std::time::Duration::from_millis(500));
    Ok(crate::cpu::SystemCpu::read()?.since(&a).utilisation_pct())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The repository's copy of the seed figures is the shared reference's, byte for byte,
    /// whenever the shared one is there to compare with (a checkout beside ../shared).
    #[test]
    fn the_repository_copy_of_the_seed_figures_is_the_shared_one() {
        let top = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let ours = std::fs::read(top.join(REPO_SEED_FIGURES)).expect("docs/reference copy");
        assert!(String::from_utf8_lossy(&ours).contains("binding_cache_entries_per_s"));
        if let Ok(shared) = std::fs::read(top.join(SHARED_SEED_FIGURES)) {
            assert!(shared == ours, "docs/reference/seed-figures.toml differs from ../shared's");
        }
    }
}
