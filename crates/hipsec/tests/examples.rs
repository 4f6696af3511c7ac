//! The configurations in `examples/` are the ones users copy, so each is checked as shipped:
//! every `.toml` parses with the node's own reader (only file paths and the control socket
//! swapped for the test's), every README's `hipsec` commands name files that exist, and the
//! two-host examples are started in two network namespaces joined by a veth (192.0.2.1 and
//! 192.0.2.2, the addresses the examples use) and carry a ping: the manual-key pair, both IKEv2
//! pairs (pre-shared key; public keys made with openssl) and the HIP pair (identities made
//! with `hipsec keygen --hip`). The Mobile IPv6 pair needs a home link and a foreign link
//! through a router; `mip6_nodes.rs` runs that topology with the same settings.
//! The namespace tests need root, `ip netns`, /dev/net/tun and ping (openssl for the public
//! keys), else they print SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::BIN;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn read(example: &str, file: &str) -> String {
    let p = examples_dir().join(example).join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The control socket every example names, the one `--help` texts use too.
const SOCKET: &str = "/run/hipsec-node.sock";

/// `text` with the control socket and each `/etc/hipsec/NAME` moved into `dir`.
fn localise(text: &str, dir: &Path, sock: &Path) -> String {
    text.replace(SOCKET, &sock.display().to_string())
        .replace("/etc/hipsec/", &format!("{}/", dir.display()))
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn tomls(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let p = e.path();
        if p.is_dir() {
            tomls(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

#[test]
fn every_example_config_parses_and_names_the_documented_socket() {
    let mut files = Vec::new();
    tomls(&examples_dir(), &mut files);
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let dir = common::tmpdir("examples-parse");
    // The node reads the public-key examples' key files when it parses them.
    let openssl = Command::new("openssl").arg("version").output().is_ok_and(|o| o.status.success());
    if openssl {
        ed25519_pair(&dir, "gw-a");
        ed25519_pair(&dir, "gw-b");
    }
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        if !openssl && text.contains("auth = \"pubkey\"") {
            println!("SKIPPED: {} needs openssl for its key files", f.display());
            continue;
        }
        assert!(text.contains(SOCKET), "{}: names another control socket", f.display());
        let name = f.strip_prefix(examples_dir()).unwrap().display().to_string();
        let local = localise(&text, &dir, &dir.join("x.sock"));
        if let Err(e) = node::config::parse(&name, &local) {
            bad.push(format!("{name}: {e}"));
        }
        // Every example has a README that names it.
        let readme = f.parent().unwrap().join("README.md");
        let r = std::fs::read_to_string(&readme).unwrap_or_default();
        let file = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(r.contains(&file), "{} does not mention {file}", readme.display());
    }
    assert!(bad.is_empty(), "examples the node refuses:\n{}", bad.join("\n"));
    // Both hosts of every pair: a missing mirror is what a newcomer cannot write alone.
    for (ex, a, b) in [
        ("manual-pair", "host-a.toml", "host-b.toml"),
        ("ikev2-psk", "gw-a.toml", "gw-b.toml"),
        ("ikev2-pubkey", "gw-a.toml", "gw-b.toml"),
        ("hip-pair", "host-a.toml", "host-b.toml"),
        ("mip6", "home-agent.toml", "mobile-node.toml"),
    ] {
        assert!(!read(ex, a).is_empty() && !read(ex, b).is_empty(), "{ex}");
    }
    for ex in ["ikev2-psk", "ikev2-pubkey"] {
        assert!(read(ex, "swanctl.conf").contains("connections {"), "{ex}/swanctl.conf");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two namespaces with one example node each; stops both and removes everything on drop.
struct Pair {
    ns: [String; 2],
    dir: PathBuf,
    nodes: Vec<Child>,
}

impl Pair {
    /// Starts `texts[i]` (already localised to `dir/i.sock`) in namespace i.
    fn start(tag: &str, dir: PathBuf, texts: [String; 2]) -> Pair {
        let base = format!("hex{tag}-{}", std::process::id());
        let ns = common::two_namespaces(&base);
        let mut p = Pair { ns: ns.clone(), dir, nodes: Vec::new() };
        for (i, t) in texts.iter().enumerate() {
            write_private(&p.dir.join(format!("{i}.toml")), t);
            p.nodes.push(common::start_node(&ns[i], &p.dir, i, &[]));
        }
        p
    }

    fn sock(&self, i: usize) -> PathBuf {
        self.dir.join(format!("{i}.sock"))
    }

    /// What the README tells the user to do on each host: a route for the far net.
    fn route(&self, i: usize, prefix: &str) {
        common::sh(&["ip", "-n", &self.ns[i], "route", "replace", prefix, "dev", "hipsec0"]);
    }

    /// Answers to `count` pings from namespace 0, `-I from` to `to`.
    fn ping(&self, count: u32, from: &str, to: &str) -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.ns[0], "ping", "-q", "-c", &count.to_string()])
            .args(["-i", "0.2", "-W", "1", "-I", from, to])
            .output()
            .unwrap();
        common::ping_received(&out.stdout)
    }

    fn status(&self, i: usize) -> serde_json::Value {
        let out = Command::new(BIN).args(["status", "--json"]).arg(self.sock(i)).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    fn logs(&self) -> String {
        (0..2)
            .map(|i| std::fs::read_to_string(self.dir.join(format!("{i}.log"))).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n----\n")
    }
}

impl Drop for Pair {
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

/// Pings through a site-to-site example (A's 10.0.1.1 to B's 10.0.2.1); the first ping may
/// be the one a trap drops while IKE runs.
fn site_to_site(p: &Pair, what: &str) {
    p.route(0, "10.0.2.0/24");
    p.route(1, "10.0.1.0/24");
    let mut got = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while got < 4 && std::time::Instant::now() < deadline {
        got = p.ping(5, "10.0.1.1", "10.0.2.1");
    }
    assert!(got >= 4, "{what}: {got} of 5 pings through the tunnel\n{}", p.logs());
}

#[test]
fn the_manual_pair_carries_a_ping() {
    if !common::netns_ready(&["ping"]) {
        return;
    }
    let dir = common::tmpdir("examples-manual");
    let texts = [0, 1].map(|i| {
        let f = ["host-a.toml", "host-b.toml"][i];
        localise(&read("manual-pair", f), &dir, &dir.join(format!("{i}.sock")))
    });
    let p = Pair::start("m", dir, texts);
    site_to_site(&p, "manual pair");
    for i in 0..2 {
        let st = p.status(i);
        let sealed: u64 = st["sas"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["direction"] == "out")
            .map(|s| s["packets"].as_u64().unwrap_or(0))
            .sum();
        assert!(sealed >= 4, "node {i}: {sealed} packets sealed\n{st}");
        // The drop counters a working tunnel shows (docs/troubleshooting.md explains them).
        println!("node {i} drops: {}", st["drops"]);
    }
}

#[test]
fn the_ikev2_psk_pair_carries_a_ping() {
    if !common::netns_ready(&["ping"]) {
        return;
    }
    let dir = common::tmpdir("examples-psk");
    let texts = [0, 1].map(|i| {
        let f = ["gw-a.toml", "gw-b.toml"][i];
        localise(&read("ikev2-psk", f), &dir, &dir.join(format!("{i}.sock")))
    });
    let p = Pair::start("p", dir, texts);
    site_to_site(&p, "IKEv2 with a PSK");
}

/// `openssl genpkey -algorithm ed25519` and its public key, as the README says.
fn ed25519_pair(dir: &Path, name: &str) {
    let key = dir.join(format!("{name}.key"));
    let ok = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(ok.success(), "openssl genpkey");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ok = Command::new("openssl")
        .args(["pkey", "-in"])
        .arg(&key)
        .args(["-pubout", "-out"])
        .arg(dir.join(format!("{name}.pub")))
        .status()
        .unwrap();
    assert!(ok.success(), "openssl pkey -pubout");
}

#[test]
fn the_ikev2_pubkey_pair_carries_a_ping() {
    if !common::netns_ready(&["ping", "openssl"]) {
        return;
    }
    let dir = common::tmpdir("examples-pubkey");
    ed25519_pair(&dir, "gw-a");
    ed25519_pair(&dir, "gw-b");
    let texts = [0, 1].map(|i| {
        let f = ["gw-a.toml", "gw-b.toml"][i];
        localise(&read("ikev2-pubkey", f), &dir, &dir.join(format!("{i}.sock")))
    });
    let p = Pair::start("k", dir, texts);
    site_to_site(&p, "IKEv2 with public keys");
}

/// `hipsec keygen --hip -o FILE --json`'s HIT.
fn keygen(file: &Path) -> String {
    let out = Command::new(BIN).args(["keygen", "--hip", "--json", "-o"]).arg(file).output();
    let out = out.unwrap();
    assert!(out.status.success(), "keygen: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["hit"].as_str().unwrap().to_string()
}

#[test]
fn the_hip_pair_carries_a_ping() {
    if !common::netns_ready(&["ping"]) {
        return;
    }
    let dir = common::tmpdir("examples-hip");
    let hits = [0, 1].map(|i| {
        std::fs::create_dir_all(dir.join(format!("h{i}"))).unwrap();
        keygen(&dir.join(format!("h{i}/host.pem")))
    });
    let shipped = [read("hip-pair", "host-a.toml"), read("hip-pair", "host-b.toml")];
    // The example's placeholder HIT of the peer, as the README says to replace it.
    let placeholder = |t: &str| {
        let line = t.lines().find(|l| l.starts_with("hit = ")).unwrap();
        line.split('"').nth(1).unwrap().to_string()
    };
    let texts = [0, 1].map(|i| {
        let t = shipped[i].replace(&placeholder(&shipped[i]), &hits[1 - i]);
        localise(&t, &dir.join(format!("h{i}")), &dir.join(format!("{i}.sock")))
    });
    let p = Pair::start("h", dir, texts);
    let mut got = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while got < 4 && std::time::Instant::now() < deadline {
        got = p.ping(5, &hits[0], &hits[1]);
    }
    assert!(got >= 4, "HIP pair: {got} of 5 pings between the HITs\n{}", p.logs());
}
