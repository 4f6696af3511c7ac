//! Rounds that alternate between a reference and the setup measured, and their medians.

use std::time::{Duration, Instant};

/// A setup measured a round at a time: two figures per round (seal and open ns per packet;
/// the raw AEAD gives its one figure twice).
pub(super) trait Rounds {
    fn round(&mut self) -> Result<(f64, f64), String>;
}

/// Medians over rounds that alternate between `base` and `other`: each one's two figures, and
/// the medians of each pair of rounds' ratios (other / base), in that order. Alternating
/// round by round means both meet the same moments of a shared machine (a neighbour's burst
/// on the memory bus, a frequency change), which separate runs of a second each did not: on
/// the 2-vCPU VM, the 10,000-SA figure of one binary ranged over 1.6× from run to run.
pub(super) fn interleaved<R: Rounds>(
    base: &mut R,
    other: &mut R,
    seconds: f64,
) -> Result<[f64; 6], String> {
    let mut v: [Vec<f64>; 6] = Default::default();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < deadline || v[0].len() < 3 {
        let (bs, bo) = base.round()?;
        let (s, o) = other.round()?;
        for (k, x) in [bs, bo, s, o, s / bs, o / bo].into_iter().enumerate() {
            v[k].push(x);
        }
    }
    Ok(v.map(|mut x| median(&mut x)))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get((v.len().max(1) - 1) / 2).copied().unwrap_or(f64::NAN)
}
