//! Scenario `rekey-bandwidth`, seed 003 (an IPsec re-keying study with security gateways): ten
//! FTP clients behind one gateway move 10 MB files, session after session, to a server behind
//! the other, through an IPsec tunnel whose IKE and IPsec SAs are re-keyed all along, over links
//! of 1.5 to 10 Mbit/s. The seed's Table 1: sessions, average session throughput and delay,
//! retransmissions, IKE and IPsec rekeys and their delay, packets dropped for lack of an SA; its
//! finding: above about 6 Mbit/s the gateways' cryptography, not the link, bounds throughput.
//!
//! Here: two hipsec nodes as IKEv2 gateways (gw1 initiates and rekeys, gw2 answers), ten
//! clients in one namespace behind gw1 and a sink behind gw2 ([`point`]), the link between the
//! gateways shaped by `tc tbf` at the seed's rates plus 100 Mbit/s, 1 Gbit/s and unlimited, CHILD
//! and IKE lifetimes short enough for many rekeys per point, IKE timing from a capture
//! ([`capture`]). A second series caps gw1's CPU ([`crate::cap`]) at the share that would carry the
//! seed's 5.6 Mbit/s plateau (calibrated on the uncapped 10 Mbit/s point and one probe), or at
//! the smallest cap the kernel allows where that is less, to show the crossover from link-bound
//! to CPU-bound; the uncapped series shows where ours lies.

pub mod capture;
pub mod compare;
pub mod point;
pub mod table;

use crate::error::LabError;
use crate::node::ModeHook;
use crate::report::{Machine, Pending, Report, SCHEMA, SeedFigures};
use crate::scenario::common::{Progress, RunOptions, Scenario, background_load_pct, unix_now_s};
use crate::topology::parse_rate;
use crate::traffic::runner::RunParams;
use point::{PointResult, PointSpec};
use std::time::Instant;
pub use table::{CAP_TARGET_WIRE_BPS, SEED_SESSION};

pub const NAME: &str = "rekey-bandwidth";
/// A link: its name (`6mbit`) and rate (None: unlimited).
pub type Link = (String, Option<u64>);
pub const SEED_TABLE: &str = "rekey_bandwidth";
/// Quick sessions last about this long at a link's fair share.
const QUICK_SESSION_S: f64 = 2.0;
/// Seconds a point costs beyond its window (topology, nodes, IKE, teardown).
const POINT_OVERHEAD_S: f64 = 2.5;

/// The scenario in the registry.
#[derive(Debug, Clone, Copy)]
pub struct RekeyBandwidth;

impl Scenario for RekeyBandwidth {
    fn name(&self) -> &'static str {
        NAME
    }

    fn seed(&self) -> &'static str {
        "003"
    }

    fn summary(&self) -> &'static str {
        "IKEv2 gateways, 10 FTP-like clients, CHILD and IKE rekeys, 1.5 Mbit/s to unlimited links, and a CPU-capped gateway"
    }

    fn run(&self, opts: &RunOptions, hook: &dyn ModeHook) -> Result<Report, LabError> {
        run(opts, hook)
    }

    fn comparisons(
        &self,
        report: &Report,
    ) -> Result<Vec<crate::report::compare::Comparison>, LabError> {
        compare::comparisons(report)
    }
}

/// What a run measures.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The uncapped series, in order.
    pub points: Vec<PointSpec>,
    /// Links of the capped series (run after the uncapped one, which calibrates the cap).
    pub capped_links: Vec<Link>,
    pub full: bool,
}

/// `1.5mbit`, `100mbit`, `1gbit`, `unlimited`: parse_rate plus one decimal place.
pub fn parse_link(text: &str) -> Result<Option<u64>, LabError> {
    let t = text.trim().to_ascii_lowercase();
    if t == "unlimited" {
        return Ok(None);
    }
    if let Some((int, rest)) = t.split_once('.') {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (frac, unit) = rest.split_at(digits);
        if frac.len() == 1 {
            let tenths = parse_rate(&format!("{int}{frac}{unit}"))?;
            return Ok(Some(tenths / 10));
        }
    }
    parse_rate(&t).map(Some)
}

fn links(opts: &RunOptions) -> Result<(Vec<Link>, Vec<Link>), LabError> {
    if let Some(l) = &opts.link {
        let one = vec![(l.to_ascii_lowercase(), parse_link(l)?)];
        return Ok((one.clone(), one));
    }
    let all = ["1.5mbit", "4mbit", "6mbit", "8mbit", "10mbit", "100mbit", "1gbit", "unlimited"];
    let named = |v: &[&str]| -> Result<Vec<_>, LabError> {
        v.iter().map(|n| Ok((n.to_string(), parse_link(n)?))).collect()
    };
    // The capped series: the seed's 1.5, 6 and 10 Mbit/s, then rates around where a 1 % cap
    // tops out on this machine (tens of Mbit/s).
    let capped = ["1.5mbit", "6mbit", "10mbit", "20mbit", "50mbit", "100mbit"];
    Ok((named(&all)?, named(&capped)?))
}

/// Session size: the seed's 10 MB with `--full`; quick, what one of the clients moves in
/// `QUICK_SESSION_S` at its share of `rate` (at least 16 kB, at most 10 MB).
pub fn session_size(rate_bps: Option<f64>, clients: u32, full: bool) -> u64 {
    match rate_bps {
        _ if full => SEED_SESSION,
        None => SEED_SESSION,
        Some(r) => {
            ((r / 8.0 / f64::from(clients) * QUICK_SESSION_S) as u64).clamp(16_000, SEED_SESSION)
        }
    }
}

/// (start window, drain) of a point, ms: quick 6 s + at most 4 s; full at least 120 s and
/// three sessions' worth at the fair share, + at most two sessions' worth (at least 60 s).
fn duration_ms(rate_bps: Option<f64>, size: u64, clients: u32, full: bool) -> (u64, u64) {
    if !full {
        return (6_000, 4_000);
    }
    let session_s = rate_bps.map_or(0.0, |r| size as f64 * 8.0 * f64::from(clients) / r);
    (((3.0 * session_s).max(120.0) * 1e3) as u64, ((2.0 * session_s).max(60.0) * 1e3) as u64)
}

/// A point of `series` on `link`; `cap`: gw1's share of a core and the rate it is expected to
/// carry (sessions are sized for the lower of that and the link).
pub fn spec(series: &str, link: &Link, cap: Option<(f64, f64)>, full: bool) -> PointSpec {
    let clients = 10;
    let rate = link.1.map(|r| r as f64);
    let effective = match (rate, cap) {
        (Some(r), Some((_, carry))) => Some(r.min(carry)),
        (None, Some((_, carry))) => Some(carry),
        (r, None) => r,
    };
    let size = session_size(effective, clients, full);
    let (duration_ms, drain_ms) = duration_ms(effective, size, clients, full);
    let (ike, child, rand) = if full { (30_000, 10_000, 2_000) } else { (2_500, 700, 200) };
    PointSpec {
        series: series.into(),
        link: link.0.clone(),
        rate_bps: link.1,
        cap: cap.map(|c| c.0),
        clients,
        size,
        duration_ms,
        drain_ms,
        ike_rekey_ms: ike,
        child_rekey_ms: child,
        rand_ms: rand,
    }
}

/// The plan of a profile (and of `--link`).
pub fn plan(opts: &RunOptions) -> Result<Plan, LabError> {
    let (uncapped, capped_links) = links(opts)?;
    let points = uncapped.iter().map(|l| spec("hipsec", l, None, opts.full)).collect();
    Ok(Plan { points, capped_links, full: opts.full })
}

/// gw1's share of a core that would carry `CAP_TARGET_WIRE_BPS`, from the uncapped point with
/// the highest shaped rate up to 10 Mbit/s (its packets come one at a time, as under a cap).
pub fn calibrate(points: &[PointResult]) -> Option<(f64, String)> {
    let p = points
        .iter()
        .filter(|p| p.spec.rate_bps.is_some_and(|r| r <= 10_000_000) && p.wire_mbit_s > 0.0)
        .max_by_key(|p| p.spec.rate_bps)
        .or_else(|| points.iter().find(|p| p.wire_mbit_s > 0.0))?;
    let per_bit = p.gw1_cpu_pct / 100.0 / (p.wire_mbit_s * 1e6);
    let f = (per_bit * CAP_TARGET_WIRE_BPS).clamp(crate::cap::MIN_FRACTION, 0.5);
    Some((
        f,
        format!(
            "calibrated on the uncapped {} point: gw1 used {:.2} % of a core for {:.2} Mbit/s on the wire, so {:.3} % carries {:.1} Mbit/s",
            p.spec.link,
            p.gw1_cpu_pct,
            p.wire_mbit_s,
            f * 100.0,
            CAP_TARGET_WIRE_BPS / 1e6
        ),
    ))
}

/// Window of the cap's calibration probe.
fn probe_ms(full: bool) -> u64 {
    if full { 60_000 } else { 4_000 }
}

/// Runs the profile's plan.
pub fn run(opts: &RunOptions, hook: &dyn ModeHook) -> Result<Report, LabError> {
    run_plan(opts, hook, &plan(opts)?)
}

/// Runs `plan` (tests call this with a small one).
pub fn run_plan(opts: &RunOptions, hook: &dyn ModeHook, plan: &Plan) -> Result<Report, LabError> {
    let bin = opts.traffic_bin()?;
    let started = Instant::now();
    let started_unix_s = unix_now_s();
    let background = background_load_pct()?;
    // The drain is planned at a third of its limit (most sessions end soon after the window).
    let planned_point =
        |p: &PointSpec| (p.duration_ms + p.drain_ms / 3) as f64 / 1e3 + POINT_OVERHEAD_S;
    let capped_specs: Vec<PointSpec> = plan
        .capped_links
        .iter()
        .map(|l| spec("capped", l, Some((0.01, CAP_TARGET_WIRE_BPS)), plan.full))
        .collect();
    let probe_s = if capped_specs.is_empty() {
        0.0
    } else {
        probe_ms(plan.full) as f64 / 1e3 + POINT_OVERHEAD_S
    };
    let planned: f64 =
        plan.points.iter().chain(&capped_specs).map(planned_point).sum::<f64>() + probe_s;
    let steps = plan.points.len() + capped_specs.len() + usize::from(!capped_specs.is_empty());
    if !opts.no_progress {
        eprintln!(
            "[{NAME}] {} profile: {} uncapped + {} capped points, planned {planned:.0} s (≈ {:.1} min)",
            opts.profile(),
            plan.points.len(),
            capped_specs.len(),
            planned / 60.0
        );
    }
    let mut progress = Progress::new(NAME, steps, planned, !opts.no_progress);
    let mut results = Vec::new();
    let mut pending = Vec::new();
    for p in &plan.points {
        progress.step(&format!("hipsec {} ({} B sessions)", p.link, p.size), planned_point(p));
        match point::measure(p, hook, &bin) {
            Ok(r) => results.push(r),
            // A hook without nodes: nothing of this scenario can run.
            Err(LabError::ModePending { mode, reason }) => {
                pending.push(Pending { mode, reason });
                break;
            }
            Err(e) => return Err(e),
        }
    }
    let mut notes_cap = Vec::new();
    let mut probes = Vec::new();
    let top = plan.capped_links.iter().max_by_key(|l| l.1.unwrap_or(u64::MAX));
    match (calibrate(&results), top) {
        (Some((f0, how)), Some(top)) => {
            // The cap's cost per bit falls as it bites (the node finds more packets per wake-up):
            // one short probe at the highest capped rate corrects the first estimate.
            let mut probe = spec("capped", top, Some((f0, CAP_TARGET_WIRE_BPS)), plan.full);
            probe.duration_ms = probe_ms(plan.full);
            progress.step(
                &format!("capped {} probe ({:.2} % CPU)", probe.link, f0 * 100.0),
                planned_point(&probe),
            );
            let r = point::measure(&probe, hook, &bin)?;
            let carried = r.wire_mbit_s * 1e6;
            let f = if carried > 0.0 {
                (f0 * CAP_TARGET_WIRE_BPS / carried).clamp(crate::cap::MIN_FRACTION, 0.5)
            } else {
                f0
            };
            // Expected to carry: the probe's rate scaled to the final cap.
            let carry = if carried > 0.0 { carried * f / f0 } else { CAP_TARGET_WIRE_BPS };
            notes_cap.push(format!(
                "CPU cap of gw1 (series 'capped'): {how}; a {:.0} s probe at {} with that cap carried {:.2} Mbit/s, so the series runs at {:.2} %{} (JSON: calibration).",
                probe.duration_ms as f64 / 1e3,
                probe.link,
                r.wire_mbit_s,
                f * 100.0,
                if f <= crate::cap::MIN_FRACTION {
                    " — the smallest cap at a 100 ms period: the seed's 6 Mbit/s would need less CPU than that"
                } else {
                    ""
                }
            ));
            probes.push(r);
            for l in &plan.capped_links {
                let p = spec("capped", l, Some((f, carry)), plan.full);
                progress.step(
                    &format!("capped {} ({:.2} % CPU)", p.link, f * 100.0),
                    planned_point(&p),
                );
                results.push(point::measure(&p, hook, &bin)?);
            }
        }
        (_, Some(_)) if pending.is_empty() => {
            let skip: f64 = capped_specs.iter().map(planned_point).sum::<f64>()
                + probe_ms(plan.full) as f64 / 1e3;
            progress.skip(skip, capped_specs.len() + 1);
            notes_cap.push(
                "No capped series: no uncapped point carried traffic to calibrate the cap on."
                    .into(),
            );
        }
        _ => {}
    }
    progress.finish();
    let seed = SeedFigures::load(&opts.seed_path(), SEED_TABLE);
    let mut notes = table::notes(&results, plan.full);
    notes.extend(notes_cap);
    notes.push(format!("Background load before the run: {background:.0} % of the machine (2 cores shared by clients, sink, router, both gateways and tcpdump)."));
    if cfg!(debug_assertions) {
        notes.push("The lab was built without optimisation (debug profile); build with --release for figures.".into());
    }
    let sections = table::sections(&results, &seed);
    let charts = table::charts(&results, &seed);
    let extra = serde_json::to_value((&results, &probes))
        .ok()
        .map(|v| serde_json::json!({ "points": v[0], "calibration": v[1] }));
    Ok(Report {
        schema: SCHEMA.into(),
        scenario: NAME.into(),
        profile: opts.profile().into(),
        params: RunParams {
            warmup_ms: 0,
            duration_ms: plan.points.first().map_or(0, |p| p.duration_ms),
            repetitions: 1,
        },
        started_unix_s,
        wall_s: started.elapsed().as_secs_f64(),
        machine: Machine::describe(),
        cases: Vec::new(),
        pending,
        seed: Some(seed),
        notes,
        sections,
        charts,
        extra,
    })
}
