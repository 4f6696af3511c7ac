//! The report's model: what a run records (every sample, per-case summaries and CPU, the
//! iperf3 cross-check, pending modes, the seed's figures, the machine) and its JSON form. The
//! renderers beside it (`markdown`, `svg`, `html`) read it; `mod.rs` writes them out.

use super::chart::Group;
use crate::cpu;
use crate::error::LabError;
use crate::topology::Family;
use crate::traffic::runner::{RunParams, Sample};
use crate::traffic::stats::Summary;
use crate::traffic::{RttStats, TestKind};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Version tag of the JSON layout.
pub const SCHEMA: &str = "hipsec-lab/1";

/// The machine the figures come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: u32,
    pub kernel: String,
    pub hipsec_commit: Option<String>,
}

impl Machine {
    pub fn describe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let cores = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(0);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        // The checkout the command runs in; else the one this binary was built from (a lab
        // or a calibration started from another folder still names its commit).
        let built_from = env!("CARGO_MANIFEST_DIR");
        let hipsec_commit = [None, Some(built_from)].into_iter().find_map(|dir| {
            let git = |args: &[&str]| {
                let mut all: Vec<&str> = dir.map_or_else(Vec::new, |d| vec!["-C", d]);
                all.extend_from_slice(args);
                crate::sys::run("git", &all).ok().map(|s| s.trim().to_string())
            };
            let head = git(&["rev-parse", "HEAD"])?;
            Some(match git(&["status", "--porcelain", "--untracked-files=no"]) {
                Some(s) if !s.is_empty() => format!("{head}-dirty"),
                _ => head,
            })
        });
        Machine { cpu_model, cores, kernel, hipsec_commit }
    }
}

/// iperf3's view of the same test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossCheck {
    pub iperf3_mbit_s: Vec<f64>,
    pub iperf3_median: f64,
    pub ours_median: f64,
    /// |ours - iperf3| / iperf3 of the medians.
    pub disagreement: f64,
    pub flagged: bool,
}

/// CPU figures of a case, means over its samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseCpu {
    /// Whole machine busy, % of all CPUs.
    pub machine_pct: f64,
    pub softirq_pct: f64,
    pub system_pct: f64,
    /// Traffic client + server (+ watched processes), % of one CPU.
    pub procs_pct: f64,
    /// Machine busy µs per KB (STREAM) or per transaction (RR): netperf's service demand.
    pub sd_machine: Option<f64>,
    /// The same charged to the processes only.
    pub sd_procs: Option<f64>,
    /// The same charged to the watched processes alone (the hipsec nodes); None without any.
    #[serde(default)]
    pub sd_watched: Option<f64>,
    pub sd_unit: String,
}

impl CaseCpu {
    pub fn from_samples(test: TestKind, samples: &[Sample]) -> Option<CaseCpu> {
        if samples.is_empty() {
            return None;
        }
        let n = samples.len() as f64;
        let mean = |f: &dyn Fn(&Sample) -> f64| samples.iter().map(f).sum::<f64>() / n;
        let pct = |part: u64, whole: u64| {
            if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 }
        };
        let procs_us =
            |s: &Sample| s.result.client_cpu_us + s.result.server.cpu_us + s.watched_cpu_us;
        let sd = |s: &Sample, us: u64| {
            if test.is_stream() {
                cpu::service_demand_us_per_kb(us, s.result.bytes())
            } else {
                cpu::service_demand_us_per_tran(us, s.result.transactions)
            }
        };
        let mean_opt = |f: &dyn Fn(&Sample) -> Option<f64>| {
            let v: Option<Vec<f64>> = samples.iter().map(f).collect();
            v.map(|v| v.iter().sum::<f64>() / n)
        };
        Some(CaseCpu {
            machine_pct: mean(&|s| s.result.system.utilisation_pct()),
            softirq_pct: mean(&|s| pct(s.result.system.softirq_us, s.result.system.total_us)),
            system_pct: mean(&|s| pct(s.result.system.system_us, s.result.system.total_us)),
            procs_pct: mean(&|s| {
                cpu::proc_utilisation_pct(procs_us(s), s.result.elapsed_ns / 1000)
            }),
            sd_machine: mean_opt(&|s| sd(s, s.result.system.busy_us())),
            sd_procs: mean_opt(&|s| sd(s, procs_us(s))),
            sd_watched: if samples.iter().any(|s| s.watched_cpu_us > 0) {
                mean_opt(&|s| sd(s, s.watched_cpu_us))
            } else {
                None
            },
            sd_unit: if test.is_stream() { "µs/KB".into() } else { "µs/tran".into() },
        })
    }
}

/// One test in one mode, family and link, with every repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub mode: String,
    pub family: Family,
    pub link: String,
    pub test: TestKind,
    pub msg_size: usize,
    pub resp_size: usize,
    pub samples: Vec<Sample>,
    pub summary: Option<Summary>,
    pub cpu: Option<CaseCpu>,
    /// Mean of the samples' RTT statistics (RR only).
    pub rtt: Option<RttStats>,
    pub iperf3: Option<CrossCheck>,
    /// Throughput relative to mode "none" in the same family/link/test.
    pub ratio_vs_none: Option<f64>,
}

impl Case {
    pub fn label(&self) -> String {
        let size = if self.test.is_stream() {
            format!("{}", self.msg_size)
        } else {
            format!("{}/{}", self.msg_size, self.resp_size)
        };
        format!("{} {} {} {}", self.test, size, self.family, self.link)
    }
}

/// Mean of per-sample RTT statistics.
pub fn mean_rtt(samples: &[Sample]) -> Option<RttStats> {
    let r: Vec<RttStats> = samples.iter().filter_map(|s| s.result.rtt).collect();
    if r.is_empty() {
        return None;
    }
    let n = r.len() as f64;
    Some(RttStats {
        samples: r.iter().map(|x| x.samples).sum(),
        mean_us: r.iter().map(|x| x.mean_us).sum::<f64>() / n,
        p50_us: r.iter().map(|x| x.p50_us).sum::<f64>() / n,
        p99_us: r.iter().map(|x| x.p99_us).sum::<f64>() / n,
    })
}

/// A mode that is listed but could not run yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub mode: String,
    pub reason: String,
}

/// The seed's published figures, as read from seed-figures.toml (or why they are absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedFigures {
    pub source: String,
    pub table: Option<serde_json::Value>,
    pub note: String,
}

impl SeedFigures {
    /// Reads `[table]` from `path`; a missing file or table is recorded, not an error.
    pub fn load(path: &Path, table: &str) -> SeedFigures {
        let source = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                return SeedFigures {
                    source,
                    table: None,
                    note: format!("seed figures not available: {e}"),
                };
            }
        };
        let parsed: Result<toml::Table, _> = toml::from_str(&text);
        match parsed {
            Err(e) => {
                SeedFigures { source, table: None, note: format!("seed figures do not parse: {e}") }
            }
            Ok(t) => match t.get(table).map(serde_json::to_value) {
                Some(Ok(v)) => SeedFigures { source, table: Some(v), note: String::new() },
                _ => SeedFigures {
                    source,
                    table: None,
                    note: format!("no [{table}] table in the seed figures"),
                },
            },
        }
    }
}

/// Everything one scenario run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub scenario: String,
    pub profile: String,
    pub params: RunParams,
    pub started_unix_s: u64,
    pub wall_s: f64,
    pub machine: Machine,
    pub cases: Vec<Case>,
    pub pending: Vec<Pending>,
    pub seed: Option<SeedFigures>,
    pub notes: Vec<String>,
    /// Scenario-specific Markdown sections (title, body), rendered after the results table; a
    /// report with sections replaces ipsec-netperf's built-in seed reading by them.
    #[serde(default)]
    pub sections: Vec<Section>,
    /// Scenario-specific bar charts, written beside the standard plots.
    #[serde(default)]
    pub charts: Vec<Chart>,
    /// Scenario-specific structured results (e.g. filter-rules' per-point changes).
    #[serde(default)]
    pub extra: Option<serde_json::Value>,
}

/// A Markdown section of a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    pub title: String,
    pub body: String,
}

/// A bar chart a scenario adds: `file` (e.g. `filter_throughput.svg`), groups of bars.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    pub file: String,
    pub title: String,
    pub unit: String,
    pub groups: Vec<Group>,
}

impl Report {
    pub fn to_json(&self) -> Result<String, LabError> {
        serde_json::to_string_pretty(self)
            .map_err(|e| LabError::parse("report (serialising)", e.to_string()))
    }

    /// Parses a report written by `to_json`; rejects other schemas.
    pub fn from_json(text: &str) -> Result<Report, LabError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let r: Report = serde_path_to_error::deserialize(de).map_err(|e| {
            LabError::parse(format!("report JSON field {}", e.path()), e.inner().to_string())
        })?;
        if r.schema != SCHEMA {
            return Err(LabError::parse(
                "report JSON field schema",
                format!("`{}`, expected `{SCHEMA}`", r.schema),
            ));
        }
        Ok(r)
    }

    pub fn read(path: &Path) -> Result<Report, LabError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LabError::io(format!("reading {}", path.display()), e))?;
        Report::from_json(&text).map_err(|e| match e {
            LabError::Parse { field, reason } => {
                LabError::Parse { field: format!("{}: {field}", path.display()), reason }
            }
            other => other,
        })
    }

    /// The scenario-specific `extra` as `T` (None when the report has none); an error names the
    /// field that does not fit.
    pub fn extra_as<T: serde::de::DeserializeOwned>(&self) -> Result<Option<T>, LabError> {
        let Some(v) = &self.extra else { return Ok(None) };
        serde_path_to_error::deserialize(v).map(Some).map_err(|e| {
            LabError::parse(format!("report JSON field extra.{}", e.path()), e.inner().to_string())
        })
    }

    /// A number of the seed's table at `path` (e.g. `["times_ms", "A1", "t1"]`).
    pub fn seed_num(&self, path: &[&str]) -> Option<f64> {
        let mut v = self.seed.as_ref()?.table.as_ref()?;
        for k in path {
            v = v.get(*k)?;
        }
        v.as_f64()
    }

    /// Fills `ratio_vs_none` from the "none" case with the same family, link, test and sizes.
    pub fn compute_ratios(&mut self) {
        self.compute_ratios_against("none");
    }

    /// Fills `ratio_vs_none` from the case of mode `base` with the same family, link, test and
    /// sizes (e.g. "filter off").
    pub fn compute_ratios_against(&mut self, base: &str) {
        let base: Vec<(String, f64)> = self
            .cases
            .iter()
            .filter(|c| c.mode == base)
            .filter_map(|c| c.summary.map(|s| (c.label(), s.mean)))
            .collect();
        for c in &mut self.cases {
            let b = base.iter().find(|(l, _)| *l == c.label()).map(|(_, v)| *v);
            c.ratio_vs_none = match (b, c.summary) {
                (Some(b), Some(s)) if b > 0.0 => Some(s.mean / b),
                _ => None,
            };
        }
    }
}
