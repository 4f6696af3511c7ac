//! The `hipsec` command line: the node (`run`, `status`), its control socket (`sa`, `policy`,
//! `monitor`, IKE and HIP commands), the lab, the offline `pcap` tools and the benchmarks. Each
//! subcommand's `--help` explains what it does, with an example. The subcommands' arguments
//! and help texts are in `cli/`, a module per group; the logic lives in the library (lib.rs).

mod cli;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use cli::bench::BenchCommand;
use cli::control::{MONITOR_HELP, PolicyCommand, SaCommand};
use cli::keygen::{KEYGEN_HELP, KeygenArgs};
use cli::lab::{LAB_HELP, LabArgs};
use cli::pcap::PcapCommand;
use hipsec::ctl;
use std::path::PathBuf;
use std::process::ExitCode;

/// hipsec: a userspace IPsec stack (ESP and AH, RFC 4301/4303/4302).
#[derive(Debug, Parser)]
#[command(name = "hipsec", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a node: kernel traffic through a TUN device, protected by ESP/AH on the wire.
    #[command(long_about = RUN_HELP)]
    Run(RunArgs),
    /// Ask a running node for its SAs, counters and drop reasons (JSON).
    #[command(long_about = STATUS_HELP)]
    Status(StatusArgs),
    /// The lab: rebuild the seed studies' experiments and print our figures beside theirs.
    #[command(long_about = LAB_HELP)]
    Lab(LabArgs),
    /// The lab's traffic engine (server/client inside namespaces); started by `hipsec lab`.
    #[command(hide = true)]
    Traffic(lab::traffic::cli::TrafficCli),
    /// Make a running node re-read its packet-filter rules (a bad file keeps the old rules).
    #[command(name = "reload-filter")]
    ReloadFilter(SocketArgs),
    /// Add, replace, remove, list and rekey a running node's SAs (like `ip xfrm state`).
    #[command(subcommand)]
    Sa(SaCommand),
    /// Add, replace, remove and list a running node's policies (like `ip xfrm policy`).
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Stream a running node's events as JSON lines: acquires, SA lifetimes, NAT rebindings.
    #[command(long_about = MONITOR_HELP)]
    Monitor(SocketArgs),
    /// Show or remove the kernel guard that keeps protected traffic off other routes.
    #[command(subcommand, long_about = cli::guard::GUARD_HELP)]
    Guard(cli::guard::GuardCommand),
    /// Offline tools on capture files: protect, unprotect, export keys for Wireshark.
    #[command(subcommand)]
    Pcap(PcapCommand),
    /// Benchmarks measured beside a reference in the same run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Start an IKE connection of a running node now (swanctl --initiate).
    Initiate(hipsec::ike_cli::ConnArgs),
    /// Delete an IKE connection's IKE and CHILD SAs, or with --child one CHILD SA
    /// (swanctl --terminate).
    Terminate(hipsec::ike_cli::TerminateArgs),
    /// Rekey an IKE connection's CHILD SA (--child names it), or with --ike its IKE SA, now
    /// (swanctl --rekey).
    Rekey(hipsec::ike_cli::RekeyArgs),
    /// IKE debugging: keys for Wireshark (only from a node started to export them).
    #[command(subcommand)]
    Ike(hipsec::ike_cli::IkeCommand),
    /// HIP debugging: ESP keys for Wireshark (only from a node started to export them).
    #[command(subcommand)]
    Hip(hipsec::hip_cli::HipCommand),
    /// Make a key: with --hip, a HIP host identity file, and print its HIT.
    #[command(long_about = KEYGEN_HELP)]
    Keygen(KeygenArgs),
    /// How many cores a workload needs on a calibrated machine, and what bounds it.
    #[command(long_about = hipsec::size_cli::HELP)]
    Size(hipsec::size_cli::SizeArgs),
}
const RUN_HELP: &str = "\
Run a hipsec node: a TUN device whose traffic (any application, the kernel's own TCP) leaves
protected by ESP or AH — in UDP (RFC 3948, port 4500) or as raw IP protocol 50/51 — and whose
inbound ESP/AH is verified, decrypted and handed back to the kernel. The SPD decides per packet:
protect, bypass or discard; a packet with no SA is dropped and counted, never sent in clear.
The node refuses to start on any configuration error (file:line:col and the field are named).
SIGINT/SIGTERM stop it and remove the TUN device. Needs root (or CAP_NET_ADMIN).

Config: docs/node-example.toml (a commented example); SAs use the SA-file fields (docs/sa-file.md).

Example:
  hipsec run -c node.toml
  hipsec status /run/hipsec-node.sock";

const STATUS_HELP: &str = "\
Print a running node's status: every SA (spi, protocol, suite, mode, bytes, packets, age,
replay window or next sequence number), the drop counters that are not zero, the node's
counters and each worker's load. --json prints the whole document (every drop reason by name,
zeros too) for scripts. SOCKET is the control socket named in the node's config.

Example:
  hipsec status /run/hipsec-node.sock
  hipsec status --json /run/hipsec-node.sock | jq '.drops'";

#[derive(Debug, Args)]
struct RunArgs {
    /// Node configuration file (TOML).
    #[arg(short, long, value_name = "FILE")]
    config: PathBuf,
    /// Debugging: keep every IKE SA's keys so that `hipsec ike wireshark-keys` can hand them
    /// to tshark. Without it no key ever leaves the node.
    #[arg(long)]
    debug_export_ike_keys: bool,
    /// Debugging: keep the ESP keys of every HIP association so that `hipsec hip
    /// wireshark-keys` can hand them to tshark. Without it no key ever leaves the node.
    #[arg(long)]
    debug_export_hip_keys: bool,
    /// Start the manually keyed SAs that the `[state] file` has no checkpoint for at sequence
    /// number 1. Only for keys that are new: under a key the peer already saw, its replay
    /// window drops the packets until the numbers pass where they were.
    #[arg(long)]
    reset_sequence: bool,
    /// Which events to log, as a `RUST_LOG`-style filter; overrides `RUST_LOG` and the
    /// config's `[log]`. One peer's story alone: `--log 'warn,[ike{conn=gw}]=debug'`
    /// (docs/monitoring.md, "Logs").
    #[arg(long, value_name = "FILTER")]
    log: Option<String>,
}

#[derive(Debug, Args)]
struct SocketArgs {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    socket: PathBuf,
}

#[derive(Debug, Args)]
struct StatusArgs {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    socket: PathBuf,
    /// Print the status document as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Pcap(c) => cli::pcap::run(c),
        Command::Guard(c) => cli::guard::run(c),
        Command::Lab(a) => cli::lab::run_lab(a),
        Command::Traffic(t) => match lab::traffic::cli::main_with(t) {
            0 => Ok(()),
            code => std::process::exit(code),
        },
        Command::Run(a) => {
            let o = node::run::RunOptions {
                export_ike_keys: a.debug_export_ike_keys,
                export_hip_keys: a.debug_export_hip_keys,
                reset_sequence: a.reset_sequence,
                log: a.log,
            };
            node::run::run_with(&a.config, o).map_err(|e| e.to_string())
        }
        Command::Initiate(a) => hipsec::ike_cli::initiate(&a),
        Command::Terminate(a) => hipsec::ike_cli::terminate(&a),
        Command::Rekey(a) => hipsec::ike_cli::rekey(&a),
        Command::Ike(c) => hipsec::ike_cli::run(&c),
        Command::Keygen(a) => cli::keygen::keygen(&a),
        Command::Size(a) => hipsec::size_cli::run(&a),
        Command::Hip(c) => hipsec::hip_cli::run(&c),
        Command::Sa(c) => cli::control::run_sa(c),
        Command::Policy(c) => cli::control::run_policy(c),
        Command::Monitor(a) => ctl::monitor(&a.socket),
        Command::ReloadFilter(a) => node::command(&a.socket, "reload-filter")
            .map(|s| println!("{s}"))
            .map_err(|e| e.to_string()),
        Command::Status(a) => {
            let s = node::status(&a.socket).map_err(|e| e.to_string())?;
            if a.json {
                println!("{s}");
                Ok(())
            } else {
                let doc: serde_json::Value = serde_json::from_str(&s)
                    .map_err(|e| format!("the node's answer is not JSON: {e}"))?;
                print!("{}", hipsec::status::render(&doc));
                Ok(())
            }
        }
        Command::Bench(c) => cli::bench::run(c),
    }
}

fn main() -> ExitCode {
    // Every subcommand's help ends with an example and its doc page (`cli::help`).
    let matches = cli::help::annotate(Cli::command()).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    // HIPSEC_CHECK_ARGS set: the command line parsed, nothing more. The docs' test checks with
    // it the commands it does not run (minutes-long lab runs, calibrations, benchmarks).
    if std::env::var_os("HIPSEC_CHECK_ARGS").is_some() {
        eprintln!("hipsec: the arguments parse (HIPSEC_CHECK_ARGS is set: nothing run)");
        return ExitCode::SUCCESS;
    }
    // A node (`run`) and the benchmarks (engines in this process) keep their tables on
    // transparent huge pages, as `hipsec-node` does (`node::huge_pages`; HIPSEC_HUGE_PAGES=off
    // turns it off). This may execute the program again, before any of the work starts.
    if matches!(cli.command, Command::Run(_) | Command::Bench(_)) {
        node::huge_pages::reexec_with_huge_pages();
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hipsec: error: {e}");
            ExitCode::FAILURE
        }
    }
}
