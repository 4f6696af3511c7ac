//! A CPU cap on one process: a cgroup of its own with a CFS bandwidth limit — cgroup v2
//! `cpu.max` where the cpu controller is on the unified hierarchy, else cgroup v1
//! `cpu.cfs_quota_us` / `cpu.cfs_period_us` (the same kernel mechanism under its v1 names).
//!
//! The period is 100 ms unless the caller picks another ([`CpuCap::apply_with_period`]; the
//! kernel takes 1 ms to 1 s): the kernel's smallest quota is 1 ms, so the smallest cap at 100 ms
//! is 1 % of a core. (A longer period would allow less, but the process then stalls for hundreds
//! of ms at a time and TCP's retransmission timers, not the CPU, set the throughput: tried, 0.26 %
//! at a 385 ms period carried 0.4 to 4 Mbit/s at random.) A shorter period spreads the same share
//! into shorter stalls, which suits bursts of a few ms (a HIP base exchange); the quota still runs
//! at full speed until it is spent, so work shorter than one quota is not slowed at all.

use crate::error::LabError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Which interface carries the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    V2,
    V1,
}

/// A process's cgroup with a CPU limit; dropping it moves anything left back and removes it.
#[derive(Debug)]
pub struct CpuCap {
    dir: PathBuf,
    parent: PathBuf,
    flavour: Flavour,
    pub quota_us: u64,
    pub period_us: u64,
}

static SEQ: AtomicU32 = AtomicU32::new(0);
const NAME_PREFIX: &str = "hlab-cap-";

fn write(path: &Path, text: &str) -> Result<(), LabError> {
    std::fs::write(path, text)
        .map_err(|e| LabError::io(format!("writing `{text}` to {}", path.display()), e))
}

/// (mount point, flavour) of a hierarchy that has the cpu controller.
fn cpu_hierarchy() -> Result<(PathBuf, Flavour), LabError> {
    let mounts = std::fs::read_to_string("/proc/mounts")
        .map_err(|e| LabError::io("reading /proc/mounts", e))?;
    let mut v1 = None;
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (Some(dir), Some(kind), Some(opts)) = (f.get(1), f.get(2), f.get(3)) else {
            continue;
        };
        if *kind == "cgroup2" {
            let ctl = std::fs::read_to_string(Path::new(dir).join("cgroup.controllers"))
                .unwrap_or_default();
            if ctl.split_whitespace().any(|c| c == "cpu") {
                return Ok((PathBuf::from(dir), Flavour::V2));
            }
        } else if *kind == "cgroup" && opts.split(',').any(|o| o == "cpu") && v1.is_none() {
            v1 = Some(PathBuf::from(dir));
        }
    }
    v1.map(|d| (d, Flavour::V1)).ok_or_else(|| LabError::InvalidOption {
        field: "cgroup cpu controller".into(),
        reason:
            "neither cgroup v2 with the cpu controller nor a cgroup v1 cpu hierarchy is mounted"
                .into(),
    })
}

/// The default period, µs.
pub const PERIOD_US: u64 = 100_000;
/// The kernel's smallest quota and period, and its largest period, µs.
pub const MIN_QUOTA_US: u64 = 1000;
pub const MIN_PERIOD_US: u64 = 1000;
pub const MAX_PERIOD_US: u64 = 1_000_000;
/// The smallest cap at the default period: the kernel's 1 ms quota per period.
pub const MIN_FRACTION: f64 = MIN_QUOTA_US as f64 / PERIOD_US as f64;

/// (quota, period) µs for `fraction` of one core at the default period (at least 1 %, at most
/// one core).
pub fn quota_period(fraction: f64) -> (u64, u64) {
    quota_at(fraction, PERIOD_US)
}

/// (quota, period) µs for `fraction` of one core at `period_us` (clamped to the kernel's 1 ms to
/// 1 s); the quota is at least the kernel's 1 ms, at most one period.
pub fn quota_at(fraction: f64, period_us: u64) -> (u64, u64) {
    let period = period_us.clamp(MIN_PERIOD_US, MAX_PERIOD_US);
    let quota = (fraction.clamp(0.0, 1.0) * period as f64).round() as u64;
    (quota.clamp(MIN_QUOTA_US, period), period)
}

/// The shortest period at which `fraction` of a core is a whole quota of at least 1 ms, µs.
pub fn shortest_period_us(fraction: f64) -> u64 {
    if fraction <= 0.0 {
        return MAX_PERIOD_US;
    }
    ((MIN_QUOTA_US as f64 / fraction).ceil() as u64).clamp(MIN_PERIOD_US, MAX_PERIOD_US)
}

/// The bandwidth counters of a cap's cgroup (`cpu.stat`): periods that had runnable tasks,
/// periods in which the quota ran out, and the time spent waiting for the next period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapStat {
    pub periods: u64,
    pub throttled: u64,
    pub throttled_us: u64,
}

impl CapStat {
    /// Parses `cpu.stat` (v2 `throttled_usec`, v1 `throttled_time` in ns).
    pub fn parse(text: &str) -> Option<CapStat> {
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        let throttled_us =
            field("throttled_usec").or_else(|| field("throttled_time").map(|ns| ns / 1000))?;
        Some(CapStat {
            periods: field("nr_periods")?,
            throttled: field("nr_throttled")?,
            throttled_us,
        })
    }

    /// The counters since `earlier`.
    pub fn since(&self, earlier: &CapStat) -> CapStat {
        CapStat {
            periods: self.periods.saturating_sub(earlier.periods),
            throttled: self.throttled.saturating_sub(earlier.throttled),
            throttled_us: self.throttled_us.saturating_sub(earlier.throttled_us),
        }
    }
}

impl CpuCap {
    /// Moves `pid` (all its threads) into a new cgroup limited to `fraction` of one core, at the
    /// default period.
    pub fn apply(pid: u32, fraction: f64) -> Result<CpuCap, LabError> {
        Self::apply_with_period(pid, fraction, PERIOD_US)
    }

    /// Moves `pid` (all its threads) into a new cgroup limited to `fraction` of one core, the
    /// quota granted every `period_us` (see [`quota_at`]).
    pub fn apply_with_period(pid: u32, fraction: f64, period_us: u64) -> Result<CpuCap, LabError> {
        let (root, flavour) = cpu_hierarchy()?;
        remove_stale(&root);
        let name =
            format!("{NAME_PREFIX}{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let dir = root.join(name);
        if flavour == Flavour::V2 {
            // The root must hand the cpu controller down (often already does).
            let _ = std::fs::write(root.join("cgroup.subtree_control"), "+cpu");
        }
        std::fs::create_dir(&dir)
            .map_err(|e| LabError::io(format!("creating cgroup {}", dir.display()), e))?;
        let (quota_us, period_us) = quota_at(fraction, period_us);
        let cap = CpuCap { dir, parent: root, flavour, quota_us, period_us };
        match flavour {
            Flavour::V2 => write(&cap.dir.join("cpu.max"), &format!("{quota_us} {period_us}"))?,
            Flavour::V1 => {
                write(&cap.dir.join("cpu.cfs_period_us"), &period_us.to_string())?;
                write(&cap.dir.join("cpu.cfs_quota_us"), &quota_us.to_string())?;
            }
        }
        write(&cap.dir.join("cgroup.procs"), &pid.to_string())?;
        Ok(cap)
    }

    /// The share of one core, %.
    pub fn pct(&self) -> f64 {
        100.0 * self.quota_us as f64 / self.period_us as f64
    }

    /// One line for the report.
    pub fn describe(&self) -> String {
        let how = match self.flavour {
            Flavour::V2 => format!("cgroup v2 cpu.max = \"{} {}\"", self.quota_us, self.period_us),
            Flavour::V1 => format!(
                "cgroup v1 cpu.cfs_quota_us = {} / cpu.cfs_period_us = {} (cpu.max's v1 form: the cpu controller is on v1 here)",
                self.quota_us, self.period_us
            ),
        };
        format!("{how}: {:.2} % of one core", self.pct())
    }

    /// Periods in which the cgroup was throttled so far.
    pub fn throttled_periods(&self) -> Option<u64> {
        self.stat().map(|s| s.throttled)
    }

    /// The cgroup's bandwidth counters so far.
    pub fn stat(&self) -> Option<CapStat> {
        CapStat::parse(&std::fs::read_to_string(self.dir.join("cpu.stat")).ok()?)
    }
}

impl Drop for CpuCap {
    fn drop(&mut self) {
        if std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        // Still populated (the process outlived the cap): hand its tasks back, then remove.
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for p in procs.split_whitespace() {
            let _ = std::fs::write(self.parent.join("cgroup.procs"), p);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Removes empty caps that an interrupted run left behind (their owner pid is gone).
fn remove_stale(root: &Path) {
    let Ok(d) = std::fs::read_dir(root) else { return };
    for e in d.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(NAME_PREFIX) else { continue };
        let owner = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if owner.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CapStat, quota_at, quota_period, shortest_period_us};

    #[test]
    fn quota_is_at_least_one_ms_per_100_ms() {
        assert_eq!(quota_period(0.5), (50_000, 100_000));
        assert_eq!(quota_period(0.0155), (1550, 100_000));
        assert_eq!(quota_period(0.004), (1000, 100_000));
        assert_eq!(quota_period(2.0), (100_000, 100_000));
    }

    #[test]
    fn periods_within_the_kernels_range() {
        assert_eq!(quota_at(0.1, 10_000), (1000, 10_000));
        assert_eq!(quota_at(0.05, 10_000), (1000, 10_000));
        assert_eq!(quota_at(0.5, 500), (1000, 1000));
        assert_eq!(quota_at(0.5, 5_000_000), (500_000, 1_000_000));
        assert_eq!(shortest_period_us(1.0 / 11.0), 11_000);
        assert_eq!(shortest_period_us(0.5), 2000);
        assert_eq!(shortest_period_us(0.0), 1_000_000);
    }

    #[test]
    fn cpu_stat_of_both_versions() {
        let v1 = "nr_periods 12\nnr_throttled 3\nthrottled_time 4500000\nnr_bursts 0\n";
        let v2 = "usage_usec 9\nnr_periods 12\nnr_throttled 3\nthrottled_usec 4500\n";
        let want = CapStat { periods: 12, throttled: 3, throttled_us: 4500 };
        assert_eq!(CapStat::parse(v1), Some(want));
        assert_eq!(CapStat::parse(v2), Some(want));
        assert_eq!(CapStat::parse("nr_periods 1\n"), None);
        let later = CapStat { periods: 20, throttled: 4, throttled_us: 5000 };
        assert_eq!(later.since(&want), CapStat { periods: 8, throttled: 1, throttled_us: 500 });
    }
}
