//! `hipsec lab calibrate`: measures on this machine the costs `hipsec size` adds up, and writes
//! them as a profile (`sizing::Profile`, JSON) with the machine and the hipsec commit.
//!
//! Each figure comes from one of the benches, run briefly, and the profile's `sources` names
//! which:
//! - ESP suites: the engine's seal and open (`hipsec bench esp`'s loops: SPD-less protect with
//!   one SA, inbound with replay check) at two packet sizes, fitted as a cost per packet plus
//!   a cost per byte; the bytes the suite adds are those of a sealed 1000..1015-byte packet.
//! - Carriers: top-down from `hipsec bench tunnel --transport both` (two nodes in namespaces,
//!   iperf3 TCP through the tunnel): both nodes' CPU seconds, minus the engine's share at the
//!   sizes the counters show, per packet the nodes handled. That run cannot tell the TUN's part
//!   from the carrier's, so each carrier's figure holds both and `tun` is zero.
//! - Filter: `filter::bench` at 1 and 1,000 rules (classifier, no flow cache).
//! - IKEv2: the crypto-only reference of `hipsec bench ike` (DH, PRF and AUTH of both ends;
//!   one end's share is half), plus installing the CHILD_SA pair.
//! - HIP: `hipsec bench hip`'s in-process exchange at K = 0 (each role's processing) and the
//!   puzzle's hash rate at K = 12.
//! - Mobile IPv6: the binding cache's update at 100,000 entries, plus opening the Binding
//!   Update and sealing the Binding Acknowledgement with AES-128-CBC + HMAC-SHA-1 (the seed's).
//! - Memory per SA: 10,000 SAs installed through the control interface (`hipsec bench sas`).

use crate::{bench_esp, bench_hip, bench_ike, bench_sas, bench_tunnel};
use crypto::EspSuite;
use sizing::Profile;
use sizing::load::RatePoint;
use sizing::profile::{
    FilterCost, HipCost, IkeCost, IoCost, LinearCost, Machine, Mip6Cost, SCHEMA, SuiteCost,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Arguments of `hipsec lab calibrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct CalibrateArgs {
    /// Where to write the profile (JSON).
    #[arg(long, value_name = "FILE", default_value = "profile.json")]
    pub out: PathBuf,
    /// Shorter loops (about a minute in all instead of three): noisier figures.
    #[arg(long)]
    pub quick: bool,
    /// Skip the runs with nodes in namespaces (root, iperf3): the carriers' I/O is then
    /// missing, and IKEv2 comes from the crypto reference alone.
    #[arg(long)]
    pub no_tunnel: bool,
    /// Only these ESP suites (comma-separated; default: every suite the engine has).
    /// aes128gcm (the carriers' run) and aes128cbc-sha1 (the binding updates') are always
    /// measured.
    #[arg(long, value_delimiter = ',')]
    pub suites: Vec<String>,
    /// Rounds: every figure is measured once per round, the rounds one after another, and the
    /// profile keeps each figure's median and its range over the rounds (`hipsec size` turns
    /// the range into an interval). A round takes about 3 minutes, 1 with --quick.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub rounds: u32,
    /// Write the profile even when the machine was too busy to calibrate on (more than 5 % of
    /// its CPU time stolen by the hypervisor, or taken by other processes).
    #[arg(long)]
    pub accept_noisy: bool,
    /// Print the profile on stdout too.
    #[arg(long)]
    pub json: bool,
}

/// Above this share of the machine's CPU time stolen or taken by others, a calibration is
/// refused (unless --accept-noisy): the costs it measured are not the machine's.
const BUSY_LIMIT_PCT: f64 = 5.0;

/// Packet sizes of the per-byte fit.
const SMALL: usize = 64;
const LARGE: usize = 1400;

pub(crate) fn progress(what: &str) {
    eprintln!("calibrate: {what} …");
}

/// Seal and open of every suite, fitted per packet and per byte (ns).
fn suites(only: &[String], budget: Duration) -> Result<BTreeMap<String, SuiteCost>, String> {
    let mut out = BTreeMap::new();
    let mut list = Vec::new();
    for name in
        ["aes128gcm", "aes128cbc-sha1"].iter().map(|s| s.to_string()).chain(only.iter().cloned())
    {
        let s: EspSuite = name.parse().map_err(|e| format!("--suites: {name}: {e}"))?;
        if !list.contains(&s) {
            list.push(s);
        }
    }
    if only.is_empty() {
        list = EspSuite::all();
    }
    for suite in list {
        progress(&format!("ESP {suite}"));
        let ns = |pps: f64| if pps > 0.0 { 1e9 / pps } else { f64::NAN };
        let fit = |small: f64, large: f64| {
            let per_byte = ((large - small) / (LARGE - SMALL) as f64).max(0.0);
            LinearCost {
                per_packet_ns: (small - per_byte * SMALL as f64).max(0.0),
                per_byte_ns: per_byte,
            }
        };
        let seal = fit(
            ns(bench_esp::measure_seal(suite, SMALL, budget)?.esp_pps),
            ns(bench_esp::measure_seal(suite, LARGE, budget)?.esp_pps),
        );
        let open = fit(
            ns(bench_esp::measure_open(suite, SMALL, budget)?.esp_pps),
            ns(bench_esp::measure_open(suite, LARGE, budget)?.esp_pps),
        );
        let overhead_bytes = bench_esp::overhead_bytes(suite)?;
        out.insert(suite.to_string(), SuiteCost { seal, open, overhead_bytes });
    }
    Ok(out)
}

fn counter(v: &serde_json::Value, k: &str) -> f64 {
    v.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0) as f64
}

/// What a tunnel run's two nodes did: the engine's share of their CPU (ns, from the suite's
/// costs at the sizes the counters show), the packets they handled (each read from the TUN or
/// the carrier once), their CPU (ns) and the data packets' size.
pub(crate) struct TunnelWork {
    pub(crate) engine_ns: f64,
    pub(crate) handled: f64,
    /// Inner bytes of the packets handled (data and ACKs).
    pub(crate) bytes: f64,
    pub(crate) cpu_ns: f64,
    pub(crate) data_bytes: f64,
    /// Times both nodes' threads were woken (voluntary context switches).
    pub(crate) wakeups: f64,
    /// Data packets per second the tunnel carried.
    pub(crate) data_pps: f64,
}

/// [`TunnelWork`] of a run.
pub(crate) fn tunnel_work(
    r: &bench_tunnel::Report,
    suite: &SuiteCost,
) -> Result<TunnelWork, String> {
    let [a, b] = [0, 1].map(|i| r.nodes.get(i));
    let (Some(a), Some(b)) = (a, b) else { return Err("the tunnel run reported no nodes".into()) };
    let (ca, cb) = (&a.node_counters, &b.node_counters);
    // Data goes a → b; its size from what arrived; the other way TCP's ACKs.
    let data_packets = counter(cb, "tun_tx").max(1.0);
    let data = (r.tunnel.bytes as f64 / data_packets + 52.0).min(65535.0);
    let ack = 52.0;
    let engine_ns = counter(ca, "tun_rx") * suite.seal.ns(data)
        + counter(ca, "net_rx") * suite.open.ns(ack)
        + counter(cb, "tun_rx") * suite.seal.ns(ack)
        + counter(cb, "net_rx") * suite.open.ns(data);
    let handled = counter(ca, "tun_rx")
        + counter(ca, "net_rx")
        + counter(cb, "tun_rx")
        + counter(cb, "net_rx");
    if handled < 1000.0 {
        return Err(format!("the {} tunnel carried only {handled} packets", r.transport));
    }
    let bytes = (counter(ca, "tun_rx") + counter(cb, "net_rx")) * data
        + (counter(ca, "net_rx") + counter(cb, "tun_rx")) * ack;
    Ok(TunnelWork {
        engine_ns,
        handled,
        bytes,
        cpu_ns: (a.cpu_s + b.cpu_s) * 1e9,
        data_bytes: data,
        wakeups: (a.wakeups + b.wakeups) as f64,
        data_pps: data_packets / f64::from(r.seconds.max(1)),
    })
}

/// The filter as the node runs it: the classifier with its flow cache (`FilterStage::admit`),
/// so a packet of a flow seen before costs a cache hit whatever the rule count. The first
/// packet of a new flow costs the uncached classifier, which the source notes (the model has
/// no flow count).
fn filter_cost(quick: bool, sources: &mut BTreeMap<String, String>) -> FilterCost {
    progress("packet filter at 1 and 10,000 rules");
    let per = Duration::from_millis(if quick { 200 } else { 600 });
    let r = filter::bench::run(&[1, 10_000], per);
    let at = |i: usize| r.points.get(i).cloned();
    let (Some(few), Some(many)) = (at(0), at(1)) else {
        return FilterCost { per_packet_ns: 0.0, per_rule_ns: 0.0 };
    };
    sources.insert(
        "filter".into(),
        format!(
            "filter::bench at 1 and 10,000 rules, flow-cache hits (the node's classify): {:.1} \
             and {:.1} ns; a new flow's first packet (uncached): {:.1} and {:.1} ns",
            few.cached_ns, many.cached_ns, few.classifier_ns, many.classifier_ns
        ),
    );
    FilterCost {
        per_packet_ns: few.cached_ns,
        per_rule_ns: ((many.cached_ns - few.cached_ns) / 9_999.0).max(0.0),
    }
}

/// The paced handshake runs, as shares of the saturated rate.
const IKE_PACED: [(&str, f64); 3] = [("paced60", 0.6), ("paced25", 0.25), ("paced5", 0.05)];

/// IKEv2: with a responder node (`nodes`), its CPU per complete setup under `hipsec bench
/// ike`'s generator; the rekeys from the crypto reference scaled by the same ratio of the
/// node's CPU to one end's crypto (messages, sockets and installs cost alike in both).
/// Without nodes, the crypto reference alone (it under-predicts a node ~3×: `validate`).
fn ike_cost(
    quick: bool,
    nodes: bool,
    bytes_per_sa_install_us: f64,
    sources: &mut BTreeMap<String, String>,
) -> Result<IkeCost, String> {
    progress("IKEv2 crypto reference (x25519)");
    let trial = Duration::from_millis(if quick { 300 } else { 1000 });
    let c = bench_ike::crypto_reference("x25519", 2, trial)?;
    // One end's share of a setup; a CREATE_CHILD_SA with PFS makes a DH key and agrees, and
    // derives keys; an IKE rekey also runs SKEYSEED.
    let install = 2.0 * bytes_per_sa_install_us;
    let crypto_setup = c.us_per_setup / 2.0 + install;
    let mut scale = 1.0;
    let mut by_rate = BTreeMap::new();
    if nodes {
        progress("IKEv2 handshakes against a responder node (x25519, PSK, 32 in flight, pinned)");
        // Pinned, and the median of three rounds: unpinned on a 2-vCPU VM one round's figure
        // ranged 67–182 µs per setup (cross-vCPU wake-ups are charged to the woken thread).
        let args = bench_ike::BenchIkeArgs {
            seconds: if quick { 1 } else { 3 },
            rounds: 3,
            concurrency: 32,
            rate: None,
            pin: true,
            group: "x25519".into(),
            no_delete: false,
            clients: None,
            json: true,
        };
        let r = bench_ike::measure(&args, &Arc::new(AtomicBool::new(false)))?;
        if r.responder_us_per_setup > 0.0 {
            scale = r.responder_us_per_setup / crypto_setup;
        }
        let mut notes = vec![format!(
            "saturated: hipsec bench ike --pin --concurrency 32 --rounds 3 --seconds {}: {:.0} \
             setups/s, responder {:.1} µs per setup ({scale:.2}× one end's crypto)",
            args.seconds, r.setups_per_s, r.responder_us_per_setup
        )];
        by_rate.insert(
            "saturated".to_string(),
            RatePoint { setups_per_s: r.setups_per_s, us: r.responder_us_per_setup },
        );
        // Below saturation each setup pays more of a wake-up: the same run paced, the median
        // of three rounds as saturated (one 3-s round at 1,477 or 2,000 setups/s gave 205 to
        // 290 µs from one run to the next).
        for (name, share) in IKE_PACED {
            let rate = (r.setups_per_s * share).max(1.0);
            progress(&format!("IKEv2 handshakes paced to {rate:.0}/s ({:.0} %)", share * 100.0));
            let paced =
                bench_ike::BenchIkeArgs { concurrency: 64, rate: Some(rate), ..args.clone() };
            let p = bench_ike::measure(&paced, &Arc::new(AtomicBool::new(false)))?;
            notes.push(format!(
                "{name}: --rate {rate:.0} --concurrency 64 --rounds 3: {:.0} setups/s, {:.1} µs",
                p.setups_per_s, p.responder_us_per_setup
            ));
            by_rate.insert(
                name.to_string(),
                RatePoint { setups_per_s: p.setups_per_s, us: p.responder_us_per_setup },
            );
        }
        sources.insert(
            "ike".into(),
            format!(
                "{}; per setup at other rates interpolated between these; rekeys = crypto \
                 reference × the saturated ratio",
                notes.join("; ")
            ),
        );
    } else {
        sources.insert(
            "ike".into(),
            "hipsec bench ike's crypto-only reference (x25519, PSK), one end's half, + SA \
             installs (no node run: --no-tunnel)"
                .into(),
        );
    }
    Ok(IkeCost {
        ike_sa_setup_us: crypto_setup * scale,
        child_rekey_us: (c.dh_keygen_us + c.dh_agree_us + c.key_schedule_us / 2.0 + install)
            * scale,
        ike_rekey_us: (c.dh_keygen_us + c.dh_agree_us + c.key_schedule_us) * scale,
        setup_by_rate: by_rate,
    })
}

fn hip_cost(quick: bool) -> Result<HipCost, String> {
    progress("HIP base exchange in process (K = 0) and the puzzle's hash rate");
    let p = bench_hip::phases(
        0,
        if quick { 10 } else { 30 },
        hip::identity::HiKind::Ecdsa(crypto::EcCurve::P256),
    )?;
    let puzzle = hip::puzzle::Puzzle { k: 12, i: vec![7u8; 48] };
    let hi = hip::HostIdentityTag::from_host_id(hip::HitSuite::EcdsaSha384, b"calibrate-i");
    let hr = hip::HostIdentityTag::from_host_id(hip::HitSuite::EcdsaSha384, b"calibrate-r");
    let (mut tries, t) = (0u64, Instant::now());
    for round in 0..if quick { 8u8 } else { 24 } {
        let (_, n) = puzzle
            .solve(hip::HitSuite::EcdsaSha384, &hi, &hr, &[round; 48])
            .map_err(|e| e.to_string())?;
        tries += n;
    }
    Ok(HipCost {
        initiator_us: p.t2_us + p.t4_us,
        puzzle_try_ns: t.elapsed().as_secs_f64() * 1e9 / tries.max(1) as f64,
        responder_us: p.t1_us + p.t3_us,
    })
}

fn mip6_cost(suites: &BTreeMap<String, SuiteCost>) -> Result<Mip6Cost, String> {
    progress("binding cache updates at 100,000 entries");
    let entries = 100_000;
    let mut w = mip6::workload::Workload::new(entries, ipsec::Time(0));
    let bus = w.prepare_updates(entries);
    let t = Instant::now();
    let accepted = w.apply_batch(&bus, ipsec::Time(1_000_000));
    let cache_us = t.elapsed().as_secs_f64() * 1e6 / bus.len().max(1) as f64;
    if accepted != bus.len() {
        return Err(format!("binding cache: {accepted} of {} updates accepted", bus.len()));
    }
    let esp = suites.get("aes128cbc-sha1").ok_or("aes128cbc-sha1 was not measured")?;
    // A BU is ~ 40 bytes of IPv6 + 24 of Home Address option + ~ 30 of MH; the BA alike.
    let bu = 96.0;
    let cache = w.home_agent.cache();
    Ok(Mip6Cost {
        binding_update_us: cache_us + (esp.open.ns(bu) + esp.seal.ns(bu)) / 1e3,
        bytes_per_binding: cache.memory_bytes() as f64 / cache.len().max(1) as f64,
    })
}

/// What the machine did besides us over a stretch of the calibration.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Busy {
    /// CPU time the hypervisor gave to others, % of the machine's.
    pub steal_pct: f64,
    /// CPU time of processes other than this one and its children, %.
    pub other_pct: f64,
}

pub(crate) fn snapshot() -> Option<(lab::cpu::SystemCpu, lab::cpu::ProcCpu)> {
    Some((lab::cpu::SystemCpu::read().ok()?, lab::cpu::ProcCpu::read_self().ok()?))
}

pub(crate) fn busy_since(before: Option<(lab::cpu::SystemCpu, lab::cpu::ProcCpu)>) -> Option<Busy> {
    let (s0, p0) = before?;
    let (s1, p1) = snapshot()?;
    let d = s1.since(&s0);
    let total = d.total_us.max(1) as f64;
    let ours = (p1.total_us() + p1.children_us).saturating_sub(p0.total_us() + p0.children_us);
    let other = d.busy_us().saturating_sub(d.steal_us).saturating_sub(ours);
    Some(Busy {
        steal_pct: 100.0 * d.steal_us as f64 / total,
        other_pct: 100.0 * other as f64 / total,
    })
}

/// Measures every figure in `args.rounds` rounds and combines them (progress on stderr).
pub fn measure(args: &CalibrateArgs) -> Result<Profile, String> {
    let started = Instant::now();
    let mut rounds = Vec::new();
    let mut busy = Vec::new();
    let whole = snapshot();
    for r in 1..=args.rounds {
        if args.rounds > 1 {
            eprintln!(
                "calibrate: round {r} of {} ({:.0} s so far)",
                args.rounds,
                started.elapsed().as_secs_f64()
            );
        }
        let before = snapshot();
        let first = rounds.first().map(|p: &Profile| p.bytes_per_sa);
        rounds.push(measure_round(args, first)?);
        if let Some(b) = busy_since(before) {
            busy.push(b);
        }
    }
    let all = busy_since(whole);
    let interference = all.map(|b| sizing::profile::Interference {
        steal_pct: b.steal_pct,
        other_cpu_pct: b.other_pct,
        worst_round_steal_pct: busy.iter().map(|b| b.steal_pct).fold(0.0, f64::max),
        seconds: started.elapsed().as_secs_f64(),
    });
    let p = sizing::rounds::combine(&rounds, interference)
        .map_err(|e| format!("combining the rounds: {e}"))?;
    for (figure, rel) in p.noisy().iter().take(8) {
        eprintln!(
            "calibrate: noisy: {figure} moved by {:.0} % of its median over the rounds",
            rel * 100.0
        );
    }
    if let Some(i) = &p.interference {
        eprintln!(
            "calibrate: the machine meanwhile: {:.1} % of its CPU time stolen by the hypervisor (worst round {:.1} %), {:.1} % used by other processes",
            i.steal_pct, i.worst_round_steal_pct, i.other_cpu_pct
        );
        let worst = i.steal_pct.max(i.other_cpu_pct);
        if worst > BUSY_LIMIT_PCT && !args.accept_noisy {
            return Err(format!(
                "refused: {worst:.1} % of the machine's CPU time went to others (limit {BUSY_LIMIT_PCT} %); its costs are not this machine's. Stop what else runs, or pass --accept-noisy to keep it (the profile then records the interference)"
            ));
        }
    }
    eprintln!("calibrate: done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(p)
}

/// One round: every figure once.
/// `bytes_per_sa`: the first round's figure, which later rounds keep: memory is measured as the
/// growth of the resident set, and a later round's SAs reuse the pages the first round's freed,
/// so it would see none (0 bytes per SA in four of five rounds).
fn measure_round(args: &CalibrateArgs, bytes_per_sa: Option<f64>) -> Result<Profile, String> {
    let m = lab::report::Machine::describe();
    let budget = Duration::from_millis(if args.quick { 60 } else { 250 });
    let mut sources = BTreeMap::new();
    let mut suites = suites(&args.suites, budget)?;
    let mut what =
        format!("hipsec bench esp loops at {SMALL} and {LARGE} bytes, tunnel mode, one SA");
    // AH with every integrity algorithm, unless --suites named a few ESP suites only.
    if args.suites.is_empty() {
        suites.extend(crate::calibrate_ah::suites(SMALL, LARGE, budget)?);
        what += "; AH (ah-<integrity>) by the engine's protect and inbound alike";
    }
    sources.insert("suites".into(), what);
    progress("10,000 SAs through the control interface");
    let (rate, measured) = bench_sas::install(10_000)?;
    let bytes_per_sa = bytes_per_sa.unwrap_or(measured);
    sources.insert("bytes_per_sa".into(), format!("hipsec bench sas: 10,000 SAs, {rate:.0} SA/s"));
    let carriers = if args.no_tunnel {
        let mut c = BTreeMap::new();
        c.insert("tun".into(), IoCost::flat(0.0, 0.0, 0.0, 0.0));
        sources.insert("carriers".into(), "not measured (--no-tunnel)".into());
        c
    } else {
        crate::calibrate_load::carriers(&suites, args.quick, &mut sources)?
    };
    let filter = filter_cost(args.quick, &mut sources);
    let ike = ike_cost(args.quick, !args.no_tunnel, 1e6 / rate.max(1.0), &mut sources)?;
    let hip = hip_cost(args.quick)?;
    sources.insert("hip".into(), "hipsec bench hip phases at K = 0; puzzle at K = 12".into());
    let mip6 = mip6_cost(&suites)?;
    sources.insert(
        "mip6".into(),
        "mip6 binding cache at 100,000 entries + ESP aes128cbc-sha1 open and seal of 96 bytes"
            .into(),
    );
    let profile = Profile {
        schema: SCHEMA.into(),
        machine: Machine {
            cpu: m.cpu_model,
            cores: m.cores,
            kernel: m.kernel,
            commit: m.hipsec_commit.unwrap_or_else(|| "unknown".into()),
            date: date_utc(),
        },
        suites,
        carriers,
        filter,
        ike,
        hip,
        mip6,
        bytes_per_sa,
        sources,
        spread: BTreeMap::new(),
        interference: None,
        validation: None,
    };
    profile.validate().map_err(|e| format!("the measured profile: {e}"))?;
    Ok(profile)
}

/// Today's date (UTC) from the system clock, as YYYY-MM-DD.
fn date_utc() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    lab::report::html::utc(now).chars().take(10).collect()
}

/// `hipsec lab calibrate`.
pub fn run(args: &CalibrateArgs) -> Result<(), String> {
    let p = measure(args)?;
    let text = serde_json::to_string_pretty(&p).map_err(|e| e.to_string())?;
    std::fs::write(&args.out, format!("{text}\n"))
        .map_err(|e| format!("writing {}: {e}", args.out.display()))?;
    if args.json {
        println!("{text}");
    }
    eprintln!(
        "calibrate: profile written to {} (use it with `hipsec size --profile {}`)",
        args.out.display(),
        args.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let d = date_utc();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"), "{d}");
    }
}
