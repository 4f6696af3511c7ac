//! The seed's IPFilter figures (throughput drop, CPU and service-demand increase against no
//! filter) beside hipsec's classifier, for the HTML report's headline chart. Changes are signed
//! percentages: the seed's drops are written as negative changes.

use super::plan::Implementation;
use super::table::{FilterRow, avg_change};
use crate::error::LabError;
use crate::report::Report;
use crate::report::compare::Comparison;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Extra {
    rows: Vec<FilterRow>,
}

type Pick = fn(&FilterRow) -> Option<f64>;

/// A published figure: label, seed table and key, sign of the seed's figure as a change, rule
/// count (None: every count above 0), our metric.
type Line<'a> = (&'a str, &'a str, &'a str, f64, Option<usize>, Pick);

/// Every published change with the classifier's mean over TCP_STREAM and UDP_STREAM.
pub fn comparisons(r: &Report) -> Result<Vec<Comparison>, LabError> {
    let Some(x) = r.extra_as::<Extra>()? else { return Ok(Vec::new()) };
    let thr: Pick = |r| r.d_mbit_s_pct;
    let cpu: Pick = |r| r.d_cpu_pct;
    let sd: Pick = |r| r.d_sd_machine_pct;
    let lines: [Line<'_>; 7] = [
        ("throughput, 100 rules", "throughput_drop_pct", "rules_100", -1.0, Some(100), thr),
        ("throughput, 5000 rules", "throughput_drop_pct", "rules_5000", -1.0, Some(5000), thr),
        (
            "throughput, installed, no rules (seed: up to)",
            "throughput_drop_pct",
            "installed_no_rules_max",
            -1.0,
            Some(0),
            thr,
        ),
        (
            "CPU, installed, no rules",
            "cpu_utilization_increase_pct",
            "installed_no_rules",
            1.0,
            Some(0),
            cpu,
        ),
        ("CPU, with rules (mean)", "cpu_utilization_increase_pct", "with_rules", 1.0, None, cpu),
        (
            "service demand, installed, no rules",
            "service_demand_increase_pct",
            "installed_no_rules",
            1.0,
            Some(0),
            sd,
        ),
        (
            "service demand, with rules (mean)",
            "service_demand_increase_pct",
            "with_rules",
            1.0,
            None,
            sd,
        ),
    ];
    let mut out = Vec::new();
    for (figure, key, sub, sign, rules, pick) in lines {
        let Some(seed) = r.seed_num(&[key, sub]) else { continue };
        let ours = avg_change(&x.rows, Implementation::Classifier, rules, pick);
        out.push(
            Comparison::new("Change against no filter (hipsec classifier)", figure, "%", sign * seed)
                .ours(ours)
                .why("the classifier's cost does not grow with the rule count; the seed's IPFilter walked its rules"),
        );
    }
    Ok(out)
}
