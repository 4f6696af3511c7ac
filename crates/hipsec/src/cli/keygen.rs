//! `hipsec keygen`: host identities for HIP.

use clap::Args;
use std::path::PathBuf;

pub(crate) const KEYGEN_HELP: &str = "\
Make a key. With --hip: a HIP host identity (RFC 7401 §3), an ECDSA key written as PKCS#8 PEM
with mode 0600, and print its Host Identity Tag (an ORCHIDv2 IPv6 address in 2001:20::/28,
RFC 7343) — the address other hosts use to reach this one, whatever its locators. An existing
file is kept unless --force (a new key is a new HIT).

Example:
  hipsec keygen --hip -o /etc/hipsec/host.pem
  hipsec keygen --hip --curve p384 -o host384.pem --json";

#[derive(Debug, Args)]
pub(crate) struct KeygenArgs {
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

pub(crate) fn keygen(a: &KeygenArgs) -> Result<(), String> {
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
