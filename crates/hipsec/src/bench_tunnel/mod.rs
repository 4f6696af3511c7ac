//! `hipsec bench tunnel`: kernel TCP (iperf3) through a hipsec ESP tunnel between two network
//! namespaces, beside the same transfer over the plain veth in the same run:
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

mod args;
mod ike;
mod nodes;
mod report;
mod transfer;

pub use args::{BenchTunnelArgs, KeyingArg, TransportArg};
pub use report::{BothReport, LanesReport, NodeCpu, Output, Report, RoundSummary};
pub use transfer::PathResult;

use crate::bench_net::{Topo, congestion_control, load_avg, measured, remove_stale, sa_keys};
use args::Carrier;
use nodes::{start_nodes, stop_nodes};
use report::report;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use transfer::{Round, Tunnel, measure, measure_tunnel};

const PREFIX: &str = "hbench-";

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
    if let Some(n) = args.vs_queues
        && (carriers != [Carrier::Udp] || n == args.queues)
    {
        return Err(format!(
            "--vs-queues {n}: compares two lane counts over ESP in UDP (--transport udp, and \
             not the --queues {} already measured)",
            args.queues
        ));
    }
    if carriers.contains(&Carrier::Raw) && args.keying == KeyingArg::Ike {
        return Err("--keying ike with --transport raw: IKE's ESP goes in UDP here (encap = \
                    true); use --transport udp"
            .into());
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
    // What each round measures after the plain transfer: the carriers, or two lane counts.
    let variants: Vec<(Carrier, BenchTunnelArgs)> = match args.vs_queues {
        Some(n) => vec![
            (Carrier::Udp, args.clone()),
            (Carrier::Udp, BenchTunnelArgs { queues: n, ..args.clone() }),
        ],
        None => carriers.iter().map(|&c| (c, args.clone())).collect(),
    };
    let mut topo = Topo::new(PREFIX)?;
    let mut running = (0, start_nodes(&mut topo, &variants[0].1, variants[0].0)?);
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
            (args.parallel, args.mss, args.bitrate),
            stop,
            &mut |_| {},
        )?;
        // With two variants every other round starts with the one already running: one
        // restart per round, and neither always goes first.
        let mut order: Vec<usize> = (0..variants.len()).collect();
        if order.first() != Some(&running.0) {
            order.reverse();
        }
        let mut tunnels: Vec<Option<Tunnel>> = variants.iter().map(|_| None).collect();
        for k in order {
            let (carrier, v) = &variants[k];
            if running.0 != k {
                stop_nodes(&mut topo, running.1);
                running = (k, start_nodes(&mut topo, v, *carrier)?);
            }
            eprintln!(
                "bench tunnel: round {round}/{}: hipsec tunnel ({}, {}, {} lane(s)), iperf3 {} s",
                args.rounds,
                args.suite,
                carrier.name(),
                v.queues,
                args.seconds
            );
            tunnels[k] = Some(measure_tunnel(&mut topo, v, &congestion, running.1, stop)?);
        }
        let tunnels = tunnels.into_iter().flatten().collect();
        rounds.push(Round { plain, tunnels });
    }
    drop(topo);
    let mut reports =
        variants.iter().enumerate().map(|(k, (c, v))| report(v, &congestion, load, &rounds, k, *c));
    if args.vs_queues.is_some() {
        let (Some(first), Some(second)) = (reports.next(), reports.next()) else {
            return Err("bench tunnel: a lane count not measured".into());
        };
        let per = rounds.iter().map(|r| r.tunnels[1].path.gbps / r.tunnels[0].path.gbps).collect();
        return Ok(Output::Lanes(Box::new(LanesReport {
            throughput_ratio: second.tunnel.gbps / first.tunnel.gbps,
            service_demand_ratio: second.service_demand_us_per_kb / first.service_demand_us_per_kb,
            throughput_ratio_rounds: per,
            first,
            second,
        })));
    }
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
        Output::Lanes(l) => vec![&l.first, &l.second],
    };
    let r = reports[0];
    let over = match &out {
        Output::One(r) if r.transport == "raw" => "raw ESP (IP protocol 50)",
        Output::One(_) | Output::Lanes(_) => "ESP in UDP",
        Output::Both(_) => "ESP in UDP and raw ESP (IP protocol 50)",
    };
    let lanes = match &out {
        Output::Lanes(l) => format!("{} and {}", l.first.queues, l.second.queues),
        _ => r.queues.to_string(),
    };
    println!(
        "hipsec bench tunnel: {} over {over}, keyed {}, {} lane(s), iperf3 TCP ({}, {} \
         stream(s)) {} s each, {} round(s), {} CPUs, load average {:.2} at start",
        r.suite,
        r.keying,
        lanes,
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
        let name = match &out {
            Output::Lanes(_) => format!("hipsec {} lanes", r.queues),
            _ => format!("hipsec {}", r.transport),
        };
        println!(
            "{:<16} {:>8.2} {:>9.3} {:>8} {:>13} {:>10.2} {:>7.0}%",
            name,
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
    if let Output::Lanes(l) = &out {
        let per: Vec<String> =
            l.throughput_ratio_rounds.iter().map(|x| format!("{x:.3}")).collect();
        println!(
            "{} lanes / {}      {:>8.3}   throughput (medians; per round {}); CPU µs/KB {:.3}×",
            l.second.queues,
            l.first.queues,
            l.throughput_ratio,
            per.join(", "),
            l.service_demand_ratio
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
