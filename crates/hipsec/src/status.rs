//! `hipsec status` as a person reads it: the node's JSON status document (the control socket's
//! answer, `node::control::status_value`) as a few aligned tables, the way `ipsec statusall`
//! or `wg show` print theirs. `--json` prints the document itself, for scripts.

use serde_json::Value;
use std::fmt::Write as _;

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Bytes with a binary unit (B, KiB, MiB, GiB, TiB).
fn bytes(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = n as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < units.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{n} B") } else { format!("{x:.1} {}", units[u]) }
}

/// Renders the status document; fields it lacks are shown as "-" or left out, never a panic.
pub fn render(doc: &Value) -> String {
    let mut o = String::new();
    let e = &doc["engine"];
    let _ = writeln!(
        o,
        "uptime {:.0} s; packets protected {}, decapsulated {}, bypassed {}",
        doc["uptime_s"].as_f64().unwrap_or(0.0),
        num(&e["protected"]),
        num(&e["decapsulated"]),
        num(&e["bypassed"])
    );
    let sas = doc["sas"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let _ = writeln!(o, "\nSAs ({}):", sas.len());
    let _ = writeln!(
        o,
        "  {:<3} {:<10} {:<5} {:<18} {:<9} {:<31} {:>10} {:>10} {:>8}  state",
        "dir", "spi", "proto", "suite", "mode", "src -> dst", "bytes", "packets", "age s"
    );
    for sa in sas {
        let s = |k: &str| sa[k].as_str().unwrap_or("-").to_string();
        let state = if sa["expired"].as_bool() == Some(true) {
            "EXPIRED".to_string()
        } else if sa["direction"] == "in" {
            format!("replay window {} top {}", num(&sa["replay_window"]), num(&sa["replay_top"]))
        } else {
            format!("seq {}", num(&sa["seq_out"]))
        };
        let _ = writeln!(
            o,
            "  {:<3} {:<10} {:<5} {:<18} {:<9} {:<31} {:>10} {:>10} {:>8.0}  {state}",
            s("direction"),
            s("spi"),
            s("proto"),
            s("suite"),
            s("mode"),
            format!("{} -> {}", s("src"), s("dst")),
            bytes(num(&sa["bytes"])),
            num(&sa["packets"]),
            sa["age_s"].as_f64().unwrap_or(0.0)
        );
    }
    if let Some(ike) = doc.get("ike").filter(|v| !v.is_null()) {
        render_ike(&mut o, ike, doc["sas"].as_array().map(Vec::as_slice).unwrap_or(&[]));
    }
    if let Some(hip) = doc.get("hip").filter(|v| !v.is_null()) {
        render_hip(&mut o, hip);
    }
    if let Some(ha) = doc.get("home_agent").filter(|v| !v.is_null()) {
        render_home_agent(&mut o, ha);
    }
    if let Some(mn) = doc.get("mobile_node").filter(|v| !v.is_null()) {
        render_mobile_node(&mut o, mn);
    }
    let drops: Vec<(&String, u64)> = doc["drops"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k, num(v))).collect())
        .unwrap_or_default();
    let total: u64 = drops.iter().map(|d| d.1).sum();
    let _ =
        writeln!(o, "\ndrops: {total} ({} reasons counted; all by name with --json)", drops.len());
    for (k, n) in drops.iter().filter(|d| d.1 > 0) {
        let _ = writeln!(o, "  {k:<28} {n:>12}");
    }
    if let Some(node) = doc["node"].as_object() {
        let _ = writeln!(o, "\nnode counters (non-zero):");
        for (k, v) in node.iter().filter(|(_, v)| num(v) > 0) {
            let _ = writeln!(o, "  {k:<28} {:>12}", num(v));
        }
    }
    if let Some(ws) = doc["workers"].as_array() {
        let _ = writeln!(o, "\nworkers:");
        for (i, w) in ws.iter().enumerate() {
            let cpu = w["cpu_s"].as_f64().map_or("-".to_string(), |c| format!("{c:.2} s CPU"));
            let _ = writeln!(
                o,
                "  {i} lane {} {:<5} {:<5} {cpu}, {} packets from TUN, {} to TUN, {} sent, {} received",
                num(&w["lane"]),
                w["role"].as_str().unwrap_or("-"),
                w["scheduling"].as_str().unwrap_or("-"),
                num(&w["node"]["tun_rx"]),
                num(&w["node"]["tun_tx"]),
                num(&w["node"]["net_tx"]),
                num(&w["node"]["net_rx"])
            );
        }
    }
    if let Some(f) = doc.get("filter").filter(|f| !f.is_null()) {
        let _ = writeln!(o, "\nfilter: {f}");
    }
    o
}

/// The IKE part, as `swanctl --list-sas` shows it: each IKE SA, then its CHILD SAs (never keys).
fn render_ike(o: &mut String, ike: &Value, sas_now: &[Value]) {
    // Bytes and packets of an SA of the data path, by direction and SPI (hex without 0x).
    let usage = |dir: &str, spi: &str| {
        sas_now
            .iter()
            .find(|sa| {
                sa["direction"] == dir
                    && sa["spi"].as_str().is_some_and(|s| s.trim_start_matches("0x") == spi)
            })
            .map_or("-".to_string(), |sa| {
                format!("{} {} pkts", bytes(num(&sa["bytes"])), num(&sa["packets"]))
            })
    };
    let sas = ike["ike_sas"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let c = &ike["counters"];
    let _ = writeln!(
        o,
        "\nIKE SAs ({}; established {}, failed {}, dropped {}, resent {}):",
        sas.len(),
        num(&c["established"]),
        num(&c["failed"]),
        num(&c["dropped"]),
        num(&c["resent"])
    );
    for sa in sas {
        let s = |k: &str| sa[k].as_str().unwrap_or("-").to_string();
        let _ = writeln!(
            o,
            "  {}: {}, {} {}, {}_i {}_r, {}{}",
            s("connection"),
            s("state").to_uppercase(),
            s("role"),
            s("peer"),
            s("spi_i"),
            s("spi_r"),
            s("suite"),
            if sa["udp_encap"].as_bool() == Some(true) { ", UDP-encapsulated" } else { "" }
        );
        if !sa["child_rekeys"].is_null() {
            let delay = sa["our_rekey_delay_median_us"]
                .as_u64()
                .map_or("-".to_string(), |d| format!("{:.2} ms", d as f64 / 1000.0));
            let _ = writeln!(
                o,
                "    up {} s; CHILD rekeys {} ({} ours, median delay {delay})",
                num(&sa["age_s"]),
                num(&sa["child_rekeys"]),
                num(&sa["our_rekeys"])
            );
        }
        for ch in sa["children"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let t = |k: &str| ch[k].as_str().unwrap_or("-").to_string();
            let rekey =
                ch["rekey_in_s"].as_u64().map_or(String::new(), |r| format!(", rekeying in {r} s"));
            let _ = writeln!(
                o,
                "    {}: {}, in {} ({}) out {} ({}), {}, {} policies, installed {} s ago{rekey}",
                t("name"),
                t("state"),
                t("spi_in"),
                usage("in", &t("spi_in")),
                t("spi_out"),
                usage("out", &t("spi_out")),
                t("suite"),
                num(&ch["policies"]),
                num(&ch["installed_s"])
            );
        }
    }
    // Road warriors (RFC 7296 §2.19): virtual IPs granted to us, and the leases of our pools.
    for v in ike["virtual_ips"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let addrs: Vec<&str> = v["addresses"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let conn = v["connection"].as_str().unwrap_or("-");
        let _ = writeln!(o, "  virtual IP {} from {conn}", addrs.join(", "));
    }
    let leases = ike["leases"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if !leases.is_empty() {
        let _ = writeln!(o, "\nLeases ({}):", leases.len());
    }
    for l in leases {
        let s = |k: &str| l[k].as_str().unwrap_or("-").to_string();
        let online = if l["online"].as_bool() == Some(true) {
            format!("online, {}", s("peer"))
        } else {
            "offline".to_string()
        };
        let _ = writeln!(o, "  {} {} to {} ({online})", s("pool"), s("address"), s("identity"));
    }
}

/// The Mobile IPv6 home agent: the binding cache (count and a sample), what it did, and the
/// refusals by reason that happened (all of them with --json).
fn render_home_agent(o: &mut String, ha: &Value) {
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or("-").to_string();
    let bc = &ha["binding_cache"];
    let b = &ha["bindings"];
    let _ = writeln!(
        o,
        "
home agent {} on {} for {}: {} bindings of {} ({} mobile nodes configured); created {}, updated {}, de-registered {}, expired {}",
        s(ha, "address"),
        s(ha, "interface"),
        s(ha, "home_prefix"),
        num(&bc["count"]),
        num(&bc["capacity"]),
        num(&ha["mobile_nodes"]),
        num(&b["created"]),
        num(&b["updated"]),
        num(&b["deregistered"]),
        num(&b["expired"])
    );
    for e in bc["sample"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let _ = writeln!(
            o,
            "  {:<39} -> {:<39} seq {:>5}  spi {}  expires in {} s",
            s(e, "home_address"),
            s(e, "care_of_address"),
            num(&e["sequence"]),
            s(e, "spi"),
            num(&e["expires_in_s"])
        );
    }
    if let Some(r) = ha["refused"].as_object() {
        let total: u64 = r.values().map(num).sum();
        let _ = writeln!(o, "  refused: {total}");
        for (k, v) in r.iter().filter(|(_, v)| num(v) > 0) {
            let _ = writeln!(o, "    {k:<36} {:>10}", num(v));
        }
    }
    // Forwarding (RFC 4877): each tunnel and where it goes now.
    let f = &ha["forwarding"];
    let tunnels = f["tunnels"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if !tunnels.is_empty() {
        let c = &f["counters"];
        let _ = writeln!(
            o,
            "  forwarding via {}: opened {}, moved {}, closed {}, failed {}",
            s(f, "tun"),
            num(&c["opened"]),
            num(&c["moved"]),
            num(&c["closed"]),
            num(&c["failed"])
        );
        for t in tunnels.iter().take(16) {
            let _ = writeln!(
                o,
                "    {:<39} => {:<39} tunnel spi in {} out {}",
                s(t, "home_address"),
                t["care_of_address"].as_str().unwrap_or("(not bound: discarded)"),
                s(t, "tunnel_in_spi"),
                s(t, "tunnel_out_spi")
            );
        }
    }
}

/// The Mobile IPv6 mobile node: where it is, its registration, what it sent and got.
fn render_mobile_node(o: &mut String, mn: &Value) {
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or("-").to_string();
    let c = &mn["counters"];
    let _ = writeln!(
        o,
        "\nmobile node {} (home agent {}) at care-of {} on {}",
        s(mn, "home_address"),
        s(mn, "home_agent"),
        s(mn, "care_of_address"),
        s(mn, "interface")
    );
    let r = &mn["registration"];
    if r.is_null() {
        let _ = writeln!(o, "  not registered (last acknowledgement: {})", s(mn, "last_ack"));
    } else {
        let _ = writeln!(
            o,
            "  registered {} for {} s: expires in {} s, refresh in {} s",
            s(r, "care_of_address"),
            num(&r["lifetime_s"]),
            num(&r["expires_in_s"]),
            num(&r["refresh_in_s"])
        );
    }
    let _ = writeln!(
        o,
        "  BUs sent {} (failed {}), BAs: registered {}, rejected {}, ignored {}; moves {}",
        num(&c["bu_sent"]),
        num(&c["bu_failed"]),
        num(&c["registered"]),
        num(&c["rejected"]),
        num(&c["ignored"]),
        num(&c["moves"])
    );
    if let Some(r) = mn["refused"].as_object().filter(|r| !r.is_empty()) {
        for (k, v) in r {
            let _ = writeln!(o, "    {k:<36} {:>10}", num(v));
        }
    }
}

/// The HIP part: our HIT, then each association (never keys).
fn render_hip(o: &mut String, hip: &Value) {
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or("-").to_string();
    let c = &hip["counters"];
    let assocs = hip["associations"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let _ = writeln!(
        o,
        "\nHIP: HIT {} at {}, puzzle K {}, R1 generation {}; {} R1s sent, {} refused ({} unknown HITs)",
        s(hip, "hit"),
        s(hip, "locator"),
        num(&hip["puzzle_k"]),
        num(&hip["r1_generation"]),
        num(&c["r1_sent"]),
        num(&c["refused"]),
        num(&c["unknown_peer"])
    );
    for a in assocs {
        let timing = match (a["base_exchange_us"].as_u64(), a["t3_us"].as_u64()) {
            (Some(t), _) => format!(", base exchange {:.2} ms", t as f64 / 1000.0),
            (None, Some(t3)) => format!(", I2 -> R2 {:.2} ms", t3 as f64 / 1000.0),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "  {} at {}: {}, {}, in {} out {}, {}{timing}",
            s(a, "peer_hit"),
            s(a, "locator"),
            s(a, "state"),
            s(a, "role"),
            s(a, "spi_in"),
            s(a, "spi_out"),
            s(a, "suite"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_sas_drops_and_workers() {
        let doc = json!({
            "uptime_s": 12.5,
            "engine": { "protected": 10, "decapsulated": 7, "bypassed": 0 },
            "sas": [
                { "direction": "out", "spi": "0x00001001", "proto": "esp", "suite": "aes128gcm",
                  "mode": "tunnel", "src": "192.0.2.1", "dst": "192.0.2.2", "bytes": 3 << 20,
                  "packets": 10, "age_s": 12.0, "expired": false, "seq_out": 10 },
                { "direction": "in", "spi": "0x00002001", "proto": "esp", "suite": "aes128gcm",
                  "mode": "tunnel", "src": "192.0.2.2", "dst": "192.0.2.1", "bytes": 900,
                  "packets": 7, "age_s": 12.0, "expired": true, "replay_window": 128,
                  "replay_top": 9 }
            ],
            "drops": { "replayed": 2, "no_sa": 0, "integrity_failed": 1 },
            "node": { "tun_rx": 10, "runts": 0 },
            "workers": [ { "lane": 0, "role": "both", "scheduling": "fifo", "cpu_s": 0.25,
                           "node": { "tun_rx": 10, "tun_tx": 7, "net_tx": 10, "net_rx": 9 } } ]
        });
        let t = render(&doc);
        assert!(t.contains("protected 10, decapsulated 7"), "{t}");
        assert!(t.contains("SAs (2):"), "{t}");
        assert!(t.contains("0x00001001") && t.contains("3.0 MiB") && t.contains("seq 10"), "{t}");
        assert!(t.contains("EXPIRED"), "{t}");
        assert!(t.contains("drops: 3 (3 reasons"), "{t}");
        assert!(t.contains("replayed") && t.contains("integrity_failed"), "{t}");
        // Zero counters are left to --json.
        assert!(!t.contains("no_sa") && !t.contains("runts"), "{t}");
        assert!(
            t.contains(
                "both  fifo  0.25 s CPU, 10 packets from TUN, 7 to TUN, 10 sent, 9 received"
            ),
            "{t}"
        );
    }

    #[test]
    fn renders_hip_associations() {
        let doc = json!({"hip": {"hit": "2001:22::1", "locator": "192.0.2.1", "puzzle_k": 10,
            "r1_generation": 2, "counters": {"r1_sent": 3, "refused": 1, "unknown_peer": 1},
            "associations": [{"peer_hit": "2001:22::2", "locator": "192.0.2.2",
                "state": "ESTABLISHED", "role": "initiator", "spi_in": "0000abcd",
                "spi_out": "0000dcba", "suite": "aes128gcm", "base_exchange_us": 1394}]}});
        let t = render(&doc);
        assert!(t.contains("HIP: HIT 2001:22::1 at 192.0.2.1, puzzle K 10"), "{t}");
        assert!(t.contains("2001:22::2 at 192.0.2.2: ESTABLISHED, initiator, in 0000abcd out 0000dcba, aes128gcm, base exchange 1.39 ms"), "{t}");
    }

    #[test]
    fn odd_documents_do_not_panic() {
        for doc in [json!(null), json!({}), json!({"sas": 3, "drops": [1], "workers": {}})] {
            assert!(render(&doc).contains("SAs (0):"));
        }
    }

    #[test]
    fn byte_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 << 30), "5.0 GiB");
    }
}
