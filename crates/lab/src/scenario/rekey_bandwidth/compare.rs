//! The seed's Table 1 (per link rate: sessions, throughput, delays, rekeys, drops) beside our
//! points, for the HTML report's headline charts: one chart per column, one row per link rate.

use super::point::PointResult;
use super::table::{COLUMNS, SEED_SESSION, ours};
use crate::error::LabError;
use crate::report::Report;
use crate::report::compare::Comparison;
use crate::report::number::num;
use serde::Deserialize;

/// The part of the report's `extra` read here.
#[derive(Debug, Deserialize)]
struct Extra {
    points: Vec<PointResult>,
}

fn why(key: &str) -> &'static str {
    match key {
        "sessions" | "ike_rekeyed_sas" | "ipsec_rekey_requests" => {
            "a count over the run: the seed ran for hours per rate, ours for minutes"
        }
        "avg_throughput_kbit_s" => {
            "the seed's gateways were crypto-bound above about 6 Mbit/s; ours follow the link"
        }
        "ike_rekey_delay_s" | "ipsec_rekey_delay_s" => {
            "IKEv2 needs fewer round trips than the seed's IKEv1, and each waits behind less queued data"
        }
        "retransmissions" => {
            "Linux TCP flows overshoot the tbf queue; the seed lost its first SYNs"
        }
        _ => "make-before-break rekeys drop nothing for lack of an SA",
    }
}

/// Every number of the seed's Table 1 with ours at the same link rate (uncapped gateway; the
/// capped one where only it ran).
pub fn comparisons(r: &Report) -> Result<Vec<Comparison>, LabError> {
    let Some(x) = r.extra_as::<Extra>()? else { return Ok(Vec::new()) };
    let rates: Vec<f64> = r
        .seed
        .as_ref()
        .and_then(|s| s.table.as_ref())
        .and_then(|t| t.get("link_mbit_s"))
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
        .unwrap_or_default();
    let at = |capped: bool, mbit: f64| {
        x.points.iter().find(|p| {
            p.cap_pct.is_some() == capped
                && p.spec.rate_bps.is_some_and(|b| (b as f64 - mbit * 1e6).abs() < 1.0)
        })
    };
    let mut out = Vec::new();
    // The seed's finding first: throughput and session delay against the link rate.
    let mut columns = COLUMNS.to_vec();
    columns.sort_by_key(|(k, _)| !matches!(*k, "avg_throughput_kbit_s" | "avg_session_delay_s"));
    for (key, label) in columns {
        let chart = format!("Table 1: {label}");
        let unit = label.rsplit_once(' ').map_or("count", |(_, u)| match u {
            "kbit/s" | "s" => u,
            _ => "count",
        });
        for (i, mbit) in rates.iter().enumerate() {
            let seed = r.seed.as_ref().and_then(|s| s.table.as_ref());
            let Some(seed) = seed.and_then(|t| t.get(key)?.get(i)?.as_f64()) else { continue };
            let (p, capped) = match (at(false, *mbit), at(true, *mbit)) {
                (Some(p), _) => (Some(p), false),
                (None, c) => (c, c.is_some()),
            };
            let figure =
                format!("{} Mbit/s link{}", num(*mbit), if capped { " (capped gw1)" } else { "" });
            let ours = p.and_then(|p| ours(p, key));
            let why = match p {
                Some(p) if key == "avg_session_delay_s" => format!(
                    "a session's delay grows with its size: the seed's carried {} MB, ours {} kB",
                    num(SEED_SESSION as f64 / 1e6),
                    num(p.spec.size as f64 / 1e3)
                ),
                _ => why(key).to_string(),
            };
            out.push(Comparison::new(&chart, figure, unit, seed).ours(ours).why(why));
        }
    }
    Ok(out)
}
