//! Two hipsec nodes negotiating with each other over IKEv2: a trap policy's first
//! packet starts the exchange (dropped, never sent in clear); then CHILD SAs are rekeyed many
//! times a second from both ends, make-before-break, under a ping and a TCP stream, and
//! nothing is lost or dropped for lack of an SA.
//!
//! ```text
//!   ns A: hipsec0 10.0.1.1/24 ── va 192.0.2.1 ══ vb 192.0.2.2 ── hipsec0 10.0.2.1/24 :ns B
//!         [[connection]] start_action = trap         start_action = none
//! ```
//! Needs root, netns and TUN; otherwise SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::BIN;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

struct Nodes {
    ns: [String; 2],
    dir: PathBuf,
    nodes: Vec<Child>,
}

impl Nodes {
    /// Node A with CHILD rekey_time `rekey` less up to `rand`; node B with `rekey_b`.
    fn start(rekey: &str, rand: &str, rekey_b: &str) -> Nodes {
        Nodes::start_lines((rekey, rand, rekey_b), "", "")
    }

    /// [`Nodes::start`] with lines added to both nodes' `[interface]` and `[[connection]]`.
    fn start_lines((rekey, rand, rekey_b): (&str, &str, &str), iface: &str, conn: &str) -> Nodes {
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = format!("hikn-{}-{k}", std::process::id());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(&base);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ns = common::two_namespaces(&base);
        let mut n = Nodes { ns: ns.clone(), dir, nodes: Vec::new() };
        for (i, nsi) in ns.iter().enumerate() {
            let (me, peer) = (i + 1, 2 - i);
            let start = if i == 0 { "trap" } else { "none" };
            let (rekey, rand) = if i == 0 { (rekey, rand) } else { (rekey_b, rand) };
            let conf = format!(
                "[interface]\nname = \"hipsec0\"\n{iface}addresses = [\"10.0.{me}.1/24\"]\n[network]\nlocal = \"192.0.2.{me}:4500\"\n[control]\nsocket = \"{sock}\"\n[[connection]]\nname = \"site\"\nremote_addrs = \"192.0.2.{peer}\"\nproposals = [\"aes128gcm16-prfsha256-x25519\"]\nrekey_time = \"20s\"\n{conn}[connection.local]\nid = \"node{me}.example\"\n[connection.remote]\nid = \"node{peer}.example\"\n[connection.children.net]\nlocal_ts = [\"10.0.{me}.0/24\"]\nremote_ts = [\"10.0.{peer}.0/24\"]\nesp_proposals = [\"aes128gcm16\", \"aes128gcm16-x25519\"]\nrekey_time = \"{rekey}\"\nlife_time = \"2h\"\nrand_time = \"{rand}\"\nstart_action = \"{start}\"\n[secrets.ike-1]\nid = [\"node1.example\", \"node2.example\"]\nsecret = \"two hipsec nodes\"\n",
                sock = n.sock(i).display(),
            );
            let path = n.dir.join(format!("{i}.toml"));
            std::fs::write(&path, conf).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            n.nodes.push(common::start_node(nsi, &n.dir, i, &[]));
            let other = format!("10.0.{peer}.0/24");
            common::sh(&["ip", "-n", nsi, "route", "replace", &other, "dev", "hipsec0"]);
        }
        n
    }

    fn sock(&self, i: usize) -> PathBuf {
        self.dir.join(format!("{i}.sock"))
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dir.join(format!("{i}.log"))).unwrap_or_default()
    }

    fn status(&self, i: usize) -> serde_json::Value {
        let out = Command::new(BIN).args(["status", "--json"]).arg(self.sock(i)).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    fn ping(&self, count: u64, interval: &str) -> u64 {
        self.ping_rtt(count, interval).0
    }

    /// (answers, mean round-trip ms) of `ping -c count`.
    fn ping_rtt(&self, count: u64, interval: &str) -> (u64, f64) {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns[0],
                "ping",
                "-q",
                "-c",
                &count.to_string(),
                "-i",
                interval,
                "-W",
                "1",
                "-I",
                "10.0.1.1",
                "10.0.2.1",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let got = common::ping_received(&out.stdout);
        // "rtt min/avg/max/mdev = 0.040/0.061/0.102/0.010 ms"
        let avg = text
            .split(" = ")
            .nth(1)
            .and_then(|v| v.split('/').nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN);
        (got, avg)
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for c in &mut self.nodes {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let _ = c.wait();
        }
        for ns in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn drops(st: &serde_json::Value, r: &str) -> u64 {
    st["drops"][r].as_u64().unwrap_or(0)
}

/// The trap: the first packet is dropped and counted as `no_sa` (it met the trap policy, whose
/// SA does not exist), its acquire starts IKE, and the next packets flow on the new CHILD SA.
#[test]
fn a_trap_policy_starts_the_exchange() {
    if !common::netns_ready(&[]) {
        return;
    }
    let n = Nodes::start("1h", "0s", "1h");
    assert!(n.log(0).contains("ike-trap"), "{}", n.log(0));
    assert_eq!(
        n.status(0)["ike"]["ike_sas"].as_array().map(Vec::len),
        Some(0),
        "nothing before traffic"
    );
    let got = n.ping(10, "0.2");
    let st = n.status(0);
    assert!(got >= 9, "at most the first ping is lost: {got}/10\n{}", n.log(0));
    assert!(drops(&st, "no_sa") >= 1, "the first packet met the trap: {st}");
    assert!(n.log(0).contains("ike-acquire") && n.log(0).contains("child-sa-up"), "{}", n.log(0));
}

/// Seconds of the soak (`HIPSEC_IKE_SOAK_SECONDS`; 300 rekeys take about 100 s).
fn soak_seconds() -> u64 {
    std::env::var("HIPSEC_IKE_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20)
}

/// CHILD rekeys every 300 ms less up to 100 ms of rand_time started by node A, under 100
/// pings a second and a TCP stream: every ping answered, the stream intact, 0 packets dropped
/// for lack of an SA.
#[test]
fn rekeys_between_two_nodes_lose_nothing() {
    soak("300ms", "1h");
}

/// The same with both ends rekeying every 200-300 ms, so that their rekeys often cross
/// (§2.8.1): the loser's pair is never sent on, the winner's takes over.
#[test]
fn crossing_rekeys_between_two_nodes_lose_nothing() {
    soak("300ms", "300ms");
}

fn soak(rekey_a: &str, rekey_b: &str) {
    if !common::netns_ready(&[]) {
        return;
    }
    let secs = soak_seconds();
    let n = Nodes::start(rekey_a, "100ms", rekey_b);
    // The trap's first packet starts IKE (and is dropped); then the tunnel is up.
    let _ = n.ping(3, "0.2");
    assert_eq!(n.ping(3, "0.1"), 3, "the tunnel is up after the trap\n{}", n.log(0));
    let before = drops(&n.status(0), "no_sa");
    let sink = "import hashlib,socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('10.0.2.1',5203));s.listen(1);print('ready',flush=True)\nc,_=s.accept();h=hashlib.sha256()\nwhile True:\n  b=c.recv(65536)\n  if not b: break\n  h.update(b)\nprint(h.hexdigest())";
    let mut server = Command::new("ip")
        .args(["netns", "exec", &n.ns[1], "python3", "-c", sink])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(server.stdout.take().unwrap()));
    assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("ready"));
    let send = format!(
        "import hashlib,os,socket,time\ns=socket.create_connection(('10.0.2.1',5203),source_address=('10.0.1.1',0),timeout=30)\nh=hashlib.sha256();n=0;t0=time.time()\nwhile time.time()-t0<{secs}:\n  d=os.urandom(16384);s.sendall(d);h.update(d);n+=16384\n  ahead=n*8/50e6-(time.time()-t0)\n  if ahead>0: time.sleep(ahead)\ns.close()\nprint(h.hexdigest())"
    );
    let pings = secs * 100;
    let ((got, rtt_ms), sent) = std::thread::scope(|s| {
        let ping = s.spawn(|| n.ping_rtt(pings, "0.01"));
        let out = Command::new("ip")
            .args(["netns", "exec", &n.ns[0], "python3", "-c", &send])
            .output()
            .unwrap();
        (ping.join().unwrap(), String::from_utf8_lossy(&out.stdout).trim().to_string())
    });
    let far = lines.next().and_then(Result::ok).unwrap_or_default();
    let _ = server.wait();
    let (a, b) = (n.status(0), n.status(1));
    let rekeys =
        |st: &serde_json::Value| st["ike"]["ike_sas"][0]["child_rekeys"].as_u64().unwrap_or(0);
    let short = |st: &serde_json::Value| {
        st["drops"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(_, v)| v.as_u64() != Some(0))
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    };
    println!(
        "{secs} s: pings {got}/{pings} (mean RTT {rtt_ms:.3} ms, under load); CHILD rekeys seen by A {} (A started {}, median {} µs, exchange alone {} µs), by B {} (B started {}); drops A {}, B {}",
        rekeys(&a),
        a["ike"]["ike_sas"][0]["our_rekeys"],
        a["ike"]["ike_sas"][0]["our_rekey_delay_median_us"],
        a["ike"]["ike_sas"][0]["our_rekey_exchange_median_us"],
        rekeys(&b),
        b["ike"]["ike_sas"][0]["our_rekeys"],
        short(&a),
        short(&b)
    );
    assert_eq!(got, pings, "pings lost\n{}", n.log(0));
    assert_eq!(far, sent, "the TCP stream arrived changed");
    assert!(rekeys(&a) >= secs * 2, "too few rekeys: {}", rekeys(&a));
    // The trap's first packet is the only no_sa drop, before the soak began.
    assert_eq!(drops(&a, "no_sa"), before, "no_sa during the soak: {a}");
    assert_eq!(drops(&b, "no_sa"), 0, "no_sa: {b}");
    for st in [&a, &b] {
        for r in ["replayed", "integrity_failed", "inbound_policy_mismatch", "sa_expired"] {
            assert_eq!(drops(st, r), 0, "{r}: {st}");
        }
    }
}

/// Both nodes rekey the IKE SA at the same instant, five times, under 100 pings a second.
/// RFC 7296 §2.8.2: "The new IKE SA containing the lowest nonce SHOULD be deleted by the node
/// that created it, and the other surviving new IKE SA MUST inherit all the Child SAs." Each
/// collision must end with one IKE SA left on each side, the same one on both, its CHILD SA
/// moved to it, and not a ping lost.
#[test]
fn simultaneous_ike_rekeys_leave_one_ike_sa_and_lose_nothing() {
    if !common::netns_ready(&[]) {
        return;
    }
    let n = Nodes::start("1h", "0s", "1h");
    let _ = n.ping(3, "0.2");
    assert_eq!(n.ping(3, "0.1"), 3, "the tunnel is up after the trap\n{}", n.log(0));
    let spis = |i: usize| -> Vec<(String, String, String)> {
        n.status(i)["ike"]["ike_sas"]
            .as_array()
            .map(|v| {
                v.iter()
                    .map(|s| {
                        let f = |k: &str| s[k].as_str().unwrap_or_default().to_string();
                        (f("state"), f("spi_i"), f("spi_r"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = spis(0);
    let rounds = 5;
    let got = std::thread::scope(|s| {
        let ping = s.spawn(|| n.ping(400, "0.01"));
        for _ in 0..rounds {
            std::thread::sleep(std::time::Duration::from_millis(500));
            let both: Vec<_> = (0..2)
                .map(|i| {
                    Command::new(BIN)
                        .args(["rekey", "--ike"])
                        .arg(n.sock(i))
                        .arg("site")
                        .stdout(Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect();
            for mut c in both {
                assert!(c.wait().unwrap().success());
            }
        }
        ping.join().unwrap()
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (a, b) = (spis(0), spis(1));
    println!("IKE SAs before {first:?}; after {rounds} simultaneous rekeys: A {a:?}, B {b:?}");
    assert_eq!(got, 400, "pings lost\n{}\n{}", n.log(0), n.log(1));
    assert_eq!(a.len(), 1, "A holds {a:?}\n{}", n.log(0));
    assert_eq!(b.len(), 1, "B holds {b:?}\n{}", n.log(1));
    assert_eq!(a[0].0, "established");
    assert_eq!((&a[0].1, &a[0].2), (&b[0].1, &b[0].2), "the two ends kept different IKE SAs");
    assert_ne!((&a[0].1, &a[0].2), (&first[0].1, &first[0].2), "no rekey happened");
    let children = n.status(0)["ike"]["ike_sas"][0]["children"].as_array().map_or(0, Vec::len);
    assert!(children >= 1, "the CHILD SA did not move to the new IKE SA");
    assert_eq!(n.ping(5, "0.1"), 5);
}

/// Both nodes with two lanes (`queues = 2`, ESP in UDP): each CHILD SA's outbound SA is on
/// both lanes with one sequence counter, and every lane sends from the group's port, so the
/// peer's receiver never sees a packet of an SA from a new port (which it would follow as a
/// NAT rebinding, RFC 3948 §3.1). Pings through CHILD rekeys by both and many flows at once:
/// nothing lost, no rebinding on either node, and both lanes of A sealed on one SA.
#[test]
fn two_lanes_on_both_nodes_seal_one_sa_and_never_look_rebound() {
    if !common::netns_ready(&["ping"]) {
        return;
    }
    let n = Nodes::start_lines(("4s", "1s", "5s"), "queues = 2\n", "encap = true\n");
    // The trap holds the first packet while IKE runs (its answer may come late).
    n.ping(3, "0.3");
    let py = "import socket\nfor i in range(64):\n  s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n  s.bind(('10.0.1.1',0))\n  s.sendto(b'x'*200,('10.0.2.1',9))\n  s.close()\n";
    let out =
        Command::new("ip").args(["netns", "exec", &n.ns[0], "python3", "-c", py]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let st = n.status(0);
    let spi_out =
        st["ike"]["ike_sas"][0]["children"][0]["spi_out"].as_str().unwrap_or_default().to_string();
    let lanes: Vec<u64> = st["sas"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| {
            s["direction"] == "out" && s["spi"].as_str().is_some_and(|x| x.ends_with(&spi_out))
        })
        .filter(|s| s["packets"].as_u64().unwrap_or(0) > 0)
        .filter_map(|s| s["lane"].as_u64())
        .collect();
    assert_eq!(lanes.len(), 2, "both lanes seal on {spi_out}: {}", st["sas"]);
    let got = n.ping(100, "0.1");
    assert_eq!(got, 100, "pings lost\n--- A\n{}\n--- B\n{}", n.log(0), n.log(1));
    for i in 0..2 {
        let st = n.status(i);
        assert_eq!(st["node"]["nat_rebinds"], 0, "node {i} saw a rebinding\n{}", n.log(i));
        let rekeys = st["ike"]["ike_sas"][0]["child_rekeys"].as_u64().unwrap_or(0);
        assert!(rekeys >= 1, "node {i}: no CHILD rekey in 10 s: {}", st["ike"]);
    }
}
