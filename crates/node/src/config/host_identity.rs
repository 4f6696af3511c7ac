//! The host identity file of HIP (RFC 7401 §3): our ECDSA (P-256, P-384) or RSA (2048 to 8192
//! bits) private key as PKCS#8 in PEM ("PRIVATE KEY", what `openssl genpkey -algorithm EC
//! -pkeyopt ec_paramgen_curve:P-256` or `-algorithm RSA` writes too), created mode 0600 and
//! refused when others may read it.

use hip::LocalHost;
use hip::identity::HiKind;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Reads a host identity file (PEM or DER PKCS#8). A file that group or others may read is
/// refused: the key is the host's identity for as long as the HIT is in use.
pub fn load(path: &Path) -> Result<LocalHost, String> {
    let at = |e: String| format!("{}: {e}", path.display());
    let meta = std::fs::metadata(path).map_err(|e| at(e.to_string()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(at(format!("mode {mode:03o}: a host identity must be private (chmod 600)")));
    }
    let bytes = zeroize::Zeroizing::new(std::fs::read(path).map_err(|e| at(e.to_string()))?);
    let der = if bytes.starts_with(b"-----BEGIN") {
        let p = pem::parse(&bytes[..]).map_err(|e| at(format!("not PEM: {e}")))?;
        if p.tag() != "PRIVATE KEY" {
            return Err(at(format!("a PEM \"{}\", want PRIVATE KEY (PKCS#8)", p.tag())));
        }
        zeroize::Zeroizing::new(p.into_contents())
    } else {
        bytes
    };
    LocalHost::from_pkcs8(&der).map_err(|e| at(e.to_string()))
}

/// Makes a new identity of `kind` and writes it to `path` (mode 0600; an existing file is
/// replaced only with `force`).
pub fn create(path: &Path, kind: HiKind, force: bool) -> Result<LocalHost, String> {
    let at = |e: String| format!("{}: {e}", path.display());
    let host = LocalHost::generate_kind(kind).map_err(|e| e.to_string())?;
    let der = host.to_pkcs8().map_err(|e| e.to_string())?;
    let text = zeroize::Zeroizing::new(pem::encode(&pem::Pem::new("PRIVATE KEY", der.to_vec())));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).mode(0o600);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    let mut f = opts.open(path).map_err(|e| {
        at(if e.kind() == std::io::ErrorKind::AlreadyExists {
            "exists (use --force to replace it and change this host's HIT)".into()
        } else {
            e.to_string()
        })
    })?;
    // A replaced file keeps its old mode: make it private before writing the key.
    f.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(|e| at(e.to_string()))?;
    f.write_all(text.as_bytes()).map_err(|e| at(e.to_string()))?;
    Ok(host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crypto::EcCurve;

    #[test]
    fn create_load_and_refusals() {
        let dir = std::env::temp_dir().join(format!("hipsec-hi-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("host.pem");
        let _ = std::fs::remove_file(&p);
        let made = create(&p, HiKind::Ecdsa(EcCurve::P256), false).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(load(&p).unwrap().hit(), made.hit());
        assert!(create(&p, HiKind::Ecdsa(EcCurve::P256), false).unwrap_err().contains("--force"));
        let again = create(&p, HiKind::Ecdsa(EcCurve::P384), true).unwrap();
        assert_ne!(again.hit(), made.hit());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load(&p).unwrap_err().contains("chmod 600"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&p, "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n").unwrap();
        assert!(load(&p).unwrap_err().contains("want PRIVATE KEY"));
        // A key openssl made (an independent PKCS#8 writer) loads, and its HIT is that of the
        // public point openssl prints.
        let o = dir.join("openssl.pem");
        let made = std::process::Command::new("openssl")
            .args(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out"])
            .arg(&o)
            .status();
        if made.is_ok_and(|s| s.success()) {
            std::fs::set_permissions(&o, std::fs::Permissions::from_mode(0o600)).unwrap();
            let host = load(&o).unwrap();
            let text = std::process::Command::new("openssl")
                .args(["pkey", "-noout", "-text", "-in"])
                .arg(&o)
                .output()
                .unwrap()
                .stdout;
            let text = String::from_utf8_lossy(&text);
            let hexpub: String = text
                .split("pub:")
                .nth(1)
                .unwrap()
                .lines()
                .skip(1)
                .take_while(|l| l.starts_with("    "))
                .collect::<String>()
                .replace([' ', ':'], "");
            let mut hi = vec![0, 1];
            hi.extend(hex::decode(hexpub).unwrap());
            let want = hip::HostIdentityTag::from_host_id(hip::HitSuite::EcdsaSha384, &hi);
            assert_eq!(host.hit(), want);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An RSA identity (`hipsec keygen --type rsa`) is written and read back with its HIT; an
    /// RSA key openssl wrote in PEM loads as the same kind of identity.
    #[test]
    fn rsa_identity_file() {
        let dir = std::env::temp_dir().join(format!("hipsec-hi-rsa-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("rsa.pem");
        let made = create(&p, HiKind::Rsa(2048), true).unwrap();
        let back = load(&p).unwrap();
        assert_eq!(back.hit(), made.hit());
        assert_eq!(back.identity().kind(), HiKind::Rsa(2048));
        assert_eq!(back.hit().suite(), Some(hip::HitSuite::RsaDsaSha256));
        let o = dir.join("openssl-rsa.pem");
        let made = std::process::Command::new("openssl")
            .args(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:3072", "-out"])
            .arg(&o)
            .status();
        if made.is_ok_and(|s| s.success()) {
            std::fs::set_permissions(&o, std::fs::Permissions::from_mode(0o600)).unwrap();
            assert_eq!(load(&o).unwrap().identity().kind(), HiKind::Rsa(3072));
        } else {
            println!("SKIPPED the openssl half: no openssl binary");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
