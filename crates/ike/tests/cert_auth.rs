//! The initial exchanges with X.509 certificate authentication (RFC 7296 §3.6–3.8, AUTH method
//! 14 of RFC 7427), two endpoints joined by function calls, with a CA and end-entity
//! certificates made by OpenSSL at test time (no key is checked in): ECDSA P-256/P-384, RSA
//! PKCS#1 v1.5 and PSS, and Ed25519 end entities in both roles; CERTREQ in IKE_SA_INIT naming
//! the anchor; an expired, unknown-issuer, revoked or wrong-identity peer refused with
//! AUTHENTICATION_FAILED and an error that names what failed. Needs `openssl`; else SKIPPED.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use crypto::{AeadAlg, DhGroup, EncrAlg, EspSuite, IntegAlg, PrfAlg, SignatureAlg, SigningKey};
use ike::auth::CookieSecret;
use ike::cert::{CertError, TrustStore};
use ike::{
    AuthConfig, AuthOutcome, ChildSuite, Config, Endpoints, Error, IkeSuite, InitOutcome, Mode,
    PeerMisbehaved, Rejected, Responder, SaInitNext, initiator,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use wire::ikev2::{Id, Payload, TrafficSelector};
use zeroize::Zeroizing;

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
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("certauth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Some(Dir(d))
}

fn openssl(d: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl").current_dir(d).args(args).output().unwrap();
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// A PKCS#8 key `name.key` of `alg`: "ec256", "ec384", "rsa", "ed25519".
fn key(d: &Path, name: &str, alg: &str) {
    let file = format!("{name}.key");
    let opts: &[&str] = match alg {
        "ec256" => &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
        "ec384" => &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"],
        "rsa" => &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        _ => &["-algorithm", "ed25519"],
    };
    let mut args = vec!["genpkey"];
    args.extend(opts);
    args.extend(["-out", &file]);
    openssl(d, &args);
}

/// A self-signed ECDSA P-256 CA `name`.
fn ca(d: &Path, name: &str) {
    key(d, name, "ec256");
    let (k, c, subj) = (format!("{name}.key"), format!("{name}.pem"), format!("/CN={name}"));
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-key",
            &k,
            "-out",
            &c,
            "-subj",
            &subj,
            "-days",
            "3",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// An end entity `name` with a key of `alg`, DNS name `san`, issued by `issuer`; its DER.
fn issue(d: &Path, name: &str, alg: &str, san: &str, issuer: &str, serial: &str) -> Vec<u8> {
    key(d, name, alg);
    let (k, csr, c) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.pem"));
    openssl(d, &["req", "-new", "-key", &k, "-out", &csr, "-subj", &format!("/CN={san}")]);
    let ext = format!("{name}.ext");
    std::fs::write(
        d.join(&ext),
        format!("subjectAltName=DNS:{san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"),
    )
    .unwrap();
    let (ca_pem, ca_key) = (format!("{issuer}.pem"), format!("{issuer}.key"));
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_pem,
            "-CAkey",
            &ca_key,
            "-set_serial",
            serial,
            "-days",
            "1",
            "-extfile",
            &ext,
            "-out",
            &c,
            "-sha256",
        ],
    );
    openssl(d, &["x509", "-in", &c, "-outform", "DER"])
}

fn anchor(d: &Path, name: &str) -> Vec<u8> {
    openssl(d, &["x509", "-in", &format!("{name}.pem"), "-outform", "DER"])
}

/// A CRL of `issuer` revoking `cert` (openssl's `ca` with a throwaway database).
fn crl(d: &Path, issuer: &str, cert: &str) -> Vec<u8> {
    std::fs::write(d.join("index.txt"), "").unwrap();
    std::fs::write(d.join("crlnumber"), "01\n").unwrap();
    let conf = format!(
        "[ca]\ndefault_ca=c\n[c]\ndatabase=index.txt\ncrlnumber=crlnumber\ncertificate={issuer}.pem\nprivate_key={issuer}.key\ndefault_md=sha256\ndefault_crl_days=1\n"
    );
    std::fs::write(d.join("ca.cnf"), conf).unwrap();
    openssl(d, &["ca", "-config", "ca.cnf", "-revoke", &format!("{cert}.pem")]);
    openssl(d, &["ca", "-config", "ca.cnf", "-gencrl", "-out", "crl.pem"]);
    openssl(d, &["crl", "-in", "crl.pem", "-outform", "DER"])
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

fn signing_key(d: &Path, name: &str, alg: SignatureAlg) -> Arc<SigningKey> {
    let der = openssl(d, &["pkey", "-in", &format!("{name}.key"), "-outform", "DER"]);
    Arc::new(SigningKey::from_pkcs8(alg, &der).unwrap())
}

fn cert_auth(key: Arc<SigningKey>, chain: Vec<u8>, trust: TrustStore, epoch: u64) -> AuthConfig {
    AuthConfig::Certificate { key, chain: vec![chain], trust: Arc::new(trust), epoch_unix_s: epoch }
}

fn config(local: &str, remote: Option<&str>, auth: AuthConfig) -> Config {
    Config {
        local_id: Id::fqdn(local),
        remote_id: remote.map(Id::fqdn),
        auth,
        ike_suites: vec![IkeSuite {
            encr: EncrAlg::Aead(AeadAlg::Aes256Gcm),
            integ: IntegAlg::None,
            prf: PrfAlg::HmacSha256,
            dh: DhGroup::Ecp256,
        }],
        child_suites: vec![ChildSuite {
            esp: EspSuite::new(EncrAlg::Aead(AeadAlg::Aes256Gcm), IntegAlg::None).unwrap(),
            esn: false,
            pfs: None,
        }],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
        more_children: Vec::new(),
        peer_eap: None,
    }
}

/// The four messages between `a` (initiator, identity `a_id`) and `b` (responder "gw.example");
/// the initiator's end and the responder's outcome. The driver's clock starts at 0 ms.
fn run(a_id: &str, a: AuthConfig, b: AuthConfig, b_wants: Option<&str>) -> Ends {
    exchange((a_id, "gw.example"), a, b, b_wants)
}

type Ends = (Result<(), Error>, AuthOutcome);

/// The four messages: the initiator `ids.0` wants the responder `ids.1`, which accepts
/// `b_wants` (any certified identity if `None`).
fn exchange(ids: (&str, &str), a: AuthConfig, b: AuthConfig, b_wants: Option<&str>) -> Ends {
    let p = crypto::default_provider();
    let ea = Endpoints {
        local: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 500),
        remote: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), 500),
    };
    let eb = Endpoints { local: ea.remote, remote: ea.local };
    let (st, msg1) = initiator::start(config(ids.0, Some(ids.1), a), p, ea, 0).unwrap();
    let b_cfg = config(ids.1, b_wants, b);
    let anchors = match &b_cfg.auth {
        AuthConfig::Certificate { trust, .. } => trust.certreq_hashes().to_vec(),
        _ => Vec::new(),
    };
    let r = Responder::new(b_cfg, p, CookieSecret { version: 1, key: Zeroizing::new([5; 32]) })
        .unwrap();
    let InitOutcome::HalfOpen(half, msg2) = r.handle_init(0, eb, &msg1, false) else { panic!() };
    // RFC 7296 §1.2: "HDR, SAr1, KEr, Nr, [CERTREQ]" — the responder's trust anchors, by
    // the SHA-1 of their SubjectPublicKeyInfo (§3.7).
    let m2 = wire::ikev2::Message::parse(&msg2).unwrap();
    let req = m2.payloads.iter().find_map(|p| match p {
        Payload::CertReq(c) => Some(c.ca_hashes().unwrap().unwrap()),
        _ => None,
    });
    assert_eq!(req.unwrap(), anchors);
    let SaInitNext::Auth(auth, msg3) = st.handle(0, &msg2).unwrap() else { panic!() };
    let outcome = half.handle(&msg3).unwrap();
    let reply = match &outcome {
        AuthOutcome::Established(_, r) | AuthOutcome::Failed(_, r) => r.clone(),
        AuthOutcome::Eap(..) => panic!("no EAP configured"),
    };
    let a_end = auth.handle(&reply).map(|_| ()).map_err(|r| match r {
        Rejected::Failed(e) => e,
        Rejected::Dropped { error, .. } => error,
    });
    (a_end, outcome)
}

fn refused_with(outcome: &AuthOutcome) -> &CertError {
    match outcome {
        AuthOutcome::Failed(Error::PeerMisbehaved(PeerMisbehaved::Certificate(e)), _) => e,
        AuthOutcome::Failed(e, _) => panic!("refused, but not for the certificate: {e}"),
        AuthOutcome::Established(..) => panic!("established"),
        AuthOutcome::Eap(..) => panic!("no EAP configured"),
    }
}

/// Every end-entity key type, in both roles, against a chain to one ECDSA CA.
#[test]
fn certificates_of_every_key_type_authenticate_both_ways() {
    let Some(d) = dir("types") else { return };
    let d = &d.0;
    ca(d, "ca");
    let cases = [
        ("ec256", SignatureAlg::EcdsaP256Sha256),
        ("ec384", SignatureAlg::EcdsaP384Sha384),
        ("rsa", SignatureAlg::RsaPkcs1Sha256),
        ("rsa", SignatureAlg::RsaPssSha256),
        ("ed25519", SignatureAlg::Ed25519),
    ];
    let gw = issue(d, "gw", "ec256", "gw.example", "ca", "0x10");
    let gw_key = signing_key(d, "gw", SignatureAlg::EcdsaP256Sha256);
    for (n, (alg, sig)) in cases.into_iter().enumerate() {
        let name = format!("alice-{n}");
        let cert = issue(d, &name, alg, "alice.example", "ca", &format!("0x{:x}", 0x20 + n));
        let store = || TrustStore::new(&[anchor(d, "ca")], &[]).unwrap();
        let a = cert_auth(signing_key(d, &name, sig), cert.clone(), store(), now());
        let b = cert_auth(gw_key.clone(), gw.clone(), store(), now());
        let (a_end, outcome) = run("alice.example", a, b, Some("alice.example"));
        assert!(matches!(outcome, AuthOutcome::Established(..)), "{alg} {sig:?}: {outcome:?}");
        a_end.unwrap_or_else(|e| panic!("{alg} {sig:?}: {e}"));
        // And with the roles swapped: the responder signs with this key type.
        let a = cert_auth(gw_key.clone(), gw.clone(), store(), now());
        let b = cert_auth(signing_key(d, &name, sig), cert, store(), now());
        let ids = ("gw.example", "alice.example");
        let (a_end, outcome) = exchange(ids, a, b, Some("gw.example"));
        assert!(matches!(outcome, AuthOutcome::Established(..)), "{alg} {sig:?}: {outcome:?}");
        a_end.unwrap_or_else(|e| panic!("responder {alg} {sig:?}: {e}"));
    }
}

/// RFC 7296 §2.21.2: "If the responder fails to authenticate the initiator ... it MUST
/// reply with AUTHENTICATION_FAILED" (quoted from memory); each refusal names its reason.
#[test]
fn expired_unknown_revoked_and_wrong_identity_are_refused() {
    let Some(d) = dir("refused") else { return };
    let d = &d.0;
    ca(d, "ca");
    ca(d, "other-ca");
    let gw = issue(d, "gw", "ec256", "gw.example", "ca", "0x10");
    let gw_key = signing_key(d, "gw", SignatureAlg::EcdsaP256Sha256);
    let alice = issue(d, "alice", "ec256", "alice.example", "ca", "0x11");
    let alice_key = signing_key(d, "alice", SignatureAlg::EcdsaP256Sha256);
    let stranger = issue(d, "stranger", "ec256", "alice.example", "other-ca", "0x12");
    let stranger_key = signing_key(d, "stranger", SignatureAlg::EcdsaP256Sha256);
    let revoked = issue(d, "revoked", "ec256", "alice.example", "ca", "0x5eed");
    let revoked_key = signing_key(d, "revoked", SignatureAlg::EcdsaP256Sha256);
    let crl = crl(d, "ca", "revoked");
    let store = || TrustStore::new(&[anchor(d, "ca")], std::slice::from_ref(&crl)).unwrap();
    let gw_auth = |epoch| cert_auth(gw_key.clone(), gw.clone(), store(), epoch);

    // Expired: the responder's clock says three days from now (the certificate has one).
    let a = cert_auth(alice_key.clone(), alice.clone(), store(), now());
    let (_, out) = run("alice.example", a, gw_auth(now() + 3 * 86_400), Some("alice.example"));
    let e = refused_with(&out);
    assert!(matches!(e, CertError::Invalid { reason } if reason.contains("Expired")), "{e}");

    // Unknown issuer.
    let a = cert_auth(stranger_key, stranger, store(), now());
    let (_, out) = run("alice.example", a, gw_auth(now()), Some("alice.example"));
    let e = refused_with(&out);
    assert!(matches!(e, CertError::Invalid { reason } if reason.contains("UnknownIssuer")), "{e}");

    // Revoked: the error carries the serial.
    let a = cert_auth(revoked_key, revoked, store(), now());
    let (_, out) = run("alice.example", a, gw_auth(now()), Some("alice.example"));
    let e = refused_with(&out);
    assert_eq!(e, &CertError::Revoked { serial: "5eed".into() });
    assert!(e.to_string().contains("serial 5eed is revoked"), "{e}");

    // Identity: a valid certificate for alice.example, but IDi mallory.example (and the
    // responder takes any identity its CA certifies).
    let a = cert_auth(alice_key.clone(), alice.clone(), store(), now());
    let (_, out) = run("mallory.example", a, gw_auth(now()), None);
    let e = refused_with(&out);
    assert_eq!(e, &CertError::IdentityMismatch { id: "mallory.example".into() });

    // The initiator refuses a responder whose certificate is not for gw.example.
    let a = cert_auth(alice_key.clone(), alice.clone(), store(), now());
    let b = cert_auth(alice_key, alice, store(), now());
    let (a_end, out) = run("alice.example", a, b, Some("alice.example"));
    assert!(matches!(out, AuthOutcome::Established(..)), "the responder's side is fine");
    assert_eq!(
        a_end.unwrap_err(),
        Error::PeerMisbehaved(PeerMisbehaved::Certificate(CertError::IdentityMismatch {
            id: "gw.example".into()
        }))
    );
}
