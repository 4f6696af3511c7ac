//! The initial exchanges with RFC 7427 digital-signature authentication (AUTH method 14):
//! Ed25519 (RFC 8420) and ECDSA P-256 with SHA-256, raw peer public keys configured, two
//! endpoints joined by function calls.
#![allow(clippy::unwrap_used, reason = "test code")]

use crypto::{AeadAlg, DhGroup, EncrAlg, EspSuite, IntegAlg, PrfAlg, SignatureAlg, SigningKey};
use ike::auth::{ALG_ID_ECDSA_SHA256, ALG_ID_ED25519, CookieSecret};
use ike::{
    AuthConfig, AuthOutcome, ChildSuite, Config, Endpoints, Error, IkeSuite, InitOutcome, Mode,
    PeerMisbehaved, Rejected, Responder, SaInitNext, initiator,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use wire::ikev2::{AuthMethod, Id, NotifyType, TrafficSelector};
use zeroize::Zeroizing;

fn config(local: &str, remote: &str, auth: AuthConfig) -> Config {
    Config {
        local_id: Id::fqdn(local),
        remote_id: Some(Id::fqdn(remote)),
        auth,
        ike_suites: vec![IkeSuite {
            encr: EncrAlg::Aead(AeadAlg::Aes256Gcm),
            integ: IntegAlg::None,
            prf: PrfAlg::HmacSha256,
            dh: DhGroup::Ecp256,
        }],
        more_children: Vec::new(),
        peer_eap: None,
        child_suites: vec![ChildSuite {
            esp: EspSuite::new(EncrAlg::Aead(AeadAlg::ChaCha20Poly1305), IntegAlg::None).unwrap(),
            esn: false,
            pfs: None,
        }],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    }
}

fn sig(key: &Arc<SigningKey>, peer: &SigningKey) -> AuthConfig {
    AuthConfig::Signature {
        key: key.clone(),
        peer_public_key: peer.public_key(),
        peer_alg: peer.alg(),
    }
}

type Outcome = (Result<ike::Established, Error>, AuthOutcome);

/// Runs the four messages; returns the initiator's end and the responder's outcome.
fn run(a: AuthConfig, b: AuthConfig) -> (Outcome, Vec<u8>) {
    let p = crypto::default_provider();
    let ea = Endpoints {
        local: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 500),
        remote: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), 500),
    };
    let eb = Endpoints { local: ea.remote, remote: ea.local };
    let (st, msg1) = initiator::start(config("alice", "bob", a), p, ea, 0).unwrap();
    let r = Responder::new(
        config("bob", "alice", b),
        p,
        CookieSecret { version: 1, key: Zeroizing::new([5; 32]) },
    )
    .unwrap();
    let InitOutcome::HalfOpen(half, msg2) = r.handle_init(0, eb, &msg1, false) else { panic!() };
    let m2 = wire::ikev2::Message::parse(&msg2).unwrap();
    // RFC 7427 §4: SHA2-256, SHA2-384, SHA2-512 and Identity (RFC 8420).
    let hashes = m2.notify(NotifyType::SIGNATURE_HASH_ALGORITHMS).unwrap().data.clone();
    assert_eq!(hashes, vec![0, 2, 0, 3, 0, 4, 0, 5]);
    let SaInitNext::Auth(auth, msg3) = st.handle(0, &msg2).unwrap() else { panic!() };
    let outcome = half.handle(&msg3).unwrap();
    let reply = match &outcome {
        AuthOutcome::Established(_, r) | AuthOutcome::Failed(_, r) => r.clone(),
        AuthOutcome::Eap(..) => panic!("no EAP configured"),
    };
    let a_end = auth.handle(&reply).map_err(|r| match r {
        Rejected::Failed(e) => e,
        Rejected::Dropped { error, .. } => error,
    });
    ((a_end, outcome), msg3)
}

#[test]
fn ed25519_and_ecdsa_p256_in_every_pairing() {
    for (ia, ra) in [
        (SignatureAlg::Ed25519, SignatureAlg::Ed25519),
        (SignatureAlg::EcdsaP256Sha256, SignatureAlg::EcdsaP256Sha256),
        (SignatureAlg::Ed25519, SignatureAlg::EcdsaP256Sha256),
    ] {
        let ka = Arc::new(SigningKey::generate(ia).unwrap());
        let kb = Arc::new(SigningKey::generate(ra).unwrap());
        let ((a, b), _) = run(sig(&ka, &kb), sig(&kb, &ka));
        let a = a.unwrap();
        let AuthOutcome::Established(b, _) = b else { panic!("{ia:?}/{ra:?} refused") };
        assert_eq!(
            a.child.as_ref().unwrap().enc_key_out.as_slice(),
            b.child.as_ref().unwrap().enc_key_in.as_slice()
        );
        assert_eq!(a.child.as_ref().unwrap().spi_out, b.child.as_ref().unwrap().spi_in);
    }
}

#[test]
fn auth_payload_layout_is_rfc7427_section_3() {
    let ka = Arc::new(SigningKey::generate(SignatureAlg::Ed25519).unwrap());
    let kb = Arc::new(SigningKey::generate(SignatureAlg::EcdsaP256Sha256).unwrap());
    let auth = ike::auth::make_auth(
        &sig(&ka, &kb),
        PrfAlg::HmacSha256,
        b"msg1",
        b"nonce",
        b"sk_pi",
        &Id::fqdn("alice"),
    )
    .unwrap();
    assert_eq!(auth.method, AuthMethod::DIGITAL_SIGNATURE);
    assert_eq!(auth.data[0] as usize, ALG_ID_ED25519.len());
    assert_eq!(&auth.data[1..8], ALG_ID_ED25519);
    assert_eq!(auth.data.len(), 1 + 7 + 64);
    let auth = ike::auth::make_auth(
        &sig(&kb, &ka),
        PrfAlg::HmacSha256,
        b"msg1",
        b"nonce",
        b"sk_pi",
        &Id::fqdn("bob"),
    )
    .unwrap();
    assert_eq!(&auth.data[1..13], ALG_ID_ECDSA_SHA256);
    assert_eq!(auth.data[13], 0x30, "a DER ECDSA-Sig-Value follows");
}

#[test]
fn wrong_peer_key_or_algorithm_fails_authentication() {
    let ka = Arc::new(SigningKey::generate(SignatureAlg::Ed25519).unwrap());
    let kb = Arc::new(SigningKey::generate(SignatureAlg::Ed25519).unwrap());
    let other = SigningKey::generate(SignatureAlg::Ed25519).unwrap();
    // Bob expects another key for Alice: he refuses with AUTHENTICATION_FAILED.
    let ((a, b), _) = run(sig(&ka, &kb), sig(&kb, &other));
    let AuthOutcome::Failed(e, _) = b else { panic!("accepted the wrong key") };
    assert_eq!(e, Error::PeerMisbehaved(PeerMisbehaved::AuthenticationFailed(14)));
    assert_eq!(
        a.unwrap_err(),
        Error::PeerMisbehaved(PeerMisbehaved::ErrorNotify(NotifyType::AUTHENTICATION_FAILED))
    );
    // Alice expects another key for Bob: Bob accepts her, she refuses his AUTH.
    let ((a, b), _) = run(sig(&ka, &other), sig(&kb, &ka));
    assert!(matches!(b, AuthOutcome::Established(..)));
    assert_eq!(a.unwrap_err(), Error::PeerMisbehaved(PeerMisbehaved::AuthenticationFailed(14)));
    // A PSK peer against a signature peer: methods differ, authentication fails.
    let ((_, b), _) = run(AuthConfig::Psk(Zeroizing::new(b"k".to_vec())), sig(&kb, &ka));
    assert!(matches!(
        b,
        AuthOutcome::Failed(Error::PeerMisbehaved(PeerMisbehaved::AuthenticationFailed(2)), _)
    ));
    // Bob configured to expect ECDSA from Alice, who signs with Ed25519: wrong AlgorithmIdentifier.
    let ec = SigningKey::generate(SignatureAlg::EcdsaP256Sha256).unwrap();
    let ((_, b), _) = run(sig(&ka, &kb), sig(&kb, &ec));
    assert!(matches!(b, AuthOutcome::Failed(..)));
}
