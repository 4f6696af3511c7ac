//! mip6.md's setup: a home agent and a correspondent on the home link, the mobile node on a
//! foreign link behind a router, examples/mip6's files.

use crate::common::markdown::{self, DocCommand};
use crate::runner::{Env, Host, Report, write_private};
use crate::{BIN, Marked, NO_NETNS, cannot_run, common, root, step};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// mip6.md's hosts (mip6_nodes.rs's topology): the home agent `ha` and a correspondent `cn`
/// on the home link (a bridge in the router `r`), the mobile node `mn` on a foreign link.
fn mip6_hosts(dir: &Path) -> Env {
    let base = format!("dc6{}", std::process::id());
    let names = ["ha", "mn", "cn", "r"];
    let hosts: Vec<Host> = names
        .iter()
        .map(|n| {
            let d = dir.join(n);
            std::fs::create_dir_all(&d).unwrap();
            let ns = format!("{base}-{n}");
            common::sh(&["ip", "netns", "add", &ns]);
            let sock = dir.join(format!("{n}.sock"));
            Host { name: n.to_string(), ns: Some(ns), sock, dir: d, node: None }
        })
        .collect();
    let env = Env { hosts, subst: Vec::new() };
    let ns = |n: &str| format!("{base}-{n}");
    let ip = |n: &str, args: &str| {
        let mut a = vec!["ip".to_string(), "-n".into(), ns(n)];
        a.extend(args.split_whitespace().map(String::from));
        common::sh(&a.iter().map(String::as_str).collect::<Vec<_>>());
    };
    let sysctl =
        |n: &str, kv: &str| common::sh(&["ip", "netns", "exec", &ns(n), "sysctl", "-qw", kv]);
    for n in names {
        ip(n, "link set lo up");
        sysctl(n, "net.ipv6.conf.all.accept_dad=0");
        sysctl(n, "net.ipv6.conf.default.accept_dad=0");
    }
    for (a, an, b) in [("hv", "ha", "rh"), ("cv", "cn", "rc"), ("mv", "mn", "rm")] {
        let (na, nr) = (ns(an), ns("r"));
        common::sh(&[
            "ip", "link", "add", a, "netns", &na, "type", "veth", "peer", "name", b, "netns", &nr,
        ]);
    }
    ip("r", "link add br0 type bridge");
    ip("r", "link set rh master br0");
    ip("r", "link set rc master br0");
    for d in ["br0", "rh", "rc", "rm"] {
        ip("r", &format!("link set {d} up"));
    }
    ip("r", "addr add 2001:db8:1::fe/64 dev br0 nodad");
    ip("r", "addr add 2001:db8:2::1/64 dev rm nodad");
    ip("r", "addr add fe80::1/64 dev rm nodad");
    sysctl("r", "net.ipv6.conf.all.forwarding=1");
    ip("cn", "addr add 2001:db8:1::2/64 dev cv nodad");
    ip("cn", "link set cv up");
    ip("ha", "addr add 2001:db8:1::1/64 dev hv nodad");
    ip("ha", "link set hv up");
    ip("ha", "route add 2001:db8:2::/64 via 2001:db8:1::fe");
    ip("mn", "addr add 2001:db8:2::100/64 dev mv nodad");
    ip("mn", "link set mv up");
    ip("mn", "route add 2001:db8:1::1/128 via fe80::1 dev mv");
    env
}

/// mip6.md's session with examples/mip6's files, each `interface` its host's device.
pub fn mip6(marked: &[&Marked], r: &mut Report) {
    if !common::netns_ready(&["ping", "nft"]) {
        return cannot_run(marked, NO_NETNS, r);
    }
    let dir = common::tmpdir("docs-mip6");
    let mut env = mip6_hosts(&dir);
    for (i, f, dev) in [(0, "home-agent.toml", "hv"), (1, "mobile-node.toml", "mv")] {
        let t = std::fs::read_to_string(root().join("examples/mip6").join(f)).unwrap();
        let t = t.replace("interface = \"eth0\"", &format!("interface = \"{dev}\""));
        write_private(&env.hosts[i].dir.join(f), &env.localise(i, &t));
    }
    for m in step(marked, &[""], "", r) {
        for c in markdown::commands(&m.block) {
            if c.text.starts_with("hipsec status") && c.host.as_deref() == Some("ha") {
                // The registration is a Binding Update and its Acknowledgement away.
                wait_for_binding(&env);
            }
            let Some(o) = env.run(&c, r).filter(|o| o.status.success()) else { continue };
            if let Some(why) = mip6_shows(&c, &String::from_utf8_lossy(&o.stdout)) {
                r.failed(&c, &why);
            }
        }
    }
}

/// Up to 5 s for the home agent's binding cache to hold the mobile node.
fn wait_for_binding(env: &Env) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        let o = Command::new(BIN).arg("status").arg("--json").arg(&env.hosts[0].sock).output();
        let v: serde_json::Value =
            o.ok().and_then(|o| serde_json::from_slice(&o.stdout).ok()).unwrap_or_default();
        if v["home_agent"]["binding_cache"]["count"].as_u64().is_some_and(|n| n >= 1) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What mip6.md says its commands show.
fn mip6_shows(c: &DocCommand, out: &str) -> Option<String> {
    let t = c.text.as_str();
    if t.starts_with("ping ") {
        let got = common::ping_received(out.as_bytes());
        return (got < 4).then(|| format!("{got} of 5 pings to the home address:\n{out}"));
    }
    if t.starts_with("hipsec status") {
        let want: &[&str] = match c.host.as_deref() {
            Some("ha") => &["2001:db8:1::100", "2001:db8:2::100"],
            _ => &["registered", "2001:db8:2::100"],
        };
        let missing: Vec<&&str> = want.iter().filter(|w| !out.contains(**w)).collect();
        return (!missing.is_empty()).then(|| format!("the output lacks {missing:?}:\n{out}"));
    }
    None
}
