//! `[interface] install_routes`: a node routes the remote prefixes of its protect policies into
//! its TUN device, in the table and with the metric named, and removes those routes when it
//! stops. The manual pair of `examples/manual-pair` with no `ip route add` by hand: A's routes
//! in the main table, B's in table 100 (metric 50) behind an `ip rule`; a ping crosses, and
//! after the nodes stop the routes are gone. Needs root, netns, TUN and ping, else SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use std::path::Path;
use std::process::Command;

fn routes(ns: &str, table: &str) -> String {
    let o = Command::new("ip").args(["-n", ns, "route", "show", "table", table]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn install_routes_routes_the_remote_prefixes_and_removes_them_on_stop() {
    if !common::netns_ready(&["ping"]) {
        return;
    }
    let dir = common::tmpdir("routes");
    let base = format!("hrt-{}", std::process::id());
    let ns = common::two_namespaces(&base);
    struct Cleanup(Vec<String>, Vec<std::process::Child>);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            for c in &mut self.1 {
                let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
                let _ = c.wait();
            }
            for n in &self.0 {
                let _ = Command::new("ip").args(["netns", "del", n]).status();
            }
        }
    }
    let mut guard = Cleanup(ns.to_vec(), Vec::new());
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/manual-pair");
    let extra = [
        "install_routes = true\n",
        "install_routes = true\nroute_table = 100\nroute_metric = 50\n",
    ];
    for (i, f) in ["host-a.toml", "host-b.toml"].iter().enumerate() {
        let text = std::fs::read_to_string(ex.join(f)).unwrap();
        let sock = dir.join(format!("{i}.sock"));
        let mut text = text.replace("/run/hipsec-node.sock", &sock.display().to_string());
        let at = text.find("\n[network]").unwrap();
        text.insert_str(at, &format!("\n{}", extra[i]));
        let p = dir.join(format!("{i}.toml"));
        std::fs::write(&p, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        guard.1.push(common::start_node(&ns[i], &dir, i, &[]));
    }
    common::sh(&["ip", "-n", &ns[1], "rule", "add", "to", "10.0.1.0/24", "table", "100"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !routes(&ns[1], "100").contains("10.0.1.0/24") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let a = routes(&ns[0], "main");
    assert!(a.contains("10.0.2.0/24 dev hipsec0"), "A's main table:\n{a}");
    let b = routes(&ns[1], "100");
    assert!(
        b.contains("10.0.1.0/24 dev hipsec0") && b.contains("metric 50"),
        "B's table 100:\n{b}"
    );
    let out = Command::new("ip")
        .args(["netns", "exec", &ns[0], "ping", "-q", "-c", "5", "-i", "0.2", "-W", "1"])
        .args(["-I", "10.0.1.1", "10.0.2.1"])
        .output()
        .unwrap();
    let got = common::ping_received(&out.stdout);
    assert!(got >= 4, "{got} of 5 pings with the installed routes");
    // Stop both nodes: the routes go with them.
    for c in &mut guard.1 {
        let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
        let _ = c.wait();
    }
    guard.1.clear();
    assert!(!routes(&ns[1], "100").contains("10.0.1.0/24"), "{}", routes(&ns[1], "100"));
    assert!(!routes(&ns[0], "main").contains("10.0.2.0/24"), "{}", routes(&ns[0], "main"));
    let log = std::fs::read_to_string(dir.join("1.log")).unwrap();
    assert!(log.contains("routes") && log.contains("10.0.1.0/24"), "{log}");
}
