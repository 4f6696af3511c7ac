//! One transfer: iperf3 and ping over a path, with the machine's and the nodes' CPU around it.

use super::args::BenchTunnelArgs;
use super::nodes::statuses;
use crate::bench_net::{Topo, machine_jiffies, mean_ms};
use serde::Serialize;
use serde_json::Value;
use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;

/// One path's figures.
#[derive(Debug, Clone, Serialize)]
pub struct PathResult {
    /// Receiver's throughput, Gbit/s.
    pub gbps: f64,
    /// Bytes the receiver got.
    pub bytes: u64,
    /// TCP retransmissions counted by the sender.
    pub retransmits: u64,
    /// Mean ping RTT, ms (before the transfer, idle path).
    pub rtt_ms: f64,
    /// Pings answered of those sent.
    pub pings_answered: usize,
    /// Busy fraction of the whole machine during the transfer (from /proc/stat).
    pub machine_busy: f64,
}

pub(super) fn measure(
    topo: &mut Topo,
    dst: Ipv4Addr,
    seconds: u32,
    congestion: &str,
    flows: (u32, Option<u16>, Option<f64>),
    stop: &AtomicBool,
    around: &mut dyn FnMut(bool),
) -> Result<PathResult, String> {
    let rtts = topo.ping(0, dst)?;
    if rtts.is_empty() {
        return Err(format!("no ping reply from {dst}"));
    }
    let (b0, t0) = machine_jiffies();
    around(true);
    let v = topo.iperf(&dst.to_string(), seconds, congestion, flows, stop)?;
    around(false);
    let (b1, t1) = machine_jiffies();
    let end = &v["end"];
    let recv = &end["sum_received"];
    Ok(PathResult {
        gbps: recv["bits_per_second"].as_f64().unwrap_or(0.0) / 1e9,
        bytes: recv["bytes"].as_u64().unwrap_or(0),
        retransmits: end["sum_sent"]["retransmits"].as_u64().unwrap_or(0),
        rtt_ms: mean_ms(&rtts),
        pings_answered: rtts.len(),
        machine_busy: (b1 - b0) as f64 / (t1 - t0).max(1) as f64,
    })
}

/// One tunnel transfer and what the nodes did during it.
pub(super) struct Tunnel {
    pub(super) path: PathResult,
    pub(super) cpu: [f64; 2],
    /// Each node's wake-ups during the transfer (`node::netns::wakeups`).
    pub(super) wakeups: [u64; 2],
    pub(super) threads: Vec<Vec<(String, f64)>>,
    /// Each node's status after the transfer.
    pub(super) status: [Value; 2],
}

/// One round: the plain transfer, then one tunnel transfer per carrier (in `carriers` order).
pub(super) struct Round {
    pub(super) plain: PathResult,
    pub(super) tunnels: Vec<Tunnel>,
}

/// One tunnel transfer through the running nodes `pids`, with their CPU time around it.
pub(super) fn measure_tunnel(
    topo: &mut Topo,
    args: &BenchTunnelArgs,
    congestion: &str,
    pids: [u32; 2],
    stop: &AtomicBool,
) -> Result<Tunnel, String> {
    let mut cpu0 = [0.0f64; 2];
    let mut cpu1 = [0.0f64; 2];
    let (mut wake0, mut wake1) = ([0u64; 2], [0u64; 2]);
    let mut th0: Vec<Vec<(u32, String, f64)>> = vec![Vec::new(), Vec::new()];
    let mut th1 = th0.clone();
    let path = measure(
        topo,
        Ipv4Addr::new(10, 99, 0, 2),
        args.seconds,
        congestion,
        (args.parallel, args.mss, args.bitrate),
        stop,
        &mut |b| {
            for (i, &pid) in pids.iter().enumerate() {
                let c = node::netns::cpu_seconds(pid).unwrap_or(f64::NAN);
                let t = node::netns::thread_cpu_seconds(pid).unwrap_or_default();
                let w = node::netns::wakeups(pid).unwrap_or(0);
                if b {
                    (cpu0[i], th0[i], wake0[i]) = (c, t, w);
                } else {
                    (cpu1[i], th1[i], wake1[i]) = (c, t, w);
                }
            }
        },
    )?;
    let threads = (0..2)
        .map(|i| {
            th1[i]
                .iter()
                .map(|(tid, name, s)| {
                    let before = th0[i].iter().find(|x| x.0 == *tid).map_or(0.0, |x| x.2);
                    (name.clone(), s - before)
                })
                .collect()
        })
        .collect();
    Ok(Tunnel {
        path,
        cpu: [cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]],
        wakeups: [wake1[0].saturating_sub(wake0[0]), wake1[1].saturating_sub(wake0[1])],
        threads,
        status: statuses(topo),
    })
}
