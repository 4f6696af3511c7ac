//! hip.md's setup: two HIP hosts, B's identity made by the page's `keygen`, A's config the
//! page's block; a restart with the keys exported, a captured ping, tshark decrypting it.

use crate::common::markdown::{self, DocCommand};
use crate::runner::{Env, Host, Report, capture, two_hosts, write_private};
use crate::{BIN, Marked, NO_NETNS, cannot_run, common, root, step};
use std::path::Path;
use std::process::Command;

/// `hipsec keygen --hip --json -o FILE`'s HIT.
fn keygen(file: &Path) -> String {
    let o = Command::new(BIN).args(["keygen", "--hip", "--json", "-o"]).arg(file).output().unwrap();
    assert!(o.status.success(), "keygen: {}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["hit"].as_str().unwrap().to_string()
}

/// Starts B of the HIP pair: examples/hip-pair/host-b.toml with A's HIT.
fn start_hip_b(env: &mut Env, hit_a: &str) -> Result<(), String> {
    let t = std::fs::read_to_string(root().join("examples/hip-pair/host-b.toml")).unwrap();
    let line = t.lines().find(|l| l.starts_with("hit = ")).unwrap();
    let t = t.replace(line.split('"').nth(1).unwrap(), hit_a);
    write_private(&env.hosts[1].dir.join("b.toml"), &env.localise(1, &t));
    env.start(1, "hipsec run -c b.toml")
}

/// hip.md's two HIP hosts.
pub fn hip_pair(marked: &[&Marked], r: &mut Report) {
    if !common::netns_ready(&["ping", "jq", "tshark", "tcpdump"]) {
        return cannot_run(marked, NO_NETNS, r);
    }
    let dir = common::tmpdir("docs-hip-pair");
    let mut env = two_hosts(&format!("dch{}", std::process::id()), &dir);
    // The page shows B's keygen; A makes its identity the same way.
    let hit_a = keygen(&env.hosts[0].dir.join("host.pem"));
    let mut hit_b: Option<String> = None;
    let steps = ["", "keys"];
    for s in steps {
        if s == "keys" {
            env.hosts.iter_mut().for_each(Host::stop);
            if let Err(e) = start_hip_b(&mut env, &hit_a) {
                r.failures.push(format!("hip-pair: B did not start again: {e}"));
                return;
            }
        }
        for m in step(marked, &steps, s, r) {
            if let Some(f) = &m.file {
                write_private(&env.hosts[0].dir.join(f), &env.localise(0, &m.block.text()));
                continue;
            }
            for c in markdown::commands(&m.block) {
                if c.text.starts_with("hipsec run ") && env.hosts[1].node.is_none() {
                    if let Err(e) = start_hip_b(&mut env, &hit_a) {
                        r.failures.push(format!("hip-pair: B did not start: {e}"));
                        return;
                    }
                }
                if c.text.contains("hip wireshark-keys") {
                    std::fs::create_dir_all(env.hosts[0].dir.join(".config/wireshark")).unwrap();
                    let hit = hit_b.as_deref().unwrap_or("::1");
                    capture(&env, "esp.pcap", &["-6", hit]);
                }
                let out = env.run(&c, r);
                let Some(o) = out.filter(|o| o.status.success()) else { continue };
                let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
                if c.text.contains("keygen --hip") && c.host.as_deref() == Some("b") {
                    // The HIT it printed replaces the one the page shows, in what follows.
                    let real = stdout.trim().to_string();
                    let shown = m.block.lines.iter().find_map(|(_, l)| {
                        l.trim().parse::<std::net::Ipv6Addr>().ok().map(|_| l.trim().to_string())
                    });
                    match (real.parse::<std::net::Ipv6Addr>(), shown) {
                        (Ok(_), Some(shown)) => env.subst.push((shown, real.clone())),
                        _ => r.failed(&c, &format!("printed {real:?}, not a HIT like the page's")),
                    }
                    hit_b = Some(real);
                }
                if let Some(why) = hip_pair_shows(&c, &stdout, &hit_a, hit_b.as_deref()) {
                    r.failed(&c, &why);
                }
            }
        }
    }
}

/// What hip.md says its commands show.
fn hip_pair_shows(c: &DocCommand, out: &str, hit_a: &str, hit_b: Option<&str>) -> Option<String> {
    let t = c.text.as_str();
    let hit_b = hit_b.unwrap_or("B's HIT");
    if t.starts_with("ping ") {
        // "the first ping meets the trap": the base exchange runs, then the pings pass.
        let got = common::ping_received(out.as_bytes());
        return (got < 3).then(|| format!("{got} of 5 pings to B's HIT:\n{out}"));
    }
    if t.starts_with("hipsec status") && !t.contains("--json") {
        // "the SA pair: mode beet, HIT -> HIT"
        let pair = format!("{hit_a} -> {hit_b}");
        let beet = out.lines().filter(|l| l.contains(" beet ")).count();
        return (beet != 2 || !out.contains(&pair) || !out.contains("ESTABLISHED"))
            .then(|| format!("not the SA pair in mode beet, {pair}, ESTABLISHED:\n{out}"));
    }
    if t.contains("| jq .hip") {
        // "our HIT, associations, counters"
        let v: serde_json::Value = serde_json::from_str(out).unwrap_or_default();
        let ok = v["hit"] == hit_a
            && v["associations"][0]["peer_hit"] == hit_b
            && v["counters"].is_object();
        return (!ok).then(|| format!("not our HIT, B's association and counters:\n{out}"));
    }
    if t.starts_with("tshark") && !out.contains("Echo (ping) request") {
        return Some(format!("tshark decrypted no ping:\n{out}"));
    }
    None
}
