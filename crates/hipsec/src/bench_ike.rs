//! `hipsec bench ike`: complete IKEv2 setups per second — IKE_SA_INIT +
//! IKE_AUTH with its CHILD SA installed in the responder's data path (RFC 7296 §1.2) — between
//! a built-in initiator load generator (`bench_ike_gen`, in one namespace) and a responder node
//! (`hipsec run`, in another), beside the rate the same setups' DH, PRF and AUTH operations
//! allow when run alone on one core in the same run (`bench_ike_crypto`).
//!
//! ```text
//!   ns PREFIX-PID-a                                ns PREFIX-PID-b
//!   generator (this process, a thread)             hipsec run (responder, %any, PSK)
//!   192.0.2.1:any  hb-a ========== veth ========== hb-b  192.0.2.2:500 (IKE)
//! ```

use crate::bench_ike_crypto::{self as cr, CryptoOnly, Inputs};
use crate::bench_ike_gen::{self as loadgen, Counters, GenConfig, Snapshot};
use crate::bench_net::{TUN, Topo, load_avg, machine_jiffies, measured, remove_stale};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wire::ikev2::{Id, TrafficSelector};

const PREFIX: &str = "hbike-";
const PSK: &str = "bench secret";
const ID_I: &str = "bench.example";
const ID_R: &str = "responder.example";
const ESP: &str = "aes128gcm16";

/// Arguments of `hipsec bench ike`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchIkeArgs {
    /// Seconds of each timed round.
    #[arg(long, default_value_t = 5)]
    pub seconds: u32,
    /// Timed rounds (the figure is their median).
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Initiators in flight at once (the node asks for cookies above 64 half-open SAs).
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// Start handshakes at this fixed rate (setups/s) instead of as fast as the responder
    /// answers: a handshake load below saturation, as a site sees it. --concurrency still caps
    /// those in flight.
    #[arg(long, value_name = "SETUPS_PER_S")]
    pub rate: Option<f64>,
    /// Pin the responder node (all its threads) to the last CPU and this process (the
    /// generator) to CPU 0, as `netperf -T` does. On a small VM where a message's wake-up of a
    /// thread on the other vCPU is charged to the thread, this turns a 70–250 µs spread of the
    /// responder's CPU per setup into a repeatable figure; calibration and validation pin.
    #[arg(long)]
    pub pin: bool,
    /// DH group of the IKE SA: x25519, ecp256 or ecp384.
    #[arg(long, default_value = "x25519")]
    pub group: String,
    /// Keep every IKE SA instead of deleting it once up (the responder's state then grows).
    #[arg(long)]
    pub no_delete: bool,
    /// A road-warrior load instead: N distinct clients, each with its own certificate
    /// (made by the run with strongSwan's `pki`) asking for a virtual IP from a pool, set up
    /// once each and kept; beside the same N setups with a pre-shared key.
    #[arg(long, value_name = "N")]
    pub clients: Option<u64>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One timed round.
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    /// Wall seconds.
    pub seconds: f64,
    /// What the generator counted.
    pub counts: Snapshot,
    /// Complete setups per second.
    pub setups_per_s: f64,
    /// Responder node CPU, in cores (CPU seconds per second), all threads.
    pub responder_cores: f64,
    /// Responder CPU by thread name, in cores.
    pub responder_threads: BTreeMap<String, f64>,
    /// Context switches (voluntary + involuntary) per setup of each responder thread: each
    /// change the IKE driver makes in the data path is a round trip to a lane and back.
    pub responder_switches_per_setup: BTreeMap<String, f64>,
    /// Generator (this process) CPU, in cores.
    pub generator_cores: f64,
    /// Busy fraction of the whole machine (every core, every process).
    pub machine_busy: f64,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The IKE proposal both ends used.
    pub proposal: String,
    /// The CHILD SA proposal.
    pub esp_proposal: String,
    /// "psk".
    pub auth: &'static str,
    /// Initiators in flight.
    pub concurrency: usize,
    /// The fixed start rate asked for, if any (setups/s).
    pub rate: Option<f64>,
    /// Responder and generator pinned to one CPU each (`--pin`).
    pub pinned: bool,
    /// Each IKE SA deleted once up.
    pub delete: bool,
    /// Cores of the machine.
    pub cores: usize,
    /// 1-minute load average at the start and at the end.
    pub load_at_start: f64,
    /// At the end.
    pub load_at_end: f64,
    /// The reference: two trials before the load and two after; the rate is their median.
    pub crypto_only: CryptoOnly,
    /// Timed rounds.
    pub rounds: Vec<Round>,
    /// Median complete setups per second over the rounds.
    pub setups_per_s: f64,
    /// The round with the median rate.
    pub median_round: usize,
    /// setups_per_s / (crypto_only.setups_per_s_per_core × cores).
    pub ratio_to_crypto_bound: f64,
    /// Responder CPU µs per setup (median round).
    pub responder_us_per_setup: f64,
    /// Generator CPU µs per setup (median round).
    pub generator_us_per_setup: f64,
    /// The responder's `ike.counters` and `control` after the run.
    pub responder_counters: Value,
    /// IKE SAs the responder held at the end.
    pub responder_ike_sas_at_end: usize,
    /// The generator's first failure, if any.
    pub first_error: Option<String>,
    /// This process's pid (its namespaces are PREFIX-PID-a/b).
    pub bench_pid: u32,
}

fn ts(third: u8) -> TrafficSelector {
    TrafficSelector {
        ip_protocol: 0,
        start_port: 0,
        end_port: u16::MAX,
        start_addr: IpAddr::V4(Ipv4Addr::new(10, 0, third, 0)),
        end_addr: IpAddr::V4(Ipv4Addr::new(10, 0, third, 255)),
    }
}

/// The initiators' connection, mirroring the responder's `[[connection]]`.
pub(crate) fn initiator_config(proposal: &str) -> Result<ike::Config, String> {
    let ike_suites = node::config::proposal::ike_suites(proposal)?;
    let child_suites = node::config::proposal::esp_suites(ESP)?;
    Ok(ike::Config {
        local_id: Id::fqdn(ID_I),
        remote_id: Some(Id::fqdn(ID_R)),
        auth: ike::AuthConfig::Psk(zeroize::Zeroizing::new(PSK.as_bytes().to_vec())),
        ike_suites,
        child_suites,
        local_ts: vec![ts(1)],
        remote_ts: vec![ts(2)],
        mode: ike::Mode::Tunnel,
        more_children: Vec::new(),
        peer_eap: None,
    })
}

pub(crate) fn psk_responder_config(
    topo: &Topo,
    proposal: &str,
) -> Result<std::path::PathBuf, String> {
    let t = format!(
        "[interface]\nname = \"{TUN}\"\naddresses = [\"10.0.2.1/24\"]\n\n\
         [network]\ntransport = \"udp\"\nlocal = \"192.0.2.2:4500\"\n\n\
         [control]\nsocket = \"{}\"\n\n\
         # One line per event would be 3 lines per setup at info; warnings still show.\n\
         [log]\nlevel = \"warn\"\n\n\
         [[connection]]\nname = \"any\"\nremote_addrs = \"%any\"\nproposals = [\"{proposal}\"]\n\
         [connection.local]\nauth = \"psk\"\nid = \"{ID_R}\"\n\
         [connection.remote]\nauth = \"psk\"\nid = \"{ID_I}\"\n\
         [connection.children.net]\nlocal_ts = [\"10.0.2.0/24\"]\nremote_ts = [\"10.0.1.0/24\"]\n\
         esp_proposals = [\"{ESP}\"]\nstart_action = \"none\"\n\n\
         [secrets.ike-1]\nid = [\"{ID_R}\", \"{ID_I}\"]\nsecret = \"{PSK}\"\n",
        topo.sock(1).display()
    );
    let path = topo.dir.join("responder.toml");
    std::fs::write(&path, t).map_err(|e| format!("{}: {e}", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Context switches of each thread of `pid` so far, summed by thread name.
fn switches_by_name(pid: u32) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return m };
    for t in dir.flatten() {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        *m.entry(name.trim().to_string()).or_insert(0) += context_switches(&status);
    }
    m
}

/// Voluntary + involuntary context switches from a /proc status file.
fn context_switches(status: &str) -> u64 {
    status
        .lines()
        .filter(|l| l.contains("ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().last().and_then(|v| v.parse::<u64>().ok()))
        .sum()
}

/// CPU seconds of each thread of `pid`, summed by thread name.
fn threads_by_name(pid: u32) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for (_, name, s) in node::netns::thread_cpu_seconds(pid).unwrap_or_default() {
        *m.entry(name).or_insert(0.0) += s;
    }
    m
}

/// Moves every thread of `pid` to one CPU (`taskset -a -p -c`, util-linux); threads it starts
/// later inherit the mask.
fn pin_to(pid: u32, cpu: usize) -> Result<(), String> {
    pin_list(pid, &cpu.to_string())
}

/// Moves every thread of `pid` to the CPUs of `list` (`0`, `0-1`, `0,2`).
fn pin_list(pid: u32, list: &str) -> Result<(), String> {
    let out = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", list, &pid.to_string()])
        .output()
        .map_err(|e| format!("--pin: taskset: {e} (apt-get install util-linux)"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("--pin: taskset {pid}: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Our own CPUs as `--pin` found them, given back when dropped: the pinned generator must not
/// leave this process on one CPU, or whatever it runs next (the tunnel runs of a calibration
/// or validation, whose nodes and iperf3 inherit the mask) runs on one core of two.
struct OwnAffinity(Option<String>);

impl OwnAffinity {
    fn save() -> OwnAffinity {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|l| l.trim().to_string());
        OwnAffinity(list)
    }
}

impl Drop for OwnAffinity {
    fn drop(&mut self) {
        if let Some(list) = &self.0
            && let Err(e) = pin_list(std::process::id(), list)
        {
            eprintln!("bench ike: could not give back the CPUs {list}: {e}");
        }
    }
}

fn check_args(a: &BenchIkeArgs) -> Result<(), String> {
    if a.seconds == 0 || a.seconds > 3600 {
        return Err(format!("--seconds {}: give 1 to 3600", a.seconds));
    }
    if a.rounds == 0 || a.rounds > 100 {
        return Err(format!("--rounds {}: give 1 to 100", a.rounds));
    }
    if a.concurrency == 0 || a.concurrency > 10_000 {
        return Err(format!("--concurrency {}: give 1 to 10000", a.concurrency));
    }
    if let Some(r) = a.rate
        && !(1.0..=1_000_000.0).contains(&r)
    {
        return Err(format!("--rate {r}: give 1 to 1000000 setups/s"));
    }
    if let Some(n) = a.clients
        && !(1..=crate::bench_ike_clients::MAX_CLIENTS).contains(&n)
    {
        let max = crate::bench_ike_clients::MAX_CLIENTS;
        return Err(format!("--clients {n}: give 1 to {max}"));
    }
    cr::group(&a.group).map(|_| ())
}

/// Runs the benchmark (needs root: namespaces and a TUN device).
pub fn run(a: &BenchIkeArgs) -> Result<(), String> {
    check_args(a)?;
    if a.clients.is_some() {
        use crate::bench_ike_clients as clients;
        if let Some(r) = measured(a.json, |stop| clients::measure(a, stop))? {
            print!("{}", clients::render(&r));
        }
        return Ok(());
    }
    if let Some(r) = measured(a.json, |stop| measure(a, stop))? {
        print!("{}", render(&r));
    }
    Ok(())
}

fn sleep_unless(stop: &AtomicBool, d: Duration) -> Result<(), String> {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stop.load(Ordering::Relaxed) {
            return Err("interrupted; cleaned up".into());
        }
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
    Ok(())
}

/// The crypto-only reference for `aes128gcm16-prfsha256-GROUP` (DH, PRF and AUTH of both
/// ends, on this thread): `trials` × `trial`.
pub(crate) fn crypto_reference(
    group: &str,
    trials: u32,
    trial: Duration,
) -> Result<CryptoOnly, String> {
    let config = initiator_config(&format!("aes128gcm16-prfsha256-{group}"))?;
    cr::measure(&reference_inputs(&config)?, trials, trial)
}

/// What the crypto-only reference computes on: the initiator's real IKE_SA_INIT (its size is
/// what the AUTH's PRF reads) and the configured suites.
fn reference_inputs(config: &ike::Config) -> Result<Inputs, String> {
    let remote: SocketAddr = "192.0.2.2:500".parse().map_err(|_| "address")?;
    let ep = ike::Endpoints { local: "192.0.2.1:50000".parse().map_err(|_| "address")?, remote };
    let (_, msg1) = ike::initiator::start(config.clone(), crypto::default_provider(), ep, 0)
        .map_err(|e| format!("initiator config: {e}"))?;
    let suite = *config.ike_suites.first().ok_or("no IKE suite")?;
    let esp = config.child_suites.first().ok_or("no ESP suite")?.esp;
    Ok(Inputs {
        suite,
        esp,
        psk: PSK.as_bytes().to_vec(),
        id_i: Id::fqdn(ID_I),
        id_r: Id::fqdn(ID_R),
        msg2: msg1.clone(),
        msg1,
    })
}

pub(crate) fn measure(a: &BenchIkeArgs, stop: &Arc<AtomicBool>) -> Result<Report, String> {
    let load_at_start = load_avg();
    remove_stale(PREFIX);
    let proposal = format!("aes128gcm16-prfsha256-{}", a.group);
    let config = initiator_config(&proposal)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    // The reference first, alone on this core (nothing else of ours runs yet).
    let local: SocketAddr = "192.0.2.1:0".parse().map_err(|_| "address")?;
    let remote: SocketAddr = "192.0.2.2:500".parse().map_err(|_| "address")?;
    let inputs = reference_inputs(&config)?;
    eprintln!("bench ike: crypto-only reference (2 × 1 s on one core, again after the load) …");
    let mut crypto_only = cr::measure(&inputs, 2, Duration::from_secs(1))?;
    eprintln!(
        "bench ike: crypto only: {:.0} setups/s per core ({:.0} µs per setup, both ends)",
        crypto_only.setups_per_s_per_core, crypto_only.us_per_setup
    );

    let mut topo = Topo::new(PREFIX)?;
    let cfg = psk_responder_config(&topo, &proposal)?;
    let pid = topo.start_node(1, &cfg)?;
    let _own = a.pin.then(OwnAffinity::save);
    if a.pin {
        pin_to(pid, cores.saturating_sub(1))?;
        pin_to(std::process::id(), 0)?;
    }
    let counters = Arc::new(Counters::default());
    let done = Arc::new(AtomicBool::new(false));
    let g = GenConfig {
        configs: vec![config],
        vips: Vec::new(),
        limit: None,
        local,
        remote,
        concurrency: a.concurrency,
        rate: a.rate,
        delete: !a.no_delete,
    };
    let worker =
        loadgen::spawn_in(topo.ns[0].clone(), g, Arc::clone(&counters), Arc::clone(&done))?;
    let stop_gen = |worker: loadgen::Worker| {
        done.store(true, Ordering::Relaxed);
        worker.join().map_err(|_| "generator thread panicked".to_string())?
    };

    // Warm-up: the first setups, caches, the node's tables at their working size.
    if let Err(e) = sleep_unless(stop, Duration::from_secs(1)) {
        let _ = stop_gen(worker);
        return Err(e);
    }
    if counters.snapshot().setups == 0 {
        let why = stop_gen(worker)?;
        let log = std::fs::read_to_string(topo.dir.join("node1.log")).unwrap_or_default();
        return Err(format!(
            "no setup completed in the warm-up second ({}); responder log:\n{log}",
            why.unwrap_or_else(|| "no failure reported".into())
        ));
    }
    let me = std::process::id();
    let mut rounds = Vec::new();
    for r in 0..a.rounds {
        let (c0, t0, th0) = (counters.snapshot(), Instant::now(), threads_by_name(pid));
        let sw0 = switches_by_name(pid);
        let (n0, g0, m0) = (
            node::netns::cpu_seconds(pid).unwrap_or(f64::NAN),
            node::netns::cpu_seconds(me).unwrap_or(f64::NAN),
            machine_jiffies(),
        );
        if let Err(e) = sleep_unless(stop, Duration::from_secs(u64::from(a.seconds))) {
            let _ = stop_gen(worker);
            return Err(e);
        }
        let secs = t0.elapsed().as_secs_f64();
        let counts = counters.snapshot().since(&c0);
        let n1 = node::netns::cpu_seconds(pid).unwrap_or(f64::NAN);
        let g1 = node::netns::cpu_seconds(me).unwrap_or(f64::NAN);
        let m1 = machine_jiffies();
        let th1 = threads_by_name(pid);
        let per = counts.setups.max(1) as f64;
        let responder_switches_per_setup = switches_by_name(pid)
            .into_iter()
            .map(|(k, v)| {
                (k.clone(), v.saturating_sub(sw0.get(&k).copied().unwrap_or(0)) as f64 / per)
            })
            .collect();
        let responder_threads = th1
            .iter()
            .map(|(k, v)| (k.clone(), (v - th0.get(k).copied().unwrap_or(0.0)) / secs))
            .filter(|(_, v)| *v >= 0.005)
            .collect();
        let round = Round {
            seconds: secs,
            counts,
            setups_per_s: counts.setups as f64 / secs,
            responder_cores: (n1 - n0) / secs,
            responder_threads,
            responder_switches_per_setup,
            generator_cores: (g1 - g0) / secs,
            machine_busy: (m1.0 - m0.0) as f64 / (m1.1 - m0.1).max(1) as f64,
        };
        eprintln!(
            "bench ike: round {}/{}: {:.0} setups/s, responder {:.2} cores, generator {:.2} cores, \
             machine {:.0}% busy, {} failed, {} retransmits",
            r + 1,
            a.rounds,
            round.setups_per_s,
            round.responder_cores,
            round.generator_cores,
            round.machine_busy * 100.0,
            counts.failed,
            counts.retransmits
        );
        rounds.push(round);
    }
    let first_error = stop_gen(worker)?;
    // The reference again, now that the load is off: the machine's speed drifts (other work).
    let after = cr::measure(&inputs, 2, Duration::from_secs(1))?;
    crypto_only.trials.extend(after.trials);
    crypto_only.setups_per_s_per_core = cr::median(&crypto_only.trials);
    crypto_only.us_per_setup = 1e6 / crypto_only.setups_per_s_per_core;
    let status: Value = node::status(&topo.sock(1))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    let rates: Vec<f64> = rounds.iter().map(|r| r.setups_per_s).collect();
    let setups_per_s = cr::median(&rates);
    let median_round = rates.iter().position(|r| *r == setups_per_s).unwrap_or_else(|| {
        // An even number of rounds: the lower of the two middle ones.
        let mut idx: Vec<usize> = (0..rates.len()).collect();
        idx.sort_by(|&x, &y| rates[x].total_cmp(&rates[y]));
        idx.get((rates.len() - 1) / 2).copied().unwrap_or(0)
    });
    let m = &rounds[median_round];
    let per_setup = |cores: f64| cores * 1e6 / m.setups_per_s;
    Ok(Report {
        proposal,
        esp_proposal: ESP.into(),
        auth: "psk",
        concurrency: a.concurrency,
        rate: a.rate,
        pinned: a.pin,
        delete: !a.no_delete,
        cores,
        load_at_start,
        load_at_end: load_avg(),
        ratio_to_crypto_bound: cr::ratio(setups_per_s, crypto_only.setups_per_s_per_core, cores),
        responder_us_per_setup: per_setup(m.responder_cores),
        generator_us_per_setup: per_setup(m.generator_cores),
        crypto_only,
        median_round,
        setups_per_s,
        responder_counters: serde_json::json!({
            "ike": status["ike"]["counters"],
            "control": status["control"],
        }),
        responder_ike_sas_at_end: status["ike"]["ike_sas"].as_array().map_or(0, Vec::len),
        rounds,
        first_error,
        bench_pid: me,
    })
}

/// The report as text.
pub fn render(r: &Report) -> String {
    let c = &r.crypto_only;
    let m = &r.rounds[r.median_round.min(r.rounds.len().saturating_sub(1))];
    let mut s = format!(
        "hipsec bench ike: {} / ESP {}, {}, {} initiators in flight{}, {}\n\
         load average {:.2} at start, {:.2} at end; {} cores\n\n",
        r.proposal,
        r.esp_proposal,
        r.auth.to_uppercase(),
        r.concurrency,
        r.rate.map_or(String::new(), |x| format!(" at most, started at {x:.0}/s")),
        if r.delete { "each IKE SA deleted once up" } else { "IKE SAs kept" },
        r.load_at_start,
        r.load_at_end,
        r.cores
    );
    s += &format!(
        "crypto only, one core: {:.0} setups/s ({:.0} µs per setup, both ends: 2 × DH keygen \
         {:.1} µs, 2 × DH agree {:.1} µs, 2 × key schedule {:.1} µs, 4 × PSK AUTH {:.1} µs)\n\
         trials (before the load, then after): {}\n\n",
        c.setups_per_s_per_core,
        c.us_per_setup,
        c.dh_keygen_us,
        c.dh_agree_us,
        c.key_schedule_us,
        c.psk_auth_us,
        c.trials.iter().map(|t| format!("{t:.0}")).collect::<Vec<_>>().join(", ")
    );
    s += "round  setups/s  responder cores  generator cores  machine busy  failed  retransmits\n";
    for (i, x) in r.rounds.iter().enumerate() {
        s += &format!(
            "{:5}  {:8.0}  {:15.2}  {:15.2}  {:11.0}%  {:6}  {:11}\n",
            i + 1,
            x.setups_per_s,
            x.responder_cores,
            x.generator_cores,
            x.machine_busy * 100.0,
            x.counts.failed,
            x.counts.retransmits
        );
    }
    let th: Vec<String> = m.responder_threads.iter().map(|(k, v)| format!("{k} {v:.2}")).collect();
    let sw: Vec<String> =
        m.responder_switches_per_setup.iter().map(|(k, v)| format!("{k} {v:.1}")).collect();
    s += &format!(
        "\ncomplete setups (IKE_SA_INIT + IKE_AUTH, CHILD SA installed): {:.0}/s (median)\n\
         crypto-only bound on {} cores: {:.0}/s; ratio measured / bound = {:.2}\n\
         CPU per setup: responder {:.0} µs, generator {:.0} µs (crypto alone: {:.0} µs both ends)\n\
         responder threads (cores): {}; context switches per setup: {}\n\
         responder at the end: {} IKE SAs, counters {}\n",
        r.setups_per_s,
        r.cores,
        c.setups_per_s_per_core * r.cores as f64,
        r.ratio_to_crypto_bound,
        r.responder_us_per_setup,
        r.generator_us_per_setup,
        c.us_per_setup,
        th.join(", "),
        sw.join(", "),
        r.responder_ike_sas_at_end,
        r.responder_counters["ike"]
    );
    if let Some(e) = &r.first_error {
        s += &format!("first failure: {e}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_add_both_kinds() {
        let st = "Name:\thipsec\nvoluntary_ctxt_switches:\t3515\nnonvoluntary_ctxt_switches:\t28\n";
        assert_eq!(context_switches(st), 3543);
        assert_eq!(context_switches(""), 0);
    }

    #[test]
    fn bad_arguments_name_their_field() {
        let ok = BenchIkeArgs {
            seconds: 1,
            rounds: 1,
            concurrency: 1,
            rate: None,
            pin: false,
            group: "x25519".into(),
            no_delete: false,
            clients: None,
            json: false,
        };
        assert!(check_args(&ok).is_ok());
        let e = |a: BenchIkeArgs| check_args(&a).unwrap_err();
        assert!(e(BenchIkeArgs { seconds: 0, ..ok.clone() }).starts_with("--seconds"));
        assert!(e(BenchIkeArgs { rounds: 0, ..ok.clone() }).starts_with("--rounds"));
        assert!(e(BenchIkeArgs { concurrency: 0, ..ok.clone() }).starts_with("--concurrency"));
        assert!(e(BenchIkeArgs { rate: Some(0.0), ..ok.clone() }).starts_with("--rate"));
        assert!(e(BenchIkeArgs { rate: Some(f64::NAN), ..ok.clone() }).starts_with("--rate"));
        assert!(e(BenchIkeArgs { clients: Some(0), ..ok.clone() }).starts_with("--clients"));
        assert!(e(BenchIkeArgs { group: "modp768".into(), ..ok }).starts_with("--group"));
    }
}
