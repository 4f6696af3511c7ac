//! `hipsec hip ...`: HIP debugging from the command line.

use crate::ctl;
use clap::{Args, Subcommand};
use serde_json::json;
use std::path::PathBuf;

/// `hipsec hip ...`.
#[derive(Debug, Subcommand)]
pub enum HipCommand {
    /// Print tshark's esp_sa lines for every ESP SA the node's HIP associations made — only
    /// from a node started with `hipsec run --debug-export-hip-keys`.
    #[command(name = "wireshark-keys", long_about = WIRESHARK_HELP)]
    WiresharkKeys(SocketArg),
    /// End the association with a peer: CLOSE, answered by CLOSE_ACK (RFC 7401 §6.14); its
    /// SAs go, and for a known peer the next packet to its HIT starts a new base exchange.
    Close(CloseArgs),
    /// Rekey the ESP SA pair with a peer by UPDATE, new keys from the association's KEYMAT
    /// (RFC 7402 §6.8): make before break, the old inbound SA retired 2 s after the switch.
    /// `hipsec status` shows the new SPIs and the `rekeys` counter. Example:
    ///   hipsec hip rekey /run/hipsec-node.sock 2001:2e:aa54:d2b5:c6bd:f79e:1f1c:5f2c
    Rekey(CloseArgs),
}

/// `hipsec hip close|rekey SOCKET HIT`.
#[derive(Debug, Args)]
pub struct CloseArgs {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    pub socket: PathBuf,
    /// The peer's HIT.
    #[arg(value_name = "HIT")]
    pub hit: String,
}

/// A socket only.
#[derive(Debug, Args)]
pub struct SocketArg {
    /// The node's control socket.
    #[arg(value_name = "SOCKET")]
    pub socket: PathBuf,
}

const WIRESHARK_HELP: &str = "\
Print the ESP SAs of the node's HIP associations as lines of tshark's esp_sa table (\"IPv4\",
locator, locator, SPI, cipher, key, integrity, key): the addresses are the locators, which is
what the wire carries (BEET, RFC 7402 §5). Keys leave a node only if it was started with
`hipsec run --debug-export-hip-keys`; otherwise this is refused.

Example (ESP in UDP on 4500):
  hipsec hip wireshark-keys /run/hipsec-node.sock > ~/.config/wireshark/esp_sa
  tshark -r esp.pcap -o esp.enable_encryption_decode:TRUE -Y icmpv6";

/// Runs it.
pub fn run(c: &HipCommand) -> Result<(), String> {
    match c {
        HipCommand::WiresharkKeys(a) => {
            let v = ctl::request(&a.socket, &json!({"op": "hip-keys"}))?;
            if let Some(e) = v["error"].as_str() {
                return Err(e.to_string());
            }
            for l in v["esp_sa"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                println!("{}", l.as_str().unwrap_or_default());
            }
            Ok(())
        }
        HipCommand::Close(a) | HipCommand::Rekey(a) => {
            let op = if matches!(c, HipCommand::Close(_)) { "hip-close" } else { "hip-rekey" };
            let v = ctl::request(&a.socket, &json!({"op": op, "hit": a.hit}))?;
            match v["error"].as_str() {
                Some(e) => Err(e.to_string()),
                None => {
                    println!("{v}");
                    Ok(())
                }
            }
        }
    }
}
