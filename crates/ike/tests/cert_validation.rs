//! X.509 chains made by OpenSSL at test time (no key is checked in), validated by
//! `ike::cert::TrustStore`: CAs with ECDSA P-256/P-384, RSA PKCS#1 v1.5, RSA-PSS and Ed25519
//! keys; identities matched against subjectAltName (FQDN, IP) and the subject DN; a revoked
//! certificate, an expired one, an unknown issuer, an end entity posing as a CA, a wrong
//! identity and a forbidden extended key usage are refused; CERTREQ hashes are the SHA-1 of
//! each anchor's SubjectPublicKeyInfo. Needs `openssl`; else SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use ike::cert::{CertError, TrustStore};
use wire::ikev2::{Id, IdType};

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(name: &str) -> Option<Dir> {
    if Command::new("openssl").arg("version").output().is_err() {
        println!("SKIPPED: needs openssl");
        return None;
    }
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cert-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Some(Dir(d))
}

fn openssl(d: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(d).args(args).output().unwrap();
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn der(d: &Path, pem: &str, kind: &str) -> Vec<u8> {
    let out = Command::new("openssl")
        .current_dir(d)
        .args([kind, "-in", pem, "-outform", "DER"])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}

/// A private key of `alg`: "ec256", "ec384", "rsa", "ed25519".
fn key(d: &Path, name: &str, alg: &str) {
    let file = format!("{name}.key");
    match alg {
        "ec256" | "ec384" => {
            let curve = if alg == "ec256" { "P-256" } else { "P-384" };
            let opt = format!("ec_paramgen_curve:{curve}");
            openssl(d, &["genpkey", "-algorithm", "EC", "-pkeyopt", &opt, "-out", &file]);
        }
        "rsa" | "rsa-pss" => openssl(
            d,
            &["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", &file],
        ),
        _ => openssl(d, &["genpkey", "-algorithm", "ed25519", "-out", &file]),
    }
}

/// Signature options for a CA of `alg` (RSA-PSS with salt = digest length, RFC 4055).
fn sigopts(alg: &str) -> Vec<&'static str> {
    match alg {
        "rsa-pss" => {
            vec!["-sha256", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:digest"]
        }
        "ed25519" => vec![],
        _ => vec!["-sha256"],
    }
}

/// A self-signed CA `name` with a key of `alg`.
fn ca(d: &Path, name: &str, alg: &str) {
    key(d, name, alg);
    let (k, c, subj) = (format!("{name}.key"), format!("{name}.pem"), format!("/CN={name}"));
    let mut args = vec!["req", "-x509", "-key", &k, "-out", &c, "-subj", &subj, "-days", "2"];
    args.extend(["-addext", "basicConstraints=critical,CA:TRUE"]);
    args.extend(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
    args.extend(sigopts(alg));
    openssl(d, &args);
}

/// An end entity `name` (ECDSA P-256) issued by `issuer` (a CA of `issuer_alg`) with serial
/// `serial`, the extensions `ext` and `days` of validity.
fn issue(d: &Path, name: &str, issuer: &str, issuer_alg: &str, serial: &str, ext: &str) {
    key(d, name, "ec256");
    let (k, csr, c) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.pem"));
    let subj = format!("/O=hipsec test/CN={name}");
    openssl(d, &["req", "-new", "-key", &k, "-out", &csr, "-subj", &subj]);
    let extfile = format!("{name}.ext");
    std::fs::write(d.join(&extfile), ext).unwrap();
    let (ca_pem, ca_key) = (format!("{issuer}.pem"), format!("{issuer}.key"));
    let mut args = vec!["x509", "-req", "-in", &csr, "-CA", &ca_pem, "-CAkey", &ca_key];
    args.extend(["-set_serial", serial, "-days", "1", "-extfile", &extfile, "-out", &c]);
    args.extend(sigopts(issuer_alg));
    openssl(d, &args);
}

fn anchor_der(d: &Path, name: &str) -> Vec<u8> {
    der(d, &format!("{name}.pem"), "x509")
}

/// The DER elements (whole TLVs) inside the constructed element that is all of `der`
/// (short and long definite lengths; test certificates only).
fn elements(der: &[u8]) -> Vec<&[u8]> {
    let tlv_len = |b: &[u8]| -> (usize, usize) {
        if b[1] < 0x80 {
            (2, usize::from(b[1]))
        } else {
            let n = usize::from(b[1] & 0x7f);
            (2 + n, b[2..2 + n].iter().fold(0, |a, &x| (a << 8) | usize::from(x)))
        }
    };
    let (h, _) = tlv_len(der);
    let mut rest = &der[h..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (h, l) = tlv_len(rest);
        out.push(&rest[..h + l]);
        rest = &rest[h + l..];
    }
    out
}

/// The subject Name of a certificate (RFC 5280 §4.1: TBSCertificate's sixth field after the
/// explicit version).
fn subject_dn(cert: &[u8]) -> Vec<u8> {
    let tbs = elements(cert)[0];
    elements(tbs)[5].to_vec()
}

const EE_EXT: &str = "subjectAltName=DNS:gw.example,IP:192.0.2.1,email:gw@example.com\n\
                      basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n";

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// Every CA key type signs a chain that validates, for each identity form the certificate
/// names; the CERTREQ hash is the SHA-1 of the anchor's SubjectPublicKeyInfo as OpenSSL
/// writes it (RFC 7296 §3.7: "Each is encoded as the SHA-1 hash of the Subject Public Key Info
/// element (see section 4.1.2.7 of [PKIX]) from each Trust Anchor certificate.").
#[test]
fn chains_of_every_key_type_validate_and_name_the_identity() {
    let Some(d) = dir("types") else { return };
    let d = &d.0;
    for alg in ["ec256", "ec384", "rsa", "rsa-pss", "ed25519"] {
        let ca_name = format!("ca-{alg}");
        ca(d, &ca_name, alg);
        let ee = format!("gw-{alg}");
        issue(d, &ee, &ca_name, alg, "0x1234", EE_EXT);
        let anchor = anchor_der(d, &ca_name);
        let store = TrustStore::new(&[anchor], &[]).unwrap();
        let chain = der(d, &format!("{ee}.pem"), "x509");
        let ip = Id::ip("192.0.2.1".parse().unwrap());
        for id in [Id::fqdn("gw.example"), ip] {
            let v = store.verify(&[&chain], now(), &id).unwrap_or_else(|e| panic!("{alg}: {e}"));
            assert_eq!(v.serial, [0x12, 0x34]);
        }
        // The subject DN as an ID_DER_ASN1_DN identity (RFC 7296 §3.5): the certificate's own
        // subject Name, and another one.
        let dn = subject_dn(&chain);
        let v = store.verify(&[&chain], now(), &Id { id_type: IdType::ID_DER_ASN1_DN, data: dn });
        assert!(v.is_ok(), "{alg}: {v:?}");
        let other = subject_dn(&anchor_der(d, &ca_name));
        let r =
            store.verify(&[&chain], now(), &Id { id_type: IdType::ID_DER_ASN1_DN, data: other });
        assert!(matches!(r, Err(CertError::IdentityMismatch { .. })), "{alg}: {r:?}");
        // SPKI hash, computed by OpenSSL.
        let out = Command::new("sh")
            .current_dir(d)
            .arg("-c")
            .arg(format!(
                "openssl x509 -in {ca_name}.pem -pubkey -noout | openssl pkey -pubin -outform DER \
                 | openssl dgst -sha1 -r"
            ))
            .output()
            .unwrap();
        let want = String::from_utf8(out.stdout).unwrap();
        let want = hex::decode(want.split_whitespace().next().unwrap()).unwrap();
        assert_eq!(store.certreq_hashes(), [<[u8; 20]>::try_from(want.as_slice()).unwrap()]);
        assert!(store.requested(store.certreq_hashes()));
        assert!(!store.requested(&[[0; 20]]));
    }
}

/// A certificate that does not name the identity is refused: another FQDN, another address,
/// another RFC 822 address; one that does is taken.
#[test]
fn a_wrong_identity_is_refused() {
    let Some(d) = dir("ident") else { return };
    let d = &d.0;
    ca(d, "ca", "ec256");
    issue(d, "gw", "ca", "ec256", "7", EE_EXT);
    let store = TrustStore::new(&[der(d, "ca.pem", "x509")], &[]).unwrap();
    let chain = der(d, "gw.pem", "x509");
    let r = store.verify(&[&chain], now(), &Id::fqdn("other.example"));
    assert_eq!(r, Err(CertError::IdentityMismatch { id: "other.example".into() }));
    let r = store.verify(&[&chain], now(), &Id::ip("192.0.2.9".parse().unwrap()));
    assert_eq!(r, Err(CertError::IdentityMismatch { id: "192.0.2.9".into() }));
    // RFC 822 identities against the rfc822Name (email:gw@example.com): the domain in any
    // case, the local part exactly.
    assert!(store.verify(&[&chain], now(), &Id::rfc822("gw@example.com")).is_ok());
    assert!(store.verify(&[&chain], now(), &Id::rfc822("gw@EXAMPLE.com")).is_ok());
    for other in ["GW@example.com", "ops@example.com", "gw@example.org", "gw.example"] {
        let r = store.verify(&[&chain], now(), &Id::rfc822(other));
        assert_eq!(r, Err(CertError::IdentityMismatch { id: other.into() }), "{other}");
    }
    // A key ID cannot be matched against a certificate.
    let key_id = Id { id_type: IdType::ID_KEY_ID, data: b"k".to_vec() };
    let r = store.verify(&[&chain], now(), &key_id);
    assert_eq!(r, Err(CertError::IdentityType { id_type: 11 }));
}

/// A CRL from the CA that lists the certificate: refused, naming its serial.
#[test]
fn a_revoked_certificate_is_refused_with_its_serial() {
    let Some(d) = dir("crl") else { return };
    let d = &d.0;
    ca(d, "ca", "ec256");
    issue(d, "gw", "ca", "ec256", "0x1234", EE_EXT);
    issue(d, "ok", "ca", "ec256", "0x99", EE_EXT);
    std::fs::write(d.join("index.txt"), "").unwrap();
    std::fs::write(d.join("crlnumber"), "01\n").unwrap();
    std::fs::write(
        d.join("ca.cnf"),
        "[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\ncrlnumber=crlnumber\n\
         default_md=sha256\ndefault_crl_days=1\n",
    )
    .unwrap();
    let ca_args = ["-config", "ca.cnf", "-keyfile", "ca.key", "-cert", "ca.pem"];
    openssl(d, &[&["ca", "-revoke", "gw.pem"][..], &ca_args].concat());
    openssl(d, &[&["ca", "-gencrl", "-out", "crl.pem"][..], &ca_args].concat());
    let store = TrustStore::new(&[der(d, "ca.pem", "x509")], &[der(d, "crl.pem", "crl")]).unwrap();
    let id = Id::fqdn("gw.example");
    let r = store.verify(&[&der(d, "gw.pem", "x509")], now(), &id);
    assert_eq!(r, Err(CertError::Revoked { serial: "1234".into() }));
    assert!(store.verify(&[&der(d, "ok.pem", "x509")], now(), &id).is_ok());
}

/// Refused: out of its validity time, an issuer we do not trust, an end entity that is not a
/// CA issuing another (basic constraints), an extended key usage only for code signing, and
/// an empty chain; an intermediate CA sent after the end entity is used.
#[test]
fn invalid_chains_are_refused() {
    let Some(d) = dir("invalid") else { return };
    let d = &d.0;
    ca(d, "ca", "ec256");
    ca(d, "stranger", "ec256");
    issue(d, "gw", "ca", "ec256", "1", EE_EXT);
    issue(d, "alien", "stranger", "ec256", "2", EE_EXT);
    issue(d, "fake", "gw", "ec256", "3", EE_EXT);
    issue(d, "signer", "ca", "ec256", "4", &format!("{EE_EXT}extendedKeyUsage=codeSigning\n"));
    issue(d, "ike", "ca", "ec256", "5", &format!("{EE_EXT}extendedKeyUsage=1.3.6.1.5.5.7.3.17\n"));
    let inter_ext = "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n";
    issue(d, "inter", "ca", "ec256", "6", inter_ext);
    issue(d, "leaf", "inter", "ec256", "7", EE_EXT);
    let store = TrustStore::new(&[der(d, "ca.pem", "x509")], &[]).unwrap();
    let id = Id::fqdn("gw.example");
    let c = |n: &str| der(d, &format!("{n}.pem"), "x509");
    let invalid = |r: Result<_, CertError>| matches!(r, Err(CertError::Invalid { .. }));
    assert!(store.verify(&[&c("gw")], now(), &id).is_ok());
    assert!(invalid(store.verify(&[&c("gw")], now() + 3 * 86_400, &id)), "expired");
    assert!(invalid(store.verify(&[&c("alien")], now(), &id)), "unknown issuer");
    assert!(invalid(store.verify(&[&c("fake"), &c("gw")], now(), &id)), "EE as CA");
    assert!(invalid(store.verify(&[&c("signer")], now(), &id)), "codeSigning only");
    assert!(store.verify(&[&c("ike")], now(), &id).is_ok(), "ipsecIKE");
    assert!(invalid(store.verify(&[&c("leaf")], now(), &id)), "intermediate missing");
    assert!(store.verify(&[&c("leaf"), &c("inter")], now(), &id).is_ok());
    assert_eq!(store.verify(&[], now(), &id), Err(CertError::NoCertificate));
    assert!(matches!(
        TrustStore::new(&[b"not a certificate".to_vec()], &[]),
        Err(CertError::BadAnchor { index: 0, .. })
    ));
}
