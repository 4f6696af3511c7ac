//! Smoke test of `hipsec bench tunnel --seconds 1 --rounds 2 --json`: the report has every field, with
//! numbers where numbers belong, and the namespaces are gone afterwards. No timing assertions
//! (a benchmark, not a timed test). Needs root, `ip netns` and iperf3; otherwise SKIPPED.

#![allow(clippy::unwrap_used)]

use std::process::Command;

fn can_run() -> bool {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let ip = Command::new("ip").args(["netns", "list"]).output().is_ok_and(|o| o.status.success());
    let iperf = Command::new("iperf3").arg("--version").output().is_ok();
    if !(root && ip && iperf && std::path::Path::new("/dev/net/tun").exists()) {
        println!("SKIPPED: needs root, ip netns, /dev/net/tun and iperf3");
        return false;
    }
    true
}

#[test]
fn bench_tunnel_json_shape() {
    if !can_run() {
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
