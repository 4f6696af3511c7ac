//! RSA host identities checked against OpenSSL, an implementation independent of aws-lc-rs's
//! use here: a key OpenSSL generates loads as our identity; its HOST_ID's modulus is the one
//! OpenSSL prints; our RSASSA-PKCS1-v1_5 SHA-256 signature (deterministic) is byte for byte
//! the one `openssl dgst -sha256 -sign` makes; and the HIT is ORCHIDv2 over the RFC 3110 key
//! with SHA-256 computed by `openssl dgst` (RFC 7343 §2, suite RSA,DSA/SHA-256 of RFC 7401
//! §5.2.10: OGA ID 1, Encode_96 the middle 96 bits of the 256-bit digest).
//!
//! RFC 7401 §5.2.14, paraphrased (text not reachable): an RSA signature is encoded as RFC 5702
//! has it for RSA/SHA-256, and RFC 5702 §3 (paraphrased) signs RSA/SHA-256 with
//! RSASSA-PKCS1-v1_5. The field table that is quoted elsewhere says only "SIG alg signature
//! algorithm" and that "the signature is calculated over the HIP packet, excluding the
//! HIP_SIGNATURE parameter and any parameters that follow the HIP_SIGNATURE parameter".

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use hip::hit::HIT_CONTEXT_ID;
use hip::identity::{HI_RSA, HiKind};
use hip::{HitSuite, HostIdentity, LocalHost};
use std::path::{Path, PathBuf};
use std::process::Command;

fn openssl(args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("openssl").args(args).output().ok()?;
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Some(out.stdout)
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("hip-rsa-openssl-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn openssl_key_signature_and_hit_agree() {
    let d = dir();
    let key = d.join("k.der");
    let Some(_) = openssl(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-outform",
        "DER",
        "-out",
        s(&key),
    ]) else {
        println!("SKIPPED: no openssl binary to check RSA host identities against");
        return;
    };
    let host = LocalHost::from_pkcs8(&std::fs::read(&key).unwrap()).unwrap();
    let id = host.identity();
    assert_eq!(id.kind(), HiKind::Rsa(2048));
    assert_eq!(id.algorithm(), HI_RSA);

    // RFC 3110 §2: exponent length 3, exponent 65537, then the modulus OpenSSL prints.
    let text = openssl(&["rsa", "-inform", "DER", "-in", s(&key), "-noout", "-modulus"]).unwrap();
    let text = String::from_utf8(text).unwrap();
    let hex_n = text.trim().strip_prefix("Modulus=").unwrap().to_ascii_lowercase();
    assert_eq!(&id.encoded()[..4], &[3, 1, 0, 1]);
    assert_eq!(hex::encode(&id.encoded()[4..]), hex_n);

    // The signature: PKCS#1 v1.5 is deterministic, so both must give the same octets.
    let msg = d.join("m");
    std::fs::write(&msg, b"the octets an I2 signs").unwrap();
    let theirs =
        openssl(&["dgst", "-sha256", "-sign", s(&key), "-keyform", "DER", s(&msg)]).unwrap();
    let ours = host.sign(b"the octets an I2 signs").unwrap();
    assert_eq!(hex::encode(&ours), hex::encode(&theirs));
    let peer = HostIdentity::parse(HI_RSA, id.encoded()).unwrap();
    peer.verify(b"the octets an I2 signs", &theirs).unwrap();

    // The HIT: SHA-256 by OpenSSL over Context ID || Host Identity field.
    let input = d.join("orchid");
    std::fs::write(&input, [&HIT_CONTEXT_ID[..], id.encoded()].concat()).unwrap();
    let digest = openssl(&["dgst", "-sha256", "-binary", s(&input)]).unwrap();
    let mut want = [0u8; 16];
    want[..4].copy_from_slice(&[0x20, 0x01, 0x00, 0x21]);
    want[4..].copy_from_slice(&digest[10..22]);
    assert_eq!(host.hit().0, want, "{}", host.hit());
    assert_eq!(host.hit().suite(), Some(HitSuite::RsaDsaSha256));
    std::fs::remove_dir_all(&d).ok();
}
