//! What `hipsec bench tunnel` reports: each carrier's figures beside the plain path's, per
//! round and for the median round.

use super::args::{BenchTunnelArgs, Carrier};
use super::transfer::{PathResult, Round, Tunnel};
use serde::Serialize;
use serde_json::Value;

/// CPU of one node process during the tunnel transfer.
#[derive(Debug, Clone, Serialize)]
pub struct NodeCpu {
    /// "a" (iperf3 client side, encrypts the data) or "b" (server side, decrypts it).
    pub side: &'static str,
    /// utime + stime seconds during the transfer.
    pub cpu_s: f64,
    /// Per thread: name and seconds.
    pub threads: Vec<(String, f64)>,
    /// Times its threads blocked and were woken during the transfer (voluntary context
    /// switches): fewer packets per wake-up at part load.
    pub wakeups: u64,
    /// The node's own counters after the run (from its control socket).
    pub node_counters: Value,
    /// Its non-zero drop counters.
    pub drops: Value,
    /// Its `[filter]` status (rules, passed, blocked), when it ran one (`--filter-rules`).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub filter: Value,
    /// Scheduling class of each data-path worker ("fifo" or "other", `[data-path]`).
    pub scheduling: Vec<String>,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Suite.
    pub suite: String,
    /// Carrier: "udp" (ESP in UDP) or "raw" (ESP over IP protocol 50).
    pub transport: &'static str,
    /// TCP congestion control of the iperf3 transfers.
    pub congestion: String,
    /// Lanes of each node.
    pub queues: u32,
    /// "manual" (SAs from the config) or "ike" (a CHILD SA made by IKEv2).
    pub keying: &'static str,
    /// Parallel TCP streams.
    pub parallel: u32,
    /// TCP MSS asked of iperf3 (None: the path's).
    pub mss: Option<u16>,
    /// The pace of the transfers, Gbit/s (`--bitrate`; none: unpaced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bitrate_gbps: Option<f64>,
    /// Filter rules each node checked (0: no filter).
    pub filter_rules: u32,
    /// Seconds of each transfer.
    pub seconds: u32,
    /// The nodes' `HIPSEC_NODE_TUNING` (empty: every speed-up on).
    pub node_tuning: String,
    /// 1-minute load average at start (other work on the machine skews the figures).
    pub load_at_start: f64,
    /// Online CPUs.
    pub cpus: usize,
    /// This process (its namespaces were named `hbench-PID-a/b`).
    pub bench_pid: u32,
    /// Over the plain veth.
    pub plain: PathResult,
    /// Through the hipsec tunnel.
    pub tunnel: PathResult,
    /// Both node processes.
    pub nodes: Vec<NodeCpu>,
    /// Sum of the nodes' CPU seconds.
    pub hipsec_cpu_s: f64,
    /// hipsec CPU µs per KB (1024 bytes) received through the tunnel.
    pub service_demand_us_per_kb: f64,
    /// tunnel / plain throughput.
    pub throughput_ratio: f64,
    /// tunnel / plain mean RTT.
    pub rtt_ratio: f64,
    /// Every round, in order; the figures above are those of the median one (`median_round`).
    pub rounds: Vec<RoundSummary>,
    /// Index in `rounds` of the round reported above.
    pub median_round: usize,
}

/// `--transport both`: a report for each carrier (the same plain transfers in both) and the
/// ratio between them.
#[derive(Debug, Clone, Serialize)]
pub struct BothReport {
    /// "both".
    pub transport: &'static str,
    /// ESP in UDP.
    pub udp: Report,
    /// ESP over IP protocol 50.
    pub raw: Report,
    /// Median raw tunnel throughput / median UDP tunnel throughput.
    pub raw_to_udp: f64,
    /// Per round, raw / UDP throughput.
    pub raw_to_udp_rounds: Vec<f64>,
}

/// `--vs-queues`: a report for each lane count (the same plain transfers in both) and the ratios
/// between them.
#[derive(Debug, Clone, Serialize)]
pub struct LanesReport {
    /// With `--queues` lanes.
    pub first: Report,
    /// With `--vs-queues` lanes.
    pub second: Report,
    /// Median tunnel throughput of the second over the first's.
    pub throughput_ratio: f64,
    /// Service demand (CPU µs per KB) of the second over the first's.
    pub service_demand_ratio: f64,
    /// Per round, second / first throughput.
    pub throughput_ratio_rounds: Vec<f64>,
}

/// What a run reports: one carrier's report, both carriers', or two lane counts'.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Output {
    /// `--transport udp` or `raw`.
    One(Box<Report>),
    /// `--transport both`.
    Both(Box<BothReport>),
    /// `--vs-queues`.
    Lanes(Box<LanesReport>),
}

/// One round's headline figures.
#[derive(Debug, Clone, Serialize)]
pub struct RoundSummary {
    /// Plain veth, Gbit/s.
    pub plain_gbps: f64,
    /// Tunnel, Gbit/s.
    pub tunnel_gbps: f64,
    /// tunnel / plain.
    pub throughput_ratio: f64,
    /// Both nodes' CPU µs per KB through the tunnel.
    pub service_demand_us_per_kb: f64,
}

/// Both nodes' CPU µs per KB through the tunnel.
fn demand(t: &Tunnel) -> f64 {
    let kb = t.path.bytes as f64 / 1024.0;
    if kb > 0.0 { (t.cpu[0] + t.cpu[1]) * 1e6 / kb } else { f64::NAN }
}

/// Index of the round with the median tunnel throughput of carrier `k` (the lower middle one of
/// an even count).
fn median_round(rounds: &[Round], k: usize) -> usize {
    let mut order: Vec<usize> = (0..rounds.len()).collect();
    order.sort_by(|&a, &b| {
        rounds[a].tunnels[k].path.gbps.total_cmp(&rounds[b].tunnels[k].path.gbps)
    });
    order[(order.len() - 1) / 2]
}

/// The report of carrier `k` (`carrier`) over all rounds.
pub(super) fn report(
    args: &BenchTunnelArgs,
    congestion: &str,
    load: f64,
    rounds: &[Round],
    k: usize,
    carrier: Carrier,
) -> Report {
    let median_round = median_round(rounds, k);
    let summaries = rounds
        .iter()
        .map(|r| RoundSummary {
            plain_gbps: r.plain.gbps,
            tunnel_gbps: r.tunnels[k].path.gbps,
            throughput_ratio: r.tunnels[k].path.gbps / r.plain.gbps,
            service_demand_us_per_kb: demand(&r.tunnels[k]),
        })
        .collect();
    let m = &rounds[median_round];
    let t = &m.tunnels[k];
    // The nodes' counters as the last transfer through this carrier left them.
    let last = rounds.last().map_or(t, |r| &r.tunnels[k]);
    let nodes = ["a", "b"]
        .into_iter()
        .enumerate()
        .map(|(i, side)| {
            let st = &last.status[i];
            let drops: serde_json::Map<String, Value> = st["drops"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter(|(_, v)| v.as_u64() != Some(0))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            NodeCpu {
                side,
                cpu_s: t.cpu[i],
                wakeups: t.wakeups[i],
                threads: t.threads[i].clone(),
                node_counters: st["node"].clone(),
                drops: Value::Object(drops),
                // Per-rule hits left out: thousands of zeros.
                filter: match &st["filter"] {
                    Value::Null => Value::Null,
                    f => serde_json::json!({
                        "engine": f["engine"], "rules": f["rules"],
                        "passed": f["passed"], "blocked": f["blocked"],
                    }),
                },
                scheduling: st["workers"]
                    .as_array()
                    .map(|ws| {
                        ws.iter()
                            .map(|w| w["scheduling"].as_str().unwrap_or("-").to_string())
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect();
    Report {
        suite: args.suite.clone(),
        transport: carrier.name(),
        congestion: congestion.to_string(),
        queues: args.queues,
        keying: args.keying.name(),
        parallel: args.parallel,
        mss: args.mss,
        bitrate_gbps: args.bitrate,
        filter_rules: args.filter_rules,
        seconds: args.seconds,
        node_tuning: std::env::var("HIPSEC_NODE_TUNING").unwrap_or_default(),
        load_at_start: load,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        bench_pid: std::process::id(),
        service_demand_us_per_kb: demand(t),
        throughput_ratio: t.path.gbps / m.plain.gbps,
        rtt_ratio: t.path.rtt_ms / m.plain.rtt_ms,
        plain: m.plain.clone(),
        tunnel: t.path.clone(),
        nodes,
        hipsec_cpu_s: t.cpu[0] + t.cpu[1],
        rounds: summaries,
        median_round,
    }
}
