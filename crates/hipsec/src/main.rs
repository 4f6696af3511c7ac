//! The `hipsec` command line: `pcap seal|open|wireshark-keys` and `bench esp`. Each subcommand's
//! `--help` explains what it does, with an example. The logic lives in the library (lib.rs).

use clap::{Args, Parser, Subcommand};
use hipsec::pcap::{self, Direction, Job};
use hipsec::{bench_esp, bench_filter, bench_tunnel, ctl};
use std::io::Write;
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
    /// Offline tools on capture files: protect, unprotect, export keys for Wireshark.
    #[command(subcommand)]
    Pcap(PcapCommand),
    /// Benchmarks measured beside a reference in the same run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Start an IKE connection of a running node now (swanctl --initiate).
    Initiate(hipsec::ike_cli::ConnArgs),
    /// Delete an IKE connection's IKE and CHILD SAs (swanctl --terminate).
    Terminate(hipsec::ike_cli::ConnArgs),
    /// Rekey an IKE connection's CHILD SA, or with --ike its IKE SA, now (swanctl --rekey).
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

const KEYGEN_HELP: &str = "\
Make a key. With --hip: a HIP host identity (RFC 7401 §3), an ECDSA key written as PKCS#8 PEM
with mode 0600, and print its Host Identity Tag (an ORCHIDv2 IPv6 address in 2001:20::/28,
RFC 7343) — the address other hosts use to reach this one, whatever its locators. An existing
file is kept unless --force (a new key is a new HIT).

Example:
  hipsec keygen --hip -o /etc/hipsec/host.pem
  hipsec keygen --hip --curve p384 -o host384.pem --json";

#[derive(Debug, Args)]
struct KeygenArgs {
    /// A HIP host identity (the only kind of key this command makes today).
    #[arg(long, required = true)]
    hip: bool,
    /// Where to write it.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// ECDSA curve: p256 (HIT suite ECDSA/SHA-384, the default) or p384.
    #[arg(long, default_value = "p256", value_parser = ["p256", "p384"])]
    curve: String,
    /// Replace an existing file (and so change this host's HIT).
    #[arg(long)]
    force: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn keygen(a: &KeygenArgs) -> Result<(), String> {
    let curve = if a.curve == "p384" { crypto::EcCurve::P384 } else { crypto::EcCurve::P256 };
    let host = node::config::host_identity::create(&a.output, curve, a.force)?;
    if a.json {
        let v = serde_json::json!({
            "hit": host.hit().to_string(),
            "file": a.output.display().to_string(),
            "curve": a.curve,
            "hit_suite": "ECDSA/SHA-384",
        });
        println!("{v}");
    } else {
        println!("{}", host.hit());
    }
    Ok(())
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
  hipsec status /run/hipsec.sock";

const STATUS_HELP: &str = "\
Print a running node's status: every SA (spi, protocol, suite, mode, bytes, packets, age,
replay window or next sequence number), the drop counters that are not zero, the node's
counters and each worker's load. --json prints the whole document (every drop reason by name,
zeros too) for scripts. SOCKET is the control socket named in the node's config.

Example:
  hipsec status /run/hipsec.sock
  hipsec status --json /run/hipsec.sock | jq '.drops'";

const LAB_HELP: &str = "\
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

const MONITOR_HELP: &str = "\
Stream a running node's events as JSON lines until Ctrl-C (as `ip xfrm monitor` does for the
kernel): \"acquire\" (a packet matched a protect policy whose SA is missing; it was dropped, never
sent in clear; at most one a second per policy), \"sa-soft-expired\" / \"sa-hard-expired\"
(RFC 4301 lifetimes), \"nat-rebind\" (an authenticated packet moved a peer's UDP endpoint) and
\"punted\" (a control packet such as IKE taken off the data path). Keys never appear.

Example:
  hipsec monitor /run/hipsec.sock | jq -c 'select(.event == \"acquire\")'";

const SA_HELP: &str = "\
Changes take effect at once, without a restart and without pausing traffic: each lane applies
them between two batches and the command returns when every lane has. Fields are those of the
SA file (docs/sa-file.md) plus `direction` (in or out), `peer` (ADDR:PORT the peer's ESP in UDP
uses; default: [network] peer, else the SA's dst/src on the node's port) and `lane`. Give them in
a TOML file of [[sa]] tables (--file; keep it mode 600) or as FIELD=VALUE words (dotted for
nested fields). A bad field changes nothing and is named in the error.";

#[derive(Debug, Subcommand)]
enum SaCommand {
    /// Install SAs (refused if one with the same key exists).
    #[command(long_about = SA_ADD_HELP)]
    Add(SaInput),
    /// Replace SAs of the same key (fresh sequence numbers and replay window).
    #[command(long_about = SA_HELP)]
    Update(SaInput),
    /// Remove SAs; policies naming a removed outbound SA drop their packets and raise acquires.
    Del(SaDelArgs),
    /// List the node's SAs (never keys).
    List(ListArgs),
    /// Make-before-break rekey of a manually keyed pair of nodes (both control sockets here).
    #[command(long_about = REKEY_HELP)]
    Rekey(RekeyArgs),
}

const SA_ADD_HELP: &str = "\
Install SAs in a running node.

Changes take effect at once, without a restart and without pausing traffic: each lane applies
them between two batches and the command returns when every lane has, so an inbound SA can
receive as soon as it returns. Fields are those of the SA file (docs/sa-file.md) plus
`direction` (in or out), `peer` (ADDR:PORT the peer's ESP in UDP uses; default: [network] peer,
else the SA's dst/src on the node's port) and `lane`. Give them in a TOML file of [[sa]] tables
(--file; keep it mode 600: it holds keys) or as FIELD=VALUE words (dotted for nested fields).
A bad field changes nothing and is named in the error.

Examples:
  hipsec sa add /run/hipsec.sock --file spoke7.toml
  hipsec sa add /run/hipsec.sock direction=in src=192.0.2.7 dst=192.0.2.1 spi=0x2007 \\
      mode=tunnel aead=aes128gcm key=0x000102030405060708090a0b0c0d0e0f10111213 peer=192.0.2.7:4500";

const REKEY_HELP: &str = "\
Rekey a manually keyed pair of nodes A and B, make-before-break: fresh random SPIs and keys of
the same suite for A->B and B->A; both new inbound SAs go live first, then each node switches its
outbound SA (and every policy naming it) in one step, then the old inbound SAs are removed after
--grace-ms. No packet finds itself without an SA. Only ESP pairs.

Example:
  hipsec sa rekey /run/a.sock /run/b.sock --grace-ms 500";

#[derive(Debug, Args)]
struct SaInput {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    socket: PathBuf,
    /// TOML file of [[sa]] tables.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// FIELD=VALUE words of one more entry (SA or policy).
    #[arg(value_name = "FIELD=VALUE")]
    fields: Vec<String>,
}

#[derive(Debug, Args)]
struct SaDelArgs {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    socket: PathBuf,
    /// in or out.
    #[arg(long, value_parser = ["in", "out"])]
    direction: String,
    /// SPI (hex 0x... or decimal).
    #[arg(long, value_parser = parse_spi)]
    spi: u32,
    /// esp or ah.
    #[arg(long, default_value = "esp", value_parser = ["esp", "ah"])]
    proto: String,
    /// Destination (outbound SAs whose SPI two peers chose alike).
    #[arg(long)]
    dst: Option<std::net::IpAddr>,
}

#[derive(Debug, Args)]
struct ListArgs {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    socket: PathBuf,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct RekeyArgs {
    /// Node A's control socket.
    #[arg(value_name = "SOCKET_A")]
    a: PathBuf,
    /// Node B's control socket.
    #[arg(value_name = "SOCKET_B")]
    b: PathBuf,
    /// The A->B SPI to replace, when A has several SAs to B.
    #[arg(long, value_parser = parse_spi)]
    spi: Option<u32>,
    /// How long the old inbound SAs keep receiving after the switch (packets in flight).
    #[arg(long, default_value_t = 1000)]
    grace_ms: u64,
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Install policies (SPD entries); protect may name SAs not installed yet (acquire).
    #[command(long_about = POLICY_ADD_HELP)]
    Add(SaInput),
    /// Replace policies by id (at the same priority a policy keeps its place: one step).
    Update(SaInput),
    /// Remove policies by id.
    Del(PolicyDelArgs),
    /// List the node's policies: id, priority, selectors, action, SAs.
    List(ListArgs),
}

const POLICY_ADD_HELP: &str = "\
Install SPD entries (RFC 4301 §4.4.1) in a running node. Fields are the node config's [[policy]]
fields (src, dst, proto, src-ports, dst-ports, action = protect|bypass|discard, in-sas) plus `id`
(default: the next free one) and `priority` (lower matches first; default 1000, the config's
own). `sas` names outbound SAs by SPI, or SPI@DST ({spi, dst} in a file) for one not installed
yet: its packets are dropped, never sent in clear, and raise an acquire (hipsec monitor) until
it is.

Examples:
  hipsec policy add /run/hipsec.sock --file policies.toml
  hipsec policy add /run/hipsec.sock src=10.0.0.0/24 dst=10.7.0.0/24 action=protect sas=0x1007";

#[derive(Debug, Args)]
struct PolicyDelArgs {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    socket: PathBuf,
    /// Policy ids (see `hipsec policy list`).
    #[arg(value_name = "ID", required = true)]
    ids: Vec<u64>,
}

fn print_json(v: &serde_json::Value) {
    println!("{v}");
}

/// Sends the entries of `a` (its `--file`'s `[[table]]` tables and its FIELD=VALUE words) as
/// request `op`, under `field`, and prints the answer.
fn send_entries(a: &SaInput, op: &str, field: &str, table: &str) -> Result<(), String> {
    let entries = ctl::entries(a.file.as_deref(), &a.fields, table)?;
    print_json(&ctl::request(&a.socket, &serde_json::json!({"op": op, field: entries}))?);
    Ok(())
}

/// Prints the answer to a list request as JSON or as a table of `what`.
fn show_list(a: &ListArgs, op: &str, what: &str) -> Result<(), String> {
    let v = ctl::request(&a.socket, &serde_json::json!({ "op": op }))?;
    if a.json {
        print_json(&v)
    } else {
        print!("{}", ctl::render_list(&v, what))
    }
    Ok(())
}

fn run_sa(c: SaCommand) -> Result<(), String> {
    use serde_json::json;
    match c {
        SaCommand::Add(a) => send_entries(&a, "sa-add", "sas", "sa"),
        SaCommand::Update(a) => send_entries(&a, "sa-update", "sas", "sa"),
        SaCommand::Del(a) => {
            let mut r = json!({"direction": a.direction, "spi": a.spi, "proto": a.proto});
            if let Some(d) = a.dst {
                r["dst"] = json!(d.to_string());
            }
            print_json(&ctl::request(&a.socket, &json!({"op": "sa-del", "sas": [r]}))?);
            Ok(())
        }
        SaCommand::List(a) => show_list(&a, "sa-list", "sas"),
        SaCommand::Rekey(a) => {
            print_json(&ctl::rekey_pair(&a.a, &a.b, a.spi, a.grace_ms)?);
            Ok(())
        }
    }
}

fn run_policy(c: PolicyCommand) -> Result<(), String> {
    match c {
        PolicyCommand::Add(a) => send_entries(&a, "policy-add", "policies", "policy"),
        PolicyCommand::Update(a) => send_entries(&a, "policy-update", "policies", "policy"),
        PolicyCommand::Del(a) => {
            let req = serde_json::json!({"op": "policy-del", "ids": a.ids});
            print_json(&ctl::request(&a.socket, &req)?);
            Ok(())
        }
        PolicyCommand::List(a) => show_list(&a, "policy-list", "policies"),
    }
}

#[derive(Debug, Args)]
struct LabArgs {
    #[command(subcommand)]
    command: Option<LabCommand>,
}

#[derive(Debug, Subcommand)]
enum LabCommand {
    /// List the scenarios, their seed study, and whether they run yet.
    List,
    /// Measure this machine's costs (ESP suites, carriers, filter, IKEv2, HIP, binding
    /// updates, memory per SA) and write the profile `hipsec size --profile` reads.
    Calibrate(hipsec::calibrate::CalibrateArgs),
    /// Check a profile against real runs: tunnels with other suites and carriers, and IKEv2
    /// handshakes; predicted CPU beside measured (within 20 % is the target).
    Validate(hipsec::validate::ValidateArgs),
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

fn run_lab(a: LabArgs) -> Result<(), String> {
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

#[derive(Debug, Subcommand)]
enum PcapCommand {
    /// Protect every packet of a capture with ESP/AH, as an outbound host would.
    #[command(long_about = SEAL_HELP)]
    Seal(SealArgs),
    /// Verify and remove ESP/AH from every packet of a capture, as an inbound host would.
    #[command(long_about = OPEN_HELP)]
    Open(OpenArgs),
    /// Print the SA file as Wireshark's esp_sa table, so Wireshark/tshark can decrypt.
    #[command(name = "wireshark-keys", long_about = KEYS_HELP)]
    WiresharkKeys(KeysArgs),
}

const SEAL_HELP: &str = "\
Protect every packet of a capture with ESP/AH, as an outbound host would (RFC 4303 §3.3).

Reads IN (pcap or pcapng; raw IP, Ethernet with VLAN tags, Linux cooked SLL/SLL2 or loopback),
installs every SA of the SA file (see docs/sa-file.md) as an outbound SA, protects each IP
packet and writes OUT as a raw-IP pcap (LINKTYPE_RAW) with the same timestamps. The packet's
capture time is the engine's clock, so time-based lifetimes work as they would have live.

Which SA protects a packet:
  default      the first SA of the file that is in tunnel mode, or in transport mode with
               src/dst equal to the packet's source/destination; no such SA: dropped, no_sa
  --spi X      always the SA with SPI X; repeat --spi to apply several in order (a bundle)
  --bundle     every SA of the file, in file order (e.g. ESP then AH, transport mode)

Every dropped packet gets a line on stderr (\"packet 17: dropped: malformed (...)\") and is
counted by reason in the summary on stdout; --json prints the summary as JSON. Exit status is
0 when the capture was processed (even with drops), 1 on a bad SA file, unreadable capture or
write error, 2 on bad usage.

Example:
  hipsec pcap seal --sa sa.toml plain.pcap sealed.pcap
  hipsec pcap seal --sa sa.toml --spi 0x1000 --json plain.pcapng sealed.pcap";

const OPEN_HELP: &str = "\
Verify and remove ESP/AH from every packet of a capture, as an inbound host would (RFC 4303 §3.4).

Installs every SA of the SA file as an inbound SA (found by SPI and protocol, as in the kernel's
SAD), checks the replay window and the ICV, decrypts, and writes the inner packets (tunnel mode)
or the restored packets (transport mode) to OUT as a raw-IP pcap. Packets without ESP/AH, with an
unknown SPI, replayed, forged or malformed are dropped: one line each on stderr
(\"packet 17: dropped: replayed (spi 0x00001000 seq 5)\") and a count by reason in the summary.

Example:
  hipsec pcap open --sa sa.toml sealed.pcap plain-again.pcap
  hipsec pcap open --sa sa.toml --json capture.pcapng out.pcap | jq .drops";

const KEYS_HELP: &str = "\
Print the SA file as lines of Wireshark's esp_sa table (Wireshark 4.0: 8 columns), so that
Wireshark and tshark decrypt ESP written by hipsec (or by any peer using these keys). AH SAs
and algorithms Wireshark 4.0 lacks (ChaCha20-Poly1305) are listed as comments.

Example:
  hipsec pcap wireshark-keys --sa sa.toml > ~/.config/wireshark/esp_sa
  tshark -o esp.enable_encryption_decode:TRUE -r sealed.pcap
or without touching the profile, one SA at a time:
  tshark -o esp.enable_encryption_decode:TRUE -o \"uat:esp_sa:$(hipsec pcap wireshark-keys --sa sa.toml | grep -v '^#' | head -1)\" -r sealed.pcap";

/// What `pcap seal` and `pcap open` share: the SA file, the JSON switch and the two captures.
#[derive(Debug, Args)]
struct CaptureArgs {
    /// SA file (TOML, see docs/sa-file.md).
    #[arg(long, value_name = "SAFILE")]
    sa: PathBuf,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Input capture (pcap or pcapng).
    #[arg(value_name = "IN")]
    input: PathBuf,
    /// Output capture (pcap, raw IP).
    #[arg(value_name = "OUT")]
    output: PathBuf,
}

#[derive(Debug, Args)]
struct SealArgs {
    #[command(flatten)]
    capture: CaptureArgs,
    /// Apply the SA with this SPI (hex 0x... or decimal); repeat to apply several in order.
    #[arg(long, value_name = "SPI", value_parser = parse_spi)]
    spi: Vec<u32>,
    /// Apply every SA of the file to every packet, in file order.
    #[arg(long, conflicts_with = "spi")]
    bundle: bool,
}

#[derive(Debug, Args)]
struct OpenArgs {
    #[command(flatten)]
    capture: CaptureArgs,
}

#[derive(Debug, Args)]
struct KeysArgs {
    /// SA file (TOML, see docs/sa-file.md).
    #[arg(long, value_name = "SAFILE")]
    sa: PathBuf,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Single-core ESP seal/open throughput beside the raw cipher, as a ratio.
    #[command(long_about = "\
Single-core ESP seal/open throughput beside the raw AEAD/cipher on the same bytes, measured in
the same run and printed as a ratio (DESIGN rule 6).

Example:
  hipsec bench esp --suite aes128gcm --size 1420")]
    Esp(bench_esp::BenchEspArgs),
    #[command(long_about = "\
Packet-filter cost per packet for 10 to 100000 rules (none matching the traffic): the compiled
classifier without and with its flow cache, beside the linear reference evaluator (the kind of
filter seed 002 measured losing 38% of throughput at 5000 rules), all in one run. The target is
a classifier whose 100000-rule figure is at most 1.5x its 10-rule figure.

Example:
  hipsec bench filter --rules 10,100,1000,5000,100000 --seconds 2")]
    Filter(bench_filter::BenchFilterArgs),
    /// Kernel TCP through a hipsec tunnel between two namespaces beside the plain veth.
    #[command(long_about = "\
Kernel TCP (iperf3) through a hipsec ESP-in-UDP tunnel between two network namespaces, and over
the plain veth between them in the same run: throughput, mean ping RTT, CPU seconds of each
hipsec node process and the service demand (hipsec CPU us per KB transferred), with the ratios
tunnel/plain. Three rounds by default (plain then tunnel each, about 75 s in all); the figures
shown are those of the round with the median tunnel throughput, and every round is listed.
Needs root and iperf3; removes the namespaces it made on exit and on Ctrl-C.

Examples:
  hipsec bench tunnel
  hipsec bench tunnel --suite chacha20poly1305 --rounds 5 --json
  hipsec bench tunnel --queues 2 --parallel 2      # two lanes, two TCP streams")]
    Tunnel(bench_tunnel::BenchTunnelArgs),
    /// Make-before-break rekeying under TCP and UDP load, beside the same traffic without.
    #[command(long_about = "\
Two hipsec nodes in network namespaces; kernel TCP (iperf3) through the tunnel while the SA pair
is replaced every --interval-ms through the control socket (fresh SPIs and keys; new inbound
SAs live first, outbound switched, old inbound retired after --grace-ms), beside the same
transfer without rekeys in the same run (--rounds pairs, the order alternating); then a fixed-rate UDP stream whose sequence numbers
show whether a single datagram was lost, with and without rekeys. Reports rekeys done and how
long each took, drops for lack of an SA or policy, replay and integrity drops (both nodes, per
phase), TCP retransmissions and the throughput ratio. Exits non-zero if anything was lost.
Needs root and iperf3; about 2.5 minutes with the defaults.

Example:
  hipsec bench rekey
  hipsec bench rekey --seconds 10 --interval-ms 50 --json")]
    Rekey(hipsec::bench_rekey::BenchRekeyArgs),
    /// Per-packet cost, install rate and memory with 1 to 10,000 SAs to distinct peers.
    #[command(long_about = "\
How the node scales with SAs: seal (SPD lookup + ESP) and open (SAD lookup, replay check, ESP,
inbound SPD) per packet with N SAs to N/2 peers, one host policy per peer, every peer once per
round in a scattered order (--order), beside one SA pair in the same run (ratios: medians of
rounds that alternate with the one pair's, so both meet the same moments of a busy machine);
beside them the AEAD alone with one key per peer in the same order (raw) and what the stack adds to it (stack);
SAs per second through the in-process control interface (keyed, sent to a lane, filed,
acknowledged) and resident memory per SA. In-process, no root needed. With thousands of SAs the
per-SA state no longer fits the CPU's caches; --burst shows how much of that a flow's packets in
a row win back.

Examples:
  hipsec bench sas
  hipsec bench sas --burst 4 --order sequential
  hipsec bench sas --sas 1,1000,100000 --size 1420 --json")]
    Sas(hipsec::bench_sas::BenchSasArgs),
    /// Complete IKEv2 setups per second against a responder node, beside the crypto alone.
    #[command(long_about = "\
A responder node (hipsec run, PSK, remote_addrs = %any) in one network namespace and a built-in
load generator in another: --concurrency sans-IO initiators each run IKE_SA_INIT and IKE_AUTH
(the CHILD SA is installed in the node's data path before its answer leaves), then DELETE their
IKE SA (unless --no-delete) and start again. Reported: complete setups per second (median of
--rounds rounds of --seconds), the CPU of the responder (by thread) and of the generator, and
beside them, measured in the same run on one core, the rate the same setups' DH, PRF and AUTH
operations allow alone (both ends' work per setup); the ratio is measured / (that rate x cores).
Needs root; removes its namespaces on exit and on Ctrl-C.

Example:
  hipsec bench ike
  hipsec bench ike --seconds 10 --concurrency 32 --group ecp256 --json
  hipsec bench ike --rate 2000        # a fixed handshake rate below saturation")]
    Ike(hipsec::bench_ike::BenchIkeArgs),
    /// The HIP base exchange in process: phase costs per puzzle K and the I1 flood rate.
    #[command(long_about = "\
The HIP base exchange (RFC 7401) between two in-process hosts, no network: the Responder's
I1 -> R1 (T1 of seed 001), the Initiator's R1 -> I2 (T2: signature check, puzzle, Diffie-Hellman,
signing), the Responder's I2 -> R2 (T3) and the Initiator's R2 (T4), medians per puzzle K; then
the Responder answering I1s from distinct spoofed HITs as fast as one core can, beside the floor
measured in the same run (the HMAC that binds #I and the checksum alone), with the resident
memory before and after (a stateless Responder keeps nothing per I1).

Example:
  hipsec bench hip
  hipsec bench hip --k 0,10,20 --rounds 20 --curve p384 --json")]
    Hip(hipsec::bench_hip::BenchHipArgs),
}

fn parse_spi(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|_| format!("{s:?} is not a 32-bit SPI (hex 0x... or decimal)"))
}

fn run_pcap(dir: Direction, job: Job, json: bool) -> Result<(), String> {
    let mut stderr = std::io::stderr().lock();
    let report = pcap::run(dir, &job, &mut stderr).map_err(|e| e.to_string())?;
    drop(stderr);
    let mut out = std::io::stdout().lock();
    let r = if json { writeln!(out, "{}", report.to_json()) } else { report.write_text(&mut out) };
    r.map_err(|e| format!("stdout: {e}"))
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Pcap(PcapCommand::Seal(a)) => {
            let job = Job {
                sa_file: a.capture.sa,
                input: a.capture.input,
                output: a.capture.output,
                spis: a.spi,
                bundle: a.bundle,
            };
            run_pcap(Direction::Seal, job, a.capture.json)
        }
        Command::Pcap(PcapCommand::Open(a)) => {
            let job = Job {
                sa_file: a.capture.sa,
                input: a.capture.input,
                output: a.capture.output,
                spis: Vec::new(),
                bundle: false,
            };
            run_pcap(Direction::Open, job, a.capture.json)
        }
        Command::Pcap(PcapCommand::WiresharkKeys(a)) => {
            let entries = pcap::load_sas(&a.sa).map_err(|e| e.to_string())?;
            for e in &entries {
                for n in &e.notes {
                    eprintln!("{}:{}: spi {}: {n}", a.sa.display(), e.line, e.params.spi);
                }
            }
            let text = hipsec::wireshark::esp_sa_file(&entries);
            std::io::stdout().lock().write_all(text.as_bytes()).map_err(|e| format!("stdout: {e}"))
        }
        Command::Lab(a) => run_lab(a),
        Command::Traffic(t) => match lab::traffic::cli::main_with(t) {
            0 => Ok(()),
            code => std::process::exit(code),
        },
        Command::Run(a) => {
            node::run::run_exporting(&a.config, a.debug_export_ike_keys, a.debug_export_hip_keys)
                .map_err(|e| e.to_string())
        }
        Command::Initiate(a) => hipsec::ike_cli::initiate(&a),
        Command::Terminate(a) => hipsec::ike_cli::terminate(&a),
        Command::Rekey(a) => hipsec::ike_cli::rekey(&a),
        Command::Ike(c) => hipsec::ike_cli::run(&c),
        Command::Keygen(a) => keygen(&a),
        Command::Size(a) => hipsec::size_cli::run(&a),
        Command::Hip(c) => hipsec::hip_cli::run(&c),
        Command::Sa(c) => run_sa(c),
        Command::Policy(c) => run_policy(c),
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
        Command::Bench(BenchCommand::Esp(a)) => bench_esp::run(&a),
        Command::Bench(BenchCommand::Filter(a)) => bench_filter::run(&a),
        Command::Bench(BenchCommand::Tunnel(a)) => bench_tunnel::run(&a),
        Command::Bench(BenchCommand::Rekey(a)) => hipsec::bench_rekey::run(&a),
        Command::Bench(BenchCommand::Sas(a)) => hipsec::bench_sas::run(&a),
        Command::Bench(BenchCommand::Ike(a)) => hipsec::bench_ike::run(&a),
        Command::Bench(BenchCommand::Hip(a)) => hipsec::bench_hip::run(&a),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hipsec: error: {e}");
            ExitCode::FAILURE
        }
    }
}
