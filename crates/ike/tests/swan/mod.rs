//! Shared by the strongSwan interop tests: charon (5.9, ../shared/reference/strongswan-peer.md)
//! in a network namespace behind a veth pair, with a PSK or RFC 7427 public keys, and the little
//! UDP plumbing that drives the sans-IO core against it (port 4500 with the non-ESP marker).
#![allow(dead_code, reason = "each test binary uses part of it")]

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
pub struct Peer {
    ns: String,
    veth: String,
    pub dir: PathBuf,
    charon: Option<Child>,
    pub ours: IpAddr,
    pub theirs: IpAddr,
    /// charon's raw public key (uncompressed P-256 point), in the public-key variant.
    pub charon_pub: Vec<u8>,
}

/// 10.213.N.x (fd13:0:0:N::x) outside, 10.214.N.x (fd14:0:0:N::x) inside the tunnel.
pub fn inner(a: IpAddr) -> IpAddr {
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

pub fn sh(cmd: &str) -> bool {
    Command::new("sh").arg("-c").arg(cmd).status().is_ok_and(|s| s.success())
}

impl Peer {
    /// `tag` keeps the names and subnets of tests in one run apart. With `our_spki` (our public
    /// key, SubjectPublicKeyInfo DER) both ends authenticate with raw public keys (charon's an
    /// ECDSA P-256 key from openssl) and use AES-CBC + HMAC-SHA-256; else a PSK and AES-GCM.
    pub fn start(tag: u32, our_spki: Option<&[u8]>) -> Option<Peer> {
        Self::start_on(tag, our_spki, false)
    }

    /// As [`Peer::start`], over IPv6 outside and inside when `v6`.
    pub fn start_on(tag: u32, our_spki: Option<&[u8]>, v6: bool) -> Option<Peer> {
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
        let made = sh(&format!(
            "set -e; mkdir -p {d}/run; ip netns add {ns}; ip link add {v}a type veth peer name {v}b; \
             ip link set {v}b netns {ns}; ip addr add {a}/{net_len} dev {v}a {dad}; ip link set {v}a up; \
             ip netns exec {ns} ip addr add {b}/{net_len} dev {v}b {dad}; ip netns exec {ns} ip link set {v}b up; \
             ip netns exec {ns} ip link set lo up; ip netns exec {ns} ip addr add {ib}/{host} dev lo {dad}"
        ));
        if !made {
            println!("SKIPPED: cannot make a network namespace with a veth pair here");
            return None; // `peer` drops here and undoes what was made
        }
        std::fs::write(
            peer.dir.join("strongswan.conf"),
            format!(
                "charon {{\n load_modular = no\n load = random nonce openssl aes sha1 sha2 hmac gcm kdf pem pkcs1 \
                 x509 pubkey pkcs8 curve25519 kernel-libipsec kernel-netlink socket-default vici updown\n port = 500\n \
                 port_nat_t = 4500\n install_routes = yes\n plugins {{ vici {{ socket = unix://{d}/charon.vici }} }}\n \
                 filelog {{ main {{ path = {d}/charon.log\n default = 1\n ike = 4\n chd = 4\n cfg = 2\n flush_line = yes\n time_add_ms = yes }} }}\n}}\n\
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
    pub fn swanctl(&self, args: &str) -> Child {
        Command::new("sh")
            .arg("-c")
            .arg(format!("exec swanctl {args}"))
            .env("STRONGSWAN_CONF", self.dir.join("strongswan.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    pub fn log(&self) -> String {
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

pub fn config() -> Config {
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
        more_children: Vec::new(),
        peer_eap: None,
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
pub fn xchg(sock: &UdpSocket, to: SocketAddr, bytes: &[u8]) -> Vec<u8> {
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
pub fn drive(sock: &UdpSocket, to: SocketAddr, s: &mut Session, mut out: Output) -> Vec<Event> {
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

pub fn ask(sock: &UdpSocket, to: SocketAddr, s: &mut Session, r: Request) -> Vec<Event> {
    let out = s.request(0, r).unwrap();
    drive(sock, to, s, out)
}

/// IKE_SA_INIT + IKE_AUTH with `c`; returns the socket, charon's address (after any float to
/// 4500) and the session.
pub fn establish(peer: &Peer, c: Config) -> (UdpSocket, SocketAddr, Session) {
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

pub fn send(sock: &UdpSocket, to: SocketAddr, d: &[u8]) {
    let marker = if to.port() == 4500 { &[0u8; 4][..] } else { &[][..] };
    sock.send_to(&[marker, d].concat(), to).unwrap();
}

pub fn recv(sock: &UdpSocket, to: SocketAddr) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 65536];
    let (n, _) = sock.recv_from(&mut buf).ok()?;
    buf.get(if to.port() == 4500 { 4 } else { 0 }..n).map(<[u8]>::to_vec)
}

/// The byte dumps charon logs (at `ike = 4`, `chd = 4`) under `label`, in order: e.g.
/// "Sk_ei secret" or "encryption initiator key", each followed by `   0: 3D EF ...` lines.
pub fn charon_dumps(log: &str, label: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut lines = log.lines();
    while let Some(l) = lines.next() {
        let Some(rest) = l.split_once(&format!("] {label} => ")).map(|(_, r)| r) else { continue };
        let n: usize = rest.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let mut bytes = Vec::with_capacity(n);
        while bytes.len() < n {
            let Some(dump) = lines.next() else { break };
            let hex = dump.split_once(": ").map_or("", |(_, h)| h);
            let take = (n - bytes.len()).min(16);
            bytes.extend(hex.split(' ').take(take).filter_map(|h| u8::from_str_radix(h, 16).ok()));
        }
        out.push(bytes);
    }
    out
}
