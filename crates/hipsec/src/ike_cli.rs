//! `hipsec initiate | terminate | rekey NAME` and `hipsec ike wireshark-keys`: swanctl's
//! `--initiate`, `--terminate` and `--rekey` for a running node's `[[connection]]`s, over its
//! control socket.

use crate::ctl;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use std::path::PathBuf;

/// A connection of a running node.
#[derive(Debug, Args)]
pub struct ConnArgs {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    pub socket: PathBuf,
    /// The `[[connection]]` name.
    #[arg(value_name = "NAME")]
    pub connection: String,
}

/// `hipsec terminate`.
#[derive(Debug, Args)]
pub struct TerminateArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Delete only this CHILD SA (its `[connection.children.NAME]`); the IKE SA stays.
    #[arg(long, value_name = "CHILD")]
    pub child: Option<String>,
}

/// `hipsec rekey`.
#[derive(Debug, Args)]
pub struct RekeyArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Rekey this CHILD SA (default: the connection's first).
    #[arg(long, value_name = "CHILD", conflicts_with = "ike")]
    pub child: Option<String>,
    /// Rekey the IKE SA (RFC 7296 §2.18) instead of the CHILD SA (§2.8).
    #[arg(long)]
    pub ike: bool,
}

/// `hipsec ike ...`.
#[derive(Debug, Subcommand)]
pub enum IkeCommand {
    /// Print tshark's IKEv2 decryption table (one line per IKE SA of the run, rekeyed ones
    /// too) — only from a node started with `hipsec run --debug-export-ike-keys`.
    #[command(name = "wireshark-keys", long_about = WIRESHARK_HELP)]
    WiresharkKeys(KeysArgs),
}

/// `hipsec ike wireshark-keys`.
#[derive(Debug, Args)]
pub struct KeysArgs {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    pub socket: PathBuf,
    /// The CHILD SAs' ESP keys (tshark's esp_sa table) instead of the IKE SAs'.
    #[arg(long)]
    pub esp: bool,
}

/// A socket only.
#[derive(Debug, Args)]
pub struct SocketArgs {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    pub socket: PathBuf,
}

const WIRESHARK_HELP: &str = "\
Print the IKE SAs' keys as lines of tshark's ikev2_decryption_table (SPIi,SPIr,SK_ei,SK_er,
\"cipher\",SK_ai,SK_ar,\"integrity\"), one per IKE SA since the node started: rekeyed ones, and
those whose IKE_AUTH failed, too. With --esp, the CHILD SAs' keys instead, as tshark's esp_sa
lines (two per CHILD SA pair: inbound, outbound). Keys leave a node only if it was started with
`hipsec run --debug-export-ike-keys`; otherwise this is refused.

Example (write the tables tshark reads, then decrypt a capture):
  hipsec ike wireshark-keys /run/hipsec-node.sock > ~/.config/wireshark/ikev2_decryption_table
  hipsec ike wireshark-keys --esp /run/hipsec-node.sock > ~/.config/wireshark/esp_sa
  tshark -r ike.pcap -O isakmp,esp -o esp.enable_encryption_decode:TRUE";

fn answer(v: Value) -> Result<(), String> {
    match v["error"].as_str() {
        Some(e) => Err(e.to_string()),
        None => {
            println!("{v}");
            Ok(())
        }
    }
}

/// `hipsec initiate`.
pub fn initiate(a: &ConnArgs) -> Result<(), String> {
    answer(ctl::request(&a.socket, &json!({"op": "initiate", "connection": a.connection}))?)
}

/// `hipsec terminate`.
pub fn terminate(a: &TerminateArgs) -> Result<(), String> {
    let mut req = json!({"op": "terminate", "connection": a.conn.connection});
    if let Some(c) = &a.child {
        req["child"] = json!(c);
    }
    answer(ctl::request(&a.conn.socket, &req)?)
}

/// `hipsec rekey`.
pub fn rekey(a: &RekeyArgs) -> Result<(), String> {
    let mut req = json!({"op": "rekey", "connection": a.conn.connection, "ike": a.ike});
    if let Some(c) = &a.child {
        req["child"] = json!(c);
    }
    answer(ctl::request(&a.conn.socket, &req)?)
}

/// `hipsec ike ...`.
pub fn run(c: &IkeCommand) -> Result<(), String> {
    match c {
        IkeCommand::WiresharkKeys(a) => {
            let v = ctl::request(&a.socket, &json!({"op": "ike-keys"}))?;
            if let Some(e) = v["error"].as_str() {
                return Err(e.to_string());
            }
            let table = if a.esp { "esp_sa" } else { "ikev2_decryption_table" };
            for l in v[table].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                println!("{}", l.as_str().unwrap_or_default());
            }
            Ok(())
        }
    }
}
