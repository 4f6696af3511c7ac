//! A tiny run of scenario `dv-video`: ffmpeg's DV clip streamed as RTP through no protection and
//! through AH+ESP (hipsec nodes) over a 10 Mbit/s path, at the full frame rate and at 1/4. The
//! 28.8 Mbit/s full rate cannot fit the path and must lose frames; 1/4 (7.2 Mbit/s of DV, about
//! 8 with the headers) must arrive whole and decode in ffmpeg, with IPsec as without. Written
//! files (Markdown, JSON, SVG, HTML) and no namespace left.
//!
//! Needs root, the `hipsec` binary (target/<profile>/hipsec or HIPSEC_BIN) and ffmpeg; says
//! SKIPPED without them (under CI a missing binary or tool is a failure).

mod common;
use lab::scenario::dv_video::{Plan, Point, run};
use lab::scenario::{EspSuite, Mode};
use lab::{NodeHook, RunOptions};

#[test]
fn a_quarter_of_the_frames_fits_ten_megabits_through_ah_esp() {
    let Some(hipsec) = common::ready(&["ffmpeg", "ffprobe"]) else { return };
    let plan = Plan {
        modes: vec![Mode::None, Mode::AhEsp(EspSuite::Aes128Gcm)],
        links: vec![("10mbit".into(), Some(10_000_000))],
        every: vec![1, 4],
        seconds: 1.2,
    };
    let opts = RunOptions {
        no_progress: true,
        traffic_bin: Some(env!("CARGO_BIN_EXE_hipsec-traffic").into()),
        ..RunOptions::default()
    };
    let names_before = lab::topology::list_namespaces().unwrap_or_default();
    let report = run(&opts, &NodeHook::new(&hipsec), &plan).expect("dv-video run");
    let text = lab::report::markdown::render(&report);
    println!("{text}");
    assert!(report.pending.is_empty(), "{:?}", report.pending);
    let points: Vec<Point> =
        serde_json::from_value(report.extra.as_ref().expect("extra")["points"].clone())
            .expect("points");
    assert_eq!(points.len(), 4);
    for p in &points {
        assert!(p.sent.frames_sent > 0 && p.sent.send_errors == 0, "{p:?}");
        if p.every == 1 {
            assert!(p.frame_loss_pct() > 30.0, "28.8 Mbit/s fitted a 10 Mbit/s path: {p:?}");
        } else {
            assert!(p.survives(), "1/4 of the frames did not come through whole: {p:?}");
            assert_eq!(p.decoded_frames, Some(p.sent.frames_sent), "{p:?}");
        }
    }
    assert!(text.contains("Does the full frame rate survive IPsec?"), "{text}");
    let dir = std::env::temp_dir().join(format!("hlab-dv-test-{}", std::process::id()));
    let files = lab::pages::write_scenario(&report, &dir).expect("report written");
    common::assert_written(
        &files,
        &["report.md", "report.json", "dv_frames.svg", "report.html", "index.html"],
    );
    let _ = std::fs::remove_dir_all(&dir);
    common::assert_no_namespaces_left(&names_before);
}
