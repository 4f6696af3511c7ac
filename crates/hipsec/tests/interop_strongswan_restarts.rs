//! A peer that restarts, against strongSwan 5.9 (charon + kernel-libipsec), with DPD off on both
//! sides: the restarted end comes back with INITIAL_CONTACT, and the survivor drops the IKE and
//! CHILD SAs the other has forgotten, so traffic moves to the new ones at once instead of being
//! sent on a stale SPI until a liveness check gives up.
//!
//! RFC 7296 §2.4: "The INITIAL_CONTACT notification asserts that this IKE SA is the only IKE SA
//! currently active between the authenticated identities. It MAY be sent when an IKE SA is
//! established after a crash, and the recipient MAY use this information to delete any other
//! IKE SAs it has to the same authenticated identity without waiting for a timeout."
//!
//! Needs root, netns, TUN and strongSwan (scripts/test-all.sh installs it); else SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod strongswan;
use common::BIN;
use std::time::{Duration, Instant};
use strongswan::{Pair, Setup};

/// Traffic must flow again within this long of the restarted end's new IKE SA.
const RECOVERY: Duration = Duration::from_secs(2);

/// The SPIs of hipsec's established IKE SAs.
fn established(p: &Pair) -> Vec<String> {
    p.status(BIN)["ike"]["ike_sas"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter(|s| s["state"] == "established")
                .map(|s| format!("{}/{}", s["spi_i"], s["spi_r"]))
                .collect()
        })
        .unwrap_or_default()
}

/// Polls hipsec's status every 20 ms until an established IKE SA that is not in `old` shows,
/// and returns when it did.
fn wait_new_sa(p: &Pair, old: &[String], within: Duration) -> Instant {
    let deadline = Instant::now() + within;
    loop {
        if established(p).iter().any(|s| !old.contains(s)) {
            return Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "no new IKE SA within {within:?}\n--- hipsec\n{}\n--- charon\n{}",
            p.hipsec_log(),
            p.charon_log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// After the new IKE SA: 10 pings at 100 ms, every one answered (so traffic flowed both ways
/// within the first ping's second, well inside [`RECOVERY`]); then a TCP transfer arrives whole.
fn carries_traffic_again(p: &Pair, new_sa: Instant) {
    let got = p.ping(10, "0.1");
    let took = new_sa.elapsed();
    assert_eq!(
        got,
        10,
        "pings lost after the new IKE SA\n--- hipsec\n{}\n--- charon\n{}",
        p.hipsec_log(),
        p.charon_log()
    );
    assert!(took < RECOVERY + Duration::from_secs(1), "the pings took {took:?}");
    let (far, near) = p.tcp_transfer(1 << 20);
    assert_eq!(far, near, "the TCP stream arrived changed");
    println!("traffic carried again: 10/10 pings within {took:?} of the new IKE SA");
}

/// charon is killed (no DELETE reaches us) and started again; it initiates with
/// INITIAL_CONTACT, and hipsec drops the SAs charon forgot.
#[test]
fn strongswan_restarts_and_hipsec_follows_initial_contact() {
    if !strongswan::can_run() {
        return;
    }
    let mut p = Pair::start(BIN, Setup { hipsec_initiates: false, ..Setup::default() });
    p.wait_up(BIN);
    assert_eq!(p.ping(3, "0.2"), 3);
    let before = established(&p);
    assert_eq!(before.len(), 1, "{before:?}");
    p.restart_charon();
    let new_sa = wait_new_sa(&p, &before, Duration::from_secs(15));
    carries_traffic_again(&p, new_sa);
    let now = established(&p);
    assert_eq!(now.len(), 1, "the stale IKE SA is still there beside the new one: {now:?}");
    assert!(!now.contains(&before[0]));
    let log = p.hipsec_log();
    assert!(log.contains("INITIAL_CONTACT"), "{log}");
    let charon = p.charon_log();
    assert!(charon.contains("N(INIT_CONTACT)"), "{charon}");
}

/// hipsec is killed and started again; it initiates with INITIAL_CONTACT, and strongSwan
/// drops the SAs hipsec forgot.
#[test]
fn hipsec_restarts_and_strongswan_follows_initial_contact() {
    if !strongswan::can_run() {
        return;
    }
    let mut p = Pair::start(BIN, Setup::default());
    p.wait_up(BIN);
    assert_eq!(p.ping(3, "0.2"), 3);
    p.restart_hipsec(BIN);
    let new_sa = wait_new_sa(&p, &[], Duration::from_secs(15));
    p.wait_up(BIN);
    carries_traffic_again(&p, new_sa);
    // strongSwan holds the new IKE SA only.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
        let n = sas.matches("ESTABLISHED").count();
        if n == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "strongSwan holds {n} IKE SAs:\n{sas}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let charon = p.charon_log();
    assert!(charon.contains("N(INIT_CONTACT)"), "{charon}");
}
