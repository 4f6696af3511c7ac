//! The worked workloads of the README and docs/sizing.md: `hipsec size --example NAME`.

use crate::workload::{PacketMix, Workload};

/// Names of the examples.
pub const NAMES: [&str; 3] = ["gateway-10g", "road-warriors", "home-agent"];

/// An empty workload named `name` (no traffic, no tunnels, AES-GCM in UDP, IMIX): what the
/// examples start from, and `hipsec size` without an example or a file.
pub fn base(name: &str) -> Workload {
    Workload {
        name: name.into(),
        throughput_gbps: 0.0,
        bidirectional: false,
        packets: PacketMix::Imix,
        suite: "aes128gcm".into(),
        carrier: "udp".into(),
        tunnels: 0,
        child_rekey_s: None,
        ike_rekey_s: None,
        handshakes_per_s: 0.0,
        hip_bex_per_s: 0.0,
        hip_initiated_per_s: 0.0,
        hip_puzzle_k: 0,
        binding_updates_per_s: 0.0,
        bindings: 0,
        filter_rules: 0,
        link_gbps: None,
        target_utilisation: 0.7,
    }
}

/// An example by name.
pub fn example(name: &str) -> Option<Workload> {
    Some(match name {
        // A site-to-site gateway: 10 Gbit/s each way of IMIX through AES-GCM over one 10 Gbit/s
        // link, 16 tunnels (SAs) so the lanes can share it, 100 filter rules, hourly rekeys.
        "gateway-10g" => Workload {
            throughput_gbps: 10.0,
            bidirectional: true,
            tunnels: 16,
            child_rekey_s: Some(3600.0),
            ike_rekey_s: Some(4.0 * 3600.0),
            filter_rules: 100,
            link_gbps: Some(10.0),
            ..base(name)
        },
        // 10,000 road warriors: 1 Mbit/s each way on average (10 Gbit/s in all... of which
        // most is idle: 1 Gbit/s aggregate), hourly CHILD_SA rekeys, IKE every 4 hours, and
        // the morning rush: 50 new connections a second.
        "road-warriors" => Workload {
            throughput_gbps: 1.0,
            bidirectional: true,
            tunnels: 10_000,
            child_rekey_s: Some(3600.0),
            ike_rekey_s: Some(4.0 * 3600.0),
            handshakes_per_s: 50.0,
            link_gbps: Some(10.0),
            ..base(name)
        },
        // A Mobile IPv6 home agent for 1,000,000 mobile nodes: each re-registers every 10
        // minutes (100,000 s⁻¹ · 1/60 ≈ 1,667 binding updates/s) and moves now and then, each
        // with its SA pair for the bindings (RFC 3776); 2 Gbit/s of correspondent traffic
        // tunnelled to them.
        "home-agent" => Workload {
            throughput_gbps: 2.0,
            bidirectional: true,
            tunnels: 1_000_000,
            binding_updates_per_s: 1_000_000.0 / 600.0,
            bindings: 1_000_000,
            carrier: "raw".into(),
            link_gbps: Some(10.0),
            ..base(name)
        },
        _ => return None,
    })
}
