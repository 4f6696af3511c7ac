//! One IKE SA with two CHILD SAs for different selectors, against strongSwan 5.9 (charon +
//! kernel-libipsec): hipsec makes the first in IKE_AUTH and the second with CREATE_CHILD_SA
//! right after (RFC 7296 §1.3.1), or answers strongSwan's; both carry traffic, and each is
//! rekeyed on its own timer (§2.8) without a ping lost on either.
//!
//! Needs root, netns, TUN and strongSwan (scripts/test-all.sh installs it); else SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod strongswan;
use common::BIN;
use std::collections::BTreeMap;
use strongswan::{Pair, Setup};

/// Child name → the inbound SPIs of its pairs, as hipsec's status shows them.
fn pairs(p: &Pair) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let st = p.status(BIN);
    for sa in st["ike"]["ike_sas"].as_array().into_iter().flatten() {
        for c in sa["children"].as_array().into_iter().flatten() {
            let name = c["name"].as_str().unwrap_or_default().to_string();
            m.entry(name).or_default().push(c["spi_in"].as_str().unwrap_or_default().to_string());
        }
    }
    m
}

fn two_children(hipsec_initiates: bool) {
    if !strongswan::can_run() {
        return;
    }
    let p = Pair::start(
        BIN,
        Setup {
            hipsec_initiates,
            second_child: true,
            child_rekey: "6s",
            child_rand: "2s",
            ..Setup::default()
        },
    );
    p.wait_up(BIN);
    // Both children up: wait for the second too.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while pairs(&p).len() < 2 {
        assert!(std::time::Instant::now() < deadline, "no second child: {:?}", pairs(&p));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let before = pairs(&p);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        ["site/net", "site/net2"],
        "{before:?}\n{}",
        p.hipsec_log()
    );
    let ikes = p.status(BIN)["ike"]["ike_sas"].as_array().map_or(0, Vec::len);
    assert_eq!(ikes, 1, "one IKE SA for both children");
    // 16 s of pings on each child at 10 a second: every child rekeyed at least once (6 s less
    // up to 2 s, by either end), every ping answered.
    let (a, b) = std::thread::scope(|s| {
        let one = s.spawn(|| p.ping_between("10.0.1.1", "10.0.2.1", 160, "0.1"));
        let two = s.spawn(|| p.ping_between("10.0.3.1", "10.0.4.1", 160, "0.1"));
        (one.join().unwrap(), two.join().unwrap())
    });
    let after = pairs(&p);
    println!("pairs before {before:?}, after {after:?}; pings net {a}/160, net2 {b}/160");
    assert_eq!(
        (a, b),
        (160, 160),
        "pings lost\n--- hipsec\n{}\n--- charon\n{}",
        p.hipsec_log(),
        p.charon_log()
    );
    for (child, spis) in &before {
        let now = &after[child];
        assert!(
            now.iter().all(|s| !spis.contains(s)),
            "{child} was not rekeyed: {spis:?} → {now:?}"
        );
    }
    // strongSwan's own view: one IKE SA, both CHILD SAs installed.
    let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
    assert_eq!(sas.matches("ESTABLISHED").count(), 1, "{sas}");
    assert!(sas.contains("net:") && sas.contains("net2:"), "{sas}");
    let (far, near) = p.tcp_transfer(1 << 20);
    assert_eq!(far, near, "the TCP stream arrived changed");
}

#[test]
fn hipsec_initiates_two_children_both_carry_traffic_and_rekey() {
    two_children(true);
}

#[test]
fn strongswan_initiates_two_children_both_carry_traffic_and_rekey() {
    two_children(false);
}
