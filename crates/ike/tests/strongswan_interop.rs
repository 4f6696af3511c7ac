//! Interop with strongSwan's charon at the IKE level, our core as initiator (see swan/mod.rs for
//! the setup): IKE_SA_INIT + IKE_AUTH with a PSK, liveness, CHILD rekey with PFS, IKE SA rekey,
//! CHILD rekey over the new IKE SA, delete; RFC 7427 public keys over AES-CBC; IPv6. charon must
//! answer every step, and the keys it logs must be ours. Needs root, `ip`, openssl and charon;
//! skips, saying so, without them. No ESP traffic here.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod swan;

use crypto::{DhGroup, EncrAlg, EspSuite, IntegAlg, PrfAlg};
use ike::{
    AuthConfig, ChildSuite, Endpoints, Event, IkeSuite, Request, SaInitNext, Session, initiator,
};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Duration;
use swan::{Peer, ask, config, establish, inner, xchg};
use wire::ikev2::TrafficSelector;

#[test]
fn charon_accepts_our_initial_exchange_rekeys_and_delete() {
    let Some(peer) = Peer::start(0, None) else { return };
    let sock = UdpSocket::bind((peer.ours, 0)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let to = SocketAddr::new(peer.theirs, 500);
    let ep = Endpoints { local: sock.local_addr().unwrap(), remote: to };
    let p = crypto::default_provider();
    let (mut st, req) = initiator::start(config(), p, ep, 0).unwrap();
    // RFC 7296 §2.4: INITIAL_CONTACT in our first IKE_AUTH (we hold no IKE SA with charon).
    st.set_initial_contact(true);
    let resp = xchg(&sock, to, &req);
    let SaInitNext::Auth(auth, req) = st.handle(0, &resp).unwrap() else {
        panic!("{}", peer.log())
    };
    // charon with kernel-libipsec fakes its NAT-D hash to force UDP encapsulation; we see a NAT
    // on its side and float to port 4500 (§2.23).
    assert!(!auth.nat().local_behind_nat);
    let to = if auth.nat().remote_behind_nat { SocketAddr::new(to.ip(), 4500) } else { to };
    let resp = xchg(&sock, to, &req);
    let up = auth.handle(&resp).map_err(|e| format!("{e:?}\n{}", peer.log())).unwrap();
    assert!(
        peer.log().contains("N(INIT_CONTACT)"),
        "charon parsed no INITIAL_CONTACT\n{}",
        peer.log()
    );
    let ts = |a: IpAddr| TrafficSelector::host(inner(a));
    assert_eq!(up.child.local_ts, vec![ts(peer.ours)], "charon narrows to its /32s");
    assert_eq!(up.child.remote_ts, vec![ts(peer.theirs)]);
    let mut sk_ei = vec![up.ike.keys.sk_ei.to_vec()];
    let (mut s, first) = Session::new(config(), p, up);
    // Keys of the CHILD SAs we create, as (initiator's, responder's) encryption key.
    let mut child_keys = vec![(first.enc_key_out.to_vec(), first.enc_key_in.to_vec())];
    let mut note = |ev: &[Event]| {
        for e in ev {
            if let Event::InstallChild { keys, .. } = e {
                child_keys.push((keys.enc_key_out.to_vec(), keys.enc_key_in.to_vec()));
            }
        }
    };

    let ev = ask(&sock, to, &mut s, Request::Liveness);
    assert!(matches!(ev[..], [Event::PeerAlive]), "{ev:?}");

    let old = s.children()[0].spi_in;
    let ev = ask(&sock, to, &mut s, Request::RekeyChild(old));
    assert!(
        matches!(&ev[..], [Event::InstallChild { rekeys: Some(o), .. }, Event::RemoveChild { spi_in, .. }] if *o == old && *spi_in == old),
        "{ev:?}\n{}",
        peer.log()
    );

    note(&ev);
    let ev = ask(&sock, to, &mut s, Request::RekeyIke);
    assert!(matches!(&ev[..], [Event::IkeRekeyed { .. }]), "{ev:?}\n{}", peer.log());
    sk_ei.push(s.ike().keys.sk_ei.to_vec());
    // The DELETE of the old IKE SA went out inside drive(); charon answered it.
    let old = s.children()[0].spi_in;
    let ev = ask(&sock, to, &mut s, Request::RekeyChild(old));
    assert!(
        matches!(&ev[..], [Event::InstallChild { .. }, Event::RemoveChild { .. }]),
        "{ev:?}\n{}",
        peer.log()
    );

    note(&ev);
    // A second CHILD SA beside the first (§1.3.1).
    let ev = ask(&sock, to, &mut s, Request::NewChild(0));
    assert!(
        matches!(&ev[..], [Event::InstallChild { rekeys: None, .. }]),
        "{ev:?}\n{}",
        peer.log()
    );
    note(&ev);
    let ev = ask(&sock, to, &mut s, Request::DeleteIke);
    assert!(matches!(&ev[..], [Event::IkeClosed]), "{ev:?}");
    let log = peer.log();
    // charon's own key schedule (§2.14, §2.17, §2.18) gave the same keys as ours.
    assert_eq!(
        swan::charon_dumps(&log, "Sk_ei secret"),
        sk_ei,
        "SK_ei, before and after the IKE rekey"
    );
    let (i, r): (Vec<_>, Vec<_>) = child_keys.into_iter().unzip();
    assert_eq!(swan::charon_dumps(&log, "encryption initiator key"), i, "CHILD SA keys, initiator");
    assert_eq!(swan::charon_dumps(&log, "encryption responder key"), r, "CHILD SA keys, responder");
    for want in
        ["IKE_SA hip[1] established", "CHILD_SA c{1} established", "rekeyed", "deleting IKE_SA"]
    {
        assert!(log.contains(want), "charon's log lacks {want:?}:\n{log}");
    }
    assert!(
        !log.contains("received AUTHENTICATION_FAILED") && !log.contains("verification failed"),
        "{log}"
    );
}

/// RFC 7427 signatures both ways (ours Ed25519, charon's ECDSA P-256 from openssl) with
/// AES-CBC + HMAC-SHA-256 for the IKE SA and the CHILD SA, PFS with group 19 on the rekey.
#[test]
fn charon_and_we_authenticate_with_raw_public_keys_over_aes_cbc() {
    use crypto::{CbcAlg, HmacAlg, SignatureAlg, SigningKey};
    let key = SigningKey::generate(SignatureAlg::Ed25519).unwrap();
    let spki = [
        &[0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00][..],
        &key.public_key(),
    ]
    .concat();
    let Some(peer) = Peer::start(2, Some(&spki)) else { return };
    let mut c = config();
    c.auth = AuthConfig::Signature {
        key: std::sync::Arc::new(key),
        peer_public_key: peer.charon_pub.clone(),
        peer_alg: SignatureAlg::EcdsaP256Sha256,
    };
    c.ike_suites = vec![IkeSuite {
        encr: EncrAlg::Cbc(CbcAlg::Aes128),
        integ: IntegAlg::Hmac(HmacAlg::Sha256_128),
        prf: PrfAlg::HmacSha256,
        dh: DhGroup::Ecp256,
    }];
    let esp =
        EspSuite::new(EncrAlg::Cbc(CbcAlg::Aes128), IntegAlg::Hmac(HmacAlg::Sha256_128)).unwrap();
    c.child_suites = vec![ChildSuite { esp, esn: false, pfs: Some(DhGroup::Ecp256) }];

    let sock = UdpSocket::bind((peer.ours, 0)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let to = SocketAddr::new(peer.theirs, 500);
    let ep = Endpoints { local: sock.local_addr().unwrap(), remote: to };
    let p = crypto::default_provider();
    let (st, req) = initiator::start(c.clone(), p, ep, 0).unwrap();
    let resp = xchg(&sock, to, &req);
    let SaInitNext::Auth(auth, req) = st.handle(0, &resp).unwrap() else {
        panic!("{}", peer.log())
    };
    let to = if auth.nat().remote_behind_nat { SocketAddr::new(to.ip(), 4500) } else { to };
    let resp = xchg(&sock, to, &req);
    let up = auth.handle(&resp).map_err(|e| format!("{e:?}\n{}", peer.log())).unwrap();
    assert_eq!(up.child.suite.esp, esp);
    let (mut s, _) = Session::new(c, p, up);
    let old = s.children()[0].spi_in;
    let ev = ask(&sock, to, &mut s, Request::RekeyChild(old));
    assert!(
        matches!(&ev[..], [Event::InstallChild { .. }, Event::RemoveChild { .. }]),
        "{ev:?}\n{}",
        peer.log()
    );
    let ev = ask(&sock, to, &mut s, Request::DeleteIke);
    assert!(matches!(&ev[..], [Event::IkeClosed]), "{ev:?}");
    let log = peer.log();
    for want in [
        "authentication of 'alice.example' with ED25519 successful",
        "authentication of 'bob.example' (myself) with ECDSA",
        "IKE_SA hip[1] established",
    ] {
        assert!(log.contains(want), "charon's log lacks {want:?}:\n{log}");
    }
}

/// IPv6 outside and inside: NAT detection over 16-byte addresses, IPv6 traffic selectors.
#[test]
fn ipv6_outer_and_inner_with_a_psk() {
    let Some(peer) = Peer::start_on(4, None, true) else { return };
    let mut c = config();
    c.local_ts = vec![TrafficSelector::any(true)];
    c.remote_ts = vec![TrafficSelector::any(true)];
    let (sock, to, mut s) = establish(&peer, c);
    assert_eq!(s.children()[0].remote_ts, vec![TrafficSelector::host(inner(peer.theirs))]);
    let old = s.children()[0].spi_in;
    let ev = ask(&sock, to, &mut s, Request::RekeyChild(old));
    assert!(
        matches!(&ev[..], [Event::InstallChild { .. }, Event::RemoveChild { .. }]),
        "{ev:?}\n{}",
        peer.log()
    );
    let ev = ask(&sock, to, &mut s, Request::DeleteIke);
    assert!(matches!(&ev[..], [Event::IkeClosed]), "{ev:?}");
    assert!(peer.log().contains("IKE_SA hip[1] established between fd13:"), "{}", peer.log());
}
