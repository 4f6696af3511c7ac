//! The inverse of sizing: how much of a workload's traffic a given number of cores carries
//! (`hipsec size --cores`). A share of one core works too, as a CPU cap gives one: the seeds'
//! crossover, where a gateway stops following its link and its CPU becomes the bound, is the
//! link rate at which this capacity is reached.

use crate::error::SizingError;
use crate::profile::Profile;
use crate::workload::Workload;
use serde::Serialize;

/// What `cores` carry of a workload's traffic.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Capacity {
    /// The cores (or share of one) given.
    pub cores: f64,
    /// Protected traffic each way, Gbit/s of inner packets, at which the workload's total
    /// reaches `cores`.
    pub gbps: f64,
    /// The same on the wire (inner packets plus the suite's and the carrier's overhead).
    pub wire_gbps: f64,
    /// At the high end of the answer's interval (the most CPU per packet): the least it may
    /// carry. None without an interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gbps_low: Option<f64>,
    /// At the low end: the most it may carry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gbps_high: Option<f64>,
}

/// The highest rate in Gbit/s with `total(rate) ≤ cores`, searched up to 10 Tbit/s; 0 when
/// the work that does not scale with traffic (rekeys, handshakes) already needs more.
fn solve(cores: f64, total: &dyn Fn(f64) -> Result<f64, SizingError>) -> Result<f64, SizingError> {
    if total(0.0)? > cores {
        return Ok(0.0);
    }
    let mut hi = 1e-3;
    while total(hi)? <= cores {
        hi *= 2.0;
        if hi > 1e4 {
            return Ok(hi);
        }
    }
    let mut lo = 0.0;
    // The cost per packet falls as the rate grows (part load), so the total can flatten, but
    // it does not fall: bisection finds where it crosses `cores`.
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if total(mid)? <= cores {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// What `cores` carry of `w`'s traffic on `p` (its `throughput_gbps` is what is searched).
pub fn capacity(p: &Profile, w: &Workload, cores: f64) -> Result<Capacity, SizingError> {
    if !(cores.is_finite() && cores > 0.0) {
        return Err(SizingError::field("--cores", format!("{cores} (a number of cores > 0)")));
    }
    let at = |gbps: f64| {
        let mut w = w.clone();
        w.throughput_gbps = gbps;
        crate::rounds::size_with_interval(p, &w)
    };
    let gbps = solve(cores, &|g| at(g).map(|a| a.total_cores))?;
    let interval = at(gbps)?.interval.is_some();
    let (gbps_low, gbps_high) = if interval {
        let end = |high: bool| {
            solve(cores, &|g| {
                at(g).map(|a| {
                    a.interval.as_ref().map_or(a.total_cores, |i| {
                        if high { i.total_cores_high } else { i.total_cores_low }
                    })
                })
            })
        };
        (Some(end(true)?), Some(end(false)?))
    } else {
        (None, None)
    };
    let overhead = p.suites.get(&w.suite).map_or(0.0, |s| s.overhead_bytes)
        + p.carriers.get(&w.carrier).map_or(0.0, |c| c.overhead_bytes);
    let mean = w.packets.mean();
    Ok(Capacity { cores, gbps, wire_gbps: gbps * (mean + overhead) / mean, gbps_low, gbps_high })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rounds::tests::base;

    /// The profile's one-way cost is 1150 ns per 1000-byte packet (`tests/model.rs`'s
    /// arithmetic: seal 600, TUN 200, UDP 300, filter 50): one core carries 1e9 / 1150 packets
    /// a second, 6.96 Gbit/s; a hundredth of a core a hundredth of that.
    #[test]
    fn a_core_and_a_share_of_one() {
        let p = base();
        let mut w = crate::examples::base("t");
        w.tunnels = 1;
        w.packets = crate::workload::PacketMix::Fixed(1000);
        w.suite = "aes128gcm".into();
        w.carrier = "udp".into();
        w.filter_rules = 0;
        let one = capacity(&p, &w, 1.0).unwrap_or_else(|e| panic!("{e}"));
        let want = 8000.0 / 1150.0;
        assert!((one.gbps - want).abs() < 1e-6, "{one:?} vs {want}");
        assert!((one.wire_gbps - want * 1050.0 / 1000.0).abs() < 1e-6, "{one:?}");
        assert_eq!((one.gbps_low, one.gbps_high), (None, None), "one round: no interval");
        let cap = capacity(&p, &w, 0.01).unwrap_or_else(|e| panic!("{e}"));
        assert!((cap.gbps - want / 100.0).abs() < 1e-8, "{cap:?}");
        // Handshakes that need more than the cores: nothing left for traffic.
        w.handshakes_per_s = 100.0; // × 500 µs = 0.05 cores
        assert_eq!(capacity(&p, &w, 0.01).map(|c| c.gbps).ok(), Some(0.0));
        assert!(capacity(&p, &w, 0.0).is_err());
    }
}
