//! The model's arithmetic on a hand-made profile (figures chosen so the sums can be done on
//! paper), its checks of bad input, and properties over random workloads.
#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use proptest::prelude::*;
use sizing::profile::{
    FilterCost, HipCost, IkeCost, IoCost, LinearCost, Machine, Mip6Cost, SCHEMA, SuiteCost,
};
use sizing::{PacketMix, Profile, SizingError, Workload, examples, size};

fn profile() -> Profile {
    let lin = |p, b| LinearCost { per_packet_ns: p, per_byte_ns: b };
    let io = |rx, tx, o| IoCost::flat(rx, tx, 0.0, o);
    Profile {
        schema: SCHEMA.into(),
        machine: Machine {
            cpu: "Test CPU".into(),
            cores: 4,
            kernel: "6.0".into(),
            commit: "0".into(),
            date: "2026-11-25".into(),
        },
        suites: [(
            "aes128gcm".to_string(),
            SuiteCost { seal: lin(100.0, 0.5), open: lin(120.0, 0.5), overhead_bytes: 50.0 },
        )]
        .into(),
        carriers: [
            ("tun".to_string(), io(200.0, 250.0, 0.0)),
            ("udp".to_string(), io(350.0, 300.0, 8.0)),
            ("raw".to_string(), io(400.0, 400.0, 0.0)),
        ]
        .into(),
        filter: FilterCost { per_packet_ns: 50.0, per_rule_ns: 0.0 },
        ike: IkeCost {
            ike_sa_setup_us: 500.0,
            child_rekey_us: 1000.0,
            ike_rekey_us: 2000.0,
            setup_by_rate: Default::default(),
        },
        hip: HipCost { initiator_us: 300.0, puzzle_try_ns: 500.0, responder_us: 400.0 },
        mip6: Mip6Cost { binding_update_us: 10.0, bytes_per_binding: 64.0 },
        bytes_per_sa: 1000.0,
        sources: Default::default(),
        spread: Default::default(),
        interference: None,
        validation: None,
    }
}

fn workload() -> Workload {
    let mut w = examples::example("gateway-10g").unwrap();
    w.name = "test".into();
    w.throughput_gbps = 1.0;
    w.bidirectional = false;
    w.packets = PacketMix::Fixed(1000);
    w.tunnels = 1;
    w.child_rekey_s = None;
    w.ike_rekey_s = None;
    w.filter_rules = 0;
    w.link_gbps = None;
    w
}

#[test]
fn one_way_arithmetic_by_hand() {
    // 1 Gbit/s of 1000-byte packets = 125,000 packets/s; each costs seal 100 + 500, TUN rx 200,
    // UDP tx 300, filter 50 = 1150 ns: 0.14375 cores.
    let a = size(&profile(), &workload()).unwrap();
    assert!((a.packets_per_s - 125_000.0).abs() < 1e-6);
    assert!((a.total_cores - 0.14375).abs() < 1e-12, "{}", a.total_cores);
    assert_eq!(a.cores_needed, 1);
    assert_eq!(a.dominant.as_deref(), Some("seal (aes128gcm)"));
    let sum: f64 = a.components.iter().map(|c| c.cores).sum();
    assert!((sum - a.total_cores).abs() < 1e-12);
    // One core carries 1e9 / 1150 packets/s of 8000 bits: 6.96 Gbit/s.
    assert!((a.lane_gbps.unwrap() - 8000.0 / 1150.0).abs() < 1e-9);
}

#[test]
fn io_costs_per_byte_too() {
    // The UDP carrier also costs 0.2 ns a byte and the TUN 0.1: 1000-byte packets add 300 ns
    // to the 1150 one way.
    let mut p = profile();
    if let Some(udp) = p.carriers.get_mut("udp") {
        udp.per_byte_ns = 0.2;
    }
    if let Some(tun) = p.carriers.get_mut("tun") {
        tun.per_byte_ns = 0.1;
    }
    let a = size(&p, &workload()).unwrap();
    assert!((a.total_cores - 125_000.0 * 1450.0 / 1e9).abs() < 1e-12, "{}", a.total_cores);
    assert!((a.lane_gbps.unwrap() - 8000.0 / 1450.0).abs() < 1e-9);
    // A profile written before the field existed reads as 0 per byte.
    let old = serde_json::to_string(&profile()).unwrap().replace("\"per_byte_ns\":0.0,", "");
    assert!(!old.contains("per_byte_ns\":0.0,\"overhead"), "{old}");
    let back = Profile::from_json(&old).unwrap();
    assert_eq!(back.carriers["udp"].per_byte_ns, 0.0);
}

/// At part load a packet costs more: the carrier's table of what each calibrated rate added
/// per packet, read at the tunnel's packet rate. A saturated lane costs what the fastest run
/// did.
#[test]
fn part_load_costs_more_system_calls_per_packet() {
    use sizing::load::{BatchPoint, RatePoint};
    let mut p = profile();
    // The saturated run: 4 Gbit/s of the same 1000-byte packets and suite, so its share of
    // what a tunnel carries saturated is its Gbit/s ÷ 4.
    let point = |share: f64, extra_ns| BatchPoint {
        share,
        packets_per_s: share * 500_000.0,
        extra_ns,
        wakeups_per_packet: 0.0,
        gbps: share * 4.0,
    };
    if let Some(udp) = p.carriers.get_mut("udp") {
        udp.by_rate =
            [("full".to_string(), point(1.0, 100.0)), ("paced20".to_string(), point(0.2, 500.0))]
                .into();
    }
    // 1 Gbit/s is a share of 0.25: in the logarithm of the share, ln(0.25/0.2) / ln(1/0.2) of
    // the way from 500 to 100 ns more per packet than the 1150 ns of
    // `one_way_arithmetic_by_hand`.
    let a = size(&p, &workload()).unwrap();
    let extra = 500.0 - 400.0 * (1.25f64).ln() / 5f64.ln();
    let want = 125_000.0 * (1150.0 + extra) / 1e9;
    assert!((a.total_cores - want).abs() < 1e-12, "{} vs {want}", a.total_cores);
    // The lane at saturation: what the fastest run added, 100 ns.
    assert!((a.lane_gbps.unwrap() - 8000.0 / 1250.0).abs() < 1e-9);
    // Ten tunnels share the rate: each runs at 0.1 Gbit/s, a share of 0.025, below the
    // slowest run, which is read at its 500 ns.
    let mut w = workload();
    w.tunnels = 10;
    let a = size(&p, &w).unwrap();
    assert!((a.total_cores - 125_000.0 * 1650.0 / 1e9).abs() < 1e-12, "{}", a.total_cores);
    // Handshakes: the responder's cost at the workload's rate, between calibration's.
    p.ike.setup_by_rate = [
        ("saturated".to_string(), RatePoint { setups_per_s: 4000.0, us: 250.0 }),
        ("paced25".to_string(), RatePoint { setups_per_s: 1000.0, us: 310.0 }),
    ]
    .into();
    let mut w = workload();
    w.throughput_gbps = 0.0;
    w.handshakes_per_s = 2000.0;
    let a = size(&p, &w).unwrap();
    assert!((a.total_cores - 2000.0 * 280e-6).abs() < 1e-12, "{}", a.total_cores);
    // A profile without the tables sizes as before.
    let old = serde_json::to_string(&profile()).unwrap();
    assert!(!old.contains("by_rate") && !old.contains("setup_by_rate"), "{old}");
}

#[test]
fn both_ways_add_open_and_the_other_io() {
    let mut w = workload();
    w.bidirectional = true;
    let a = size(&profile(), &w).unwrap();
    // Plus open 120 + 500, TUN tx 250, UDP rx 350, filter 50 = 1270 ns per packet.
    let want = 125_000.0 * (1150.0 + 1270.0) / 1e9;
    assert!((a.total_cores - want).abs() < 1e-12, "{} vs {want}", a.total_cores);
}

#[test]
fn control_plane_events_cost_their_rate() {
    let mut w = workload();
    w.throughput_gbps = 0.0;
    w.tunnels = 3600;
    w.child_rekey_s = Some(3600.0); // 1 rekey/s × 1000 µs
    w.ike_rekey_s = Some(7200.0); // 0.5/s × 2000 µs
    w.handshakes_per_s = 10.0; // × 500 µs
    w.binding_updates_per_s = 1000.0; // × 10 µs
    w.hip_bex_per_s = 2.0; // × 400 µs
    w.hip_initiated_per_s = 1.0; // × (300 µs + 2^10 × 0.5 µs)
    w.hip_puzzle_k = 10;
    let a = size(&profile(), &w).unwrap();
    let want = 0.001 + 0.001 + 0.005 + 0.01 + 0.0008 + (300.0 + 512.0) / 1e6;
    assert!((a.total_cores - want).abs() < 1e-12, "{} vs {want}", a.total_cores);
    assert_eq!(a.dominant.as_deref(), Some("binding updates"));
    assert!((a.memory_bytes - 2.0 * 3600.0 * 1000.0).abs() < 1e-6);
}

#[test]
fn the_link_is_named_when_it_is_the_bound() {
    let mut w = workload();
    w.throughput_gbps = 10.0;
    w.link_gbps = Some(10.0);
    let a = size(&profile(), &w).unwrap();
    let l = a.link.unwrap();
    // 1000 + 50 + 8 bytes on the wire per 1000 inside.
    assert!(l.bound);
    assert!((l.wire_gbps - 10.58).abs() < 1e-9);
    assert!((l.max_inner_gbps - 10.0 * 1000.0 / 1058.0).abs() < 1e-9);
    assert!(a.words.iter().any(|s| s.contains("link is the bound")), "{:?}", a.words);
    // And a single tunnel above one lane's rate is told to spread.
    assert!(a.words.iter().any(|s| s.contains("one SA's packets stay on one core")));
    w.link_gbps = Some(40.0);
    assert!(!size(&profile(), &w).unwrap().link.unwrap().bound);
}

#[test]
fn errors_name_the_field() {
    let mut w = workload();
    w.suite = "rot13".into();
    let e = size(&profile(), &w).unwrap_err();
    assert!(matches!(&e, SizingError::Field { field, .. } if field == "workload.suite"), "{e}");
    let mut w = workload();
    w.carrier = "pigeon".into();
    assert!(size(&profile(), &w).unwrap_err().to_string().starts_with("workload.carrier"));
    let mut w = workload();
    w.throughput_gbps = -1.0;
    assert!(size(&profile(), &w).unwrap_err().to_string().starts_with("workload.throughput_gbps"));
    let mut w = workload();
    w.target_utilisation = 0.0;
    assert!(size(&profile(), &w).unwrap_err().to_string().starts_with("workload.target_util"));
    let mut p = profile();
    p.schema = "other/9".into();
    assert!(size(&p, &workload()).unwrap_err().to_string().starts_with("profile.schema"));
    let mut p = profile();
    p.suites.get_mut("aes128gcm").unwrap().seal.per_byte_ns = f64::NAN;
    let e = size(&p, &workload()).unwrap_err().to_string();
    assert!(e.starts_with("profile.suites.aes128gcm.seal.per_byte_ns"), "{e}");
    // An unknown field in a workload file is refused by name.
    let e = Workload::from_json(
        r#"{"name":"x","packets":"imix","suite":"a","carrier":"udp","tunels":5}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("tunels"), "{e}");
}

#[test]
fn profiles_and_workloads_round_trip_through_json() {
    let p = profile();
    let back = Profile::from_json(&serde_json::to_string_pretty(&p).unwrap()).unwrap();
    assert_eq!(back, p);
    for name in examples::NAMES {
        let w = examples::example(name).unwrap();
        let back = Workload::from_json(&serde_json::to_string(&w).unwrap()).unwrap();
        assert_eq!(back, w);
        let a = size(&p, &w).unwrap();
        assert!(a.cores_needed >= 1 && !a.words.is_empty(), "{name}");
    }
    assert!(examples::example("nope").is_none());
}

#[test]
fn imix_mean_is_the_textbook_340_bytes() {
    assert!((PacketMix::Imix.mean() - 340.333_333_333_333_3).abs() < 1e-9);
}

proptest! {
    /// The parts add up to the total, cores cover it at the target utilisation, and more
    /// traffic never needs less CPU.
    #[test]
    fn totals_add_up_and_grow_with_traffic(
        gbps in 0.0f64..100.0,
        more in 0.0f64..10.0,
        size_b in 40u32..9000,
        both in any::<bool>(),
        tunnels in 0u64..100_000,
        util in 0.05f64..1.0,
    ) {
        let mut w = workload();
        w.throughput_gbps = gbps;
        w.packets = PacketMix::Fixed(size_b);
        w.bidirectional = both;
        w.tunnels = tunnels;
        w.child_rekey_s = Some(600.0);
        w.target_utilisation = util;
        let a = size(&profile(), &w).unwrap();
        let sum: f64 = a.components.iter().map(|c| c.cores).sum();
        prop_assert!((sum - a.total_cores).abs() <= 1e-9 * a.total_cores.max(1.0));
        prop_assert!(f64::from(a.cores_needed) * util + 1e-9 >= a.total_cores);
        w.throughput_gbps = gbps + more;
        prop_assert!(size(&profile(), &w).unwrap().total_cores + 1e-12 >= a.total_cores);
    }
}
