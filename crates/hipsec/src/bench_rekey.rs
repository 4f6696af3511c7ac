//! `hipsec bench rekey`: make-before-break rekeying under load (new inbound SA first, then
//! outbound, then the old one retired). Two nodes in namespaces (`bench_net`), kernel TCP (iperf3)
//! through the tunnel with the SA pair replaced every `--interval-ms` through the control socket,
//! beside the same transfer without rekeys in the same run; then a fixed-rate UDP stream whose
//! sequence numbers show whether anything was lost, with and without rekeys. Reported: rekeys done
//! and their latency, drops for lack of an SA or policy, replay and unknown-SPI drops (each node's
//! counters over each phase), TCP retransmissions, the throughput ratio rekey / no rekey, and for
//! each UDP phase where its lost datagrams were lost (`bench_rekey_loss`). The verdict speaks of
//! the rekeying phases only, and of what the nodes lost in them: a loss in the kernels or at the
//! receiving socket is reported beside the phase without rekeys, not charged to the rekeys.

use crate::bench_net::{TUN, Topo, congestion_control, load_avg, remove_stale, sa_keys, sh};
use crate::bench_rekey_loss::{self as loss, NodeCounts, Snapshot, UdpAccount};
use crate::bench_rekey_udp::udp_stream;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const PREFIX: &str = "hrekey-";

/// Arguments of `hipsec bench rekey`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchRekeyArgs {
    /// ESP suite of the SAs (and of every SA that replaces them).
    #[arg(long, default_value = "aes128gcm")]
    pub suite: String,
    /// Seconds of each TCP transfer (with and without rekeys).
    #[arg(long, default_value_t = 30)]
    pub seconds: u32,
    /// TCP rounds; each has a transfer with and one without rekeys, their order alternating
    /// from round to round (a second transfer in a row measured ~7% slower whether or not it
    /// rekeyed, so one order alone would charge the rekeys for it).
    #[arg(long, default_value_t = 2)]
    pub rounds: u32,
    /// Seconds of each UDP stream (with and without rekeys).
    #[arg(long, default_value_t = 10)]
    pub udp_seconds: u32,
    /// Datagrams per second of the UDP stream.
    #[arg(long, default_value_t = 5000)]
    pub udp_rate: u32,
    /// Milliseconds between two rekeys (from the start of one to the start of the next).
    #[arg(long, default_value_t = 100)]
    pub interval_ms: u64,
    /// How long an old inbound SA keeps receiving after the switch.
    #[arg(long, default_value_t = 500)]
    pub grace_ms: u64,
    /// TCP congestion control for iperf3 ("system": the kernel's default).
    #[arg(long, default_value = "cubic")]
    pub congestion: String,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Drop counters that must stay at zero while rekeying (summed over both nodes).
const WATCHED: &[&str] =
    &["no_sa", "no_policy", "replayed", "too_old", "integrity_failed", "inbound_policy_mismatch"];

/// One phase: a transfer with or without rekeys.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// "tcp" or "udp".
    pub traffic: &'static str,
    /// Rekeys done during it.
    pub rekeys: u64,
    /// Median and largest time one pair rekey took (both nodes, six requests), ms.
    pub rekey_ms_median: f64,
    /// Largest.
    pub rekey_ms_max: f64,
    /// TCP: Gbit/s received; UDP: datagrams received / sent.
    pub gbps: f64,
    /// TCP retransmissions (iperf3's count).
    pub retransmits: u64,
    /// Whether the pair was rekeyed during it (the rekeying phase; else the reference).
    pub rekeying: bool,
    /// UDP: datagrams sent.
    pub sent: u64,
    /// UDP: datagrams that never arrived.
    pub lost: u64,
    /// UDP: where the lost datagrams were lost (sender, sending kernel, node, receiving
    /// kernel, receiver socket, unexplained) and the stream at each hop.
    pub udp: Option<UdpAccount>,
    /// Watched drop counters over the phase, both nodes summed (all should be zero).
    pub drops: BTreeMap<String, u64>,
    /// The kernel's drops over the phase in both namespaces (UDP InErrors, RcvbufErrors and
    /// SndbufErrors; rx/tx_dropped of every device): losses outside hipsec's counters.
    pub kernel_drops: BTreeMap<String, u64>,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Suite.
    pub suite: String,
    /// Congestion control.
    pub congestion: String,
    /// Interval between rekeys, ms.
    pub interval_ms: u64,
    /// Grace period, ms.
    pub grace_ms: u64,
    /// Load average when it started.
    pub load_at_start: f64,
    /// Phases in the order run.
    pub phases: Vec<Phase>,
    /// TCP throughput with rekeys / without (medians over the rounds).
    pub tcp_throughput_ratio: f64,
    /// The verdict, of the rekeying phases only: no drop counter of either node moved and
    /// the nodes lost no UDP datagram. Loss outside the nodes does not count against it.
    pub zero_loss: bool,
    /// Rekeying phases: drop counter increments of the nodes plus UDP datagrams lost in the
    /// nodes by hop counts (a datagram can be in both; zero means none of either).
    pub rekeying_node_losses: u64,
    /// UDP datagrams lost outside the nodes, rekeying phase (kernels, sockets, unexplained).
    pub rekeying_outside_node: u64,
    /// The reference phases without rekeys: what the nodes dropped or lost (reported only).
    pub reference_node_losses: u64,
    /// The reference phase: UDP datagrams lost outside the nodes.
    pub reference_outside_node: u64,
}

/// The node's own counters of packets it did not pass on (besides the engine's drops).
const NODE_LOSSES: &[&str] = &[
    "unsendable",
    "send_errors",
    "tun_write_errors",
    "tun_read_errors",
    "runts",
    "filter_blocked",
    "bypass_unforwarded",
    "icmp_too_big",
];

/// Every drop counter of a node: the engine's by reason, and the node's losses.
fn watched(st: &Value) -> BTreeMap<String, u64> {
    let mut m: BTreeMap<String, u64> = st["drops"]
        .as_object()
        .map(|o| o.iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0))).collect())
        .unwrap_or_default();
    for k in NODE_LOSSES {
        m.insert(format!("node_{k}"), st["node"][k].as_u64().unwrap_or(0));
    }
    m
}

/// The kernel's drop counters in namespace `ns` (read from a thread inside it).
fn kernel_drops(ns: &str) -> Result<BTreeMap<String, u64>, String> {
    let ns = ns.to_string();
    std::thread::spawn(move || -> Result<BTreeMap<String, u64>, String> {
        node::netns::enter(&ns).map_err(|e| e.to_string())?;
        let mut out = BTreeMap::new();
        let snmp = std::fs::read_to_string("/proc/net/snmp").map_err(|e| e.to_string())?;
        let udp: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Udp:")).collect();
        if let [names, values] = udp.as_slice() {
            for (n, v) in names.split_whitespace().zip(values.split_whitespace()).skip(1) {
                if matches!(n, "InErrors" | "RcvbufErrors" | "SndbufErrors") {
                    out.insert(format!("udp_{n}"), v.parse().unwrap_or(0));
                }
            }
        }
        for dev in std::fs::read_dir("/sys/class/net").map_err(|e| e.to_string())?.flatten() {
            let name = dev.file_name().to_string_lossy().into_owned();
            for c in ["rx_dropped", "tx_dropped"] {
                let v = std::fs::read_to_string(dev.path().join("statistics").join(c))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .unwrap_or(0);
                out.insert(format!("{name}_{c}"), v);
            }
        }
        Ok(out)
    })
    .join()
    .map_err(|_| "netns reader panicked".to_string())?
}

fn kernel_all(topo: &Topo) -> Result<BTreeMap<String, u64>, String> {
    let mut sum = BTreeMap::new();
    for ns in &topo.ns {
        for (k, v) in kernel_drops(ns)? {
            *sum.entry(k).or_insert(0) += v;
        }
    }
    Ok(sum)
}

/// Both nodes' drop counters summed, and each node's path counters.
fn counters(topo: &Topo) -> Result<(BTreeMap<String, u64>, [NodeCounts; 2]), String> {
    let mut sum = BTreeMap::new();
    let mut nodes = [NodeCounts::default(); 2];
    for (side, n) in nodes.iter_mut().enumerate() {
        let st: Value =
            serde_json::from_str(&node::status(&topo.sock(side)).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        for (k, v) in watched(&st) {
            *sum.entry(k).or_insert(0) += v;
        }
        *n = NodeCounts::from_status(&st);
    }
    Ok((sum, nodes))
}

/// Every counter the UDP accounting reads; also the drop counters summed.
fn snapshot(topo: &Topo) -> Result<(BTreeMap<String, u64>, Snapshot), String> {
    let (drops, [node_a, node_b]) = counters(topo)?;
    let s = Snapshot {
        node_a,
        node_b,
        kernel_a: kernel_drops(&topo.ns[0])?,
        kernel_b: kernel_drops(&topo.ns[1])?,
    };
    Ok((drops, s))
}

/// Rekeys the pair every `interval` until `done`; returns each rekey's duration.
fn rekeyer(
    a: &Path,
    b: &Path,
    interval: Duration,
    grace_ms: u64,
    done: &AtomicBool,
) -> Result<Vec<f64>, String> {
    let mut took = Vec::new();
    let t0 = Instant::now();
    let mut k = 0u32;
    while !done.load(Ordering::Relaxed) {
        let start = Instant::now();
        crate::ctl::rekey_pair(a, b, None, grace_ms)?;
        took.push(start.elapsed().as_secs_f64() * 1e3);
        k += 1;
        let next = t0 + interval * k;
        while Instant::now() < next && !done.load(Ordering::Relaxed) {
            std::thread::sleep(
                Duration::from_millis(2).min(next.saturating_duration_since(Instant::now())),
            );
        }
    }
    Ok(took)
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (v[(n - 1) / 2] + v[n / 2]) / 2.0
}

/// Runs one phase; rekeys meanwhile if `rekey`.
fn phase(
    topo: &mut Topo,
    args: &BenchRekeyArgs,
    tcp: bool,
    rekey: bool,
    cc: &str,
    stop: &AtomicBool,
) -> Result<Phase, String> {
    let (before, snap_before) = snapshot(topo)?;
    let kernel_before = kernel_all(topo)?;
    let done = Arc::new(AtomicBool::new(false));
    let (a, b) = (topo.sock(0), topo.sock(1));
    let (interval, grace) = (Duration::from_millis(args.interval_ms), args.grace_ms);
    let d2 = Arc::clone(&done);
    let keyer = rekey.then(|| std::thread::spawn(move || rekeyer(&a, &b, interval, grace, &d2)));
    let result = if tcp {
        topo.iperf("10.99.0.2", args.seconds, cc, (1, None, None), stop).map(|v| (Some(v), None))
    } else {
        udp_stream(topo, args.udp_seconds, args.udp_rate).map(|x| (None, Some(x)))
    };
    done.store(true, Ordering::Relaxed);
    let mut took = match keyer {
        Some(h) => h.join().map_err(|_| "rekey thread panicked")??,
        None => Vec::new(),
    };
    let (iperf, stream) = result?;
    // Old inbound SAs retire after the grace period: let the last ones go before counting.
    std::thread::sleep(Duration::from_millis(args.grace_ms + 100));
    let (after, snap_after) = snapshot(topo)?;
    let udp = stream.map(|st| loss::account(&st, &snap_before, &snap_after, TUN));
    let drops = after
        .iter()
        .map(|(k, v)| (k.clone(), v.saturating_sub(before.get(k).copied().unwrap_or(0))))
        .filter(|(k, d)| *d > 0 || WATCHED.contains(&k.as_str()))
        .collect();
    let kernel_drops = kernel_all(topo)?
        .into_iter()
        .map(|(k, v)| {
            let d = v.saturating_sub(kernel_before.get(&k).copied().unwrap_or(0));
            (k, d)
        })
        .filter(|(_, d)| *d > 0)
        .collect();
    let (gbps, retransmits) = match &iperf {
        Some(v) => (
            v["end"]["sum_received"]["bits_per_second"].as_f64().unwrap_or(0.0) / 1e9,
            v["end"]["sum_sent"]["retransmits"].as_u64().unwrap_or(0),
        ),
        None => (0.0, 0),
    };
    let max = took.iter().copied().fold(f64::NAN, f64::max);
    Ok(Phase {
        traffic: if tcp { "tcp" } else { "udp" },
        rekeys: took.len() as u64,
        rekey_ms_median: median(&mut took),
        rekey_ms_max: max,
        gbps,
        retransmits,
        rekeying: rekey,
        sent: udp.map_or(0, |u| u.sent),
        lost: udp.map_or(0, |u| u.lost),
        udp,
        drops,
        kernel_drops,
    })
}

/// Runs the benchmark and returns the report.
pub fn measure_all(args: &BenchRekeyArgs, stop: &AtomicBool) -> Result<Report, String> {
    sa_keys(&args.suite, 0)?;
    if !(1..=600).contains(&args.seconds) || !(1..=600).contains(&args.udp_seconds) {
        return Err("--seconds and --udp-seconds: 1..=600".into());
    }
    if !(10..=10_000).contains(&args.interval_ms) {
        return Err(format!("--interval-ms {}: 10..=10000", args.interval_ms));
    }
    if !(1..=200_000).contains(&args.udp_rate) {
        return Err(format!("--udp-rate {}: 1..=200000", args.udp_rate));
    }
    let cc = congestion_control(&args.congestion)?;
    let load = load_avg();
    remove_stale(PREFIX);
    let mut topo = Topo::new(PREFIX)?;
    // No IPv6 in the namespaces: the kernel's router solicitations would count as no_policy.
    for ns in topo.ns.clone() {
        for k in ["all", "default"] {
            sh(&[
                "ip",
                "netns",
                "exec",
                &ns,
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{k}.disable_ipv6=1"),
            ])?;
        }
    }
    for side in 0..2 {
        let c = topo.config(side, &args.suite, 1)?;
        topo.start_node(side, &c)?;
    }
    let mut phases = Vec::new();
    let mut order = Vec::new();
    for r in 0..args.rounds.max(1) {
        let pair =
            if r % 2 == 0 { [(true, false), (true, true)] } else { [(true, true), (true, false)] };
        order.extend(pair);
    }
    order.extend([(false, false), (false, true)]);
    for (tcp, rekey) in order {
        let what = match (tcp, rekey) {
            (true, r) => {
                format!("TCP (iperf3) {} s{}", args.seconds, if r { ", rekeying" } else { "" })
            }
            (false, r) => format!(
                "UDP {} datagrams/s for {} s{}",
                args.udp_rate,
                args.udp_seconds,
                if r { ", rekeying" } else { "" }
            ),
        };
        eprintln!("bench rekey: {what}");
        phases.push(phase(&mut topo, args, tcp, rekey, &cc, stop)?);
        if stop.load(Ordering::Relaxed) {
            return Err("interrupted; cleaned up".into());
        }
    }
    let v = loss::verdict(phases.iter().map(|p| loss::PhaseLoss {
        rekeying: p.rekeying,
        node_drops: p.drops.values().sum(),
        udp: p.udp.as_ref(),
    }));
    let gbps = |rekey: bool| {
        let mut v: Vec<f64> = phases
            .iter()
            .filter(|p| p.traffic == "tcp" && (p.rekeys > 0) == rekey)
            .map(|p| p.gbps)
            .collect();
        median(&mut v)
    };
    let tcp_throughput_ratio = gbps(true) / gbps(false);
    Ok(Report {
        suite: args.suite.clone(),
        congestion: cc,
        interval_ms: args.interval_ms,
        grace_ms: args.grace_ms,
        load_at_start: load,
        tcp_throughput_ratio,
        zero_loss: v.zero_loss,
        rekeying_node_losses: v.rekeying_node_losses,
        rekeying_outside_node: v.rekeying_outside_node,
        reference_node_losses: v.reference_node_losses,
        reference_outside_node: v.reference_outside_node,
        phases,
    })
}

/// Runs the benchmark and prints a table or JSON; fails when the nodes lost packets while
/// rekeying.
pub fn run(args: &BenchRekeyArgs) -> Result<(), String> {
    let stop = node::netns::stop_flag().map_err(|e| format!("signal handler: {e}"))?;
    let r = measure_all(args, &stop)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
    } else {
        print!("{}", render(&r));
    }
    if !r.zero_loss {
        return Err(format!(
            "the nodes lost or dropped {} packets while rekeying (see the drops and the UDP \
             breakdown's node part)",
            r.rekeying_node_losses
        ));
    }
    Ok(())
}

/// The text report.
pub fn render(r: &Report) -> String {
    let mut o = format!(
        "bench rekey: {} (congestion {}), a rekey every {} ms, grace {} ms\n",
        r.suite, r.congestion, r.interval_ms, r.grace_ms
    );
    o += &format!(
        "{:<5} {:>7} {:>10} {:>9} {:>9} {:>8} {:>9} {:>6}  drops (no_sa no_policy replayed too_old integrity inbound_policy)\n",
        "phase", "rekeys", "rekey ms", "max ms", "Gbit/s", "retrans", "sent", "lost"
    );
    for p in &r.phases {
        let d: Vec<String> =
            WATCHED.iter().map(|k| p.drops.get(*k).copied().unwrap_or(0).to_string()).collect();
        o += &format!(
            "{:<5} {:>7} {:>10.2} {:>9.2} {:>9.3} {:>8} {:>9} {:>6}  {}\n",
            p.traffic,
            p.rekeys,
            p.rekey_ms_median,
            p.rekey_ms_max,
            p.gbps,
            p.retransmits,
            p.sent,
            p.lost,
            d.join(" ")
        );
    }
    for p in &r.phases {
        let Some(u) = &p.udp else { continue };
        let b = &u.breakdown;
        o += &format!(
            "UDP {}: sent {}, received {}, lost {}: sender {}, sending kernel {}, node {}, \
             receiving kernel {}, receiver socket {}, unexplained {}{}\n",
            if p.rekeying { "with rekeys" } else { "without rekeys (reference)" },
            u.sent,
            u.received,
            u.lost,
            b.sender,
            b.sending_kernel,
            b.node,
            b.receiving_kernel,
            b.receiver_socket,
            b.unexplained,
            if u.counters_add_up { "" } else { " (the hop counters do not add up)" }
        );
    }
    o +=
        &format!("TCP throughput with rekeys / without (medians): {:.3}\n", r.tcp_throughput_ratio);
    if r.rekeying_outside_node + r.reference_outside_node > 0 {
        o += &format!(
            "lost outside the nodes: {} while rekeying, {} without rekeys; not charged to the \
             rekeys\n",
            r.rekeying_outside_node, r.reference_outside_node
        );
    }
    o += &format!(
        "{}\n",
        json!({"zero_loss": r.zero_loss, "rekeying_node_losses": r.rekeying_node_losses})
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_rekey_loss::LossBreakdown;

    fn udp_phase(rekeying: bool, breakdown: LossBreakdown) -> Phase {
        let lost = breakdown.total();
        let udp = UdpAccount {
            sent: 50_000,
            received: 50_000 - lost,
            lost,
            breakdown,
            counters_add_up: true,
            ..Default::default()
        };
        Phase {
            traffic: "udp",
            rekeys: if rekeying { 100 } else { 0 },
            rekey_ms_median: 1.0,
            rekey_ms_max: 2.0,
            gbps: 0.0,
            retransmits: 0,
            rekeying,
            sent: udp.sent,
            lost,
            udp: Some(udp),
            drops: BTreeMap::new(),
            kernel_drops: BTreeMap::new(),
        }
    }

    /// The reported run: the loss of the reference phase is shown where it happened and not
    /// blamed on the rekeys, in the text and in the JSON.
    #[test]
    fn the_report_says_where_and_whose() {
        let phases = vec![
            udp_phase(false, LossBreakdown { receiver_socket: 496, ..Default::default() }),
            udp_phase(true, LossBreakdown::default()),
        ];
        let v = loss::verdict(phases.iter().map(|p| loss::PhaseLoss {
            rekeying: p.rekeying,
            node_drops: 0,
            udp: p.udp.as_ref(),
        }));
        let r = Report {
            suite: "aes128gcm".into(),
            congestion: "cubic".into(),
            interval_ms: 100,
            grace_ms: 500,
            load_at_start: 0.0,
            phases,
            tcp_throughput_ratio: 1.0,
            zero_loss: v.zero_loss,
            rekeying_node_losses: v.rekeying_node_losses,
            rekeying_outside_node: v.rekeying_outside_node,
            reference_node_losses: v.reference_node_losses,
            reference_outside_node: v.reference_outside_node,
        };
        let text = render(&r);
        assert!(
            text.contains("UDP without rekeys (reference): sent 50000, received 49504, lost 496")
        );
        assert!(text.contains("receiver socket 496"), "{text}");
        assert!(text.contains("0 while rekeying, 496 without rekeys; not charged"), "{text}");
        assert!(text.contains("\"zero_loss\":true"), "{text}");
        let j = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(j["zero_loss"], true);
        assert_eq!(j["reference_outside_node"], 496);
        assert_eq!(j["phases"][0]["udp"]["breakdown"]["receiver_socket"], 496);
        assert_eq!(j["phases"][1]["rekeying"], true);
    }
}
