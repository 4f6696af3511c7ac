//! Hand-written SVG bar charts (throughput, transaction rate and service demand per mode, with 95 %
//! CI whiskers) and the HTML page that inlines them with the Markdown table.

use super::{Case, Report};
use std::fmt::Write;

/// A bar: series (mode) name, value, 95 % CI half-width.
pub type Bar = (String, f64, f64);
/// A group of bars under one label.
pub type Group = (String, Vec<Bar>);

const PALETTE: [&str; 6] = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Grouped bars: one group per label, one bar per series (mode), value and CI half-width.
pub fn bar_chart(title: &str, unit: &str, groups: &[Group]) -> String {
    let series: Vec<String> = {
        let mut s: Vec<String> = Vec::new();
        for (_, bars) in groups {
            for (name, _, _) in bars {
                if !s.contains(name) {
                    s.push(name.clone());
                }
            }
        }
        s
    };
    let max = groups
        .iter()
        .flat_map(|(_, b)| b.iter().map(|(_, v, ci)| v + ci))
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let (left, top, plot_h, group_w) =
        (70.0, 40.0, 260.0, 30.0 + 22.0 * series.len().max(1) as f64);
    let width = left + group_w * groups.len().max(1) as f64 + 150.0;
    let height = top + plot_h + 120.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="20" font-size="14" font-weight="bold">{}</text>"#,
        esc(title)
    );
    let _ = writeln!(
        s,
        r#"<line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="black"/>"#,
        top + plot_h
    );
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        let y = top + plot_h - plot_h * i as f64 / 4.0;
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{y:.1}" x2="{:.0}" y2="{y:.1}" stroke="#ddd"/>"##,
            width - 150.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.0}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 4.0,
            y + 4.0,
            super::markdown::num(v)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="14" y="{:.0}" transform="rotate(-90 14 {:.0})">{}</text>"#,
        top + plot_h / 2.0,
        top + plot_h / 2.0,
        esc(unit)
    );
    for (g, (label, bars)) in groups.iter().enumerate() {
        let gx = left + 15.0 + g as f64 * group_w;
        for (name, v, ci) in bars {
            let k = series.iter().position(|x| x == name).unwrap_or(0);
            let x = gx + 22.0 * k as f64;
            let h = plot_h * v / max;
            let y = top + plot_h - h;
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="18" height="{h:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                PALETTE[k % PALETTE.len()],
                esc(name),
                super::markdown::num(*v)
            );
            if *ci > 0.0 {
                let (y1, y2) = (
                    top + plot_h - plot_h * (v + ci) / max,
                    top + plot_h - plot_h * (v - ci).max(0.0) / max,
                );
                let _ = writeln!(
                    s,
                    r#"<line x1="{:.1}" y1="{y1:.1}" x2="{:.1}" y2="{y2:.1}" stroke="black"/>"#,
                    x + 9.0,
                    x + 9.0
                );
            }
        }
        let lx = gx + 5.0;
        let ly = top + plot_h + 10.0;
        let _ = writeln!(
            s,
            r#"<text x="{lx:.1}" y="{ly:.1}" transform="rotate(45 {lx:.1} {ly:.1})">{}</text>"#,
            esc(label)
        );
    }
    for (k, name) in series.iter().enumerate() {
        let y = top + 14.0 * k as f64;
        let x = width - 140.0;
        let _ = writeln!(
            s,
            r#"<rect x="{x:.0}" y="{y:.0}" width="10" height="10" fill="{}"/>"#,
            PALETTE[k % PALETTE.len()]
        );
        let _ = writeln!(s, r#"<text x="{:.0}" y="{:.0}">{}</text>"#, x + 14.0, y + 9.0, esc(name));
    }
    s.push_str("</svg>\n");
    s
}

fn groups(
    r: &Report,
    pick: &dyn Fn(&Case) -> Option<(f64, f64)>,
    want: &dyn Fn(&Case) -> bool,
) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for c in r.cases.iter().filter(|c| want(c)) {
        let Some((v, ci)) = pick(c) else { continue };
        let label = c.label();
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, bars)) => bars.push((c.mode.clone(), v, ci)),
            None => out.push((label, vec![(c.mode.clone(), v, ci)])),
        }
    }
    out
}

/// The report's plots as (file name, SVG text).
pub fn plots(r: &Report) -> Vec<(String, String)> {
    let mean = |c: &Case| c.summary.map(|s| (s.mean, s.ci95));
    let sd = |c: &Case| c.cpu.as_ref().and_then(|u| u.sd_machine).map(|v| (v, 0.0));
    let standard = [
        (
            "throughput.svg",
            "STREAM throughput per mode",
            "Mbit/s",
            groups(r, &mean, &|c| c.test.is_stream()),
        ),
        (
            "transactions.svg",
            "RR transaction rate per mode",
            "transactions/s",
            groups(r, &mean, &|c| !c.test.is_stream()),
        ),
        (
            "service_demand.svg",
            "STREAM service demand per mode (machine)",
            "CPU µs per KB",
            groups(r, &sd, &|c| c.test.is_stream()),
        ),
    ];
    // A report with scenario charts keeps only the standard plots that have bars.
    let mut out: Vec<(String, String)> = standard
        .into_iter()
        .filter(|(_, _, _, g)| r.charts.is_empty() || !g.is_empty())
        .map(|(file, title, unit, g)| (file.to_string(), bar_chart(title, unit, &g)))
        .collect();
    for c in &r.charts {
        out.push((c.file.clone(), bar_chart(&c.title, &c.unit, &c.groups)));
    }
    out
}

/// A self-contained page: the plots inline and the Markdown report in a `<pre>`.
pub fn html(r: &Report, plots: &[(String, String)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>hipsec lab — {}</title>",
        esc(&r.scenario)
    );
    let _ = writeln!(
        s,
        "<style>body{{font-family:sans-serif;margin:2em}} pre{{font-size:12px;overflow-x:auto}}</style></head><body>"
    );
    let _ = writeln!(s, "<h1>hipsec lab — {} ({})</h1>", esc(&r.scenario), esc(&r.profile));
    for (name, svg) in plots {
        let _ = writeln!(s, "<figure>{svg}<figcaption>{}</figcaption></figure>", esc(name));
    }
    let _ = writeln!(s, "<h2>Report</h2><pre>{}</pre>", esc(&super::markdown::render(r)));
    s.push_str("<p>Raw samples: <a href=\"report.json\">report.json</a></p></body></html>\n");
    s
}
