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

pub mod compare;
pub mod nft;
pub mod plan;
pub mod sweep;
pub mod table;

use crate::error::LabError;
use crate::node::ModeHook;
use crate::report::{Machine, Pending, Report, SCHEMA, Section, SeedFigures};
use crate::scenario::common::{RunOptions, Scenario, background_load_pct, unix_now_s};
use crate::topology::{Family, Topology, TopologySpec, parse_rate};
use crate::traffic::runner::{CONTROL_PORT, TrafficServer};
use plan::SEED_TABLE;
use std::net::SocketAddr;
use std::time::Instant;

pub use plan::{
    DEFAULT_LINK, FILTER_HOST, Implementation, NAME, NFT_LINEAR_MAX, NFT_LOAD_TIMEOUT, Plan, Point,
    RULE_SEED, TUN_DEVICES, plan, rules_text,
};
pub use sweep::{nft_clear, nft_load};
pub use table::FilterRow;

/// The scenario in the registry.
#[derive(Debug, Clone, Copy)]
pub struct FilterRules;

impl Scenario for FilterRules {
    fn name(&self) -> &'static str {
        NAME
    }

    fn seed(&self) -> &'static str {
        "002"
    }

    fn summary(&self) -> &'static str {
        "packet filter cost versus rule count: hipsec classifier and linear, nftables chain and sets; 0 to 100000 rules"
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
    let started_unix_s = unix_now_s();
    let background = background_load_pct()?;
    let mut topo = Topology::new(TopologySpec::host_router_host())?;
    topo.set_rate(rate)?;
    let family = Family::V4;
    let ctl = SocketAddr::new(topo.addr("h2", family)?, CONTROL_PORT);
    let _server = TrafficServer::start(&topo, "h2", &[ctl], &bin)?;
    let work = std::env::temp_dir().join(format!("hlab-filter-{}", std::process::id()));
    std::fs::create_dir_all(&work)
        .map_err(|e| LabError::io(format!("creating {}", work.display()), e))?;
    let result = sweep::measure_points(opts, hook, plan, &topo, &bin, ctl, &work, &link_name);
    let _ = std::fs::remove_dir_all(&work);
    drop(_server);
    drop(topo);
    let (cases, infos, mut notes_run) = result?;
    let rows = table::rows(plan, &cases, &infos);
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
        Section { title: "Filter cost against filter off".into(), body: table::table_md(&rows) },
        Section { title: "Seed figures beside ours".into(), body: table::seed_md(&rows, &seed) },
    ];
    let charts = table::charts(&rows);
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
