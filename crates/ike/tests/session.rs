//! Two established IKE SAs joined by function calls on a virtual clock: CHILD SA rekeys with and
//! without PFS from either end (RFC 7296 §1.3.3, §2.17), the delete of the old pair that follows
//! (§2.8, §1.4.1), liveness checks and a dead peer (§2.4), retransmitted requests answered from
//! the cache (§2.1), and deleting the IKE SA.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use crypto::{AeadAlg, CbcAlg, DhGroup, EncrAlg, EspSuite, HmacAlg, IntegAlg, PrfAlg};
use ike::auth::CookieSecret;
use ike::{
    AuthConfig, AuthOutcome, ChildSaKeys, ChildSuite, Config, Endpoints, Event, IkeSuite,
    InitOutcome, Mode, Output, Request, Responder, SaInitNext, Session, initiator,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use wire::ikev2::{Id, TrafficSelector};
use zeroize::Zeroizing;

fn config(local: &str, remote: &str, pfs: Option<DhGroup>) -> Config {
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
        child_suites: vec![ChildSuite {
            esp: EspSuite::new(EncrAlg::Cbc(CbcAlg::Aes128), IntegAlg::Hmac(HmacAlg::Sha256_128))
                .unwrap(),
            esn: true,
            pfs,
        }],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    }
}

/// Alice and Bob after the initial exchanges, with the first CHILD SA's keys.
fn established(pfs: Option<DhGroup>) -> ((Session, ChildSaKeys), (Session, ChildSaKeys)) {
    let p = crypto::default_provider();
    let a = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 500);
    let b = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)), 500);
    let (st, m1) =
        initiator::start(config("a", "b", pfs), p, Endpoints { local: a, remote: b }, 0).unwrap();
    let r = Responder::new(
        config("b", "a", pfs),
        p,
        CookieSecret { version: 1, key: Zeroizing::new([2; 32]) },
    )
    .unwrap();
    let InitOutcome::HalfOpen(half, m2) =
        r.handle_init(0, Endpoints { local: b, remote: a }, &m1, false)
    else {
        panic!()
    };
    let SaInitNext::Auth(auth, m3) = st.handle(0, &m2).unwrap() else { panic!() };
    let AuthOutcome::Established(eb, m4) = half.handle(&m3).unwrap() else { panic!() };
    let ea = auth.handle(&m4).unwrap();
    let (sa, ka) = Session::new(config("a", "b", pfs), p, ea);
    let (sb, kb) = Session::new(config("b", "a", pfs), p, *eb);
    ((sa, ka.expect("a CHILD SA")), (sb, kb.expect("a CHILD SA")))
}

fn mirrored(a: &ChildSaKeys, b: &ChildSaKeys) {
    assert_eq!((a.spi_in, a.spi_out), (b.spi_out, b.spi_in));
    assert_eq!(a.enc_key_out.as_slice(), b.enc_key_in.as_slice());
    assert_eq!(a.auth_key_out.as_slice(), b.auth_key_in.as_slice());
    assert_eq!(a.enc_key_in.as_slice(), b.enc_key_out.as_slice());
    assert_eq!(a.auth_key_in.as_slice(), b.auth_key_out.as_slice());
}

/// Delivers every datagram of `out` to `to`, returning its output.
fn deliver(now: u64, out: &Output, to: &mut Session) -> Output {
    let mut all = Output::default();
    for d in &out.send {
        let o = to.handle(now, d).unwrap();
        all.send.extend(o.send);
        all.events.extend(o.events);
    }
    all
}

fn installed(out: &Output) -> Vec<(&ChildSaKeys, Option<u32>)> {
    out.events
        .iter()
        .filter_map(|e| match e {
            Event::InstallChild { keys, rekeys } => Some((keys.as_ref(), *rekeys)),
            _ => None,
        })
        .collect()
}

fn removed(out: &Output) -> Vec<u32> {
    out.events
        .iter()
        .filter_map(
            |e| if let Event::RemoveChild { spi_in, .. } = e { Some(*spi_in) } else { None },
        )
        .collect()
}

/// One CHILD rekey started by `x`: x → y request, y → x response (+ x's DELETE), y → x answer.
fn rekey(now: u64, x: &mut Session, y: &mut Session) -> (ChildSaKeys, ChildSaKeys) {
    let old_x = x.children()[0].spi_in;
    let old_y = y.children()[0].spi_in;
    let req = x.request(now, Request::RekeyChild(old_x)).unwrap();
    assert_eq!(req.send.len(), 1);
    let resp = deliver(now, &req, y);
    let [(ky, ry)] = installed(&resp)[..] else { panic!("responder installed nothing") };
    assert_eq!(ry, Some(old_y));
    let ky = clone_keys(ky);
    // The initiator installs, then asks to delete the old pair.
    let del = deliver(now, &resp, x);
    let [(kx, rx)] = installed(&del)[..] else {
        panic!("initiator installed nothing: {:?}", del.events)
    };
    assert_eq!(rx, Some(old_x));
    let kx = clone_keys(kx);
    assert_eq!(del.send.len(), 1, "DELETE of the old pair");
    let ack = deliver(now, &del, y);
    assert_eq!(removed(&ack), vec![old_y]);
    let done = deliver(now, &ack, x);
    assert_eq!(removed(&done), vec![old_x]);
    assert!(done.send.is_empty());
    assert_eq!((x.children().len(), y.children().len()), (1, 1));
    (kx, ky)
}

fn clone_keys(k: &ChildSaKeys) -> ChildSaKeys {
    ChildSaKeys {
        suite: k.suite,
        mode: k.mode,
        spi_in: k.spi_in,
        spi_out: k.spi_out,
        enc_key_in: k.enc_key_in.clone(),
        auth_key_in: k.auth_key_in.clone(),
        enc_key_out: k.enc_key_out.clone(),
        auth_key_out: k.auth_key_out.clone(),
        local_ts: k.local_ts.clone(),
        remote_ts: k.remote_ts.clone(),
    }
}

#[test]
fn child_rekeys_from_both_ends_replace_the_pair_make_before_break() {
    let ((mut a, first_a), (mut b, first_b)) = established(None);
    mirrored(&first_a, &first_b);
    let mut seen = vec![first_a.enc_key_out.to_vec()];
    for round in 0..40 {
        let (kx, ky) = if round % 2 == 0 {
            rekey(1_000 + round, &mut a, &mut b)
        } else {
            rekey(1_000 + round, &mut b, &mut a)
        };
        mirrored(&kx, &ky);
        assert!(
            !seen.iter().any(|k| k.as_slice() == kx.enc_key_out.as_slice()),
            "fresh keys every rekey"
        );
        seen.push(kx.enc_key_out.to_vec());
    }
    assert_eq!(a.children()[0].spi_in, b.children()[0].spi_out);
}

#[test]
fn child_rekey_with_pfs_uses_a_fresh_key_exchange() {
    let ((mut a, _), (mut b, _)) = established(Some(DhGroup::Ecp256));
    assert_eq!(a.children()[0].suite.pfs, None, "no PFS in IKE_AUTH (§1.2)");
    let (kx, ky) = rekey(5, &mut a, &mut b);
    mirrored(&kx, &ky);
    assert_eq!(kx.suite.pfs, Some(DhGroup::Ecp256));
    let (kx, ky) = rekey(6, &mut b, &mut a);
    mirrored(&kx, &ky);
}

#[test]
fn liveness_retransmission_and_cached_answers() {
    let ((mut a, _), (mut b, _)) = established(None);
    let req = a.request(10, Request::Liveness).unwrap();
    let resp = deliver(10, &req, &mut b);
    // The response is lost; Alice retransmits at her deadline, Bob answers from his cache.
    let t = a.deadline_ms().unwrap();
    assert!(a.on_timeout(t - 1).send.is_empty());
    let again = a.on_timeout(t);
    assert_eq!(again.send, req.send);
    let cached = deliver(t, &again, &mut b);
    assert_eq!(cached.send, resp.send);
    assert!(cached.events.is_empty());
    let ok = deliver(t, &cached, &mut a);
    assert!(matches!(ok.events[..], [Event::PeerAlive]));
    // The same response again is stale now.
    assert!(a.handle(t, &cached.send[0]).is_err());
    assert_eq!(a.deadline_ms(), None);
}

#[test]
fn a_dead_peer_closes_the_ike_sa() {
    let ((mut a, _), _) = established(None);
    a.request(0, Request::Liveness).unwrap();
    let mut closed = false;
    for _ in 0..10 {
        let Some(t) = a.deadline_ms() else { break };
        closed |= a.on_timeout(t).events.iter().any(|e| matches!(e, Event::IkeClosed));
    }
    assert!(closed && a.is_closed());
}

#[test]
fn requests_queue_behind_the_outstanding_one() {
    let ((mut a, _), (mut b, _)) = established(None);
    let first = a.request(0, Request::Liveness).unwrap();
    let queued = a.request(0, Request::RekeyChild(a.children()[0].spi_in)).unwrap();
    assert!(queued.send.is_empty(), "window of one (§2.3)");
    let resp = deliver(0, &first, &mut b);
    let next = deliver(0, &resp, &mut a);
    assert_eq!(next.send.len(), 1, "the queued rekey goes out");
    let resp = deliver(0, &next, &mut b);
    assert_eq!(installed(&resp).len(), 1);
}

#[test]
fn deleting_the_ike_sa_closes_both_ends() {
    let ((mut a, _), (mut b, _)) = established(None);
    let req = a.request(0, Request::DeleteIke).unwrap();
    let resp = deliver(0, &req, &mut b);
    assert!(b.is_closed() && resp.events.iter().any(|e| matches!(e, Event::IkeClosed)));
    let done = deliver(0, &resp, &mut a);
    assert!(a.is_closed() && done.events.iter().any(|e| matches!(e, Event::IkeClosed)));
}

#[test]
fn tampered_or_foreign_messages_are_dropped() {
    let ((mut a, _), (mut b, _)) = established(None);
    let req = a.request(0, Request::Liveness).unwrap();
    let mut bad = req.send[0].clone();
    let n = bad.len();
    bad[n - 3] ^= 0x80;
    assert!(b.handle(0, &bad).unwrap_err().is_peer_fault());
    assert!(b.handle(0, &[0u8; 10]).is_err());
    // Alice's own request looped back to her is not a request of the peer.
    assert!(a.handle(0, &req.send[0]).is_err());
    let resp = deliver(0, &req, &mut b);
    assert!(matches!(deliver(0, &resp, &mut a).events[..], [Event::PeerAlive]));
}

fn rekeyed(out: &Output) -> Option<(u64, u64)> {
    out.events.iter().find_map(|e| {
        if let Event::IkeRekeyed { spi_i, spi_r } = e { Some((*spi_i, *spi_r)) } else { None }
    })
}

/// One IKE SA rekey started by `x` (§2.18), with the DELETE of the old IKE SA.
fn rekey_ike(x: &mut Session, y: &mut Session) {
    let old = (x.ike().spi_i, x.ike().spi_r);
    let req = x.request(0, Request::RekeyIke).unwrap();
    let resp = deliver(0, &req, y);
    let new_y = rekeyed(&resp).expect("responder switched");
    let del = deliver(0, &resp, x);
    let new_x = rekeyed(&del).expect("initiator switched");
    assert_eq!(new_x, new_y);
    assert_ne!(new_x, old);
    assert_eq!(
        x.ike().role,
        ike::Role::Initiator,
        "the rekey's initiator is the new original initiator"
    );
    assert_eq!(y.ike().role, ike::Role::Responder);
    assert_eq!(x.ike().keys.sk_d.as_slice(), y.ike().keys.sk_d.as_slice());
    assert_eq!(del.send.len(), 1, "DELETE of the old IKE SA");
    let ack = deliver(0, &del, y);
    assert_eq!(ack.send.len(), 1);
    assert!(ack.events.is_empty(), "the old IKE SA goes quietly; CHILD SAs stay");
    let done = deliver(0, &ack, x);
    assert!(done.send.is_empty() && done.events.is_empty());
    assert_eq!(x.deadline_ms(), None);
    // The old SA is gone: its messages are no longer accepted.
    assert!(y.handle(0, &del.send[0]).is_err());
}

#[test]
fn ike_rekeys_from_both_ends_keep_the_child_sas_working() {
    let ((mut a, _), (mut b, _)) = established(Some(DhGroup::Curve25519));
    let child = a.children()[0].clone();
    rekey_ike(&mut a, &mut b);
    assert_eq!(a.children(), &[child][..], "CHILD SAs move to the new IKE SA unchanged");
    let (kx, ky) = rekey(0, &mut a, &mut b);
    mirrored(&kx, &ky);
    rekey_ike(&mut b, &mut a);
    let (kx, ky) = rekey(0, &mut a, &mut b);
    mirrored(&kx, &ky);
    let (kx, ky) = rekey(0, &mut b, &mut a);
    mirrored(&kx, &ky);
    let req = b.request(0, Request::Liveness).unwrap();
    let resp = deliver(0, &req, &mut a);
    assert!(matches!(deliver(0, &resp, &mut b).events[..], [Event::PeerAlive]));
}

#[test]
fn ike_rekey_while_busy_gets_temporary_failure() {
    let ((mut a, _), (mut b, _)) = established(None);
    let _busy = a.request(0, Request::Liveness).unwrap();
    let req = b.request(0, Request::RekeyIke).unwrap();
    let resp = deliver(0, &req, &mut a);
    assert!(rekeyed(&resp).is_none());
    let failed = deliver(0, &resp, &mut b);
    assert!(matches!(
        &failed.events[..],
        [Event::RequestFailed {
            request: Request::RekeyIke,
            error: ike::Error::PeerMisbehaved(ike::PeerMisbehaved::ErrorNotify(
                wire::ikev2::NotifyType::TEMPORARY_FAILURE
            ))
        }]
    ));
}

/// Both ends rekey the same pair at once; the requests cross (§2.8.1). Whatever the nonces,
/// each side ends with the same single pair, and exactly one DELETE of the old pair and one of
/// the redundant new pair are sent.
#[test]
fn simultaneous_child_rekeys_leave_one_pair_by_the_nonce_rule() {
    for _ in 0..20 {
        let ((mut a, _), (mut b, _)) = established(None);
        let (old_a, old_b) = (a.children()[0].spi_in, b.children()[0].spi_in);
        let req_a = a.request(0, Request::RekeyChild(old_a)).unwrap();
        let req_b = b.request(0, Request::RekeyChild(old_b)).unwrap();
        let resp_to_b = deliver(0, &req_b, &mut a); // a answers b's rekey while its own is out
        let resp_to_a = deliver(0, &req_a, &mut b);
        let from_a = deliver(0, &resp_to_a, &mut a); // a's rekey completes
        let from_b = deliver(0, &resp_to_b, &mut b);
        // Each side now sends one DELETE: of the old pair (winner) or of its redundant pair.
        assert_eq!((from_a.send.len(), from_b.send.len()), (1, 1));
        let ack_b = deliver(0, &from_a, &mut b);
        let ack_a = deliver(0, &from_b, &mut a);
        deliver(0, &ack_b, &mut a);
        deliver(0, &ack_a, &mut b);
        assert_eq!(
            (a.children().len(), b.children().len()),
            (1, 1),
            "{:?} / {:?}",
            a.children(),
            b.children()
        );
        let (ca, cb) = (&a.children()[0], &b.children()[0]);
        assert_eq!((ca.spi_in, ca.spi_out), (cb.spi_out, cb.spi_in));
        assert!(ca.spi_in != old_a && cb.spi_in != old_b);
        // And the survivor rekeys normally afterwards.
        let (kx, ky) = rekey(1, &mut a, &mut b);
        mirrored(&kx, &ky);
    }
}

/// The IKE_AUTH response is lost: the initiator's retransmitted request reaches the responder's
/// session, which answers from its cache (§2.1), and the initiator completes.
#[test]
fn a_retransmitted_ike_auth_request_is_answered_from_the_cache() {
    let p = crypto::default_provider();
    let a = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 500);
    let b = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)), 500);
    let (st, m1) =
        initiator::start(config("a", "b", None), p, Endpoints { local: a, remote: b }, 0).unwrap();
    let r = Responder::new(
        config("b", "a", None),
        p,
        CookieSecret { version: 1, key: Zeroizing::new([2; 32]) },
    )
    .unwrap();
    let InitOutcome::HalfOpen(half, m2) =
        r.handle_init(0, Endpoints { local: b, remote: a }, &m1, false)
    else {
        panic!()
    };
    let SaInitNext::Auth(mut auth, m3) = st.handle(0, &m2).unwrap() else { panic!() };
    let AuthOutcome::Established(eb, m4) = half.handle(&m3).unwrap() else { panic!() };
    let (mut sb, _) = Session::new(config("b", "a", None), p, *eb);
    // m4 is lost; the initiator's timer fires and it sends m3 again.
    let t = auth.retransmit().deadline_ms();
    let again = auth.retransmit().on_timeout(t).unwrap().unwrap().to_vec();
    let out = sb.handle(t, &again).unwrap();
    assert_eq!(out.send, vec![m4.clone()]);
    assert!(out.events.is_empty());
    let ea = auth.handle(&out.send[0]).unwrap();
    assert_eq!(ea.ike.spi_r, sb.ike().spi_r);
}

/// One further CHILD SA pair started by `x` (§1.3.1).
fn new_child(x: &mut Session, y: &mut Session) {
    let req = x.request(0, Request::NewChild(0)).unwrap();
    let resp = deliver(0, &req, y);
    let [(ky, None)] = installed(&resp)[..] else { panic!("{:?}", resp.events) };
    let ky = clone_keys(ky);
    let done = deliver(0, &resp, x);
    let [(kx, None)] = installed(&done)[..] else { panic!("{:?}", done.events) };
    mirrored(kx, &ky);
    assert!(done.send.is_empty(), "nothing to delete after a new pair");
    assert_eq!(kx.suite.pfs, Some(DhGroup::Curve25519));
}

/// Further CHILD SA pairs from either end, then the DELETE of one.
#[test]
fn new_child_sas_beside_the_first() {
    let ((mut a, _), (mut b, _)) = established(Some(DhGroup::Curve25519));
    new_child(&mut a, &mut b);
    new_child(&mut b, &mut a);
    assert_eq!((a.children().len(), b.children().len()), (3, 3));
    let newest = a.children()[2].spi_in;
    let req = a.request(0, Request::DeleteChild(newest)).unwrap();
    let resp = deliver(0, &req, &mut b);
    assert_eq!(removed(&deliver(0, &resp, &mut a)), vec![newest]);
    assert_eq!((a.children().len(), b.children().len()), (2, 2));
}

fn superseded(out: &Output) -> Vec<Request> {
    out.events
        .iter()
        .filter_map(|e| match e {
            Event::RequestFailed { request, error: ike::Error::Superseded(_) } => Some(*request),
            _ => None,
        })
        .collect()
}

/// The events of crossing rekeys, as a make-before-break driver reads them (the driver switches
/// at once to a pair with `rekeys: Some(old)` when it asked to rekey `old` itself): the peer's
/// pair comes without `rekeys`; the surviving rekey's initiator gets its pair with
/// `rekeys: Some(old)`, the other is told its rekey was superseded and never installs its pair,
/// which it deletes.
#[test]
fn crossing_rekeys_name_the_pair_to_switch_to_only_to_the_survivor() {
    for _ in 0..20 {
        let ((mut a, _), (mut b, _)) = established(None);
        let (old_a, old_b) = (a.children()[0].spi_in, b.children()[0].spi_in);
        let req_a = a.request(0, Request::RekeyChild(old_a)).unwrap();
        let req_b = b.request(0, Request::RekeyChild(old_b)).unwrap();
        let resp_to_b = deliver(0, &req_b, &mut a);
        let resp_to_a = deliver(0, &req_a, &mut b);
        for (resp, old) in [(&resp_to_b, None), (&resp_to_a, None)] {
            let [(_, r)] = installed(resp)[..] else { panic!("{:?}", resp.events) };
            assert_eq!(r, old, "the peer's pair of a collision is not one to switch to yet");
        }
        let from_a = deliver(0, &resp_to_a, &mut a);
        let from_b = deliver(0, &resp_to_b, &mut b);
        let (win, lose, lose_old) = if installed(&from_a).is_empty() {
            (&from_b, &from_a, old_a)
        } else {
            (&from_a, &from_b, old_b)
        };
        let [(_, Some(_))] = installed(win)[..] else { panic!("{:?}", win.events) };
        assert!(installed(lose).is_empty(), "the redundant pair is never installed");
        assert_eq!(superseded(lose), [Request::RekeyChild(lose_old)]);
        assert_eq!((win.send.len(), lose.send.len()), (1, 1), "one DELETE each");
    }
}

/// Our rekey completed and its DELETE of the old pair is on its way: the peer's late rekey of
/// that pair is refused with TEMPORARY_FAILURE (§2.25), so only our new pair survives.
#[test]
fn a_rekey_of_a_pair_being_deleted_gets_temporary_failure() {
    let ((mut a, _), (mut b, _)) = established(None);
    let old_b = b.children()[0].spi_in;
    let req_a = a.request(0, Request::RekeyChild(a.children()[0].spi_in)).unwrap();
    let req_b = b.request(0, Request::RekeyChild(old_b)).unwrap();
    let resp_to_a = deliver(0, &req_a, &mut b); // b sees the collision
    let del = deliver(0, &resp_to_a, &mut a); // a's rekey completes first: DELETE of the old
    assert_eq!(installed(&del).len(), 1);
    let refused = deliver(0, &req_b, &mut a);
    assert!(installed(&refused).is_empty());
    let failed = deliver(0, &refused, &mut b);
    assert!(matches!(
        &failed.events[..],
        [Event::RequestFailed {
            request: Request::RekeyChild(o),
            error: ike::Error::PeerMisbehaved(ike::PeerMisbehaved::ErrorNotify(
                wire::ikev2::NotifyType::TEMPORARY_FAILURE
            ))
        }] if *o == old_b
    ));
    let ack = deliver(0, &del, &mut b);
    assert_eq!(removed(&ack), vec![old_b]);
    deliver(0, &ack, &mut a);
    assert_eq!((a.children().len(), b.children().len()), (1, 1));
    assert_eq!(a.children()[0].spi_in, b.children()[0].spi_out);
}

/// The peer's rekey arrives while ours waits in the queue (window of one): ours is dropped and
/// reported before the install, which is then the peer's rekey.
#[test]
fn a_queued_rekey_of_the_pair_the_peer_rekeys_is_dropped_first() {
    let ((mut a, _), (mut b, _)) = established(None);
    let old_a = a.children()[0].spi_in;
    let busy = a.request(0, Request::Liveness).unwrap();
    assert!(a.request(0, Request::RekeyChild(old_a)).unwrap().send.is_empty());
    let req_b = b.request(0, Request::RekeyChild(b.children()[0].spi_in)).unwrap();
    let resp = deliver(0, &req_b, &mut a);
    assert!(matches!(
        &resp.events[..],
        [
            Event::RequestFailed { request: Request::RekeyChild(f), error: ike::Error::Superseded(_) },
            Event::InstallChild { rekeys: Some(r), .. },
        ] if *f == old_a && *r == old_a
    ));
    let alive = deliver(0, &deliver(0, &busy, &mut b), &mut a);
    assert!(alive.send.is_empty(), "nothing queued any more");
}
