//! IKE_AUTH with EAP-MSCHAPv2 on the responder (RFC 7296 §2.16), through `ike::assoc`: a road
//! warrior written out here message by message (IKE_SA_INIT, then IKE_AUTH without AUTH, the
//! EAP rounds, and AUTH keyed by the MSK) against an endpoint with a pool. The MS-CHAPv2 values
//! the client computes come from `ike::eap::mschapv2`, checked against RFC 2759 §9.2 in its unit
//! tests; the independent peer is strongSwan (crates/hipsec/tests/interop_strongswan_eap.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod sim;

use crypto::{KeyExchange, SignatureAlg, SigningKey};
use ike::assoc::{Endpoint, Event};
use ike::auth::{PeerCredentials, psk_auth, verify_auth};
use ike::eap::{EapConfig, EapUser, mschapv2};
use ike::keys::{IkeSaKeys, skeyseed};
use ike::pool::PoolConfig;
use ike::sk::SkKeys;
use ike::{AuthConfig, ChildSuite, Role, Time};
use sim::{Timers, connection, endpoint_with};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use wire::ikev2::{
    Auth, AuthMethod, CfgType, Eap, EapCode, EapType, ExchangeType, Flags, Header, Id, Ke, Message,
    MsChapV2, NotifyType, Payload, Sa, TrafficSelector, Ts,
};

const SERVER: usize = 1;
const PEER_CHALLENGE: [u8; 16] = [0x21; 16];

fn client_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7)), 500)
}

/// The gateway: signs with an Ed25519 key, its peers authenticate with EAP-MSCHAPv2 (user
/// carol), pool `rw` of two addresses.
fn server(key: &Arc<SigningKey>) -> Endpoint {
    let mut c = connection(SERVER, false, &Timers::short());
    c.any_peer = true;
    c.ike.remote_id = None;
    c.ike.auth = AuthConfig::Signature {
        key: key.clone(),
        peer_public_key: key.public_key(),
        peer_alg: key.alg(),
    };
    let users = vec![EapUser::new("carol", "carol-s3cret")];
    c.ike.peer_eap = Some(EapConfig { users: Arc::new(users) });
    c.pools = vec!["rw".into()];
    let mut ep = endpoint_with(Time::ZERO, SERVER, c, 5);
    let pool = PoolConfig::parse("rw", "10.3.0.0/30", Vec::new()).unwrap();
    ep.set_pools(vec![pool]);
    ep
}

/// The road warrior's side of one IKE SA, kept by hand.
struct Client {
    sk: SkKeys,
    keys: IkeSaKeys,
    suite: ike::IkeSuite,
    spi_i: u64,
    spi_r: u64,
    msg1: Vec<u8>,
    msg2: Vec<u8>,
    ni: Vec<u8>,
    nr: Vec<u8>,
    next_id: u32,
    idi: Id,
    events: Vec<Event>,
}

fn exchange(server: &mut Endpoint, bytes: &[u8], events: &mut Vec<Event>) -> Vec<u8> {
    server.handle(Time::ZERO, client_addr(), bytes).unwrap();
    let t = server.poll_transmit().expect("an answer");
    assert!(server.poll_transmit().is_none());
    events.extend(std::iter::from_fn(|| server.poll_event()));
    t.payload
}

impl Client {
    fn init(server: &mut Endpoint) -> Client {
        let p = crypto::default_provider();
        let suite = connection(0, false, &Timers::short()).ike.ike_suites[0];
        let ke = KeyExchange::generate(suite.dh).unwrap();
        let ni = vec![7u8; 32];
        let spi_i = 0x0102_0304_0506_0708;
        let header = Header {
            spi_i,
            spi_r: 0,
            exchange_type: ExchangeType::IKE_SA_INIT,
            flags: Flags { initiator: true, version: false, response: false },
            message_id: 0,
        };
        let payloads = vec![
            Payload::Sa(Sa { proposals: vec![suite.to_proposal(1, Vec::new()).unwrap()] }),
            Payload::Ke(Ke { dh_group: suite.dh.ike_id(), data: ke.public_key().to_vec() }),
            Payload::Nonce(ni.clone()),
        ];
        let msg1 = Message { header, payloads }.to_vec().unwrap();
        let mut events = Vec::new();
        let msg2 = exchange(server, &msg1, &mut events);
        let m2 = Message::parse(&msg2).unwrap();
        let spi_r = m2.header.spi_r;
        let find = |f: fn(&Payload) -> Option<Vec<u8>>| m2.payloads.iter().find_map(f).unwrap();
        let ke_r = find(|p| if let Payload::Ke(k) = p { Some(k.data.clone()) } else { None });
        let nr = find(|p| if let Payload::Nonce(n) = p { Some(n.clone()) } else { None });
        let g = ke.agree(&ke_r).unwrap();
        let seed = skeyseed(suite.prf, &ni, &nr, g.as_bytes());
        let keys = IkeSaKeys::derive(&suite, &seed, &ni, &nr, spi_i, spi_r).unwrap();
        let sk = SkKeys::new(p, &suite, &keys, Role::Initiator).unwrap();
        let idi = Id::ip(client_addr().ip());
        Client { sk, keys, suite, spi_i, spi_r, msg1, msg2, ni, nr, next_id: 1, idi, events }
    }

    fn seal(&mut self, inner: &[Payload]) -> Vec<u8> {
        let header = Header {
            spi_i: self.spi_i,
            spi_r: self.spi_r,
            exchange_type: ExchangeType::IKE_AUTH,
            flags: Flags { initiator: true, version: false, response: false },
            message_id: self.next_id,
        };
        self.next_id += 1;
        self.sk.seal(crypto::default_provider(), &header, inner).unwrap()
    }

    /// Sends one IKE_AUTH request, returns the response's payloads.
    fn request(&mut self, server: &mut Endpoint, inner: &[Payload]) -> Vec<Payload> {
        let bytes = self.seal(inner);
        self.send(server, &bytes)
    }

    fn send(&mut self, server: &mut Endpoint, bytes: &[u8]) -> Vec<Payload> {
        let reply = exchange(server, bytes, &mut self.events);
        let (h, payloads) = self.sk.open(&reply).unwrap();
        assert!(h.flags.response && h.message_id == self.next_id - 1, "{h:?}");
        payloads
    }

    /// IKE_AUTH without AUTH (§2.16): IDi, CP(CFG_REQUEST), SA, TSi, TSr.
    fn first_auth(&mut self, server: &mut Endpoint) -> Vec<Payload> {
        let child = connection(0, false, &Timers::short()).ike.child_suites[0];
        let child = ChildSuite { pfs: None, ..child };
        let any = TrafficSelector::any(false);
        let inner = vec![
            Payload::IdI(self.idi.clone()),
            ike::cfg::request(&[IpAddr::V4(Ipv4Addr::UNSPECIFIED)]),
            Payload::Sa(Sa { proposals: vec![child.to_proposal(1, 0x1234_5678).unwrap()] }),
            Payload::TsI(Ts { selectors: vec![any] }),
            Payload::TsR(Ts { selectors: vec![any] }),
        ];
        self.request(server, &inner)
    }
}

fn eap_of(payloads: &[Payload]) -> Eap {
    payloads
        .iter()
        .find_map(|p| if let Payload::Eap(e) = p { Some(e.clone()) } else { None })
        .unwrap_or_else(|| panic!("no EAP payload in {payloads:#?}"))
}

fn notify_types(payloads: &[Payload]) -> Vec<NotifyType> {
    payloads
        .iter()
        .filter_map(|p| if let Payload::Notify(n) = p { Some(n.notify_type) } else { None })
        .collect()
}

fn mschap(eap: &Eap) -> MsChapV2 {
    assert_eq!(eap.eap_type(), Some(EapType::MSCHAPV2), "{eap:?}");
    MsChapV2::parse(eap.code, eap.type_data()).unwrap()
}

/// Runs IKE_SA_INIT, the first IKE_AUTH and Identity; returns the client and the challenge.
fn up_to_challenge(server: &mut Endpoint, key: &SigningKey) -> (Client, Eap, [u8; 16], u8) {
    let mut c = Client::init(server);
    let r1 = c.first_auth(server);
    // §2.16: the responder answers with its identity, certificate or key and AUTH, and the
    // first EAP message: here Request/Identity (RFC 3748 §5.1).
    let idr = r1.iter().find_map(|p| if let Payload::IdR(i) = p { Some(i.clone()) } else { None });
    let idr = idr.expect("IDr");
    let auth =
        r1.iter().find_map(|p| if let Payload::Auth(a) = p { Some(a.clone()) } else { None });
    let auth = auth.expect("AUTH");
    assert_eq!(auth.method, AuthMethod::DIGITAL_SIGNATURE);
    let ours = AuthConfig::Signature {
        key: Arc::new(SigningKey::generate(SignatureAlg::Ed25519).unwrap()),
        peer_public_key: key.public_key(),
        peer_alg: key.alg(),
    };
    let none = PeerCredentials { certs: &[], now_ms: 0 };
    let verified =
        verify_auth(&ours, c.suite.prf, &c.msg2, &c.ni, &c.keys.sk_pr, &idr, &auth, none);
    assert_eq!(verified, Ok(()), "the responder's signature over its IKE_SA_INIT");
    let id_req = eap_of(&r1);
    assert_eq!((id_req.code, id_req.eap_type()), (EapCode::REQUEST, Some(EapType::IDENTITY)));
    assert!(!r1.iter().any(|p| matches!(p, Payload::Sa(_) | Payload::Cp(_))), "{r1:#?}");

    let id_resp = Eap::response(id_req.identifier, EapType::IDENTITY, b"carol".to_vec());
    let r2 = c.request(server, &[Payload::Eap(id_resp)]);
    let ch = eap_of(&r2);
    assert_eq!(ch.identifier, id_req.identifier.wrapping_add(1));
    let MsChapV2::Challenge { id, challenge, name } = mschap(&ch) else { panic!("{ch:?}") };
    assert_eq!(name, b"hipsec");
    (c, ch, challenge, id)
}

fn response(ch: &Eap, challenge: &[u8; 16], id: u8, password: &str) -> Payload {
    let hash = mschapv2::nt_password_hash(password);
    let nt = mschapv2::generate_nt_response(challenge, &PEER_CHALLENGE, b"carol", &hash);
    let m = MsChapV2::Response {
        id,
        peer_challenge: PEER_CHALLENGE,
        nt_response: nt,
        flags: 0,
        name: b"carol".to_vec(),
    };
    Payload::Eap(Eap::response(ch.identifier, EapType::MSCHAPV2, m.to_bytes().unwrap()))
}

#[test]
fn mschapv2_road_warrior_gets_a_lease_under_its_eap_identity() {
    let key = Arc::new(SigningKey::generate(SignatureAlg::Ed25519).unwrap());
    let mut s = server(&key);
    let (mut c, ch, challenge, id) = up_to_challenge(&mut s, &key);
    assert!(s.leases().is_empty(), "nothing leased before EAP succeeds");

    let r3 = c.request(&mut s, &[response(&ch, &challenge, id, "carol-s3cret")]);
    let ok = eap_of(&r3);
    let MsChapV2::SuccessRequest { message, .. } = mschap(&ok) else { panic!("{ok:?}") };
    // RFC 2759 §5: the Success packet's message is "S=<auth_string> M=<message>", the
    // authenticator response proving the server knows the password.
    let hash = mschapv2::nt_password_hash("carol-s3cret");
    let nt = mschapv2::generate_nt_response(&challenge, &PEER_CHALLENGE, b"carol", &hash);
    let a = mschapv2::authenticator_response(&hash, &nt, &PEER_CHALLENGE, &challenge, b"carol");
    assert_eq!(&message[..42], &mschapv2::success_message(&a, "")[..42]);

    let ack = Eap::response(ok.identifier, EapType::MSCHAPV2, vec![3]);
    let r4 = c.request(&mut s, &[Payload::Eap(ack)]);
    assert_eq!(eap_of(&r4), Eap::result(ok.identifier, true), "EAP Success");

    // A retransmitted request is answered with the same response (§2.1).
    let msk = mschapv2::msk(&hash, &nt);
    let prf = c.suite.prf;
    let my_auth = psk_auth(prf, &msk, &c.msg1, &c.nr, &c.keys.sk_pi, &c.idi);
    let last = c.seal(&[Payload::Auth(Auth {
        method: AuthMethod::SHARED_KEY_MIC,
        data: my_auth.to_vec(),
    })]);
    let r5 = c.send(&mut s, &last);
    // §2.16: after EAP both AUTHs are keyed by the MSK.
    let idr = Id::fqdn("bob");
    let want = psk_auth(prf, &msk, &c.msg2, &c.ni, &c.keys.sk_pr, &idr);
    let got = r5.iter().find_map(|p| if let Payload::Auth(a) = p { Some(a.clone()) } else { None });
    assert_eq!(got.map(|a| a.data), Some(want.to_vec()));
    let cp = r5.iter().find_map(|p| if let Payload::Cp(cp) = p { Some(cp.clone()) } else { None });
    assert_eq!(cp.map(|c| c.cfg_type), Some(CfgType::CFG_REPLY), "{r5:#?}");
    assert!(r5.iter().any(|p| matches!(p, Payload::Sa(_))));
    let leased = ike::cfg::read_reply(&r5);
    assert_eq!(leased.addrs, vec![("10.3.0.1".parse().unwrap(), 32)]);
    let leases = s.leases();
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].identity, Id::fqdn("carol"), "leased to the EAP user, not IDi");
    assert!(c.events.iter().any(|e| matches!(e, Event::Established { .. })), "{:#?}", c.events);
    assert!(c.events.iter().any(|e| matches!(e, Event::InstallChild { .. })));
}

#[test]
fn wrong_password_is_eap_failure_then_authentication_failed_and_no_lease() {
    let key = Arc::new(SigningKey::generate(SignatureAlg::Ed25519).unwrap());
    let mut s = server(&key);
    let (mut c, ch, challenge, id) = up_to_challenge(&mut s, &key);
    let r3 = c.request(&mut s, &[response(&ch, &challenge, id, "guess")]);
    assert_eq!(eap_of(&r3).code, EapCode::FAILURE);
    assert_eq!(notify_types(&r3), vec![NotifyType::AUTHENTICATION_FAILED]);
    assert!(s.leases().is_empty());
    assert!(c.events.iter().any(|e| matches!(e, Event::Down { .. })), "{:#?}", c.events);
    assert!(!c.events.iter().any(|e| matches!(e, Event::Established { .. })));
}

#[test]
fn unknown_user_fails_like_a_wrong_password() {
    let key = Arc::new(SigningKey::generate(SignatureAlg::Ed25519).unwrap());
    let mut s = server(&key);
    let (mut c, ch, challenge, id) = up_to_challenge(&mut s, &key);
    let hash = mschapv2::nt_password_hash("carol-s3cret");
    let nt = mschapv2::generate_nt_response(&challenge, &PEER_CHALLENGE, b"mallory", &hash);
    let m = MsChapV2::Response {
        id,
        peer_challenge: PEER_CHALLENGE,
        nt_response: nt,
        flags: 0,
        name: b"mallory".to_vec(),
    };
    let eap = Eap::response(ch.identifier, EapType::MSCHAPV2, m.to_bytes().unwrap());
    let r3 = c.request(&mut s, &[Payload::Eap(eap)]);
    assert_eq!(eap_of(&r3).code, EapCode::FAILURE);
    assert_eq!(notify_types(&r3), vec![NotifyType::AUTHENTICATION_FAILED]);
}

#[test]
fn retransmitted_eap_round_gets_the_same_answer_and_a_wrong_msk_auth_is_refused() {
    let key = Arc::new(SigningKey::generate(SignatureAlg::Ed25519).unwrap());
    let mut s = server(&key);
    let (mut c, ch, challenge, id) = up_to_challenge(&mut s, &key);
    let req = c.seal(&[response(&ch, &challenge, id, "carol-s3cret")]);
    let first = exchange(&mut s, &req, &mut c.events);
    let again = exchange(&mut s, &req, &mut c.events);
    assert_eq!(first, again, "§2.1: a retransmitted request gets the same response");
    let (_, r3) = c.sk.open(&first).unwrap();
    let ok = eap_of(&r3);
    let ack = Eap::response(ok.identifier, EapType::MSCHAPV2, vec![3]);
    c.request(&mut s, &[Payload::Eap(ack)]);
    // An AUTH keyed by anything but the MSK.
    let bad = psk_auth(c.suite.prf, b"not the msk", &c.msg1, &c.nr, &c.keys.sk_pi, &c.idi);
    let r5 = c.request(
        &mut s,
        &[Payload::Auth(Auth { method: AuthMethod::SHARED_KEY_MIC, data: bad.to_vec() })],
    );
    assert_eq!(notify_types(&r5), vec![NotifyType::AUTHENTICATION_FAILED]);
    assert!(s.leases().iter().all(|l| l.holder.is_none()), "the lease is released");
}

#[test]
fn a_nak_ends_in_eap_failure_and_auth_where_eap_is_required_is_refused() {
    let key = Arc::new(SigningKey::generate(SignatureAlg::Ed25519).unwrap());
    let mut s = server(&key);
    // RFC 3748 §5.3.1: "The legacy Nak Type is valid only in Response messages. It is sent in
    // reply to a Request where the desired authentication Type is unacceptable." Here only
    // EAP-MSCHAPv2 is offered, so that ends it.
    let mut c = Client::init(&mut s);
    let r1 = c.first_auth(&mut s);
    let id_req = eap_of(&r1);
    let id_resp = Eap::response(id_req.identifier, EapType::IDENTITY, b"carol".to_vec());
    let r2 = c.request(&mut s, &[Payload::Eap(id_resp)]);
    let ch = eap_of(&r2);
    let nak = Eap::response(ch.identifier, EapType::NAK, vec![EapType::MD5_CHALLENGE.0]);
    let r3 = c.request(&mut s, &[Payload::Eap(nak)]);
    assert_eq!(eap_of(&r3).code, EapCode::FAILURE);
    assert_eq!(notify_types(&r3), vec![NotifyType::AUTHENTICATION_FAILED]);

    // A first IKE_AUTH with AUTH (a PSK or certificate client) on this connection.
    let mut c = Client::init(&mut s);
    let any = TrafficSelector::any(false);
    let child = connection(0, false, &Timers::short()).ike.child_suites[0];
    let inner = vec![
        Payload::IdI(c.idi.clone()),
        Payload::Auth(Auth { method: AuthMethod::SHARED_KEY_MIC, data: vec![0; 32] }),
        Payload::Sa(Sa { proposals: vec![child.to_proposal(1, 0x1234_5679).unwrap()] }),
        Payload::TsI(Ts { selectors: vec![any] }),
        Payload::TsR(Ts { selectors: vec![any] }),
    ];
    let r = c.request(&mut s, &inner);
    assert_eq!(notify_types(&r), vec![NotifyType::AUTHENTICATION_FAILED]);
    assert!(!r.iter().any(|p| matches!(p, Payload::Eap(_))));
}
