//! Markdown rendering of a `Report`: the results table, the iperf3 cross-check, pending modes, and
//! the seed's figures beside ours with a one-line reading of each difference.

use super::model::{Case, Report};
use super::number::num;
use crate::topology::Family;
use crate::traffic::TestKind;
use std::fmt::Write;

fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_else(|| "–".into())
}

fn row(c: &Case, seed: &str) -> String {
    let (mean, ci) = c
        .summary
        .map(|s| (num(s.mean), format!("± {} (n={})", num(s.ci95), s.n)))
        .unwrap_or(("–".into(), String::new()));
    let size = if c.test.is_stream() {
        c.msg_size.to_string()
    } else {
        format!("{}/{}", c.msg_size, c.resp_size)
    };
    let iperf = c.iperf3.as_ref().map_or("–".into(), |x| {
        format!(
            "{} ({:+.1} %{})",
            num(x.iperf3_median),
            100.0 * (x.ours_median / x.iperf3_median - 1.0),
            if x.flagged { " ⚠" } else { "" }
        )
    });
    let rtt = c.rtt.map_or("–".into(), |r| {
        format!("{} / {} / {}", num(r.mean_us), num(r.p50_us), num(r.p99_us))
    });
    let (cpu, sdm, sdp, sdh) =
        c.cpu.as_ref().map_or(("–".into(), "–".into(), "–".into(), "–".into()), |u| {
            (
                format!("{} ({} si)", num(u.machine_pct), num(u.softirq_pct)),
                format!("{} {}", opt(u.sd_machine), u.sd_unit),
                opt(u.sd_procs),
                opt(u.sd_watched),
            )
        });
    format!(
        "| {} | {} | {} | {} | {} | {} {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        c.mode,
        c.family,
        c.link,
        c.test,
        size,
        mean,
        ci,
        c.test.unit(),
        opt(c.ratio_vs_none),
        seed,
        iperf,
        rtt,
        cpu,
        sdm,
        sdp,
        sdh
    )
}

fn find<'a>(
    r: &'a Report,
    mode: &str,
    fam: Family,
    link: &str,
    test: TestKind,
) -> Option<&'a Case> {
    r.cases.iter().find(|c| c.mode == mode && c.family == fam && c.link == link && c.test == test)
}

/// A case by everything that names it.
fn find_sized<'a>(
    r: &'a Report,
    mode: &str,
    like: &Case,
    size: (usize, usize),
) -> Option<&'a Case> {
    r.cases.iter().find(|c| {
        c.mode == mode
            && c.family == like.family
            && c.link == like.link
            && c.test == like.test
            && (c.msg_size, c.resp_size) == size
    })
}

/// The seed table's key for a mode: "ah", "esp" or "ah_esp" (ESP with any suite counts as ESP).
fn seed_key(mode: &str) -> Option<&'static str> {
    if mode == "AH" {
        Some("ah")
    } else if mode.starts_with("AH+ESP") {
        Some("ah_esp")
    } else if mode.starts_with("ESP") {
        Some("esp")
    } else {
        None
    }
}

/// The seed's throughput ratio to plain for this case's mode and test, as written in the seed.
fn seed_ratio(r: &Report, c: &Case) -> Option<serde_json::Value> {
    let table = r.seed.as_ref()?.table.as_ref()?;
    let key = match c.test {
        TestKind::TcpStream => "tcp_stream_throughput_ratio_vs_plain",
        TestKind::UdpStream => "udp_stream_throughput_ratio_vs_plain",
        _ => return None,
    };
    table.get(key)?.get(seed_key(&c.mode)?).cloned()
}

fn seed_cell(r: &Report, c: &Case) -> String {
    match seed_ratio(r, c) {
        Some(serde_json::Value::Number(n)) => n.as_f64().map_or("–".into(), num),
        Some(serde_json::Value::String(s)) => s,
        _ if c.mode != "none" && !c.test.is_stream() => "see RR".into(),
        _ => "–".into(),
    }
}

fn sd_hipsec(c: &Case) -> Option<f64> {
    c.cpu.as_ref().and_then(|u| u.sd_watched)
}

fn sd_procs(c: &Case) -> Option<f64> {
    c.cpu.as_ref().and_then(|u| u.sd_procs)
}

/// One line reading our ratio `ours` against the seed's `seed` for case `c` (its "none" twin `base`).
fn reading(c: &Case, base: Option<&Case>, ours: f64, seed: f64) -> String {
    let q = ours / seed;
    let sd = match (sd_procs(c), base.and_then(sd_procs), sd_hipsec(c)) {
        (Some(m), Some(n), Some(h)) => format!(
            " (SD procs {} vs {} µs/KB in none, {} of it in the hipsec nodes)",
            num(m),
            num(n),
            num(h)
        ),
        _ => String::new(),
    };
    if ours < 0.01 {
        "nothing arrived in the measured window: the UDP sender floods the TUN faster than the node drains it (no flow control), and the 2 cores are all busy".to_string()
    } else if (0.8..=1.25).contains(&q) {
        format!("reproduced: within 25 % of the seed{sd}")
    } else if c.link != "unlimited" && ours > 0.8 {
        format!(
            "the {} link, not the CPU, bounds both modes: only the per-packet header overhead shows; the seed's 1999 PCs were CPU-bound at fast Ethernet",
            c.link
        )
    } else if ours > seed {
        format!(
            "smaller penalty than in 1999: AES-NI/SHA instructions make the crypto cheap; what is left is the userspace node's per-packet work{sd}"
        )
    } else {
        format!(
            "larger penalty: plain traffic moves 64 KB GSO segments inside the kernel while the node handles every MTU-sized packet in userspace (TUN + socket){sd}"
        )
    }
}

fn seed_section(r: &Report, out: &mut String) {
    let _ = writeln!(out, "\n## Seed figures beside ours\n");
    let Some(seed) = &r.seed else {
        let _ = writeln!(out, "No seed figures for this scenario.");
        return;
    };
    let Some(table) = &seed.table else {
        let _ = writeln!(
            out,
            "Seed figures absent ({}): {}. Our figures stand alone.",
            seed.source, seed.note
        );
        return;
    };
    let get = |k: &str, sub: &str| {
        table.get(k).and_then(|v| v.get(sub)).map(|v| v.to_string().trim_matches('"').to_string())
    };
    let _ = writeln!(out, "Source: `{}`.\n", seed.source);
    let _ = writeln!(out, "| figure | seed | ours | reading |\n|---|---|---|---|");
    // STREAM throughput ratios: every protected mode, link and family (UDP at the seed's 1024 B).
    let stream = |c: &&Case| {
        c.mode != "none"
            && (c.test == TestKind::TcpStream
                || (c.test == TestKind::UdpStream && c.msg_size == 1024))
    };
    for c in r.cases.iter().filter(stream) {
        let base = find_sized(r, "none", c, (c.msg_size, c.resp_size));
        let label =
            format!("{} {} B {} {}: {} / none", c.test, c.msg_size, c.family, c.link, c.mode);
        let Some(ours) = c.ratio_vs_none else {
            let _ = writeln!(
                out,
                "| {label} | {} | – | no figure (the test or its none twin failed) |",
                seed_cell(r, c)
            );
            continue;
        };
        let text = match seed_ratio(r, c) {
            Some(serde_json::Value::Number(n)) => {
                let s = n.as_f64().unwrap_or(f64::NAN);
                format!("| {label} | {} | {} | {} |", num(s), num(ours), reading(c, base, ours, s))
            }
            Some(serde_json::Value::String(s)) => {
                // AH+ESP: the seed only says "slightly below ESP"; compare with our ESP of the
                // same suite.
                let esp_mode = c.mode.replacen("AH+ESP", "ESP", 1);
                let esp = find_sized(r, &esp_mode, c, (c.msg_size, c.resp_size));
                let overlap = |e: &Case| match (c.summary, e.summary) {
                    (Some(a), Some(b)) => (a.mean - b.mean).abs() <= a.ci95 + b.ci95,
                    _ => true,
                };
                let read = match esp.and_then(|e| e.ratio_vs_none.map(|x| (e, x))) {
                    _ if ours < 0.01 => reading(c, base, ours, f64::NAN),
                    Some((_, e)) if ours <= e * 1.02 && ours >= e * 0.7 => {
                        format!("reproduced: {} of our {esp_mode} ({})", num(ours / e), num(e))
                    }
                    Some((x, e)) if overlap(x) => format!(
                        "not significant: {} of our {esp_mode} ({}), the 95 % intervals overlap",
                        num(ours / e),
                        num(e)
                    ),
                    Some((_, e)) if ours < e => format!(
                        "well below our {esp_mode} ({}): the AH pass over every packet costs about as much as the ESP one (compare SD hipsec)",
                        num(e)
                    ),
                    Some((_, e)) => format!(
                        "above our {esp_mode} ({}): the two runs met different background load (see the note) or CPU placement",
                        num(e)
                    ),
                    None => format!("no {esp_mode} run to compare with"),
                };
                format!("| {label} | {s} | {} | {read} |", num(ours))
            }
            _ => format!("| {label} | – | {} | the seed gives no ratio for this mode |", num(ours)),
        };
        let _ = writeln!(out, "{text}");
    }
    if !r.cases.iter().any(|c| stream(&c)) {
        for (proto, key) in [
            ("TCP", "tcp_stream_throughput_ratio_vs_plain"),
            ("UDP", "udp_stream_throughput_ratio_vs_plain"),
        ] {
            for (mode, sub) in [("AH", "ah"), ("ESP", "esp"), ("AH+ESP", "ah_esp")] {
                let why = r
                    .pending
                    .iter()
                    .find(|p| p.mode.starts_with(mode))
                    .map_or("not run".to_string(), |p| format!("pending: {}", p.reason));
                let _ = writeln!(
                    out,
                    "| {proto}_STREAM {mode} / none | {} | pending | {why} |",
                    get(key, sub).unwrap_or_else(|| "–".into())
                );
            }
        }
    }
    // Request/response: the seed says ESP beats AH on TCP_RR and small UDP_RR, AH beats ESP on
    // large UDP_RR.
    let rr_claim = table
        .get("request_response")
        .map_or(String::new(), |v| v.to_string().trim_matches('"').to_string());
    for ah in r.cases.iter().filter(|c| c.mode == "AH" && !c.test.is_stream()) {
        let Some(esp) = find_sized(r, "ESP", ah, (ah.msg_size, ah.resp_size)) else { continue };
        let (Some(a), Some(e)) = (ah.summary, esp.summary) else { continue };
        let large = ah.test == TestKind::UdpRr && ah.msg_size >= 1024;
        let seed_says = if large { "AH > ESP" } else { "ESP > AH" };
        let ours_esp_wins = e.mean > a.mean;
        let overlap = (e.mean - a.mean).abs() <= e.ci95 + a.ci95;
        let read = if overlap {
            "not significant: the 95 % intervals overlap".to_string()
        } else if ours_esp_wins != large {
            "reproduced".to_string()
        } else {
            "differs: per small packet the node's TUN and socket work, not the transform, sets the RTT here (compare SD hipsec)".to_string()
        };
        let _ = writeln!(
            out,
            "| {} {}/{} B {} {}: ESP vs AH (trans/s) | {seed_says} | ESP {} vs AH {} | {read} |",
            ah.test,
            ah.msg_size,
            ah.resp_size,
            ah.family,
            ah.link,
            num(e.mean),
            num(a.mean)
        );
    }
    if !rr_claim.is_empty() {
        let _ =
            writeln!(out, "| request/response (seed's words) | {rr_claim} | see rows above | |");
    }
    for link in ["unlimited", "100mbit"] {
        let (v4, v6) = (
            find(r, "none", Family::V4, link, TestKind::TcpStream),
            find(r, "none", Family::V6, link, TestKind::TcpStream),
        );
        if let (Some(a), Some(b)) = (v4.and_then(|c| c.summary), v6.and_then(|c| c.summary)) {
            let ratio = b.mean / a.mean;
            let overlap = (a.mean - b.mean).abs() <= a.ci95 + b.ci95;
            let reading = if (ratio - 1.0).abs() < 0.1 {
                "reproduced: within 10 %"
            } else if overlap {
                "not significant: the 95 % intervals overlap (run --full)"
            } else {
                "differs: see CPU and service demand"
            };
            let _ = writeln!(
                out,
                "| TCP_STREAM IPv6 / IPv4, none, {link} | {} | {} | {reading} |",
                table
                    .get("ipv6_vs_ipv4")
                    .map_or("–".into(), |v| v.to_string().trim_matches('"').to_string()),
                num(ratio)
            );
        }
    }
    if let Some(c) =
        find(r, "none", Family::V4, "100mbit", TestKind::TcpStream).and_then(|c| c.summary)
    {
        let _ = writeln!(
            out,
            "| TCP_STREAM none on a 100 Mbit/s link (Mbit/s) | not in the seed figures | {} | tbf counts frames without preamble/IFG, so 1448 B of payload per 1514 B frame ≈ 95.6 Mbit/s |",
            num(c.mean)
        );
    }
    // Absolute AH+ESP figures: the seed's fast-Ethernet PCs against ours on the 100 Mbit/s link
    // (else the unlimited one).
    for (proto, test) in [("udp", TestKind::UdpStream), ("tcp", TestKind::TcpStream)] {
        let theirs = get("ah_esp_throughput_mbit_s", proto).unwrap_or_else(|| "–".into());
        let ours = ["100mbit", "unlimited"].iter().find_map(|l| {
            r.cases
                .iter()
                .find(|c| {
                    c.mode == "AH+ESP" && c.link == *l && c.test == test && c.family == Family::V6
                })
                .and_then(|c| c.summary.map(|s| (*l, s.mean)))
        });
        let (cell, read) = match ours {
            Some((l, v)) => (
                format!("{} ({l}, IPv6)", num(v)),
                if l == "100mbit" && v > 50.0 {
                    "the link bounds us, the CPU bounded them: 1999 PCs without crypto instructions vs a 2020s core with AES-NI".to_string()
                } else {
                    "1999 PCs without crypto instructions vs a 2020s core with AES-NI".to_string()
                },
            ),
            None => (
                "pending".into(),
                r.pending
                    .iter()
                    .find(|p| p.mode.starts_with("AH+ESP"))
                    .map_or("AH+ESP not run".into(), |p| format!("pending: {}", p.reason)),
            ),
        };
        let _ = writeln!(out, "| AH+ESP {} absolute (Mbit/s) | {theirs} | {cell} | {read} |", test);
    }
}

/// The whole Markdown report.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let m = &r.machine;
    let _ = writeln!(out, "# hipsec lab — {} ({})\n", r.scenario, r.profile);
    if r.cases.is_empty() {
        // A scenario with its own tables (sections) and no netperf cases.
        let _ = writeln!(
            out,
            "Machine: {} × {} cores, Linux {}, hipsec {}. Wall time {:.0} s.",
            m.cpu_model,
            m.cores,
            m.kernel,
            m.hipsec_commit.as_deref().unwrap_or("(no git)"),
            r.wall_s
        );
    } else {
        let _ = writeln!(
            out,
            "Machine: {} × {} cores, Linux {}, hipsec {}. Each test: {} ms warm-up, {} ms measured, {} repetitions; \
             mean ± 95 % CI (t·s/√n). Wall time {:.0} s.\n",
            m.cpu_model,
            m.cores,
            m.kernel,
            m.hipsec_commit.as_deref().unwrap_or("(no git)"),
            r.params.warmup_ms,
            r.params.duration_ms,
            r.params.repetitions,
            r.wall_s
        );
        let _ = writeln!(
            out,
            "| mode | IP | link | test | size B | result | unit | vs none | seed vs none | iperf3 (ours Δ) | RTT µs mean/p50/p99 | CPU machine % (softirq) | SD machine | SD procs | SD hipsec |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for c in &r.cases {
            out.push_str(&row(c, &seed_cell(r, c)));
        }
        let _ = writeln!(
            out,
            "\nSTREAM results are the receiver's rate (as netperf reports UDP_STREAM); SD = service demand, \
             CPU µs per KB (1024 B) for STREAM and per transaction for RR; \"SD machine\" charges all busy CPU \
             (sender, receiver, routers and softirq share one kernel), \"SD procs\" the traffic processes and the hipsec nodes, \"SD hipsec\" the hipsec nodes alone; \"seed vs none\" is the seed's ratio for the mode (RR: see the seed section)."
        );
    }
    let flagged: Vec<String> = r
        .cases
        .iter()
        .filter(|c| c.iperf3.as_ref().is_some_and(|x| x.flagged))
        .map(Case::label)
        .collect();
    if !flagged.is_empty() {
        let _ = writeln!(
            out,
            "\n⚠ Ours and iperf3 disagree by more than 10 % on: {}.",
            flagged.join("; ")
        );
    }
    if !r.pending.is_empty() {
        let _ = writeln!(out, "\n## Pending modes\n");
        for p in &r.pending {
            let _ = writeln!(out, "- {}: pending: {}", p.mode, p.reason);
        }
    }
    if r.sections.is_empty() || r.scenario == "ipsec-netperf" {
        seed_section(r, &mut out);
    }
    for s in &r.sections {
        let _ = writeln!(out, "\n## {}\n\n{}", s.title, s.body.trim_end());
    }
    if !r.notes.is_empty() {
        let _ = writeln!(out, "\n## Notes\n");
        for n in &r.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    out
}
