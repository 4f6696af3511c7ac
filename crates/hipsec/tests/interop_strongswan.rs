//! IKEv2 interop with strongSwan 5.9 (issue 11): a hipsec node and charon (kernel-libipsec)
//! in two namespaces negotiate IKE and CHILD SAs, and traffic flows through both user-space
//! ESP stacks: ping, and a TCP transfer whose SHA-256 must match at the far end. Each test
//! runs one cell of the matrix (who initiates, suite, outer IP version).
//! Needs root, netns, TUN and strongSwan (scripts/test-all.sh installs it); else SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod strongswan;
use common::BIN;
use strongswan::{Pair, Setup};

fn run_cell(setup: Setup) {
    if !strongswan::can_run() {
        return;
    }
    let p = Pair::start(BIN, setup);
    p.wait_up(BIN);
    let got = p.ping(5, "0.2");
    assert_eq!(
        got,
        5,
        "pings lost\n--- hipsec\n{}\n--- charon\n{}",
        p.hipsec_log(),
        p.charon_log()
    );
    let (far, near) = p.tcp_transfer(2 << 20);
    assert_eq!(far, near, "the TCP stream arrived changed");
    // strongSwan's own view: one IKE SA, its CHILD SA installed, carrying our bytes.
    let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
    assert!(sas.contains("ESTABLISHED") && sas.contains("INSTALLED"), "{sas}");
    let st = p.status(BIN);
    let drops = &st["drops"];
    // (`no_policy` is not here: the TUN device's own IPv6 chatter, router solicitations and
    // MLD reports, has no policy and is dropped and counted, as it should be.)
    for r in ["replayed", "integrity_failed", "no_sa", "inbound_policy_mismatch"] {
        assert_eq!(drops[r].as_u64().unwrap_or(0), 0, "{r} drops: {st}");
    }
}

#[test]
fn hipsec_initiates_aes_gcm_ipv4() {
    run_cell(Setup::default());
}

#[test]
fn strongswan_initiates_aes_gcm_ipv4() {
    run_cell(Setup { hipsec_initiates: false, ..Setup::default() });
}

#[test]
fn hipsec_initiates_aes_cbc_sha256_ipv6() {
    run_cell(Setup {
        v6: true,
        proposal: "aes256-sha256-ecp256",
        esp: "aes128-sha256",
        ..Setup::default()
    });
}

#[test]
fn strongswan_initiates_aes_cbc_sha256_ipv6() {
    run_cell(Setup {
        v6: true,
        hipsec_initiates: false,
        proposal: "aes128-sha256-x25519",
        esp: "aes256-sha256",
        ..Setup::default()
    });
}
