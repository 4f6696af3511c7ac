//! The strongSwan side of `examples/ikev2-psk` and `examples/ikev2-pubkey`, as shipped: gateway
//! A is hipsec with `gw-a.toml`, gateway B is charon 5.9 with the example's `swanctl.conf`
//! (only its key directories arranged as the README says), and a ping from A's net reaches
//! B's. That checks the README's option-by-option mapping against strongSwan itself.
//!
//! ```text
//!   ns A (hipsec, gw-a.toml)                       ns B (charon + libipsec, swanctl.conf)
//!   hipsec0 10.0.1.1/24 ── va 192.0.2.1 ══════════ vb 192.0.2.2 ── lo 10.0.2.1
//! ```
//! Needs root, netns, TUN, charon and swanctl (openssl for the public keys), else SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod strongswan;
use common::BIN;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// charon with kernel-libipsec (user-space ESP, so no kernel ESP is needed), vici in `dir`.
fn strongswan_conf(dir: &Path) -> String {
    format!(
        "charon {{\n  load_modular = no\n  load = random nonce openssl aes sha1 sha2 hmac gcm kdf pem pkcs1 pkcs8 x509 pubkey curve25519 kernel-libipsec kernel-netlink socket-default vici updown\n  install_routes = yes\n  port = 500\n  port_nat_t = 4500\n  retransmit_timeout = 1\n  plugins {{\n    vici {{\n      socket = unix://{vici}\n    }}\n  }}\n  filelog {{\n    log {{\n      path = {log}\n      default = 1\n      ike = 2\n    }}\n  }}\n}}\nswanctl {{\n  socket = unix://{vici}\n}}\n",
        vici = dir.join("charon.vici").display(),
        log = dir.join("charon.log").display(),
    )
}

struct Lab {
    ns: [String; 2],
    dir: PathBuf,
    procs: Vec<Child>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.procs {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
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

fn wait_for(what: &str, ok: impl Fn() -> bool, logs: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(Instant::now() < deadline, "no {what} after 10 s\n{}", logs());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn keypair(key: &Path, public: &Path) {
    let ok = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(key)
        .status()
        .unwrap();
    assert!(ok.success(), "openssl genpkey");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ok = Command::new("openssl")
        .args(["pkey", "-in"])
        .arg(key)
        .args(["-pubout", "-out"])
        .arg(public)
        .status()
        .unwrap();
    assert!(ok.success(), "openssl pkey -pubout");
}

/// Starts hipsec with `example/gw-a.toml` in A and charon with `example/swanctl.conf` in B,
/// then pings 10.0.2.1 from 10.0.1.1 until 4 of 5 answer (10 s at most).
fn run(example: &str, tag: &str, pubkey: bool) {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(example);
    let dir = common::tmpdir(&format!("examples-swan-{tag}"));
    let base = format!("hexs{tag}-{}", std::process::id());
    let ns = common::two_namespaces(&base);
    let mut lab = Lab { ns: ns.clone(), dir: dir.clone(), procs: Vec::new() };
    common::sh(&["ip", "-n", &ns[1], "addr", "add", "10.0.2.1/32", "dev", "lo"]);
    // The README's key layout: ours in /etc/hipsec, charon's in swanctl's private/ and pubkey/.
    std::fs::create_dir_all(dir.join("private")).unwrap();
    std::fs::create_dir_all(dir.join("pubkey")).unwrap();
    if pubkey {
        keypair(&dir.join("gw-a.key"), &dir.join("pubkey/gw-a.pub"));
        keypair(&dir.join("private/gw-b.key"), &dir.join("pubkey/gw-b.pub"));
        std::fs::copy(dir.join("pubkey/gw-b.pub"), dir.join("gw-b.pub")).unwrap();
    }
    let a = std::fs::read_to_string(ex.join("gw-a.toml"))
        .unwrap()
        .replace("/run/hipsec-node.sock", &dir.join("0.sock").display().to_string())
        .replace("/etc/hipsec/", &format!("{}/", dir.display()));
    let p = dir.join("0.toml");
    std::fs::write(&p, a).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::copy(ex.join("swanctl.conf"), dir.join("swanctl.conf")).unwrap();
    std::fs::create_dir_all(dir.join("run")).unwrap();
    std::fs::write(dir.join("strongswan.conf"), strongswan_conf(&dir)).unwrap();
    lab.procs.push(common::start_node(&ns[0], &dir, 0, &[]));
    common::sh(&["ip", "-n", &ns[0], "route", "replace", "10.0.2.0/24", "dev", "hipsec0"]);
    // charon 5.9 writes its pid file to /run: give it a private one.
    let cmd = format!(
        "mount --make-rprivate / && mount --bind {} /run && exec {}",
        dir.join("run").display(),
        strongswan::CHARON
    );
    let out = std::fs::File::create(dir.join("charon.out")).unwrap();
    lab.procs.push(
        Command::new("ip")
            .args(["netns", "exec", &ns[1], "sh", "-c", &cmd])
            .env("STRONGSWAN_CONF", dir.join("strongswan.conf"))
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap(),
    );
    let log = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let logs =
        || format!("{}\n---- charon\n{}{}", log("0.log"), log("charon.out"), log("charon.log"));
    wait_for("vici socket", || dir.join("charon.vici").exists(), logs);
    let o = Command::new("ip")
        .args(["netns", "exec", &ns[1], "swanctl", "--load-all", "--file"])
        .arg(dir.join("swanctl.conf"))
        .env("STRONGSWAN_CONF", dir.join("strongswan.conf"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "swanctl --load-all of examples/{example}/swanctl.conf: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let ping = || {
        let out = Command::new("ip")
            .args(["netns", "exec", &ns[0], "ping", "-q", "-c", "5", "-i", "0.2", "-W", "1"])
            .args(["-I", "10.0.1.1", "10.0.2.1"])
            .output()
            .unwrap();
        common::ping_received(&out.stdout)
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = 0;
    while got < 4 && Instant::now() < deadline {
        got = ping();
    }
    assert!(got >= 4, "examples/{example}: {got} of 5 pings through hipsec ↔ charon\n{}", logs());
    let st = Command::new(BIN).args(["status", "--json"]).arg(dir.join("0.sock")).output();
    println!("{}", String::from_utf8_lossy(&st.unwrap().stdout));
}

#[test]
fn the_psk_example_against_strongswan() {
    if !strongswan::can_run() {
        return;
    }
    run("ikev2-psk", "p", false);
}

#[test]
fn the_pubkey_example_against_strongswan() {
    if !strongswan::can_run() || !common::netns_ready(&["openssl"]) {
        return;
    }
    run("ikev2-pubkey", "k", true);
}
