//! The seed's device pairs on its Wi-Fi (Tables 4-7's A2/A3, B2/B3 and wireless columns): the
//! veth shaped like the seed's Wi-Fi ([`WIFI`], `tc netem` on both ends), then per pair a series
//! of base exchanges at K = 10, ping round trips and TCP/UDP throughput with and without HIP.
//! A2 is the laptop → PC pair (no cap: both of our hosts run at the machine's speed); A3 holds
//! the initiator's node to the tablet's share of a core ([`TABLET_SHARE`], a CFS quota in the
//! shortest period that allows it), the cap made anew for every node started. Their tables are
//! in [`super::device_table`].

use super::bex::{self, SEED_K, Series};
use super::hosts::HipHosts;
use super::transfer::{self, Rtt, Throughput};
use crate::cap::{CapStat, quota_at, shortest_period_us};
use crate::error::LabError;
use crate::topology::{Netem, Shaped};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The seed's Wi-Fi, from its figures (it names neither the standard nor the cards): UDP carried
/// 5.295 Mbit/s of payload, so the rate is what carries that in our 1200 B datagrams (1262 B on
/// the veth: 5.295 × 1262 / 1200 ≈ 5.6 Mbit/s; 802.11b's 11 Mbit/s gives about that); its
/// plain IPv6 round trip was 1.242 ms, so each way waits 0.45 ms plus the ping's ≈ 0.17 ms at
/// that rate (2 × 0.62 ≈ 1.24 ms); the jitter (0.15 ms, normal) is our choice, the seed gives
/// means only; a queue of 100 packets (≈ 0.2 s at the rate) like an access point's.
pub const WIFI: Netem = Netem { rate_bps: 5_600_000, delay_us: 450, jitter_us: 150, limit: 100 };

/// The tablet's share of one core: the seed's initiator step T2 (puzzle, Diffie-Hellman, I2) on
/// the laptop (A1, 98.849 ms) over the same step on the tablet (A3, 1073.322 ms), ≈ 1/10.9.
pub const TABLET_SHARE: f64 = 98.849 / 1073.322;

/// One device pair of the seed.
#[derive(Debug, Clone, Copy)]
pub struct Device {
    /// The seed's sub-scenario (Tables 4/5) and RTT column (Table 6).
    pub name: &'static str,
    pub rtt_key: &'static str,
    pub what: &'static str,
    /// The initiator's share of a core (None: no cap).
    pub cap: Option<f64>,
}

pub const DEVICES: [Device; 2] = [
    Device { name: "A2", rtt_key: "B2_wifi", what: "laptop → PC, Wi-Fi", cap: None },
    Device {
        name: "A3",
        rtt_key: "B3_tablet",
        what: "tablet-speed initiator, Wi-Fi",
        cap: Some(TABLET_SHARE),
    },
];

/// One device pair's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceSeries {
    pub name: String,
    pub what: String,
    pub link: Netem,
    /// What the kernel could put on the veth.
    pub shaped: Shaped,
    /// The initiator's cap: share of a core, quota and period µs.
    pub cap_fraction: Option<f64>,
    pub cap_quota_us: Option<u64>,
    pub cap_period_us: Option<u64>,
    pub bex: Series,
    pub rtt: Option<Rtt>,
    pub throughput: Vec<Throughput>,
    /// What the cap did over the RTT and throughput tests.
    pub transfer_cap: Option<CapStat>,
    /// Seconds per throughput test (None: not measured).
    pub throughput_s: Option<u64>,
}

impl DeviceSeries {
    /// The cap's counters summed over the base exchanges.
    pub fn bex_cap(&self) -> Option<CapStat> {
        self.bex.runs.iter().filter_map(|r| r.cap).reduce(|a, b| CapStat {
            periods: a.periods + b.periods,
            throttled: a.throttled + b.throttled,
            throttled_us: a.throttled_us + b.throttled_us,
        })
    }

    /// Runs whose cap ran out at least once.
    pub fn throttled_runs(&self) -> usize {
        self.bex.runs.iter().filter(|r| r.cap.is_some_and(|c| c.throttled > 0)).count()
    }
}

/// The Wi-Fi-like link on, then every device pair: `runs` base exchanges, `pings` each way and
/// (with `throughput_s`) TCP/UDP tests of that many seconds; then the link off. The nodes are
/// stopped before and after.
pub fn run(
    hosts: &mut HipHosts,
    runs: usize,
    pings: u32,
    throughput_s: Option<u64>,
    work: &Path,
) -> Result<Vec<DeviceSeries>, LabError> {
    hosts.stop();
    let shaped = hosts.topo.set_netem(Some(&WIFI))?.unwrap_or(Shaped::RateOnly);
    let mut out = Vec::new();
    for d in DEVICES {
        let cap = d.cap.map(|f| (f, shortest_period_us(f)));
        hosts.cap = cap;
        let s = bex::series(hosts, SEED_K, runs, work, d.name, true)?;
        let (mut rtt, mut throughput, mut transfer_cap) = (None, Vec::new(), None);
        if s.runs.last().is_some_and(|r| r.established) {
            let c0 = hosts.applied_cap().and_then(|c| c.stat());
            rtt = Some(transfer::rtt(hosts, pings)?);
            if let Some(secs) = throughput_s {
                throughput = transfer::tests(hosts, "wifi", Some(WIFI.rate_bps), secs)?;
            }
            let c1 = hosts.applied_cap().and_then(|c| c.stat());
            transfer_cap = c1.zip(c0).map(|(b, a)| b.since(&a));
        }
        hosts.stop();
        hosts.cap = None;
        let (quota, period) = cap.map(|(f, p)| quota_at(f, p)).unzip();
        out.push(DeviceSeries {
            name: d.name.into(),
            what: d.what.into(),
            link: WIFI,
            shaped,
            cap_fraction: d.cap,
            cap_quota_us: quota,
            cap_period_us: period,
            bex: s,
            rtt,
            throughput,
            transfer_cap,
            throughput_s,
        });
    }
    hosts.topo.set_netem(None)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tablet_share_and_its_period() {
        assert!((TABLET_SHARE - 1.0 / 10.858).abs() < 1e-3, "{TABLET_SHARE}");
        let p = shortest_period_us(TABLET_SHARE);
        assert_eq!(quota_at(TABLET_SHARE, p), (1000, 10_859));
        assert_eq!(WIFI.args()[..3].join(" "), "netem rate 5600000bit");
    }
}
