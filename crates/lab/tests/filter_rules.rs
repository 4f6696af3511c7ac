//! A short smoke run of scenario `filter-rules`: filter off and the nft linear chain with 100 rules
//! through the ESP tunnel of real hipsec nodes, plus one hipsec-classifier point, which either
//! runs or is pending because the node does not know `[filter]` yet — never a failed run.
//!
//! Needs root, the `hipsec` binary (target/<profile>/hipsec or HIPSEC_BIN) and nft; says SKIPPED
//! without them (under CI a missing binary or nft is a failure).

mod common;
use common::hipsec_bin;
use lab::NodeHook;
use lab::RunOptions;
use lab::scenario::filter_rules::{Implementation, Plan, Point, nft, run_plan};
use lab::traffic::runner::RunParams;
use lab::traffic::{Request, TestKind};

#[test]
fn nft_linear_100_rules_smoke() {
    if !lab::sys::have_privileges() {
        println!("SKIPPED: needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN)");
        return;
    }
    let ci = std::env::var_os("CI").is_some();
    if let Err(e) = nft::available() {
        assert!(!ci, "CI: {e}");
        println!("SKIPPED: {e}");
        return;
    }
    let Some(hipsec) = hipsec_bin() else {
        assert!(!ci, "CI: no hipsec binary beside the test");
        println!("SKIPPED: needs the hipsec binary (cargo build -p hipsec, or set HIPSEC_BIN)");
        return;
    };
    let p = |imp, rules| Point { imp, rules };
    let plan = Plan {
        points: vec![
            p(Implementation::Off, 0),
            p(Implementation::NftLinear, 100),
            p(Implementation::Classifier, 100),
        ],
        tests: vec![
            Request { test: TestKind::TcpStream, msg_size: 16384, resp_size: 1 },
            Request { test: TestKind::UdpStream, msg_size: 1024, resp_size: 1 },
        ],
        // Two fresh-clone CI runs measured 0 Mbit/s of UDP behind the 100 nft rules: the
        // window's datagrams were still queued on the path when the server stopped waiting for
        // them (see tests/traffic_window.rs); the lines printed below say where they were.
        params: RunParams { warmup_ms: 300, duration_ms: 500, repetitions: 1 },
    };
    let opts = RunOptions {
        no_progress: true,
        traffic_bin: Some(env!("CARGO_BIN_EXE_hipsec-traffic").into()),
        ..RunOptions::default()
    };
    let t0 = std::time::Instant::now();
    let report = run_plan(&opts, &NodeHook::new(&hipsec), &plan).expect("filter-rules smoke run");
    let wall = t0.elapsed().as_secs_f64();
    let md = lab::report::markdown::render(&report);
    println!("{md}\nwall {wall:.1} s");
    // Where a UDP_STREAM figure's datagrams were: sent by the client in its window, counted by
    // the server, how long the path's queues held them when the window opened, and how many
    // came after `end` (a zero figure once came from window datagrams still queued then).
    for c in report.cases.iter().filter(|c| c.test == TestKind::UdpStream) {
        for s in &c.samples {
            let (r, v) = (&s.result, &s.result.server);
            println!(
                "{} UDP_STREAM: sent {} msgs ({} errors), server counted {}, queue delay {:?} ms, \
                 drain {:?} ms, {:?} late",
                c.mode,
                r.sent_msgs,
                r.errors,
                v.msgs,
                v.queue_delay_ns.map(|n| n / 1_000_000),
                v.drain_ns.map(|n| n / 1_000_000),
                v.late_msgs
            );
        }
    }
    let rows =
        report.extra.as_ref().and_then(|e| e.get("rows")).and_then(|r| r.as_array()).expect("rows");
    let find = |imp: &str, test: &str| {
        rows.iter()
            .find(|r| r["implementation"] == imp && r["test"] == test)
            .unwrap_or_else(|| panic!("no {imp} {test} row in {rows:?}"))
    };
    for test in ["TCP_STREAM", "UDP_STREAM"] {
        let off = find("Off", test);
        assert!(off["mbit_s"].as_f64().is_some_and(|v| v > 0.0), "{off}");
        let n = find("NftLinear", test);
        assert!(n["mbit_s"].as_f64().is_some_and(|v| v > 0.0), "{n}");
        assert!(n["load_s"].as_f64().is_some_and(|s| s < 5.0), "{n}");
        assert!(n["d_mbit_s_pct"].as_f64().is_some(), "{n}");
        // 100 rules in each of the two chains plus the ct check and the default.
        assert!(n["nft_rules"].as_u64().is_some_and(|r| r >= 100), "{n}");
        let c = find("Classifier", test);
        let pending = c["pending"].as_str().unwrap_or("");
        assert!(
            c["mbit_s"].as_f64().is_some() || pending.contains("[filter]"),
            "classifier row neither measured nor pending on [filter]: {c}"
        );
    }
    assert!(
        md.contains("Filter cost against filter off") && md.contains("Seed figures beside ours")
    );
    assert!(md.contains("37.84") || report.seed.as_ref().is_some_and(|s| s.table.is_none()));
    assert!(wall < 20.0, "smoke run took {wall:.1} s");
}
