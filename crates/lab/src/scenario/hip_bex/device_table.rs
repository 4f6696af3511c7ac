//! The device pairs' tables ([`super::devices`]): Tables 4 and 5's A2 and A3, Table 6's B2 and
//! B3 and Table 7's wireless column beside ours, the cap's counters, and notes on what the
//! Wi-Fi-like link and the CPU quota can stand for.

use super::bex::{Series, median};
use super::capture::Phases;
use super::devices::{DEVICES, DeviceSeries, TABLET_SHARE};
use super::plan::{Plan, Results, SEED_K};
use super::table::{PHASES, exact, ms, pct, ratio, seed_num, thr, wire_us};
use super::transfer::Throughput;
use crate::report::number::num;
use crate::report::{Section, SeedFigures};
use crate::topology::Shaped;
use std::fmt::Write as _;

/// The report's device sections (none without device series).
pub fn sections(r: &Results, seed: &SeedFigures) -> Vec<Section> {
    if r.devices.is_empty() {
        return Vec::new();
    }
    vec![
        Section {
            title: "Device pairs on a Wi-Fi-like link, Tables 4 and 5's A2 and A3 beside ours"
                .into(),
            body: bex_md(&r.main, &r.devices, seed),
        },
        Section {
            title: "Round trip time on the Wi-Fi-like link, Table 6's B2 and B3 beside ours".into(),
            body: rtt_md(&r.devices, seed),
        },
        Section {
            title: "Throughput on the Wi-Fi-like link, Table 7's wireless column beside ours"
                .into(),
            body: throughput_md(&r.devices, seed),
        },
    ]
}

/// min / median / max of one interval over a series' complete runs, ms.
fn spread(s: &Series, f: fn(&Phases) -> f64) -> String {
    let v: Vec<f64> = s.complete().iter().map(f).collect();
    let lo = v.iter().copied().reduce(f64::min);
    let hi = v.iter().copied().reduce(f64::max);
    format!("{} / {} / {}", ms(lo), ms(median(&v)), ms(hi))
}

/// Tables 4 and 5's A2 and A3 beside ours (A1 beside the main series on the plain veth).
pub fn bex_md(main: &Series, devices: &[DeviceSeries], seed: &SeedFigures) -> String {
    let seed_ms = |sub: &str, key: &str| seed_num(seed, &["times_ms", sub, key]);
    let ours = |sub: &str, key: &str| -> Option<f64> {
        let s = if sub == "A1" {
            Some(main)
        } else {
            devices.iter().find(|d| d.name == sub).map(|d| &d.bex)
        };
        s?.median.as_ref().and_then(|p| wire_us(p, key))
    };
    let mut out = String::from(
        "Medians at K = 10 from the captures, ms; A1 is the main series (plain veth), A2 and A3 ran on the Wi-Fi-like link, A3 with the initiator capped to the tablet's share of a core.\n\n| interval | seed A1 | ours A1 | seed A2 | ours A2 | seed A3 | ours A3 | seed A3 ÷ A2 | ours A3 ÷ A2 |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (key, label) in PHASES {
        let o = |sub| ours(sub, key).map(|u| u / 1e3);
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} |",
            exact(seed_ms("A1", key)),
            o("A1").map_or("–".into(), num),
            exact(seed_ms("A2", key)),
            o("A2").map_or("–".into(), num),
            exact(seed_ms("A3", key)),
            o("A3").map_or("–".into(), num),
            ratio(seed_ms("A3", key), seed_ms("A2", key)),
            ratio(o("A3"), o("A2")),
        );
    }
    out += "\nShares of T_be (Table 5):\n\n| interval | seed A2 | ours A2 | seed A3 | ours A3 |\n|---|---|---|---|---|\n";
    for (key, label) in PHASES.iter().filter(|(k, _)| *k != "t_be") {
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} |",
            pct(seed_ms("A2", key), seed_ms("A2", "t_be")),
            pct(ours("A2", key), ours("A2", "t_be")),
            pct(seed_ms("A3", key), seed_ms("A3", "t_be")),
            pct(ours("A3", key), ours("A3", "t_be")),
        );
    }
    out += "\nPer series (min / median / max over the runs with every message captured, ms):\n\n| series | runs | established | T2 | T4 | T_be | initiator CPU per exchange ms (median) | cap | runs throttled | throttled periods / periods | waited ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
    for d in devices {
        let s = &d.bex;
        let cpu: Vec<f64> = s.runs.iter().filter_map(|r| r.initiator_cpu_us).collect();
        let cap = match (d.cap_quota_us, d.cap_period_us) {
            (Some(q), Some(p)) => {
                format!("{q} µs per {p} µs ({:.1} % of a core)", 100.0 * q as f64 / p as f64)
            }
            _ => "none".into(),
        };
        let c = d.bex_cap();
        let _ = writeln!(
            out,
            "| {} ({}) | {} | {} | {} | {} | {} | {} | {cap} | {} | {} | {} |",
            d.name,
            d.what,
            s.runs.len(),
            s.established(),
            spread(s, |p| p.t2_us),
            spread(s, |p| p.t4_us),
            spread(s, |p| p.t_be_us),
            ms(median(&cpu)),
            if c.is_some() {
                format!("{}/{}", d.throttled_runs(), s.runs.len())
            } else {
                "–".into()
            },
            c.map_or("–".into(), |c| format!("{} / {}", c.throttled, c.periods)),
            c.map_or("–".into(), |c| num(c.throttled_us as f64 / 1e3)),
        );
    }
    out
}

/// Table 6's B2 and B3 beside ours on the Wi-Fi-like link.
pub fn rtt_md(devices: &[DeviceSeries], seed: &SeedFigures) -> String {
    let mut out = String::from(
        "| series | path | seed ms | ours ms (mean) | ours ÷ seed | ours min / max / mdev ms | received |\n|---|---|---|---|---|---|---|\n",
    );
    for (d, dev) in
        devices.iter().filter_map(|d| Some((d, DEVICES.iter().find(|x| x.name == d.name)?)))
    {
        let Some(rtt) = &d.rtt else { continue };
        for (label, key, p) in [("IPv6", "ipv6", &rtt.ipv6), ("HIP", "hip", &rtt.hip)] {
            let theirs = seed_num(seed, &["rtt_ms", dev.rtt_key, key]);
            let _ = writeln!(
                out,
                "| {} ({}) beside seed {} | {label} | {} | {} | {} | {} / {} / {} | {}/{} |",
                d.name,
                d.what,
                dev.rtt_key.split('_').next().unwrap_or(dev.rtt_key),
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
        let s6 = seed_num(seed, &["rtt_ms", dev.rtt_key, "ipv6"]);
        let sh = seed_num(seed, &["rtt_ms", dev.rtt_key, "hip"]);
        let _ = writeln!(
            out,
            "| {} | HIP − IPv6 | {} | {} | | | |",
            d.name,
            s6.zip(sh).map_or("–".into(), |(a, b)| num(b - a)),
            num(rtt.hip.avg_ms - rtt.ipv6.avg_ms),
        );
    }
    for d in devices {
        if let Some(c) = d.transfer_cap {
            let _ = writeln!(
                out,
                "\nOver {}'s RTT and throughput tests the initiator's cap ran out in {} of {} periods ({} ms waited); its HIP round trips wait for the next period whenever it does.",
                d.name,
                c.throttled,
                c.periods,
                num(c.throttled_us as f64 / 1e3)
            );
        }
    }
    out
}

/// Table 7's wireless column beside ours (A2), with the capped initiator (A3) beside.
pub fn throughput_md(devices: &[DeviceSeries], seed: &SeedFigures) -> String {
    let find = |n: &str| devices.iter().find(|d| d.name == n).map(|d| d.throughput.as_slice());
    let (a2, a3) = (find("A2").unwrap_or_default(), find("A3").unwrap_or_default());
    if a2.is_empty() && a3.is_empty() {
        return "Not measured.\n".into();
    }
    let mut out = String::from(
        "| test | seed wireless Mbit/s | ours A2 Mbit/s | ours ÷ seed | ours A3 (initiator capped) Mbit/s | seed HIP ÷ plain | ours A2 HIP ÷ plain | ours A3 HIP ÷ plain |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (proto, hip, key) in [
        ("TCP", false, "tcp"),
        ("TCP", true, "tcp_hip"),
        ("UDP", false, "udp"),
        ("UDP", true, "udp_hip"),
    ] {
        let s = |k: &str| seed_num(seed, &["throughput_mbit_s", "wireless", k]);
        let base = proto.to_ascii_lowercase();
        let x = |t: &[Throughput]| {
            if hip {
                ratio(thr(t, "wifi", proto, true), thr(t, "wifi", proto, false))
            } else {
                String::new()
            }
        };
        let _ = writeln!(
            out,
            "| {proto}{} | {} | {} | {} | {} | {} | {} | {} |",
            if hip { " + HIP" } else { "" },
            exact(s(key)),
            thr(a2, "wifi", proto, hip).map_or("–".into(), num),
            ratio(thr(a2, "wifi", proto, hip), s(key)),
            thr(a3, "wifi", proto, hip).map_or("–".into(), num),
            if hip { ratio(s(key), s(&base)) } else { String::new() },
            x(a2),
            x(a3),
        );
    }
    out
}

/// What the device series mean, in words.
pub fn notes(devices: &[DeviceSeries], plan: &Plan) -> Vec<String> {
    let Some(d) = devices.first() else { return Vec::new() };
    let l = d.link;
    let mut n = vec![match d.shaped {
        Shaped::Netem => format!(
            "Wi-Fi-like link (A2, A3): tc netem on both veth ends, rate {} Mbit/s, delay {} ms ± {} ms (normal), queue {} packets. Chosen from the seed's wireless figures (it names neither its Wi-Fi standard nor its cards): the rate carries its 5.295 Mbit/s of UDP payload in our 1200 B datagrams; the delay puts a plain ping's round trip at its 1.242 ms; the jitter is ours (the seed gives means only). Each direction has its own rate, where real Wi-Fi shares one medium between data and ACKs, so TCP below UDP (the seed's 4.443 against 5.295) is not modelled.",
            num(l.rate_bps as f64 / 1e6),
            num(l.delay_us as f64 / 1e3),
            num(l.jitter_us as f64 / 1e3),
            l.limit
        ),
        Shaped::RateOnly => format!(
            "Wi-Fi-like link (A2, A3): this kernel has no netem (CONFIG_NET_SCH_NETEM unset: tc says the qdisc kind is unknown), so the link got its rate alone, tc tbf at {} Mbit/s on both veth ends (burst 64 kB, 50 ms queue); the planned delay of {} ms ± {} ms (normal) per direction, which would put a plain ping's round trip at the seed's 1.242 ms, was not applied, and our Wi-Fi round trips are the veth's plus the rate's serialisation. On a kernel with netem the same run applies all three. tbf's 64 kB burst lets up to ≈ 0.5 Mbit beyond the rate into each second of a test, so short tests (the quick profile's 1 s) read above the rate.",
            num(l.rate_bps as f64 / 1e6),
            num(l.delay_us as f64 / 1e3),
            num(l.jitter_us as f64 / 1e3)
        ),
    }];
    if let Some(a3) = devices.iter().find(|d| d.cap_fraction.is_some()) {
        n.push(format!(
            "CPU cap (A3): the seed's tablet took {:.1}× the laptop's time for the initiator's T2, so the initiator's node is held to 1/{:.1} of a core: a CFS quota of {} µs every {} µs (the kernel's smallest quota is 1 ms, so this is the shortest period for that share), set after the node has started and kept through the RTT and throughput tests; that node runs its data path as ordinary threads (`[data-path] scheduling = \"other\"`), since the default SCHED_FIFO threads are outside a CFS quota ({} runs). The seed's Table 1 names the laptop as A3's initiator and the tablet as responder, but its T2 and T4 (initiator steps) are the slow ones and its text says the tablet solved the puzzle: we slow the initiator. The responder is not capped: A3's T1 and T3 stay near A1's in the seed.",
            1.0 / TABLET_SHARE,
            1.0 / TABLET_SHARE,
            a3.cap_quota_us.unwrap_or(0),
            a3.cap_period_us.unwrap_or(0),
            plan.device_runs
        ));
        let cpu = |d: &DeviceSeries| {
            median(&d.bex.runs.iter().filter_map(|r| r.initiator_cpu_us).collect::<Vec<_>>())
        };
        let free = devices.iter().find(|d| d.cap_fraction.is_none()).and_then(cpu);
        let c = a3.bex_cap().unwrap_or_default();
        n.push(format!(
            "What a quota can and cannot emulate: it grants one of our cores at full speed until the period's quota is spent, then nothing until the next period. The initiator's node ran {} ms of CPU per base exchange uncapped (A2, median, from its start to the trigger's end: T2's and T4's work plus the trigger's datagrams), {} ms capped (A3) — about one {} µs quota, so a base exchange either fits in the quota left in a period and runs at full speed, or runs out mid-exchange and waits for the next period (up to ≈ {} ms) in whichever step it was: here {} of {} runs were throttled ({} throttled periods, {} ms waited in all). It is never stretched {:.0}× evenly the way a slower processor is, so A3's T2 and T4 beside the seed's show the quota's stalls, not a tablet's speed, and the spread (min / median / max) matters more than the median. Whether the quota held the data path back shows in Table 7's A3 column and the cap's counters under Table 6. A slower device is better emulated by slowing each operation (e.g. repeating the node's crypto) than by a quota, which only rations time.",
            ms(free),
            ms(cpu(a3)),
            a3.cap_quota_us.unwrap_or(0),
            num(a3.cap_period_us.unwrap_or(0) as f64 / 1e3),
            a3.throttled_runs(),
            a3.bex.runs.len(),
            c.throttled,
            num(c.throttled_us as f64 / 1e3),
            1.0 / TABLET_SHARE,
        ));
    }
    n.push(format!(
        "Device series: {} base exchanges at K = {SEED_K} per pair, {} pings each way, TCP/UDP throughput {} per test; the pairs run after the main series, each node started afresh per run. The seed's B2 (Table 2: tablet → laptop) stands beside our A2 and its B3 (laptop → tablet) beside our capped A3; its wireless throughput (laptop → PC) beside our A2.",
        plan.device_runs,
        plan.pings,
        plan.device_throughput_s.map_or("not measured".into(), |s| format!("{s} s (after 1 s omitted)"))
    ));
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cap::CapStat;
    use crate::scenario::hip_bex::bex::{BexRun, NodeTimes, summarise};
    use crate::scenario::hip_bex::devices::WIFI;

    fn series(t2: f64, throttled: u64) -> DeviceSeries {
        let run = |t: f64| BexRun {
            established: true,
            wire: Some(Phases {
                t1_us: 100.0,
                t2_us: t,
                t3_us: 400.0,
                t4_us: 300.0,
                t_be_us: t + 900.0,
            }),
            node: NodeTimes::default(),
            initiator_cpu_us: Some(700.0),
            cap: Some(CapStat { periods: 2, throttled, throttled_us: throttled * 9000 }),
        };
        DeviceSeries {
            name: "A3".into(),
            what: "tablet".into(),
            link: WIFI,
            shaped: Shaped::RateOnly,
            cap_fraction: Some(TABLET_SHARE),
            cap_quota_us: Some(1000),
            cap_period_us: Some(10_858),
            bex: summarise(SEED_K, vec![run(t2), run(2.0 * t2), run(3.0 * t2)]),
            rtt: None,
            throughput: Vec::new(),
            transfer_cap: None,
            throughput_s: None,
        }
    }

    #[test]
    fn cap_counters_and_tables() {
        let d = series(1000.0, 1);
        assert_eq!(d.bex_cap(), Some(CapStat { periods: 6, throttled: 3, throttled_us: 27_000 }));
        assert_eq!(d.throttled_runs(), 3);
        let seed = SeedFigures { source: String::new(), table: None, note: String::new() };
        let main = summarise(SEED_K, Vec::new());
        let md = bex_md(&main, std::slice::from_ref(&d), &seed);
        assert!(md.contains("| 1.00 / 2.00 / 3.00 |"), "{md}");
        assert!(md.contains("1000 µs per 10858 µs"), "{md}");
        assert!(md.contains("| 3 / 6 | 27.0 |"), "{md}");
        assert_eq!(throughput_md(std::slice::from_ref(&d), &seed), "Not measured.\n");
        let notes = notes(
            &[d],
            &crate::scenario::hip_bex::plan::plan(&Default::default())
                .unwrap_or_else(|e| panic!("{e}")),
        );
        assert!(notes[0].contains("no netem"), "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("cannot emulate")), "{notes:?}");
    }
}
