//! Fuzz target: an established IKE SA (RFC 7296 §1.3–1.4) fed authenticated but arbitrary
//! content. The input's payload chain is sealed with the peer's real keys and the right message
//! ID, as a CREATE_CHILD_SA or INFORMATIONAL request, or as the response to our outstanding
//! CHILD or IKE rekey. The session must answer, drop or fail the request cleanly, never panic,
//! and keep its two ends in agreement enough to answer a liveness check afterwards.
#![no_main]

use crypto::{AeadAlg, DhGroup, EncrAlg, EspSuite, IntegAlg, PrfAlg};
use ike::auth::CookieSecret;
use ike::sk::SkKeys;
use ike::{
    AuthConfig, AuthOutcome, ChildSuite, Config, Endpoints, IkeSuite, InitOutcome, Mode, Request,
    Responder, Role, SaInitNext, Session, initiator,
};
use libfuzzer_sys::fuzz_target;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use wire::ikev2::{ExchangeType, Flags, Header, Id, PayloadType, TrafficSelector, parse_chain};
use zeroize::Zeroizing;

fn config(local: &str, remote: &str) -> Config {
    let esp = EspSuite::new(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None).expect("suite");
    Config {
        local_id: Id::fqdn(local),
        remote_id: Some(Id::fqdn(remote)),
        auth: AuthConfig::Psk(Zeroizing::new(b"fuzz".to_vec())),
        ike_suites: vec![IkeSuite {
            encr: EncrAlg::Aead(AeadAlg::Aes128Gcm),
            integ: IntegAlg::None,
            prf: PrfAlg::HmacSha256,
            dh: DhGroup::Curve25519,
        }],
        more_children: Vec::new(),
        peer_eap: None,
        child_suites: vec![ChildSuite { esp, esn: false, pfs: Some(DhGroup::Curve25519) }],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    }
}

fn sessions() -> (Session, Session) {
    let p = crypto::default_provider();
    let a = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 500);
    let b = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)), 500);
    let (st, m1) =
        initiator::start(config("a", "b"), p, Endpoints { local: a, remote: b }, 0).expect("start");
    let secret = CookieSecret { version: 1, key: Zeroizing::new([1; 32]) };
    let r = Responder::new(config("b", "a"), p, secret).expect("responder");
    let InitOutcome::HalfOpen(half, m2) =
        r.handle_init(0, Endpoints { local: b, remote: a }, &m1, false)
    else {
        panic!("init")
    };
    let SaInitNext::Auth(auth, m3) = st.handle(0, &m2).expect("response") else { panic!("auth") };
    let AuthOutcome::Established(eb, m4) = half.handle(&m3).expect("auth") else {
        panic!("refused")
    };
    let ea = auth.handle(&m4).expect("auth response");
    (Session::new(config("a", "b"), p, ea).0, Session::new(config("b", "a"), p, *eb).0)
}

/// Seals `payloads` as `from` would send them.
fn forge(
    from: &Session,
    ex: ExchangeType,
    response: bool,
    id: u32,
    payloads: &[wire::ikev2::Payload],
) -> Vec<u8> {
    let p = crypto::default_provider();
    let ike = from.ike();
    let mut sk = SkKeys::new(p, &ike.suite, &ike.keys, ike.role).expect("keys");
    let flags = Flags { initiator: ike.role == Role::Initiator, version: false, response };
    let h = Header { spi_i: ike.spi_i, spi_r: ike.spi_r, exchange_type: ex, flags, message_id: id };
    sk.seal(p, &h, payloads).expect("seal")
}

fuzz_target!(|input: &[u8]| {
    let Some((&sel, data)) = input.split_first() else { return };
    let Some((&first, chain)) = data.split_first() else { return };
    let Ok(payloads) = parse_chain(PayloadType(first), chain) else { return };
    let (mut a, mut b) = sessions();
    let ex = if sel & 1 == 0 { ExchangeType::INFORMATIONAL } else { ExchangeType::CREATE_CHILD_SA };
    if sel & 2 == 0 {
        // A request of `a`, as `b` expects it next.
        let msg = forge(&a, ex, false, b.ike().next_peer_request_id, &payloads);
        let _ = b.handle(0, &msg);
    } else {
        // The answer to `a`'s outstanding rekey.
        let req = if sel & 4 == 0 {
            Request::RekeyChild(a.children()[0].spi_in)
        } else {
            Request::RekeyIke
        };
        let out = a.request(0, req).expect("request");
        if out.send.is_empty() {
            return;
        }
        let id = a.ike().next_request_id.wrapping_sub(1);
        let msg = forge(&b, ExchangeType::CREATE_CHILD_SA, true, id, &payloads);
        let _ = a.handle(0, &msg);
    }
    // Whatever happened, a liveness check from `b` is answered or refused without a panic.
    if let Ok(out) = b.request(1, Request::Liveness) {
        for d in &out.send {
            if let Ok(reply) = a.handle(1, d) {
                for r in &reply.send {
                    let _ = b.handle(1, r);
                }
            }
        }
    }
});
