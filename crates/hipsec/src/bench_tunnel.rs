//! `hipsec bench tunnel`: kernel TCP (iperf3) through a hipsec ESP tunnel between two network
//! namespaces, beside the same transfer over the plain veth in the same run (DESIGN rule 6):
//! throughput, ping RTT, CPU seconds of each hipsec node process and the service demand
//! (CPU µs per KB transferred, the netperf definition), as ratios tunnel/plain.
//!
//! ```text
//!   ns hbench-PID-a                                   ns hbench-PID-b
//!   10.99.0.1/24 hbtun0 (TUN)                         hbtun0 (TUN) 10.99.0.2/24
//!        |  hipsec run -c a.toml                 hipsec run -c b.toml  |
//!   192.0.2.1/24 hb-a  ================ veth ================  hb-b 192.0.2.2/24
//!   iperf3 client ───── plain: to 192.0.2.2 / tunnel: to 10.99.0.2 ─────► iperf3 server
//! ```
//! Needs root, `ip` and iperf3. Everything it makes is removed on exit, on SIGINT/SIGTERM, and
//! (stale leftovers of a killed run) at the next start.

use crate::bench_net::{
    Topo, congestion_control, load_avg, machine_jiffies, mean_ms, measured, remove_stale, sa_keys,
};
use serde::Serialize;
use serde_json::Value;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Arguments of `hipsec bench tunnel`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchTunnelArgs {
    /// ESP suite: aes128gcm, aes256gcm, chacha20poly1305 or aes128cbc-sha256.
    #[arg(long, default_value = "aes128gcm")]
    pub suite: String,
    /// Seconds of iperf3 TCP per measurement (tunnel and plain each).
    #[arg(long, default_value_t = 10)]
    pub seconds: u32,
    /// TCP congestion control of both iperf3 transfers (iperf3 -C): "cubic" (the Linux
    /// default, CONFIG_DEFAULT_TCP_CONG), "bbr", "reno", ... or "system" for whatever
    /// net.ipv4.tcp_congestion_control says. Pinned by default so that runs on machines with
    /// different sysctls compare; the report names the one used.
    #[arg(long, default_value = "cubic")]
    pub congestion: String,
    /// Data-path lanes of each node (`[interface] queues`; one SA pair per lane): with more
    /// than one, use --parallel so that several flows can spread over the TUN queues.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub queues: u32,
    /// Rounds (each: plain, then tunnel); the table and the top-level JSON figures are the
    /// round with the median tunnel throughput, `rounds` lists them all.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub rounds: u32,
    /// Parallel TCP streams of each iperf3 transfer (iperf3 -P).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

const PREFIX: &str = "hbench-";

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

/// CPU of one node process during the tunnel transfer.
#[derive(Debug, Clone, Serialize)]
pub struct NodeCpu {
    /// "a" (iperf3 client side, encrypts the data) or "b" (server side, decrypts it).
    pub side: &'static str,
    /// utime + stime seconds during the transfer.
    pub cpu_s: f64,
    /// Per thread: name and seconds.
    pub threads: Vec<(String, f64)>,
    /// The node's own counters after the run (from its control socket).
    pub node_counters: Value,
    /// Its non-zero drop counters.
    pub drops: Value,
    /// Scheduling class of each data-path worker ("fifo" or "other", `[data-path]`).
    pub scheduling: Vec<String>,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Suite.
    pub suite: String,
    /// Carrier.
    pub transport: &'static str,
    /// TCP congestion control of the iperf3 transfers.
    pub congestion: String,
    /// Lanes of each node.
    pub queues: u32,
    /// Parallel TCP streams.
    pub parallel: u32,
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

fn measure(
    topo: &mut Topo,
    dst: Ipv4Addr,
    seconds: u32,
    congestion: &str,
    parallel: u32,
    stop: &AtomicBool,
    around: &mut dyn FnMut(bool),
) -> Result<PathResult, String> {
    let rtts = topo.ping(0, dst)?;
    if rtts.is_empty() {
        return Err(format!("no ping reply from {dst}"));
    }
    let (b0, t0) = machine_jiffies();
    around(true);
    let v = topo.iperf(&dst.to_string(), seconds, congestion, parallel, stop)?;
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

/// Runs the benchmark and returns the report.
pub fn measure_all(args: &BenchTunnelArgs, stop: &Arc<AtomicBool>) -> Result<Report, String> {
    if !(1..=600).contains(&args.seconds) {
        return Err(format!("--seconds {}: must be in 1..=600", args.seconds));
    }
    sa_keys(&args.suite, 0)?;
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if !root {
        return Err("needs root (network namespaces, TUN devices)".into());
    }
    if Command::new("iperf3").arg("--version").output().is_err() {
        return Err("iperf3 not found (apt-get install iperf3)".into());
    }
    let congestion = congestion_control(&args.congestion)?;
    let load = load_avg();
    remove_stale(PREFIX);
    eprintln!("bench tunnel: setting up namespaces (load average {load:.2})");
    let mut topo = Topo::new(PREFIX)?;
    let pids = [
        topo.start_node(0, &topo.config(0, &args.suite, args.queues)?)?,
        topo.start_node(1, &topo.config(1, &args.suite, args.queues)?)?,
    ];
    struct Round {
        plain: PathResult,
        tunnel: PathResult,
        cpu: [f64; 2],
        threads: Vec<Vec<(String, f64)>>,
    }
    let mut rounds: Vec<Round> = Vec::new();
    for round in 1..=args.rounds {
        eprintln!(
            "bench tunnel: round {round}/{}: plain veth, iperf3 {} s",
            args.rounds, args.seconds
        );
        let plain = measure(
            &mut topo,
            Ipv4Addr::new(192, 0, 2, 2),
            args.seconds,
            &congestion,
            args.parallel,
            stop,
            &mut |_| {},
        )?;
        eprintln!(
            "bench tunnel: round {round}/{}: hipsec tunnel ({}), iperf3 {} s",
            args.rounds, args.suite, args.seconds
        );
        let mut cpu0 = [0.0f64; 2];
        let mut cpu1 = [0.0f64; 2];
        let mut th0: Vec<Vec<(u32, String, f64)>> = vec![Vec::new(), Vec::new()];
        let mut th1 = th0.clone();
        let tunnel = measure(
            &mut topo,
            Ipv4Addr::new(10, 99, 0, 2),
            args.seconds,
            &congestion,
            args.parallel,
            stop,
            &mut |b| {
                for (i, &pid) in pids.iter().enumerate() {
                    let c = node::netns::cpu_seconds(pid).unwrap_or(f64::NAN);
                    let t = node::netns::thread_cpu_seconds(pid).unwrap_or_default();
                    if b {
                        (cpu0[i], th0[i]) = (c, t);
                    } else {
                        (cpu1[i], th1[i]) = (c, t);
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
        rounds.push(Round { plain, tunnel, cpu: [cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]], threads });
    }
    let demand = |r: &Round| {
        let kb = r.tunnel.bytes as f64 / 1024.0;
        if kb > 0.0 { (r.cpu[0] + r.cpu[1]) * 1e6 / kb } else { f64::NAN }
    };
    // The round with the median tunnel throughput (the lower middle one of an even count).
    let mut order: Vec<usize> = (0..rounds.len()).collect();
    order.sort_by(|&a, &b| rounds[a].tunnel.gbps.total_cmp(&rounds[b].tunnel.gbps));
    let median_round = order[(order.len() - 1) / 2];
    let summaries = rounds
        .iter()
        .map(|r| RoundSummary {
            plain_gbps: r.plain.gbps,
            tunnel_gbps: r.tunnel.gbps,
            throughput_ratio: r.tunnel.gbps / r.plain.gbps,
            service_demand_us_per_kb: demand(r),
        })
        .collect();
    let mut nodes = Vec::new();
    for (i, side) in ["a", "b"].into_iter().enumerate() {
        let st: Value = node::status(&topo.sock(i))
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or(Value::Null);
        let drops: serde_json::Map<String, Value> = st["drops"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(_, v)| v.as_u64() != Some(0))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        nodes.push(NodeCpu {
            side,
            cpu_s: rounds[median_round].cpu[i],
            threads: rounds[median_round].threads[i].clone(),
            node_counters: st["node"].clone(),
            drops: Value::Object(drops),
            scheduling: st["workers"]
                .as_array()
                .map(|ws| {
                    ws.iter().map(|w| w["scheduling"].as_str().unwrap_or("-").to_string()).collect()
                })
                .unwrap_or_default(),
        });
    }
    drop(topo);
    let m = rounds.swap_remove(median_round);
    let hipsec_cpu_s = m.cpu[0] + m.cpu[1];
    Ok(Report {
        suite: args.suite.clone(),
        transport: "udp",
        congestion,
        queues: args.queues,
        parallel: args.parallel,
        seconds: args.seconds,
        node_tuning: std::env::var("HIPSEC_NODE_TUNING").unwrap_or_default(),
        load_at_start: load,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        bench_pid: std::process::id(),
        service_demand_us_per_kb: demand(&m),
        throughput_ratio: m.tunnel.gbps / m.plain.gbps,
        rtt_ratio: m.tunnel.rtt_ms / m.plain.rtt_ms,
        plain: m.plain,
        tunnel: m.tunnel,
        nodes,
        hipsec_cpu_s,
        rounds: summaries,
        median_round,
    })
}

/// Runs the benchmark and prints the table or JSON.
pub fn run(args: &BenchTunnelArgs) -> Result<(), String> {
    let Some(r) = measured(args.json, |stop| measure_all(args, stop))? else { return Ok(()) };
    println!(
        "hipsec bench tunnel: {} over UDP, {} lane(s), iperf3 TCP ({}, {} stream(s)) {} s each, \
         {} round(s), {} CPUs, load average {:.2} at start",
        r.suite,
        r.queues,
        r.congestion,
        r.parallel,
        r.seconds,
        r.rounds.len(),
        r.cpus,
        r.load_at_start
    );
    println!(
        "{:<16} {:>8} {:>9} {:>8} {:>13} {:>10} {:>8}",
        "path", "Gbit/s", "RTT ms", "retrans", "hipsec CPU s", "µs/KB", "busy"
    );
    println!(
        "{:<16} {:>8.2} {:>9.3} {:>8} {:>13} {:>10} {:>7.0}%",
        "plain veth",
        r.plain.gbps,
        r.plain.rtt_ms,
        r.plain.retransmits,
        "-",
        "-",
        r.plain.machine_busy * 100.0
    );
    println!(
        "{:<16} {:>8.2} {:>9.3} {:>8} {:>13} {:>10.2} {:>7.0}%",
        "hipsec tunnel",
        r.tunnel.gbps,
        r.tunnel.rtt_ms,
        r.tunnel.retransmits,
        format!("{:.2}+{:.2}", r.nodes[0].cpu_s, r.nodes[1].cpu_s),
        r.service_demand_us_per_kb,
        r.tunnel.machine_busy * 100.0
    );
    println!("{:<16} {:>8.3} {:>9.2}", "tunnel/plain", r.throughput_ratio, r.rtt_ratio);
    if r.rounds.len() > 1 {
        println!(
            "rounds (the one above is round {} of {}, the median tunnel throughput):",
            r.median_round + 1,
            r.rounds.len()
        );
        for (i, x) in r.rounds.iter().enumerate() {
            println!(
                "  {}: tunnel {:.2} Gbit/s, plain {:.2} Gbit/s, ratio {:.3}, {:.2} µs/KB",
                i + 1,
                x.tunnel_gbps,
                x.plain_gbps,
                x.throughput_ratio,
                x.service_demand_us_per_kb
            );
        }
    }
    for n in &r.nodes {
        let th: Vec<String> = n.threads.iter().map(|(t, s)| format!("{t} {s:.2}")).collect();
        println!(
            "node {} threads (CPU s): {} (scheduling {})",
            n.side,
            th.join(", "),
            n.scheduling.join(", ")
        );
        if n.drops.as_object().is_some_and(|m| !m.is_empty()) {
            println!("node {} drops: {}", n.side, n.drops);
        }
    }
    Ok(())
}
