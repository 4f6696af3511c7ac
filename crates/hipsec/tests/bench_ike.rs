//! Smoke test of `hipsec bench ike --seconds 1 --rounds 1 --json` (about 8 s): the report has
//! every field, with numbers where numbers belong, setups completed without failures, the
//! responder's state stayed bounded (each IKE SA deleted), and the namespaces are gone
//! afterwards. No rate assertions (a benchmark, not a timed test). Needs root, `ip netns` and
//! /dev/net/tun; otherwise SKIPPED.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

#[test]
fn bench_ike_json_shape() {
    if !common::netns_ready(&[]) {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_hipsec"))
        .args(["bench", "ike", "--seconds", "1", "--rounds", "1", "--concurrency", "8", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {err}");
    assert!(err.contains("round 1/1"), "no progress line: {err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in [
        "setups_per_s",
        "ratio_to_crypto_bound",
        "responder_us_per_setup",
        "generator_us_per_setup",
        "load_at_start",
    ] {
        assert!(r[k].is_number(), "{k} missing: {r}");
    }
    let c = &r["crypto_only"];
    for k in ["setups_per_s_per_core", "us_per_setup", "dh_keygen_us", "dh_agree_us"] {
        assert!(c[k].as_f64().is_some_and(|v| v > 0.0), "crypto_only.{k}: {r}");
    }
    assert_eq!(r["proposal"], "aes128gcm16-prfsha256-x25519");
    assert_eq!(r["delete"], true);
    let rounds = r["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 1);
    let counts = &rounds[0]["counts"];
    assert!(counts["setups"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(counts["failed"], 0, "{r}");
    for k in ["responder_cores", "generator_cores", "machine_busy"] {
        assert!(rounds[0][k].is_number(), "rounds[0].{k}: {r}");
    }
    // Established on the responder at least as many as the generator counted in the round.
    let est = r["responder_counters"]["ike"]["established"].as_u64().unwrap();
    assert!(est >= counts["setups"].as_u64().unwrap(), "{r}");
    // Deleted as they came up: no more than the initiators in flight are left.
    assert!(r["responder_ike_sas_at_end"].as_u64().unwrap() <= 8, "{r}");
    let pid = r["bench_pid"].as_u64().unwrap();
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("hbike-{pid}-");
    assert!(!String::from_utf8_lossy(&left.stdout).contains(&prefix), "namespaces left behind");
}

#[test]
fn bench_ike_names_the_bad_field() {
    let out = Command::new(env!("CARGO_BIN_EXE_hipsec"))
        .args(["bench", "ike", "--group", "modp1024"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--group \"modp1024\""), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_hipsec"))
        .args(["bench", "ike", "--concurrency", "0"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--concurrency 0"));
}

/// `hipsec bench ike --clients 1000` (about 30 s, most of it `pki` making 1,002 certificates):
/// a thousand distinct road warriors, each with its own certificate, get a virtual IP each
/// from one `%any` connection's pool and stay up — 1,000 IKE SAs and 1,000 distinct leases in
/// the responder's status — beside the same thousand setups with a pre-shared key. Counts, not
/// rates. Needs root, `ip netns`, /dev/net/tun and strongSwan's `pki`; otherwise SKIPPED.
#[test]
fn a_thousand_road_warriors_each_with_its_own_certificate_and_lease() {
    if !common::netns_ready(&[]) {
        return;
    }
    if Command::new("pki").arg("--help").output().is_err() {
        println!("SKIPPED: strongSwan's pki is not installed (apt-get install strongswan-pki)");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_hipsec"))
        .args(["bench", "ike", "--clients", "1000", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {err}");
    assert!(err.contains("certificates 750/1000"), "no progress line: {err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for (phase, leases) in [("psk", 0), ("certificate", 1000)] {
        let p = &r[phase];
        assert_eq!(p["setups"], 1000, "{phase}: {p}");
        assert_eq!(p["failed"], 0, "{phase}: {p}");
        assert_eq!(p["ike_sas_at_end"], 1000, "{phase}: {p}");
        assert_eq!(p["leases"], leases, "{phase}: {p}");
        assert_eq!(p["distinct_lease_addresses"], leases, "{phase}: {p}");
        for k in ["setups_per_s", "responder_us_per_setup", "bytes_per_client"] {
            assert!(p[k].is_number(), "{phase}.{k}: {p}");
        }
    }
    assert_eq!(r["certificate"]["virtual_ips"], true);
    assert!(r["rate_ratio"].is_number() && r["cpu_ratio"].is_number(), "{r}");
    let pid = r["bench_pid"].as_u64().unwrap();
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("hbikc-{pid}-");
    assert!(!String::from_utf8_lossy(&left.stdout).contains(&prefix), "namespaces left behind");
}
