//! CPU accounting: per-process utime+stime from /proc/PID/stat, machine-wide busy/system/softirq
//! time from /proc/stat, and netperf's service demand (CPU µs per KB transferred, KB = 1024 B).

use crate::error::LabError;
use serde::{Deserialize, Serialize};

/// /proc reports times in USER_HZ, which Linux fixes at 100 on every mainstream architecture.
pub const USER_HZ: u64 = 100;
const US_PER_TICK: u64 = 1_000_000 / USER_HZ;

/// CPU time consumed so far by one process (all its threads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcCpu {
    pub utime_us: u64,
    pub stime_us: u64,
    /// CPU of its children that have been waited for (cutime + cstime).
    #[serde(default)]
    pub children_us: u64,
}

impl ProcCpu {
    /// Reads `/proc/PID/stat`.
    pub fn read(pid: u32) -> Result<Self, LabError> {
        Self::read_path(&format!("/proc/{pid}/stat"))
    }

    /// Reads `/proc/self/stat`.
    pub fn read_self() -> Result<Self, LabError> {
        Self::read_path("/proc/self/stat")
    }

    fn read_path(path: &str) -> Result<Self, LabError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LabError::io(format!("reading {path}"), e))?;
        Self::parse(&text).ok_or_else(|| LabError::parse(path, "utime/stime fields missing"))
    }

    /// Parses a stat line; fields after the `)` closing comm start at field 3 (state), so
    /// utime (field 14) and stime (field 15) are the 12th and 13th of them.
    pub fn parse(stat: &str) -> Option<Self> {
        let after = &stat[stat.rfind(')')? + 1..];
        let mut f = after.split_whitespace().skip(11);
        let utime: u64 = f.next()?.parse().ok()?;
        let stime: u64 = f.next()?.parse().ok()?;
        let children: u64 = f.take(2).filter_map(|x| x.parse::<u64>().ok()).sum();
        Some(ProcCpu {
            utime_us: utime * US_PER_TICK,
            stime_us: stime * US_PER_TICK,
            children_us: children * US_PER_TICK,
        })
    }

    pub fn total_us(&self) -> u64 {
        self.utime_us + self.stime_us
    }

    /// CPU µs between `earlier` and `self`.
    pub fn since(&self, earlier: &ProcCpu) -> u64 {
        self.total_us().saturating_sub(earlier.total_us())
    }
}

/// Machine-wide CPU counters (the `cpu` line of /proc/stat), in µs summed over all CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemCpu {
    pub user_us: u64,
    pub system_us: u64,
    pub irq_us: u64,
    pub softirq_us: u64,
    pub idle_us: u64,
    pub total_us: u64,
    pub ncpu: u32,
    /// Time the hypervisor ran something else on the vCPUs (part of `total_us`).
    #[serde(default)]
    pub steal_us: u64,
}

impl SystemCpu {
    pub fn read() -> Result<Self, LabError> {
        let text = std::fs::read_to_string("/proc/stat")
            .map_err(|e| LabError::io("reading /proc/stat", e))?;
        Self::parse(&text).ok_or_else(|| LabError::parse("/proc/stat", "no well-formed `cpu` line"))
    }

    /// Parses /proc/stat: `cpu user nice system idle iowait irq softirq steal ...` plus `cpuN` lines.
    pub fn parse(text: &str) -> Option<Self> {
        let line = text.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> =
            line.split_whitespace().skip(1).map(|x| x.parse().ok()).collect::<Option<_>>()?;
        if v.len() < 7 {
            return None;
        }
        let steal = v.get(7).copied().unwrap_or(0);
        // guest time is already included in user; do not count it twice.
        let total: u64 = v[..7].iter().sum::<u64>() + steal;
        let ncpu = text
            .lines()
            .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .count() as u32;
        Some(SystemCpu {
            user_us: (v[0] + v[1]) * US_PER_TICK,
            system_us: v[2] * US_PER_TICK,
            idle_us: (v[3] + v[4]) * US_PER_TICK,
            irq_us: v[5] * US_PER_TICK,
            softirq_us: v[6] * US_PER_TICK,
            total_us: total * US_PER_TICK,
            ncpu,
            steal_us: steal * US_PER_TICK,
        })
    }

    /// The interval from `earlier` to `self`.
    pub fn since(&self, earlier: &SystemCpu) -> SystemCpuDelta {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        SystemCpuDelta {
            user_us: d(self.user_us, earlier.user_us),
            system_us: d(self.system_us, earlier.system_us),
            irq_us: d(self.irq_us, earlier.irq_us),
            softirq_us: d(self.softirq_us, earlier.softirq_us),
            idle_us: d(self.idle_us, earlier.idle_us),
            total_us: d(self.total_us, earlier.total_us),
            ncpu: self.ncpu,
            steal_us: d(self.steal_us, earlier.steal_us),
        }
    }
}

/// Machine-wide CPU time spent during an interval, µs summed over all CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemCpuDelta {
    pub user_us: u64,
    pub system_us: u64,
    pub irq_us: u64,
    pub softirq_us: u64,
    pub idle_us: u64,
    pub total_us: u64,
    pub ncpu: u32,
    #[serde(default)]
    pub steal_us: u64,
}

impl SystemCpuDelta {
    /// Non-idle time.
    pub fn busy_us(&self) -> u64 {
        self.total_us.saturating_sub(self.idle_us)
    }

    /// Whole-machine utilisation in percent (100 % = every CPU busy).
    pub fn utilisation_pct(&self) -> f64 {
        if self.total_us == 0 { 0.0 } else { 100.0 * self.busy_us() as f64 / self.total_us as f64 }
    }
}

/// netperf's service demand: CPU µs per KB (1024 B) transferred. None when nothing moved.
pub fn service_demand_us_per_kb(cpu_us: u64, bytes: u64) -> Option<f64> {
    (bytes > 0).then(|| cpu_us as f64 / (bytes as f64 / 1024.0))
}

/// Service demand for request/response tests: CPU µs per transaction.
pub fn service_demand_us_per_tran(cpu_us: u64, transactions: u64) -> Option<f64> {
    (transactions > 0).then(|| cpu_us as f64 / transactions as f64)
}

/// Utilisation of one process over `elapsed_us`, in percent of one CPU.
pub fn proc_utilisation_pct(cpu_us: u64, elapsed_us: u64) -> f64 {
    if elapsed_us == 0 { 0.0 } else { 100.0 * cpu_us as f64 / elapsed_us as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_pid_stat_with_spaces_in_comm() {
        let line = "1234 (a b) c) S 1 2 3 4 5 6 7 8 9 10 250 30 0 0 20 0 1 0 100 0 0";
        let p = ProcCpu::parse(line).expect("parse");
        assert_eq!(p.utime_us, 250 * 10_000);
        assert_eq!(p.stime_us, 30 * 10_000);
    }

    #[test]
    fn parses_proc_stat_and_computes_utilisation() {
        let a = "cpu  100 0 50 800 0 0 50 0 0 0\ncpu0 50 0 25 400 0 0 25 0 0 0\ncpu1 50 0 25 400 0 0 25 0 0 0\n";
        let b = "cpu  200 0 100 900 0 0 100 0 0 0\ncpu0 1 0 0 0 0 0 0 0 0 0\ncpu1 1 0 0 0 0 0 0 0 0 0\n";
        let (a, b) = (SystemCpu::parse(a).expect("a"), SystemCpu::parse(b).expect("b"));
        let d = b.since(&a);
        assert_eq!(d.ncpu, 2);
        assert_eq!(d.softirq_us, 50 * 10_000);
        assert!((d.utilisation_pct() - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(service_demand_us_per_kb(1000, 1024 * 1000), Some(1.0));
        assert_eq!(service_demand_us_per_kb(1000, 0), None);
    }

    #[test]
    fn reads_own_process() {
        let p = ProcCpu::read_self().expect("self");
        let q = ProcCpu::read(std::process::id()).expect("by pid");
        assert!(q.total_us() >= p.total_us());
    }
}
