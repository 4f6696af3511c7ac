//! The guard's rules from configs, and (where nft runs) the kernel's check of the script.

use super::*;
use crate::config::parse;

const EXAMPLE: &str = include_str!("../../../docs/node-example.toml");

fn guard_of(text: &str) -> Option<Guard> {
    Guard::for_config(&parse("t.toml", text).unwrap())
}

#[test]
fn example_guards_its_policies_in_spd_order() {
    let g = guard_of(EXAMPLE).unwrap();
    assert_eq!(g.interface, "hipsec0");
    assert_eq!(g.udp_ports, vec![500, 4500]);
    assert_eq!(g.rules.len(), 2);
    // The discard entry (TCP port 9) first, then the protect entry: both dropped off the TUN.
    assert_eq!(g.rules[0].proto, Some(6));
    assert_eq!(g.rules[0].remote_ports, Some((9, 9)));
    assert!(!g.rules[0].pass && !g.rules[1].pass);
    let s = g.script().unwrap();
    let out = s.find("ip daddr 10.0.0.0/24 meta l4proto 6 th dport 9 counter drop").unwrap();
    let out2 = s.find("ip daddr 10.0.0.0/24 counter drop").unwrap();
    assert!(out < out2, "{s}");
    // Inbound: the reverse traffic, with the ports swapped to the source side.
    assert!(
        s.contains(
            "ip saddr 10.0.0.0/24 ip daddr 10.0.0.0/24 meta l4proto 6 th sport 9 counter drop"
        ),
        "{s}"
    );
    // The carrier and the TUN itself pass before any policy rule.
    let tun = s.find("oifname { \"hipsec0\", \"lo\" } accept").unwrap();
    assert!(tun < out, "{s}");
    assert!(s.contains("udp sport { 500, 4500 } accept"), "{s}");
    assert!(s.contains("udp dport { 500, 4500 } accept"), "{s}");
    assert!(s.contains("meta l4proto { 50, 51, 139 } accept"), "{s}");
    // Replaced in one transaction: each chain flushed right after it is (re)declared.
    assert!(s.contains("flush chain inet hipsec_guard out_hipsec0"), "{s}");
    assert!(s.contains("flush chain inet hipsec_guard in_hipsec0"), "{s}");
}

#[test]
fn a_bypass_entry_before_a_protect_entry_passes() {
    let t = EXAMPLE.replacen("action = \"discard\"", "action = \"bypass\"", 1);
    let s = guard_of(&t).unwrap().script().unwrap();
    let pass = s.find("ip daddr 10.0.0.0/24 meta l4proto 6 th dport 9 accept").unwrap();
    let drop = s.find("ip daddr 10.0.0.0/24 counter drop").unwrap();
    assert!(pass < drop, "{s}");
}

#[test]
fn nothing_protected_means_no_guard() {
    let only_bypass = EXAMPLE
        .replacen("action = \"discard\"", "action = \"bypass\"", 1)
        .replacen("action = \"protect\"", "action = \"bypass\"", 1)
        .replacen("sas = [\"a-to-b\"]", "", 1)
        .replace("# in-sas = [\"b-to-a\"]", "");
    assert_eq!(guard_of(&only_bypass), None);
}

#[test]
fn ike_children_and_hip_are_guarded() {
    let t = EXAMPLE
        .replace("# [[connection]]", "[[connection]]")
        .replace("# name = \"site-b\"", "name = \"site-b\"")
        .replace("# remote_addrs", "remote_addrs")
        .replace("# proposals", "proposals")
        .replace("# [connection.", "[connection.")
        .replace("# auth = \"psk\"", "auth = \"psk\"")
        .replace("# id = \"gw-", "id = \"gw-")
        .replace("# local_ts", "local_ts")
        .replace("# remote_ts", "remote_ts")
        .replace("# esp_proposals", "esp_proposals")
        .replace("# [secrets.ike-1]", "[secrets.ike-1]")
        .replace("# id = [", "id = [")
        .replace("# secret", "secret");
    let c = parse("t.toml", &t).unwrap();
    assert_eq!(c.connections.len(), 1, "the example's connection did not come in");
    let g = Guard::for_config(&c).unwrap();
    let s = g.script().unwrap();
    assert!(
        s.contains("ip daddr 10.2.0.0-10.2.255.255 counter drop comment \"connection site-b/net\""),
        "{s}"
    );
    assert!(
        s.contains("ip saddr 10.2.0.0-10.2.255.255 ip daddr 10.1.0.0-10.1.255.255 counter drop"),
        "{s}"
    );
}

#[test]
fn interface_names_that_nft_cannot_hold_are_refused() {
    let mut g = guard_of(EXAMPLE).unwrap();
    g.interface = "tun\"0".into();
    assert!(matches!(g.script(), Err(GuardError::Interface(_))));
}

/// nft checks the script against the kernel without applying it (`nft -c`).
#[test]
fn the_kernel_accepts_the_script() {
    let g = guard_of(EXAMPLE).unwrap();
    let script = g.script().unwrap();
    let child = std::process::Command::new("nft")
        .args(["-c", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        println!("SKIPPED: nft is not installed");
        return;
    };
    use std::io::Write;
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("Operation not permitted") {
        println!("SKIPPED: nft -c needs CAP_NET_ADMIN");
        return;
    }
    assert!(out.status.success(), "nft refused the guard:\n{err}\n{script}");
}
