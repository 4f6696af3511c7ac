//! Markdown rendering of a `Report`: the results table, the iperf3 cross-check, pending modes, and
//! the seed's figures beside ours with a one-line reading of each difference.

use super::{Case, Report};
use crate::topology::Family;
use crate::traffic::TestKind;
use std::fmt::Write;

/// A number with about three significant digits.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "–".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_else(|| "–".into())
}

fn row(c: &Case) -> String {
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
    let (cpu, sdm, sdp) = c.cpu.as_ref().map_or(("–".into(), "–".into(), "–".into()), |u| {
        (
            format!("{} ({} si)", num(u.machine_pct), num(u.softirq_pct)),
            format!("{} {}", opt(u.sd_machine), u.sd_unit),
            opt(u.sd_procs),
        )
    });
    format!(
        "| {} | {} | {} | {} | {} | {} {} | {} | {} | {} | {} | {} | {} | {} |\n",
        c.mode,
        c.family,
        c.link,
        c.test,
        size,
        mean,
        ci,
        c.test.unit(),
        opt(c.ratio_vs_none),
        iperf,
        rtt,
        cpu,
        sdm,
        sdp
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
    for (proto, key) in [
        ("TCP", "tcp_stream_throughput_ratio_vs_plain"),
        ("UDP", "udp_stream_throughput_ratio_vs_plain"),
    ] {
        for (mode, sub) in [("AH", "ah"), ("ESP", "esp"), ("AH+ESP", "ah_esp")] {
            let ran = r.cases.iter().find(|c| {
                c.mode == mode
                    && c.test.to_string().starts_with(proto)
                    && c.test.is_stream()
                    && c.ratio_vs_none.is_some()
            });
            let ours = ran.and_then(|c| c.ratio_vs_none).map_or("pending".into(), num);
            let reading = if ran.is_some() { "" } else { "needs the hipsec node (issue 3)" };
            let _ = writeln!(
                out,
                "| {proto}_STREAM {mode} / none | {} | {ours} | {reading} |",
                get(key, sub).unwrap_or_else(|| "–".into())
            );
        }
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
    let _ = writeln!(
        out,
        "| AH+ESP absolute (Mbit/s) | UDP {} / TCP {} | pending | 1999 PCs vs a 2020s core with AES-NI: expect the cipher to stop being the bottleneck |",
        get("ah_esp_throughput_mbit_s", "udp").unwrap_or_default(),
        get("ah_esp_throughput_mbit_s", "tcp").unwrap_or_default()
    );
}

/// The whole Markdown report.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let m = &r.machine;
    let _ = writeln!(out, "# hipsec lab — {} ({})\n", r.scenario, r.profile);
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
        "| mode | IP | link | test | size B | result | unit | vs none | iperf3 (ours Δ) | RTT µs mean/p50/p99 | CPU machine % (softirq) | SD machine | SD procs |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &r.cases {
        out.push_str(&row(c));
    }
    let _ = writeln!(
        out,
        "\nSTREAM results are the receiver's rate (as netperf reports UDP_STREAM); SD = service demand, \
         CPU µs per KB (1024 B) for STREAM and per transaction for RR; \"SD machine\" charges all busy CPU \
         (sender, receiver, routers and softirq share one kernel), \"SD procs\" only the traffic processes."
    );
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
    seed_section(r, &mut out);
    if !r.notes.is_empty() {
        let _ = writeln!(out, "\n## Notes\n");
        for n in &r.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    out
}
