//! Scenarios (one per seed) and the public entry points the `hipsec lab` CLI calls: `list()`,
//! `run(name, opts)` with `RunOptions` (a `clap::Args` to flatten), and a progress/ETA line.
//!
//! Each scenario is a folder (`ipsec_netperf/`, `filter_rules/`, `rekey_bandwidth/`) whose
//! `mod.rs` implements [`Scenario`] on a unit struct; [`REGISTRY`] lists them, with the planned
//! ones, in `hipsec lab list` order, and `run_with` dispatches through it. What the scenarios share sits below them:
//! [`common`] (the trait, `RunOptions`, `Progress`) and `crate::node` (the modes and the hook that
//! starts hipsec nodes). A scenario never imports this file.

pub mod common;
pub mod filter_rules;
pub mod hip_bex;
pub mod ipsec_netperf;
pub mod rekey_bandwidth;

use crate::error::LabError;
use crate::report::Report;
use std::path::PathBuf;

/// The node pieces scenarios share, re-exported where callers have always found them.
pub use crate::node::{
    EspCarrier, EspSuite, FilterEngine, Mode, ModeGuard, ModeHook, NodeFilter, NodeHook, PlainOnly,
};
pub use common::{Progress, RunOptions, Scenario};

/// One line of `hipsec lab list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioInfo {
    pub name: &'static str,
    pub seed: &'static str,
    pub summary: &'static str,
    /// False while the scenario is only planned.
    pub available: bool,
}

/// A line of the registry: a scenario that runs, or one that is only planned.
#[derive(Clone, Copy)]
pub enum Entry {
    Runs(&'static dyn Scenario),
    /// Not implemented yet: listed with `available: false`; `run` refuses it.
    Planned {
        name: &'static str,
        seed: &'static str,
        summary: &'static str,
    },
}

impl Entry {
    /// Its line of `hipsec lab list`.
    pub fn info(&self) -> ScenarioInfo {
        match *self {
            Entry::Runs(s) => ScenarioInfo {
                name: s.name(),
                seed: s.seed(),
                summary: s.summary(),
                available: true,
            },
            Entry::Planned { name, seed, summary } => {
                ScenarioInfo { name, seed, summary, available: false }
            }
        }
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = self.info();
        write!(f, "{} ({})", i.name, if i.available { "runs" } else { "planned" })
    }
}

/// Every scenario of DESIGN.md §5, in `hipsec lab list` order. A new scenario replaces its
/// `Planned` line by `Entry::Runs(&its_folder::ItsStruct)`.
pub const REGISTRY: &[Entry] = &[
    Entry::Runs(&ipsec_netperf::IpsecNetperf),
    Entry::Planned {
        name: "mip6-binding",
        seed: "000",
        summary: "Mobile IPv6 home agent binding cache (planned)",
    },
    Entry::Runs(&hip_bex::HipBex),
    Entry::Runs(&filter_rules::FilterRules),
    Entry::Runs(&rekey_bandwidth::RekeyBandwidth),
];

/// Every scenario of DESIGN.md §5.
pub fn list() -> Vec<ScenarioInfo> {
    REGISTRY.iter().map(Entry::info).collect()
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
    let scenario = REGISTRY.iter().find_map(|e| match e {
        Entry::Runs(s) if s.name() == name => Some(*s),
        _ => None,
    });
    let Some(scenario) = scenario else {
        let known: Vec<&str> = list().iter().filter(|s| s.available).map(|s| s.name).collect();
        return Err(LabError::UnknownScenario { name: name.into(), known: known.join(", ") });
    };
    let report = scenario.run(opts, hook).map_err(crate::sys::map_interrupted)?;
    let out_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("lab-results/{name}-{}", report.started_unix_s)));
    let files = crate::pages::write_scenario(&report, &out_dir)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_each_scenario_once_and_refuses_the_planned() {
        let names: Vec<&str> = list().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["ipsec-netperf", "mip6-binding", "hip-bex", "filter-rules", "rekey-bandwidth"]
        );
        let available: Vec<&str> = list().iter().filter(|s| s.available).map(|s| s.name).collect();
        assert_eq!(available, ["ipsec-netperf", "hip-bex", "filter-rules", "rekey-bandwidth"]);
        // A planned scenario is refused before any namespace or process is touched.
        match run_with("mip6-binding", &RunOptions::default(), &PlainOnly) {
            Err(LabError::UnknownScenario { known, .. }) => {
                assert_eq!(known, "ipsec-netperf, hip-bex, filter-rules, rekey-bandwidth");
            }
            other => panic!("expected UnknownScenario, got {other:?}"),
        }
    }
}
