//! Interop with strongSwan's charon at the IKE level, charon as initiator (see swan/mod.rs):
//! it initiates, rekeys the CHILD SA and the IKE SA and terminates, our responder answering on
//! 500 and 4500; and CHILD rekeys from both ends crossing (§2.8.1). Needs root, `ip` and charon;
//! skips, saying so, without them.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod swan;

use ike::{Endpoints, Event, Request, Session};
use std::net::{SocketAddr, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};
use swan::{Peer, config, establish, inner, recv, send};
use wire::ikev2::TrafficSelector;
use zeroize::Zeroizing;

/// Our end as responder: sockets on 500 and 4500 (non-ESP marker), one IKE SA.
struct Us {
    socks: [UdpSocket; 2],
    responder: ike::Responder,
    half: Option<Box<ike::ResponderAuth>>,
    session: Option<Session>,
    events: Vec<Event>,
}

impl Us {
    /// Serves until `done` holds for the events so far (or 10 s pass).
    fn serve(&mut self, done: impl Fn(&[Event]) -> bool) {
        let t = Instant::now();
        let mut buf = vec![0u8; 65536];
        while !done(&self.events) && t.elapsed() < Duration::from_secs(10) {
            for i in 0..2 {
                let Ok((n, from)) = self.socks[i].recv_from(&mut buf) else { continue };
                let skip = if i == 1 { 4 } else { 0 };
                let Some(msg) = buf.get(skip..n) else { continue };
                let local = self.socks[i].local_addr().unwrap();
                let replies = self.handle(local, from, msg);
                for r in replies {
                    let marker = if i == 1 { &[0u8; 4][..] } else { &[][..] };
                    self.socks[i].send_to(&[marker, &r].concat(), from).unwrap();
                }
            }
        }
    }

    fn handle(&mut self, local: SocketAddr, from: SocketAddr, msg: &[u8]) -> Vec<Vec<u8>> {
        if let Some(s) = self.session.as_mut() {
            let out = s.handle(0, msg).unwrap();
            self.events.extend(out.events);
            return out.send;
        }
        if let Some(half) = self.half.take() {
            return match half.handle(msg).unwrap() {
                ike::AuthOutcome::Established(est, reply) => {
                    let (s, child) = Session::new(config(), crypto::default_provider(), *est);
                    let child = child.expect("a CHILD SA in IKE_AUTH");
                    self.events.push(Event::InstallChild { keys: Box::new(child), rekeys: None });
                    self.session = Some(s);
                    vec![reply]
                }
                ike::AuthOutcome::Failed(e, _) => panic!("we refused charon's IKE_AUTH: {e}"),
                ike::AuthOutcome::Eap(..) => panic!("no EAP configured"),
            };
        }
        match self.responder.handle_init(0, Endpoints { local, remote: from }, msg, false) {
            ike::InitOutcome::HalfOpen(h, reply) => {
                self.half = Some(h);
                vec![reply]
            }
            other => panic!("IKE_SA_INIT from charon: {other:?}"),
        }
    }
}

fn count(ev: &[Event], f: impl Fn(&Event) -> bool) -> usize {
    ev.iter().filter(|e| f(e)).count()
}

#[test]
fn charon_initiates_rekeys_and_deletes_with_us_as_responder() {
    let Some(peer) = Peer::start(1, None) else { return };
    let bind = |port| {
        let s = UdpSocket::bind((peer.ours, port)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        s
    };
    let secret = ike::auth::CookieSecret { version: 1, key: Zeroizing::new([8; 32]) };
    let responder = ike::Responder::new(config(), crypto::default_provider(), secret).unwrap();
    let mut us = Us {
        socks: [bind(500), bind(4500)],
        responder,
        half: None,
        session: None,
        events: Vec::new(),
    };
    let installs = |e: &Event| matches!(e, Event::InstallChild { .. });
    let removes = |e: &Event| matches!(e, Event::RemoveChild { .. });

    let mut cmd = peer.swanctl("--initiate --child c --timeout 8");
    us.serve(|ev| count(ev, installs) == 1);
    assert!(cmd.wait().unwrap().success(), "swanctl --initiate failed:\n{}", peer.log());
    let s = us.session.as_ref().expect("IKE SA up");
    assert_eq!(s.ike().role, ike::Role::Responder);
    assert_eq!(s.children()[0].local_ts, vec![TrafficSelector::host(inner(peer.ours))]);

    let mut cmd = peer.swanctl("--rekey --child c");
    us.serve(|ev| count(ev, installs) == 2 && count(ev, removes) == 1);
    cmd.wait().unwrap();
    assert_eq!(us.session.as_ref().unwrap().children().len(), 1, "{:?}\n{}", us.events, peer.log());

    let mut cmd = peer.swanctl("--rekey --ike hip");
    us.serve(|ev| ev.iter().any(|e| matches!(e, Event::IkeRekeyed { .. })));
    cmd.wait().unwrap();
    // charon deletes the old IKE SA next; then rekeys the CHILD SA over the new one.
    let mut cmd = peer.swanctl("--rekey --child c");
    us.serve(|ev| count(ev, installs) == 3 && count(ev, removes) == 2);
    cmd.wait().unwrap();

    let mut cmd = peer.swanctl("--terminate --ike hip --timeout 5");
    us.serve(|ev| ev.iter().any(|e| matches!(e, Event::IkeClosed)));
    cmd.wait().unwrap();
    assert!(us.session.as_ref().unwrap().is_closed(), "{:?}\n{}", us.events, peer.log());
    let log = peer.log();
    // charon started every CHILD SA: its initiator keys are our inbound ones, and so on.
    let (ours_in, ours_out): (Vec<_>, Vec<_>) = us
        .events
        .iter()
        .filter_map(|e| match e {
            Event::InstallChild { keys, .. } => {
                Some((keys.enc_key_in.to_vec(), keys.enc_key_out.to_vec()))
            }
            _ => None,
        })
        .unzip();
    assert_eq!(swan::charon_dumps(&log, "encryption initiator key"), ours_in);
    assert_eq!(swan::charon_dumps(&log, "encryption responder key"), ours_out);
    for want in [
        "IKE_SA hip[1] established",
        "CHILD_SA c{1} established",
        "IKE_SA hip[2] rekeyed",
        "CHILD_SA c{3} established",
    ] {
        assert!(log.contains(want), "charon's log lacks {want:?}:\n{log}");
    }
}

/// Both ends rekey the same CHILD SA at once, the requests crossing (§2.8.1): we hold our
/// request until charon's arrives, let charon answer ours first, then answer its own. Both
/// must end with the same single pair.
#[test]
fn simultaneous_child_rekeys_with_charon_leave_one_pair() {
    let Some(peer) = Peer::start(3, None) else { return };
    let (sock, to, mut s) = establish(&peer, config());
    let old = s.children()[0].spi_in;
    let ours = s.request(0, Request::RekeyChild(old)).unwrap();
    let mut cmd = peer.swanctl("--rekey --child c");
    let theirs = recv(&sock, to).expect("charon's rekey request");
    cmd.wait().unwrap();
    send(&sock, to, &ours.send[0]);
    let answer_to_ours = recv(&sock, to).expect("charon answers our rekey");
    let mut queue = Vec::new();
    for m in [theirs, answer_to_ours] {
        queue.extend(s.handle(0, &m).map_err(|e| format!("{e}\n{}", peer.log())).unwrap().send);
    }
    // Then the DELETEs of both ends, until quiet.
    loop {
        for d in queue.drain(..) {
            send(&sock, to, &d);
        }
        let Some(m) = recv(&sock, to) else { break };
        queue.extend(s.handle(0, &m).map_err(|e| format!("{e}\n{}", peer.log())).unwrap().send);
    }
    assert_eq!(s.children().len(), 1, "{:?}\n{}", s.children(), peer.log());
    let c = &s.children()[0];
    let out = Command::new("swanctl")
        .arg("--list-sas")
        .env("STRONGSWAN_CONF", peer.dir.join("strongswan.conf"))
        .output()
        .unwrap();
    let sas = String::from_utf8_lossy(&out.stdout);
    assert_eq!(sas.matches("INSTALLED").count(), 1, "{sas}");
    for spi in [c.spi_in, c.spi_out] {
        assert!(
            sas.contains(&format!("{spi:08x}")),
            "charon's pair is not ours ({spi:08x}):\n{sas}"
        );
    }
    assert!(peer.log().contains("collision"), "no collision seen by charon:\n{}", peer.log());
}
