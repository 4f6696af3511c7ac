//! The report's standard plots (throughput, transaction rate and service demand per mode) and the
//! scenario's own charts, as SVG files drawn by [`super::chart`].

use super::model::{Case, Report};
use crate::error::LabError;

pub use super::chart::{Bar, Group};

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

/// A plot to draw: file name, title, unit, groups.
pub type PlotSpec = (String, String, String, Vec<Group>);

/// The report's plots before drawing: the standard ones that have bars, then the scenario's.
pub fn plot_specs(r: &Report) -> Vec<PlotSpec> {
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
    // Only the standard plots that have bars.
    let mut out: Vec<PlotSpec> = standard
        .into_iter()
        .filter(|(_, _, _, g)| !g.is_empty())
        .map(|(file, title, unit, g)| (file.into(), title.into(), unit.into(), g))
        .collect();
    for c in &r.charts {
        out.push((c.file.clone(), c.title.clone(), c.unit.clone(), c.groups.clone()));
    }
    out
}

/// The report's plots as (file name, SVG text).
pub fn plots(r: &Report) -> Result<Vec<(String, String)>, LabError> {
    plot_specs(r)
        .into_iter()
        .map(|(file, title, unit, g)| Ok((file, super::chart::bar_chart(&title, &unit, &g)?)))
        .collect()
}
