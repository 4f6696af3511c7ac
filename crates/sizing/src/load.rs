//! Costs that depend on load: a node that is not saturated pays more per packet and per
//! handshake than a saturated one. The profile keeps what calibration measured at several
//! offered rates — the CPU a packet costs beyond the saturated fit at each packet rate of a
//! tunnel, and the responder's CPU per handshake at each handshake rate — and the model reads
//! them at the workload's rate.
//!
//! Between two measured rates a figure is interpolated linearly in the logarithm of the rate
//! (calibration's rates span 1 to 100 % of saturation, and what part load adds grows roughly
//! as the rate falls by factors, not by steps); below the lowest and above the highest it is
//! the nearest measured one (a node does not cost less than it did saturated, and a rate
//! below calibration's lowest is predicted at that rate's cost, which under-predicts it).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One tunnel at one rate: what a calibration run at that rate measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BatchPoint {
    /// Its rate as a share of the saturated run's (1 for that run).
    pub share: f64,
    /// Data packets per second the tunnel carried (one direction).
    pub packets_per_s: f64,
    /// CPU per packet handled beyond what the saturated fit (fixed + per byte) gives at this
    /// packet size, ns (0 for the saturated run).
    pub extra_ns: f64,
    /// Wake-ups of both nodes' threads (voluntary context switches) per packet handled: what
    /// the node did, for the reader (the model does not use it: they grow too little with
    /// load to explain `extra_ns`, see docs/sizing.md).
    #[serde(default)]
    pub wakeups_per_packet: f64,
    /// The tunnel's rate of inner data, Gbit/s.
    #[serde(default)]
    pub gbps: f64,
}

/// The responder's cost per IKE_SA setup at one rate of setups.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatePoint {
    /// Setups completed per second.
    pub setups_per_s: f64,
    /// The responder's CPU per setup, µs.
    pub us: f64,
}

/// The logarithm interpolation runs in; a rate of 0 is the lowest there is.
fn log(x: f64) -> f64 {
    x.max(1e-9).ln()
}

/// `y` at `x` over the points `(x, y)`: linear between neighbours, the nearest point's `y`
/// outside them; none without points.
pub fn interpolate(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let mut v: Vec<(f64, f64)> =
        points.iter().copied().filter(|(a, b)| a.is_finite() && b.is_finite()).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (first, last) = (*v.first()?, *v.last()?);
    if x <= first.0 {
        return Some(first.1);
    }
    if x >= last.0 {
        return Some(last.1);
    }
    for w in v.windows(2) {
        let [(x0, y0), (x1, y1)] = [w[0], w[1]];
        if x <= x1 {
            let f = if x1 > x0 { (x - x0) / (x1 - x0) } else { 0.0 };
            return Some(y0 + f * (y1 - y0));
        }
    }
    Some(last.1)
}

/// The ns a packet costs beyond the saturated fit when one tunnel runs at `share` of what it
/// carries saturated (0 without a table).
pub fn extra_ns(table: &BTreeMap<String, BatchPoint>, share: f64) -> f64 {
    let points: Vec<(f64, f64)> = table.values().map(|b| (log(b.share), b.extra_ns)).collect();
    interpolate(&points, log(share)).unwrap_or(0.0)
}

/// µs per setup at `setups_per_s` from the table, or `saturated` without one.
pub fn setup_us(table: &BTreeMap<String, RatePoint>, setups_per_s: f64, saturated: f64) -> f64 {
    let points: Vec<(f64, f64)> = table.values().map(|r| (log(r.setups_per_s), r.us)).collect();
    interpolate(&points, log(setups_per_s)).unwrap_or(saturated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_between_points_and_flat_outside() {
        let p = [(1000.0, 300.0), (4000.0, 240.0), (2000.0, 280.0)];
        assert_eq!(interpolate(&p, 1500.0), Some(290.0));
        assert_eq!(interpolate(&p, 3000.0), Some(260.0));
        assert_eq!(interpolate(&p, 100.0), Some(300.0), "below the lowest: the lowest's");
        assert_eq!(interpolate(&p, 9000.0), Some(240.0), "above the highest: saturated");
        assert_eq!(interpolate(&[], 1.0), None);
        assert_eq!(interpolate(&[(5.0, 7.0), (f64::NAN, 1.0)], 1.0), Some(7.0));
    }

    #[test]
    fn tables_fall_back_when_empty() {
        assert_eq!(extra_ns(&BTreeMap::new(), 1e5), 0.0);
        assert_eq!(setup_us(&BTreeMap::new(), 1e3, 245.0), 245.0);
        let t: BTreeMap<String, RatePoint> = [
            ("saturated".to_string(), RatePoint { setups_per_s: 4000.0, us: 245.0 }),
            ("paced25".to_string(), RatePoint { setups_per_s: 1000.0, us: 320.0 }),
        ]
        .into();
        // 2,000/s is halfway from 1,000 to 4,000 in the logarithm of the rate.
        assert!((setup_us(&t, 2000.0, 0.0) - 282.5).abs() < 1e-9);
    }
}
