//! The results table of a scenario with netperf-style cases (ipsec-netperf, filter-rules), as
//! rows of cells for the page template: one row per mode, family, link, test and size.

use crate::report::model::{Case, Report};
use crate::report::number::num;
use serde::Serialize;

/// Column headers, in the order of [`CaseRow::cells`].
pub const HEADERS: [&str; 12] = [
    "mode",
    "IP",
    "link",
    "test",
    "size B",
    "result",
    "± 95 % CI (n)",
    "unit",
    "vs none",
    "RTT µs mean / p99",
    "CPU machine %",
    "SD machine / procs / hipsec",
];

/// One case as text cells.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseRow {
    pub cells: Vec<String>,
}

fn opt(v: Option<f64>) -> String {
    v.map_or("–".into(), num)
}

fn row(c: &Case) -> CaseRow {
    let size = if c.test.is_stream() {
        c.msg_size.to_string()
    } else {
        format!("{}/{}", c.msg_size, c.resp_size)
    };
    let (mean, ci) = c.summary.map_or(("–".into(), String::new()), |s| {
        (num(s.mean), format!("± {} ({})", num(s.ci95), s.n))
    });
    let rtt = c.rtt.map_or("–".into(), |r| format!("{} / {}", num(r.mean_us), num(r.p99_us)));
    let (cpu, sd) = c.cpu.as_ref().map_or(("–".into(), "–".into()), |u| {
        (
            format!("{} ({} softirq)", num(u.machine_pct), num(u.softirq_pct)),
            format!(
                "{} / {} / {} {}",
                opt(u.sd_machine),
                opt(u.sd_procs),
                opt(u.sd_watched),
                u.sd_unit
            ),
        )
    });
    CaseRow {
        cells: vec![
            c.mode.clone(),
            c.family.to_string(),
            c.link.clone(),
            c.test.to_string(),
            size,
            mean,
            ci,
            c.test.unit().to_string(),
            opt(c.ratio_vs_none),
            rtt,
            cpu,
            sd,
        ],
    }
}

/// Every case of the report, in its order.
pub fn rows(r: &Report) -> Vec<CaseRow> {
    r.cases.iter().map(row).collect()
}
