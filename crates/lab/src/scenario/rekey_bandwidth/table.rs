//! From the points to the report: our Table 1, the seed's figures beside ours with a reading
//! of each difference, the crossover, notes and charts.

use super::point::PointResult;
use crate::report::number::num;
use crate::report::{Chart, Section, SeedFigures};
use std::fmt::Write as _;

/// The seed's session size: 10 MB (10⁷ bytes: 10 MB at 141.894 kbit/s is its 563.8 s).
pub const SEED_SESSION: u64 = 10_000_000;
/// The seed's plateau, 10 × 558.7 kbit/s of payload, as ESP bytes on the wire (≈ +7 %).
pub const CAP_TARGET_WIRE_BPS: f64 = 6.0e6;

/// A point is link-bound when the wire carries at least this share of the link's rate.
const LINK_BOUND: f64 = 0.85;

/// The seed's Table 1 columns: (key in seed-figures.toml, label).
pub const COLUMNS: &[(&str, &str)] = &[
    ("sessions", "sessions"),
    ("avg_throughput_kbit_s", "avg throughput kbit/s"),
    ("avg_session_delay_s", "avg session delay s"),
    ("retransmissions", "retransmissions"),
    ("ike_rekeyed_sas", "IKE rekeys"),
    ("ike_rekey_delay_s", "IKE rekey delay s"),
    ("ipsec_rekey_requests", "CHILD (IPsec) rekeys"),
    ("ipsec_rekey_delay_s", "CHILD rekey delay s"),
    ("packets_dropped_no_sa", "packets dropped (no SA)"),
];

/// Our figure for a seed column.
pub fn ours(p: &PointResult, key: &str) -> Option<f64> {
    match key {
        "sessions" => Some(p.sessions as f64),
        "avg_throughput_kbit_s" => p.avg_kbit_s,
        "avg_session_delay_s" => p.avg_delay_s,
        "retransmissions" => Some(p.retransmissions as f64),
        "ike_rekeyed_sas" => Some(p.ike_rekeys as f64),
        "ike_rekey_delay_s" => p.ike_rekey_delay_s,
        "ipsec_rekey_requests" => Some(p.child_rekeys as f64),
        "ipsec_rekey_delay_s" => p.child_rekey_delay_s,
        "packets_dropped_no_sa" => Some(p.no_sa as f64),
        _ => None,
    }
}

fn o(v: Option<f64>) -> String {
    v.map_or("–".into(), num)
}

fn ms(v: Option<f64>) -> String {
    v.map_or("–".into(), |s| format!("{} ms", num(s * 1e3)))
}

fn bytes(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{} MB", num(n as f64 / 1e6))
    } else {
        format!("{} kB", num(n as f64 / 1e3))
    }
}

fn link_bound(p: &PointResult) -> Option<bool> {
    p.spec.rate_bps.map(|r| p.wire_mbit_s * 1e6 >= LINK_BOUND * r as f64)
}

/// Our Table 1: one row per point.
pub fn table_md(points: &[PointResult]) -> String {
    let mut s = String::from(
        "| series | link | session | window + drain s | sessions (cut, failed) | avg throughput kbit/s | avg session delay s | retransmissions | IKE rekeys | IKE rekey delay (to DELETE; req→resp) | CHILD rekeys | CHILD rekey delay (to DELETE; req→resp; node) | IKE resent | no-SA drops | other drops | wire Mbit/s | gw1 CPU % |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for p in points {
        let other: Vec<String> = p
            .drops
            .iter()
            .filter(|(k, _)| *k != "no_sa")
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let series = match p.cap_pct {
            Some(c) => format!("capped ({c:.2} %)"),
            None => p.spec.series.clone(),
        };
        let _ = writeln!(
            s,
            "| {series} | {} | {} | {:.1} | {} ({}, {}) | {} | {} | {} | {} | {}; {} | {} | {}; {}; {} | {} | {} | {} | {} | {} |",
            p.spec.link,
            bytes(p.spec.size),
            p.window_s,
            p.sessions,
            p.cut,
            p.failed,
            o(p.avg_kbit_s),
            o(p.avg_delay_s),
            p.retransmissions,
            p.ike_rekeys,
            ms(p.ike_rekey_delay_s),
            ms(p.ike_rekey_rtt_s),
            p.child_rekeys,
            ms(p.child_rekey_delay_s),
            ms(p.child_rekey_rtt_s),
            ms(p.node_child_rekey_delay_s),
            p.ike_resent,
            p.no_sa,
            if other.is_empty() { "0".into() } else { other.join(", ") },
            num(p.wire_mbit_s),
            num(p.gw1_cpu_pct),
        );
    }
    s
}

fn seed_at(seed: &SeedFigures, key: &str, i: usize) -> Option<f64> {
    seed.table.as_ref()?.get(key)?.get(i)?.as_f64()
}

/// One line: why ours differs from the seed's figure, where there is a reason.
fn reading(key: &str, theirs: f64, p: &PointResult, i: usize, seed: &SeedFigures) -> String {
    let v = ours(p, key).unwrap_or(f64::NAN);
    let close = (v / theirs - 1.0).abs() <= 0.15;
    let share = p.spec.rate_bps.map_or(f64::NAN, |r| r as f64 / 1e3 / f64::from(p.spec.clients));
    let seed_hours = seed_at(seed, "sessions", i)
        .zip(seed_at(seed, "avg_session_delay_s", i))
        .map_or(f64::NAN, |(n, d)| n * d / 10.0 / 3600.0);
    match key {
        "sessions" | "retransmissions" | "ike_rekeyed_sas" | "ipsec_rekey_requests"
            if key != "retransmissions" || v > 0.0 =>
        {
            match key {
                "ike_rekeyed_sas" => format!(
                    "lifetimes set the count: seed ≈ one IKE rekey per {:.0} s, ours every {:.1} s",
                    seed_hours * 3600.0 / theirs,
                    p.spec.ike_rekey_ms as f64 / 1e3
                ),
                "ipsec_rekey_requests" => format!(
                    "lifetimes set the count: seed ≈ one CHILD rekey per {:.0} s, ours every {:.1} s (− up to {:.1} s jitter)",
                    seed_hours * 3600.0 / theirs,
                    p.spec.child_rekey_ms as f64 / 1e3,
                    p.spec.rand_ms as f64 / 1e3
                ),
                "retransmissions" => "ours: ten Linux TCP flows (each new session in slow start, windows of MBs) overshoot the 50 ms tbf queue; RetransSegs counts segments. The seed's clients never filled their queue: its 10 are SYNs lost before the first SA (+ a FIN at 1.5 Mbit/s)".into(),
                _ => format!(
                    "a count over the run: seed ≈ {seed_hours:.0} h per rate with 10 MB sessions, ours {:.0} s with {} sessions",
                    p.window_s,
                    bytes(p.spec.size)
                ),
            }
        }
        "retransmissions" => "none here: the tunnel is up before the first SYN (the seed lost its first SYNs to the missing SA)".into(),
        "avg_throughput_kbit_s" if close => format!("both link-bound: fair share of the link {} kbit/s", num(share)),
        "avg_throughput_kbit_s" if p.cap_pct.is_some() && theirs < share * 0.8 => {
            "both CPU-bound: the capped gw1 carries about the seed's plateau".into()
        }
        "avg_throughput_kbit_s" if theirs < share * 0.8 => format!(
            "the seed's gateways were crypto-bound at ≈ 5.6 Mbit/s; ours is link-bound ({} of {} kbit/s fair share)",
            num(v),
            num(share)
        ),
        "avg_throughput_kbit_s" if p.cap_pct.is_some() => "the capped gw1 bounds ours below the link's share".into(),
        "avg_throughput_kbit_s" => "link share on the wire includes ESP, IP and TCP overhead; cut sessions are not counted".into(),
        "avg_session_delay_s" if p.spec.size != SEED_SESSION => format!(
            "our sessions are {} instead of 10 MB; scaled to 10 MB ours is {:.0} s",
            bytes(p.spec.size),
            v * SEED_SESSION as f64 / p.spec.size as f64
        ),
        "avg_session_delay_s" if close => String::new(),
        "avg_session_delay_s" => "follows the throughput (same 10 MB sessions)".into(),
        "ike_rekey_delay_s" | "ipsec_rekey_delay_s" => {
            // IKEv1 (the seed): 3 round trips for the IKE SA, 2 for the IPsec SA.
            let (k, rtt) = if key == "ike_rekey_delay_s" {
                (3.0, p.ike_rekey_rtt_s)
            } else {
                (2.0, p.child_rekey_rtt_s)
            };
            let agg = seed_at(seed, "avg_throughput_kbit_s", i).map_or(f64::NAN, |t| t * 10.0);
            let resent = if p.ike_resent > 0 {
                format!(
                    "; {} IKE request(s) lost in the full queue and resent by the node's timer",
                    p.ike_resent
                )
            } else {
                String::new()
            };
            let ours = if p.cap_pct.is_some() {
                "capped gw1 answers in its next 1 ms slot of each 100 ms".to_string()
            } else {
                format!("2 round trips of ≈ {} (50 ms tbf queue){resent}", ms(rtt))
            };
            format!(
                "seed: {k} round trips of {:.2} s, the time ≈ {:.0} kB of queued FTP data take at its {} kbit/s (the rekey waits behind the data); ours: {ours}",
                theirs / k,
                theirs / k * agg / 8.0,
                num(agg),
            )
        }
        "packets_dropped_no_sa" if v == 0.0 => "make-before-break: the new inbound SA is in before the peer sends on it, the old one stays until the DELETE; no traffic before the first SA".into(),
        "packets_dropped_no_sa" => "⚠ packets lost for lack of an SA: see the gateways' logs".into(),
        _ => String::new(),
    }
}

/// The seed's Table 1 beside ours: one row per rate and column.
pub fn seed_md(points: &[PointResult], seed: &SeedFigures) -> String {
    let Some(t) = &seed.table else {
        return format!(
            "Seed figures absent ({}): {}. Our figures stand alone.\n",
            seed.source, seed.note
        );
    };
    let rates: Vec<f64> = t
        .get("link_mbit_s")
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default();
    let find = |capped: bool, mbit: f64| {
        points.iter().find(|p| {
            p.cap_pct.is_some() == capped
                && p.spec.rate_bps.is_some_and(|r| (r as f64 - mbit * 1e6).abs() < 1.0)
        })
    };
    let mut s = String::from(
        "| link | column | seed | ours | ours ÷ seed | capped gw1 | capped ÷ seed | reading |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (i, mbit) in rates.iter().enumerate() {
        let (u, c) = (find(false, *mbit), find(true, *mbit));
        for (key, label) in COLUMNS {
            let Some(theirs) = seed_at(seed, key, i) else { continue };
            let cell = |p: Option<&PointResult>| {
                let v = p.and_then(|p| ours(p, key));
                let ratio = v
                    .filter(|_| theirs != 0.0)
                    .map_or("–".into(), |v| format!("{:.3}", v / theirs));
                (o(v), ratio)
            };
            let ((uv, ur), (cv, cr)) = (cell(u), cell(c));
            let read = u.or(c).map_or("not measured".into(), |p| reading(key, theirs, p, i, seed));
            let _ = writeln!(
                s,
                "| {} Mbit/s | {label} | {} | {uv} | {ur} | {cv} | {cr} | {read} |",
                num(*mbit),
                num(theirs)
            );
        }
    }
    s
}

/// Where throughput stops following the link.
pub fn crossover_md(points: &[PointResult]) -> String {
    let mut s = String::new();
    for (capped, name) in [(false, "hipsec (uncapped)"), (true, "capped gw1")] {
        let ps: Vec<&PointResult> =
            points.iter().filter(|p| p.cap_pct.is_some() == capped).collect();
        if ps.is_empty() {
            continue;
        }
        let bound: Vec<String> = ps
            .iter()
            .map(|p| {
                let b = match link_bound(p) {
                    Some(true) => "link-bound",
                    Some(false) => "CPU-bound",
                    None => "no link limit",
                };
                format!(
                    "{} → {} Mbit/s on the wire ({b}, gw1 {} % CPU)",
                    p.spec.link,
                    num(p.wire_mbit_s),
                    num(p.gw1_cpu_pct)
                )
            })
            .collect();
        let cpu_bound: Vec<&&PointResult> =
            ps.iter().filter(|p| link_bound(p) != Some(true)).collect();
        let lo = cpu_bound.iter().map(|p| p.wire_mbit_s).fold(f64::NAN, f64::min);
        let hi = cpu_bound.iter().map(|p| p.wire_mbit_s).fold(f64::NAN, f64::max);
        let first_cpu = cpu_bound.iter().filter_map(|p| p.spec.rate_bps).min();
        let last_link =
            ps.iter().filter(|p| link_bound(p) == Some(true)).filter_map(|p| p.spec.rate_bps).max();
        let _ = writeln!(s, "- **{name}**: {}.", bound.join("; "));
        let cap = ps
            .first()
            .and_then(|p| p.cap_pct)
            .map_or(String::new(), |c| format!(" at {c:.2} % of one core"));
        let range = if capped && (hi - lo).abs() > 0.25 * hi {
            format!(
                "{}–{} Mbit/s on the wire, rising with the link: the cap runs the gateway 1 ms in each 100 ms and its bursts overflow a slow link's 50 ms queue",
                num(lo),
                num(hi)
            )
        } else {
            format!("≈ {} Mbit/s on the wire", num(hi))
        };
        let text = match (last_link, first_cpu, hi.is_finite()) {
            (Some(l), Some(c), true) if c > l => format!(
                "link-bound up to {} Mbit/s, bounded by the gateway from {} Mbit/s on ({range}).",
                num(l as f64 / 1e6),
                num(c as f64 / 1e6)
            ),
            (_, None, true) => {
                format!(
                    "link-bound at every shaped rate; without a link limit the gateways carry {range}."
                )
            }
            (Some(l), None, false) => {
                format!(
                    "link-bound at every shaped rate measured (up to {} Mbit/s).",
                    num(l as f64 / 1e6)
                )
            }
            (_, _, true) => format!("bounded by the gateway at the rates measured ({range})."),
            _ => "no point carried traffic.".into(),
        };
        let _ = writeln!(s, "  Crossover{cap}: {text}");
    }
    let _ = writeln!(
        s,
        "- **Seed**: 141.9 → 389.7 → 558.7 kbit/s per session at 1.5, 4, 6 Mbit/s, then flat: crossover at ≈ 5.6 Mbit/s of payload ({} Mbit/s on the wire is the cap's target).",
        num(CAP_TARGET_WIRE_BPS / 1e6)
    );
    s
}

/// The report's sections.
pub fn sections(points: &[PointResult], seed: &SeedFigures) -> Vec<Section> {
    let setup: Vec<f64> = points.iter().filter_map(|p| p.ike_setup_s).collect();
    let mut setup_md = String::new();
    if let Some(m) = super::point::median_of(&setup) {
        let msgs = points.first().map_or(0, |p| p.ike_setup_messages);
        let _ = writeln!(
            setup_md,
            "IKEv2 brings the IKE SA and the first CHILD SA up in {msgs} messages (2 round trips: IKE_SA_INIT, IKE_AUTH), median {} over {} points (capture on gw1, request out to response in). The seed's IKEv1 needed 6 messages (3 round trips) for the IKE SA and 3 more for the IPsec SA. A CHILD or IKE rekey is one CREATE_CHILD_SA exchange (2 messages) plus the DELETE of the old SA (2 messages).",
            ms(Some(m)),
            setup.len()
        );
    }
    let mut v = vec![
        Section { title: "Table 1, ours".into(), body: table_md(points) },
        Section { title: "Seed's Table 1 beside ours".into(), body: seed_md(points, seed) },
        Section {
            title: "Crossover: link-bound to gateway-bound".into(),
            body: crossover_md(points),
        },
    ];
    if !setup_md.is_empty() {
        v.push(Section { title: "IKE SA set-up".into(), body: setup_md });
    }
    v
}

/// Notes: topology, scaling, definitions, what the node does not report.
pub fn notes(points: &[PointResult], full: bool) -> Vec<String> {
    let mut n = vec![
        "Topology: c — gw1 — r — gw2 — s in network namespaces on one kernel; ten TCP clients in c, the sink in s; hipsec nodes on gw1 and gw2 as IKEv2 security gateways (PSK, aes128gcm16-prfsha256-x25519, ESP aes128gcm16 in UDP 4500, tunnel 10.0.1.0/24 ↔ 10.0.2.0/24). The link between the gateways is r, with tc tbf (rate, burst 5 ms at the rate, 3.2–64 kB, latency 50 ms) on both of its interfaces; unlimited = no qdisc.".to_string(),
        "Only gw1 rekeys (gw2's rekey times are 0 = never), as the seed's 'Initiator' columns count. A fresh topology and fresh gateways per point; traffic starts once the first CHILD SA is up and a TCP connection went through it.".into(),
        "Columns: sessions = sessions started in the window and completed (connect, send, close, the sink acknowledges the byte count); sessions running at the window's end may finish within the drain time, cut = still running then, not counted. Avg session delay = mean of connect to acknowledgement; avg throughput = session size / avg delay (the seed's relation: 10 MB / 563.802 s = 141.894 kbit/s). Retransmissions = TCP RetransSegs of the clients' and the sink's namespaces over the window. Rekeys and their delays: CREATE_CHILD_SA exchanges in a tcpdump capture on gw1's outer link whose request left in the window; delay = median from the request to the response of the DELETE that follows (the seed's two round trips), 'req→resp' to the response alone; 'node' = the node's own median from request to new pair sending (status `our_rekey_delay_median_us`, over the node's life). No-SA drops = `drops.no_sa` of both gateways over the window; other drops = the other counters a rekey could move (no_policy, sa_expired, replayed, too_old, integrity_failed). Wire Mbit/s = ESP bytes r sent towards gw2 and gw1 CPU % = its utime + stime, both over the start window (all clients busy); a shaped point is link-bound when the wire carries ≥ 85 % of the rate.".into(),
        "What the node does not give and is measured from outside: the IKE rekey's start and delay (the node logs only `ike-sa-rekeyed` at the end, and times only CHILD rekeys), so IKE rekeys are found and timed in the capture; the log's `ike-sa-rekeyed` SPIs tell which exchange was the IKE rekey. Counts from the log are in the JSON (logged_ike_rekeys, logged_child_rekeys) as a cross-check.".into(),
    ];
    let p0 = points.first();
    if full {
        n.push(format!(
            "--full: the seed's 10 MB sessions at every rate; sessions start for three sessions' worth at the fair share (at least 120 s) and may finish within two more; CHILD rekey every {} s (− up to {} s), IKE rekey every {} s. The seed ran ≈ 45 h per rate; counts scale with run length.",
            p0.map_or(10.0, |p| p.spec.child_rekey_ms as f64 / 1e3),
            p0.map_or(2.0, |p| p.spec.rand_ms as f64 / 1e3),
            p0.map_or(30.0, |p| p.spec.ike_rekey_ms as f64 / 1e3)
        ));
    } else {
        n.push(format!(
            "--quick scaling: sessions start for {} s (and may finish within 4 s more); a session is what one of the ten clients moves in 2 s at its fair share of the link (the capped series: of what the capped gw1 is expected to carry), at least 16 kB and at most the seed's 10 MB (so 37.5 kB at 1.5 Mbit/s, 250 kB at 10 Mbit/s, 2.5 MB at 100 Mbit/s, 10 MB at 1 Gbit/s and unlimited); CHILD rekey every {} s (− up to {} s), IKE rekey every {} s. Session delays therefore scale with the size (the seed's table reads at 10 MB); throughputs and rekey delays compare directly; counts scale with the run's length. --full uses 10 MB sessions.",
            p0.map_or(7.0, |p| p.spec.duration_ms as f64 / 1e3),
            p0.map_or(0.7, |p| p.spec.child_rekey_ms as f64 / 1e3),
            p0.map_or(0.2, |p| p.spec.rand_ms as f64 / 1e3),
            p0.map_or(2.5, |p| p.spec.ike_rekey_ms as f64 / 1e3)
        ));
    }
    if let Some(c) = points.iter().find_map(|p| p.cap_note.clone()) {
        n.push(format!("Capped gw1: {c}; its data path runs as ordinary threads (`[data-path] scheduling = \"other\"`), since SCHED_FIFO threads are outside the CFS quota; the uncapped gateways use the node's default SCHED_FIFO."));
    }
    let errors: Vec<String> = points
        .iter()
        .flat_map(|p| {
            p.session_errors.iter().map(move |e| format!("{} {}: {e}", p.spec.series, p.spec.link))
        })
        .take(5)
        .collect();
    if !errors.is_empty() {
        n.push(format!("Failed sessions (first few): {}.", errors.join("; ")));
    }
    n
}

/// Bar charts: session throughput and rekey delays at the seed's rates, wire rate per link.
pub fn charts(points: &[PointResult], seed: &SeedFigures) -> Vec<Chart> {
    let at = |capped: bool, rate: u64| {
        points.iter().find(|p| p.cap_pct.is_some() == capped && p.spec.rate_bps == Some(rate))
    };
    let seed_rates: Vec<f64> = seed
        .table
        .as_ref()
        .and_then(|t| t.get("link_mbit_s"))
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default();
    let mut thr = Vec::new();
    let mut delay = Vec::new();
    for (i, mbit) in seed_rates.iter().enumerate() {
        let rate = (mbit * 1e6).round() as u64;
        let mut bars = Vec::new();
        let mut d = Vec::new();
        if let Some(v) = seed_at(seed, "avg_throughput_kbit_s", i) {
            bars.push(("seed".to_string(), v, 0.0));
        }
        for (capped, name) in [(false, "hipsec"), (true, "capped gw1")] {
            if let Some(v) = at(capped, rate).and_then(|p| p.avg_kbit_s) {
                bars.push((name.to_string(), v, 0.0));
            }
        }
        for (key, name) in [("ike_rekey_delay_s", "IKE"), ("ipsec_rekey_delay_s", "CHILD")] {
            if let Some(v) = seed_at(seed, key, i) {
                d.push((format!("seed {name}"), v * 1e3, 0.0));
            }
            if let Some(v) = at(false, rate).and_then(|p| ours(p, key)) {
                d.push((format!("hipsec {name}"), v * 1e3, 0.0));
            }
        }
        thr.push((format!("{} Mbit/s", num(*mbit)), bars));
        delay.push((format!("{} Mbit/s", num(*mbit)), d));
    }
    let mut wire = Vec::new();
    for p in points.iter().filter(|p| p.cap_pct.is_none()) {
        let mut bars = vec![("hipsec".to_string(), p.wire_mbit_s, 0.0)];
        if let Some(c) = points.iter().find(|c| c.cap_pct.is_some() && c.spec.link == p.spec.link) {
            bars.push(("capped gw1".to_string(), c.wire_mbit_s, 0.0));
        }
        if p.spec.rate_bps.is_some_and(|r| r <= 100_000_000) {
            wire.push((p.spec.link.clone(), bars));
        }
    }
    vec![
        Chart {
            file: "session_throughput.svg".into(),
            title: "Average session throughput at the seed's link rates".into(),
            unit: "kbit/s".into(),
            groups: thr,
        },
        Chart {
            file: "rekey_delay.svg".into(),
            title: "Rekey delay (median, request to end of DELETE)".into(),
            unit: "ms".into(),
            groups: delay,
        },
        Chart {
            file: "wire_rate.svg".into(),
            title: "ESP on the wire towards gw2, uncapped vs capped gw1 (links up to 100 Mbit/s)"
                .into(),
            unit: "Mbit/s".into(),
            groups: wire,
        },
    ]
}
