//! `hipsec lab report DIR` on the results kept in docs/results: every scenario's report.json
//! parses, names its seed comparisons and becomes a page the index links to; a malformed
//! report.json is an error naming the file and the field.

use lab::pages;
use std::path::{Path, PathBuf};

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let p = e?.path();
        let Some(name) = p.file_name() else { continue };
        let dest = to.join(name);
        if p.is_dir() {
            copy_dir(&p, &dest)?;
        } else if name == "report.json" {
            std::fs::copy(&p, &dest)?;
        }
    }
    Ok(())
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hlab-pages-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The kept results: only their report.json files, in a fresh folder.
fn kept_results(name: &str) -> std::io::Result<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    let dir = tmp(name);
    copy_dir(&src, &dir)?;
    Ok(dir)
}

#[test]
fn every_kept_result_renders_to_a_page_the_index_links() {
    let dir = kept_results("kept").expect("copy docs/results");
    let done = pages::render_dir(&dir).expect("render");
    assert!(done.scenarios.len() >= 4, "{:?}", done.scenarios);
    let index = std::fs::read_to_string(&done.index).expect("index").replace("&#x2f;", "/");
    for s in &done.scenarios {
        let rel = s.strip_prefix(&dir).expect("below").join("report.html");
        let href = format!("href=\"{}\"", rel.display());
        assert!(index.contains(&href), "{href} missing from the index");
        let page = std::fs::read_to_string(s.join("report.html")).expect("page");
        let r = lab::report::Report::read(&s.join("report.json")).expect("json");
        assert!(page.contains(&format!("<h1>{} <small>", r.scenario)), "{}", s.display());
        // Every kept scenario compares with its seed: a chart and a table row per figure.
        let comparisons = pages::comparisons(&r).expect("comparisons");
        assert!(!comparisons.is_empty(), "{}: no seed figure compared", s.display());
        assert_eq!(
            page.matches("<table class=\"comparisons\">").count(),
            lab::report::compare::headlines(&comparisons).len()
        );
        assert!(!page.contains("<pre>"), "{}", s.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn throughput_bars_of_every_link_rate_stay_visible() {
    let dir = kept_results("links").expect("copy docs/results");
    pages::render_dir(&dir).expect("render");
    let svg =
        std::fs::read_to_string(dir.join("2026-11-25/hip-bex-full-b4962dc/hip_throughput.svg"))
            .expect("hip_throughput.svg");
    assert!(svg.contains("Mbit/s (log scale)"), "9.5, 94 and 17929 Mbit/s span decades");
    for v in ["9.49", "94.3", "17929"] {
        assert!(svg.contains(v), "{v} missing");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_malformed_report_names_the_file_and_the_field() {
    let dir = kept_results("bad").expect("copy docs/results");
    let json = dir.join("2026-11-25/hip-bex-quick/report.json");
    let text = std::fs::read_to_string(&json).expect("json");
    // A figure of the scenario's own results with the wrong type.
    let bad = text.replacen("\"t_be_us\": ", "\"t_be_us\": \"slow\", \"was\": ", 1);
    assert_ne!(bad, text);
    std::fs::write(&json, bad).expect("write");
    let err = pages::render_dir(&dir).expect_err("must fail").to_string();
    assert!(err.contains("hip-bex-quick/report.json"), "{err}");
    assert!(err.contains("extra.main.median.t_be_us"), "{err}");
    // A wrong type in the common part.
    std::fs::write(&json, text.replacen("\"wall_s\": ", "\"wall_s\": \"long\", \"x\": ", 1))
        .expect("write");
    let err = pages::render_dir(&dir).expect_err("must fail").to_string();
    assert!(err.contains("hip-bex-quick/report.json") && err.contains("wall_s"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_folder_without_reports_is_an_error() {
    let dir = tmp("empty");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let err = pages::render_dir(&dir).expect_err("nothing to render").to_string();
    assert!(err.contains("no report.json"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
