//! One series of base exchanges at a puzzle difficulty K: both veth ends captured for the whole
//! series; per run, both nodes started afresh (no association), the trigger ping train, both
//! nodes' status, both nodes stopped. The intervals come from the captures, run by run (each
//! run's window starts when its trigger starts); the node's own timers ride along as a
//! cross-check.

use super::capture::{Capture, Phases, phases};
use super::hosts::{HipHosts, ROLES};
use crate::cap::CapStat;
use crate::error::LabError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

/// The seed's puzzle difficulty (HIPL's default).
pub const SEED_K: u8 = 10;

/// The hosts' locators (topology `two_hosts`).
pub const INITIATOR: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
pub const RESPONDER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

/// The node's own timers (`hipsec status --json`), µs: the initiator's base exchange (I1 sent
/// to R2 processed), T2 and T4 (processing of R1 and of R2), the responder's T3 (I2) and T1
/// (its last I1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeTimes {
    pub base_exchange_us: Option<f64>,
    pub t1_us: Option<f64>,
    pub t2_us: Option<f64>,
    pub t3_us: Option<f64>,
    pub t4_us: Option<f64>,
}

/// One base exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BexRun {
    /// Both nodes said ESTABLISHED and a ping came back through ESP.
    pub established: bool,
    /// From the captures (None: a message was missing in the window).
    pub wire: Option<Phases>,
    pub node: NodeTimes,
    /// CPU the initiator's node ran from its start to the end of the trigger, µs.
    #[serde(default)]
    pub initiator_cpu_us: Option<f64>,
    /// What the initiator's CPU cap did over the same span (None: no cap).
    #[serde(default)]
    pub cap: Option<CapStat>,
}

/// A series at one K.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub k: u8,
    pub runs: Vec<BexRun>,
    /// Medians of each interval over the runs with a complete capture.
    pub median: Option<Phases>,
    pub node_median: NodeTimes,
    /// Smallest and largest T_be, µs.
    pub t_be_min_us: Option<f64>,
    pub t_be_max_us: Option<f64>,
}

impl Series {
    pub fn established(&self) -> usize {
        self.runs.iter().filter(|r| r.established).count()
    }

    pub fn complete(&self) -> Vec<Phases> {
        self.runs.iter().filter_map(|r| r.wire).collect()
    }
}

pub use crate::traffic::stats::median;

fn now_us() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1e6)
        .unwrap_or(0.0)
}

/// How long a trigger may wait at difficulty `k`: the initiator tries 2^K solutions on average.
pub fn trigger_limit(k: u8) -> Duration {
    Duration::from_secs(3 + (1u64 << k.min(40)) / 200_000)
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// The node timers from both statuses.
pub fn node_times(init: &Value, resp: &Value) -> NodeTimes {
    let a = &init["hip"]["associations"][0];
    let b = &resp["hip"]["associations"][0];
    NodeTimes {
        base_exchange_us: num(&a["base_exchange_us"]),
        t1_us: num(&resp["hip"]["counters"]["last_t1_us"]),
        t2_us: num(&a["t2_us"]),
        t3_us: num(&b["t3_us"]),
        t4_us: num(&a["t4_us"]),
    }
}

fn both_established(init: &Value, resp: &Value) -> bool {
    [init, resp].iter().all(|s| s["hip"]["associations"][0]["state"] == "ESTABLISHED")
}

/// Runs `runs` base exchanges at difficulty `k` (`tag` names the capture files). `keep_up`:
/// leave the last run's nodes up (for the RTT and throughput steps).
pub fn series(
    hosts: &mut HipHosts,
    k: u8,
    runs: usize,
    work: &Path,
    tag: &str,
    keep_up: bool,
) -> Result<Series, LabError> {
    let caps = [
        Capture::start(hosts.topo.ns(ROLES[0])?, "l0", &work.join(format!("{tag}k{k}-init.pcap")))?,
        Capture::start(hosts.topo.ns(ROLES[1])?, "l0", &work.join(format!("{tag}k{k}-resp.pcap")))?,
    ];
    let mut starts = Vec::new();
    let mut status = Vec::new();
    for run in 0..runs {
        hosts.start(k)?;
        let cpu0 = hosts.cpu_us(0);
        let cap0 = hosts.applied_cap().and_then(|c| c.stat());
        let t0 = now_us();
        let replied = hosts.trigger(trigger_limit(k))?;
        // The last ESP departure is within a ping interval of the reply; let it reach the files.
        std::thread::sleep(Duration::from_millis(20));
        let cpu = hosts.cpu_us(0).zip(cpu0).map(|(b, a)| b - a);
        let cap = hosts.applied_cap().and_then(|c| c.stat()).zip(cap0).map(|(b, a)| b.since(&a));
        let (a, b) = (hosts.status(0)?, hosts.status(1)?);
        hosts.check()?;
        starts.push(t0);
        status.push((replied && both_established(&a, &b), node_times(&a, &b), cpu, cap));
        if !(keep_up && run + 1 == runs) {
            hosts.stop();
        }
    }
    let [ci, cr] = caps;
    let (init, resp) = (ci.stop()?, cr.stop()?);
    let mut out = Vec::new();
    for (i, (established, node, initiator_cpu_us, cap)) in status.into_iter().enumerate() {
        let to = starts.get(i + 1).copied().unwrap_or(f64::INFINITY);
        let wire = phases(&init, &resp, INITIATOR, RESPONDER, starts[i], to);
        out.push(BexRun { established, wire, node, initiator_cpu_us, cap });
    }
    Ok(summarise(k, out))
}

/// Medians of a series.
pub fn summarise(k: u8, runs: Vec<BexRun>) -> Series {
    let wire: Vec<Phases> = runs.iter().filter_map(|r| r.wire).collect();
    let m = |f: fn(&Phases) -> f64| median(&wire.iter().map(f).collect::<Vec<_>>());
    let median_ph = m(|p| p.t_be_us).map(|t_be_us| Phases {
        t1_us: m(|p| p.t1_us).unwrap_or(0.0),
        t2_us: m(|p| p.t2_us).unwrap_or(0.0),
        t3_us: m(|p| p.t3_us).unwrap_or(0.0),
        t4_us: m(|p| p.t4_us).unwrap_or(0.0),
        t_be_us,
    });
    let n = |f: fn(&NodeTimes) -> Option<f64>| {
        median(&runs.iter().filter_map(|r| f(&r.node)).collect::<Vec<_>>())
    };
    let node_median = NodeTimes {
        base_exchange_us: n(|t| t.base_exchange_us),
        t1_us: n(|t| t.t1_us),
        t2_us: n(|t| t.t2_us),
        t3_us: n(|t| t.t3_us),
        t4_us: n(|t| t.t4_us),
    };
    let t_be: Vec<f64> = wire.iter().map(|p| p.t_be_us).collect();
    Series {
        k,
        median: median_ph,
        node_median,
        t_be_min_us: t_be.iter().copied().reduce(f64::min),
        t_be_max_us: t_be.iter().copied().reduce(f64::max),
        runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_per_interval_and_node_timers() {
        let run = |t: f64| BexRun {
            established: true,
            wire: Some(Phases { t1_us: t, t2_us: 2.0 * t, t3_us: t, t4_us: t, t_be_us: 6.0 * t }),
            node: NodeTimes { t2_us: Some(t), ..NodeTimes::default() },
            initiator_cpu_us: None,
            cap: None,
        };
        let s = summarise(
            10,
            vec![
                run(1.0),
                run(3.0),
                run(2.0),
                BexRun {
                    established: false,
                    wire: None,
                    node: NodeTimes::default(),
                    initiator_cpu_us: None,
                    cap: None,
                },
            ],
        );
        assert_eq!(s.median.map(|p| (p.t2_us, p.t_be_us)), Some((4.0, 12.0)));
        assert_eq!(s.node_median.t2_us, Some(2.0));
        assert_eq!((s.t_be_min_us, s.t_be_max_us), (Some(6.0), Some(18.0)));
        assert_eq!(s.established(), 3);
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert!(trigger_limit(20) > trigger_limit(10));
    }
}
