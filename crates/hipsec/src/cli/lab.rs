//! `hipsec lab`: the seed studies' experiments rebuilt on this machine.

use clap::{Args, Subcommand};
use std::path::PathBuf;

pub(crate) const LAB_HELP: &str = "\
hipsec's lab rebuilds each seed study's experiment on this machine (network namespaces, veth
links, tc tbf for link rates), drives real traffic through the stack with a built-in netperf-style
engine (TCP_STREAM, UDP_STREAM, TCP_RR, UDP_RR; iperf3 as a cross-check), measures throughput,
RTT, CPU and service demand (CPU µs per KB), and prints every figure beside the seed's published
one (../shared/reference/seed-figures.toml). Results: Markdown on the terminal and in the results
folder, JSON with every sample and the machine description, SVG charts, and pages for a browser:
report.html per scenario (HTML tables, our figures beside the seed's, charts) and index.html over
the scenarios of the folder.

With no subcommand it runs every available scenario on its defaults (--quick) into
lab-results/UNIXTIME/SCENARIO and writes lab-results/UNIXTIME/index.html. Needs root.
`hipsec lab report DIR` re-renders the pages of a results folder from its JSON.

Examples:
  hipsec lab
  hipsec lab list
  hipsec lab run ipsec-netperf --full --link 100mbit --out results/
  hipsec lab report lab-results/1795600000";

#[derive(Debug, Args)]
pub(crate) struct LabArgs {
    #[command(subcommand)]
    command: Option<LabCommand>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum LabCommand {
    /// List the scenarios, their seed study, and whether they run yet.
    List,
    /// Measure this machine's costs (ESP suites, carriers, filter, IKEv2, HIP, binding
    /// updates, memory per SA) and write the profile `hipsec size --profile` reads.
    Calibrate(hipsec::calibrate::CalibrateArgs),
    /// Check a profile against real runs: tunnels with other suites and carriers, and IKEv2
    /// handshakes, each repeated; predicted CPU beside measured, the median error of each
    /// kind (within 10 % is the target) and how many runs fell inside the predicted interval.
    Validate(hipsec::validate::ValidateArgs),
    /// Compare two profiles of this machine (say, two calibrations an hour apart): each cost's
    /// medians and ranges, and whether they agree within what their rounds moved.
    Compare(hipsec::compare::CompareArgs),
    /// Run one scenario.
    Run {
        /// Scenario name (see `hipsec lab list`).
        scenario: String,
        #[command(flatten)]
        opts: lab::RunOptions,
    },
    /// Re-render a results folder's pages from its report.json files (runs nothing).
    #[command(long_about = LAB_REPORT_HELP)]
    Report {
        /// A scenario's results folder, or a folder of them (searched 3 levels deep).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

const LAB_REPORT_HELP: &str = "\
Re-render the report of a results folder from its JSON, without running anything: for every
report.json at or below DIR (up to 3 levels: DIR, DIR/SCENARIO, DIR/DATE/SCENARIO) it rewrites
report.md, the SVG charts and report.html (the scenario's page: HTML tables, our figures beside the
seed's with the ratio ours ÷ seed read in words, charts with log axes where values span decades),
and writes DIR/index.html linking every scenario found. report.json itself is never changed.

Use it after changing the report code, or to get pages for results written by an older hipsec.
Open DIR/index.html in a browser. A report.json that does not parse is an error naming the file
and the field.

Examples:
  hipsec lab report lab-results/1795600000
  hipsec lab report docs/results/2026-11-25/hip-bex-full-b4962dc
  hipsec lab report docs/results        # one index over every kept run";

/// The lab's protected modes run on hipsec nodes started from this very binary (`hipsec run`).
fn node_hook() -> Result<lab::NodeHook, String> {
    let exe = std::env::current_exe().map_err(|e| format!("locating the hipsec binary: {e}"))?;
    Ok(lab::NodeHook::new(exe))
}

pub(crate) fn run_lab(a: LabArgs) -> Result<(), String> {
    match a.command {
        Some(LabCommand::List) => {
            for s in lab::list() {
                let state = if s.available { "" } else { "  [not yet]" };
                println!("{:16} seed {}  {}{state}", s.name, s.seed, s.summary);
            }
            Ok(())
        }
        Some(LabCommand::Calibrate(c)) => hipsec::calibrate::run(&c),
        Some(LabCommand::Validate(v)) => hipsec::validate::run(&v),
        Some(LabCommand::Compare(c)) => hipsec::compare::run(&c),
        Some(LabCommand::Run { scenario, opts }) => {
            lab::run_with(&scenario, &opts, &node_hook()?).map(|_| ()).map_err(|e| e.to_string())
        }
        Some(LabCommand::Report { dir }) => {
            let done = lab::pages::render_dir(&dir).map_err(|e| e.to_string())?;
            for s in &done.scenarios {
                println!("rendered {}", s.join(lab::report::html::PAGE_FILE).display());
            }
            println!("index: {}", done.index.display());
            Ok(())
        }
        None => {
            let available: Vec<_> = lab::list().into_iter().filter(|s| s.available).collect();
            eprintln!(
                "hipsec lab: running {} available scenario(s) on their defaults: {}",
                available.len(),
                available.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            );
            let hook = node_hook()?;
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let root = PathBuf::from(format!("lab-results/{stamp}"));
            for s in available {
                let opts = lab::RunOptions { out: Some(root.join(s.name)), ..Default::default() };
                lab::run_with(s.name, &opts, &hook).map_err(|e| e.to_string())?;
            }
            let done = lab::pages::render_dir(&root).map_err(|e| e.to_string())?;
            println!("The report: {} (open it in a browser)", done.index.display());
            Ok(())
        }
    }
}
