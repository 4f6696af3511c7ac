//! dv-video's tables, chart and comparisons: per link, each mode's frames sent and received per
//! second at each frame rate, loss, Mbit/s and jitter; whether the full rate survives; the
//! seed's readings (7–17 Mbit/s with IPsec, 1/10 of the frames through ≈ 10 Mbit/s) beside ours.

use super::{Point, SEED_PATH_BPS};
use crate::report::compare::Comparison;
use crate::report::{Chart, Report, Section, SeedFigures};

fn rate(every: u32) -> String {
    if every == 1 { "full".into() } else { format!("1/{every}") }
}

fn links(points: &[Point]) -> Vec<String> {
    let mut l: Vec<String> = Vec::new();
    for p in points {
        if !l.contains(&p.link) {
            l.push(p.link.clone());
        }
    }
    l
}

fn modes(points: &[Point]) -> Vec<String> {
    let mut m: Vec<String> = Vec::new();
    for p in points {
        if !m.contains(&p.mode) {
            m.push(p.mode.clone());
        }
    }
    m
}

/// The lowest divisor K (the highest frame rate) at which `mode` on `link` came through.
pub fn best_surviving(points: &[Point], mode: &str, link: &str) -> Option<u32> {
    points
        .iter()
        .filter(|p| p.mode == mode && p.link == link && p.survives())
        .map(|p| p.every)
        .min()
}

/// The Markdown sections: one table per link, then the answer to the seed's question.
pub fn sections(points: &[Point], seed: &SeedFigures) -> Vec<Section> {
    let mut out = Vec::new();
    for link in links(points) {
        let mut body = String::from(
            "| mode | frame rate | frames sent/s | whole frames received/s | frame loss | decoded | Mbit/s received | frame jitter ms |\n|---|---|---|---|---|---|---|---|\n",
        );
        for p in points.iter().filter(|p| p.link == link) {
            body.push_str(&format!(
                "| {} | {} | {:.1} | {:.1} | {:.1} % | {} | {:.2} | {:.2} |\n",
                p.mode,
                rate(p.every),
                p.sent_fps(),
                p.received_fps(),
                p.frame_loss_pct(),
                p.decoded_frames
                    .map_or("?".into(), |n| format!("{n}/{}", p.received.frames_complete)),
                p.received_mbit_s(),
                p.received.frame_jitter_ms,
            ));
        }
        out.push(Section { title: format!("DV over IPsec, {link}"), body });
    }
    let mut answer = String::new();
    for link in links(points) {
        for mode in modes(points) {
            let best = best_surviving(points, &mode, &link);
            answer.push_str(&format!(
                "- {mode}, {link}: {}\n",
                match best {
                    Some(1) => "the full frame rate survives (≤ 1 % of frames lost, all decoded)".to_string(),
                    Some(k) => format!("the full rate does not survive; 1/{k} of the frames is the highest rate that does"),
                    None => "no rate tried survives".to_string(),
                }
            ));
        }
    }
    let seed_note = seed
        .table
        .as_ref()
        .and_then(|t| t.get("dv_video_mbit_s"))
        .and_then(|v| v.get("note"))
        .and_then(|v| v.as_str())
        .unwrap_or("seed figures absent");
    answer.push_str(&format!(
        "\nThe seed (1999 PCs, KAME, DVTS, a ≈ 10 Mbit/s ATM path): 7–17 Mbit/s of DV with IPsec; {seed_note}. A frame of DV is 144,000 octets whatever the picture, so the rate a path carries fixes the share of frames that fit: 10 Mbit/s holds 1/3 of the 28.8 Mbit/s stream at most, before IPsec's overhead.\n"
    ));
    out.push(Section { title: "Does the full frame rate survive IPsec?".into(), body: answer });
    out
}

/// Whole frames received per second, a group per link and frame rate, a bar per mode.
pub fn charts(points: &[Point]) -> Vec<Chart> {
    let mut groups = Vec::new();
    for link in links(points) {
        let mut everies: Vec<u32> = points.iter().map(|p| p.every).collect();
        everies.sort_unstable();
        everies.dedup();
        for every in everies {
            let bars: Vec<_> = points
                .iter()
                .filter(|p| p.link == link && p.every == every)
                .map(|p| (p.mode.clone(), p.received_fps(), 0.0))
                .collect();
            if !bars.is_empty() {
                groups.push((format!("{link}, {} rate", rate(every)), bars));
            }
        }
    }
    vec![Chart {
        file: "dv_frames.svg".into(),
        title: "DV frames received whole per second (sent: 25 ÷ K)".into(),
        unit: "frames/s".into(),
        groups,
    }]
}

fn points_of(r: &Report) -> Vec<Point> {
    r.extra
        .as_ref()
        .and_then(|e| e.get("points"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// The seed's two readings beside ours: the DV rate through AH+ESP, and the share of frames
/// that fits the ≈ 10 Mbit/s path.
pub fn comparisons(r: &Report) -> Vec<Comparison> {
    let points = points_of(r);
    let mut out = Vec::new();
    let shaped = format!("{}mbit", SEED_PATH_BPS / 1_000_000);
    if let Some(seed) = r.seed_num(&["dv_video_mbit_s", "max"]) {
        for link in links(&points) {
            let ours = points
                .iter()
                .filter(|p| p.mode == "AH+ESP" && p.link == link)
                .map(Point::received_mbit_s)
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
            let why = if link == shaped {
                "the same ≈ 10 Mbit/s path bounds both; the seed's range reaches past it on its faster segments"
            } else {
                "the stream's own 28.8 Mbit/s bounds ours: the cipher is not the limit on a 2020s core"
            };
            out.push(
                Comparison::new(
                    "DV through AH+ESP",
                    format!("highest DV rate through AH+ESP, {link}"),
                    "Mbit/s",
                    seed,
                )
                .ours(ours)
                .why(why),
            );
        }
    }
    if r.seed.as_ref().is_some_and(|s| s.table.is_some()) {
        let ours = best_surviving(&points, "AH+ESP", &shaped).map(|k| 1.0 / f64::from(k));
        out.push(
            Comparison::new(
                "DV through AH+ESP",
                format!("share of the frames delivered whole, AH+ESP, {shaped}"),
                "fraction",
                0.1,
            )
            .ours(ours)
            .why("the seed's hosts, not only its path, held it to 1/10; here the 10 Mbit/s link alone decides"),
        );
    }
    out
}
