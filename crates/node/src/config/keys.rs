//! Key files for IKE public-key authentication (RFC 7427): our private key as PKCS#8
//! (RFC 5208 / RFC 8410, what `openssl genpkey` and `pki --gen` write) and the peer's public
//! key as SubjectPublicKeyInfo (RFC 5280 §4.1.2.7, what `openssl pkey -pubout` writes and
//! swanctl's `pubkeys` reads), PEM or DER. Ed25519 and ECDSA P-256 raw public keys; with
//! certificates also ECDSA P-384 and RSA private keys, and the key types' own formats
//! (PEM "EC PRIVATE KEY", RFC 5915; "RSA PRIVATE KEY", PKCS#1) that `pki --gen` writes.

use crypto::{SignatureAlg, SigningKey};
use std::path::Path;

/// AlgorithmIdentifier OIDs (DER, tag and length included) that tell the key's algorithm.
const OID_ED25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];
const OID_EC_PUBLIC_KEY: &[u8] = &[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];
const OID_RSA: &[u8] = &[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn algorithm(der: &[u8]) -> Result<SignatureAlg, String> {
    if contains(der, OID_ED25519) {
        Ok(SignatureAlg::Ed25519)
    } else if contains(der, OID_EC_PUBLIC_KEY) && contains(der, OID_P256) {
        Ok(SignatureAlg::EcdsaP256Sha256)
    } else {
        Err("not an Ed25519 or ECDSA P-256 key".into())
    }
}

/// A private key's algorithm: also P-384 and RSA (PKCS#1 v1.5 with SHA-256, RFC 7427
/// Appendix A.2.1, the signature strongSwan makes by default). `pkcs1` is a PEM "RSA PRIVATE
/// KEY", which names no OID.
fn private_algorithm(der: &[u8], pkcs1: bool) -> Result<SignatureAlg, String> {
    if pkcs1 || contains(der, OID_RSA) {
        Ok(SignatureAlg::RsaPkcs1Sha256)
    } else if contains(der, OID_P384) {
        Ok(SignatureAlg::EcdsaP384Sha384)
    } else if contains(der, OID_P256) {
        Ok(SignatureAlg::EcdsaP256Sha256)
    } else {
        algorithm(der).map_err(|_| "not an Ed25519, ECDSA P-256/P-384 or RSA key".into())
    }
}

/// The DER inside a PEM file with one of `tags`, or the file itself if it is not PEM.
fn der(bytes: &[u8], tags: &[&str], hint: &str) -> Result<Vec<u8>, String> {
    if !bytes.starts_with(b"-----BEGIN") {
        return Ok(bytes.to_vec());
    }
    let p = pem::parse(bytes).map_err(|e| format!("not PEM: {e}"))?;
    if !tags.contains(&p.tag()) {
        return Err(format!("a PEM \"{}\", want {} ({hint})", p.tag(), tags.join(" or ")));
    }
    Ok(p.into_contents())
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Our private key (PKCS#8, PEM "PRIVATE KEY" or DER; or PEM "EC PRIVATE KEY" / "RSA PRIVATE
/// KEY").
pub fn private_key(path: &Path) -> Result<SigningKey, String> {
    let at = |e: String| format!("{}: {e}", path.display());
    let bytes = zeroize::Zeroizing::new(read(path)?);
    let pkcs1 = bytes.starts_with(b"-----BEGIN RSA PRIVATE KEY");
    let d = zeroize::Zeroizing::new(
        der(
            &bytes,
            &["PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY"],
            "PKCS#8; convert with `openssl pkcs8 -topk8 -nocrypt`",
        )
        .map_err(at)?,
    );
    let alg = private_algorithm(&d, pkcs1).map_err(at)?;
    SigningKey::from_pkcs8(alg, &d).map_err(|e| at(format!("not a usable PKCS#8 key: {e}")))
}

/// The peer's public key (SubjectPublicKeyInfo, PEM "PUBLIC KEY" or DER): its algorithm and
/// the raw key the signature check takes (32 bytes Ed25519; the 65-byte uncompressed point).
pub fn public_key(path: &Path) -> Result<(SignatureAlg, Vec<u8>), String> {
    let at = |e: String| format!("{}: {e}", path.display());
    let d = der(&read(path)?, &["PUBLIC KEY"], "SubjectPublicKeyInfo; `openssl pkey -pubout`")
        .map_err(at)?;
    let alg = algorithm(&d).map_err(at)?;
    // The key is the BIT STRING that ends the structure: its last 32 or 65 bytes, after the
    // BIT STRING's tag, length and unused-bits octet.
    let (n, lead) = match alg {
        SignatureAlg::Ed25519 => (32, [0x03, 0x21, 0x00]),
        SignatureAlg::EcdsaP256Sha256 => (65, [0x03, 0x42, 0x00]),
        _ => return Err(at("a raw public key must be Ed25519 or ECDSA P-256".into())),
    };
    let k = d
        .len()
        .checked_sub(n + 3)
        .and_then(|i| d.get(i..))
        .ok_or_else(|| at("too short".into()))?;
    if k[..3] != lead || (alg == SignatureAlg::EcdsaP256Sha256 && k[3] != 0x04) {
        return Err(at("not a SubjectPublicKeyInfo with an uncompressed key".into()));
    }
    Ok((alg, k[3..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys written by OpenSSL 3.0 (`openssl genpkey -algorithm ed25519`, `-algorithm EC
    /// -pkeyopt ec_paramgen_curve:P-256`, and `openssl pkey -pubout`); the public key read back
    /// must equal the one the private key derives.
    #[test]
    fn openssl_files_read_back() {
        let dir = std::env::temp_dir().join(format!("hipsec-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let have = std::process::Command::new("openssl").arg("version").output().is_ok();
        if !have {
            println!("SKIPPED: no openssl");
            return;
        }
        for (name, args) in [
            ("ed", vec!["-algorithm", "ed25519"]),
            ("ec", vec!["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
        ] {
            let k = dir.join(format!("{name}.key"));
            let p = dir.join(format!("{name}.pub"));
            let ok = std::process::Command::new("openssl")
                .arg("genpkey")
                .args(&args)
                .arg("-out")
                .arg(&k)
                .status()
                .unwrap();
            assert!(ok.success());
            let ok = std::process::Command::new("openssl")
                .args(["pkey", "-pubout", "-in"])
                .arg(&k)
                .arg("-out")
                .arg(&p)
                .status()
                .unwrap();
            assert!(ok.success());
            let sk = private_key(&k).unwrap();
            let (alg, pk) = public_key(&p).unwrap();
            assert_eq!(alg, sk.alg(), "{name}");
            assert_eq!(pk, sk.public_key(), "{name}");
            // The wrong kind of file says what it wants.
            assert!(private_key(&p).unwrap_err().contains("PRIVATE KEY"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
