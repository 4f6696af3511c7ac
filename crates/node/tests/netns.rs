//! Two hosts in network namespaces, a hipsec node in each, kernel traffic through the tunnel
//! (RFC 4303 ESP, carried in UDP per RFC 3948 or raw IP). The kernel has no IPsec of its own.
//!
//! ```text
//!   ns A (hipsec-t-PID-N-a)                          ns B (hipsec-t-PID-N-b)
//!   10.0.0.1/24 hipsec0 (TUN)                        hipsec0 (TUN) 10.0.0.2/24
//!        |  hipsec-node -c a.toml                 hipsec-node -c b.toml  |
//!   192.0.2.1/24 hv-a  ================ veth =================  hv-b 192.0.2.2/24
//! ```
//! Needs root, `ip netns` and /dev/net/tun; otherwise each test prints SKIPPED and passes.

#![allow(clippy::unwrap_used)] // test helpers: a failed setup step should panic with its error

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const NODE: &str = env!("CARGO_BIN_EXE_hipsec-node");
/// Appears every 4 KiB in the transferred data; must never appear on the wire.
const MARKER: &[u8] = b"HIPSEC-CLEARTEXT-MARKER-7f3a9c";
const PAYLOAD_LEN: usize = 4 << 20;
static SEQ: AtomicUsize = AtomicUsize::new(0);

fn can_run() -> bool {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let ip = Command::new("ip").args(["netns", "list"]).output().is_ok_and(|o| o.status.success());
    if !(root && ip && Path::new("/dev/net/tun").exists()) {
        println!("SKIPPED: needs root and ip netns (and /dev/net/tun)");
        return false;
    }
    true
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Sends SIGTERM (clean shutdown) to a child we started, then waits for it.
fn stop(child: &mut Child) {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    for _ in 0..50 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The topology; everything it made is removed on drop, also when a test panics.
struct Lab {
    ns: [String; 2],
    dir: PathBuf,
    nodes: Vec<Child>,
    /// `HIPSEC_NODE_TUNING` for the nodes (which speed-ups are off; empty: the defaults).
    tuning: &'static str,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.nodes {
            stop(c);
        }
        for ns in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[derive(Clone, Copy)]
enum Suite {
    Gcm,
    ChaCha,
    CbcSha256,
    /// ESP-NULL (integrity only): the negative control showing the capture check sees cleartext.
    NullSha256,
}

fn sa_keys(suite: Suite, seed: u8) -> String {
    let hex = |n: usize| {
        (0..n).map(|i| format!("{:02x}", seed.wrapping_add(i as u8))).collect::<String>()
    };
    match suite {
        Suite::Gcm => format!("aead = \"aes128gcm\"\nkey = \"{}\"\n", hex(20)),
        Suite::ChaCha => format!("aead = \"chacha20poly1305\"\nkey = \"{}\"\n", hex(36)),
        Suite::CbcSha256 => format!(
            "enc = \"aes128cbc\"\nenc-key = \"{}\"\nauth = \"sha256\"\nauth-key = \"{}\"\n",
            hex(16),
            hex(32).chars().rev().collect::<String>()
        ),
        Suite::NullSha256 => {
            format!("enc = \"null\"\nauth = \"sha256\"\nauth-key = \"{}\"\n", hex(32))
        }
    }
}

impl Lab {
    fn new() -> Lab {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let base = format!("hipsec-t-{}-{n}", std::process::id());
        let dir = std::env::temp_dir().join(&base);
        let lab = Lab {
            ns: [format!("{base}-a"), format!("{base}-b")],
            dir,
            nodes: Vec::new(),
            tuning: "",
        };
        std::fs::create_dir_all(&lab.dir).unwrap();
        let [a, b] = &lab.ns;
        sh(&["ip", "netns", "add", a]);
        sh(&["ip", "netns", "add", b]);
        sh(&[
            "ip", "link", "add", "hv-a", "netns", a, "type", "veth", "peer", "name", "hv-b",
            "netns", b,
        ]);
        for (ns, dev, addr) in [(a, "hv-a", "192.0.2.1/24"), (b, "hv-b", "192.0.2.2/24")] {
            sh(&["ip", "-n", ns, "addr", "add", addr, "dev", dev]);
            sh(&["ip", "-n", ns, "link", "set", dev, "up"]);
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        lab
    }

    fn sock(&self, side: usize) -> PathBuf {
        self.dir.join(format!("node{side}.sock"))
    }

    /// Config of side 0 (A) or 1 (B); `with_out` false leaves out the outbound SA and its policy.
    fn config(&self, side: usize, suite: Suite, raw: bool, with_out: bool) -> PathBuf {
        let me = ["192.0.2.1", "192.0.2.2"][side];
        let peer = ["192.0.2.1", "192.0.2.2"][1 - side];
        let (spi_out, spi_in) = if side == 0 { (0x1001, 0x2001) } else { (0x2001, 0x1001) };
        let (seed_out, seed_in) = if side == 0 { (1, 101) } else { (101, 1) };
        let (local, peer_ep) = if raw {
            (me.to_string(), peer.to_string())
        } else {
            (format!("{me}:4500"), format!("{peer}:4500"))
        };
        let mut t = format!(
            "[interface]\nname = \"hipsec0\"\nmtu = 1500\naddresses = [\"10.0.0.{}/24\"]\n\n\
             [network]\ntransport = \"{}\"\nlocal = \"{local}\"\npeer = \"{peer_ep}\"\n\n\
             [control]\nsocket = \"{}\"\n\n",
            side + 1,
            if raw { "raw" } else { "udp" },
            self.sock(side).display()
        );
        let sa = |name: &str, dir: &str, src: &str, dst: &str, spi: u32, seed: u8| {
            format!(
                "[[sa]]\nname = \"{name}\"\ndirection = \"{dir}\"\nproto = \"esp\"\nmode = \"tunnel\"\n\
                 src = \"{src}\"\ndst = \"{dst}\"\nspi = {spi}\n{}\n",
                sa_keys(suite, seed)
            )
        };
        if with_out {
            t += &sa("out", "out", me, peer, spi_out, seed_out);
        }
        t += &sa("in", "in", peer, me, spi_in, seed_in);
        if with_out {
            t += "[[policy]]\nsrc = \"10.0.0.0/24\"\ndst = \"10.0.0.0/24\"\naction = \"protect\"\nsas = [\"out\"]\n";
        }
        let path = self.dir.join(format!("node{side}.toml"));
        std::fs::write(&path, t).unwrap();
        path
    }

    /// Starts the node of `side` and waits until its control socket answers.
    fn start(&mut self, side: usize, config: &Path) {
        let log = File::create(self.dir.join(format!("node{side}.log"))).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns[side], NODE, "-c"])
            .arg(config)
            .env("HIPSEC_NODE_TUNING", self.tuning)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.nodes.push(child);
        for _ in 0..200 {
            if node::status(&self.sock(side)).is_ok() {
                return;
            }
            if let Some(Ok(Some(_))) = self.nodes.last_mut().map(|c| c.try_wait()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log =
            std::fs::read_to_string(self.dir.join(format!("node{side}.log"))).unwrap_or_default();
        panic!("node {side} did not come up:\n{log}");
    }

    fn status(&self, side: usize) -> serde_json::Value {
        serde_json::from_str(&node::status(&self.sock(side)).unwrap()).unwrap()
    }

    /// Runs `f` on a thread that has entered namespace `side`.
    fn in_ns<T: Send + 'static>(
        &self,
        side: usize,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let path = format!("/var/run/netns/{}", self.ns[side]);
        std::thread::spawn(move || {
            let fd = File::open(&path).unwrap();
            nix::sched::setns(&fd, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            f()
        })
    }
}

fn checksum(data: &[u8]) -> Vec<u8> {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data).as_ref().to_vec()
}

fn icmp_checksum(p: &[u8]) -> u16 {
    let mut s: u32 =
        p.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Sends ICMP echo requests to `dst` (up to `tries`, 500 ms each); true on the first reply.
fn ping(dst: Ipv4Addr, tries: u16) -> bool {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let s = std::net::UdpSocket::from(s);
    let id = (std::process::id() as u16).to_be_bytes();
    for seq in 1..=tries {
        let mut req = [8u8, 0, 0, 0, id[0], id[1], 0, 0, b'h', b'i', b'p', b's'];
        req[6..8].copy_from_slice(&seq.to_be_bytes());
        let c = icmp_checksum(&req);
        req[2..4].copy_from_slice(&c.to_be_bytes());
        s.send_to(&req, SocketAddr::from((dst, 0))).unwrap();
        let mut buf = [0u8; 1500];
        while let Ok((n, _)) = s.recv_from(&mut buf) {
            // Raw IPv4 sockets deliver the IP header; the ICMP message follows it.
            let ihl = (buf[0] & 0x0f) as usize * 4;
            if n >= ihl + 8 && buf[ihl] == 0 && buf[ihl + 4..ihl + 6] == id {
                return true;
            }
        }
    }
    false
}

fn payload() -> Vec<u8> {
    let mut data = vec![0u8; PAYLOAD_LEN];
    aws_lc_rs::rand::fill(&mut data).unwrap();
    for chunk in data.chunks_mut(4096) {
        chunk[..MARKER.len()].copy_from_slice(MARKER);
    }
    data
}

/// Starts tcpdump on the veth of A; returns None (and says so) if tcpdump is not installed.
fn capture(lab: &Lab, file: &Path) -> Option<Child> {
    let mut c = Command::new("ip")
        .args(["netns", "exec", &lab.ns[0], "tcpdump", "-i", "hv-a", "-U", "-s", "0", "-n", "-w"])
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    // tcpdump says "listening on ..." once the capture runs; EOF means it failed to start.
    let mut err = BufReader::new(c.stderr.take()?);
    let mut line = String::new();
    while err.read_line(&mut line).ok()? > 0 {
        if line.contains("listening on") {
            std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
            return Some(c);
        }
        line.clear();
    }
    println!("SKIPPED capture check: tcpdump did not start ({line})");
    let _ = c.wait();
    None
}

fn tunnel_round_trip(suite: Suite, raw: bool) {
    tunnel_round_trip_tuned(suite, raw, "");
}

/// The round trip with the nodes' speed-ups set by `tuning` (see `node::worker::Tuning`).
fn tunnel_round_trip_tuned(suite: Suite, raw: bool, tuning: &'static str) {
    if !can_run() {
        return;
    }
    let mut lab = Lab::new();
    lab.tuning = tuning;
    let (ca, cb) = (lab.config(0, suite, raw, true), lab.config(1, suite, raw, true));
    lab.start(0, &ca);
    lab.start(1, &cb);

    assert!(lab.in_ns(0, || ping(Ipv4Addr::new(10, 0, 0, 2), 10)).join().unwrap(), "no ping reply");

    let pcap = lab.dir.join("veth.pcap");
    let mut tcpdump = capture(&lab, &pcap);
    let (tx, rx) = std::sync::mpsc::channel();
    let server = lab.in_ns(1, move || {
        let l = TcpListener::bind("10.0.0.2:5001").unwrap();
        tx.send(()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut got = Vec::with_capacity(PAYLOAD_LEN);
        s.read_to_end(&mut got).unwrap();
        (got.len(), checksum(&got))
    });
    rx.recv().unwrap();
    let data = payload();
    let want = checksum(&data);
    lab.in_ns(0, move || {
        let mut s =
            TcpStream::connect_timeout(&"10.0.0.2:5001".parse().unwrap(), Duration::from_secs(10))
                .unwrap();
        s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(&data).unwrap();
    })
    .join()
    .unwrap();
    let (len, got) = server.join().unwrap();
    assert_eq!(len, PAYLOAD_LEN);
    assert_eq!(got, want, "SHA-256 differs after the tunnel");

    if let Some(c) = tcpdump.as_mut() {
        stop(c);
        let cap = std::fs::read(&pcap).unwrap();
        assert!(
            cap.len() > PAYLOAD_LEN,
            "capture too small ({} bytes): not the transfer",
            cap.len()
        );
        let leaks = cap.windows(MARKER.len()).filter(|w| *w == MARKER).count();
        if matches!(suite, Suite::NullSha256) {
            assert!(
                leaks > 100,
                "ESP-NULL carries cleartext, yet the capture shows {leaks} markers"
            );
        } else {
            assert_eq!(leaks, 0, "cleartext marker seen {leaks} times on the veth");
        }
    }

    let st = lab.status(0);
    assert!(st["engine"]["protected"].as_u64().unwrap() > 1000, "{st}");
    assert_eq!(st["drops"]["integrity_failed"], 0, "{st}");
    let sb = lab.status(1);
    assert!(sb["engine"]["decapsulated"].as_u64().unwrap() > 1000, "{sb}");
    assert_eq!(sb["drops"]["integrity_failed"], 0, "{sb}");
    let workers = sb["workers"].as_array().unwrap();
    let want = if tuning.contains("two-workers") { 2 } else { workers.len().max(1) };
    assert_eq!(workers.len(), want, "{sb}");
    assert!(workers.iter().all(|w| w["cpu_s"].is_number()), "{sb}");
}

#[test]
fn aes_gcm_udp_ping_tcp_and_no_cleartext() {
    tunnel_round_trip(Suite::Gcm, false);
}

/// Two workers per node: one seals (owns the outbound SA), one opens (owns the inbound SA).
#[test]
fn aes_gcm_udp_two_workers() {
    tunnel_round_trip_tuned(Suite::Gcm, false, "two-workers");
}

/// The plain paths: one datagram per system call, no TUN offloads (phase 1's data path).
#[test]
fn aes_gcm_udp_without_batching_or_offloads() {
    tunnel_round_trip_tuned(Suite::Gcm, false, "no-mmsg,no-offload,no-buffers");
}

/// sendmmsg/recvmmsg without UDP GSO/GRO, with TUN offloads (super-packets split and coalesced).
#[test]
fn aes_gcm_udp_mmsg_without_gso_gro() {
    tunnel_round_trip_tuned(Suite::Gcm, false, "no-gso,no-gro");
}

#[test]
fn chacha20_poly1305_udp() {
    tunnel_round_trip(Suite::ChaCha, false);
}

#[test]
fn aes_cbc_hmac_sha256_udp() {
    tunnel_round_trip(Suite::CbcSha256, false);
}

/// Negative control: with ESP-NULL the marker must be found, so the check above can fail.
#[test]
fn esp_null_capture_shows_cleartext() {
    tunnel_round_trip(Suite::NullSha256, false);
}

#[test]
fn aes_gcm_raw_esp() {
    tunnel_round_trip(Suite::Gcm, true);
}

/// Fail closed: without an outbound SA (and so without a policy) nothing leaves A.
#[test]
fn missing_outbound_sa_sends_nothing() {
    if !can_run() {
        return;
    }
    let mut lab = Lab::new();
    let (ca, cb) =
        (lab.config(0, Suite::Gcm, false, false), lab.config(1, Suite::Gcm, false, true));
    lab.start(0, &ca);
    lab.start(1, &cb);
    assert!(
        !lab.in_ns(0, || ping(Ipv4Addr::new(10, 0, 0, 2), 3)).join().unwrap(),
        "ping got through"
    );
    let sa = lab.status(0);
    assert!(sa["node"]["tun_rx"].as_u64().unwrap() >= 3, "{sa}");
    let refused =
        sa["drops"]["no_policy"].as_u64().unwrap() + sa["drops"]["no_sa"].as_u64().unwrap();
    assert!(refused >= 3, "{sa}");
    assert_eq!(sa["node"]["net_tx"], 0, "{sa}");
    let sb = lab.status(1);
    assert_eq!(sb["node"]["net_rx"], 0, "peer received something: {sb}");
}

/// A bad config stops the node before it makes a device; the error names file, line, field.
#[test]
fn bad_config_refuses_to_start() {
    let dir = std::env::temp_dir().join(format!("hipsec-t-{}-badcfg", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    let text = include_str!("../../../docs/node-example.toml")
        .replace("mode = \"tunnel\"", "mode = \"tunel\"");
    std::fs::write(&path, text).unwrap();
    let out = Command::new(NODE).arg("-c").arg(&path).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("bad.toml:") && err.contains("\"mode\""), "{err}");
}

/// RFC 3948: a datagram opening with the 4-byte non-ESP marker is IKE (dropped and counted here),
/// a lone 0xff byte is a NAT-keepalive (ignored and counted); neither reaches the engine.
#[test]
fn ike_marker_and_keepalive_are_counted() {
    if !can_run() {
        return;
    }
    let mut lab = Lab::new();
    let (ca, cb) = (lab.config(0, Suite::Gcm, false, true), lab.config(1, Suite::Gcm, false, true));
    lab.start(0, &ca);
    lab.start(1, &cb);
    lab.in_ns(0, || {
        let s = std::net::UdpSocket::bind("192.0.2.1:0").unwrap();
        s.send_to(&[0, 0, 0, 0, 0x21, 0x20, 0x22, 0x08], "192.0.2.2:4500").unwrap();
        s.send_to(&[0xff], "192.0.2.2:4500").unwrap();
        // A ping after them: once it is answered, B has read both datagrams before it.
        assert!(ping(Ipv4Addr::new(10, 0, 0, 2), 10), "no ping reply");
    })
    .join()
    .unwrap();
    let sb = lab.status(1);
    assert_eq!(sb["node"]["ike_dropped"], 1, "{sb}");
    assert_eq!(sb["node"]["keepalives"], 1, "{sb}");
    assert_eq!(sb["drops"]["malformed"], 0, "{sb}");
}

/// Issue 5: B's filter blocks TCP to port 5002 after decapsulation and passes 5001; the block is
/// counted per rule in `hipsec status`; a bad rule file given to `reload-filter` keeps the rules.
#[test]
fn filter_blocks_after_decapsulation_and_reloads() {
    if !can_run() {
        return;
    }
    let mut lab = Lab::new();
    let rules = lab.dir.join("rules.txt");
    std::fs::write(&rules, "# test rules\nblock in quick proto tcp from any to any port 5002\n")
        .unwrap();
    let ca = lab.config(0, Suite::Gcm, false, true);
    let cb = lab.config(1, Suite::Gcm, false, true);
    let mut text = std::fs::read_to_string(&cb).unwrap();
    text += &format!("\n[filter]\nrules = \"{}\"\nengine = \"classifier\"\n", rules.display());
    std::fs::write(&cb, text).unwrap();
    lab.start(0, &ca);
    lab.start(1, &cb);
    let listeners = lab.in_ns(1, || {
        let a = TcpListener::bind("10.0.0.2:5001").unwrap();
        let b = TcpListener::bind("10.0.0.2:5002").unwrap();
        (a, b)
    });
    let (_a, _b) = listeners.join().unwrap();
    let tries = lab
        .in_ns(0, || {
            let t = |port: u16| {
                let addr = std::net::SocketAddr::from(([10, 0, 0, 2], port));
                TcpStream::connect_timeout(&addr, Duration::from_millis(700)).is_ok()
            };
            (t(5001), t(5002))
        })
        .join()
        .unwrap();
    assert_eq!(tries, (true, false), "port 5001 should pass, 5002 be blocked");
    let sb = lab.status(1);
    assert!(sb["filter"]["blocked"].as_u64().unwrap() >= 1, "{sb}");
    assert!(sb["filter"]["rule_hits"][0].as_u64().unwrap() >= 1, "{sb}");
    assert!(sb["node"]["filter_blocked"].as_u64().unwrap() >= 1, "{sb}");

    std::fs::write(&rules, "block in proto tcp from any to any port http\n").unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&node::command(&lab.sock(1), "reload-filter").unwrap()).unwrap();
    assert_eq!(r["reloaded"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("line 1"), "{r}");
    std::fs::write(&rules, "pass all\n").unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&node::command(&lab.sock(1), "reload-filter").unwrap()).unwrap();
    assert_eq!(r["reloaded"], true, "{r}");
    let ok = lab
        .in_ns(0, || {
            let addr = std::net::SocketAddr::from(([10, 0, 0, 2], 5002));
            TcpStream::connect_timeout(&addr, Duration::from_millis(700)).is_ok()
        })
        .join()
        .unwrap();
    assert!(ok, "after reload to 'pass all', port 5002 passes");
}
