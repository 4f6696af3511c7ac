//! A CHILD SA refused inside IKE_AUTH leaves the IKE SA up, against strongSwan 5.9 (charon +
//! kernel-libipsec), in both roles. RFC 7296 §1.2: "If creating the Child SA during the
//! IKE_AUTH exchange fails for some reason, the IKE SA is still created as usual." The response
//! then carries IDr and AUTH and the error notify (TS_UNACCEPTABLE, NO_PROPOSAL_CHOSEN) instead
//! of SA, TSi and TSr; §2.21.2: "Specifically, a responder may include all the payloads
//! associated with authentication (IDr, CERT, and AUTH) while sending error notifications for
//! the piggybacked exchanges (FAILED_CP_REQUIRED, NO_PROPOSAL_CHOSEN, and so on), and the
//! initiator MUST NOT fail the authentication because of this."
//!
//! The selectors are made not to meet: hipsec's `remote_ts` is a network charon does not have
//! (hipsec initiating), or charon's `local_ts` one hipsec does not accept (charon initiating).
//!
//! Needs root, netns, TUN and strongSwan (scripts/test-all.sh installs it); else SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod strongswan;
use common::BIN;
use std::path::Path;
use strongswan::{Pair, Setup};

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from:?} not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// hipsec's IKE SAs that are established, and how many children each has.
fn hipsec_ike_sas(p: &Pair) -> Vec<usize> {
    p.status(BIN)["ike"]["ike_sas"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter(|s| s["state"] == "established")
                .map(|s| s["children"].as_array().map_or(0, Vec::len))
                .collect()
        })
        .unwrap_or_default()
}

/// What `swanctl --list-sas` prints.
fn charon_sas(p: &Pair) -> String {
    String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned()
}

fn check_ike_sa_kept(p: &Pair) {
    let up =
        p.wait_until(15, |p| hipsec_ike_sas(p) == [0] && charon_sas(p).contains("ESTABLISHED"));
    let charon = charon_sas(p);
    println!(
        "hipsec: {:?} established IKE SA(s) by child count; charon:\n{charon}",
        hipsec_ike_sas(p)
    );
    assert!(
        up,
        "one IKE SA on each side, no CHILD SA\n{}\n--- hipsec\n{}\n--- charon\n{}",
        p.status(BIN),
        p.hipsec_log(),
        p.charon_log()
    );
    assert!(!charon.contains("INSTALLED"), "charon has no CHILD SA: {charon}");
    // Still up a few seconds on: neither side tore the IKE SA down after the refusal.
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert_eq!(hipsec_ike_sas(p), [0], "{}", p.hipsec_log());
    assert!(charon_sas(p).contains("ESTABLISHED"), "{}", p.charon_log());
}

#[test]
fn strongswan_refuses_our_child_in_ike_auth_and_the_ike_sa_stays() {
    if !strongswan::can_run() {
        return;
    }
    let setup = Setup { hipsec_initiates: true, ..Setup::default() };
    let p = Pair::start_edited(BIN, setup, |d| {
        edit(&d.join("a.toml"), "remote_ts = [\"10.0.2.0/24\"]", "remote_ts = [\"10.0.9.0/24\"]");
    });
    check_ike_sa_kept(&p);
    let log = p.hipsec_log();
    assert!(log.contains("child-sa-failed"), "{log}");
    assert!(log.contains("TS_UNACCEPTABLE"), "the refusal named: {log}");
}

#[test]
fn we_refuse_strongswans_child_in_ike_auth_and_the_ike_sa_stays() {
    if !strongswan::can_run() {
        return;
    }
    let setup = Setup { hipsec_initiates: false, ..Setup::default() };
    let p = Pair::start_edited(BIN, setup, |d| {
        edit(&d.join("swanctl.conf"), "local_ts = 10.0.2.0/24", "local_ts = 10.0.9.0/24");
    });
    check_ike_sa_kept(&p);
    let charon = p.charon_log();
    assert!(charon.contains("TS_UNACCEPTABLE"), "charon heard the refusal: {charon}");
}
