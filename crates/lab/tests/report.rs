//! The report reads back its own JSON exactly, writes every artefact, and copes with absent seed
//! figures. No root needed.

use lab::cpu::SystemCpuDelta;
use lab::report::{
    Case, CaseCpu, CrossCheck, Machine, Pending, Report, SCHEMA, SeedFigures, mean_rtt,
};
use lab::topology::Family;
use lab::traffic::runner::{RunParams, Sample};
use lab::traffic::stats::Summary;
use lab::traffic::{ClientResult, Request, RttStats, ServerReport, TestKind};
use std::path::Path;

fn sample(test: TestKind, bytes: u64, k: u64) -> Sample {
    let result = ClientResult {
        req: Request { test, msg_size: 1024, resp_size: 1024 },
        elapsed_ns: 1_000_000_000 + k,
        sent_bytes: bytes + 7,
        sent_msgs: bytes / 1024,
        transactions: if test.is_stream() { 0 } else { 30_000 + k },
        errors: k,
        rtt: if test.is_stream() {
            None
        } else {
            Some(RttStats {
                samples: 30_000,
                mean_us: 33.3 + k as f64 / 7.0,
                p50_us: 31.0,
                p99_us: 70.1,
            })
        },
        client_cpu_us: 600_000,
        system: SystemCpuDelta {
            user_us: 1,
            system_us: 900_000,
            irq_us: 0,
            softirq_us: 300_000,
            idle_us: 700_000,
            total_us: 2_000_000,
            ncpu: 2,
            steal_us: 0,
        },
        server: ServerReport {
            bytes,
            msgs: bytes / 1024,
            elapsed_ns: 999_999_937,
            cpu_us: 400_000,
            queue_delay_ns: None,
            drain_ns: None,
            late_msgs: None,
        },
    };
    let value = result.value();
    Sample { result, value, watched_cpu_us: 0 }
}

fn case(mode: &str, test: TestKind, n: u64) -> Case {
    let samples: Vec<Sample> =
        (0..n).map(|k| sample(test, 1_000_000_000 / 3 + k * 12_345, k)).collect();
    let values: Vec<f64> = samples.iter().map(|s| s.value).collect();
    Case {
        mode: mode.into(),
        family: Family::V6,
        link: "100mbit".into(),
        test,
        msg_size: 1024,
        resp_size: 1024,
        summary: Summary::of(&values),
        cpu: CaseCpu::from_samples(test, &samples),
        rtt: mean_rtt(&samples),
        iperf3: test.is_stream().then(|| CrossCheck {
            iperf3_mbit_s: vec![2666.6, 2701.1],
            iperf3_median: 2701.1,
            ours_median: 2666.7,
            disagreement: 0.0127,
            flagged: false,
        }),
        samples,
        ratio_vs_none: None,
    }
}

fn report(seed: SeedFigures) -> Report {
    let mut r = Report {
        schema: SCHEMA.into(),
        scenario: "ipsec-netperf".into(),
        profile: "quick".into(),
        params: RunParams { warmup_ms: 200, duration_ms: 1000, repetitions: 3 },
        started_unix_s: 1_700_000_000,
        wall_s: 123.456,
        machine: Machine {
            cpu_model: "Test CPU @ 1.00GHz".into(),
            cores: 2,
            kernel: "6.1.0".into(),
            hipsec_commit: Some("abc123-dirty".into()),
        },
        cases: vec![
            case("none", TestKind::UdpStream, 3),
            case("AH", TestKind::UdpStream, 3),
            case("none", TestKind::TcpRr, 2),
        ],
        pending: vec![Pending {
            mode: "ESP AES-128-GCM".into(),
            reason: "needs the hipsec node (no mode hook given)".into(),
        }],
        seed: Some(seed),
        notes: vec!["a note with \"quotes\" and <html>".into()],
        sections: Vec::new(),
        charts: Vec::new(),
        extra: None,
    };
    r.compute_ratios();
    r
}

#[test]
fn json_round_trip_is_exact() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/seed-figures.toml");
    let r = report(SeedFigures::load(&path, "ipsec_ipv6_netperf"));
    assert!(r.cases[1].ratio_vs_none.is_some_and(|x| (x - 1.0).abs() < 1e-12));
    let text = r.to_json().expect("to json");
    let back = Report::from_json(&text).expect("from json");
    assert_eq!(back, r);
    assert_eq!(back.to_json().expect("again"), text);
}

#[test]
fn rejects_foreign_schema_naming_the_field() {
    let mut r = report(SeedFigures { source: "x".into(), table: None, note: "absent".into() });
    r.schema = "other/9".into();
    let err = Report::from_json(&r.to_json().expect("json"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("schema"), "{err}");
    assert!(Report::from_json("{not json").is_err());
}

#[test]
fn writes_markdown_json_svg_html_and_reads_them_back() {
    let seed = SeedFigures::load(Path::new("/nonexistent/seed-figures.toml"), "ipsec_ipv6_netperf");
    assert!(seed.table.is_none() && seed.note.contains("not available"));
    let r = report(seed);
    let dir = std::env::temp_dir().join(format!("hlab-report-test-{}", std::process::id()));
    let files = lab::pages::write_scenario(&r, &dir).expect("write");
    let names: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_name())
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    for want in [
        "report.md",
        "report.json",
        "throughput.svg",
        "transactions.svg",
        "service_demand.svg",
        "report.html",
        "index.html",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
    assert_eq!(Report::read(&dir.join("report.json")).expect("read back"), r);
    let md = std::fs::read_to_string(dir.join("report.md")).expect("md");
    assert!(md.contains("| none | IPv6 | 100mbit | UDP_STREAM | 1024 |"), "{md}");
    assert!(md.contains("Seed figures absent"), "{md}");
    assert!(md.contains("ESP AES-128-GCM: pending: needs the hipsec node (no mode hook given)"));
    let svg = std::fs::read_to_string(dir.join("throughput.svg")).expect("svg");
    assert!(svg.starts_with("<svg") && svg.contains("<rect") && svg.trim_end().ends_with("</svg>"));
    let html = std::fs::read_to_string(dir.join("report.html")).expect("html");
    assert!(html.contains("<svg") && html.contains("&lt;html&gt;"));
    assert!(html.contains("<table id=\"cases\"") && !html.contains("<pre>"), "{html}");
    let index = std::fs::read_to_string(dir.join("index.html")).expect("index");
    assert!(index.contains("report.html") && index.contains("ipsec-netperf"), "{index}");
    // `hipsec lab report DIR` from the JSON alone gives the same page.
    std::fs::remove_file(dir.join("report.html")).expect("rm");
    let done = lab::pages::render_dir(&dir).expect("re-render");
    assert_eq!(done.scenarios, vec![dir.clone()]);
    assert_eq!(std::fs::read_to_string(dir.join("report.html")).expect("again"), html);
    let _ = std::fs::remove_dir_all(&dir);
}
