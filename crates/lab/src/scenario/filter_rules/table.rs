//! From the sweep's cases to the report's figures: one [`FilterRow`] per point and test, the
//! Markdown table, the seed comparison and the charts.

use super::plan::{Implementation, Plan};
use super::sweep::PointInfo;
use crate::report::number::num;
use crate::report::{Case, Chart, SeedFigures};
use crate::traffic::TestKind;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Throughput, CPU and service demand of one point and test, and their change against off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilterRow {
    pub implementation: Implementation,
    pub rules: usize,
    pub test: TestKind,
    pub msg_size: usize,
    /// None: pending (see `pending`).
    pub mbit_s: Option<f64>,
    pub ci95: Option<f64>,
    pub cpu_machine_pct: Option<f64>,
    pub sd_machine: Option<f64>,
    pub sd_procs: Option<f64>,
    pub d_mbit_s_pct: Option<f64>,
    pub d_cpu_pct: Option<f64>,
    pub d_sd_machine_pct: Option<f64>,
    pub d_sd_procs_pct: Option<f64>,
    /// nft: seconds `nft -f` took; rules and sets in the loaded ruleset.
    pub load_s: Option<f64>,
    pub nft_rules: Option<usize>,
    pub nft_sets: Option<usize>,
    /// nft sets: inverted overlapping pairs (0 = exactly the hipsec semantics).
    pub set_conflicts: Option<usize>,
    pub pending: Option<String>,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn pct(v: Option<f64>, base: Option<f64>) -> Option<f64> {
    match (v, base) {
        (Some(v), Some(b)) if b > 0.0 => Some(100.0 * (v / b - 1.0)),
        _ => None,
    }
}

/// One row per point and test (off once, as the mean of its runs).
pub(super) fn rows(plan: &Plan, cases: &[Case], infos: &[PointInfo]) -> Vec<FilterRow> {
    let mut out = Vec::new();
    let metric = |c: &Case| {
        (
            c.summary.map(|s| s.mean),
            c.summary.map(|s| s.ci95),
            c.cpu.as_ref().map(|u| u.machine_pct),
            c.cpu.as_ref().and_then(|u| u.sd_machine),
            c.cpu.as_ref().and_then(|u| u.sd_procs),
        )
    };
    for req in &plan.tests {
        let same = |c: &&Case| c.test == req.test && c.msg_size == req.msg_size;
        let off: Vec<&Case> =
            cases.iter().filter(same).filter(|c| c.mode == Implementation::Off.label()).collect();
        let avg = |f: &dyn Fn(&Case) -> Option<f64>| {
            mean(&off.iter().filter_map(|c| f(c)).collect::<Vec<_>>())
        };
        let base = (
            avg(&|c| metric(c).0),
            avg(&|c| metric(c).1),
            avg(&|c| metric(c).2),
            avg(&|c| metric(c).3),
            avg(&|c| metric(c).4),
        );
        let mut seen_off = false;
        for (p, info) in plan.points.iter().zip(infos) {
            if p.imp == Implementation::Off {
                if seen_off {
                    continue;
                }
                seen_off = true;
            }
            let m = if p.imp == Implementation::Off {
                base
            } else {
                cases
                    .iter()
                    .filter(same)
                    .find(|c| c.mode == p.mode())
                    .map(metric)
                    .unwrap_or((None, None, None, None, None))
            };
            let on = p.imp != Implementation::Off;
            out.push(FilterRow {
                implementation: p.imp,
                rules: p.rules,
                test: req.test,
                msg_size: req.msg_size,
                mbit_s: m.0,
                ci95: m.1,
                cpu_machine_pct: m.2,
                sd_machine: m.3,
                sd_procs: m.4,
                d_mbit_s_pct: pct(m.0, base.0).filter(|_| on),
                d_cpu_pct: pct(m.2, base.2).filter(|_| on),
                d_sd_machine_pct: pct(m.3, base.3).filter(|_| on),
                d_sd_procs_pct: pct(m.4, base.4).filter(|_| on),
                load_s: info.load_s,
                nft_rules: info.nft.map(|n| n.0),
                nft_sets: info.nft.map(|n| n.1),
                set_conflicts: info
                    .nft
                    .filter(|_| p.imp == Implementation::NftSets)
                    .map(|n| n.2.conflicts),
                pending: info.pending.clone(),
            });
        }
    }
    out
}

fn o(v: Option<f64>) -> String {
    v.map_or("–".into(), num)
}

fn d(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:+.1}"))
}

pub(super) fn table_md(rows: &[FilterRow]) -> String {
    let mut s = String::from(
        "| filter | rules | test | Mbit/s | Δ thr % | CPU machine % | Δ CPU % | SD machine µs/KB | Δ SD % | SD procs | Δ SD procs % | nft load s | note |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let rules = if r.implementation == Implementation::Off {
            "–".into()
        } else {
            r.rules.to_string()
        };
        let test = format!("{} {} B", r.test, r.msg_size);
        let mut note = String::new();
        if let Some(p) = &r.pending {
            note = format!("pending: {p}");
        } else if let (Some(n), Some(sets)) = (r.nft_rules, r.nft_sets) {
            note = format!("{n} nft rules, {sets} sets");
            if let Some(c) = r.set_conflicts {
                let _ = write!(note, ", {c} set conflicts");
            }
        }
        let thr = match (r.mbit_s, r.ci95) {
            (Some(m), Some(ci)) => format!("{} ± {}", num(m), num(ci)),
            (m, _) => o(m),
        };
        let _ = writeln!(
            s,
            "| {} | {rules} | {test} | {thr} | {} | {} | {} | {} | {} | {} | {} | {} | {note} |",
            r.implementation.label(),
            d(r.d_mbit_s_pct),
            o(r.cpu_machine_pct),
            d(r.d_cpu_pct),
            o(r.sd_machine),
            d(r.d_sd_machine_pct),
            o(r.sd_procs),
            d(r.d_sd_procs_pct),
            r.load_s.map_or("–".into(), |x| format!("{x:.2}")),
        );
    }
    s
}

/// A seed comparison: label, seed's change %, rule count (None: all > 0), our figure, sign.
type SeedLine<'a> = (&'a str, Option<f64>, Option<usize>, Metric, f64);

/// A figure of a row.
type Metric = fn(&FilterRow) -> Option<f64>;

/// Mean over both tests of `f` for an implementation at `rules` (None: all rule counts > 0).
pub(super) fn avg_change(
    rows: &[FilterRow],
    imp: Implementation,
    rules: Option<usize>,
    f: Metric,
) -> Option<f64> {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.implementation == imp && rules.map_or(r.rules > 0, |n| r.rules == n))
        .filter_map(f)
        .collect();
    mean(&v)
}

pub(super) fn seed_md(rows: &[FilterRow], seed: &SeedFigures) -> String {
    use Implementation::*;
    let mut s = String::new();
    let Some(t) = &seed.table else {
        return format!(
            "Seed figures absent ({}): {}. Our figures stand alone.\n",
            seed.source, seed.note
        );
    };
    let get = |k: &str, sub: &str| t.get(k).and_then(|v| v.get(sub)).and_then(|v| v.as_f64());
    let _ = writeln!(
        s,
        "Source: `{}`. Seed: IPFilter on HP-UX, netperf; drops as positive %, ours as signed change (− = lower throughput). Ours are the mean over TCP_STREAM and UDP_STREAM; each cell lists classifier · linear · nft linear · nft sets (– = not measured in this profile, or pending).\n",
        seed.source
    );
    let _ = writeln!(
        s,
        "| figure | seed | ours: classifier · linear · nft linear · nft sets | reading |\n|---|---|---|---|"
    );
    let imps = [Classifier, Linear, NftLinear, NftSets];
    let cell = |rules: Option<usize>, f: Metric| {
        imps.iter().map(|&i| d(avg_change(rows, i, rules, f))).collect::<Vec<_>>().join(" · ")
    };
    let thr = |r: &FilterRow| r.d_mbit_s_pct;
    let cpu = |r: &FilterRow| r.d_cpu_pct;
    let sd = |r: &FilterRow| r.d_sd_machine_pct;
    let reading = |rules: Option<usize>, f: Metric, seed_v: Option<f64>, sign: f64| {
        let c = avg_change(rows, Classifier, rules, f);
        let n = avg_change(rows, NftLinear, rules, f);
        match (c, seed_v) {
            (Some(c), Some(sv)) if (sign * c) <= sv.abs() / 4.0 + 1.0 => {
                let nft =
                    n.map_or(String::new(), |n| format!("; the kernel's linear chain: {n:+.1} %"));
                format!(
                    "hipsec's classifier does not pay for its rules (seed {:+.2} %){nft}",
                    sign * sv
                )
            }
            (Some(c), Some(_)) => format!(
                "classifier {c:+.1} %: the filter shows a cost here (see the table; quick runs are noisy)"
            ),
            (None, _) => "hipsec rows pending or not measured (see above)".into(),
            _ => "no seed figure".into(),
        }
    };
    let lines: [SeedLine<'_>; 7] = [
        (
            "throughput, 100 rules",
            get("throughput_drop_pct", "rules_100").map(|v| -v),
            Some(100),
            thr,
            -1.0,
        ),
        (
            "throughput, 5000 rules",
            get("throughput_drop_pct", "rules_5000").map(|v| -v),
            Some(5000),
            thr,
            -1.0,
        ),
        (
            "throughput, installed, no rules (seed: up to)",
            get("throughput_drop_pct", "installed_no_rules_max").map(|v| -v),
            Some(0),
            thr,
            -1.0,
        ),
        (
            "CPU utilisation, installed, no rules",
            get("cpu_utilization_increase_pct", "installed_no_rules"),
            Some(0),
            cpu,
            1.0,
        ),
        (
            "CPU utilisation, with rules (mean)",
            get("cpu_utilization_increase_pct", "with_rules"),
            None,
            cpu,
            1.0,
        ),
        (
            "service demand, installed, no rules",
            get("service_demand_increase_pct", "installed_no_rules"),
            Some(0),
            sd,
            1.0,
        ),
        (
            "service demand, with rules (mean)",
            get("service_demand_increase_pct", "with_rules"),
            None,
            sd,
            1.0,
        ),
    ];
    for (what, sv, rules, f, sign) in lines {
        let _ = writeln!(
            s,
            "| {what} | {} | {} | {} |",
            sv.map_or("–".into(), |v| format!("{v:+.2} %")),
            cell(rules, f),
            reading(rules, f, sv.map(|v| v * sign), sign),
        );
    }
    let c5000 = avg_change(rows, Classifier, Some(5000), thr);
    let _ = writeln!(
        s,
        "\nTarget — hipsec's filter at 5000 rules loses ≤ 1 % throughput against filter off: {}.",
        match c5000 {
            Some(c) if c >= -1.0 => format!("met ({c:+.2} %)"),
            Some(c) => format!(
                "not met in this run ({c:+.2} %; compare with the 95 % intervals in the table)"
            ),
            None => "not measured (pending)".into(),
        }
    );
    s
}

pub(super) fn charts(rows: &[FilterRow]) -> Vec<Chart> {
    let mk = |file: &str, title: &str, unit: &str, f: fn(&FilterRow) -> Option<(f64, f64)>| {
        let mut groups: Vec<crate::report::svg::Group> = Vec::new();
        for r in rows.iter().filter(|r| r.pending.is_none()) {
            let Some((v, ci)) = f(r) else { continue };
            let label = format!("{} {} B", r.test, r.msg_size);
            let series = if r.implementation == Implementation::Off {
                "off".to_string()
            } else {
                format!("{} {}", r.implementation.label().trim_start_matches("hipsec "), r.rules)
            };
            match groups.iter_mut().find(|(l, _)| *l == label) {
                Some((_, bars)) => bars.push((series, v, ci)),
                None => groups.push((label, vec![(series, v, ci)])),
            }
        }
        Chart { file: file.into(), title: title.into(), unit: unit.into(), groups }
    };
    vec![
        mk("filter_throughput.svg", "STREAM throughput per filter and rule count", "Mbit/s", |r| {
            r.mbit_s.map(|m| (m, r.ci95.unwrap_or(0.0)))
        }),
        mk(
            "filter_service_demand.svg",
            "Service demand (machine) per filter and rule count",
            "CPU µs per KB",
            |r| r.sd_machine.map(|m| (m, 0.0)),
        ),
    ]
}
