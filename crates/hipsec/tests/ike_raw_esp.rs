//! Which carrier an IKE-made CHILD SA's ESP takes on the wire, checked on a capture with
//! scapy's own ESP (tests/interop/scapy_raw_esp.py). RFC 3948's abstract: "This protocol
//! specification defines methods to encapsulate and decapsulate IP Encapsulating Security
//! Payload (ESP) packets inside UDP packets for traversing Network Address Translators." RFC
//! 7296 §2.23 moves ESP into UDP when NAT detection finds a NAT (its wording was not at hand).
//! So between two nodes with no NAT and `encap` off, ESP goes as IP protocol 50; with
//! `encap = true`, in UDP to port 4500.
//!
//! ```text
//!   ns A: hipsec0 10.0.1.1/24 ── va 192.0.2.1 ══ vb 192.0.2.2 ── hipsec0 10.0.2.1/24 :ns B
//!         start_action = start                     (tcpdump on vb; scapy sends from B)
//! ```
//! Needs root, netns, TUN, tcpdump and the venv with scapy; otherwise SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::BIN;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Nodes {
    ns: [String; 2],
    dir: PathBuf,
    nodes: Vec<Child>,
}

impl Nodes {
    fn start(encap: bool) -> Nodes {
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = format!("hirw-{}-{k}", std::process::id());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(&base);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ns = common::two_namespaces(&base);
        let mut n = Nodes { ns: ns.clone(), dir, nodes: Vec::new() };
        for (i, nsi) in ns.iter().enumerate() {
            let (me, peer) = (i + 1, 2 - i);
            let start = if i == 0 { "start" } else { "none" };
            let conf = format!(
                "[interface]\nname = \"hipsec0\"\naddresses = [\"10.0.{me}.1/24\"]\n[network]\nlocal = \"192.0.2.{me}:4500\"\n[control]\nsocket = \"{sock}\"\n[[connection]]\nname = \"site\"\nremote_addrs = \"192.0.2.{peer}\"\nproposals = [\"aes128gcm16-prfsha256-x25519\"]\nencap = {encap}\n[connection.local]\nid = \"node{me}.example\"\n[connection.remote]\nid = \"node{peer}.example\"\n[connection.children.net]\nlocal_ts = [\"10.0.{me}.0/24\"]\nremote_ts = [\"10.0.{peer}.0/24\"]\nesp_proposals = [\"aes128gcm16\"]\nstart_action = \"{start}\"\n[secrets.ike-1]\nid = [\"node1.example\", \"node2.example\"]\nsecret = \"two hipsec nodes\"\n",
                sock = n.sock(i).display(),
            );
            let path = n.dir.join(format!("{i}.toml"));
            std::fs::write(&path, conf).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            n.nodes.push(common::start_node(nsi, &n.dir, i, &["--debug-export-ike-keys"]));
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

    fn status(&self, i: usize) -> Value {
        let out = Command::new(BIN).args(["status", "--json"]).arg(self.sock(i)).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    /// The first child of node `i`'s first IKE SA, once it is installed (up to 10 s).
    fn child(&self, i: usize) -> Value {
        for _ in 0..100 {
            let c = self.status(i)["ike"]["ike_sas"][0]["children"][0].clone();
            if c["esp"].is_string() {
                return c;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("no CHILD SA on node {i}\n{}", self.log(i));
    }

    fn ping(&self, count: u64) -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.ns[0], "ping", "-q", "-c", &count.to_string()])
            .args(["-i", "0.1", "-W", "1", "-I", "10.0.1.1", "10.0.2.1"])
            .output()
            .unwrap();
        common::ping_received(&out.stdout)
    }

    /// Runs `scapy_raw_esp.py ARGS` in namespace `ns` and parses its JSON line.
    fn scapy(&self, python: &Path, ns: &str, args: &[&str]) -> Value {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/scapy_raw_esp.py");
        let out = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(python)
            .arg(script)
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "scapy {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(text.lines().last().unwrap_or("")).unwrap()
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

/// tcpdump of ESP (either carrier) on B's link into `pcap`, once it listens.
fn capture(n: &Nodes, pcap: &Path) -> Child {
    let dump = Command::new("ip")
        .args(["netns", "exec", &n.ns[1], "tcpdump", "-i", "vb", "--immediate-mode", "-U", "-w"])
        .arg(pcap)
        .args(["ip proto 50 or udp port 4500"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    dump
}

fn stop(mut dump: Child) {
    let _ = Command::new("kill").args(["-INT", &dump.id().to_string()]).status();
    let _ = dump.wait();
}

fn venv_python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = std::env::var("VENV").map_or_else(|_| root.join(".venv"), |v| root.join(v));
    let python = venv.join("bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import scapy, cryptography"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("SKIPPED: no venv with scapy at {}", venv.display());
    }
    ok.then_some(python)
}

/// Pings A → B and a scapy-sealed echo request injected at B; returns the capture's summary
/// as scapy decrypted it with A's exported keys.
fn run(n: &Nodes, python: &Path) -> Value {
    let pcap = n.dir.join("wire.pcap");
    let dump = capture(n, &pcap);
    assert_eq!(n.ping(20), 20, "pings lost\n{}\n{}", n.log(0), n.log(1));
    let keys =
        Command::new(BIN).args(["ike", "wireshark-keys", "--esp"]).arg(n.sock(0)).output().unwrap();
    assert!(keys.status.success(), "{}", String::from_utf8_lossy(&keys.stderr));
    let key_file = n.dir.join("esp_sa.txt");
    std::fs::write(&key_file, &keys.stdout).unwrap();
    let key_file = key_file.to_str().unwrap();
    // An echo request sealed by scapy under B's outbound SA, far ahead in sequence: A must
    // open it and answer it through the tunnel.
    let sent = n.scapy(
        python,
        &n.ns[1],
        &["inject", key_file, "192.0.2.2", "192.0.2.1", "10.0.2.1", "10.0.1.1", "1000", "20817"],
    );
    assert_eq!(sent["sent"], 1);
    std::thread::sleep(Duration::from_millis(500));
    stop(dump);
    n.scapy(python, &n.ns[1], &["decrypt", pcap.to_str().unwrap(), key_file])
}

/// No NAT, `encap` off: the CHILD SA's ESP is IP protocol 50 both ways; scapy decrypts every
/// packet of it, and A opens and answers an echo request scapy sealed.
#[test]
fn without_nat_and_encap_esp_is_ip_protocol_50() {
    if !common::netns_ready(&["tcpdump"]) {
        return;
    }
    let Some(python) = venv_python() else { return };
    let n = Nodes::start(false);
    assert_eq!(n.child(0)["esp"], "ip", "{}", n.status(0));
    assert_eq!(n.child(1)["esp"], "ip", "{}", n.status(1));
    let wire = run(&n, &python);
    println!("{wire}");
    let raw = wire["raw_esp"].as_u64().unwrap();
    assert!(raw >= 42, "20 echoes each way and the injected one with its answer: {wire}");
    assert_eq!(wire["udp_esp"], 0, "no ESP in UDP: {wire}");
    assert_eq!(wire["decrypted"].as_u64(), Some(raw), "every protocol-50 packet decrypts: {wire}");
    let echoes = wire["echoes"].as_array().unwrap();
    let answered = echoes.iter().any(|e| e[0] == 0 && e[1] == 20817);
    assert!(answered, "A answered scapy's echo request through the tunnel: {wire}");
    let st = n.status(0);
    assert_eq!(st["drops"]["no_sa"].as_u64().unwrap_or(0), 0, "{st}");
}

/// `encap = true`: the same pings go in UDP to port 4500, none as protocol 50.
#[test]
fn with_encap_esp_goes_in_udp() {
    if !common::netns_ready(&["tcpdump"]) {
        return;
    }
    let Some(python) = venv_python() else { return };
    let n = Nodes::start(true);
    assert_eq!(n.child(0)["esp"], "udp", "{}", n.status(0));
    assert_eq!(n.child(1)["esp"], "udp", "{}", n.status(1));
    let pcap = n.dir.join("wire.pcap");
    let dump = capture(&n, &pcap);
    assert_eq!(n.ping(20), 20, "pings lost\n{}\n{}", n.log(0), n.log(1));
    std::thread::sleep(Duration::from_millis(300));
    stop(dump);
    let keys = n.dir.join("none.txt");
    std::fs::write(&keys, "").unwrap();
    let wire =
        n.scapy(&python, &n.ns[1], &["decrypt", pcap.to_str().unwrap(), keys.to_str().unwrap()]);
    println!("{wire}");
    assert_eq!(wire["raw_esp"], 0, "{wire}");
    assert!(wire["udp_esp"].as_u64().unwrap() >= 40, "{wire}");
}
