//! CHILD SA rekeys with PFS (a KE payload in CREATE_CHILD_SA) between two established IKE SAs
//! joined by function calls: each direction, x25519 and ecp256, and the INVALID_KE_PAYLOAD
//! retry. The rules followed (RFC 7296):
//!
//! - §1.3: "The CREATE_CHILD_SA request MAY optionally contain a KE payload for an additional
//!   Diffie-Hellman exchange to enable stronger guarantees of forward secrecy for the Child SA."
//! - §2.17: "KEYMAT = prf+(SK_d, g^ir (new) | Ni | Nr)", g^ir (new) being the shared secret
//!   from the ephemeral Diffie-Hellman exchange of this CREATE_CHILD_SA exchange.
//! - §1.3: "If the responder selects a proposal using a different Diffie-Hellman group (other
//!   than NONE), the responder MUST reject the request and indicate its preferred
//!   Diffie-Hellman group in the INVALID_KE_PAYLOAD Notify payload. There are two octets of data
//!   associated with this notification: the accepted Diffie-Hellman group number in big endian
//!   order. In the case of such a rejection, the CREATE_CHILD_SA exchange fails, and the
//!   initiator will probably retry the exchange with a Diffie-Hellman proposal and KE payload
//!   that the responder gave in the INVALID_KE_PAYLOAD."
//! - §1.2: the CHILD SA of IKE_AUTH has no KE payload, so its proposal has no D-H transform.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use crypto::{AeadAlg, DhGroup, EncrAlg, EspSuite, IntegAlg, PrfAlg};
use ike::auth::CookieSecret;
use ike::{
    AuthConfig, AuthOutcome, ChildKeyMat, ChildSaKeys, ChildSuite, Config, Endpoints, Event,
    IkeSuite, InitOutcome, Mode, Output, Request, Responder, SaInitNext, Session, initiator,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use wire::ikev2::{Id, TrafficSelector};
use wire::ikev2::{NotifyType, Payload, TransformType};
use zeroize::Zeroizing;

fn esp() -> EspSuite {
    EspSuite::new(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None).unwrap()
}

/// A connection whose child offers aes128gcm16 with each of `groups` (in order; `None` = no
/// PFS), as `esp_proposals = aes128gcm16-x25519-ecp256` expands.
fn config(local: &str, remote: &str, groups: &[Option<DhGroup>]) -> Config {
    Config {
        local_id: Id::fqdn(local),
        remote_id: Some(Id::fqdn(remote)),
        auth: AuthConfig::Psk(Zeroizing::new(b"k".to_vec())),
        ike_suites: vec![IkeSuite {
            encr: EncrAlg::Aead(AeadAlg::Aes128Gcm),
            integ: IntegAlg::None,
            prf: PrfAlg::HmacSha256,
            dh: DhGroup::Curve25519,
        }],
        more_children: Vec::new(),
        peer_eap: None,
        child_suites: groups
            .iter()
            .map(|&pfs| ChildSuite { esp: esp(), esn: false, pfs })
            .collect(),
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    }
}

/// Alice (initiator) and Bob after IKE_AUTH, each with its own child proposals.
fn established(ga: &[Option<DhGroup>], gb: &[Option<DhGroup>]) -> (Session, Session) {
    let p = crypto::default_provider();
    let a = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 500);
    let b = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)), 500);
    let (st, m1) =
        initiator::start(config("a", "b", ga), p, Endpoints { local: a, remote: b }, 0).unwrap();
    let r = Responder::new(
        config("b", "a", gb),
        p,
        CookieSecret { version: 1, key: Zeroizing::new([2; 32]) },
    )
    .unwrap();
    let InitOutcome::HalfOpen(half, m2) =
        r.handle_init(0, Endpoints { local: b, remote: a }, &m1, false)
    else {
        panic!("IKE_SA_INIT refused")
    };
    let SaInitNext::Auth(auth, m3) = st.handle(0, &m2).unwrap() else { panic!("no IKE_AUTH") };
    let AuthOutcome::Established(eb, m4) = half.handle(&m3).unwrap() else {
        panic!("IKE_AUTH refused")
    };
    let ea = auth.handle(&m4).unwrap();
    let (sa, ka) = Session::new(config("a", "b", ga), p, ea);
    let ka = ka.expect("a CHILD SA");
    let (sb, kb) = Session::new(config("b", "a", gb), p, *eb);
    let kb = kb.expect("a CHILD SA");
    assert_eq!((ka.suite.pfs, kb.suite.pfs), (None, None), "no PFS in IKE_AUTH (§1.2)");
    (sa, sb)
}

fn deliver(now: u64, out: &Output, to: &mut Session) -> Output {
    let mut all = Output::default();
    for d in &out.send {
        let o = to.handle(now, d).unwrap();
        all.send.extend(o.send);
        all.events.extend(o.events);
    }
    all
}

fn installed(out: &Output) -> Vec<&ChildSaKeys> {
    out.events
        .iter()
        .filter_map(|e| match e {
            Event::InstallChild { keys, .. } => Some(keys.as_ref()),
            _ => None,
        })
        .collect()
}

/// What a CREATE_CHILD_SA message carries, opened with the receiver's keys.
struct Seen {
    ke_group: Option<u16>,
    ke_len: usize,
    nonce: Vec<u8>,
    dh_transforms: Vec<u16>,
    notify: Option<(NotifyType, Vec<u8>)>,
}

fn open(receiver: &Session, msg: &[u8]) -> Seen {
    let (_, payloads) = receiver.ike().sk.open(msg).unwrap();
    let mut s = Seen {
        ke_group: None,
        ke_len: 0,
        nonce: Vec::new(),
        dh_transforms: Vec::new(),
        notify: None,
    };
    for p in payloads {
        match p {
            Payload::Ke(k) => {
                s.ke_group = Some(k.dh_group);
                s.ke_len = k.data.len();
            }
            Payload::Nonce(n) => s.nonce = n,
            Payload::Sa(sa) => {
                for pr in sa.proposals {
                    s.dh_transforms.extend(
                        pr.transforms
                            .iter()
                            .filter(|t| t.transform_type == TransformType::DH)
                            .map(|t| t.transform_id),
                    );
                }
            }
            Payload::Notify(n) if n.notify_type != NotifyType::REKEY_SA => {
                s.notify = Some((n.notify_type, n.data));
            }
            _ => {}
        }
    }
    s
}

fn mirrored(a: &ChildSaKeys, b: &ChildSaKeys) {
    assert_eq!((a.spi_in, a.spi_out), (b.spi_out, b.spi_in));
    assert_eq!(a.enc_key_out.as_slice(), b.enc_key_in.as_slice());
    assert_eq!(a.enc_key_in.as_slice(), b.enc_key_out.as_slice());
}

/// One PFS rekey started by `x` with group `g`: the request and the answer carry a KE of `g`,
/// both ends install mirrored keys, and those are not the keys of the same nonces without
/// g^ir (a rekey without PFS).
fn pfs_rekey(x: &mut Session, y: &mut Session, g: DhGroup) {
    let old = x.children()[0].spi_in;
    let req = x.request(10, Request::RekeyChild(old)).unwrap();
    let [m] = &req.send[..] else { panic!("one request") };
    let r = open(y, m);
    assert_eq!(r.ke_group, Some(g.ike_id()), "KEi of the proposal's group");
    assert_eq!(r.ke_len, g.public_len());
    assert_eq!(r.dh_transforms, vec![g.ike_id()], "the proposal offers its group");
    let resp = deliver(10, &req, y);
    let [ky] = installed(&resp)[..] else {
        panic!("responder installed nothing: {:?}", resp.events)
    };
    let [m] = &resp.send[..] else { panic!("one answer") };
    let a = open(x, m);
    assert_eq!(a.ke_group, Some(g.ike_id()), "KEr of the same group");
    assert_eq!(a.dh_transforms, vec![g.ike_id()]);
    let del = deliver(10, &resp, x);
    let [kx] = installed(&del)[..] else { panic!("initiator installed nothing: {:?}", del.events) };
    mirrored(kx, ky);
    assert_eq!((kx.suite.pfs, ky.suite.pfs), (Some(g), Some(g)));
    let ike = x.ike();
    let no_pfs =
        ChildKeyMat::derive(ike.suite.prf, &ike.keys.sk_d, &esp(), None, &r.nonce, &a.nonce)
            .unwrap();
    assert_ne!(kx.enc_key_out.as_slice(), no_pfs.encr_i.as_slice(), "g^ir is in the KEYMAT");
    assert_ne!(kx.enc_key_in.as_slice(), no_pfs.encr_r.as_slice());
    // The old pair's DELETE, and its answer.
    let ack = deliver(10, &del, y);
    let done = deliver(10, &ack, x);
    assert!(done.send.is_empty());
    assert_eq!((x.children().len(), y.children().len()), (1, 1));
}

#[test]
fn pfs_rekeys_from_either_end_with_x25519_and_ecp256() {
    for g in [DhGroup::Curve25519, DhGroup::Ecp256] {
        let (mut a, mut b) = established(&[Some(g)], &[Some(g)]);
        for _ in 0..3 {
            pfs_rekey(&mut a, &mut b, g);
            pfs_rekey(&mut b, &mut a, g);
        }
    }
}

/// The groups strongSwan calls modp2048, modp3072 and ecp521 (IKE 14, 15, 21) on CHILD rekeys:
/// each KE is the group's length (RFC 7296 §3.4: "The length of the Diffie-Hellman public
/// value for MODP groups MUST be equal to the length of the prime modulus"; RFC 5903 §7 for
/// ECP), and g^ir enters the KEYMAT.
#[test]
fn pfs_rekeys_from_either_end_with_modp_and_ecp521() {
    for g in [DhGroup::Modp2048, DhGroup::Modp3072, DhGroup::Ecp521] {
        let (mut a, mut b) = established(&[Some(g)], &[Some(g)]);
        pfs_rekey(&mut a, &mut b, g);
        pfs_rekey(&mut b, &mut a, g);
    }
}

#[test]
fn a_ke_of_any_configured_group_is_taken_as_it_is() {
    // Bob prefers ecp256 but also accepts x25519: Alice's x25519 KE is answered in x25519.
    let g = [Some(DhGroup::Ecp256), Some(DhGroup::Curve25519)];
    let (mut a, mut b) = established(&[Some(DhGroup::Curve25519)], &g);
    pfs_rekey(&mut a, &mut b, DhGroup::Curve25519);
}

#[test]
fn invalid_ke_payload_is_retried_once_with_the_asked_group() {
    // Alice offers x25519 first and allows ecp256; Bob takes ecp256 only.
    let ga = [Some(DhGroup::Curve25519), Some(DhGroup::Ecp256)];
    let (mut a, mut b) = established(&ga, &[Some(DhGroup::Ecp256)]);
    let old = a.children()[0].spi_in;
    let req = a.request(10, Request::RekeyChild(old)).unwrap();
    assert_eq!(open(&b, &req.send[0]).ke_group, Some(DhGroup::Curve25519.ike_id()));
    let refusal = deliver(10, &req, &mut b);
    assert!(installed(&refusal).is_empty());
    let n = open(&a, &refusal.send[0]).notify;
    assert_eq!(n, Some((NotifyType::INVALID_KE_PAYLOAD, 19u16.to_be_bytes().to_vec())));
    // Alice answers the refusal with the request again, in ecp256.
    let again = deliver(10, &refusal, &mut a);
    assert!(again.events.is_empty(), "no failure reported: {:?}", again.events);
    let [m] = &again.send[..] else { panic!("the request sent again") };
    let r = open(&b, m);
    assert_eq!(r.ke_group, Some(DhGroup::Ecp256.ike_id()));
    // Both allowed groups offered again, the KE's first.
    assert_eq!(r.dh_transforms, vec![DhGroup::Ecp256.ike_id(), DhGroup::Curve25519.ike_id()]);
    let resp = deliver(10, &again, &mut b);
    let [ky] = installed(&resp)[..] else { panic!("Bob installed nothing") };
    let del = deliver(10, &resp, &mut a);
    let [kx] = installed(&del)[..] else { panic!("Alice installed nothing: {:?}", del.events) };
    mirrored(kx, ky);
    assert_eq!(kx.suite.pfs, Some(DhGroup::Ecp256));
    let done = deliver(10, &deliver(10, &del, &mut b), &mut a);
    assert!(done.send.is_empty());
    // Later rekeys start with Alice's first group again and go the same way.
    pfs_rekey_after_refusal(&mut a, &mut b);
}

fn pfs_rekey_after_refusal(a: &mut Session, b: &mut Session) {
    let old = a.children()[0].spi_in;
    let req = a.request(20, Request::RekeyChild(old)).unwrap();
    let refusal = deliver(20, &req, b);
    let again = deliver(20, &refusal, a);
    let resp = deliver(20, &again, b);
    assert_eq!(installed(&resp).len(), 1);
    let del = deliver(20, &resp, a);
    assert_eq!(installed(&del).len(), 1);
}

#[test]
fn no_common_group_is_no_proposal_chosen_and_the_old_pair_stays() {
    let (mut a, mut b) = established(&[Some(DhGroup::Curve25519)], &[Some(DhGroup::Ecp256)]);
    refused(&mut a, &mut b);
    refused(&mut b, &mut a);
}

#[test]
fn no_pfs_on_one_end_is_no_proposal_chosen_both_ways() {
    // One end with PFS, the other without: neither accepts the other's rekey (the proposals
    // differ in the D-H transform), and the old pair stays.
    let (mut a, mut b) = established(&[Some(DhGroup::Curve25519)], &[None]);
    refused(&mut a, &mut b);
    refused(&mut b, &mut a);
}

fn refused(x: &mut Session, y: &mut Session) {
    let old = x.children()[0].spi_in;
    let req = x.request(10, Request::RekeyChild(old)).unwrap();
    let refusal = deliver(10, &req, y);
    let n = open(x, &refusal.send[0]).notify.map(|n| n.0);
    assert_eq!(n, Some(NotifyType::NO_PROPOSAL_CHOSEN));
    let out = deliver(10, &refusal, x);
    assert!(matches!(out.events[..], [Event::RequestFailed { .. }]), "{:?}", out.events);
    assert_eq!(x.children()[0].spi_in, old, "the old pair stays");
}
