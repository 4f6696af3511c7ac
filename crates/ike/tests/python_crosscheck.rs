//! Cross-check of the initial exchanges against an independent implementation of the RFC 7296
//! formulas: Python with scapy (to dissect the messages), `cryptography` (AES-GCM, AES-CBC) and
//! the standard library's `hmac`. Python opens our IKE_AUTH request's SK payload with SK_ei
//! (§3.14, RFC 5282 §3), recomputes the initiator's PSK AUTH (§2.15) or verifies its RFC 7427
//! signature (Ed25519, ECDSA P-256), recomputes the CHILD SA KEYMAT (§2.17) from SK_d and the
//! nonces, and says whether they match ours.
//! Finds python like crates/hipsec/tests/interop_scapy.rs and skips, saying so, without a venv.
#![allow(clippy::unwrap_used, reason = "test code")]

use crypto::{
    AeadAlg, CbcAlg, DhGroup, EncrAlg, EspSuite, HmacAlg, IntegAlg, PrfAlg, SignatureAlg,
    SigningKey,
};
use ike::auth::CookieSecret;
use ike::{
    AuthConfig, AuthOutcome, ChildSuite, Config, Endpoints, IkeSuite, InitOutcome, Mode, Responder,
    SaInitNext,
};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use wire::ikev2::{Id, TrafficSelector};
use zeroize::Zeroizing;

const SCRIPT: &str = r#"
import sys, hmac, hashlib
from scapy.contrib.ikev2 import IKEv2, IKEv2_Nonce, IKEv2_Encrypted
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
v = dict(line.split("=", 1) for line in sys.stdin.read().split())
b = {k: bytes.fromhex(x) for k, x in v.items() if k not in ("suite", "hash")}
H = getattr(hashlib, v["hash"])
prf = lambda k, m: hmac.new(k, m, H).digest()
def prf_plus(k, s, n):
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = prf(k, t + s + bytes([i])); out += t; i += 1
    return out[:n]
m1, m2, m3 = IKEv2(b["msg1"]), IKEv2(b["msg2"]), b["msg3"]
ni, nr = bytes(m1[IKEv2_Nonce].nonce), bytes(m2[IKEv2_Nonce].nonce)
sk = IKEv2(m3)[IKEv2_Encrypted]
first, body = sk.next_payload, bytes(sk.load)
if v["suite"] == "gcm":
    key, salt = b["sk_ei"][:-4], b["sk_ei"][-4:]
    iv, ct = body[:8], body[8:]
    pt = AESGCM(key).decrypt(salt + iv, ct, m3[:32])
else:
    icv = len(b["sk_ai"]) // 2
    assert hmac.compare_digest(hmac.new(b["sk_ai"], m3[:-icv], H).digest()[:icv], m3[-icv:]), "icv"
    iv, ct = body[:16], body[16:-icv]
    d = Cipher(algorithms.AES(b["sk_ei"]), modes.CBC(iv)).decryptor()
    pt = d.update(ct) + d.finalize()
pt = pt[: len(pt) - pt[-1] - 1]
payloads, t = {}, first
while t:
    nxt, ln = pt[0], int.from_bytes(pt[2:4], "big")
    payloads[t], pt, t = pt[4:ln], pt[ln:], nxt
idi, auth = payloads[35], payloads[39]
octets = b["msg1"] + nr + prf(b["sk_pi"], idi)
if auth[0] == 2:
    ok = auth[4:] == prf(prf(b["psk"], b"Key Pad for IKEv2"), octets)
else:
    from cryptography.hazmat.primitives.asymmetric import ed25519, ec
    from cryptography.hazmat.primitives import hashes
    assert auth[0] == 14, "auth method"
    d = auth[4:]
    algid, sigv = d[1 : 1 + d[0]], d[1 + d[0] :]
    if algid == bytes.fromhex("300506032b6570"):
        ed25519.Ed25519PublicKey.from_public_bytes(b["pub"]).verify(sigv, octets)
    else:
        assert algid == bytes.fromhex("300a06082a8648ce3d040302"), "algorithm identifier"
        pk = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b["pub"])
        pk.verify(sigv, octets, ec.ECDSA(hashes.SHA256()))
    ok = True
print("auth", "ok" if ok else "MISMATCH")
km = prf_plus(b["sk_d"], ni + nr, len(b["keymat"]))
print("keymat", "ok" if km == b["keymat"] else "MISMATCH")
"#;

fn python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = std::env::var("VENV").map_or_else(|_| root.join(".venv"), |v| root.join(v));
    let python = venv.join("bin/python");
    let has_scapy = Command::new(&python)
        .args(["-c", "import scapy, cryptography"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_scapy {
        println!(
            "SKIPPED: no venv with scapy at {} (run tests/interop/run.sh to create it)",
            venv.display()
        );
        return None;
    }
    Some(python)
}

fn config(
    local: &str,
    remote: &str,
    suite: IkeSuite,
    child: ChildSuite,
    auth: AuthConfig,
) -> Config {
    Config {
        local_id: Id::fqdn(local),
        remote_id: Some(Id::fqdn(remote)),
        auth,
        ike_suites: vec![suite],
        more_children: Vec::new(),
        peer_eap: None,
        child_suites: vec![child],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    }
}

fn psk() -> AuthConfig {
    AuthConfig::Psk(Zeroizing::new(b"a pre-shared key".to_vec()))
}

fn cross_check(python: &Path, suite: IkeSuite, child: ChildSuite, name: &str, hash: &str) {
    cross_check_auth(python, suite, child, name, hash, (psk(), psk()), Vec::new());
}

fn cross_check_auth(
    python: &Path,
    suite: IkeSuite,
    child: ChildSuite,
    name: &str,
    hash: &str,
    (auth_a, auth_b): (AuthConfig, AuthConfig),
    pub_a: Vec<u8>,
) {
    let p = crypto::default_provider();
    let a_ep = Endpoints {
        local: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 500),
        remote: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), 500),
    };
    let b_ep = Endpoints { local: a_ep.remote, remote: a_ep.local };
    let (st, msg1) =
        ike::initiator::start(config("a.example", "b.example", suite, child, auth_a), p, a_ep, 0)
            .unwrap();
    let secret = CookieSecret { version: 1, key: Zeroizing::new([3; 32]) };
    let r =
        Responder::new(config("b.example", "a.example", suite, child, auth_b), p, secret).unwrap();
    let InitOutcome::HalfOpen(half, msg2) = r.handle_init(0, b_ep, &msg1, false) else { panic!() };
    let SaInitNext::Auth(auth, msg3) = st.handle(0, &msg2).unwrap() else { panic!() };
    let AuthOutcome::Established(_, msg4) = half.handle(&msg3).unwrap() else { panic!() };
    let a = auth.handle(&msg4).unwrap();
    let c = a.child.as_ref().unwrap();
    let keymat: Vec<u8> = [&c.enc_key_out, &c.auth_key_out, &c.enc_key_in, &c.auth_key_in]
        .iter()
        .flat_map(|k| k.iter().copied())
        .collect();
    let k = &a.ike.keys;
    let input = [
        ("suite", name.as_bytes().to_vec()),
        ("hash", hash.as_bytes().to_vec()),
        ("msg1", msg1),
        ("msg2", msg2),
        ("msg3", msg3),
        ("sk_ei", k.sk_ei.to_vec()),
        ("sk_ai", k.sk_ai.to_vec()),
        ("sk_pi", k.sk_pi.to_vec()),
        ("sk_d", k.sk_d.to_vec()),
        ("psk", b"a pre-shared key".to_vec()),
        ("keymat", keymat),
        ("pub", pub_a),
    ]
    .iter()
    .map(|(k, v)| {
        if *k == "suite" || *k == "hash" {
            format!("{k}={}\n", String::from_utf8_lossy(v))
        } else {
            format!("{k}={}\n", hex::encode(v))
        }
    })
    .collect::<String>();
    let mut child_proc = Command::new(python)
        .arg("-c")
        .arg(SCRIPT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child_proc.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child_proc.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{name}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout, "auth ok\nkeymat ok\n", "{name}");
}

#[test]
fn python_opens_our_sk_payload_and_agrees_on_auth_and_keymat() {
    let Some(python) = python() else { return };
    let gcm = IkeSuite {
        encr: EncrAlg::Aead(AeadAlg::Aes256Gcm),
        integ: IntegAlg::None,
        prf: PrfAlg::HmacSha256,
        dh: DhGroup::Curve25519,
    };
    let esp_gcm = ChildSuite {
        esp: EspSuite::new(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None).unwrap(),
        esn: false,
        pfs: None,
    };
    cross_check(&python, gcm, esp_gcm, "gcm", "sha256");
    let cbc = IkeSuite {
        encr: EncrAlg::Cbc(CbcAlg::Aes128),
        integ: IntegAlg::Hmac(HmacAlg::Sha384_192),
        prf: PrfAlg::HmacSha384,
        dh: DhGroup::Ecp384,
    };
    let esp_cbc = ChildSuite {
        esp: EspSuite::new(EncrAlg::Cbc(CbcAlg::Aes256), IntegAlg::Hmac(HmacAlg::Sha512_256))
            .unwrap(),
        esn: true,
        pfs: None,
    };
    cross_check(&python, cbc, esp_cbc, "cbc", "sha384");
}

#[test]
fn python_verifies_our_rfc7427_signatures() {
    let Some(python) = python() else { return };
    let gcm = IkeSuite {
        encr: EncrAlg::Aead(AeadAlg::Aes128Gcm),
        integ: IntegAlg::None,
        prf: PrfAlg::HmacSha256,
        dh: DhGroup::Ecp256,
    };
    let esp = ChildSuite {
        esp: EspSuite::new(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None).unwrap(),
        esn: false,
        pfs: None,
    };
    for alg in [SignatureAlg::Ed25519, SignatureAlg::EcdsaP256Sha256] {
        let ka = Arc::new(SigningKey::generate(alg).unwrap());
        let kb = Arc::new(SigningKey::generate(SignatureAlg::Ed25519).unwrap());
        let a = AuthConfig::Signature {
            key: ka.clone(),
            peer_public_key: kb.public_key(),
            peer_alg: kb.alg(),
        };
        let b = AuthConfig::Signature {
            key: kb.clone(),
            peer_public_key: ka.public_key(),
            peer_alg: ka.alg(),
        };
        cross_check_auth(&python, gcm, esp, "gcm", "sha256", (a, b), ka.public_key());
    }
}
