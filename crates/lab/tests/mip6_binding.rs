//! A tiny run of scenario `mip6-binding`: 300 mobile nodes, one run per suite, a two-step ramp.
//! Every node's Binding Update must create an entry (the home agent's own count agrees), the
//! Binding Acknowledgements come back through ESP, and the report carries the seed's 690 and
//! 370 beside ours. Then the forwarding phase, short: STREAM and RR from the correspondent
//! through the home agent's tunnel and on the plain path all move data, and the paced stream
//! is delivered again after the move (counted, not timed). No namespace is left.
//!
//! Needs root and the `hipsec` binary (target/<profile>/hipsec or HIPSEC_BIN) and the
//! `hipsec-traffic` helper beside the test binary; says SKIPPED without them.

mod common;
use lab::RunOptions;
use lab::scenario::mip6_binding::stream_rr::{ForwardPlan, Way};
use lab::scenario::mip6_binding::{Plan, Results, run_plan};
use lab::traffic::runner::RunParams;

#[test]
fn every_mobile_node_registers_through_esp() {
    let Some(hipsec) = common::ready(&["nft"]) else { return };
    let plan = Plan {
        nodes: 300,
        runs: 1,
        ramp: vec![5_000, 10_000],
        step_ms: 200,
        window: 64,
        esp_only: 300,
        forward: Some(ForwardPlan {
            params: RunParams { warmup_ms: 100, duration_ms: 500, repetitions: 1 },
            plain: true,
            move_lead_ms: 500,
            move_after_ms: 2500,
            move_interval_us: 1000,
            moves: 2,
        }),
    };
    let opts = RunOptions { no_progress: true, ..RunOptions::default() };
    let report = run_plan(&opts, Some(&hipsec), &plan).expect("mip6-binding run");
    let text = lab::report::markdown::render(&report);
    println!("{text}");
    let r: Results =
        serde_json::from_value(report.extra.clone().expect("extra")).expect("results in the JSON");
    assert_eq!(r.suites.len(), 3);
    for s in &r.suites {
        assert_eq!(s.created, 300.0, "{s:?}");
        assert!(s.created_per_s > 0.0 && s.esp_only_per_s > 0.0, "{s:?}");
    }
    let Some(f) = &r.forward else { panic!("no forwarding phase: {:?}", report.pending) };
    assert!(text.contains("Forwarding: correspondent → home agent → mobile node"), "{text}");
    assert!(text.contains("Move under traffic"), "{text}");
    assert_eq!(f.cases.len(), 8, "{f:?}");
    for way in [Way::Tunnel, Way::Plain] {
        for c in f.cases.iter().filter(|c| c.way == way) {
            assert!(c.value > 0.0, "{way:?} {}: {c:?}", c.req.test);
        }
    }
    // Each move (there and back): datagrams sent after the old address was gone arrived (at
    // the new one), and the mobile node registered from there. How long it took is reported,
    // not asserted.
    assert_eq!(f.moves.len(), 2, "{:?}", f.moves);
    assert_ne!(f.moves[0].from, f.moves[0].to);
    assert_eq!((&f.moves[1].from, &f.moves[1].to), (&f.moves[0].to, &f.moves[0].from));
    for m in &f.moves {
        assert!(m.delivered_after_move > 0 && m.first_after_move_ms.is_some(), "{m:?}");
        assert!(m.reregistrations >= 1 && m.ha_moved == 1, "{m:?}");
    }
    // The seed's figures when its file is there (a checkout beside ../shared), else the report
    // says they are absent.
    if report.seed.as_ref().is_some_and(|s| s.table.is_some()) {
        assert!(text.contains("| 690 |") && text.contains("| 370 |"), "{text}");
    } else {
        assert!(text.contains("Seed figures absent"), "{text}");
    }
    // Ours only: other lab runs on the machine may come and go meanwhile.
    let ours = format!("{}{}-", lab::topology::PREFIX, std::process::id());
    let left: Vec<String> = lab::topology::list_namespaces()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with(&ours))
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}
