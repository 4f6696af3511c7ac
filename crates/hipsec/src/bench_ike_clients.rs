//! `hipsec bench ike --clients N`: a road-warrior concentrator's load. N distinct clients, each
//! with its own identity and X.509 certificate (ECDSA P-256, issued by a CA the run makes with
//! strongSwan's `pki`), connect once to one `%any` connection of a responder node, each asking
//! for a virtual IP (CP(CFG_REQUEST), RFC 7296 §2.19) from its pool, and stay up. Beside it, in
//! the same run and on the same topology as `hipsec bench ike`, the same N setups with a
//! pre-shared key and no virtual IP: the reference the certificate figures are a ratio to.
//!
//! Reported per phase: setups/s from the first IKE_SA_INIT to the N-th IKE_AUTH answer, the
//! responder's CPU per setup, its resident memory per client held (IKE SA, CHILD SA in the data
//! path, lease), and what its status says at the end: IKE SAs held, leases, distinct addresses.

use crate::bench_ike::{BenchIkeArgs, initiator_config, psk_responder_config};
use crate::bench_ike_gen::{self as loadgen, Counters, GenConfig};
use crate::bench_net::{Topo, load_avg, remove_stale};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wire::ikev2::Id;

const PREFIX: &str = "hbikc-";
/// The pool the clients' virtual IPs come from (RFC 7296 §2.19).
const POOL: &str = "10.16.0.0/16";
/// Most clients a run takes (the pool holds 65,534).
pub const MAX_CLIENTS: u64 = 20_000;

/// One phase: N setups with one kind of authentication.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// "psk" or "certificate".
    pub auth: &'static str,
    /// Clients asked for a virtual IP.
    pub virtual_ips: bool,
    /// Setups asked for.
    pub clients: u64,
    /// Setups completed, and given up.
    pub setups: u64,
    pub failed: u64,
    pub retransmits: u64,
    /// From the first IKE_SA_INIT to the last answer, s.
    pub seconds: f64,
    pub setups_per_s: f64,
    /// Responder CPU (all threads) per completed setup, µs.
    pub responder_us_per_setup: f64,
    /// Generator (this process) CPU per completed setup, µs.
    pub generator_us_per_setup: f64,
    /// Responder resident memory before the first setup and with every client up, KiB.
    pub responder_rss_kib_before: u64,
    pub responder_rss_kib_after: u64,
    /// (after − before) / setups, bytes.
    pub bytes_per_client: f64,
    /// What the responder's status says with every client up.
    pub ike_sas_at_end: usize,
    pub leases: usize,
    pub distinct_lease_addresses: usize,
    /// The first failure, if any.
    pub first_error: Option<String>,
}

/// The report of `--clients`.
#[derive(Debug, Clone, Serialize)]
pub struct ClientsReport {
    pub proposal: String,
    pub clients: u64,
    pub concurrency: usize,
    pub cores: usize,
    pub load_at_start: f64,
    pub load_at_end: f64,
    /// Seconds the run spent making the CA, the responder's and the clients' certificates.
    pub certificates_s: f64,
    /// The reference: PSK, no virtual IP.
    pub psk: Phase,
    /// Certificates and a virtual IP per client.
    pub certificate: Phase,
    /// certificate.setups_per_s / psk.setups_per_s.
    pub rate_ratio: f64,
    /// certificate.responder_us_per_setup / psk.responder_us_per_setup.
    pub cpu_ratio: f64,
    /// This process's pid (its namespaces are PREFIX-PID-a/b).
    pub bench_pid: u32,
}

fn pki(args: &[&str], out: &Path) -> Result<(), String> {
    let o = std::process::Command::new("pki")
        .args(args)
        .output()
        .map_err(|e| format!("pki: {e} (apt-get install strongswan-pki)"))?;
    if !o.status.success() {
        return Err(format!("pki {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr)));
    }
    std::fs::write(out, &o.stdout).map_err(|e| format!("{}: {e}", out.display()))
}

/// A key and a certificate for `name` (CN and subjectAltName dNSName) under the CA in `dir`.
fn issue(dir: &Path, name: &str) -> Result<(PathBuf, PathBuf), String> {
    let key = dir.join(format!("{name}.key"));
    let cert = dir.join(format!("{name}.pem"));
    pki(&["--gen", "--type", "ecdsa", "--size", "256", "--outform", "pem"], &key)?;
    let (ca, ca_key) = (dir.join("ca.pem"), dir.join("ca.key"));
    let (k, c, ck) = (key.to_string_lossy(), ca.to_string_lossy(), ca_key.to_string_lossy());
    let dn = format!("O=hipsec bench, CN={name}");
    pki(
        &[
            "--issue",
            "--cacert",
            &c,
            "--cakey",
            &ck,
            "--type",
            "priv",
            "--in",
            &k,
            "--dn",
            &dn,
            "--san",
            name,
            "--lifetime",
            "2",
            "--outform",
            "pem",
        ],
        &cert,
    )?;
    Ok((key, cert))
}

/// The CA (`ca.pem` also under `x509ca/`), the responder's certificate and `n` clients'.
fn certificates(dir: &Path, n: u64) -> Result<Vec<(PathBuf, PathBuf)>, String> {
    let ca_key = dir.join("ca.key");
    pki(&["--gen", "--type", "ecdsa", "--size", "256", "--outform", "pem"], &ca_key)?;
    let k = ca_key.to_string_lossy();
    let dn = "O=hipsec bench, CN=bench CA";
    let self_args =
        ["--self", "--ca", "--lifetime", "2", "--in", &k, "--dn", dn, "--outform", "pem"];
    pki(&self_args, &dir.join("ca.pem"))?;
    let anchors = dir.join("x509ca");
    std::fs::create_dir_all(&anchors).map_err(|e| format!("{}: {e}", anchors.display()))?;
    std::fs::copy(dir.join("ca.pem"), anchors.join("ca.pem")).map_err(|e| e.to_string())?;
    issue(dir, "responder.example")?;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        if i % 250 == 0 {
            eprintln!("bench ike: certificates {i}/{n} …");
        }
        out.push(issue(dir, &client_name(i))?);
    }
    Ok(out)
}

fn client_name(i: u64) -> String {
    format!("client-{i}.bench.example")
}

/// The clients' connections: each its own identity, key and chain; the CA as trust anchor.
fn client_configs(
    dir: &Path,
    proposal: &str,
    certs: &[(PathBuf, PathBuf)],
) -> Result<Vec<ike::Config>, String> {
    let ca = node::config::certs::certificates(&[dir.join("ca.pem")])?;
    let trust = Arc::new(ike::cert::TrustStore::new(&ca, &[]).map_err(|e| format!("CA: {e}"))?);
    let epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let base = initiator_config(proposal)?;
    let mut out = Vec::with_capacity(certs.len());
    for (i, (key, cert)) in certs.iter().enumerate() {
        let key = node::config::keys::private_key(key)?;
        let chain = node::config::certs::certificates(std::slice::from_ref(cert))?;
        let mut c = base.clone();
        c.local_id = Id::fqdn(&client_name(i as u64));
        c.auth = ike::AuthConfig::Certificate {
            key: Arc::new(key),
            chain,
            trust: trust.clone(),
            epoch_unix_s: epoch,
        };
        // A road warrior proposes any IPv4 address as its side of the CHILD SA, which the
        // responder narrows to the virtual IP it grants (§2.9).
        c.local_ts = vec![wire::ikev2::TrafficSelector::any(false)];
        out.push(c);
    }
    Ok(out)
}

fn cert_responder_config(topo: &Topo, proposal: &str) -> Result<PathBuf, String> {
    let d = topo.dir.display();
    let t = format!(
        "[interface]\nname = \"{}\"\naddresses = [\"10.0.2.1/24\"]\n\n\
         [network]\ntransport = \"udp\"\nlocal = \"192.0.2.2:4500\"\n\n\
         [control]\nsocket = \"{}\"\n\n[log]\nlevel = \"warn\"\n\n\
         [[connection]]\nname = \"rw\"\nremote_addrs = \"%any\"\npools = [\"rw\"]\n\
         proposals = [\"{proposal}\"]\n\
         [connection.local]\nauth = \"pubkey\"\nid = \"responder.example\"\n\
         key = \"{d}/responder.example.key\"\ncerts = [\"{d}/responder.example.pem\"]\n\
         [connection.remote]\nauth = \"pubkey\"\ncacerts = \"{d}/x509ca/\"\n\
         [connection.children.net]\nlocal_ts = [\"10.0.2.0/24\"]\nremote_ts = [\"{POOL}\"]\n\
         esp_proposals = [\"aes128gcm16\"]\nstart_action = \"none\"\n\n\
         [pools.rw]\naddrs = \"{POOL}\"\n",
        crate::bench_net::TUN,
        topo.sock(1).display()
    );
    let path = topo.dir.join("responder-rw.toml");
    std::fs::write(&path, t).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Resident memory of `pid`, KiB (`VmRSS` of /proc/PID/status).
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        })
        .unwrap_or(0)
}

/// Runs `configs.len()`… `n` setups against the node `pid` of `topo` and reads what it holds.
fn phase(
    topo: &Topo,
    pid: u32,
    (auth, configs, vips): (&'static str, Vec<ike::Config>, bool),
    n: u64,
    concurrency: usize,
    stop: &Arc<AtomicBool>,
) -> Result<Phase, String> {
    let g = GenConfig {
        configs,
        vips: if vips { vec![IpAddr::V4(Ipv4Addr::UNSPECIFIED)] } else { Vec::new() },
        limit: Some(n),
        local: "192.0.2.1:0".parse().map_err(|_| "address")?,
        remote: "192.0.2.2:500".parse::<SocketAddr>().map_err(|_| "address")?,
        concurrency,
        rate: None,
        delete: false,
    };
    let rss_before = rss_kib(pid);
    let me = std::process::id();
    let (n0, g0) = (
        node::netns::cpu_seconds(pid).unwrap_or(f64::NAN),
        node::netns::cpu_seconds(me).unwrap_or(f64::NAN),
    );
    let counters = Arc::new(Counters::default());
    let done = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let worker =
        loadgen::spawn_in(topo.ns[0].clone(), g, Arc::clone(&counters), Arc::clone(&done))?;
    // Every setup answered or given up (the crate's retransmissions end in minutes at most).
    let mut last_report = Instant::now();
    let mut interrupted = false;
    loop {
        let s = counters.snapshot();
        if s.setups + s.failed >= n {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        if last_report.elapsed() >= Duration::from_secs(2) {
            last_report = Instant::now();
            eprintln!("bench ike: {auth}: {}/{n} up, {} failed …", s.setups, s.failed);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let seconds = t0.elapsed().as_secs_f64();
    let (n1, g1) = (
        node::netns::cpu_seconds(pid).unwrap_or(f64::NAN),
        node::netns::cpu_seconds(me).unwrap_or(f64::NAN),
    );
    done.store(true, Ordering::Relaxed);
    let first_error = worker.join().map_err(|_| "generator thread panicked".to_string())??;
    if interrupted {
        return Err("interrupted; cleaned up".into());
    }
    // The last CHILD SAs reach the data path just after their IKE_AUTH answers leave.
    std::thread::sleep(Duration::from_millis(300));
    let rss_after = rss_kib(pid);
    let status: Value = node::status(&topo.sock(1))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    let leases = status["ike"]["leases"].as_array().cloned().unwrap_or_default();
    let distinct: BTreeSet<&str> = leases.iter().filter_map(|l| l["address"].as_str()).collect();
    let c = counters.snapshot();
    let per = c.setups.max(1) as f64;
    Ok(Phase {
        auth,
        virtual_ips: vips,
        clients: n,
        setups: c.setups,
        failed: c.failed,
        retransmits: c.retransmits,
        seconds,
        setups_per_s: c.setups as f64 / seconds,
        responder_us_per_setup: (n1 - n0) * 1e6 / per,
        generator_us_per_setup: (g1 - g0) * 1e6 / per,
        responder_rss_kib_before: rss_before,
        responder_rss_kib_after: rss_after,
        bytes_per_client: (rss_after as f64 - rss_before as f64) * 1024.0 / per,
        ike_sas_at_end: status["ike"]["ike_sas"].as_array().map_or(0, Vec::len),
        leases: leases.len(),
        distinct_lease_addresses: distinct.len(),
        first_error,
    })
}

/// Both phases, each against a freshly started responder.
pub(crate) fn measure(a: &BenchIkeArgs, stop: &Arc<AtomicBool>) -> Result<ClientsReport, String> {
    let n = a.clients.unwrap_or(0);
    let load_at_start = load_avg();
    remove_stale(PREFIX);
    let proposal = format!("aes128gcm16-prfsha256-{}", a.group);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    let psk = {
        let mut topo = Topo::new(PREFIX)?;
        let cfg = psk_responder_config(&topo, &proposal)?;
        let pid = topo.start_node(1, &cfg)?;
        eprintln!("bench ike: {n} setups with a pre-shared key (the reference) …");
        let configs = vec![initiator_config(&proposal)?];
        phase(&topo, pid, ("psk", configs, false), n, a.concurrency, stop)?
    };
    let mut topo = Topo::new(PREFIX)?;
    let t0 = Instant::now();
    let certs = certificates(&topo.dir, n)?;
    let configs = client_configs(&topo.dir, &proposal, &certs)?;
    let certificates_s = t0.elapsed().as_secs_f64();
    let cfg = cert_responder_config(&topo, &proposal)?;
    let pid = topo.start_node(1, &cfg)?;
    eprintln!("bench ike: {n} road warriors with certificates and virtual IPs …");
    let certificate = phase(&topo, pid, ("certificate", configs, true), n, a.concurrency, stop)?;
    let ratio = |x: f64, y: f64| if y > 0.0 { x / y } else { f64::NAN };
    Ok(ClientsReport {
        proposal,
        clients: n,
        concurrency: a.concurrency,
        cores,
        load_at_start,
        load_at_end: load_avg(),
        certificates_s,
        rate_ratio: ratio(certificate.setups_per_s, psk.setups_per_s),
        cpu_ratio: ratio(certificate.responder_us_per_setup, psk.responder_us_per_setup),
        psk,
        certificate,
        bench_pid: std::process::id(),
    })
}

/// The report as text.
pub fn render(r: &ClientsReport) -> String {
    let mut s = format!(
        "hipsec bench ike --clients {}: {} / ESP aes128gcm16, {} initiators in flight, every IKE SA kept\n\
         load average {:.2} at start, {:.2} at end; {} cores; certificates made in {:.1} s (pki)\n\n",
        r.clients,
        r.proposal,
        r.concurrency,
        r.load_at_start,
        r.load_at_end,
        r.cores,
        r.certificates_s
    );
    s += "phase                       setups  failed  setups/s  responder µs/setup  generator µs/setup  \
          B/client  IKE SAs  leases (distinct)\n";
    for p in [&r.psk, &r.certificate] {
        let name =
            if p.virtual_ips { format!("{} + virtual IP", p.auth) } else { p.auth.to_string() };
        s += &format!(
            "{:26}  {:6}  {:6}  {:8.0}  {:18.0}  {:18.0}  {:8.0}  {:7}  {} ({})\n",
            name,
            p.setups,
            p.failed,
            p.setups_per_s,
            p.responder_us_per_setup,
            p.generator_us_per_setup,
            p.bytes_per_client,
            p.ike_sas_at_end,
            p.leases,
            p.distinct_lease_addresses
        );
    }
    s += &format!(
        "\ncertificates + virtual IPs against PSK, same run: {:.2}× the setup rate, {:.2}× the \
         responder's CPU per setup\n",
        r.rate_ratio, r.cpu_ratio
    );
    for p in [&r.psk, &r.certificate] {
        if let Some(e) = &p.first_error {
            s += &format!("{}: first failure: {e}\n", p.auth);
        }
    }
    s
}
