//! Scenario `ipsec-netperf`, seed 004 (Ariga et al., KAME IPsec over IPv6): host — router — router
//! — host, IPsec end to end between the hosts, netperf's four tests over IPv4 and IPv6, unlimited
//! and 100 Mbit/s links. Protected modes plug in through `ModeHook` (the hipsec node).

pub mod compare;

use crate::error::LabError;
use crate::node::{Mode, ModeHook};
use crate::report::{
    Case, CaseCpu, CrossCheck, Machine, Pending, Report, SCHEMA, SeedFigures, mean_rtt,
};
use crate::scenario::common::{Progress, RunOptions, Scenario, background_load_pct, unix_now_s};
use crate::topology::{Family, Topology, TopologySpec, parse_rate};
use crate::traffic::runner::{CONTROL_PORT, RunParams, Target, TrafficServer, measure};
use crate::traffic::{Request, TestKind, iperf};
use std::net::SocketAddr;
use std::time::Instant;

pub const NAME: &str = "ipsec-netperf";
const SEED_TABLE: &str = "ipsec_ipv6_netperf";
const FAST_ETHERNET_BPS: u64 = 100_000_000;

/// The scenario in the registry.
#[derive(Debug, Clone, Copy)]
pub struct IpsecNetperf;

impl Scenario for IpsecNetperf {
    fn name(&self) -> &'static str {
        NAME
    }

    fn seed(&self) -> &'static str {
        "004"
    }

    fn summary(&self) -> &'static str {
        "IPsec none/AH/ESP/AH+ESP over IPv4 and IPv6, netperf STREAM and RR tests, unlimited and 100 Mbit/s"
    }

    fn run(&self, opts: &RunOptions, hook: &dyn ModeHook) -> Result<Report, LabError> {
        run(opts, hook)
    }

    fn comparisons(
        &self,
        report: &Report,
    ) -> Result<Vec<crate::report::compare::Comparison>, LabError> {
        Ok(compare::comparisons(report))
    }
}

/// The tests of a profile. Full: the seed's (1024/4096 B UDP messages) plus 1400 B, and 1 B /
/// large RR. Quick: one of each kind (TCP_STREAM, UDP_STREAM 1024 B, 1-byte TCP_RR and UDP_RR),
/// so that every mode fits in the 3-minute budget.
pub fn tests(full: bool) -> Vec<Request> {
    let r = |test, msg_size, resp_size| Request { test, msg_size, resp_size };
    if !full {
        return vec![
            r(TestKind::TcpStream, 16384, 1),
            r(TestKind::UdpStream, 1024, 1),
            r(TestKind::TcpRr, 1, 1),
            r(TestKind::UdpRr, 1, 1),
        ];
    }
    vec![
        r(TestKind::TcpStream, 16384, 1),
        r(TestKind::UdpStream, 1024, 1),
        r(TestKind::UdpStream, 4096, 1),
        r(TestKind::UdpStream, 1400, 1),
        r(TestKind::TcpRr, 1, 1),
        r(TestKind::TcpRr, 1024, 1024),
        r(TestKind::UdpRr, 1, 1),
        r(TestKind::UdpRr, 1024, 1024),
    ]
}

/// (params, iperf3 seconds, iperf3 omit seconds, iperf3 runs) of a profile. The iperf3
/// cross-check checks the traffic engine, so it runs in mode `none` only.
/// Quick: 4 modes × 2 links × 2 families × 4 tests × 3 × 0.6 s ≈ 2.5 min; full: 7 modes × 2 × 2 ×
/// 8 tests × 3 × 2.5 s ≈ 30 min (see `planned_s`).
fn profile(full: bool) -> (RunParams, u64, u64, usize) {
    if full {
        (RunParams { warmup_ms: 500, duration_ms: 2000, repetitions: 3 }, 5, 1, 1)
    } else {
        (RunParams { warmup_ms: 100, duration_ms: 500, repetitions: 3 }, 1, 0, 1)
    }
}

/// Seconds a client run costs beyond its warm-up and window (spawn, connect, report).
const CLIENT_OVERHEAD_S: f64 = 0.12;
/// Seconds to start a mode's nodes, check the tunnel, and stop them.
const MODE_SETUP_S: f64 = 1.5;

fn links(opts: &RunOptions) -> Result<Vec<(String, Option<u64>)>, LabError> {
    match opts.link.as_deref() {
        None => Ok(vec![("unlimited".into(), None), ("100mbit".into(), Some(FAST_ETHERNET_BPS))]),
        Some("unlimited") => Ok(vec![("unlimited".into(), None)]),
        Some(text) => Ok(vec![(text.to_ascii_lowercase(), Some(parse_rate(text)?))]),
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() { 0.0 } else { s[s.len() / 2] }
}

/// Runs the scenario and returns its report (not yet written).
pub fn run(opts: &RunOptions, hook: &dyn ModeHook) -> Result<Report, LabError> {
    let links = links(opts)?; // options first, before any privilege or namespace work
    let bin = opts.traffic_bin()?;
    let (params, iperf_s, iperf_omit, iperf_runs) = profile(opts.full);
    let started = Instant::now();
    let started_unix_s = unix_now_s();
    let background = background_load_pct()?;
    let mut topo = Topology::new(TopologySpec::seed004())?;
    let families = [Family::V4, Family::V6];
    let ctl: Vec<SocketAddr> = families
        .iter()
        .map(|&f| topo.addr("h2", f).map(|ip| SocketAddr::new(ip, CONTROL_PORT)))
        .collect::<Result<_, _>>()?;
    let _server = TrafficServer::start(&topo, "h2", &ctl, &bin)?;
    let tests = tests(opts.full);
    let modes = Mode::all(opts.full);
    let with_iperf = iperf::available();
    let case_s = params.repetitions as f64
        * ((params.warmup_ms + params.duration_ms) as f64 / 1e3 + CLIENT_OVERHEAD_S);
    let iperf_case_s = iperf_runs as f64 * ((iperf_s + iperf_omit) as f64 + 0.3);
    let step_s = |mode: Mode, req: &Request| {
        case_s
            + if mode == Mode::None && req.test.is_stream() && with_iperf {
                iperf_case_s
            } else {
                0.0
            }
    };
    // Every mode is planned; a mode the hook cannot set up is taken out of the plan when it says so.
    let mode_s = |mode: Mode| {
        families.len() as f64 * tests.iter().map(|t| step_s(mode, t)).sum::<f64>()
            + if mode == Mode::None { 0.0 } else { MODE_SETUP_S }
    };
    let planned: f64 = links.len() as f64 * modes.iter().map(|&m| mode_s(m)).sum::<f64>();
    let steps = links.len() * modes.len() * families.len() * tests.len();
    if !opts.no_progress {
        eprintln!(
            "[{NAME}] {} profile: {} modes × {} links × {} families × {} tests, planned {:.0} s (≈ {:.1} min)",
            opts.profile(),
            modes.len(),
            links.len(),
            families.len(),
            tests.len(),
            planned,
            planned / 60.0
        );
    }
    let mut progress = Progress::new(NAME, steps, planned, !opts.no_progress);
    let mut cases = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut mode_notes: Vec<String> = Vec::new();
    for (link_name, rate) in &links {
        topo.set_rate(*rate)?;
        for mode in &modes {
            let guard = match hook.setup(*mode, &topo) {
                Ok(g) => g,
                Err(LabError::ModePending { mode: m, reason }) => {
                    progress.skip(mode_s(*mode), families.len() * tests.len());
                    if !pending.iter().any(|p| p.mode == m) {
                        pending.push(Pending { mode: m, reason });
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(n) = guard.note() {
                if !mode_notes.contains(&n) {
                    mode_notes.push(n);
                }
            }
            let watch = guard.pids();
            // The data of this mode's tests goes to the mode's target (behind the protection);
            // the control connection, which marks the measured window, stays on the plain path so
            // that a flooded tunnel cannot delay the marks.
            let targets: Vec<Target> = families
                .iter()
                .zip(&ctl)
                .map(|(&f, c)| Target { control: *c, data: guard.target(f) })
                .collect();
            for (fi, family) in families.iter().enumerate() {
                let server_ip = targets[fi].data.unwrap_or(ctl[fi].ip());
                for req in &tests {
                    let what = format!(
                        "{} {} {} B {} {}",
                        mode.short(),
                        req.test,
                        req.msg_size,
                        family,
                        link_name
                    );
                    progress.step(&what, step_s(*mode, req));
                    let measured =
                        measure(&topo, "h1", targets[fi], *req, &params, &bin, &watch, &mut |_| {});
                    // A dead node explains a failed test better than the test's own error.
                    guard.check()?;
                    let (samples, summary) = measured?;
                    let iperf3 = if *mode == Mode::None && req.test.is_stream() && with_iperf {
                        let runs: Vec<f64> = (0..iperf_runs)
                            .map(|_| {
                                iperf::run(&topo, "h1", "h2", server_ip, *req, iperf_s, iperf_omit)
                                    .map(|r| r.mbit_s)
                            })
                            .collect::<Result<_, _>>()?;
                        let ours = median(&samples.iter().map(|s| s.value).collect::<Vec<_>>());
                        let theirs = median(&runs);
                        let d = iperf::disagreement(ours, theirs);
                        Some(CrossCheck {
                            iperf3_mbit_s: runs,
                            iperf3_median: theirs,
                            ours_median: ours,
                            disagreement: d,
                            flagged: d > iperf::DISAGREEMENT_LIMIT,
                        })
                    } else {
                        None
                    };
                    cases.push(Case {
                        mode: mode.short(),
                        family: *family,
                        link: link_name.clone(),
                        test: req.test,
                        msg_size: req.msg_size,
                        resp_size: req.resp_size,
                        cpu: CaseCpu::from_samples(req.test, &samples),
                        rtt: mean_rtt(&samples),
                        summary,
                        samples,
                        iperf3,
                        ratio_vs_none: None,
                    });
                }
            }
            drop(guard);
        }
    }
    progress.finish();
    drop(_server);
    drop(topo);
    let mut notes = vec![
        "Topology: h1 — r1 — r2 — h2 in network namespaces on one kernel (veth links); 100mbit = tc tbf rate 100mbit burst 64kb latency 50ms on both ends of every link.".to_string(),
        "CPU: namespaces share one kernel, so 'CPU machine' covers both hosts, both routers and softirq; 'SD procs' charges the traffic client + server + the mode's hipsec nodes (utime+stime from /proc/PID/stat), 'SD hipsec' the hipsec nodes alone (their CPU over the whole client run, scaled to the measured window).".to_string(),
        format!("iperf3 cross-check (mode none: it checks the traffic engine): {} s runs (median of {}), same message size; flagged when the medians differ by more than 10 %.", iperf_s, iperf_runs),
    ];
    notes.push(format!(
        "Background load before the run: {background:.0} % of the machine. 'CPU machine' and 'SD machine' count every process on the machine, \
         so they are only meaningful when this is near 0; 'SD procs' is not affected."
    ));
    notes.push("UDP_STREAM on an unlimited link is receiver-bound: the rate depends on how sender and receiver share the cores, so ours and iperf3 (a different sender loop) may differ by more than 10 %; on 100mbit they agree.".into());
    notes.extend(mode_notes);
    if !with_iperf {
        notes.push(format!("iperf3 not found at {}: no cross-check.", iperf::IPERF3));
    }
    if cfg!(debug_assertions) {
        notes.push("The lab was built without optimisation (debug profile); build with --release for figures.".into());
    }
    if !opts.full {
        notes.push("--quick profile: short runs, wide confidence intervals; use --full for the issue's table.".into());
    }
    let mut report = Report {
        schema: SCHEMA.into(),
        scenario: NAME.into(),
        profile: opts.profile().into(),
        params,
        started_unix_s,
        wall_s: started.elapsed().as_secs_f64(),
        machine: Machine::describe(),
        cases,
        pending,
        seed: Some(SeedFigures::load(&opts.seed_path(), SEED_TABLE)),
        notes,
        sections: Vec::new(),
        charts: Vec::new(),
        extra: None,
    };
    report.compute_ratios();
    Ok(report)
}
