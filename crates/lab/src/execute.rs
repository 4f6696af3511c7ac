//! The entry points the `hipsec lab` CLI calls to run a scenario: find it in the registry, run
//! it, write its folder (JSON, Markdown, SVG and the HTML pages of `crate::pages`) and print
//! the Markdown or JSON. Above both the scenarios and the pages, so neither imports the other.

use crate::error::LabError;
use crate::node::{ModeHook, PlainOnly};
use crate::report::Report;
use crate::scenario::{RunOptions, find, list};
use std::path::PathBuf;

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
    let Some(scenario) = find(name) else {
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

    /// A name that is not a scenario that runs is refused before any namespace or process is
    /// touched, and the error lists the ones that do.
    #[test]
    fn an_unknown_scenario_is_refused() {
        match run_with("no-such-scenario", &RunOptions::default(), &PlainOnly) {
            Err(LabError::UnknownScenario { known, .. }) => {
                assert_eq!(
                    known,
                    "ipsec-netperf, mip6-binding, hip-bex, filter-rules, rekey-bandwidth, dv-video"
                );
            }
            other => panic!("expected UnknownScenario, got {other:?}"),
        }
    }
}
