//! Interop with strongSwan's charon (5.9, ../shared/reference/strongswan-peer.md) at the IKE
//! level: charon runs in a network namespace behind a veth pair, this test drives the sans-IO
//! core through a UDP socket on the host side. We initiate IKE_SA_INIT + IKE_AUTH with a PSK,
//! then liveness, a CHILD SA rekey with PFS, an IKE SA rekey, another CHILD rekey over the new
//! IKE SA, and the delete; charon must answer every step without an error notify. Then the other
//! way round: charon initiates, rekeys the CHILD SA and the IKE SA and terminates, we respond
//! (on 500 and 4500). Also: RFC 7427 public keys over AES-CBC, crossing CHILD rekeys, IPv6.
//! Needs root, `ip`, openssl and charon; skips, saying so, without them. No ESP traffic here.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use crypto::{AeadAlg, DhGroup, EncrAlg, EspSuite, IntegAlg, PrfAlg};
use ike::{
    AuthConfig, ChildSuite, Config, Endpoints, Event, IkeSuite, Mode, Output, Request, SaInitNext,
    Session, initiator,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wire::ikev2::{Id, TrafficSelector};
use zeroize::Zeroizing;

const CHARON: &str = "/usr/lib/ipsec/charon";

/// charon in its own namespace; everything is undone on drop.
struct Peer {
    ns: String,
    veth: String,
    dir: PathBuf,
    charon: Option<Child>,
    ours: IpAddr,
    theirs: IpAddr,
    /// charon's raw public key (uncompressed P-256 point), in the public-key variant.
    charon_pub: Vec<u8>,
}

/// 10.213.N.x (fd13:0:0:N::x) outside, 10.214.N.x (fd14:0:0:N::x) inside the tunnel.
fn inner(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V4(a) => {
            let [_, _, n, x] = a.octets();
            IpAddr::V4(Ipv4Addr::new(10, 214, n, x))
        }
        IpAddr::V6(a) => {
            let mut seg = a.segments();
            seg[0] = 0xfd14;
            IpAddr::V6(Ipv6Addr::from(seg))
        }
    }
}

fn sh(cmd: &str) -> bool {
    Command::new("sh").arg("-c").arg(cmd).status().is_ok_and(|s| s.success())
}

impl Peer {
    /// `tag` keeps the names and subnets of tests in one run apart. With `our_spki` (our public
    /// key, SubjectPublicKeyInfo DER) both ends authenticate with raw public keys (charon's an
    /// ECDSA P-256 key from openssl) and use AES-CBC + HMAC-SHA-256; else a PSK and AES-GCM.
    fn start(tag: u32, our_spki: Option<&[u8]>) -> Option<Peer> {
        Self::start_on(tag, our_spki, false)
    }

    /// As [`Peer::start`], over IPv6 outside and inside when `v6`.
    fn start_on(tag: u32, our_spki: Option<&[u8]>, v6: bool) -> Option<Peer> {
        let root =
            Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        if !root
            || !Path::new(CHARON).exists()
            || !sh("command -v ip >/dev/null && command -v swanctl >/dev/null")
        {
            println!(
                "SKIPPED: needs root, ip, swanctl and {CHARON} (scripts/test-all.sh installs strongSwan)"
            );
            return None;
        }
        let id = (std::process::id() % 100_000) * 10 + tag;
        let net = (100 + tag * 50 + std::process::id() % 50) as u8;
        let mut peer = Peer {
            ns: format!("hsike{id}"),
            veth: format!("hsik{id}"),
            dir: std::env::temp_dir().join(format!("hipsec-ike-swan-{id}")),
            charon: None,
            ours: if v6 {
                IpAddr::V6(Ipv6Addr::new(0xfd13, 0, 0, net.into(), 0, 0, 0, 1))
            } else {
                IpAddr::V4(Ipv4Addr::new(10, 213, net, 1))
            },
            theirs: if v6 {
                IpAddr::V6(Ipv6Addr::new(0xfd13, 0, 0, net.into(), 0, 0, 0, 2))
            } else {
                IpAddr::V4(Ipv4Addr::new(10, 213, net, 2))
            },
            charon_pub: Vec::new(),
        };
        let (ns, v, d) = (&peer.ns, &peer.veth, peer.dir.display().to_string());
        let (a, b) = (peer.ours, peer.theirs);
        // Inner addresses for the CHILD SA's selectors, apart from the IKE endpoints; charon's
        // sits on its loopback so that it can route to the tunnel.
        let (ia, ib) = (inner(a), inner(b));
        // IPv6 without duplicate address detection, or the first datagrams wait for it.
        let (net_len, host, dad) = if v6 { (64, 128, "nodad") } else { (30, 32, "") };
        assert!(sh(&format!(
            "set -e; mkdir -p {d}/run; ip netns add {ns}; ip link add {v}a type veth peer name {v}b; \
             ip link set {v}b netns {ns}; ip addr add {a}/{net_len} dev {v}a {dad}; ip link set {v}a up; \
             ip netns exec {ns} ip addr add {b}/{net_len} dev {v}b {dad}; ip netns exec {ns} ip link set {v}b up; \
             ip netns exec {ns} ip link set lo up; ip netns exec {ns} ip addr add {ib}/{host} dev lo {dad}"
        )));
        std::fs::write(
            peer.dir.join("strongswan.conf"),
            format!(
                "charon {{\n load_modular = no\n load = random nonce openssl aes sha1 sha2 hmac gcm kdf pem pkcs1 \
                 x509 pubkey pkcs8 curve25519 kernel-libipsec kernel-netlink socket-default vici updown\n port = 500\n \
                 port_nat_t = 4500\n install_routes = yes\n plugins {{ vici {{ socket = unix://{d}/charon.vici }} }}\n \
                 filelog {{ main {{ path = {d}/charon.log\n default = 1\n ike = 2\n cfg = 2\n flush_line = yes\n time_add_ms = yes }} }}\n}}\n\
                 swanctl {{ socket = unix://{d}/charon.vici }}\n"
            ),
        )
        .unwrap();
        let (auth, ike, esp, secrets) = match our_spki {
            None => (
                "local {{ auth = psk\n id = bob.example }}\n remote {{ auth = psk\n id = alice.example }}",
                "aes256gcm16-prfsha256-x25519,aes128-sha256-ecp256",
                "aes128gcm16-x25519-esn-noesn",
                "secrets {{ ike-1 {{ id-1 = alice.example\n id-2 = bob.example\n secret = \"interop psk\" }} }}",
            ),
            Some(spki) => {
                std::fs::write(peer.dir.join("alice.der"), spki).unwrap();
                assert!(sh(&format!(
                    "set -e; cd {d}; mkdir -p pkcs8 pubkey; \
                     openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out pkcs8/bob.pem 2>/dev/null; \
                     openssl pkey -in pkcs8/bob.pem -pubout -out pubkey/bob.pem; \
                     openssl pkey -in pkcs8/bob.pem -pubout -outform DER -out bob.der; \
                     openssl pkey -pubin -inform DER -in alice.der -out pubkey/alice.pem"
                )));
                let der = std::fs::read(peer.dir.join("bob.der")).unwrap();
                peer.charon_pub = der[der.len() - 65..].to_vec();
                (
                    "local {{ auth = pubkey\n pubkeys = bob.pem\n id = bob.example }}\n \
                     remote {{ auth = pubkey\n pubkeys = alice.pem\n id = alice.example }}",
                    "aes128-sha256-ecp256",
                    "aes128-sha256-ecp256-esn-noesn",
                    "",
                )
            }
        };
        let auth = auth.replace("{{", "{").replace("}}", "}");
        let secrets = secrets.replace("{{", "{").replace("}}", "}");
        std::fs::write(
            peer.dir.join("swanctl.conf"),
            format!(
                "connections {{ hip {{ version = 2\n local_addrs = {b}\n remote_addrs = {a}\n \
                 proposals = {ike}\n rekey_time = 0\n {auth}\n \
                 children {{ c {{ local_ts = {ib}/{host}\n remote_ts = {ia}/{host}\n rekey_time = 0\n \
                 esp_proposals = {esp}\n mode = tunnel }} }} }} }}\n{secrets}\n"
            ),
        )
        .unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", ns, "sh", "-c"])
            .arg(format!("mount --make-rprivate / && mount --bind {d}/run /run && exec {CHARON}"))
            .env("STRONGSWAN_CONF", peer.dir.join("strongswan.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        peer.charon = Some(child);
        let vici = peer.dir.join("charon.vici");
        let t = Instant::now();
        while !vici.exists() && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let conf = peer.dir.join("strongswan.conf").display().to_string();
        assert!(sh(&format!(
            "STRONGSWAN_CONF={conf} SWANCTL_DIR={d} swanctl --load-all >/dev/null 2>&1"
        )));
        Some(peer)
    }

    /// Runs swanctl against this charon in the background.
    fn swanctl(&self, args: &str) -> Child {
        Command::new("sh")
            .arg("-c")
            .arg(format!("exec swanctl {args}"))
            .env("STRONGSWAN_CONF", self.dir.join("strongswan.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("charon.log")).unwrap_or_default()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Some(c) = self.charon.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        sh(&format!(
            "ip link del {}a 2>/dev/null; ip netns del {} 2>/dev/null",
            self.veth, self.ns
        ));
        if std::env::var_os("HIPSEC_KEEP_SWAN").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn config() -> Config {
    Config {
        local_id: Id::fqdn("alice.example"),
        remote_id: Some(Id::fqdn("bob.example")),
        auth: AuthConfig::Psk(Zeroizing::new(b"interop psk".to_vec())),
        ike_suites: vec![IkeSuite {
            encr: EncrAlg::Aead(AeadAlg::Aes256Gcm),
            integ: IntegAlg::None,
            prf: PrfAlg::HmacSha256,
            dh: DhGroup::Curve25519,
        }],
        child_suites: vec![ChildSuite {
            esp: EspSuite::new(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None).unwrap(),
            esn: false,
            pfs: Some(DhGroup::Curve25519),
        }],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    }
}

/// Sends `bytes` and waits for one datagram back (resending twice on silence). On port 4500 IKE
/// carries the 4-byte non-ESP marker (RFC 3948 §2.2).
fn xchg(sock: &UdpSocket, to: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let marker = if to.port() == 4500 { &[0u8; 4][..] } else { &[][..] };
    let mut buf = vec![0u8; 65536];
    for _ in 0..3 {
        sock.send_to(&[marker, bytes].concat(), to).unwrap();
        if let Ok((n, _)) = sock.recv_from(&mut buf) {
            return buf.get(marker.len()..n).unwrap().to_vec();
        }
    }
    panic!("no answer from charon");
}

/// Runs `out`'s datagrams through charon and the answers through `s`, until nothing is left.
fn drive(sock: &UdpSocket, to: SocketAddr, s: &mut Session, mut out: Output) -> Vec<Event> {
    let mut events = Vec::new();
    events.append(&mut out.events);
    let mut queue = out.send;
    while let Some(d) = (!queue.is_empty()).then(|| queue.remove(0)) {
        let reply = xchg(sock, to, &d);
        let o = s.handle(0, &reply).unwrap();
        events.extend(o.events);
        queue.extend(o.send);
    }
    events
}

#[test]
fn charon_accepts_our_initial_exchange_rekeys_and_delete() {
    let Some(peer) = Peer::start(0, None) else { return };
    let sock = UdpSocket::bind((peer.ours, 0)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let to = SocketAddr::new(peer.theirs, 500);
    let ep = Endpoints { local: sock.local_addr().unwrap(), remote: to };
    let p = crypto::default_provider();
    let (st, req) = initiator::start(config(), p, ep, 0).unwrap();
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
    let ts = |a: IpAddr| TrafficSelector::host(inner(a));
    assert_eq!(up.child.local_ts, vec![ts(peer.ours)], "charon narrows to its /32s");
    assert_eq!(up.child.remote_ts, vec![ts(peer.theirs)]);
    let (mut s, _) = Session::new(config(), p, up);

    let ev = ask(&sock, to, &mut s, Request::Liveness);
    assert!(matches!(ev[..], [Event::PeerAlive]), "{ev:?}");

    let old = s.children()[0].spi_in;
    let ev = ask(&sock, to, &mut s, Request::RekeyChild(old));
    assert!(
        matches!(&ev[..], [Event::InstallChild { rekeys: Some(o), .. }, Event::RemoveChild { spi_in, .. }] if *o == old && *spi_in == old),
        "{ev:?}\n{}",
        peer.log()
    );

    let ev = ask(&sock, to, &mut s, Request::RekeyIke);
    assert!(matches!(&ev[..], [Event::IkeRekeyed { .. }]), "{ev:?}\n{}", peer.log());
    // The DELETE of the old IKE SA went out inside drive(); charon answered it.
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

fn ask(sock: &UdpSocket, to: SocketAddr, s: &mut Session, r: Request) -> Vec<Event> {
    let out = s.request(0, r).unwrap();
    drive(sock, to, s, out)
}

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
                    self.events.push(Event::InstallChild { keys: Box::new(child), rekeys: None });
                    self.session = Some(s);
                    vec![reply]
                }
                ike::AuthOutcome::Failed(e, _) => panic!("we refused charon's IKE_AUTH: {e}"),
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
    for want in [
        "IKE_SA hip[1] established",
        "CHILD_SA c{1} established",
        "IKE_SA hip[2] rekeyed",
        "CHILD_SA c{3} established",
    ] {
        assert!(log.contains(want), "charon's log lacks {want:?}:\n{log}");
    }
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

/// IKE_SA_INIT + IKE_AUTH with `c`; returns the socket, charon's address (after any float to
/// 4500) and the session.
fn establish(peer: &Peer, c: Config) -> (UdpSocket, SocketAddr, Session) {
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
    (sock, to, Session::new(c, p, up).0)
}

fn send(sock: &UdpSocket, to: SocketAddr, d: &[u8]) {
    let marker = if to.port() == 4500 { &[0u8; 4][..] } else { &[][..] };
    sock.send_to(&[marker, d].concat(), to).unwrap();
}

fn recv(sock: &UdpSocket, to: SocketAddr) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 65536];
    let (n, _) = sock.recv_from(&mut buf).ok()?;
    buf.get(if to.port() == 4500 { 4 } else { 0 }..n).map(<[u8]>::to_vec)
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
