//! `hipsec sa`, `hipsec policy` and `hipsec monitor`: a running node's SAs, policies and
//! events over its control socket.

use super::spi::parse_spi;
use clap::{Args, Subcommand};
use hipsec::ctl;
use std::path::PathBuf;

pub(crate) const MONITOR_HELP: &str = "\
Stream a running node's events as JSON lines until Ctrl-C (as `ip xfrm monitor` does for the
kernel): \"acquire\" (a packet matched a protect policy whose SA is missing; it was dropped, never
sent in clear; at most one a second per policy), \"sa-soft-expired\" / \"sa-hard-expired\"
(RFC 4301 lifetimes), \"nat-rebind\" (an authenticated packet moved a peer's UDP endpoint) and
\"punted\" (a control packet such as IKE taken off the data path). Keys never appear.

Example:
  hipsec monitor /run/hipsec-node.sock | jq -c 'select(.event == \"acquire\")'";

const SA_HELP: &str = "\
Changes take effect at once, without a restart and without pausing traffic: each lane applies
them between two batches and the command returns when every lane has. Fields are those of the
SA file (docs/sa-file.md) plus `direction` (in or out), `peer` (ADDR:PORT the peer's ESP in UDP
uses; default: [network] peer, else the SA's dst/src on the node's port) and `lane`. Give them in
a TOML file of [[sa]] tables (--file; keep it mode 600) or as FIELD=VALUE words (dotted for
nested fields); key fields take @FILE or - (standard input), never the key itself on the
command line. A bad field changes nothing and is named in the error.";

#[derive(Debug, Subcommand)]
pub(crate) enum SaCommand {
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
Key fields (key, enc-key, auth-key) take @FILE (the key read from that file; keep it mode 600)
or - (read from standard input), so that no key is on the command line, where every local user
can read it in /proc/PID/cmdline. A bad field changes nothing and is named in the error; weak
settings the node accepts (null or legacy algorithms, replay-window = 0, a key of one repeated
byte) come back as warnings, printed on stderr.

Examples (spoke 7 from a file, spoke 8 from words):
  hipsec sa add /run/hipsec-node.sock --file spoke7.toml
  hipsec sa add /run/hipsec-node.sock direction=in src=192.0.2.8 dst=192.0.2.1 \\
      proto=esp spi=0x2008 mode=tunnel aead=aes128gcm key=@spoke8.key peer=192.0.2.8:4500
  head -c 20 /dev/urandom | xxd -p -c 40 | hipsec sa add /run/hipsec-node.sock \\
      direction=out src=192.0.2.1 dst=192.0.2.8 proto=esp spi=0x1008 mode=tunnel \\
      aead=aes128gcm key=-

A key is 20 random bytes in hex (AES-128 key and salt): `head -c 20 /dev/urandom | xxd -p -c 40`
prints one (`> spoke8.key`, mode 600, for key=@spoke8.key). A --file holds its keys itself, so
spoke7.toml (mode 600) holds both directions of spoke 7, each with a key of its own in place of
<40 hex digits>:
  [[sa]]
  direction = \"in\"
  src = \"192.0.2.7\"
  dst = \"192.0.2.1\"
  proto = \"esp\"
  spi = \"0x2007\"
  mode = \"tunnel\"
  aead = \"aes128gcm\"
  key = \"0x<40 hex digits>\"
  peer = \"192.0.2.7:4500\"
  [[sa]]
  direction = \"out\"
  src = \"192.0.2.1\"
  dst = \"192.0.2.7\"
  proto = \"esp\"
  spi = \"0x1007\"
  mode = \"tunnel\"
  aead = \"aes128gcm\"
  key = \"0x<40 hex digits>\"
  peer = \"192.0.2.7:4500\"";

const REKEY_HELP: &str = "\
Rekey a manually keyed pair of nodes A and B, make-before-break: fresh random SPIs and keys of
the same suite for A->B and B->A; both new inbound SAs go live first, then each node switches its
outbound SA (and every policy naming it) in one step, then the old inbound SAs are removed after
--grace-ms. No packet finds itself without an SA. Only ESP pairs.

Example:
  hipsec sa rekey /run/a.sock /run/b.sock --grace-ms 500";

#[derive(Debug, Args)]
pub(crate) struct SaInput {
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
pub(crate) struct SaDelArgs {
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
pub(crate) struct ListArgs {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    socket: PathBuf,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RekeyArgs {
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
pub(crate) enum PolicyCommand {
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
  hipsec policy add /run/hipsec-node.sock --file policies.toml
  hipsec policy add /run/hipsec-node.sock src=10.0.0.0/24 dst=10.7.0.0/24 action=protect sas=0x1007";

#[derive(Debug, Args)]
pub(crate) struct PolicyDelArgs {
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

/// The weak settings the node accepted (its answer's `warnings`), on stderr.
fn print_warnings(v: &serde_json::Value) {
    for w in ctl::warnings(v) {
        eprintln!("hipsec: warning: {w}");
    }
}

/// Sends the entries of `a` (its `--file`'s `[[table]]` tables and its FIELD=VALUE words) as
/// request `op`, under `field`, and prints the answer.
fn send_entries(a: &SaInput, op: &str, field: &str, table: &str) -> Result<(), String> {
    let entries = ctl::entries(a.file.as_deref(), &a.fields, table)?;
    let v = ctl::request(&a.socket, &serde_json::json!({"op": op, field: entries}))?;
    print_warnings(&v);
    print_json(&v);
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

pub(crate) fn run_sa(c: SaCommand) -> Result<(), String> {
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
            let v = ctl::rekey_pair(&a.a, &a.b, a.spi, a.grace_ms)?;
            print_warnings(&v);
            print_json(&v);
            Ok(())
        }
    }
}

pub(crate) fn run_policy(c: PolicyCommand) -> Result<(), String> {
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
