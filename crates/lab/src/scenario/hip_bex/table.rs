//! From the measurements to the report: the seed's Tables 4-7 beside ours with the ratio, the
//! puzzle sweep, notes and charts (the device pairs' tables are in [`super::device_table`]).

use super::bex::{NodeTimes, Series};
use super::capture::Phases;
use super::plan::{Plan, Results, SEED_K};
use super::transfer::Throughput;
use crate::report::number::num;
use crate::report::{Chart, Section, SeedFigures};
use std::fmt::Write as _;

/// The seed's Ethernet rate, bit/s (its TCP carried 8.773 Mbit/s of it).
pub const SEED_LINK_BPS: u64 = 10_000_000;

/// The seed's Figure 3 intervals: (key in seed-figures.toml, label).
pub const PHASES: &[(&str, &str)] = &[
    ("t1", "T1 responder: I1 in → R1 out"),
    ("t2", "T2 initiator: R1 in → I2 out"),
    ("t3", "T3 responder: I2 in → R2 out"),
    ("t4", "T4 initiator: R2 in → first ESP out"),
    ("t_be", "T_be: first I1 out → first ESP out"),
];

pub fn seed_num(seed: &SeedFigures, path: &[&str]) -> Option<f64> {
    let mut v = seed.table.as_ref()?;
    for k in path {
        v = v.get(*k)?;
    }
    v.as_f64()
}

/// Our capture figure for a seed key, µs.
pub fn wire_us(p: &Phases, key: &str) -> Option<f64> {
    Some(match key {
        "t1" => p.t1_us,
        "t2" => p.t2_us,
        "t3" => p.t3_us,
        "t4" => p.t4_us,
        "t_be" => p.t_be_us,
        _ => return None,
    })
}

/// The node's timer for a seed key, µs.
pub fn node_us(n: &NodeTimes, key: &str) -> Option<f64> {
    match key {
        "t1" => n.t1_us,
        "t2" => n.t2_us,
        "t3" => n.t3_us,
        "t4" => n.t4_us,
        "t_be" => n.base_exchange_us,
        _ => None,
    }
}

/// A seed figure as published (every digit).
pub fn exact(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v}"))
}

pub fn ms(us: Option<f64>) -> String {
    us.map_or("–".into(), |u| num(u / 1e3))
}

pub fn ratio(ours: Option<f64>, theirs: Option<f64>) -> String {
    match (ours, theirs) {
        (Some(o), Some(t)) if t != 0.0 => format!("{:.4}", o / t),
        _ => "–".into(),
    }
}

pub fn pct(v: Option<f64>, total: Option<f64>) -> String {
    match (v, total) {
        (Some(v), Some(t)) if t > 0.0 => format!("{:.1} %", 100.0 * v / t),
        _ => "–".into(),
    }
}

/// Tables 4 and 5 beside ours (medians at K = 10).
pub fn bex_md(s: &Series, seed: &SeedFigures) -> String {
    let mut out = format!(
        "{} base exchanges at K = {}, {} established, {} with every message in both captures; T_be min {} ms, max {} ms.\n\n",
        s.runs.len(),
        s.k,
        s.established(),
        s.complete().len(),
        ms(s.t_be_min_us),
        ms(s.t_be_max_us)
    );
    out += "| interval | seed A1 ms | ours ms (capture, median) | ours ÷ seed | seed % of T_be | ours % of T_be | node timer ms (median) | seed A2 ms | seed A3 ms |\n|---|---|---|---|---|---|---|---|---|\n";
    let seed_ms = |sub: &str, key: &str| seed_num(seed, &["times_ms", sub, key]);
    for (key, label) in PHASES {
        let ours = s.median.as_ref().and_then(|p| wire_us(p, key));
        let theirs = seed_ms("A1", key);
        let ours_total = s.median.map(|p| p.t_be_us);
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} |",
            exact(theirs),
            ms(ours),
            ratio(ours.map(|u| u / 1e3), theirs),
            pct(theirs, seed_ms("A1", "t_be")),
            pct(ours, ours_total),
            ms(node_us(&s.node_median, key)),
            exact(seed_ms("A2", key)),
            exact(seed_ms("A3", key)),
        );
    }
    if let Some(p) = s.median {
        let _ = writeln!(
            out,
            "\nOur hosts' share: responder T1 + T3 = {} ms, initiator T2 + T4 = {} ms; T_be − ΣT = {} ms on the wire and between the nodes' steps (the seed's A1: responder 81.721 ms, initiator 104.865 ms, 1.832 ms else).",
            ms(Some(p.t1_us + p.t3_us)),
            ms(Some(p.t2_us + p.t4_us)),
            ms(Some(p.t_be_us - p.sum_us()))
        );
        let a1 = |k: &str| seed_ms("A1", k);
        if let (Some(t1), Some(t2), Some(t3), Some(t4), Some(be)) =
            (a1("t1"), a1("t2"), a1("t3"), a1("t4"), a1("t_be"))
        {
            let share = |x: f64, total: f64| 100.0 * x / total;
            let largest = [("T1", p.t1_us), ("T2", p.t2_us), ("T3", p.t3_us), ("T4", p.t4_us)]
                .into_iter()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map_or("–", |x| x.0);
            let _ = writeln!(
                out,
                "\nReading: our T_be is {:.0}× shorter than the seed's A1 (one of today's server cores against the seed's 2009 laptop and PC, and other public-key algorithms: the node signs with ECDSA P-256 host keys and runs ECDH on NIST P-256). The split compares: initiator {:.0} % of T_be here, {:.0} % in the seed; responder {:.0} % here, {:.0} % in the seed; the largest step here is {largest} (the seed's is T2, the puzzle and Diffie-Hellman). Our T4 holds the SA install and the wait for the trigger's next datagram (up to ≈ 0.1 ms), which at these scales is a larger share than the seed's 3 %.",
                be * 1e3 / p.t_be_us,
                share(p.t2_us + p.t4_us, p.t_be_us),
                share(t2 + t4, be),
                share(p.t1_us + p.t3_us, p.t_be_us),
                share(t1 + t3, be),
            );
        }
    }
    out
}

/// The puzzle sweep.
pub fn sweep_md(sweep: &[Series]) -> String {
    let mut out = String::from(
        "| K | runs | established | T_be ms (median) | T2 ms (median) | T2 node timer ms | T1 ms | T3 ms | T4 ms |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in sweep {
        let m = s.median;
        let _ = writeln!(
            out,
            "| {}{} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.k,
            if s.k == SEED_K { " (seed)" } else { "" },
            s.runs.len(),
            s.established(),
            ms(m.map(|p| p.t_be_us)),
            ms(m.map(|p| p.t2_us)),
            ms(s.node_median.t2_us),
            ms(m.map(|p| p.t1_us)),
            ms(m.map(|p| p.t3_us)),
            ms(m.map(|p| p.t4_us)),
        );
    }
    out
}

/// Table 6 beside ours.
pub fn rtt_md(r: &Results, seed: &SeedFigures) -> String {
    let Some(rtt) = &r.rtt else { return "Not measured (no association).\n".into() };
    let s6 = seed_num(seed, &["rtt_ms", "B1_ethernet", "ipv6"]);
    let sh = seed_num(seed, &["rtt_ms", "B1_ethernet", "hip"]);
    let mut out = String::from(
        "| path | seed B1 ms | ours ms (mean) | ours ÷ seed | ours min / max / mdev ms | received |\n|---|---|---|---|---|---|\n",
    );
    for (label, theirs, p) in
        [("IPv6 (plain, veth)", s6, &rtt.ipv6), ("HIP (HIT to HIT, ESP)", sh, &rtt.hip)]
    {
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} / {} / {} | {}/{} |",
            exact(theirs),
            num(p.avg_ms),
            ratio(Some(p.avg_ms), theirs),
            num(p.min_ms),
            num(p.max_ms),
            num(p.mdev_ms),
            p.received,
            p.sent
        );
    }
    let ours_x = if rtt.ipv6.avg_ms > 0.0 { rtt.hip.avg_ms / rtt.ipv6.avg_ms } else { f64::NAN };
    let seed_x = s6.zip(sh).map_or(f64::NAN, |(a, b)| b / a);
    let seed_d = s6.zip(sh).map_or(f64::NAN, |(a, b)| b - a);
    let _ = writeln!(
        out,
        "\nHIP ÷ IPv6: seed {:.3} (+{:.0} %), ours {:.3} (+{:.0} %). What HIP adds to a round trip: seed +{} ms, ours +{} ms (two passes through each node, ESP in UDP both ways); the plain veth round trip is a kernel-only path of microseconds, hence our large ratio.",
        seed_x,
        (seed_x - 1.0) * 100.0,
        ours_x,
        (ours_x - 1.0) * 100.0,
        num(seed_d),
        num(rtt.hip.avg_ms - rtt.ipv6.avg_ms)
    );
    out
}

pub fn thr(r: &[Throughput], link: &str, proto: &str, hip: bool) -> Option<f64> {
    r.iter().find(|t| t.link == link && t.proto == proto && t.hip == hip).map(|t| t.mbit_s)
}

/// Table 7 beside ours.
pub fn throughput_md(r: &Results, seed: &SeedFigures) -> String {
    if r.throughput.is_empty() {
        return "Not measured.\n".into();
    }
    let mut links: Vec<&str> = Vec::new();
    for t in &r.throughput {
        if !links.contains(&t.link.as_str()) {
            links.push(&t.link);
        }
    }
    let mut out = String::from(
        "| link | test | seed Ethernet Mbit/s (10 Mbit/s link) | ours Mbit/s | ours ÷ seed | ours HIP ÷ plain | seed HIP ÷ plain |\n|---|---|---|---|---|---|---|\n",
    );
    let cols = [
        ("TCP", false, "tcp"),
        ("TCP", true, "tcp_hip"),
        ("UDP", false, "udp"),
        ("UDP", true, "udp_hip"),
    ];
    for link in links {
        // The seed's Ethernet was 10 Mbit/s: its figures stand beside ours on that link only;
        // its HIP ÷ plain ratio stands beside every link's.
        let ethernet =
            r.throughput.iter().any(|t| t.link == link && t.rate_bps == Some(SEED_LINK_BPS));
        for (proto, hip, key) in cols {
            let seed_raw = |k: &str| seed_num(seed, &["throughput_mbit_s", "ethernet", k]);
            let theirs = seed_raw(key).filter(|_| ethernet);
            let ours = thr(&r.throughput, link, proto, hip);
            let (own_x, seed_x) = if hip {
                let base = proto.to_ascii_lowercase();
                (
                    ratio(ours, thr(&r.throughput, link, proto, false)),
                    ratio(seed_raw(key), seed_raw(&base)),
                )
            } else {
                (String::new(), String::new())
            };
            let _ = writeln!(
                out,
                "| {link} | {proto}{} | {} | {} | {} | {own_x} | {seed_x} |",
                if hip { " + HIP" } else { "" },
                exact(theirs),
                ours.map_or("–".into(), num),
                ratio(ours, theirs),
            );
        }
    }
    out
}

/// The report's sections.
pub fn sections(r: &Results, seed: &SeedFigures) -> Vec<Section> {
    let mut v = Vec::new();
    if seed.table.is_none() {
        v.push(Section {
            title: "Seed figures".into(),
            body: format!(
                "Seed figures absent ({}): {}. Our figures stand alone.",
                seed.source, seed.note
            ),
        });
    }
    v.extend([
        Section {
            title: "Base exchange, Tables 4 and 5 beside ours".into(),
            body: bex_md(&r.main, seed),
        },
        Section { title: "Puzzle difficulty sweep".into(), body: sweep_md(&r.sweep) },
        Section { title: "Round trip time, Table 6 beside ours".into(), body: rtt_md(r, seed) },
        Section { title: "Throughput, Table 7 beside ours".into(), body: throughput_md(r, seed) },
    ]);
    v
}

/// Notes: topology, definitions, what differs from the seed.
pub fn notes(r: &Results, plan: &Plan) -> Vec<String> {
    let mut n = vec![
        "Topology: namespaces h1 (initiator) and h2 (responder) on one veth (192.0.2.1/.2, 2001:db8:1::1/::2); a hipsec node in each with [hip] (host identity from `hipsec keygen --hip`, the peer's HIT and locator), ESP in UDP 4500 in BEET mode between the HITs, HIP over IPv4 protocol 139. Both nodes are restarted before every base exchange, so each starts from no association.".to_string(),
        "Trigger: the node drops the packet that meets its trap (it raises the acquire that starts the exchange), so one ping would leave no ESP to time. Each run sends UDP datagrams about 0.1 ms apart (python3, connected socket, a 50 µs sleep plus the kernel's 50 µs timer slack; 0.2 ms sleeps until 2026-11-25) from h1's HIT to h2's discard port and stops at h2's first answer (ICMPv6 port unreachable through ESP); the first ESP out follows R2 by the SA install plus at most one interval, so T4 and T_be include up to ≈ 0.1 ms of that wait. (iputils ping is no trigger: while no request is answered it sends one per 10 ms, which put 4-5 ms of its own pacing into T4 in a trial.)".into(),
        "Intervals (the seed's Figure 3) from tcpdump (`ip proto 139 or ip proto 50 or udp port 4500`) on both veth ends, kernel timestamps: T_be = first I1 out → first ESP out and T2 = R1 in → I2 out, T4 = R2 in → first ESP out on h1's interface; T1 = I1 in → R1 out and T3 = I2 in → R2 out on h2's. Medians over the runs with every message in both captures, each interval separately (the seed gives means). Node timer column: `hipsec status --json` — initiator base_exchange_us (I1 sent → R2 processed), t2_us and t4_us (processing of R1 and of R2 only), responder t3_us and counters.last_t1_us.".into(),
        format!(
            "Puzzle sweep: K = {} with {} runs each beside the main series at K = {SEED_K}; the initiator tries 2^K solutions on average, so T2 and T_be grow with K once the puzzle outweighs the signatures and Diffie-Hellman. The chart's value axis turns logarithmic once the times span a decade.",
            plan.sweep.iter().map(u8::to_string).collect::<Vec<_>>().join(", "),
            plan.sweep_runs
        ),
        format!(
            "RTT: {} pings at 10 ms intervals from h1 to h2's plain IPv6 address on the veth and from h1's HIT to h2's HIT, on the association of the main series' last run; mean, like the seed's Table 6 (B1 is its Ethernet pair).",
            plan.pings
        ),
        format!(
            "Throughput: iperf3 {} s (after 1 s omitted) per test, receiver's rate, h1 → h2, TCP ({} B writes) and UDP ({} B datagrams at an unlimited offered rate, -b 0), to h2's plain IPv6 address and to its HIT; links shaped by tc tbf on both veth ends (10mbit = the seed's Ethernet rate, burst 64 kB, 50 ms queue) or unlimited. The seed sent a 100 MB file 10 times; its Ethernet column is the comparison.",
            plan.throughput_s,
            super::transfer::TCP_WRITE,
            super::transfer::UDP_PAYLOAD
        ),
        "The seed ran HIPL (kernel 2.6.25) on a laptop and a PC over real Ethernet with K = 10; here both hosts share one machine's cores and a veth, so the wire adds microseconds, and the hosts' share of T_be is what compares.".into(),
    ];
    let broken: usize = r.sweep.iter().map(|s| s.runs.len() - s.complete().len()).sum();
    if broken > 0 {
        n.push(format!("{broken} run(s) lacked a message in a capture (or never established) and are left out of the medians; the JSON has every run."));
    }
    n
}

/// Bar charts: the phases beside the seed's A1, the sweep, RTT and throughput.
pub fn charts(r: &Results, seed: &SeedFigures) -> Vec<Chart> {
    let mut phases = Vec::new();
    for (key, _) in PHASES {
        let mut bars = Vec::new();
        if let Some(v) = seed_num(seed, &["times_ms", "A1", key]) {
            bars.push(("seed A1 (HIPL 2009)".to_string(), v, 0.0));
        }
        if let Some(v) = r.main.median.as_ref().and_then(|p| wire_us(p, key)) {
            bars.push(("hipsec (capture)".to_string(), v / 1e3, 0.0));
        }
        phases.push((key.to_ascii_uppercase().replace("T_BE", "T_be"), bars));
    }
    let sweep = r
        .sweep
        .iter()
        .filter_map(|s| {
            let m = s.median?;
            Some((
                format!("K={}", s.k),
                vec![
                    ("T_be".to_string(), m.t_be_us / 1e3, 0.0),
                    ("T2".to_string(), m.t2_us / 1e3, 0.0),
                ],
            ))
        })
        .collect();
    let mut rtt = Vec::new();
    for (label, key, pick) in [
        ("IPv6", "ipv6", r.rtt.map(|x| x.ipv6.avg_ms)),
        ("HIP", "hip", r.rtt.map(|x| x.hip.avg_ms)),
    ] {
        let mut bars = Vec::new();
        if let Some(v) = seed_num(seed, &["rtt_ms", "B1_ethernet", key]) {
            bars.push(("seed B1".to_string(), v, 0.0));
        }
        if let Some(v) = pick {
            bars.push(("hipsec".to_string(), v, 0.0));
        }
        rtt.push((label.to_string(), bars));
    }
    let mut thr_groups = Vec::new();
    for t in &r.throughput {
        let label = format!("{}{} {}", t.proto, if t.hip { "+HIP" } else { "" }, t.link);
        let mut bars = Vec::new();
        if t.rate_bps == Some(SEED_LINK_BPS) {
            let key =
                format!("{}{}", t.proto.to_ascii_lowercase(), if t.hip { "_hip" } else { "" });
            if let Some(v) = seed_num(seed, &["throughput_mbit_s", "ethernet", &key]) {
                bars.push(("seed Ethernet".to_string(), v, 0.0));
            }
        }
        bars.push(("hipsec".to_string(), t.mbit_s, 0.0));
        thr_groups.push((label, bars));
    }
    vec![
        Chart {
            file: "bex_phases.svg".into(),
            title: format!("Base exchange phases at K = {SEED_K} (median)"),
            unit: "ms".into(),
            groups: phases,
        },
        Chart {
            file: "puzzle_sweep.svg".into(),
            title: "T_be and T2 per puzzle difficulty K (median)".into(),
            unit: "ms".into(),
            groups: sweep,
        },
        Chart {
            file: "rtt.svg".into(),
            title: "Ping round trip, plain IPv6 vs HIP".into(),
            unit: "ms".into(),
            groups: rtt,
        },
        Chart {
            file: "hip_throughput.svg".into(),
            title: "Throughput h1 → h2, with and without HIP".into(),
            unit: "Mbit/s".into(),
            groups: thr_groups,
        },
    ]
}
