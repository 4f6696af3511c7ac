//! Smoke test of `hipsec bench tunnel --seconds 1 --rounds 2 --json`: the report has every field, with
//! numbers where numbers belong, and the namespaces are gone afterwards. No timing assertions
//! (a benchmark, not a timed test). Needs root, `ip netns` and iperf3; otherwise SKIPPED.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

#[test]
fn bench_tunnel_json_shape() {
    if !common::netns_ready(&["iperf3"]) {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_hipsec"))
        .args(["bench", "tunnel", "--seconds", "1", "--rounds", "2", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for path in ["plain", "tunnel"] {
        for k in ["gbps", "rtt_ms", "machine_busy"] {
            assert!(r[path][k].is_number(), "{path}.{k} missing: {r}");
        }
        for k in ["bytes", "retransmits", "pings_answered"] {
            assert!(r[path][k].is_u64(), "{path}.{k} missing: {r}");
        }
    }
    for k in ["hipsec_cpu_s", "service_demand_us_per_kb", "throughput_ratio", "rtt_ratio"] {
        assert!(r[k].is_number(), "{k} missing: {r}");
    }
    assert_eq!(r["suite"], "aes128gcm");
    assert_eq!(r["congestion"], "cubic");
    // Two rounds; the one reported is one of them, with the lower tunnel throughput of the two.
    let rounds = r["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2);
    let m = r["median_round"].as_u64().unwrap() as usize;
    assert_eq!(rounds[m]["tunnel_gbps"], r["tunnel"]["gbps"]);
    let other = rounds[1 - m]["tunnel_gbps"].as_f64().unwrap();
    assert!(r["tunnel"]["gbps"].as_f64().unwrap() <= other, "{r}");
    let nodes = r["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    for n in nodes {
        assert!(n["cpu_s"].is_number() && n["threads"].is_array(), "{n}");
        assert!(n["node_counters"]["net_tx"].is_u64(), "{n}");
    }
    let pid = r["bench_pid"].as_u64().unwrap();
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("hbench-{pid}-");
    assert!(!String::from_utf8_lossy(&left.stdout).contains(&prefix), "namespaces left behind");
}

/// `--transport both --seconds 1 --rounds 1 --json`: a report for each carrier (ESP in UDP and
/// raw ESP, the nodes restarted between them) over the same plain transfer, each with data
/// through its tunnel, and raw/udp.
#[test]
fn bench_tunnel_both_carriers_json_shape() {
    if !common::netns_ready(&["iperf3"]) {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_hipsec"))
        .args(["bench", "tunnel", "--transport", "both", "--seconds", "1", "--rounds", "1"])
        .arg("--json")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["transport"], "both");
    for t in ["udp", "raw"] {
        let x = &r[t];
        assert_eq!(x["transport"], t, "{r}");
        assert!(x["tunnel"]["bytes"].as_u64().unwrap() > 0, "nothing through {t}: {r}");
        assert!(x["throughput_ratio"].is_number(), "{r}");
        assert_eq!(x["plain"]["bytes"], r["udp"]["plain"]["bytes"], "one plain transfer: {r}");
        for n in x["nodes"].as_array().unwrap() {
            assert!(n["node_counters"]["net_tx"].as_u64().unwrap() > 0, "{t}: {n}");
        }
    }
    assert!(r["raw_to_udp"].as_f64().unwrap() > 0.0, "{r}");
    assert_eq!(r["raw_to_udp_rounds"].as_array().unwrap().len(), 1);
    // Raw needs one lane: refused before anything is set up.
    let out = Command::new(env!("CARGO_BIN_EXE_hipsec"))
        .args(["bench", "tunnel", "--transport", "raw", "--queues", "2"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--queues 1"));
}

/// `--keying ike --queues 1 --vs-queues 2 --parallel 2 --seconds 1 --rounds 1 --json`: the
/// nodes make the tunnel's CHILD SA with IKEv2 and carry TCP through it with one lane each,
/// then (restarted) with two; the report has both, how they were keyed, and the ratios.
#[test]
fn bench_tunnel_keyed_by_ike_one_lane_beside_two() {
    if !common::netns_ready(&["iperf3"]) {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_hipsec"))
        .args(["bench", "tunnel", "--keying", "ike", "--queues", "1", "--vs-queues", "2"])
        .args(["--parallel", "2", "--seconds", "1", "--rounds", "1", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for (k, lanes) in [("first", 1), ("second", 2)] {
        let x = &r[k];
        assert_eq!(
            (&x["keying"], &x["queues"]),
            (&serde_json::json!("ike"), &serde_json::json!(lanes))
        );
        assert!(x["tunnel"]["bytes"].as_u64().unwrap() > 0, "nothing through {k}: {r}");
        assert_eq!(x["plain"]["bytes"], r["first"]["plain"]["bytes"], "one plain transfer: {r}");
    }
    assert!(r["throughput_ratio"].is_number() && r["service_demand_ratio"].is_number(), "{r}");
    for bad in [["--transport", "raw"], ["--vs-queues", "1"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_hipsec"))
            .args(["bench", "tunnel", "--keying", "ike"])
            .args(bad)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(
            e.contains("--keying ike with --transport raw") || e.contains("--vs-queues 1"),
            "{e}"
        );
    }
}
