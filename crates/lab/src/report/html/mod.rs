//! The report people read in a browser: one page per scenario (`report.html`) and an index over
//! every scenario of a results folder (`index.html`), rendered through minijinja templates
//! (`page.html`, `index.html`, beside this file) with HTML auto-escaping. Tables are HTML tables,
//! charts inline SVG drawn by [`crate::report::chart`].

pub mod cases;
pub mod markdown;

use super::chart;
use super::compare::{self, Comparison};
use super::model::{Pending, Report};
use super::number::num;
use super::svg;
use crate::error::LabError;
use minijinja::Environment;
use serde::Serialize;

const STYLE: &str = include_str!("style.css");
const PAGE: &str = include_str!("page.html");
const INDEX: &str = include_str!("index.html");

/// File name of a scenario's page inside its folder.
pub const PAGE_FILE: &str = "report.html";
/// File name of the index over a results folder.
pub const INDEX_FILE: &str = "index.html";

fn env() -> Result<Environment<'static>, LabError> {
    let mut env = Environment::new();
    // Names ending in .html turn on HTML auto-escaping.
    env.add_template("page.html", PAGE).map_err(tpl_err)?;
    env.add_template("index.html", INDEX).map_err(tpl_err)?;
    Ok(env)
}

fn tpl_err(e: minijinja::Error) -> LabError {
    LabError::parse("HTML template", format!("{e:#}"))
}

/// `unix_s` as `YYYY-MM-DD HH:MM UTC` (the civil calendar from days since 1970-01-01).
pub fn utc(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", secs / 3600, secs % 3600 / 60)
}

/// What a scenario page shows besides the report itself.
#[derive(Debug, Clone)]
pub struct PageInput<'a> {
    pub report: &'a Report,
    pub comparisons: &'a [Comparison],
    /// e.g. "seed 001: HIP base exchange, puzzle, RTT and throughput".
    pub seed_line: String,
    /// Link from the page back to the index.
    pub index_href: String,
}

#[derive(Debug, Serialize)]
struct Figure {
    title: String,
    unit: String,
    file: String,
    svg: String,
    /// A headline's comparisons, shown as a table under its chart.
    rows: Vec<ComparisonRow>,
}

#[derive(Debug, Serialize)]
struct ComparisonRow {
    chart: String,
    figure: String,
    unit: String,
    seed: String,
    ours: String,
    measured: bool,
    ratio: String,
    close: bool,
    reading: String,
}

#[derive(Debug, Serialize)]
struct SectionHtml {
    title: String,
    html: String,
}

/// The headline charts of `comparisons` as (title, unit, SVG).
pub fn headline_svgs(
    comparisons: &[Comparison],
) -> Result<Vec<(String, String, String)>, LabError> {
    compare::headlines(comparisons)
        .into_iter()
        .map(|h| {
            let svg = chart::bar_chart(&h.title, &h.unit, &h.groups)?;
            Ok((h.title, h.unit, svg))
        })
        .collect()
}

fn machine_line(r: &Report) -> String {
    let m = &r.machine;
    format!("{} × {} cores, Linux {}", m.cpu_model, m.cores, m.kernel)
}

fn commit(r: &Report) -> String {
    r.machine.hipsec_commit.as_deref().map_or("(no git)".into(), |c| {
        let (head, dirty) = c.split_once('-').map_or((c, ""), |(h, d)| (h, d));
        let short: String = head.chars().take(10).collect();
        if dirty.is_empty() { short } else { format!("{short}-{dirty}") }
    })
}

/// A scenario's page.
pub fn scenario_page(p: &PageInput<'_>) -> Result<String, LabError> {
    let r = p.report;
    let row = |c: &Comparison| ComparisonRow {
        chart: c.chart.clone(),
        figure: c.figure.clone(),
        unit: c.unit.clone(),
        seed: format!("{}", c.seed),
        ours: c.ours.map_or("–".into(), num),
        measured: c.ours.is_some(),
        ratio: c.ratio().map_or("–".into(), compare::sig3),
        close: c.close(),
        reading: c.reading(),
    };
    let headlines: Vec<Figure> = headline_svgs(p.comparisons)?
        .into_iter()
        .map(|(title, unit, svg)| {
            let rows = p
                .comparisons
                .iter()
                .filter(|c| c.chart == title && c.unit == unit)
                .map(row)
                .collect();
            Figure { title, unit, file: String::new(), svg, rows }
        })
        .collect();
    let charts: Vec<Figure> = svg::plot_specs(r)
        .into_iter()
        .map(|(file, title, unit, groups)| {
            let svg = chart::bar_chart(&title, &unit, &groups)?;
            Ok(Figure { svg, title, unit, file, rows: Vec::new() })
        })
        .collect::<Result<_, LabError>>()?;
    let sections: Vec<SectionHtml> = r
        .sections
        .iter()
        .map(|s| SectionHtml { title: s.title.clone(), html: markdown::to_html(&s.body) })
        .collect();
    let notes: Vec<String> = r.notes.iter().map(|n| inline_md(n)).collect();
    let params = format!(
        "{} ms warm-up, {} ms measured, {} repetitions; mean ± 95 % CI (t·s/√n)",
        r.params.warmup_ms, r.params.duration_ms, r.params.repetitions
    );
    let ctx = PageCtx {
        style: STYLE,
        scenario: &r.scenario,
        profile: &r.profile,
        seed_line: &p.seed_line,
        index_href: &p.index_href,
        started: utc(r.started_unix_s),
        wall: format!("{:.0} s wall time", r.wall_s),
        commit: commit(r),
        machine: machine_line(r),
        summary: compare::summary(p.comparisons),
        headlines,
        comparisons: !p.comparisons.is_empty(),
        params,
        case_headers: &cases::HEADERS,
        case_rows: cases::rows(r),
        sections,
        charts,
        pending: &r.pending,
        notes,
        seed_source: r.seed.as_ref().map_or("–".to_string(), |s| s.source.clone()),
    };
    render("page.html", &ctx)
}

/// The page template's context.
#[derive(Debug, Serialize)]
struct PageCtx<'a> {
    style: &'a str,
    scenario: &'a str,
    profile: &'a str,
    seed_line: &'a str,
    index_href: &'a str,
    started: String,
    wall: String,
    commit: String,
    machine: String,
    summary: String,
    headlines: Vec<Figure>,
    /// Whether any seed figure is compared (the headline section).
    comparisons: bool,
    params: String,
    case_headers: &'a [&'a str],
    case_rows: Vec<cases::CaseRow>,
    sections: Vec<SectionHtml>,
    charts: Vec<Figure>,
    pending: &'a [Pending],
    notes: Vec<String>,
    seed_source: String,
}

fn render(name: &str, ctx: &impl Serialize) -> Result<String, LabError> {
    let env = env()?;
    let tpl = env.get_template(name).map_err(tpl_err)?;
    tpl.render(minijinja::value::Serde(ctx)).map_err(tpl_err)
}

/// One Markdown line (a note) as HTML without the surrounding paragraph.
fn inline_md(s: &str) -> String {
    let h = markdown::to_html(s);
    let t = h.trim();
    t.strip_prefix("<p>").and_then(|t| t.strip_suffix("</p>")).unwrap_or(t).to_string()
}

/// One scenario on the index page.
#[derive(Debug, Clone, Serialize)]
pub struct IndexEntry {
    pub scenario: String,
    pub seed_line: String,
    pub profile: String,
    pub started: String,
    pub commit: String,
    pub machine: String,
    pub summary: String,
    /// Link to the scenario's page, relative to the index.
    pub href: String,
    /// The first headline chart (SVG), if the scenario has one.
    pub headline: Option<String>,
    pub headline_title: String,
}

impl IndexEntry {
    pub fn new(
        p: &PageInput<'_>,
        href: String,
        headline: Option<(String, String, String)>,
    ) -> IndexEntry {
        let r = p.report;
        let (headline_title, headline) = match headline {
            Some((t, _, svg)) => (t, Some(svg)),
            None => (String::new(), None),
        };
        IndexEntry {
            scenario: r.scenario.clone(),
            seed_line: p.seed_line.clone(),
            profile: r.profile.clone(),
            started: utc(r.started_unix_s),
            commit: commit(r),
            machine: machine_line(r),
            summary: compare::summary(p.comparisons),
            href,
            headline,
            headline_title,
        }
    }
}

/// The index over `entries`.
pub fn index_page(entries: &[IndexEntry]) -> Result<String, LabError> {
    #[derive(Serialize)]
    struct IndexCtx<'a> {
        style: &'a str,
        entries: &'a [IndexEntry],
    }
    render("index.html", &IndexCtx { style: STYLE, entries })
}

#[cfg(test)]
mod tests;
