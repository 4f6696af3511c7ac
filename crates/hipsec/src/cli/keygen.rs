//! `hipsec keygen`: host identities for HIP.

use clap::Args;
use std::path::PathBuf;

pub(crate) const KEYGEN_HELP: &str = "\
Make a key. With --hip: a HIP host identity (RFC 7401 §3), an ECDSA key (HIT suite
ECDSA/SHA-384, the default) or with --type rsa an RSA key (HIT suite RSA,DSA/SHA-256; 2048 bits
unless --bits), written as PKCS#8 PEM with mode 0600, and print its Host Identity Tag (an
ORCHIDv2 IPv6 address in 2001:20::/28, RFC 7343) — the address other hosts use to reach this
one, whatever its locators. An existing file is kept unless --force (a new key is a new HIT).

Example:
  hipsec keygen --hip -o /etc/hipsec/host.pem
  hipsec keygen --hip --curve p384 -o host384.pem --json
  hipsec keygen --hip --type rsa --bits 3072 -o host-rsa.pem";

#[derive(Debug, Args)]
pub(crate) struct KeygenArgs {
    /// A HIP host identity (the only kind of key this command makes today).
    #[arg(long, required = true)]
    hip: bool,
    /// Where to write it.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Key type: ecdsa (the default) or rsa.
    #[arg(long = "type", default_value = "ecdsa", value_parser = ["ecdsa", "rsa"])]
    key_type: String,
    /// ECDSA curve: p256 (HIT suite ECDSA/SHA-384, the default) or p384.
    #[arg(long, default_value = "p256", value_parser = ["p256", "p384"])]
    curve: String,
    /// RSA modulus length in bits (with --type rsa).
    #[arg(long, default_value_t = 2048)]
    bits: usize,
    /// Replace an existing file (and so change this host's HIT).
    #[arg(long)]
    force: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn keygen(a: &KeygenArgs) -> Result<(), String> {
    use hip::identity::HiKind;
    let kind = if a.key_type == "rsa" {
        if !crypto::rsa::RSA_BITS.contains(&a.bits) {
            return Err(format!(
                "--bits {}: an RSA host identity has {:?} bits",
                a.bits,
                crypto::rsa::RSA_BITS
            ));
        }
        HiKind::Rsa(a.bits)
    } else if a.curve == "p384" {
        HiKind::Ecdsa(crypto::EcCurve::P384)
    } else {
        HiKind::Ecdsa(crypto::EcCurve::P256)
    };
    let host = node::config::host_identity::create(&a.output, kind, a.force)?;
    if a.json {
        let mut v = serde_json::json!({
            "hit": host.hit().to_string(),
            "file": a.output.display().to_string(),
            "type": a.key_type,
        });
        match kind {
            HiKind::Rsa(bits) => {
                v["bits"] = bits.into();
                v["hit_suite"] = "RSA,DSA/SHA-256".into();
            }
            HiKind::Ecdsa(_) => {
                v["curve"] = a.curve.clone().into();
                v["hit_suite"] = "ECDSA/SHA-384".into();
            }
        }
        println!("{v}");
    } else {
        println!("{}", host.hit());
    }
    Ok(())
}
