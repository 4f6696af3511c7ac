//! A tiny run of scenario `hip-bex`: two HIP hosts, three base exchanges at the seed's K = 10
//! and two at K = 0, a few pings and one short throughput test per kind on an unlimited link.
//! Every base exchange must establish, the captures must hold every message, T_be must be
//! positive and the four phases must fit in it; the report carries the seed's Table 4 rows and
//! is written (Markdown, JSON, SVG, HTML); no namespace is left.
//!
//! Needs root, the `hipsec` binary (target/<profile>/hipsec or HIPSEC_BIN), tcpdump and iperf3;
//! says SKIPPED without them (under CI a missing binary is a failure).

mod common;
use lab::RunOptions;
use lab::scenario::hip_bex::table::PHASES;
use lab::scenario::hip_bex::{Plan, Results, run_plan};

#[test]
fn base_exchanges_are_timed_from_the_wire() {
    let Some(hipsec) = common::ready(&["tcpdump", "iperf3"]) else { return };
    let plan = Plan {
        runs: 3,
        sweep: vec![0],
        sweep_runs: 2,
        pings: 10,
        links: vec![("unlimited".into(), None)],
        throughput_s: 1,
        // Both device pairs, two base exchanges each, no throughput tests there (a few seconds).
        device_runs: 2,
        device_throughput_s: None,
        full: false,
    };
    let opts = RunOptions { no_progress: true, ..RunOptions::default() };
    let names_before = lab::topology::list_namespaces().unwrap_or_default();
    let report = run_plan(&opts, Some(&hipsec), &plan).expect("hip-bex run");
    let text = lab::report::markdown::render(&report);
    println!("{text}");
    assert!(report.pending.is_empty(), "{:?}", report.pending);
    let r: Results =
        serde_json::from_value(report.extra.clone().expect("extra")).expect("results in the JSON");
    assert_eq!(r.main.k, 10);
    assert_eq!(r.main.established(), 3, "every base exchange establishes: {:?}", r.main.runs);
    assert_eq!(r.main.complete().len(), 3, "every message in both captures: {:?}", r.main.runs);
    for p in r.sweep.iter().flat_map(|s| s.complete()) {
        assert!(p.t_be_us > 0.0, "{p:?}");
        for t in [p.t1_us, p.t2_us, p.t3_us, p.t4_us] {
            assert!(t >= 0.0, "{p:?}");
        }
        // The hosts' steps happen one after the other within T_be (50 µs of clock slack between
        // the two captures' timestamps).
        assert!(p.sum_us() <= p.t_be_us + 50.0, "{p:?}");
    }
    assert_eq!(r.sweep.iter().map(|s| s.k).collect::<Vec<_>>(), [0, 10]);
    let n = r.main.runs[0].node;
    assert!(n.t2_us.is_some_and(|t| t > 0.0) && n.t3_us.is_some_and(|t| t > 0.0), "{n:?}");
    let rtt = r.rtt.expect("RTT measured");
    assert!(rtt.hip.received >= 9 && rtt.ipv6.received >= 9, "{rtt:?}");
    assert_eq!(r.throughput.len(), 4, "TCP and UDP, plain and HIP");
    assert!(r.throughput.iter().all(|t| t.mbit_s > 0.0), "{:?}", r.throughput);
    if text.contains("Seed figures absent") {
        println!("seed figures not found from this clone: the seed columns are not checked");
    } else {
        assert!(text.contains("188.418"), "the seed's A1 T_be beside ours:\n{text}");
    }
    for (_, label) in PHASES {
        assert!(text.contains(label), "row {label} missing:\n{text}");
    }
    let dir = std::env::temp_dir().join(format!("hlab-hipbex-test-{}", std::process::id()));
    let files = lab::pages::write_scenario(&report, &dir).expect("report written");
    common::assert_written(
        &files,
        &[
            "report.md",
            "report.json",
            "bex_phases.svg",
            "puzzle_sweep.svg",
            "report.html",
            "index.html",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    common::assert_no_namespaces_left(&names_before);
}
