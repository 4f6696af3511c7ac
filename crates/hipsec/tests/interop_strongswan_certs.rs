//! X.509 certificate authentication (RFC 7296 §3.6–3.8, RFC 7427) between a hipsec node and
//! strongSwan 5.9 (charon, kernel-libipsec) in two namespaces. strongSwan's `pki` makes, at test
//! time, a CA, ECDSA P-256/P-384, RSA-2048 and Ed25519 end-entity certificates and a CRL; hipsec reads them
//! from `local.certs`, `remote.cacerts` (a directory, as swanctl's `x509ca/`) and
//! `remote.crls`, charon from swanctl's `x509ca/`, `x509/`, `private/` and `x509crl/`.
//! Certificates both ways with either side initiating, then ping and a TCP transfer through the
//! tunnel; a revoked client refused (hipsec logs the serial); a certificate for another name
//! refused. Needs root, netns, TUN, strongSwan and `pki` (scripts/test-all.sh installs them);
//! else SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod strongswan;
use common::BIN;
use std::path::Path;
use std::process::Command;
use strongswan::{Pair, Setup};

/// The serial of the certificate the CRL revokes (hex, as hipsec logs it).
const REVOKED_SERIAL: &str = "1a2b3c";

/// One test's certificates and expectations.
#[derive(Clone, Copy)]
struct Case {
    /// Key type of hipsec's end-entity certificate: "ecdsa" (P-256), "ecdsa384", "rsa",
    /// "ed25519".
    ours: &'static str,
    /// Key type of charon's.
    theirs: &'static str,
    hipsec_initiates: bool,
    /// The subjectAltName in hipsec's certificate (its IKE identity is node1.example).
    our_san: &'static str,
    /// charon's identity and the subjectAltName of its certificate (hipsec expects
    /// node2.example).
    their_id: &'static str,
    /// charon's certificate is on the CRL hipsec loads.
    their_revoked: bool,
    /// charon without RFC 7427 (`signature_authentication = no`): it signs with the classic
    /// AUTH methods, 1 (RSA) or 9 (ECDSA P-256).
    classic: bool,
}

const GOOD: Case = Case {
    ours: "ecdsa",
    theirs: "ecdsa",
    hipsec_initiates: true,
    our_san: "node1.example",
    their_id: "node2.example",
    their_revoked: false,
    classic: false,
};

fn can_run() -> bool {
    if !strongswan::can_run() {
        return false;
    }
    if Command::new("pki").arg("--help").output().is_err() {
        println!("SKIPPED: needs strongSwan's pki (package strongswan-pki)");
        return false;
    }
    true
}

fn pki(dir: &Path, script: &str) {
    let out = Command::new("sh").current_dir(dir).args(["-c", script]).output().unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
}

fn key_args(ty: &str) -> &'static str {
    match ty {
        "rsa" => "--type rsa --size 2048",
        "ecdsa384" => "--type ecdsa --size 384",
        "ed25519" => "--type ed25519",
        _ => "--type ecdsa --size 256",
    }
}

/// The CA, both end entities' keys and certificates, the CRL, and both configs rewritten for
/// certificate authentication.
fn certificates(d: &Path, c: Case) {
    let ca = d.join("ca");
    for sub in ["ca", "ca/x509ca", "x509ca", "x509", "private", "x509crl"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    pki(
        &ca,
        "pki --gen --type ecdsa --size 384 --outform pem > ca.key && \
         pki --self --ca --lifetime 30 --in ca.key --type ecdsa \
           --dn 'C=CH, O=hipsec test, CN=hipsec test CA' --outform pem > x509ca/ca.pem",
    );
    std::fs::copy(ca.join("x509ca/ca.pem"), d.join("x509ca/ca.pem")).unwrap();
    let issue = |name: &str, ty: &str, san: &str, serial: &str| {
        pki(
            &ca,
            &format!(
                "pki --gen {k} --outform pem > {name}.key && \
                 pki --pub --in {name}.key | pki --issue --lifetime 30 --cacert x509ca/ca.pem \
                   --cakey ca.key --dn 'C=CH, O=hipsec test, CN={san}' --san {san} \
                   --serial {serial} --outform pem > {name}.pem",
                k = key_args(ty),
            ),
        );
    };
    issue("hipsec", c.ours, c.our_san, "01");
    let their_serial = if c.their_revoked { REVOKED_SERIAL } else { "02" };
    issue("charon", c.theirs, c.their_id, their_serial);
    // A CRL in every run: hipsec always loads one, and only the revoked case lists charon.
    let revoke = if c.their_revoked { "charon.pem" } else { "hipsec-other.pem" };
    if !c.their_revoked {
        issue("hipsec-other", "ecdsa", "other.example", "03");
    }
    pki(
        &ca,
        &format!(
            "pki --signcrl --cacert x509ca/ca.pem --cakey ca.key --lifetime 30 \
               --reason key-compromise --cert {revoke} --outform pem > crl.pem"
        ),
    );
    std::fs::copy(ca.join("charon.pem"), d.join("x509/charon.pem")).unwrap();
    std::fs::copy(ca.join("charon.key"), d.join("private/charon.key")).unwrap();
    std::fs::copy(ca.join("crl.pem"), d.join("x509crl/crl.pem")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for k in [ca.join("hipsec.key"), d.join("private/charon.key")] {
        std::fs::set_permissions(k, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    let edit = |file: &str, from: &str, to: &str| {
        let p = d.join(file);
        let s = std::fs::read_to_string(&p).unwrap();
        assert!(s.contains(from), "{file} has no {from:?}");
        std::fs::write(&p, s.replacen(from, to, 1)).unwrap();
    };
    // charon: pubkey with its certificate; trust anchors and the CRL from swanctl's folders.
    edit("strongswan.conf", " x509 pubkey ", " x509 pubkey constraints revocation ");
    if c.classic {
        edit(
            "strongswan.conf",
            "  install_routes = yes",
            "  install_routes = yes\n  signature_authentication = no",
        );
    }
    // Every line on disk at once: the tests read the log while charon runs.
    edit("strongswan.conf", "time_add_ms = yes", "time_add_ms = yes\n      flush_line = yes");
    edit(
        "swanctl.conf",
        "local {\n      auth = psk\n      id = node2.example",
        &format!(
            "local {{\n      auth = pubkey\n      certs = charon.pem\n      id = {}",
            c.their_id
        ),
    );
    edit("swanctl.conf", "remote {\n      auth = psk", "remote {\n      auth = pubkey");
    // hipsec: the same, by swanctl's names.
    let ca_dir = ca.join("x509ca");
    edit(
        "a.toml",
        "[connection.local]\nauth = \"psk\"",
        &format!(
            "[connection.local]\nauth = \"pubkey\"\nkey = \"{}\"\ncerts = [\"{}\"]",
            ca.join("hipsec.key").display(),
            ca.join("hipsec.pem").display()
        ),
    );
    edit(
        "a.toml",
        "[connection.remote]\nauth = \"psk\"",
        &format!(
            "[connection.remote]\nauth = \"pubkey\"\ncacerts = \"{}/\"\ncrls = [\"{}\"]",
            ca_dir.display(),
            ca.join("crl.pem").display()
        ),
    );
}

fn start(c: Case) -> Pair {
    let setup = Setup { hipsec_initiates: c.hipsec_initiates, ..Setup::default() };
    Pair::start_edited(BIN, setup, |d| certificates(d, c))
}

fn logs(p: &Pair) -> String {
    format!("--- hipsec\n{}\n--- charon\n{}", p.hipsec_log(), p.charon_log())
}

/// Up with certificates both ways: ping and a TCP transfer through the tunnel, and charon's
/// log shows it checked our certificate and we sent it.
fn tunnel(c: Case) {
    if !can_run() {
        return;
    }
    let p = start(c);
    p.wait_up(BIN);
    assert_eq!(p.ping(5, "0.2"), 5, "pings lost\n{}", logs(&p));
    let (far, near) = p.tcp_transfer(1 << 20);
    assert_eq!(far, near, "the TCP stream arrived changed");
    let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
    assert!(sas.contains("ESTABLISHED") && sas.contains("INSTALLED"), "{sas}");
    let log = p.charon_log();
    // charon received our end-entity certificate in a CERT payload and validated it to the
    // CA: "received end entity cert" / "reached self-signed root ca".
    assert!(
        log.contains("received end entity cert \"C=CH, O=hipsec test, CN=node1.example\""),
        "{}",
        logs(&p)
    );
    assert!(log.contains("reached self-signed root ca"), "{}", logs(&p));
    // We asked for a certificate of our CA (CERTREQ) and charon saw the request.
    assert!(
        log.contains("received cert request for \"C=CH, O=hipsec test, CN=hipsec test CA\""),
        "{}",
        logs(&p)
    );
    // RFC 7427 signature authentication (AUTH method 14) in both directions.
    let scheme = match c.ours {
        "rsa" => "RSA_EMSA_PKCS1_SHA2_256",
        "ecdsa384" => "ECDSA_WITH_SHA384_DER",
        "ed25519" => "ED25519",
        _ => "ECDSA_WITH_SHA256_DER",
    };
    let ok = format!("authentication of 'node1.example' with {scheme} successful");
    assert!(log.contains(&ok), "no {ok:?}\n{}", logs(&p));
}

#[test]
fn ecdsa_certificates_hipsec_initiates() {
    tunnel(GOOD);
}

#[test]
fn ecdsa_certificates_strongswan_initiates() {
    tunnel(Case { hipsec_initiates: false, ..GOOD });
}

#[test]
fn rsa_certificates_hipsec_initiates() {
    tunnel(Case { ours: "rsa", theirs: "rsa", ..GOOD });
}

#[test]
fn rsa_certificates_strongswan_initiates() {
    tunnel(Case { ours: "rsa", theirs: "rsa", hipsec_initiates: false, ..GOOD });
}

#[test]
fn ecdsa_p384_certificates_both_ways() {
    tunnel(Case { ours: "ecdsa384", theirs: "ecdsa384", ..GOOD });
}

#[test]
fn ed25519_certificates_both_ways() {
    tunnel(Case { ours: "ed25519", theirs: "ed25519", hipsec_initiates: false, ..GOOD });
}

/// charon signs with AUTH method 9 (ECDSA P-256, RFC 4754) or 1 (RSA, RFC 7296 §3.8), which
/// we verify with its certificate's key; we keep signing with method 14.
#[test]
fn classic_auth_methods_from_strongswan() {
    for theirs in ["ecdsa", "rsa"] {
        let c = Case { theirs, hipsec_initiates: false, classic: true, ..GOOD };
        if !can_run() {
            return;
        }
        let p = start(c);
        p.wait_up(BIN);
        assert_eq!(p.ping(3, "0.2"), 3, "pings lost\n{}", logs(&p));
        let log = p.charon_log();
        let method = if theirs == "rsa" { "RSA signature" } else { "ECDSA-256 signature" };
        let ok = format!("authentication of 'node2.example' (myself) with {method}");
        assert!(log.contains(&ok), "{theirs}: no {ok:?}\n{}", logs(&p));
    }
}

/// No IKE SA comes up within `secs` on either side, and hipsec logged `want`.
fn refused(p: &Pair, secs: u64, want: &[&str]) {
    let logged = p.wait_until(secs, |p| {
        let l = p.hipsec_log();
        want.iter().all(|w| l.contains(w))
    });
    assert!(logged, "hipsec did not log {want:?}\n{}", logs(p));
    let st = p.status(BIN);
    let up = st["ike"]["ike_sas"]
        .as_array()
        .is_some_and(|v| v.iter().any(|s| s["state"] == "established"));
    assert!(!up, "an IKE SA came up: {st}");
    let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
    assert!(!sas.contains("ESTABLISHED"), "charon has an IKE SA: {sas}");
}

/// RFC 7296 §2.21.2: strongSwan initiates with a certificate our CRL lists; we answer
/// AUTHENTICATION_FAILED and log the serial.
#[test]
fn revoked_client_refused() {
    if !can_run() {
        return;
    }
    let p = start(Case { hipsec_initiates: false, their_revoked: true, ..GOOD });
    refused(&p, 10, &["ike-failed", REVOKED_SERIAL, "revoked"]);
    assert!(
        p.wait_until(5, |p| p.charon_log().contains("received AUTHENTICATION_FAILED notify")),
        "charon was not told AUTHENTICATION_FAILED\n{}",
        logs(&p)
    );
}

/// Our certificate names wrong.example while our identity is node1.example: charon finds no
/// trusted key for node1.example and refuses us.
#[test]
fn wrong_identity_certificate_refused_by_strongswan() {
    if !can_run() {
        return;
    }
    let p = start(Case { our_san: "wrong.example", ..GOOD });
    refused(&p, 10, &["ike-failed", "AUTHENTICATION_FAILED"]);
    assert!(
        p.charon_log().contains("no trusted"),
        "charon did not say why it refused\n{}",
        logs(&p)
    );
}

/// charon's certificate (valid, from our CA) is for other.example and it claims that identity,
/// but the connection is for node2.example: refused with AUTHENTICATION_FAILED.
#[test]
fn wrong_identity_refused_by_hipsec() {
    if !can_run() {
        return;
    }
    let p = start(Case { hipsec_initiates: false, their_id: "other.example", ..GOOD });
    refused(&p, 10, &["ike-failed", "identity"]);
    assert!(
        p.wait_until(5, |p| p.charon_log().contains("received AUTHENTICATION_FAILED notify")),
        "charon was not told AUTHENTICATION_FAILED\n{}",
        logs(&p)
    );
}

/// charon asks, in IKE_AUTH, for a CHILD SA whose selectors we refuse (TS_UNACCEPTABLE,
/// RFC 7296 §2.21.3): our answer still carries our certificate, so charon authenticates us
/// and keeps the IKE SA without a CHILD SA.
#[test]
fn a_refused_child_still_sends_our_certificate() {
    if !can_run() {
        return;
    }
    let c = Case { hipsec_initiates: false, ..GOOD };
    let setup = Setup { hipsec_initiates: false, ..Setup::default() };
    let p = Pair::start_edited(BIN, setup, |d| {
        certificates(d, c);
        let conf = d.join("swanctl.conf");
        let text = std::fs::read_to_string(&conf).unwrap();
        assert!(text.contains("local_ts = 10.0.2.0/24"), "{text}");
        std::fs::write(&conf, text.replacen("local_ts = 10.0.2.0/24", "local_ts = 10.0.9.0/24", 1))
            .unwrap();
    });
    let up = p.wait_until(15, |p| {
        let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
        sas.contains("ESTABLISHED")
    });
    assert!(up, "charon has no IKE SA\n{}", logs(&p));
    let log = p.charon_log();
    assert!(
        log.contains("received end entity cert \"C=CH, O=hipsec test, CN=node1.example\""),
        "{}",
        logs(&p)
    );
    assert!(log.contains("authentication of 'node1.example' with"), "{}", logs(&p));
    assert!(log.contains("TS_UNACCEPTABLE"), "{}", logs(&p));
}
