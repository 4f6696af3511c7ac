//! `hipsec bench tunnel`: kernel TCP (iperf3) through a hipsec ESP tunnel between two network
//! namespaces, beside the same transfer over the plain veth in the same run (DESIGN rule 6):
//! throughput, ping RTT, CPU seconds of each hipsec node process and the service demand
//! (CPU µs per KB transferred, the netperf definition), as ratios tunnel/plain. The tunnel's
//! carrier is ESP in UDP (RFC 3948), raw ESP (IP protocol 50, RFC 4303), or both in one run
//! (`--transport`), the nodes restarted between the two.
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
    stop_child,
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
    /// Carrier of the tunnel's ESP: "udp" (ESP in UDP port 4500, RFC 3948; sent in UDP GSO
    /// runs, received with recvmmsg and UDP GRO), "raw" (ESP straight over IP protocol 50,
    /// RFC 4303, the carrier of the ipsec-netperf lab and of Mobile IPv6 bindings: recvmmsg and
    /// sendmmsg batches, but every packet is its own trip through the kernel's IP stack, as no
    /// GSO or GRO exists for ESP on raw sockets) or "both": each round measures plain, then the
    /// UDP and the raw tunnel (the nodes restart between them, the order alternating; about
    /// 110 s with the defaults), and the report adds raw/udp (JSON: {"udp": report, "raw":
    /// report, "raw_to_udp": ..}). Raw needs --queues 1: every raw socket gets every ESP packet.
    /// For the raw carrier before batching, run with HIPSEC_NODE_TUNING=no-mmsg (one system
    /// call per packet). Example: hipsec bench tunnel --transport both --rounds 5
    #[arg(long, value_enum, default_value = "udp")]
    pub transport: TransportArg,
    /// TCP maximum segment size of the transfers (iperf3 -M, 88..=1400): smaller packets at
    /// the same byte rate, so the per-packet costs weigh more. Default: the path's.
    #[arg(long, value_parser = clap::value_parser!(u16).range(88..=1400))]
    pub mss: Option<u16>,
    /// Give both nodes a `[filter]` of this many rules, none matching the tunnel's traffic
    /// (the filter-rules lab scenario's rule set). 0: no filter.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub filter_rules: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `--transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TransportArg {
    /// ESP in UDP (RFC 3948).
    Udp,
    /// ESP over IP protocol 50 (raw sockets).
    Raw,
    /// Both, in the same run.
    Both,
}

/// A carrier measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carrier {
    Udp,
    Raw,
}

impl Carrier {
    fn name(self) -> &'static str {
        match self {
            Carrier::Udp => "udp",
            Carrier::Raw => "raw",
        }
    }
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
    /// Parallel TCP streams.
    pub parallel: u32,
    /// TCP MSS asked of iperf3 (None: the path's).
    pub mss: Option<u16>,
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

/// What a run reports: one carrier's report, or both carriers'.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Output {
    /// `--transport udp` or `raw`.
    One(Box<Report>),
    /// `--transport both`.
    Both(Box<BothReport>),
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
    flows: (u32, Option<u16>),
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
struct Tunnel {
    path: PathResult,
    cpu: [f64; 2],
    threads: Vec<Vec<(String, f64)>>,
    /// Each node's status after the transfer.
    status: [Value; 2],
}

/// One round: the plain transfer, then one tunnel transfer per carrier (in `carriers` order).
struct Round {
    plain: PathResult,
    tunnels: Vec<Tunnel>,
}

/// Writes both nodes' configs for `carrier` and starts them; returns their pids.
fn start_nodes(
    topo: &mut Topo,
    args: &BenchTunnelArgs,
    carrier: Carrier,
) -> Result<[u32; 2], String> {
    let mut pids = [0u32; 2];
    for (side, pid) in pids.iter_mut().enumerate() {
        let path = topo.config(side, &args.suite, args.queues)?;
        let path = match carrier {
            Carrier::Udp => path,
            Carrier::Raw => {
                let udp = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let raw = raw_config(&udp)?;
                let p = topo.dir.join(format!("node{side}-raw.toml"));
                std::fs::write(&p, raw).map_err(|e| format!("{}: {e}", p.display()))?;
                p
            }
        };
        let path = if args.filter_rules > 0 { with_filter(topo, &path, args)? } else { path };
        *pid = topo.start_node(side, &path)?;
    }
    Ok(pids)
}

/// `config` with a `[filter]` of `--filter-rules` rules (the filter-rules lab scenario's: none
/// matches the tunnel's traffic, so every packet meets all of them and passes by default).
fn with_filter(
    topo: &Topo,
    config: &std::path::Path,
    args: &BenchTunnelArgs,
) -> Result<std::path::PathBuf, String> {
    let rules = topo.dir.join("rules.txt");
    if !rules.exists() {
        let text = lab::scenario::filter_rules::plan::rules_text(args.filter_rules as usize);
        std::fs::write(&rules, text).map_err(|e| format!("{}: {e}", rules.display()))?;
    }
    let mut t =
        std::fs::read_to_string(config).map_err(|e| format!("{}: {e}", config.display()))?;
    t += &format!("\n[filter]\nrules = \"{}\"\nengine = \"classifier\"\n", rules.display());
    let out = config.with_extension("filter.toml");
    std::fs::write(&out, t).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(out)
}

/// The raw-carrier config from the ESP-in-UDP one `Topo::config` writes: the same SAs and
/// policy, `[network] transport = "raw"` with the addresses alone (no port).
fn raw_config(udp: &str) -> Result<String, String> {
    let raw =
        udp.replacen("transport = \"udp\"", "transport = \"raw\"", 1).replace(":4500\"", "\"");
    if raw == udp || raw.contains(":4500") || !raw.contains("transport = \"raw\"") {
        return Err("bench tunnel: the node config has no [network] to make raw".into());
    }
    Ok(raw)
}

/// Stops the nodes `pids` (SIGTERM, as `Topo` does on drop).
fn stop_nodes(topo: &mut Topo, pids: [u32; 2]) {
    for pid in pids {
        if let Some(i) = topo.children.iter().position(|c| c.id() == pid) {
            let mut c = topo.children.remove(i);
            stop_child(&mut c);
        }
    }
}

/// Both nodes' status (the control socket's JSON; Null where it did not answer).
fn statuses(topo: &Topo) -> [Value; 2] {
    [0, 1].map(|i| {
        node::status(&topo.sock(i))
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or(Value::Null)
    })
}

/// One tunnel transfer through the running nodes `pids`, with their CPU time around it.
fn measure_tunnel(
    topo: &mut Topo,
    args: &BenchTunnelArgs,
    congestion: &str,
    pids: [u32; 2],
    stop: &AtomicBool,
) -> Result<Tunnel, String> {
    let mut cpu0 = [0.0f64; 2];
    let mut cpu1 = [0.0f64; 2];
    let mut th0: Vec<Vec<(u32, String, f64)>> = vec![Vec::new(), Vec::new()];
    let mut th1 = th0.clone();
    let path = measure(
        topo,
        Ipv4Addr::new(10, 99, 0, 2),
        args.seconds,
        congestion,
        (args.parallel, args.mss),
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
    Ok(Tunnel {
        path,
        cpu: [cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]],
        threads,
        status: statuses(topo),
    })
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
fn report(
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
        parallel: args.parallel,
        mss: args.mss,
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

/// Runs the benchmark and returns the report.
pub fn measure_all(args: &BenchTunnelArgs, stop: &Arc<AtomicBool>) -> Result<Output, String> {
    if !(1..=600).contains(&args.seconds) {
        return Err(format!("--seconds {}: must be in 1..=600", args.seconds));
    }
    let carriers = match args.transport {
        TransportArg::Udp => vec![Carrier::Udp],
        TransportArg::Raw => vec![Carrier::Raw],
        TransportArg::Both => vec![Carrier::Udp, Carrier::Raw],
    };
    if carriers.contains(&Carrier::Raw) && args.queues > 1 {
        return Err(format!(
            "--transport raw with --queues {}: the raw carrier has one lane (every raw socket \
             gets every ESP packet); use --queues 1 or --transport udp",
            args.queues
        ));
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
    let mut running = (carriers[0], start_nodes(&mut topo, args, carriers[0])?);
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
            (args.parallel, args.mss),
            stop,
            &mut |_| {},
        )?;
        // With two carriers every other round starts with the one already running: one
        // restart per round, and neither carrier always goes first.
        let mut order: Vec<usize> = (0..carriers.len()).collect();
        if order.first().map(|&k| carriers[k]) != Some(running.0) {
            order.reverse();
        }
        let mut tunnels: Vec<Option<Tunnel>> = carriers.iter().map(|_| None).collect();
        for k in order {
            let carrier = carriers[k];
            if running.0 != carrier {
                stop_nodes(&mut topo, running.1);
                running = (carrier, start_nodes(&mut topo, args, carrier)?);
            }
            eprintln!(
                "bench tunnel: round {round}/{}: hipsec tunnel ({}, {}), iperf3 {} s",
                args.rounds,
                args.suite,
                carrier.name(),
                args.seconds
            );
            tunnels[k] = Some(measure_tunnel(&mut topo, args, &congestion, running.1, stop)?);
        }
        let tunnels = tunnels.into_iter().flatten().collect();
        rounds.push(Round { plain, tunnels });
    }
    drop(topo);
    let mut reports =
        carriers.iter().enumerate().map(|(k, &c)| report(args, &congestion, load, &rounds, k, c));
    match (reports.next(), reports.next()) {
        (Some(udp), Some(raw)) => {
            let raw_to_udp_rounds =
                rounds.iter().map(|r| r.tunnels[1].path.gbps / r.tunnels[0].path.gbps).collect();
            Ok(Output::Both(Box::new(BothReport {
                transport: "both",
                raw_to_udp: raw.tunnel.gbps / udp.tunnel.gbps,
                raw_to_udp_rounds,
                udp,
                raw,
            })))
        }
        (Some(one), None) => Ok(Output::One(Box::new(one))),
        _ => Err("bench tunnel: no carrier measured".into()),
    }
}

/// Runs the benchmark and prints the table or JSON.
pub fn run(args: &BenchTunnelArgs) -> Result<(), String> {
    let Some(out) = measured(args.json, |stop| measure_all(args, stop))? else { return Ok(()) };
    let reports: Vec<&Report> = match &out {
        Output::One(r) => vec![r],
        Output::Both(b) => vec![&b.udp, &b.raw],
    };
    let r = reports[0];
    let over = match &out {
        Output::One(r) if r.transport == "raw" => "raw ESP (IP protocol 50)",
        Output::One(_) => "ESP in UDP",
        Output::Both(_) => "ESP in UDP and raw ESP (IP protocol 50)",
    };
    println!(
        "hipsec bench tunnel: {} over {over}, {} lane(s), iperf3 TCP ({}, {} stream(s)) {} s \
         each, {} round(s), {} CPUs, load average {:.2} at start",
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
    for r in &reports {
        // With two carriers, each one's ratio is to the plain transfer of its own median round.
        let label = if reports.len() > 1 {
            format!("plain, round {}", r.median_round + 1)
        } else {
            "plain veth".into()
        };
        println!(
            "{:<16} {:>8.2} {:>9.3} {:>8} {:>13} {:>10} {:>7.0}%",
            label,
            r.plain.gbps,
            r.plain.rtt_ms,
            r.plain.retransmits,
            "-",
            "-",
            r.plain.machine_busy * 100.0
        );
        println!(
            "{:<16} {:>8.2} {:>9.3} {:>8} {:>13} {:>10.2} {:>7.0}%",
            format!("hipsec {}", r.transport),
            r.tunnel.gbps,
            r.tunnel.rtt_ms,
            r.tunnel.retransmits,
            format!("{:.2}+{:.2}", r.nodes[0].cpu_s, r.nodes[1].cpu_s),
            r.service_demand_us_per_kb,
            r.tunnel.machine_busy * 100.0
        );
        println!(
            "{:<16} {:>8.3} {:>9.2}",
            format!("{}/plain", r.transport),
            r.throughput_ratio,
            r.rtt_ratio
        );
    }
    if let Output::Both(b) = &out {
        let per: Vec<String> = b.raw_to_udp_rounds.iter().map(|x| format!("{x:.3}")).collect();
        println!(
            "raw/udp          {:>8.3}   (medians; per round {})",
            b.raw_to_udp,
            per.join(", ")
        );
    }
    for r in &reports {
        if r.rounds.len() > 1 {
            println!(
                "rounds, {} (the one above is round {} of {}, the median tunnel throughput):",
                r.transport,
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
                "node {} ({}) threads (CPU s): {} (scheduling {})",
                n.side,
                r.transport,
                th.join(", "),
                n.scheduling.join(", ")
            );
            if n.drops.as_object().is_some_and(|m| !m.is_empty()) {
                println!("node {} ({}) drops: {}", n.side, r.transport, n.drops);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw config keeps everything but the carrier: addresses without the UDP port.
    #[test]
    fn raw_config_from_udp() {
        let udp = "[network]\ntransport = \"udp\"\nlocal = \"192.0.2.1:4500\"\n\
                   peer = \"192.0.2.2:4500\"\n\n[[sa]]\nsrc = \"192.0.2.1\"\n";
        let raw = raw_config(udp).unwrap_or_default();
        assert_eq!(
            raw,
            "[network]\ntransport = \"raw\"\nlocal = \"192.0.2.1\"\npeer = \"192.0.2.2\"\n\n\
             [[sa]]\nsrc = \"192.0.2.1\"\n"
        );
        assert!(raw_config("[interface]\n").is_err());
    }
}
