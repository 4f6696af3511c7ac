//! Scenario `filter-rules`, seed 002 (HP-UX IPFilter performance white paper): netperf-style
//! STREAM tests through a path with a packet filter, for growing numbers of rules that never match
//! the test traffic, against the same path with the filter off.
//!
//! Topology h1 — r — h2 (`TopologySpec::host_router_host`), an ESP AES-128-GCM tunnel between
//! hipsec nodes on h1 and h2 (as in `ipsec-netperf`), IPv4 tests through the tunnel. The filter
//! sits on h2, on the packets that cross h2's TUN device (decrypted arrivals and departures):
//!
//! - **hipsec classifier / linear**: h2's node config gets
//!   `[filter]` / `rules = "/path/rules.txt"` / `engine = "classifier" | "linear"`. A node that
//!   refuses the table (it predates the filter) makes those rows pending, not the run.
//! - **nft linear / nft sets**: the same rules translated by [`nft`] into an `inet` table on h2,
//!   input and output hooks restricted to the TUN devices (`iifname`/`oifname`), loaded with
//!   `nft -f` (timed) into h2's namespace while the unfiltered tunnel runs.
//!
//! "filter off" is the same tunnel with no filter, measured first and last (their mean is the
//! base of every change).

pub mod nft;

use super::{Progress, RunOptions};
use crate::error::LabError;
use crate::node::{
    EspSuite, FilterEngine, INNER_V4, INNER_V6, Mode, ModeGuard, ModeHook, NodeFilter,
    filter_unsupported,
};
use crate::report::markdown::num;
use crate::report::{
    Case, CaseCpu, Chart, Machine, Pending, Report, SCHEMA, Section, SeedFigures, mean_rtt,
};
use crate::topology::{Family, Topology, TopologySpec, parse_rate};
use crate::traffic::runner::{CONTROL_PORT, RunParams, Target, TrafficServer, measure};
use crate::traffic::{Request, TestKind};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

pub const NAME: &str = "filter-rules";
const SEED_TABLE: &str = "filter_rules";
/// Seed of `filter::bench::generate_rules` (fixed: every run filters with the same rules).
pub const RULE_SEED: u64 = 0x0002_f11e;
/// The role whose traffic is filtered.
pub const FILTER_HOST: &str = "h2";
/// The nodes' TUN devices (see `crate::node::config`).
pub const TUN_DEVICES: [&str; 2] = ["hlab4", "hlab6"];
/// `nft -f` gets this long per rule set before the row is given up.
pub const NFT_LOAD_TIMEOUT: Duration = Duration::from_secs(150);

/// Who filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Implementation {
    Off,
    Classifier,
    Linear,
    NftLinear,
    NftSets,
}

impl Implementation {
    pub fn label(self) -> &'static str {
        match self {
            Implementation::Off => "filter off",
            Implementation::Classifier => "hipsec classifier",
            Implementation::Linear => "hipsec linear",
            Implementation::NftLinear => "nft linear",
            Implementation::NftSets => "nft sets",
        }
    }

    fn is_node(self) -> bool {
        matches!(self, Implementation::Classifier | Implementation::Linear)
    }
}

/// One measured configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    pub imp: Implementation,
    /// Rules installed (0 = filter on with an empty rule set; ignored for `Off`).
    pub rules: usize,
}

impl Point {
    pub fn mode(&self) -> String {
        match self.imp {
            Implementation::Off => Implementation::Off.label().into(),
            i => format!("{} {}", i.label(), self.rules),
        }
    }
}

/// What a run measures: points in order, tests, run parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub points: Vec<Point>,
    pub tests: Vec<Request>,
    pub params: RunParams,
}

/// The profile's plan. Quick (≈ 2.5 min): off, classifier 0/100/5000/100000, linear 5000, nft
/// linear and sets 5000, off again; 3 × 1 s per test. Full (≈ 20 min): every rule count for
/// every implementation, 5 × 2 s per test.
pub fn plan(full: bool) -> Plan {
    let p = |imp, rules| Point { imp, rules };
    use Implementation::*;
    let tests = vec![
        Request { test: TestKind::TcpStream, msg_size: 16384, resp_size: 1 },
        Request { test: TestKind::UdpStream, msg_size: 1024, resp_size: 1 },
    ];
    if !full {
        return Plan {
            points: vec![
                p(Off, 0),
                p(Classifier, 0),
                p(Classifier, 100),
                p(Classifier, 5000),
                p(Classifier, 100_000),
                p(Linear, 5000),
                p(NftLinear, 5000),
                p(NftSets, 5000),
                p(Off, 0),
            ],
            tests,
            params: RunParams { warmup_ms: 300, duration_ms: 1000, repetitions: 3 },
        };
    }
    let counts = [0, 100, 1000, 5000, 100_000];
    let mut points = vec![p(Off, 0)];
    for imp in [Classifier, Linear, NftSets, NftLinear] {
        for &n in &counts {
            if imp == NftLinear && n > NFT_LINEAR_MAX {
                continue;
            }
            points.push(p(imp, n));
        }
    }
    points.push(p(Off, 0));
    Plan { points, tests, params: RunParams { warmup_ms: 500, duration_ms: 2000, repetitions: 5 } }
}

/// Above this many rules a linear nft chain is not measured. 100000 rules load in about 4 s
/// (`nft -f`, ~550 MB of nft's memory) on the lab machine, so nothing is capped today; the limit
/// stays as the knob, and a load is given up after [`NFT_LOAD_TIMEOUT`] anyway.
pub const NFT_LINEAR_MAX: usize = 100_000;

/// True if `rule` could match a packet between the tunnel's inner addresses (either way).
fn touches_test_traffic(rule: &filter::Rule) -> bool {
    let ours: [IpAddr; 4] =
        [INNER_V4[0].into(), INNER_V4[1].into(), INNER_V6[0].into(), INNER_V6[1].into()];
    let side = |net: Option<filter::IpNet>| net.is_none_or(|n| ours.iter().any(|a| n.contains(*a)));
    side(rule.from.net) && side(rule.to.net)
}

/// `count` rules from `filter::bench::generate_rules` (which avoids the bench traffic's
/// addresses) minus any rule that could match the tunnel's inner addresses (10.99.0.0/24 and
/// fd00:99::/64 lie inside the generator's 10.0.0.0/8 and fd00::/8), in the rule language.
pub fn rules_text(count: usize) -> String {
    let mut extra = count / 50 + 16;
    loop {
        let text = filter::bench::generate_rules(count + extra, RULE_SEED);
        let mut out = String::with_capacity(text.len());
        let mut kept = 0;
        for line in text.lines() {
            if kept == count {
                break;
            }
            let keep = filter::parse_rules(line)
                .map(|s| s.rules.iter().all(|r| !touches_test_traffic(r)))
                .unwrap_or(false);
            if keep {
                out.push_str(line);
                out.push('\n');
                kept += 1;
            }
        }
        if kept == count {
            return out;
        }
        extra *= 2;
    }
}

/// Throughput, CPU and service demand of one point and test, and their change against off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilterRow {
    pub implementation: Implementation,
    pub rules: usize,
    pub test: TestKind,
    pub msg_size: usize,
    /// None: pending (see `pending`).
    pub mbit_s: Option<f64>,
    pub ci95: Option<f64>,
    pub cpu_machine_pct: Option<f64>,
    pub sd_machine: Option<f64>,
    pub sd_procs: Option<f64>,
    pub d_mbit_s_pct: Option<f64>,
    pub d_cpu_pct: Option<f64>,
    pub d_sd_machine_pct: Option<f64>,
    pub d_sd_procs_pct: Option<f64>,
    /// nft: seconds `nft -f` took; rules and sets in the loaded ruleset.
    pub load_s: Option<f64>,
    pub nft_rules: Option<usize>,
    pub nft_sets: Option<usize>,
    /// nft sets: inverted overlapping pairs (0 = exactly the hipsec semantics).
    pub set_conflicts: Option<usize>,
    pub pending: Option<String>,
}

/// What one point produced besides its cases.
#[derive(Debug, Default)]
struct PointInfo {
    load_s: Option<f64>,
    nft: Option<(usize, usize, nft::Exactness)>,
    pending: Option<String>,
}

/// Runs `program args` to completion with a time limit; kills it (by its pid) on expiry.
fn run_bounded(program: &str, args: &[&str], limit: Duration) -> Result<String, LabError> {
    let cmd = format!("{program} {}", args.join(" "));
    let mut c = Command::new(program);
    c.args(args);
    let (child, pid) = crate::topology::spawn_registered(c, &cmd)?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let res = rx.recv_timeout(limit);
    if res.is_err() {
        crate::sys::kill_pid(pid);
    }
    crate::sys::registry().pids.remove(&pid);
    let out = match res {
        Ok(r) => r.map_err(|e| LabError::io(cmd.clone(), e))?,
        Err(_) => {
            return Err(LabError::Command {
                cmd,
                status: "timed out".into(),
                stderr: format!("no result after {} s", limit.as_secs()),
            });
        }
    };
    if !out.status.success() {
        return Err(LabError::Command {
            cmd,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().chars().take(2000).collect(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Loads a translation into namespace `ns` (`nft -f` of `file`, then of each element batch,
/// written beside it); returns the seconds all `nft -f` runs took.
pub fn nft_load(
    ns: &str,
    t: &nft::Translation,
    file: &Path,
    limit: Duration,
) -> Result<f64, LabError> {
    let mut files = vec![file.to_path_buf()];
    std::fs::write(file, &t.text)
        .map_err(|e| LabError::io(format!("writing {}", file.display()), e))?;
    for (i, b) in t.batches.iter().enumerate() {
        let f = file.with_extension(format!("{i}.nft"));
        std::fs::write(&f, b).map_err(|e| LabError::io(format!("writing {}", f.display()), e))?;
        files.push(f);
    }
    let t0 = Instant::now();
    for f in &files {
        let left = limit.saturating_sub(t0.elapsed()).max(Duration::from_millis(1));
        let f = f.display().to_string();
        run_bounded("ip", &["netns", "exec", ns, nft::NFT, "-f", &f], left)?;
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// Deletes the lab's nft table in `ns` (absent table: fine).
pub fn nft_clear(ns: &str) {
    let _ = crate::sys::run_in(ns, nft::NFT, &["delete", "table", "inet", nft::TABLE]);
}

/// Machine busy % over half a second.
fn background_load_pct() -> Result<f64, LabError> {
    let a = crate::cpu::SystemCpu::read()?;
    std::thread::sleep(Duration::from_millis(500));
    Ok(crate::cpu::SystemCpu::read()?.since(&a).utilisation_pct())
}

/// Seconds a client run costs beyond warm-up and window; seconds to start/stop a node pair.
const CLIENT_OVERHEAD_S: f64 = 0.15;
const SETUP_S: f64 = 2.0;

fn planned_point_s(plan: &Plan, p: &Point) -> f64 {
    let case = plan.params.repetitions as f64
        * ((plan.params.warmup_ms + plan.params.duration_ms) as f64 / 1e3 + CLIENT_OVERHEAD_S);
    let load = match p.imp {
        Implementation::NftLinear => p.rules as f64 * 1e-4,
        Implementation::NftSets => 0.5,
        _ => 0.0,
    };
    case * plan.tests.len() as f64 + SETUP_S + load
}

/// The link rate used when `--link` is not given.
pub const DEFAULT_LINK: &str = "1gbit";

/// Runs the profile's plan.
pub fn run(opts: &RunOptions, hook: &dyn ModeHook) -> Result<Report, LabError> {
    run_plan(opts, hook, &plan(opts.full))
}

/// Runs `plan` (tests call this with a small one).
pub fn run_plan(opts: &RunOptions, hook: &dyn ModeHook, plan: &Plan) -> Result<Report, LabError> {
    // Default: a 1 Gbit/s link, as the seed measured on a real network. Throughput then drops
    // only where a filter costs more CPU than the nodes have to spare (the seed's 38 % loss at
    // 5000 rules) instead of moving with the run-to-run noise of a CPU-bound tunnel on two
    // cores; `--link unlimited` measures the CPU-bound case.
    let link = opts.link.as_deref().unwrap_or(DEFAULT_LINK);
    let rate = match link {
        "unlimited" => None,
        t => Some(parse_rate(t)?),
    };
    let link_name = link.to_ascii_lowercase();
    let bin = opts.traffic_bin()?;
    let started = Instant::now();
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let background = background_load_pct()?;
    let mut topo = Topology::new(TopologySpec::host_router_host())?;
    topo.set_rate(rate)?;
    let family = Family::V4;
    let ctl = SocketAddr::new(topo.addr("h2", family)?, CONTROL_PORT);
    let _server = TrafficServer::start(&topo, "h2", &[ctl], &bin)?;
    let work = std::env::temp_dir().join(format!("hlab-filter-{}", std::process::id()));
    std::fs::create_dir_all(&work)
        .map_err(|e| LabError::io(format!("creating {}", work.display()), e))?;
    let result = measure_points(opts, hook, plan, &topo, &bin, ctl, &work, &link_name);
    let _ = std::fs::remove_dir_all(&work);
    drop(_server);
    drop(topo);
    let (cases, infos, mut notes_run) = result?;
    let rows = rows(plan, &cases, &infos);
    let mut pending: Vec<Pending> = Vec::new();
    for (p, info) in plan.points.iter().zip(&infos) {
        if let Some(reason) = &info.pending {
            if !pending.iter().any(|x| x.reason == *reason && x.mode.starts_with(p.imp.label())) {
                pending.push(Pending { mode: p.mode(), reason: reason.clone() });
            }
        }
    }
    let seed = SeedFigures::load(&opts.seed_path(), SEED_TABLE);
    let mut notes = vec![
        "Topology: h1 — r — h2 in network namespaces on one kernel (veth links); ESP AES-128-GCM tunnel mode between hipsec nodes on h1 and h2 (raw IP, protocol 50); tests over IPv4 through the tunnel (10.99.0.1 → 10.99.0.2).".to_string(),
        format!("Where the filter runs: on {FILTER_HOST}, on the packets crossing its TUN device — hipsec's filter in {FILTER_HOST}'s node (`[filter]` table, both directions), nftables in {FILTER_HOST}'s namespace on the input hook (iifname hlab4/hlab6) and the output hook (oifname), so both see the same decrypted packets. The router's forward chain is not used."),
        format!("Rules: filter::bench::generate_rules(count, {RULE_SEED:#x}) (IPv4/IPv6 hosts and prefixes, ports and ranges, quick and keep-state rules, site-policy style), minus the few rules that could touch 10.99.0.0/24 or fd00:99::/64; none matches the test traffic, so every packet is checked against all of them and passes by default."),
        "nft translation: quick rules first, then the others in reverse order (IPFilter's last match = nftables' first match), default as the last rule; keep state = ct mark. 'nft sets' groups rules of one verdict and shape into one concatenated-set lookup; 'set conflicts' counts overlapping rule pairs of different verdict whose order the grouping inverted (0 = exact; the generated rules have some, so 'nft sets' decides some packets that match two rules differently from the rule file — never the test traffic).".to_string(),
        "Changes are against the mean of the two 'filter off' runs (first and last). CPU = whole machine busy % (all cores: sender, receiver, router, hipsec nodes and softirq share one kernel); SD = service demand, CPU µs per KB (the seed's definition), 'machine' charges all busy CPU, 'procs' the traffic processes and the hipsec nodes. On a saturated 2-core machine CPU % stays near 100 and the filter's cost shows in throughput and service demand.".to_string(),
        format!("Background load before the run: {background:.0} % of the machine."),
    ];
    notes.append(&mut notes_run);
    if cfg!(debug_assertions) {
        notes.push("The lab was built without optimisation (debug profile); build with --release for figures.".into());
    }
    if !opts.full {
        notes.push("--quick profile: 3 × 1 s per test, wide confidence intervals (a few %); use --full for the issue's table.".into());
    }
    let sections = vec![
        Section { title: "Filter cost against filter off".into(), body: table_md(&rows) },
        Section { title: "Seed figures beside ours".into(), body: seed_md(&rows, &seed) },
    ];
    let charts = charts(&rows);
    let extra = serde_json::to_value(&rows).ok();
    let mut report = Report {
        schema: SCHEMA.into(),
        scenario: NAME.into(),
        profile: opts.profile().into(),
        params: plan.params,
        started_unix_s,
        wall_s: started.elapsed().as_secs_f64(),
        machine: Machine::describe(),
        cases,
        pending,
        seed: Some(seed),
        notes,
        sections,
        charts,
        extra: extra.map(|rows| serde_json::json!({ "rows": rows })),
    };
    report.compute_ratios_against(Implementation::Off.label());
    Ok(report)
}

type Measured = (Vec<Case>, Vec<PointInfo>, Vec<String>);

#[allow(clippy::too_many_arguments)]
fn measure_points(
    opts: &RunOptions,
    hook: &dyn ModeHook,
    plan: &Plan,
    topo: &Topology,
    bin: &crate::traffic::TrafficBin,
    ctl: SocketAddr,
    work: &Path,
    link_name: &str,
) -> Result<Measured, LabError> {
    let mode = Mode::Esp(EspSuite::Aes128Gcm);
    let planned: f64 = plan.points.iter().map(|p| planned_point_s(plan, p)).sum();
    let setup_steps = |p: &Point| usize::from(p.imp != Implementation::Off);
    let steps: usize = plan.points.iter().map(|p| plan.tests.len() + setup_steps(p)).sum();
    if !opts.no_progress {
        eprintln!(
            "[{NAME}] {} profile: {} points × {} tests, planned {:.0} s (≈ {:.1} min)",
            opts.profile(),
            plan.points.len(),
            plan.tests.len(),
            planned,
            planned / 60.0
        );
    }
    let mut progress = Progress::new(NAME, steps, planned, !opts.no_progress);
    let h2 = topo.ns(FILTER_HOST)?.to_string();
    let mut cases = Vec::new();
    let mut infos = Vec::new();
    let mut notes = Vec::new();
    // The unfiltered tunnel, kept up across off and nft points; a filtered node pair replaces it.
    let mut tunnel: Option<Box<dyn ModeGuard>> = None;
    let mut node_pending: Option<String> = None;
    let nft_pending: Option<String> = nft::available().err();
    for p in &plan.points {
        let mut info = PointInfo::default();
        // Takes the point's remaining steps out of the plan (`started`: its setup step ran).
        let skip = |progress: &mut Progress, started: bool| {
            let n = plan.tests.len() + setup_steps(p) - usize::from(started);
            progress.skip(planned_point_s(plan, p), n);
        };
        let filtered: Option<Box<dyn ModeGuard>>;
        if p.imp.is_node() {
            tunnel = None;
            nft_clear(&h2);
            if let Some(r) = &node_pending {
                info.pending = Some(r.clone());
                skip(&mut progress, false);
                infos.push(info);
                continue;
            }
            let file = work.join(format!("rules-{}.txt", p.rules));
            if !file.is_file() {
                std::fs::write(&file, rules_text(p.rules))
                    .map_err(|e| LabError::io(format!("writing {}", file.display()), e))?;
            }
            let engine = if p.imp == Implementation::Classifier {
                FilterEngine::Classifier
            } else {
                FilterEngine::Linear
            };
            let f = NodeFilter { rules: file, engine, hosts: vec![FILTER_HOST.into()] };
            progress.step(&format!("{}: starting nodes", p.mode()), 0.0);
            match hook.setup_filtered(mode, topo, &f) {
                Ok(g) => filtered = Some(g),
                Err(e) if filter_unsupported(&e) => {
                    let r = "node has no [filter] yet (it refuses the config table: unknown field `filter`)".to_string();
                    notes.push(
                        format!("hipsec filter rows pending: {e}")
                            .lines()
                            .take(3)
                            .collect::<Vec<_>>()
                            .join(" "),
                    );
                    node_pending = Some(r.clone());
                    info.pending = Some(r);
                    skip(&mut progress, true);
                    infos.push(info);
                    continue;
                }
                Err(LabError::ModePending { reason, .. }) => {
                    node_pending = Some(reason.clone());
                    info.pending = Some(reason);
                    skip(&mut progress, true);
                    infos.push(info);
                    continue;
                }
                Err(e) => return Err(e),
            }
        } else {
            filtered = None;
            if tunnel.is_none() {
                tunnel = Some(hook.setup(mode, topo)?);
            }
            nft_clear(&h2);
            if matches!(p.imp, Implementation::NftLinear | Implementation::NftSets) {
                if let Some(r) = &nft_pending {
                    info.pending = Some(r.clone());
                    skip(&mut progress, false);
                    infos.push(info);
                    continue;
                }
                let layout = if p.imp == Implementation::NftLinear {
                    nft::Layout::Linear
                } else {
                    nft::Layout::Sets
                };
                let set = filter::parse_rules(&rules_text(p.rules))
                    .map_err(|e| LabError::parse("generated rules", e.to_string()))?;
                let t = nft::translate(&set, &TUN_DEVICES, layout);
                let file =
                    work.join(format!("{}-{}.nft", p.imp.label().replace(' ', "-"), p.rules));
                progress.step(&format!("{}: nft -f", p.mode()), 0.0);
                match nft_load(&h2, &t, &file, NFT_LOAD_TIMEOUT) {
                    Ok(s) => info.load_s = Some(s),
                    Err(e) => {
                        nft_clear(&h2);
                        let r = format!("nft -f failed: {e}");
                        info.pending = Some(r.chars().take(300).collect());
                        skip(&mut progress, true);
                        infos.push(info);
                        continue;
                    }
                }
                info.nft = Some((t.nft_rules, t.sets, t.exact));
            }
        }
        let guard: &dyn ModeGuard = match (&filtered, &tunnel) {
            (Some(g), _) | (None, Some(g)) => g.as_ref(),
            (None, None) => unreachable_guard()?,
        };
        let watch = guard.pids();
        let target = Target { control: ctl, data: guard.target(Family::V4) };
        for req in &plan.tests {
            progress.step(
                &format!("{} {} {} B", p.mode(), req.test, req.msg_size),
                planned_point_s(plan, p) / plan.tests.len() as f64,
            );
            let measured =
                measure(topo, "h1", target, *req, &plan.params, bin, &watch, &mut |_| {});
            guard.check()?;
            // A filter so slow that a test fails (e.g. the linear evaluator at 100000 rules)
            // is a result for that row, not the end of the run.
            let (samples, summary) = match measured {
                Ok(m) => m,
                Err(e) if p.imp != Implementation::Off => {
                    let msg: String =
                        format!("{} failed: {e}", req.test).chars().take(300).collect();
                    info.pending = Some(msg);
                    continue;
                }
                Err(e) => return Err(e),
            };
            cases.push(Case {
                mode: p.mode(),
                family: Family::V4,
                link: link_name.to_string(),
                test: req.test,
                msg_size: req.msg_size,
                resp_size: req.resp_size,
                cpu: CaseCpu::from_samples(req.test, &samples),
                rtt: mean_rtt(&samples),
                summary,
                samples,
                iperf3: None,
                ratio_vs_none: None,
            });
        }
        if matches!(p.imp, Implementation::NftLinear | Implementation::NftSets) {
            nft_clear(&h2);
        }
        drop(filtered);
        infos.push(info);
    }
    drop(tunnel);
    progress.finish();
    Ok((cases, infos, notes))
}

fn unreachable_guard() -> Result<&'static dyn ModeGuard, LabError> {
    Err(LabError::parse("filter-rules plan", "a point without a tunnel"))
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn pct(v: Option<f64>, base: Option<f64>) -> Option<f64> {
    match (v, base) {
        (Some(v), Some(b)) if b > 0.0 => Some(100.0 * (v / b - 1.0)),
        _ => None,
    }
}

/// One row per point and test (off once, as the mean of its runs).
fn rows(plan: &Plan, cases: &[Case], infos: &[PointInfo]) -> Vec<FilterRow> {
    let mut out = Vec::new();
    let metric = |c: &Case| {
        (
            c.summary.map(|s| s.mean),
            c.summary.map(|s| s.ci95),
            c.cpu.as_ref().map(|u| u.machine_pct),
            c.cpu.as_ref().and_then(|u| u.sd_machine),
            c.cpu.as_ref().and_then(|u| u.sd_procs),
        )
    };
    for req in &plan.tests {
        let same = |c: &&Case| c.test == req.test && c.msg_size == req.msg_size;
        let off: Vec<&Case> =
            cases.iter().filter(same).filter(|c| c.mode == Implementation::Off.label()).collect();
        let avg = |f: &dyn Fn(&Case) -> Option<f64>| {
            mean(&off.iter().filter_map(|c| f(c)).collect::<Vec<_>>())
        };
        let base = (
            avg(&|c| metric(c).0),
            avg(&|c| metric(c).1),
            avg(&|c| metric(c).2),
            avg(&|c| metric(c).3),
            avg(&|c| metric(c).4),
        );
        let mut seen_off = false;
        for (p, info) in plan.points.iter().zip(infos) {
            if p.imp == Implementation::Off {
                if seen_off {
                    continue;
                }
                seen_off = true;
            }
            let m = if p.imp == Implementation::Off {
                base
            } else {
                cases
                    .iter()
                    .filter(same)
                    .find(|c| c.mode == p.mode())
                    .map(metric)
                    .unwrap_or((None, None, None, None, None))
            };
            let on = p.imp != Implementation::Off;
            out.push(FilterRow {
                implementation: p.imp,
                rules: p.rules,
                test: req.test,
                msg_size: req.msg_size,
                mbit_s: m.0,
                ci95: m.1,
                cpu_machine_pct: m.2,
                sd_machine: m.3,
                sd_procs: m.4,
                d_mbit_s_pct: pct(m.0, base.0).filter(|_| on),
                d_cpu_pct: pct(m.2, base.2).filter(|_| on),
                d_sd_machine_pct: pct(m.3, base.3).filter(|_| on),
                d_sd_procs_pct: pct(m.4, base.4).filter(|_| on),
                load_s: info.load_s,
                nft_rules: info.nft.map(|n| n.0),
                nft_sets: info.nft.map(|n| n.1),
                set_conflicts: info
                    .nft
                    .filter(|_| p.imp == Implementation::NftSets)
                    .map(|n| n.2.conflicts),
                pending: info.pending.clone(),
            });
        }
    }
    out
}

fn o(v: Option<f64>) -> String {
    v.map_or("–".into(), num)
}

fn d(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:+.1}"))
}

fn table_md(rows: &[FilterRow]) -> String {
    let mut s = String::from(
        "| filter | rules | test | Mbit/s | Δ thr % | CPU machine % | Δ CPU % | SD machine µs/KB | Δ SD % | SD procs | Δ SD procs % | nft load s | note |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let rules = if r.implementation == Implementation::Off {
            "–".into()
        } else {
            r.rules.to_string()
        };
        let test = format!("{} {} B", r.test, r.msg_size);
        let mut note = String::new();
        if let Some(p) = &r.pending {
            note = format!("pending: {p}");
        } else if let (Some(n), Some(sets)) = (r.nft_rules, r.nft_sets) {
            note = format!("{n} nft rules, {sets} sets");
            if let Some(c) = r.set_conflicts {
                let _ = write!(note, ", {c} set conflicts");
            }
        }
        let thr = match (r.mbit_s, r.ci95) {
            (Some(m), Some(ci)) => format!("{} ± {}", num(m), num(ci)),
            (m, _) => o(m),
        };
        let _ = writeln!(
            s,
            "| {} | {rules} | {test} | {thr} | {} | {} | {} | {} | {} | {} | {} | {} | {note} |",
            r.implementation.label(),
            d(r.d_mbit_s_pct),
            o(r.cpu_machine_pct),
            d(r.d_cpu_pct),
            o(r.sd_machine),
            d(r.d_sd_machine_pct),
            o(r.sd_procs),
            d(r.d_sd_procs_pct),
            r.load_s.map_or("–".into(), |x| format!("{x:.2}")),
        );
    }
    s
}

/// A seed comparison: label, seed's change %, rule count (None: all > 0), our figure, sign.
type SeedLine<'a> = (&'a str, Option<f64>, Option<usize>, Metric, f64);

/// A figure of a row.
type Metric = fn(&FilterRow) -> Option<f64>;

/// Mean over both tests of `f` for an implementation at `rules` (None: all rule counts > 0).
fn avg_change(
    rows: &[FilterRow],
    imp: Implementation,
    rules: Option<usize>,
    f: Metric,
) -> Option<f64> {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.implementation == imp && rules.map_or(r.rules > 0, |n| r.rules == n))
        .filter_map(f)
        .collect();
    mean(&v)
}

fn seed_md(rows: &[FilterRow], seed: &SeedFigures) -> String {
    use Implementation::*;
    let mut s = String::new();
    let Some(t) = &seed.table else {
        return format!(
            "Seed figures absent ({}): {}. Our figures stand alone.\n",
            seed.source, seed.note
        );
    };
    let get = |k: &str, sub: &str| t.get(k).and_then(|v| v.get(sub)).and_then(|v| v.as_f64());
    let _ = writeln!(
        s,
        "Source: `{}`. Seed: IPFilter on HP-UX, netperf; drops as positive %, ours as signed change (− = lower throughput). Ours are the mean over TCP_STREAM and UDP_STREAM; each cell lists classifier · linear · nft linear · nft sets (– = not measured in this profile, or pending).\n",
        seed.source
    );
    let _ = writeln!(
        s,
        "| figure | seed | ours: classifier · linear · nft linear · nft sets | reading |\n|---|---|---|---|"
    );
    let imps = [Classifier, Linear, NftLinear, NftSets];
    let cell = |rules: Option<usize>, f: Metric| {
        imps.iter().map(|&i| d(avg_change(rows, i, rules, f))).collect::<Vec<_>>().join(" · ")
    };
    let thr = |r: &FilterRow| r.d_mbit_s_pct;
    let cpu = |r: &FilterRow| r.d_cpu_pct;
    let sd = |r: &FilterRow| r.d_sd_machine_pct;
    let reading = |rules: Option<usize>, f: Metric, seed_v: Option<f64>, sign: f64| {
        let c = avg_change(rows, Classifier, rules, f);
        let n = avg_change(rows, NftLinear, rules, f);
        match (c, seed_v) {
            (Some(c), Some(sv)) if (sign * c) <= sv.abs() / 4.0 + 1.0 => {
                let nft =
                    n.map_or(String::new(), |n| format!("; the kernel's linear chain: {n:+.1} %"));
                format!(
                    "hipsec's classifier does not pay for its rules (seed {:+.2} %){nft}",
                    sign * sv
                )
            }
            (Some(c), Some(_)) => format!(
                "classifier {c:+.1} %: the filter shows a cost here (see the table; quick runs are noisy)"
            ),
            (None, _) => "hipsec rows pending or not measured (see above)".into(),
            _ => "no seed figure".into(),
        }
    };
    let lines: [SeedLine<'_>; 7] = [
        (
            "throughput, 100 rules",
            get("throughput_drop_pct", "rules_100").map(|v| -v),
            Some(100),
            thr,
            -1.0,
        ),
        (
            "throughput, 5000 rules",
            get("throughput_drop_pct", "rules_5000").map(|v| -v),
            Some(5000),
            thr,
            -1.0,
        ),
        (
            "throughput, installed, no rules (seed: up to)",
            get("throughput_drop_pct", "installed_no_rules_max").map(|v| -v),
            Some(0),
            thr,
            -1.0,
        ),
        (
            "CPU utilisation, installed, no rules",
            get("cpu_utilization_increase_pct", "installed_no_rules"),
            Some(0),
            cpu,
            1.0,
        ),
        (
            "CPU utilisation, with rules (mean)",
            get("cpu_utilization_increase_pct", "with_rules"),
            None,
            cpu,
            1.0,
        ),
        (
            "service demand, installed, no rules",
            get("service_demand_increase_pct", "installed_no_rules"),
            Some(0),
            sd,
            1.0,
        ),
        (
            "service demand, with rules (mean)",
            get("service_demand_increase_pct", "with_rules"),
            None,
            sd,
            1.0,
        ),
    ];
    for (what, sv, rules, f, sign) in lines {
        let _ = writeln!(
            s,
            "| {what} | {} | {} | {} |",
            sv.map_or("–".into(), |v| format!("{v:+.2} %")),
            cell(rules, f),
            reading(rules, f, sv.map(|v| v * sign), sign),
        );
    }
    let c5000 = avg_change(rows, Classifier, Some(5000), thr);
    let _ = writeln!(
        s,
        "\nIssue 5's target — hipsec's filter at 5000 rules loses ≤ 1 % throughput against filter off: {}.",
        match c5000 {
            Some(c) if c >= -1.0 => format!("met ({c:+.2} %)"),
            Some(c) => format!(
                "not met in this run ({c:+.2} %; compare with the 95 % intervals in the table)"
            ),
            None => "not measured (pending)".into(),
        }
    );
    s
}

fn charts(rows: &[FilterRow]) -> Vec<Chart> {
    let mk = |file: &str, title: &str, unit: &str, f: fn(&FilterRow) -> Option<(f64, f64)>| {
        let mut groups: Vec<crate::report::svg::Group> = Vec::new();
        for r in rows.iter().filter(|r| r.pending.is_none()) {
            let Some((v, ci)) = f(r) else { continue };
            let label = format!("{} {} B", r.test, r.msg_size);
            let series = if r.implementation == Implementation::Off {
                "off".to_string()
            } else {
                format!("{} {}", r.implementation.label().trim_start_matches("hipsec "), r.rules)
            };
            match groups.iter_mut().find(|(l, _)| *l == label) {
                Some((_, bars)) => bars.push((series, v, ci)),
                None => groups.push((label, vec![(series, v, ci)])),
            }
        }
        Chart { file: file.into(), title: title.into(), unit: unit.into(), groups }
    };
    vec![
        mk("filter_throughput.svg", "STREAM throughput per filter and rule count", "Mbit/s", |r| {
            r.mbit_s.map(|m| (m, r.ci95.unwrap_or(0.0)))
        }),
        mk(
            "filter_service_demand.svg",
            "Service demand (machine) per filter and rule count",
            "CPU µs per KB",
            |r| r.sd_machine.map(|m| (m, 0.0)),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use filter::{Direction, LinearFilter, PacketKey};

    #[test]
    fn generated_rules_never_touch_the_tunnel_traffic() {
        let text = rules_text(5000);
        assert_eq!(text.lines().count(), 5000);
        let set = filter::parse_rules(&text).unwrap();
        let lin = LinearFilter::new(&set);
        let (a, b): (IpAddr, IpAddr) = (INNER_V4[0].into(), INNER_V4[1].into());
        for (dir, src, dst) in
            [(Direction::In, a, b), (Direction::Out, b, a), (Direction::In, b, a)]
        {
            for (proto, sp, dp) in [(6, 40000, 12866), (17, 40001, 33000), (6, 12866, 40000)] {
                let k = PacketKey::new(dir, src, dst, proto, sp, dp);
                assert_eq!(lin.evaluate(&k).rule, None, "{k:?} matched");
            }
        }
        // Deterministic: the same rules every run, and a prefix of the larger sets' generator.
        assert_eq!(rules_text(100), rules_text(100));
        assert!(rules_text(0).is_empty());
    }

    #[test]
    fn plans_fit_their_budgets() {
        for (full, budget_s) in [(false, 200.0), (true, 1500.0)] {
            let p = plan(full);
            let s: f64 = p.points.iter().map(|x| planned_point_s(&p, x)).sum();
            assert!(s < budget_s, "full={full}: {s} s planned");
            assert_eq!(p.points.first().map(|x| x.imp), Some(Implementation::Off));
            assert_eq!(p.points.last().map(|x| x.imp), Some(Implementation::Off));
        }
        let q = plan(false);
        assert!(q.points.contains(&Point { imp: Implementation::Classifier, rules: 100_000 }));
        assert!(
            !plan(true)
                .points
                .iter()
                .any(|x| x.imp == Implementation::NftLinear && x.rules > NFT_LINEAR_MAX)
        );
    }
}
