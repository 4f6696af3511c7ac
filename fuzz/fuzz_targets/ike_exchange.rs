//! Fuzz target: the IKEv2 initial exchanges (RFC 7296 §1.2) between two endpoints joined by
//! function calls, with a mutator between them. The first input byte picks which of the four
//! messages is hit and how (replaced by the input, bytes XORed in, or truncated); the receiving
//! state must drop it or fail cleanly, never panic, and after a drop the genuine message must
//! still complete the exchange.
#![no_main]

#[path = "common/mutate.rs"]
mod mutate;
use mutate::mutate;

use crypto::{AeadAlg, DhGroup, EncrAlg, EspSuite, IntegAlg, PrfAlg};
use ike::auth::CookieSecret;
use ike::{
    AuthConfig, AuthOutcome, ChildSuite, Config, Endpoints, IkeSuite, InitOutcome, Mode, Rejected,
    Responder, SaInitNext, initiator,
};
use libfuzzer_sys::fuzz_target;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use wire::ikev2::{Id, TrafficSelector};
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
        child_suites: vec![ChildSuite { esp, esn: false, pfs: None }],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    }
}


fuzz_target!(|input: &[u8]| {
    let Some((&sel, data)) = input.split_first() else { return };
    let (step, how) = (sel % 4, sel / 4);
    let p = crypto::default_provider();
    let a = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 500);
    let b = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)), 500);
    let (ea, eb) = (Endpoints { local: a, remote: b }, Endpoints { local: b, remote: a });
    let r = Responder::new(
        config("b", "a"),
        p,
        CookieSecret { version: 1, key: Zeroizing::new([1; 32]) },
    )
    .expect("responder");
    let (st, msg1) = initiator::start(config("a", "b"), p, ea, 0).expect("start");

    if step == 0 {
        let _ = r.handle_init(0, eb, &mutate(how, &msg1, data), how & 8 != 0);
    }
    let InitOutcome::HalfOpen(half, msg2) = r.handle_init(0, eb, &msg1, false) else {
        panic!("genuine init")
    };
    let st = if step == 1 {
        match st.handle(0, &mutate(how, &msg2, data)) {
            Err(Rejected::Dropped { state, .. }) => *state,
            _ => return,
        }
    } else {
        st
    };
    let SaInitNext::Auth(auth, msg3) = st.handle(0, &msg2).expect("genuine response") else {
        return;
    };
    let half = if step == 2 {
        // The identity peek a responder with several connections makes first: it must read
        // only what `handle` would accept, and never panic.
        let bad = mutate(how, &msg3, data);
        if let Some(id) = half.peer_id(&bad) {
            assert_eq!(half.peer_id(&msg3), Some(id), "a changed request named its sender");
        }
        match half.handle(&bad) {
            Err(Rejected::Dropped { state, .. }) => *state,
            _ => return,
        }
    } else {
        *half
    };
    let AuthOutcome::Established(_, msg4) = half.handle(&msg3).expect("genuine auth") else {
        panic!("genuine auth refused")
    };
    let auth = if step == 3 {
        match auth.handle(&mutate(how, &msg4, data)) {
            Err(Rejected::Dropped { state, .. }) => *state,
            _ => return,
        }
    } else {
        auth
    };
    auth.handle(&msg4).expect("genuine auth response");
});
