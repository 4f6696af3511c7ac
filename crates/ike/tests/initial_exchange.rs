//! Two endpoints on a virtual clock, joined by function calls: the initiator and responder of
//! RFC 7296 §1.2 set up an IKE SA and its first CHILD SA with a PSK, through a cookie (§2.6), an
//! INVALID_KE_PAYLOAD retry, a NAT (§2.23), tampering, a wrong key, and lost messages (§2.1).
#![allow(clippy::unwrap_used, reason = "test code")]

use crypto::{AeadAlg, CbcAlg, DhGroup, EncrAlg, EspSuite, HmacAlg, IntegAlg, PrfAlg};
use ike::auth::CookieSecret;
use ike::{
    AuthConfig, AuthOutcome, ChildSuite, Config, Endpoints, Error, IkeSuite, InitOutcome, Mode,
    PeerMisbehaved, Rejected, Responder, SaInitNext, initiator,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use wire::ikev2::{Id, NotifyType, TrafficSelector};
use zeroize::Zeroizing;

fn addr(last: u8, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, last)), port)
}

fn net(third: u8) -> TrafficSelector {
    TrafficSelector {
        ip_protocol: 0,
        start_port: 0,
        end_port: 65535,
        start_addr: IpAddr::V4(Ipv4Addr::new(10, 0, third, 0)),
        end_addr: IpAddr::V4(Ipv4Addr::new(10, 0, third, 255)),
    }
}

const GCM: IkeSuite = IkeSuite {
    encr: EncrAlg::Aead(AeadAlg::Aes256Gcm),
    integ: IntegAlg::None,
    prf: PrfAlg::HmacSha256,
    dh: DhGroup::Curve25519,
};
const CBC: IkeSuite = IkeSuite {
    encr: EncrAlg::Cbc(CbcAlg::Aes128),
    integ: IntegAlg::Hmac(HmacAlg::Sha256_128),
    prf: PrfAlg::HmacSha384,
    dh: DhGroup::Ecp256,
};

fn child_gcm() -> ChildSuite {
    ChildSuite {
        esp: EspSuite::new(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None).unwrap(),
        esn: true,
        pfs: None,
    }
}

fn child_cbc() -> ChildSuite {
    let esp =
        EspSuite::new(EncrAlg::Cbc(CbcAlg::Aes256), IntegAlg::Hmac(HmacAlg::Sha256_128)).unwrap();
    ChildSuite { esp, esn: false, pfs: None }
}

fn config(
    local: &str,
    remote: &str,
    psk: &[u8],
    local_ts: TrafficSelector,
    remote_ts: TrafficSelector,
) -> Config {
    Config {
        local_id: Id::fqdn(local),
        remote_id: Some(Id::fqdn(remote)),
        auth: AuthConfig::Psk(Zeroizing::new(psk.to_vec())),
        ike_suites: vec![GCM, CBC],
        more_children: Vec::new(),
        peer_eap: None,
        child_suites: vec![child_gcm(), child_cbc()],
        local_ts: vec![local_ts],
        remote_ts: vec![remote_ts],
        mode: Mode::Tunnel,
    }
}

fn alice() -> Config {
    config("alice.example", "bob.example", b"correct horse", net(1), TrafficSelector::any(false))
}

fn bob() -> Config {
    config("bob.example", "alice.example", b"correct horse", net(2), net(1))
}

fn responder(c: Config) -> Responder {
    let secret = CookieSecret { version: 1, key: Zeroizing::new([7; 32]) };
    Responder::new(c, crypto::default_provider(), secret).unwrap()
}

/// Alice at .1:500 talks to Bob at .2:500 with no NAT between them.
fn eps() -> (Endpoints, Endpoints) {
    (
        Endpoints { local: addr(1, 500), remote: addr(2, 500) },
        Endpoints { local: addr(2, 500), remote: addr(1, 500) },
    )
}

fn run(
    a: Config,
    b: Config,
    cookie: bool,
    ep_a: Endpoints,
    ep_b: Endpoints,
) -> (ike::Established, ike::Established) {
    let p = crypto::default_provider();
    let mut now = 1_000;
    let (mut st, mut req) = initiator::start(a, p, ep_a, now).unwrap();
    let r = responder(b);
    let (half, resp) = loop {
        now += 10;
        match r.handle_init(now, ep_b, &req, cookie) {
            InitOutcome::HalfOpen(h, resp) => break (h, resp),
            InitOutcome::Reply(reply, _) => match st.handle(now, &reply).unwrap() {
                SaInitNext::Resend(s, again) => (st, req) = (s, again),
                SaInitNext::Auth(..) => panic!("auth before the SA is chosen"),
            },
            InitOutcome::Drop(e) => panic!("responder dropped IKE_SA_INIT: {e}"),
        }
    };
    let SaInitNext::Auth(auth, auth_req) = st.handle(now, &resp).unwrap() else {
        panic!("no IKE_AUTH")
    };
    let AuthOutcome::Established(b_done, auth_resp) = half.handle(&auth_req).unwrap() else {
        panic!("refused")
    };
    let a_done = auth.handle(&auth_resp).unwrap();
    (a_done, *b_done)
}

fn assert_mirrored(a: &ike::Established, b: &ike::Established) {
    assert_eq!((a.ike.spi_i, a.ike.spi_r), (b.ike.spi_i, b.ike.spi_r));
    assert_eq!(a.ike.keys.sk_d.as_slice(), b.ike.keys.sk_d.as_slice());
    let (ac, bc) = (a.child.as_ref().unwrap(), b.child.as_ref().unwrap());
    assert_eq!((ac.spi_out, ac.spi_in), (bc.spi_in, bc.spi_out));
    assert_eq!(ac.enc_key_out.as_slice(), bc.enc_key_in.as_slice());
    assert_eq!(ac.auth_key_out.as_slice(), bc.auth_key_in.as_slice());
    assert_eq!(ac.enc_key_in.as_slice(), bc.enc_key_out.as_slice());
    assert_ne!(ac.enc_key_in.as_slice(), ac.enc_key_out.as_slice());
    assert_eq!((&ac.local_ts, &ac.remote_ts), (&bc.remote_ts, &bc.local_ts));
    assert_eq!(ac.suite, bc.suite);
    assert!(ac.spi_in > 255 && ac.spi_out > 255);
}

#[test]
fn psk_setup_installs_mirrored_child_sas() {
    let (ea, eb) = eps();
    let (a, b) = run(alice(), bob(), false, ea, eb);
    assert_mirrored(&a, &b);
    assert_eq!(a.ike.suite, GCM);
    assert_eq!(a.child.as_ref().unwrap().suite, child_gcm());
    assert_eq!(a.child.as_ref().unwrap().enc_key_out.len(), 20, "AES-128-GCM key + 4-byte salt");
    // Alice offered any remote address; Bob narrowed it to his net (§2.9).
    assert_eq!(a.child.as_ref().unwrap().remote_ts, vec![net(2)]);
    assert_eq!(a.child.as_ref().unwrap().local_ts, vec![net(1)]);
    assert_eq!(a.child.as_ref().unwrap().mode, Mode::Tunnel);
    assert_eq!(a.ike.nat, ike::NatStatus::default());
    assert_eq!(b.ike.nat, ike::NatStatus::default());
}

#[test]
fn cbc_suites_and_transport_mode() {
    let (ea, eb) = eps();
    let mut a = alice();
    a.ike_suites = vec![CBC];
    a.child_suites = vec![child_cbc()];
    a.mode = Mode::Transport;
    let mut b = bob();
    b.mode = Mode::Transport;
    let (a, b) = run(a, b, false, ea, eb);
    assert_mirrored(&a, &b);
    assert_eq!((a.ike.suite, a.child.as_ref().unwrap().suite), (CBC, child_cbc()));
    assert_eq!(
        (a.child.as_ref().unwrap().mode, b.child.as_ref().unwrap().mode),
        (Mode::Transport, Mode::Transport)
    );
    assert_eq!(
        (a.child.as_ref().unwrap().enc_key_out.len(), a.child.as_ref().unwrap().auth_key_out.len()),
        (32, 32)
    );
}

#[test]
fn cookie_round_trip_when_the_responder_asks() {
    let (ea, eb) = eps();
    // Without the cookie the request is refused statelessly, with one COOKIE notify.
    let (_, req) = initiator::start(alice(), crypto::default_provider(), ea, 0).unwrap();
    let InitOutcome::Reply(reply, _) = responder(bob()).handle_init(0, eb, &req, true) else {
        panic!()
    };
    let m = wire::ikev2::Message::parse(&reply).unwrap();
    assert_eq!(m.notify(NotifyType::COOKIE).unwrap().data.len(), 33);
    assert_eq!((m.payloads.len(), m.header.spi_r), (1, 0));
    let (a, b) = run(alice(), bob(), true, ea, eb);
    assert_mirrored(&a, &b);
}

#[test]
fn invalid_ke_payload_makes_the_initiator_switch_group() {
    let (ea, eb) = eps();
    let mut b = bob();
    b.ike_suites = vec![CBC]; // group 19 only; Alice's first KE is group 31
    let (a, bb) = run(alice(), b, false, ea, eb);
    assert_mirrored(&a, &bb);
    assert_eq!(a.ike.suite.dh, DhGroup::Ecp256);
}

/// IKE SAs made with groups 14, 15 and 21 (modp2048, modp3072, ecp521): the KE payloads carry
/// the group's full length (RFC 7296 §3.4: "The length of the Diffie-Hellman public value for
/// MODP groups MUST be equal to the length of the prime modulus over which the exponentiation
/// was performed, prepending zero bits to the value if necessary"), both ends derive the same
/// keys, and a responder that takes only modp2048 makes an initiator whose first KE was x25519
/// switch to it after INVALID_KE_PAYLOAD.
#[test]
fn modp_and_ecp521_ike_sas() {
    let (ea, eb) = eps();
    for g in [DhGroup::Modp2048, DhGroup::Modp3072, DhGroup::Ecp521] {
        let suite = IkeSuite { dh: g, ..CBC };
        let (mut a, mut b) = (alice(), bob());
        a.ike_suites = vec![suite];
        b.ike_suites = vec![suite];
        let (_, req) = initiator::start(a.clone(), crypto::default_provider(), ea, 0).unwrap();
        let ke = wire::ikev2::Message::parse(&req)
            .unwrap()
            .payloads
            .iter()
            .find_map(|p| match p {
                wire::ikev2::Payload::Ke(k) => Some((k.dh_group, k.data.len())),
                _ => None,
            })
            .unwrap();
        assert_eq!(ke, (g.ike_id(), g.public_len()));
        let (a, b) = run(a, b, false, ea, eb);
        assert_mirrored(&a, &b);
        assert_eq!((a.ike.suite.dh, b.ike.suite.dh), (g, g));
    }
    let modp = IkeSuite { dh: DhGroup::Modp2048, ..CBC };
    let mut a = alice();
    a.ike_suites = vec![GCM, modp];
    let mut b = bob();
    b.ike_suites = vec![modp];
    let (a, b) = run(a, b, false, ea, eb);
    assert_mirrored(&a, &b);
    assert_eq!(a.ike.suite, modp);
}

#[test]
fn nat_between_them_is_detected_on_both_sides() {
    // Alice sends from 10.0.1.1:500; Bob sees 192.0.2.1:4500 (a NAT rewrote it).
    let ea = Endpoints {
        local: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)), 500),
        remote: addr(2, 500),
    };
    let eb = Endpoints { local: addr(2, 500), remote: addr(1, 4500) };
    let (a, b) = run(alice(), bob(), false, ea, eb);
    assert!(a.ike.nat.local_behind_nat && !a.ike.nat.remote_behind_nat);
    assert!(b.ike.nat.remote_behind_nat && !b.ike.nat.local_behind_nat);
}

#[test]
fn wrong_psk_is_answered_with_authentication_failed() {
    let p = crypto::default_provider();
    let (ea, eb) = eps();
    let mut b = bob();
    b.auth = AuthConfig::Psk(Zeroizing::new(b"wrong".to_vec()));
    let (st, req) = initiator::start(alice(), p, ea, 0).unwrap();
    let InitOutcome::HalfOpen(half, resp) = responder(b).handle_init(0, eb, &req, false) else {
        panic!()
    };
    let SaInitNext::Auth(auth, auth_req) = st.handle(0, &resp).unwrap() else { panic!() };
    let AuthOutcome::Failed(e, reply) = half.handle(&auth_req).unwrap() else {
        panic!("accepted a wrong PSK")
    };
    assert_eq!(e, Error::PeerMisbehaved(PeerMisbehaved::AuthenticationFailed(2)));
    let Err(Rejected::Failed(e)) = auth.handle(&reply) else { panic!() };
    assert_eq!(
        e,
        Error::PeerMisbehaved(PeerMisbehaved::ErrorNotify(NotifyType::AUTHENTICATION_FAILED))
    );
}

#[test]
fn tampered_and_stray_messages_are_dropped_and_the_state_kept() {
    let p = crypto::default_provider();
    let (ea, eb) = eps();
    let (st, req) = initiator::start(alice(), p, ea, 0).unwrap();
    let r = responder(bob());
    assert!(matches!(
        r.handle_init(0, eb, &req[..20], false),
        InitOutcome::Drop(Error::InvalidMessage(_))
    ));
    let InitOutcome::HalfOpen(half, resp) = r.handle_init(0, eb, &req, false) else { panic!() };
    assert_eq!(half.retransmitted_init(&req), Some(&resp[..]));
    // The initiator drops garbage and its own request, then takes the real response.
    let Err(Rejected::Dropped { state: st, .. }) = st.handle(0, &[0u8; 40]) else { panic!() };
    let st = *st;
    let Err(Rejected::Dropped { state: st, .. }) = st.handle(0, &req) else { panic!() };
    let st = *st;
    let SaInitNext::Auth(auth, auth_req) = st.handle(0, &resp).unwrap() else { panic!() };
    // A flipped bit in IKE_AUTH: the responder drops it and keeps waiting.
    let mut bad = auth_req.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let Err(Rejected::Dropped { state: half, error }) = half.handle(&bad) else { panic!() };
    let half = *half;
    assert_eq!(error, Error::PeerMisbehaved(PeerMisbehaved::IntegrityCheckFailed));
    let AuthOutcome::Established(b, auth_resp) = half.handle(&auth_req).unwrap() else { panic!() };
    let mut bad = auth_resp.clone();
    bad[40] ^= 1;
    let Err(Rejected::Dropped { state: auth, .. }) = auth.handle(&bad) else { panic!() };
    let auth = *auth;
    let a = auth.handle(&auth_resp).unwrap();
    assert_mirrored(&a, &b);
}

#[test]
fn lost_requests_are_retransmitted_on_the_virtual_clock() {
    let p = crypto::default_provider();
    let (ea, eb) = eps();
    let (mut st, req) = initiator::start(alice(), p, ea, 5_000).unwrap();
    // The first request is lost; at the deadline the same bytes go out again.
    let t = st.retransmit().deadline_ms();
    assert_eq!(t, 6_000);
    assert_eq!(st.retransmit().on_timeout(t - 1).unwrap(), None);
    let again = st.retransmit().on_timeout(t).unwrap().unwrap().to_vec();
    assert_eq!(again, req);
    let InitOutcome::HalfOpen(half, resp) = responder(bob()).handle_init(t, eb, &again, false)
    else {
        panic!()
    };
    let SaInitNext::Auth(mut auth, auth_req) = st.handle(t, &resp).unwrap() else { panic!() };
    let t2 = auth.retransmit().deadline_ms();
    assert_eq!(auth.retransmit().on_timeout(t2).unwrap().unwrap(), &auth_req[..]);
    let AuthOutcome::Established(_, auth_resp) = half.handle(&auth_req).unwrap() else { panic!() };
    auth.handle(&auth_resp).unwrap();
}

#[test]
fn no_common_proposal_and_unacceptable_selectors() {
    let p = crypto::default_provider();
    let (ea, eb) = eps();
    let mut b = bob();
    b.ike_suites = vec![IkeSuite { prf: PrfAlg::HmacSha512, ..GCM }];
    let (st, req) = initiator::start(alice(), p, ea, 0).unwrap();
    let InitOutcome::Reply(reply, _) = responder(b).handle_init(0, eb, &req, false) else {
        panic!()
    };
    let Err(Rejected::Failed(e)) = st.handle(0, &reply) else { panic!() };
    assert_eq!(
        e,
        Error::PeerMisbehaved(PeerMisbehaved::ErrorNotify(NotifyType::NO_PROPOSAL_CHOSEN))
    );

    let mut b = bob();
    b.remote_ts = vec![net(9)]; // Bob protects only 10.0.9/24 on Alice's side
    let (st, req) = initiator::start(alice(), p, ea, 0).unwrap();
    let InitOutcome::HalfOpen(half, resp) = responder(b).handle_init(0, eb, &req, false) else {
        panic!()
    };
    let SaInitNext::Auth(auth, auth_req) = st.handle(0, &resp).unwrap() else { panic!() };
    // §2.21.3 / §1.2: the CHILD SA fails, the IKE SA is made all the same, on both sides.
    let AuthOutcome::Established(eb, reply) = half.handle(&auth_req).unwrap() else { panic!() };
    assert!(eb.child.is_none());
    let ts_unacceptable =
        Error::PeerMisbehaved(PeerMisbehaved::ErrorNotify(NotifyType::TS_UNACCEPTABLE));
    assert_eq!(eb.child_error, Some(ts_unacceptable.clone()));
    let ea = auth.handle(&reply).unwrap();
    assert!(ea.child.is_none());
    assert_eq!(ea.child_error, Some(ts_unacceptable));
    assert_eq!((ea.ike.spi_i, ea.ike.spi_r), (eb.ike.spi_i, eb.ike.spi_r));
}

/// The ikev2_decryption_table line carries both SPIs and the SK keys in hex, in the layout of
/// strongSwan's save-keys plugin.
#[test]
fn wireshark_line_for_the_ike_sa() {
    let (ea, eb) = eps();
    let (a, _) = run(alice(), bob(), false, ea, eb);
    let line = ike::wireshark::ikev2_decryption_line(&a.ike).unwrap();
    let k = &a.ike.keys;
    let want = format!(
        "{:016x},{:016x},{},{},\"AES-GCM-256 with 16 octet ICV [RFC5282]\",,,\"NONE [RFC4306]\"",
        a.ike.spi_i,
        a.ike.spi_r,
        hex::encode(&k.sk_ei),
        hex::encode(&k.sk_er)
    );
    assert_eq!(line, want);
}

/// A responder with several connections open to any peer answers IKE_SA_INIT with one of them,
/// then reads the IDi of the IKE_AUTH request and continues under the connection configured
/// for that identity; without the switch the wrong connection's identity check fails.
#[test]
fn responder_picks_the_connection_by_the_initiators_identity() {
    let p = crypto::default_provider();
    let (ep_a, ep_b) = eps();
    let carol = config("bob.example", "carol.example", b"carol's key", net(2), net(3));
    for switch in [true, false] {
        let (st, req) = initiator::start(alice(), p, ep_a, 1_000).unwrap();
        let InitOutcome::HalfOpen(mut half, resp) =
            responder(carol.clone()).handle_init(1_010, ep_b, &req, false)
        else {
            panic!("no half-open SA")
        };
        let SaInitNext::Auth(auth, auth_req) = st.handle(1_020, &resp).unwrap() else {
            panic!("no IKE_AUTH")
        };
        assert_eq!(half.peer_id(&auth_req), Some(Id::fqdn("alice.example")));
        // Bytes that are not this SA's IKE_AUTH request name nobody.
        assert_eq!(half.peer_id(&resp), None);
        let mut tampered = auth_req.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(half.peer_id(&tampered), None);
        if switch {
            // A connection that never offered the negotiated IKE suite cannot take over.
            let mut other = bob();
            other.ike_suites = vec![CBC];
            assert!(half.reconfigure(other).is_err());
            half.reconfigure(bob()).unwrap();
        }
        match half.handle(&auth_req).unwrap() {
            AuthOutcome::Established(b, reply) => {
                assert!(switch, "carol's connection accepted alice");
                let a = auth.handle(&reply).unwrap();
                assert_mirrored(&a, &b);
            }
            AuthOutcome::Failed(e, _) => {
                assert!(!switch, "refused after the switch: {e}");
                assert_eq!(e, Error::PeerMisbehaved(PeerMisbehaved::UnexpectedIdentity));
            }
            AuthOutcome::Eap(..) => panic!("no EAP configured"),
        }
    }
}
