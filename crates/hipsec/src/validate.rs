//! `hipsec lab validate`: does the profile predict what the node really costs?
//!
//! Each check runs real work on this machine — two nodes in namespaces carrying iperf3 TCP
//! through the tunnel (`hipsec bench tunnel`) with other suites, carriers, packet sizes (TCP
//! MSS) and filter rule counts than the one calibration ran, and IKEv2 handshakes against a
//! real responder node (`hipsec bench ike --pin`) at other loads than calibration's 32 in
//! flight: 8 in flight, and fixed rates of 8,000 and 2,000 setups/s —
//! then predicts the CPU the nodes used from the profile alone and the work the run reports
//! (packets and their sizes from the nodes' counters; handshakes completed), the way `hipsec
//! size` adds costs. Predicted beside measured, and the error; a check misses when the error is
//! beyond [`TOLERANCE`]. With a profile of several rounds each prediction is also made with
//! each round's costs (`Profile::ends`, the interval `hipsec size` gives), and the check says
//! whether the measured CPU fell inside it.

use crate::calibrate::tunnel_work;
use crate::{bench_ike, bench_tunnel};
use serde::Serialize;
use sizing::Profile;
use sizing::profile::{ErrorBand, ModelError};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The error the issue allows: |predicted − measured| / measured.
pub const TOLERANCE: f64 = 0.20;

/// Arguments of `hipsec lab validate`.
#[derive(Debug, Clone, clap::Args)]
pub struct ValidateArgs {
    /// The profile to check (written by `hipsec lab calibrate` on this machine).
    #[arg(long, value_name = "FILE")]
    pub profile: PathBuf,
    /// Seconds of each tunnel transfer and of the handshake round.
    #[arg(long, default_value_t = 4)]
    pub seconds: u32,
    /// How many times each check runs. The repeats are interleaved (every check once, then
    /// every check again), so that a machine whose load drifts affects every kind alike; each
    /// kind reports its median error and how many of its runs fell inside the interval. One
    /// pass takes about 2 minutes.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// Write the errors this validation measured into the profile (its `validation`: the
    /// median and the 5th–95th percentile of the error, for the data path and for IKE), so
    /// that `hipsec size` and later validations widen their intervals by them. Validate again
    /// afterwards to see whether runs now fall inside.
    #[arg(long)]
    pub record: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The median |error| a kind of run must stay within.
pub const TARGET: f64 = 0.10;

/// One kind of run, repeated: each run's check, and their summary.
#[derive(Debug, Clone, Serialize)]
pub struct Kind {
    /// What ran.
    pub run: String,
    /// Each repeat.
    pub checks: Vec<Check>,
    /// The median of the repeats' errors.
    pub median_error: f64,
    /// The median of their |error|s.
    pub median_abs_error: f64,
    /// median |error| ≤ [`TARGET`].
    pub on_target: bool,
    /// Repeats whose measurement fell inside their interval (of those with one).
    pub inside: usize,
    /// Repeats with an interval.
    pub with_interval: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

impl Kind {
    fn of(checks: Vec<Check>) -> Kind {
        let run = checks.first().map(|c| c.run.clone()).unwrap_or_default();
        let median_error = median(checks.iter().map(|c| c.error).collect());
        let median_abs_error = median(checks.iter().map(|c| c.error.abs()).collect());
        let inside = checks.iter().filter(|c| c.inside == Some(true)).count();
        let with_interval = checks.iter().filter(|c| c.inside.is_some()).count();
        Kind {
            run,
            median_error,
            median_abs_error,
            on_target: median_abs_error <= TARGET,
            inside,
            with_interval,
            checks,
        }
    }
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What ran.
    pub run: String,
    /// The work it did (packets, sizes, handshakes).
    pub work: String,
    /// CPU the profile predicts, seconds (or µs per handshake).
    pub predicted: f64,
    /// CPU measured.
    pub measured: f64,
    /// (predicted − measured) / measured.
    pub error: f64,
    /// |error| ≤ [`TOLERANCE`].
    pub within: bool,
    /// Unit of `predicted` and `measured`.
    pub unit: &'static str,
    /// The prediction at the low and the high end of the profile's ranges (none: a profile
    /// of one round has no range).
    pub interval: Option<(f64, f64)>,
    /// Whether `measured` fell inside `interval`.
    pub inside: Option<bool>,
}

/// `predicted` is a prediction on `[low, high]` (the profile at both ends of its ranges),
/// widened by `band`, the model's error a recorded validation measured for this kind of work.
fn check(
    run: String,
    work: String,
    (predicted, low, high): (f64, f64, f64),
    measured: f64,
    unit: &'static str,
    band: Option<ErrorBand>,
) -> Check {
    let error = if measured > 0.0 { (predicted - measured) / measured } else { f64::NAN };
    let (lo, hi) = (low.min(high), low.max(high));
    let (lo, hi) = band.map_or((lo, hi), |b| b.widen(lo, hi));
    let interval = (hi > lo).then_some((lo, hi));
    let inside = interval.map(|(lo, hi)| (lo..=hi).contains(&measured));
    let within = error.abs() <= TOLERANCE;
    Check { run, work, predicted, measured, error, within, unit, interval, inside }
}

/// What the calibration's spread lets the profile be (`Profile::ends`: each round's costs).
fn ends(p: &Profile) -> Result<Vec<Profile>, String> {
    p.ends().map_err(|e| format!("profile ranges: {e}"))
}

/// The prediction at the profile's medians, and the lowest and highest over `ends`.
fn spread_of(
    mid: &Profile,
    ends: &[Profile],
    f: &dyn Fn(&Profile) -> Result<f64, String>,
) -> Result<(f64, f64, f64), String> {
    let mut lo_hi = (f64::INFINITY, f64::NEG_INFINITY);
    for e in ends {
        let x = f(e)?;
        lo_hi = (lo_hi.0.min(x), lo_hi.1.max(x));
    }
    let m = f(mid)?;
    if ends.is_empty() { Ok((m, m, m)) } else { Ok((m, lo_hi.0, lo_hi.1)) }
}

/// One tunnel run: what varies from calibration's (aes128gcm over both carriers, full-size
/// packets, no filter).
#[derive(Debug, Clone, Copy)]
struct TunnelRun {
    suite: &'static str,
    transport: bench_tunnel::TransportArg,
    /// TCP MSS (smaller packets: per-packet costs weigh more than per-byte ones).
    mss: Option<u16>,
    /// Filter rules in both nodes.
    rules: u32,
    /// Paced to this share of the saturated rate calibration measured (none: unpaced).
    pace: Option<f64>,
}

impl TunnelRun {
    /// The profile's name of its carrier.
    fn carrier(&self) -> &'static str {
        match self.transport {
            bench_tunnel::TransportArg::Raw => "raw",
            _ => "udp",
        }
    }
}

const fn plain(suite: &'static str, transport: bench_tunnel::TransportArg) -> TunnelRun {
    TunnelRun { suite, transport, mss: None, rules: 0, pace: None }
}

/// The tunnel runs: other suites, carriers, packet sizes, rule counts and rates (calibration
/// paced to 50, 20 and 1 % of its saturated rate; these to 75, 35 and 5 %).
const TUNNELS: [TunnelRun; 11] = {
    use bench_tunnel::TransportArg::{Raw, Udp};
    [
        plain("aes256gcm", Udp),
        plain("chacha20poly1305", Udp),
        plain("aes128cbc-sha256", Udp),
        plain("aes128gcm", Raw),
        TunnelRun { mss: Some(300), ..plain("aes128gcm", Udp) },
        TunnelRun { mss: Some(1000), ..plain("aes128cbc-sha256", Udp) },
        TunnelRun { rules: 1000, ..plain("aes128gcm", Udp) },
        TunnelRun { rules: 10_000, ..plain("aes128gcm", Udp) },
        TunnelRun { pace: Some(0.35), ..plain("aes128gcm", Udp) },
        TunnelRun { pace: Some(0.75), ..plain("chacha20poly1305", Udp) },
        TunnelRun { pace: Some(0.05), ..plain("aes128gcm", Raw) },
    ]
};

/// The CPU seconds profile `p` predicts for tunnel run `t` that reported `r`.
fn predict_tunnel(p: &Profile, t: TunnelRun, r: &bench_tunnel::Report) -> Result<f64, String> {
    let carrier = t.carrier();
    let suite = t.suite;
    let cost = p.suites.get(suite).ok_or_else(|| format!("the profile has no suite {suite}"))?;
    let io = p
        .carriers
        .get(carrier)
        .ok_or_else(|| format!("the profile has no carrier {carrier} (calibrated --no-tunnel?)"))?;
    let tun = p.carriers.get("tun").ok_or("the profile has no tun carrier")?;
    let w = tunnel_work(r, cost)?;
    // What a packet costs beyond the saturated fit at this run's packet rate, as `hipsec size`
    // reads it from the profile.
    let share = sizing::model::load_share(
        p,
        cost,
        io,
        w.data_bytes,
        p.filter.per_rule_ns * f64::from(t.rules),
        r.tunnel.gbps,
    );
    let load_ns = w.handled * (io.load_ns(share) + tun.load_ns(share));
    // A sealed packet costs the TUN's receive and the carrier's send, an opened one the
    // carrier's receive and the TUN's send (`sizing::model`); the model takes rx and tx alike.
    // With a filter, every packet handled also meets the rules once.
    let per_packet_io = (io.rx_ns + io.tx_ns + tun.rx_ns + tun.tx_ns) / 2.0;
    let per_byte_io = io.per_byte_ns + tun.per_byte_ns;
    let filter_ns = if t.rules > 0 {
        p.filter.per_packet_ns + p.filter.per_rule_ns * f64::from(t.rules)
    } else {
        0.0
    };
    Ok((w.engine_ns + w.handled * (per_packet_io + filter_ns) + w.bytes * per_byte_io + load_ns)
        / 1e9)
}

fn tunnel_check(p: &Profile, t: TunnelRun, seconds: u32) -> Result<Check, String> {
    let ends = ends(p)?;
    let carrier = t.carrier();
    let suite = t.suite;
    let cost = p.suites.get(suite).ok_or_else(|| format!("the profile has no suite {suite}"))?;
    let mut name = format!("bench tunnel --suite {suite} --transport {carrier}");
    if let Some(m) = t.mss {
        name += &format!(" --mss {m}");
    }
    if t.rules > 0 {
        name += &format!(" --filter-rules {}", t.rules);
    }
    let bitrate = match t.pace {
        Some(share) => {
            let full = p
                .carriers
                .get(carrier)
                .and_then(|c| c.by_rate.get("full"))
                .map(|b| b.gbps)
                .filter(|g| *g > 0.0)
                .ok_or(
                    "the profile has no saturated tunnel rate (calibrated before paced runs?)",
                )?;
            let gbps = full * share;
            name += &format!(" --bitrate {gbps:.2} ({:.0} %)", share * 100.0);
            Some(gbps)
        }
        None => None,
    };
    eprintln!("validate: {name}, {seconds} s of iperf3 TCP …");
    let args = bench_tunnel::BenchTunnelArgs {
        suite: suite.into(),
        seconds,
        congestion: "cubic".into(),
        queues: 1,
        rounds: 1,
        parallel: 1,
        transport: t.transport,
        mss: t.mss,
        bitrate,
        filter_rules: t.rules,
        keying: bench_tunnel::KeyingArg::Manual,
        vs_queues: None,
        json: true,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let bench_tunnel::Output::One(r) = bench_tunnel::measure_all(&args, &stop)? else {
        return Err("the tunnel bench ran both carriers".into());
    };
    let w = tunnel_work(&r, cost)?;
    let predicted = spread_of(p, &ends, &|q| predict_tunnel(q, t, &r))?;
    Ok(check(
        name,
        format!(
            "{:.2} Gbit/s, {:.0} packets, data {:.0} B, {:.3} wake-ups per packet",
            r.tunnel.gbps,
            w.handled,
            w.data_bytes,
            w.wakeups / w.handled
        ),
        predicted,
        w.cpu_ns / 1e9,
        "CPU s",
        p.validation.as_ref().and_then(|v| v.data_path),
    ))
}

/// Handshake loads: calibration ran 32 in flight (saturated) and paced to 60, 25 and 5 % of
/// that rate; these run another concurrency and fixed rates of handshakes, one beyond
/// saturation and two between calibration's paced rates on this 2-core machine.
const IKE_LOADS: [(usize, Option<f64>); 4] =
    [(8, None), (64, Some(8000.0)), (64, Some(2000.0)), (64, Some(600.0))];

fn ike_check(
    p: &Profile,
    seconds: u32,
    concurrency: usize,
    rate: Option<f64>,
) -> Result<Check, String> {
    let load = match rate {
        Some(r) => format!("--rate {r:.0}"),
        None => format!("--concurrency {concurrency}"),
    };
    eprintln!(
        "validate: IKEv2 handshakes against a responder node ({load}), 3 rounds of {} s …",
        seconds.div_ceil(2).max(1)
    );
    // Three rounds, the median one reported, as calibration measures handshakes: below
    // saturation one round's cost per setup moves by a third from one run to the next.
    let args = bench_ike::BenchIkeArgs {
        seconds: seconds.div_ceil(2).max(1),
        rounds: 3,
        concurrency,
        rate,
        pin: true,
        group: "x25519".into(),
        no_delete: false,
        clients: None,
        json: true,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let r = bench_ike::measure(&args, &stop)?;
    let ends = ends(p)?;
    let rate = r.setups_per_s;
    Ok(check(
        format!("bench ike --pin {load} (responder, x25519, PSK)"),
        format!("{:.0} setups/s", r.setups_per_s),
        spread_of(p, &ends, &|q| Ok(q.ike.setup_us_at(rate)))?,
        r.responder_us_per_setup,
        "µs per setup",
        p.validation.as_ref().and_then(|v| v.ike),
    ))
}

/// A validation: every kind of run with its repeats, and what else the machine did during
/// each pass.
#[derive(Debug, Clone, Serialize)]
pub struct Validation {
    /// The kinds of run.
    pub kinds: Vec<Kind>,
    /// Each pass's interference (none where /proc/stat could not be read).
    pub passes: Vec<Option<crate::calibrate::Busy>>,
}

/// Runs every check `args.repeat` times, interleaved.
pub fn measure(args: &ValidateArgs) -> Result<Validation, String> {
    let text = std::fs::read_to_string(&args.profile)
        .map_err(|e| format!("reading {}: {e}", args.profile.display()))?;
    let p = Profile::from_json(&text).map_err(|e| format!("{}: {e}", args.profile.display()))?;
    let kinds = TUNNELS.len() + IKE_LOADS.len();
    let mut per: Vec<Vec<Check>> = vec![Vec::new(); kinds];
    let mut passes = Vec::new();
    for pass in 1..=args.repeat {
        eprintln!("validate: pass {pass} of {}", args.repeat);
        let before = crate::calibrate::snapshot();
        for (i, t) in TUNNELS.into_iter().enumerate() {
            per[i].push(tunnel_check(&p, t, args.seconds)?);
        }
        for (i, (concurrency, rate)) in IKE_LOADS.into_iter().enumerate() {
            per[TUNNELS.len() + i].push(ike_check(&p, args.seconds, concurrency, rate)?);
        }
        passes.push(crate::calibrate::busy_since(before));
    }
    Ok(Validation { kinds: per.into_iter().map(Kind::of).collect(), passes })
}

/// The table: a row per kind of run, its repeats' errors, and the tallies.
pub fn render(v: &Validation) -> String {
    let mut s = render_kinds(&v.kinds);
    for (i, b) in v.passes.iter().enumerate() {
        if let Some(b) = b {
            s.push_str(&format!(
                "Pass {}: {:.1} % of the machine's CPU time stolen by the hypervisor, {:.1} % used by other processes.\n",
                i + 1,
                b.steal_pct,
                b.other_pct
            ));
        }
    }
    s
}

fn render_kinds(kinds: &[Kind]) -> String {
    let mut s = String::from(
        "| run | work | predicted (interval) | measured | errors | median |error| | inside |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for k in kinds {
        let Some(c) = k.checks.last() else { continue };
        let interval = c.interval.map_or(String::new(), |(lo, hi)| format!(" ({lo:.3}–{hi:.3})"));
        let errors: Vec<String> =
            k.checks.iter().map(|c| format!("{:+.1} %", c.error * 100.0)).collect();
        let inside = if k.with_interval > 0 {
            format!("{} of {}", k.inside, k.with_interval)
        } else {
            "– (one round)".into()
        };
        s.push_str(&format!(
            "| {} | {} | {:.3}{interval} {} | {:.3} {} | {} | {:.1} %{} | {inside} |\n",
            k.run,
            c.work,
            c.predicted,
            c.unit,
            c.measured,
            c.unit,
            errors.join(", "),
            k.median_abs_error * 100.0,
            if k.on_target { "" } else { " (over 10 %)" },
        ));
    }
    let on = kinds.iter().filter(|k| k.on_target).count();
    s.push_str(&format!(
        "\n{on} of {} kinds of run within {:.0} % (median |error| of their repeats); the \
         predicted and measured columns are the last repeat's.\n",
        kinds.len(),
        TARGET * 100.0
    ));
    let n: usize = kinds.iter().map(|k| k.with_interval).sum();
    if n > 0 {
        let inside: usize = kinds.iter().map(|k| k.inside).sum();
        s.push_str(&format!(
            "{inside} of {n} runs ({:.0} %) inside the interval `hipsec size` gives.\n",
            100.0 * inside as f64 / n as f64
        ));
    }
    s
}

/// The model's error this validation measured, by the kind of work.
pub fn model_error(v: &Validation) -> ModelError {
    let errors = |range: std::ops::Range<usize>| -> Vec<f64> {
        v.kinds
            .get(range)
            .into_iter()
            .flatten()
            .flat_map(|k| k.checks.iter().map(|c| c.error))
            .collect()
    };
    ModelError {
        date: node::log::rfc3339_ms(std::time::SystemTime::now()),
        data_path: ErrorBand::of(&errors(0..TUNNELS.len())),
        ike: ErrorBand::of(&errors(TUNNELS.len()..TUNNELS.len() + IKE_LOADS.len())),
    }
}

/// `--record`: the profile rewritten with this validation's errors.
fn record(args: &ValidateArgs, v: &Validation) -> Result<(), String> {
    let path = &args.profile;
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut p = Profile::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let m = model_error(v);
    let band = |b: &Option<ErrorBand>| {
        b.map_or("none".to_string(), |b| {
            format!(
                "median {:+.1} %, 90 % within {:+.1} … {:+.1} % over {} runs",
                b.median * 100.0,
                b.low * 100.0,
                b.high * 100.0,
                b.runs
            )
        })
    };
    eprintln!(
        "validate: recorded in {}: data path {}; IKE {}",
        path.display(),
        band(&m.data_path),
        band(&m.ike)
    );
    p.validation = Some(m);
    let json = serde_json::to_string_pretty(&p).map_err(|e| e.to_string())?;
    std::fs::write(path, json + "\n").map_err(|e| format!("writing {}: {e}", path.display()))
}

/// One run per row (the table of a single pass).
pub fn render_checks(checks: &[Check]) -> String {
    let mut s = String::from(
        "| run | work | predicted (interval) | measured | error | within 20 % | inside the interval |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for c in checks {
        let interval = c.interval.map_or(String::new(), |(lo, hi)| format!(" ({lo:.3}–{hi:.3})"));
        let inside = match c.inside {
            Some(true) => "yes",
            Some(false) => "no",
            None => "– (one round)",
        };
        s.push_str(&format!(
            "| {} | {} | {:.3}{interval} {} | {:.3} {} | {:+.1} % | {} | {inside} |\n",
            c.run,
            c.work,
            c.predicted,
            c.unit,
            c.measured,
            c.unit,
            c.error * 100.0,
            if c.within { "yes" } else { "no" }
        ));
    }
    let n = checks.iter().filter(|c| c.inside.is_some()).count();
    if n > 0 {
        let inside = checks.iter().filter(|c| c.inside == Some(true)).count();
        s.push_str(&format!("\n{inside} of {n} runs inside the profile's interval.\n"));
    }
    s
}

/// `hipsec lab validate`.
pub fn run(args: &ValidateArgs) -> Result<(), String> {
    let v = measure(args)?;
    if args.record {
        record(args, &v)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?);
    } else {
        print!("{}", render(&v));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_the_tolerance() {
        let c = check("r".into(), "w".into(), (1.1, 1.1, 1.1), 1.0, "CPU s", None);
        assert!((c.error - 0.1).abs() < 1e-9 && c.within);
        assert_eq!((c.interval, c.inside), (None, None), "one round: no interval");
        let c = check("r".into(), "w".into(), (0.7, 0.7, 0.7), 1.0, "CPU s", None);
        assert!(!c.within);
        let t = render_checks(&[c]);
        assert!(t.contains("-30.0 %") && t.contains("| no | – (one round) |"), "{t}");
    }

    /// The measured CPU inside the range the profile's ends predict, or outside it, whichever
    /// end is the higher.
    #[test]
    fn a_measurement_inside_or_outside_the_interval() {
        let c = check("r".into(), "w".into(), (1.0, 0.8, 1.2), 1.1, "CPU s", None);
        assert_eq!((c.interval, c.inside), (Some((0.8, 1.2)), Some(true)));
        let c = check("r".into(), "w".into(), (1.0, 1.2, 0.8), 1.3, "CPU s", None);
        assert_eq!((c.interval, c.inside), (Some((0.8, 1.2)), Some(false)));
        let t = render_checks(&[c]);
        assert!(t.contains("1.000 (0.800–1.200) CPU s") && t.contains("| no | no |"), "{t}");
        assert!(t.contains("0 of 1 runs inside the profile's interval."), "{t}");
    }

    /// A kind's summary: the median of its repeats' errors, and its inside count.
    #[test]
    fn repeats_of_a_kind() {
        let runs = [(1.05, 1.0), (1.3, 1.0), (0.98, 1.0)]
            .map(|(p, m)| check("r".into(), "w".into(), (p, p - 0.1, p + 0.1), m, "CPU s", None));
        let k = Kind::of(runs.to_vec());
        assert!((k.median_error - 0.05).abs() < 1e-9, "{k:?}");
        assert!((k.median_abs_error - 0.05).abs() < 1e-9 && k.on_target, "{k:?}");
        assert_eq!((k.inside, k.with_interval), (2, 3));
        let t = render_kinds(&[k]);
        assert!(t.contains("+5.0 %, +30.0 %, -2.0 %") && t.contains("| 2 of 3 |"), "{t}");
        assert!(t.contains("1 of 1 kinds of run within 10 %"), "{t}");
        assert!(t.contains("2 of 3 runs (67 %) inside"), "{t}");
    }

    /// A recorded error band widens the interval: a model that under-predicts by up to 20 %
    /// says the measurement may be up to 1 / 0.8 of its high end.
    #[test]
    fn a_recorded_error_widens_the_interval() {
        let band = ErrorBand::of(&[-0.2, -0.1, 0.0, 0.05, 0.1]).unwrap();
        assert!(
            (band.median - 0.0).abs() < 1e-12 && band.low < -0.17 && band.high > 0.08,
            "{band:?}"
        );
        let c = check("r".into(), "w".into(), (1.0, 0.9, 1.1), 1.3, "CPU s", Some(band));
        let (lo, hi) = c.interval.unwrap();
        assert!((hi - 1.1 / (1.0 + band.low)).abs() < 1e-12 && lo < 0.9, "{c:?}");
        assert_eq!(c.inside, Some(true), "{c:?}");
        let c = check("r".into(), "w".into(), (1.0, 0.9, 1.1), 1.3, "CPU s", None);
        assert_eq!(c.inside, Some(false), "without the band: {c:?}");
    }
}
