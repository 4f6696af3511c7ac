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

/// `hipsec rekey`.
#[derive(Debug, Args)]
pub struct RekeyArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
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
    WiresharkKeys(SocketArgs),
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
\"cipher\",SK_ai,SK_ar,\"integrity\"), one per IKE SA since the node started, rekeyed ones too.
Keys leave a node only if it was started with `hipsec run --debug-export-ike-keys`; otherwise
this is refused.

Example (write the table tshark reads, then decrypt a capture):
  hipsec ike wireshark-keys /run/hipsec-node.sock > ~/.config/wireshark/ikev2_decryption_table
  tshark -r ike.pcap -O isakmp";

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
pub fn terminate(a: &ConnArgs) -> Result<(), String> {
    answer(ctl::request(&a.socket, &json!({"op": "terminate", "connection": a.connection}))?)
}

/// `hipsec rekey`.
pub fn rekey(a: &RekeyArgs) -> Result<(), String> {
    let req = json!({"op": "rekey", "connection": a.conn.connection, "ike": a.ike});
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
            for l in v["ikev2_decryption_table"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                println!("{}", l.as_str().unwrap_or_default());
            }
            Ok(())
        }
    }
}
