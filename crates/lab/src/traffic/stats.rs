//! Summaries over repetitions: mean ± t·s/√n (Student's t, 95 %, two-sided) and order statistics.

use serde::{Deserialize, Serialize};

/// t(0.975, df) for df = 1..=30; beyond that the normal 1.96 is close enough.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

pub fn t975(df: usize) -> f64 {
    match df {
        0 => f64::NAN,
        1..=30 => T975[df - 1],
        _ => 1.96,
    }
}

/// Mean, spread and the 95 % confidence half-width of a set of repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub stddev: f64,
    /// Half-width of the 95 % interval (t·s/√n); 0 when n < 2 (no interval can be given).
    pub ci95: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(values: &[f64]) -> Option<Summary> {
        let n = values.len();
        if n == 0 || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let stddev = var.sqrt();
        let ci95 = if n > 1 { t975(n - 1) * stddev / (n as f64).sqrt() } else { 0.0 };
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median =
            if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
        Some(Summary { n, mean, median, stddev, ci95, min: sorted[0], max: sorted[n - 1] })
    }

    /// Confidence half-width as a percentage of the mean.
    pub fn ci95_pct(&self) -> f64 {
        if self.mean == 0.0 { 0.0 } else { 100.0 * self.ci95 / self.mean }
    }
}

/// The `q`-quantile (0..=1) of sorted data, nearest-rank.
pub fn quantile_sorted(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median of `v` (the mean of the two middle values for an even count); `None` if empty.
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some((v[(n - 1) / 2] + v[n / 2]) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_matches_hand_computation() {
        let s = Summary::of(&[10.0, 12.0, 14.0]).expect("summary");
        assert_eq!(s.mean, 12.0);
        assert_eq!(s.median, 12.0);
        assert!((s.stddev - 2.0).abs() < 1e-12);
        assert!((s.ci95 - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(Summary::of(&[5.0]).map(|s| s.ci95), Some(0.0));
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn quantiles_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile_sorted(&v, 0.5), 50);
        assert_eq!(quantile_sorted(&v, 0.99), 99);
        assert_eq!(quantile_sorted(&v, 1.0), 100);
        assert_eq!(quantile_sorted(&[], 0.5), 0);
    }
}
