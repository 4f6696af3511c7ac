//! Rendering tests: the pages' tables, charts and escaping, on a small hand-made report.

use super::*;
use crate::report::{Case, Machine, Pending, Section, SeedFigures};
use crate::topology::Family;
use crate::traffic::TestKind;
use crate::traffic::runner::RunParams;
use crate::traffic::stats::Summary;

fn case(mode: &str, link: &str, mean: f64) -> Case {
    Case {
        mode: mode.into(),
        family: Family::V6,
        link: link.into(),
        test: TestKind::TcpStream,
        msg_size: 16384,
        resp_size: 0,
        samples: Vec::new(),
        summary: Some(Summary {
            n: 3,
            mean,
            median: mean,
            stddev: 1.0,
            ci95: 2.0,
            min: mean,
            max: mean,
        }),
        cpu: None,
        rtt: None,
        iperf3: None,
        ratio_vs_none: None,
    }
}

fn report() -> Report {
    Report {
        schema: crate::report::SCHEMA.into(),
        scenario: "ipsec-netperf".into(),
        profile: "quick".into(),
        params: RunParams { warmup_ms: 100, duration_ms: 1000, repetitions: 3 },
        started_unix_s: 1_795_600_000,
        wall_s: 12.0,
        machine: Machine {
            cpu_model: "Test <CPU>".into(),
            cores: 2,
            kernel: "6.1".into(),
            hipsec_commit: Some("0123456789abcdef-dirty".into()),
        },
        cases: vec![
            case("none", "10mbit", 9.5),
            case("none", "100mbit", 94.3),
            case("none", "unlimited", 17929.0),
        ],
        pending: vec![Pending { mode: "AH".into(), reason: "not here".into() }],
        seed: Some(SeedFigures { source: "seed.toml".into(), table: None, note: String::new() }),
        notes: vec!["a `note` with <b>markup</b>".into()],
        sections: vec![Section {
            title: "Seed beside ours".into(),
            body: "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n".into(),
        }],
        charts: Vec::new(),
        extra: None,
    }
}

fn comparisons() -> Vec<Comparison> {
    vec![
        Comparison::new("Base exchange", "T1", "ms", 17.037).ours(Some(0.155)),
        Comparison::new("Base exchange", "T_be", "ms", 188.418).ours(Some(1.63)),
        Comparison::new("Throughput", "TCP", "Mbit/s", 8.773).ours(Some(9.49)),
    ]
}

/// The page with '/' unescaped (minijinja writes it as &#x2f;).
fn page() -> String {
    let r = report();
    let c = comparisons();
    let input = PageInput {
        report: &r,
        comparisons: &c,
        seed_line: "seed 004".into(),
        index_href: "../index.html".into(),
    };
    scenario_page(&input).expect("page renders").replace("&#x2f;", "/")
}

/// The body rows of every `<table {attr}>`.
fn body_rows(html: &str, attr: &str) -> usize {
    html.split(&format!("<table {attr}"))
        .skip(1)
        .map(|t| {
            let table = &t[..t.find("</table>").expect("table closed")];
            table.split("<tbody>").nth(1).unwrap_or("").matches("<tr>").count()
        })
        .sum()
}

#[test]
fn scenario_page_has_html_tables_with_a_row_per_case_and_per_comparison() {
    let h = page();
    assert!(!h.contains("<pre>"), "no Markdown in <pre>");
    assert_eq!(body_rows(&h, "id=\"cases\""), 3);
    assert_eq!(body_rows(&h, "class=\"comparisons\""), 3);
    // The section's Markdown table became an HTML table with a header and two rows.
    assert!(h.contains("<th>a</th>"), "{h}");
    assert!(h.contains("<td>3</td>"));
    // Ratios and readings in plain words.
    assert!(h.contains("0.00865"), "ours ÷ seed of T_be");
    assert!(h.contains("× lower than the seed"));
    assert!(h.contains("within 10 %"));
}

#[test]
fn scenario_page_draws_headlines_and_escapes_text() {
    let h = page();
    // Two headline charts (ms and Mbit/s) and the standard throughput plot.
    assert_eq!(h.matches("<figure class=\"chart\"").count(), 3, "{h}");
    assert!(h.matches("<svg").count() >= 3);
    // The throughput plot spans 9.5 .. 17929 Mbit/s: a log axis.
    assert!(h.contains("Mbit/s (log scale)"));
    assert!(h.contains("Test &lt;CPU&gt;"), "machine text escaped");
    assert!(h.contains("&lt;b&gt;markup"), "HTML in a note shown as text");
    assert!(h.contains("<code>note</code>"), "Markdown in a note rendered");
    assert!(h.contains("0123456789-dirty"));
    assert!(h.contains("href=\"../index.html\""));
}

#[test]
fn index_lists_every_scenario_with_its_link() {
    let r = report();
    let c = comparisons();
    let input = PageInput {
        report: &r,
        comparisons: &c,
        seed_line: "seed 004".into(),
        index_href: String::new(),
    };
    let a = IndexEntry::new(&input, "a/report.html".into(), None);
    let mut b = a.clone();
    b.scenario = "hip-bex".into();
    b.href = "b/report.html".into();
    // minijinja escapes '/' in text as &#x2f; (a browser reads it back as '/').
    let h = index_page(&[a, b]).expect("index renders").replace("&#x2f;", "/");
    assert_eq!(body_rows(&h, "id=\"scenarios\""), 2);
    assert!(h.contains("href=\"a/report.html\"") && h.contains("href=\"b/report.html\""));
    assert!(h.contains("3 published figures, 3 measured here, 1 of them within 25 %"), "{h}");
}

#[test]
fn utc_dates() {
    assert_eq!(utc(0), "1970-01-01 00:00 UTC");
    assert_eq!(utc(951_825_600), "2000-02-29 12:00 UTC");
    assert_eq!(utc(1_795_600_000), "2026-11-25 09:46 UTC");
}
