//! The carriers' I/O at several loads: the tunnel saturated at two packet sizes gives each
//! carrier's CPU beyond the engine as a fixed part per packet plus a part per byte; the tunnel
//! paced to two shares of its saturated rate gives what a packet costs beyond that at part
//! load, kept as the carrier's `by_rate` table (`sizing::load`).
//!
//! Why a table of measured costs and not a cost per system call or per wake-up: paced to a
//! tenth of its rate, the tunnel took 0.096 system calls per packet against 0.085 saturated,
//! and 0.022 wake-ups of the nodes' threads against 0.009, yet 1.62× the CPU per packet (2.79
//! against 1.72 µs; `hipsec bench tunnel --seconds 3 --rounds 1` with and without `--bitrate
//! 0.5`, and at `--bitrate 2`: 0.013 wake-ups, 2.33 µs). Charged at one cost each, the extra
//! wake-ups would cost 170 µs apiece at 2 Gbit/s and 86 µs at 0.5: no single cost per call or
//! per wake-up fits, so the model reads the measured cost at the workload's rate instead. The
//! wake-ups are kept beside it for the reader.

use crate::bench_tunnel;
use crate::calibrate::{TunnelWork, progress, tunnel_work};
use sizing::load::BatchPoint;
use sizing::profile::{IoCost, SuiteCost};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The MSS of the second saturated run: small packets, so that I/O per packet at two sizes
/// gives its fixed and per-byte parts.
const SMALL_MSS: u16 = 536;

/// The paced runs, as shares of the saturated run's rate (ESP in UDP, default MSS).
pub(crate) const PACED: [(&str, f64); 3] = [("paced50", 0.5), ("paced20", 0.2), ("paced1", 0.01)];

/// One run: per packet handled, its mean inner bytes, its wake-ups and the CPU ns beyond the
/// engine; the tunnel's data packets per second and Gbit/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct IoPoint {
    pub(crate) bytes: f64,
    pub(crate) wakeups: f64,
    pub(crate) io_ns: f64,
    pub(crate) packets_per_s: f64,
    pub(crate) gbps: f64,
}

fn point(w: &TunnelWork, gbps: f64) -> IoPoint {
    IoPoint {
        bytes: w.bytes / w.handled,
        wakeups: w.wakeups / w.handled,
        io_ns: ((w.cpu_ns - w.engine_ns) / w.handled).max(0.0),
        packets_per_s: w.data_pps,
        gbps,
    }
}

/// (intercept, slope) of the line through two (x, y) points; a flat line at their mean when
/// the x are too close to tell a slope, and never a negative part.
fn line_through(points: &[(f64, f64)]) -> (f64, f64) {
    let [(x0, y0), (x1, y1)] = points else {
        let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len().max(1) as f64;
        return (mean, 0.0);
    };
    if (x1 - x0).abs() < 64.0 {
        return ((y0 + y1) / 2.0, 0.0);
    }
    let slope = ((y1 - y0) / (x1 - x0)).max(0.0);
    let intercept = (y0 - slope * x0).max(0.0);
    (intercept, slope)
}

/// (per packet, per byte) through the saturated points, and each point's cost beyond that
/// (never below 0: a paced run is not cheaper per packet than a saturated one).
pub(crate) fn fit(saturated: &[IoPoint], all: &[IoPoint]) -> ((f64, f64), Vec<f64>) {
    let line: Vec<(f64, f64)> = saturated.iter().map(|p| (p.bytes, p.io_ns)).collect();
    let (fixed, per_byte) = line_through(&line);
    let extra = all.iter().map(|p| (p.io_ns - fixed - per_byte * p.bytes).max(0.0)).collect();
    ((fixed, per_byte), extra)
}

fn run(
    suite: &str,
    quick: bool,
    mss: Option<u16>,
    bitrate: Option<f64>,
) -> Result<bench_tunnel::BothReport, String> {
    let args = bench_tunnel::BenchTunnelArgs {
        suite: suite.into(),
        seconds: if quick { 2 } else { 4 },
        congestion: "cubic".into(),
        queues: 1,
        rounds: 1,
        parallel: 1,
        transport: bench_tunnel::TransportArg::Both,
        mss,
        bitrate,
        filter_rules: 0,
        keying: bench_tunnel::KeyingArg::Manual,
        vs_queues: None,
        json: true,
    };
    let stop = Arc::new(AtomicBool::new(false));
    match bench_tunnel::measure_all(&args, &stop)? {
        bench_tunnel::Output::Both(both) => Ok(*both),
        _ => Err("the tunnel bench did not run both carriers".into()),
    }
}

/// Each carrier's I/O, from tunnel runs with aes128gcm (its engine cost taken out).
pub(crate) fn carriers(
    suites: &BTreeMap<String, SuiteCost>,
    quick: bool,
    sources: &mut BTreeMap<String, String>,
) -> Result<BTreeMap<String, IoCost>, String> {
    let suite_name = "aes128gcm";
    let suite = suites.get(suite_name).ok_or("aes128gcm was not measured")?;
    let mut runs: Vec<(String, String, bench_tunnel::BothReport)> = Vec::new();
    for (name, mss) in [("full", None), ("full-mss536", Some(SMALL_MSS))] {
        progress(&format!(
            "two nodes in namespaces, iperf3 through the tunnel, ESP in UDP and over IP, MSS {}",
            mss.map_or("of the path".to_string(), |m| m.to_string())
        ));
        let flag = mss.map_or(String::new(), |m| format!(" --mss {m}"));
        runs.push((name.into(), flag, run(suite_name, quick, mss, None)?));
    }
    let full = runs.first().map_or(0.0, |r| r.2.udp.tunnel.gbps);
    if full <= 0.0 {
        return Err("the saturated tunnel run carried nothing".into());
    }
    for (name, share) in PACED {
        let gbps = (full * share).max(0.001);
        progress(&format!("the tunnel paced to {gbps:.2} Gbit/s ({:.0} %)", share * 100.0));
        runs.push((
            name.into(),
            format!(" --bitrate {gbps:.3}"),
            run(suite_name, quick, None, Some(gbps))?,
        ));
    }
    let mut out = BTreeMap::new();
    // ESP in UDP adds 8 bytes of UDP header (RFC 3948); raw ESP nothing.
    for (carrier, extra) in [("udp", 8.0), ("raw", 0.0)] {
        let mut points = Vec::new();
        let mut notes = Vec::new();
        for (name, flag, both) in &runs {
            let report = if carrier == "udp" { &both.udp } else { &both.raw };
            let w = tunnel_work(report, suite)?;
            let p = point(&w, report.tunnel.gbps);
            points.push(p);
            notes.push(format!(
                "{name}: hipsec bench tunnel --transport both --seconds {}{flag}: {:.2} Gbit/s, \
                 {:.0} packets of {:.0} B, {:.0} ns beyond the engine and {:.4} wake-ups per \
                 packet",
                report.seconds, report.tunnel.gbps, w.handled, p.bytes, p.io_ns, p.wakeups
            ));
        }
        // The first two runs are the saturated ones (two sizes); the first is the reference
        // of the paced runs' shares.
        let full_gbps = points.first().map_or(0.0, |p| p.gbps);
        let ((fixed, per_byte), extras) = fit(points.get(..2).unwrap_or(&[]), &points);
        let by_rate = runs
            .iter()
            .zip(points.iter().zip(&extras))
            .map(|((name, _, _), (p, &extra_ns))| {
                let b = BatchPoint {
                    share: if full_gbps > 0.0 { p.gbps / full_gbps } else { 1.0 },
                    packets_per_s: p.packets_per_s,
                    extra_ns,
                    wakeups_per_packet: p.wakeups,
                    gbps: p.gbps,
                };
                (name.clone(), b)
            })
            // The small-packet run is the per-byte fit's, not a rate of the default size.
            .filter(|(name, _)| name != "full-mss536")
            .collect();
        sources.insert(
            format!("carriers.{carrier}"),
            format!(
                "{}; per packet = {fixed:.0} ns + {per_byte:.3} ns per byte through the two \
                 saturated runs, plus at part load what each paced run cost beyond that \
                 ({}); TUN included",
                notes.join("; "),
                extras.iter().map(|e| format!("{e:.0} ns")).collect::<Vec<_>>().join(", ")
            ),
        );
        out.insert(
            carrier.to_string(),
            IoCost {
                rx_ns: fixed,
                tx_ns: fixed,
                per_byte_ns: per_byte,
                overhead_bytes: extra,
                by_rate,
            },
        );
    }
    out.insert("tun".into(), IoCost::flat(0.0, 0.0, 0.0, 0.0));
    sources.insert("carriers.tun".into(), "in each carrier's figure (see carriers.udp)".into());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(bytes: f64, wakeups: f64, io_ns: f64) -> IoPoint {
        IoPoint { bytes, wakeups, io_ns, packets_per_s: 0.0, gbps: 0.0 }
    }

    /// The line through the saturated points, and what each run costs beyond it.
    #[test]
    fn a_line_through_the_saturated_runs_and_the_rest_beyond_it() {
        let sat = [p(1400.0, 0.01, 580.0), p(560.0, 0.01, 412.0)];
        let paced = p(1400.0, 0.02, 900.0);
        let cheap = p(1400.0, 0.02, 500.0);
        let ((a, b), extra) = fit(&sat, &[sat[0], sat[1], paced, cheap]);
        assert!((a - 300.0).abs() < 1e-9 && (b - 0.2).abs() < 1e-12, "{a} {b}");
        assert!(extra[0].abs() < 1e-9 && extra[1].abs() < 1e-9, "{extra:?}");
        assert!((extra[2] - 320.0).abs() < 1e-9, "{extra:?}");
        assert_eq!(extra[3], 0.0, "never below the saturated cost");
    }

    #[test]
    fn a_line_through_two_points() {
        let (a, b) = line_through(&[(100.0, 300.0), (1100.0, 1300.0)]);
        assert!((a - 200.0).abs() < 1e-9 && (b - 1.0).abs() < 1e-9, "{a} {b}");
        // Too close to tell a slope: the mean, flat.
        assert_eq!(line_through(&[(1000.0, 10.0), (1010.0, 30.0)]), (20.0, 0.0));
        // A falling line would be a negative cost per byte: flat at zero slope.
        assert_eq!(line_through(&[(100.0, 500.0), (1000.0, 400.0)]).1, 0.0);
        assert_eq!(line_through(&[(5.0, 7.0)]), (7.0, 0.0));
    }
}
