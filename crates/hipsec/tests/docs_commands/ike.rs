//! ike.md's setup: two gateways, A's config the page's block and B's its mirror image; a
//! restart with the IKE keys exported, a captured ping, tshark decrypting the exchange.

use crate::common::markdown::{self, DocCommand};
use crate::runner::{Env, Host, Report, capture, two_hosts, write_private};
use crate::{Marked, NO_NETNS, cannot_run, common, step};

/// B's side of A's config: its address, ids, selectors and inner address swapped with A's.
fn mirror(a: &str) -> String {
    let swaps = [("192.0.2.1", "192.0.2.2"), ("gw-a.example", "gw-b.example"), ("10.1.", "10.2.")];
    let mut t = a.to_string();
    for (i, (x, y)) in swaps.iter().enumerate() {
        let held = format!("\u{0}{i}\u{0}");
        t = t.replace(x, &held).replace(y, x).replace(&held, y);
    }
    t
}

/// ike.md's two gateways: A's config the page's block, B's its mirror image.
pub fn ike_pair(marked: &[&Marked], r: &mut Report) {
    if !common::netns_ready(&["ping", "tshark", "tcpdump"]) {
        return cannot_run(marked, NO_NETNS, r);
    }
    let dir = common::tmpdir("docs-ike-pair");
    let mut env = two_hosts(&format!("dci{}", std::process::id()), &dir);
    let steps = ["", "keys"];
    for s in steps {
        if s == "keys" {
            env.hosts.iter_mut().for_each(Host::stop);
            if let Err(e) = env.start(1, "hipsec run -c gw-b.toml") {
                r.failures.push(format!("ike-pair: B did not start again: {e}"));
                return;
            }
        }
        for m in step(marked, &steps, s, r) {
            run_block(&mut env, m, r);
        }
    }
}

fn run_block(env: &mut Env, m: &Marked, r: &mut Report) {
    {
        if let Some(f) = &m.file {
            let a = m.block.text();
            write_private(&env.hosts[0].dir.join(f), &env.localise(0, &a));
            let b = env.localise(1, &mirror(&a));
            write_private(&env.hosts[1].dir.join(f.replace("gw-a", "gw-b")), &b);
            return;
        }
        for c in markdown::commands(&m.block) {
            if c.text.contains("ike wireshark-keys") {
                // The session's routes went with the TUN devices of the restart.
                for (h, net) in [(0, "10.2.0.0/16"), (1, "10.1.0.0/16")] {
                    let ns = env.hosts[h].ns.clone().unwrap();
                    common::sh(&["ip", "-n", &ns, "route", "replace", net, "dev", "hipsec0"]);
                }
                std::fs::create_dir_all(env.hosts[0].dir.join(".config/wireshark")).unwrap();
                capture(env, "ike.pcap", &["-I", "10.1.0.1", "10.2.0.1"]);
            }
            let Some(o) = env.run(&c, r).filter(|o| o.status.success()) else { continue };
            if let Some(why) = ike_pair_shows(&c, &String::from_utf8_lossy(&o.stdout)) {
                r.failed(&c, &why);
            }
        }
    }
}

/// What ike.md says its commands show.
fn ike_pair_shows(c: &DocCommand, out: &str) -> Option<String> {
    let t = c.text.as_str();
    if t.starts_with("ping ") {
        // "The first packet is dropped and counted (no_sa) ... its acquire starts IKE_SA_INIT"
        let got = common::ping_received(out.as_bytes());
        return (got < 3).then(|| format!("{got} of 5 pings through the CHILD SA:\n{out}"));
    }
    if t.starts_with("hipsec status") {
        // "the IKE SA and its CHILD SA"
        let ok = out.contains("site-b: ESTABLISHED") && out.contains("site-b/net: installed");
        return (!ok).then(|| format!("no established IKE SA site-b with CHILD net:\n{out}"));
    }
    if t.starts_with("tshark") {
        // Decrypted: the IKE_AUTH exchange's identities, inside the Encrypted payload.
        let ok = out.contains("Identification - Initiator") && out.contains("Decrypted Data");
        return (!ok)
            .then(|| format!("tshark decrypted no IKE_AUTH:\n{}", &out[..out.len().min(3000)]));
    }
    None
}
