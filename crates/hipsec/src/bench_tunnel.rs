//! `hipsec bench tunnel`: kernel TCP (iperf3) through a hipsec ESP tunnel between two network
//! namespaces, beside the same transfer over the plain veth in the same run (DESIGN rule 6):
//! throughput, ping RTT, CPU seconds of each hipsec node process and the service demand
//! (CPU µs per KB transferred, the netperf definition), as ratios tunnel/plain.
//!
//! ```text
//!   ns hbench-PID-a                                   ns hbench-PID-b
//!   10.99.0.1/24 hbtun0 (TUN)                         hbtun0 (TUN) 10.99.0.2/24
//!        |  hipsec run -c a.toml                 hipsec run -c b.toml  |
//!   192.0.2.1/24 hb-a  ================ veth ================  hb-b 192.0.2.2/24
//!   iperf3 client ───── plain: to 192.0.2.2 / tunnel: to 10.99.0.2 ─────► iperf3 server
//! ```
//! Needs root, `ip` and iperf3. Everything it makes is removed on exit, on SIGINT/SIGTERM, and
//! (stale leftovers of a killed run) at the next start.

use serde::Serialize;
use serde_json::Value;
use std::fs::File;
use std::io::Read;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Arguments of `hipsec bench tunnel`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchTunnelArgs {
    /// ESP suite: aes128gcm, aes256gcm, chacha20poly1305 or aes128cbc-sha256.
    #[arg(long, default_value = "aes128gcm")]
    pub suite: String,
    /// Seconds of iperf3 TCP per measurement (tunnel and plain each).
    #[arg(long, default_value_t = 10)]
    pub seconds: u32,
    /// TCP congestion control of both iperf3 transfers (iperf3 -C): "cubic" (the Linux
    /// default, CONFIG_DEFAULT_TCP_CONG), "bbr", "reno", ... or "system" for whatever
    /// net.ipv4.tcp_congestion_control says. Pinned by default so that runs on machines with
    /// different sysctls compare; the report names the one used.
    #[arg(long, default_value = "cubic")]
    pub congestion: String,
    /// Data-path lanes of each node (`[interface] queues`; one SA pair per lane): with more
    /// than one, use --parallel so that several flows can spread over the TUN queues.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub queues: u32,
    /// Rounds (each: plain, then tunnel); the table and the top-level JSON figures are the
    /// round with the median tunnel throughput, `rounds` lists them all.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub rounds: u32,
    /// Parallel TCP streams of each iperf3 transfer (iperf3 -P).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

const PREFIX: &str = "hbench-";
const PINGS: u16 = 20;
const TUN: &str = "hbtun0";

/// One path's figures.
#[derive(Debug, Clone, Serialize)]
pub struct PathResult {
    /// Receiver's throughput, Gbit/s.
    pub gbps: f64,
    /// Bytes the receiver got.
    pub bytes: u64,
    /// TCP retransmissions counted by the sender.
    pub retransmits: u64,
    /// Mean ping RTT, ms (before the transfer, idle path).
    pub rtt_ms: f64,
    /// Pings answered of those sent.
    pub pings_answered: usize,
    /// Busy fraction of the whole machine during the transfer (from /proc/stat).
    pub machine_busy: f64,
}

/// CPU of one node process during the tunnel transfer.
#[derive(Debug, Clone, Serialize)]
pub struct NodeCpu {
    /// "a" (iperf3 client side, encrypts the data) or "b" (server side, decrypts it).
    pub side: &'static str,
    /// utime + stime seconds during the transfer.
    pub cpu_s: f64,
    /// Per thread: name and seconds.
    pub threads: Vec<(String, f64)>,
    /// The node's own counters after the run (from its control socket).
    pub node_counters: Value,
    /// Its non-zero drop counters.
    pub drops: Value,
    /// Scheduling class of each data-path worker ("fifo" or "other", `[data-path]`).
    pub scheduling: Vec<String>,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Suite.
    pub suite: String,
    /// Carrier.
    pub transport: &'static str,
    /// TCP congestion control of the iperf3 transfers.
    pub congestion: String,
    /// Lanes of each node.
    pub queues: u32,
    /// Parallel TCP streams.
    pub parallel: u32,
    /// Seconds of each transfer.
    pub seconds: u32,
    /// The nodes' `HIPSEC_NODE_TUNING` (empty: every speed-up on).
    pub node_tuning: String,
    /// 1-minute load average at start (other work on the machine skews the figures).
    pub load_at_start: f64,
    /// Online CPUs.
    pub cpus: usize,
    /// This process (its namespaces were named `hbench-PID-a/b`).
    pub bench_pid: u32,
    /// Over the plain veth.
    pub plain: PathResult,
    /// Through the hipsec tunnel.
    pub tunnel: PathResult,
    /// Both node processes.
    pub nodes: Vec<NodeCpu>,
    /// Sum of the nodes' CPU seconds.
    pub hipsec_cpu_s: f64,
    /// hipsec CPU µs per KB (1024 bytes) received through the tunnel.
    pub service_demand_us_per_kb: f64,
    /// tunnel / plain throughput.
    pub throughput_ratio: f64,
    /// tunnel / plain mean RTT.
    pub rtt_ratio: f64,
    /// Every round, in order; the figures above are those of the median one (`median_round`).
    pub rounds: Vec<RoundSummary>,
    /// Index in `rounds` of the round reported above.
    pub median_round: usize,
}

/// One round's headline figures.
#[derive(Debug, Clone, Serialize)]
pub struct RoundSummary {
    /// Plain veth, Gbit/s.
    pub plain_gbps: f64,
    /// Tunnel, Gbit/s.
    pub tunnel_gbps: f64,
    /// tunnel / plain.
    pub throughput_ratio: f64,
    /// Both nodes' CPU µs per KB through the tunnel.
    pub service_demand_us_per_kb: f64,
}

fn sa_keys(suite: &str, seed: u8) -> Result<String, String> {
    let hx = |n: usize| -> String {
        (0..n).map(|i| format!("{:02x}", seed.wrapping_add(i as u8))).collect()
    };
    Ok(match suite {
        "aes128gcm" => format!("aead = \"aes128gcm\"\nkey = \"{}\"\n", hx(20)),
        "aes256gcm" => format!("aead = \"aes256gcm\"\nkey = \"{}\"\n", hx(36)),
        "chacha20poly1305" => format!("aead = \"chacha20poly1305\"\nkey = \"{}\"\n", hx(36)),
        "aes128cbc-sha256" => format!(
            "enc = \"aes128cbc\"\nenc-key = \"{}\"\nauth = \"sha256\"\nauth-key = \"{}\"\n",
            hx(16),
            hx(32)
        ),
        other => {
            return Err(format!(
                "--suite {other:?}: use aes128gcm, aes256gcm, chacha20poly1305 or aes128cbc-sha256"
            ));
        }
    })
}

fn sh(args: &[&str]) -> Result<(), String> {
    let out =
        Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args[0]))?;
    if !out.status.success() {
        return Err(format!("{}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes namespaces (and their processes) and temp dirs left by runs that no longer exist.
fn remove_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else { continue };
        let Some(rest) = name.strip_prefix(PREFIX) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid_alive(pid) {
            continue;
        }
        eprintln!("bench tunnel: removing stale namespace {name}");
        if let Ok(p) = Command::new("ip").args(["netns", "pids", name]).output() {
            for q in String::from_utf8_lossy(&p.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-TERM", q]).status();
            }
        }
        let _ = Command::new("ip").args(["netns", "del", name]).status();
        let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("{PREFIX}{pid}")));
    }
}

/// Sends SIGTERM (the node's clean shutdown) to a child we started and waits for it.
fn stop_child(c: &mut Child) {
    if let Ok(Some(_)) = c.try_wait() {
        return;
    }
    let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
    for _ in 0..50 {
        if let Ok(Some(_)) = c.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = c.kill();
    let _ = c.wait();
}

/// The topology; dropping it stops the children and removes the namespaces and the temp dir.
struct Topo {
    ns: [String; 2],
    dir: PathBuf,
    children: Vec<Child>,
}

impl Drop for Topo {
    fn drop(&mut self) {
        for c in &mut self.children {
            stop_child(c);
        }
        for ns in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Topo {
    fn new() -> Result<Topo, String> {
        let pid = std::process::id();
        let base = format!("{PREFIX}{pid}");
        let dir = std::env::temp_dir().join(&base);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let t = Topo { ns: [format!("{base}-a"), format!("{base}-b")], dir, children: Vec::new() };
        let [a, b] = &t.ns;
        sh(&["ip", "netns", "add", a])?;
        sh(&["ip", "netns", "add", b])?;
        sh(&[
            "ip", "link", "add", "hb-a", "netns", a, "type", "veth", "peer", "name", "hb-b",
            "netns", b,
        ])?;
        for (ns, dev, addr) in [(a, "hb-a", "192.0.2.1/24"), (b, "hb-b", "192.0.2.2/24")] {
            sh(&["ip", "-n", ns, "addr", "add", addr, "dev", dev])?;
            sh(&["ip", "-n", ns, "link", "set", dev, "up"])?;
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(t)
    }

    fn sock(&self, side: usize) -> PathBuf {
        self.dir.join(format!("node{side}.sock"))
    }

    fn config(&self, side: usize, suite: &str, queues: u32) -> Result<PathBuf, String> {
        let me = ["192.0.2.1", "192.0.2.2"][side];
        let peer = ["192.0.2.1", "192.0.2.2"][1 - side];
        let mut t = format!(
            "[interface]\nname = \"{TUN}\"\nmtu = 1500\nqueues = {queues}\n\
             addresses = [\"10.99.0.{}/24\"]\n\n\
             [network]\ntransport = \"udp\"\nlocal = \"{me}:4500\"\npeer = \"{peer}:4500\"\n\n\
             [control]\nsocket = \"{}\"\n\n",
            side + 1,
            self.sock(side).display()
        );
        // One SA pair per lane; lane k's inbound SPIs are k mod queues (node::lanes).
        for lane in 0..queues {
            let (spi_out, spi_in) = if side == 0 {
                (0x1000 + lane, 0x2000 + lane)
            } else {
                (0x2000 + lane, 0x1000 + lane)
            };
            let (seed_out, seed_in) = if side == 0 { (1, 101) } else { (101, 1) };
            let (seed_out, seed_in) = (seed_out + 7 * lane as u8, seed_in + 7 * lane as u8);
            for (name, dir, src, dst, spi, seed) in [
                ("out", "out", me, peer, spi_out, seed_out),
                ("in", "in", peer, me, spi_in, seed_in),
            ] {
                t += &format!(
                    "[[sa]]\nname = \"{name}\"\nlane = {lane}\ndirection = \"{dir}\"\n\
                     proto = \"esp\"\nmode = \"tunnel\"\nsrc = \"{src}\"\ndst = \"{dst}\"\n\
                     spi = {spi}\n{}\n",
                    sa_keys(suite, seed)?
                );
            }
        }
        t += "[[policy]]\nsrc = \"10.99.0.0/24\"\ndst = \"10.99.0.0/24\"\naction = \"protect\"\n\
              sas = [\"out\"]\n";
        let path = self.dir.join(format!("node{side}.toml"));
        std::fs::write(&path, t).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }

    /// Starts the node of `side` (this same binary, `run -c`) and waits for its control socket.
    /// Returns its pid (`ip netns exec` execs the command, so the child is the node).
    fn start_node(&mut self, side: usize, config: &Path) -> Result<u32, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let log_path = self.dir.join(format!("node{side}.log"));
        let log = File::create(&log_path).map_err(|e| e.to_string())?;
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns[side]])
            .arg(&exe)
            .args(["run", "-c"])
            .arg(config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("ip netns exec: {e}"))?;
        let pid = child.id();
        self.children.push(child);
        for _ in 0..200 {
            if node::status(&self.sock(side)).is_ok() {
                return Ok(pid);
            }
            if let Some(Ok(Some(_))) = self.children.last_mut().map(|c| c.try_wait()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        Err(format!("node {side} did not come up:\n{log}"))
    }

    fn ping(&self, side: usize, dst: Ipv4Addr) -> Result<Vec<Duration>, String> {
        let ns = self.ns[side].clone();
        std::thread::spawn(move || {
            node::netns::enter(&ns).map_err(|e| format!("setns {ns}: {e}"))?;
            node::netns::ping(dst, PINGS, Duration::from_millis(20)).map_err(|e| e.to_string())
        })
        .join()
        .map_err(|_| "ping thread panicked".to_string())?
    }

    /// One iperf3 TCP transfer from A to `dst` (an address of B); returns iperf3's JSON.
    fn iperf(
        &mut self,
        dst: &str,
        seconds: u32,
        congestion: &str,
        parallel: u32,
        stop: &AtomicBool,
    ) -> Result<Value, String> {
        let server = Command::new("ip")
            .args(["netns", "exec", &self.ns[1], "iperf3", "-s", "-1", "-B", dst])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("iperf3 server: {e}"))?;
        self.children.push(server);
        std::thread::sleep(Duration::from_millis(400));
        let mut client = Command::new("ip")
            .args(["netns", "exec", &self.ns[0], "iperf3", "-c", dst, "-J"])
            .args(["-t", &seconds.to_string(), "-C", congestion, "-P", &parallel.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("iperf3 client: {e}"))?;
        let mut out = client.stdout.take().ok_or("iperf3 client: no stdout")?;
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        });
        let deadline = Instant::now() + Duration::from_secs(u64::from(seconds) + 30);
        loop {
            if let Ok(Some(_)) = client.try_wait() {
                break;
            }
            if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
                stop_child(&mut client);
                return Err("interrupted (or iperf3 hung); cleaned up".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let text = reader.join().map_err(|_| "iperf3 reader panicked")?;
        let v: Value =
            serde_json::from_str(&text).map_err(|e| format!("iperf3 output is not JSON: {e}"))?;
        if let Some(e) = v.get("error") {
            return Err(format!("iperf3: {e}"));
        }
        Ok(v)
    }
}

/// The congestion control to ask iperf3 for: `name` if this kernel offers it, or the system's
/// default for "system".
fn congestion_control(name: &str) -> Result<String, String> {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/{f}"))
            .map(|s| s.trim().to_string())
            .map_err(|e| format!("/proc/sys/net/ipv4/{f}: {e}"))
    };
    if name == "system" {
        return read("tcp_congestion_control");
    }
    let offered = |avail: &str| avail.split_whitespace().any(|a| a == name);
    let avail = read("tcp_available_congestion_control")?;
    if offered(&avail) {
        return Ok(name.to_string());
    }
    // A module not loaded yet (tcp_bbr, say) is not listed until it is loaded.
    let _ = Command::new("modprobe").args(["-q", &format!("tcp_{name}")]).status();
    let avail = read("tcp_available_congestion_control")?;
    if offered(&avail) {
        Ok(name.to_string())
    } else {
        Err(format!("--congestion {name:?}: this kernel offers {avail} (or \"system\")"))
    }
}

/// (busy, total) jiffies of the whole machine from /proc/stat.
fn machine_jiffies() -> (u64, u64) {
    let t = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> = t
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = f.iter().take(8).sum();
    let idle = f.get(3).copied().unwrap_or(0) + f.get(4).copied().unwrap_or(0);
    (total.saturating_sub(idle), total)
}

fn load_avg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(f64::NAN)
}

fn mean_ms(v: &[Duration]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().map(|d| d.as_secs_f64()).sum::<f64>() * 1e3 / v.len() as f64
}

fn measure(
    topo: &mut Topo,
    dst: Ipv4Addr,
    seconds: u32,
    congestion: &str,
    parallel: u32,
    stop: &AtomicBool,
    around: &mut dyn FnMut(bool),
) -> Result<PathResult, String> {
    let rtts = topo.ping(0, dst)?;
    if rtts.is_empty() {
        return Err(format!("no ping reply from {dst}"));
    }
    let (b0, t0) = machine_jiffies();
    around(true);
    let v = topo.iperf(&dst.to_string(), seconds, congestion, parallel, stop)?;
    around(false);
    let (b1, t1) = machine_jiffies();
    let end = &v["end"];
    let recv = &end["sum_received"];
    Ok(PathResult {
        gbps: recv["bits_per_second"].as_f64().unwrap_or(0.0) / 1e9,
        bytes: recv["bytes"].as_u64().unwrap_or(0),
        retransmits: end["sum_sent"]["retransmits"].as_u64().unwrap_or(0),
        rtt_ms: mean_ms(&rtts),
        pings_answered: rtts.len(),
        machine_busy: (b1 - b0) as f64 / (t1 - t0).max(1) as f64,
    })
}

/// Runs the benchmark and returns the report.
pub fn measure_all(args: &BenchTunnelArgs, stop: &Arc<AtomicBool>) -> Result<Report, String> {
    if !(1..=600).contains(&args.seconds) {
        return Err(format!("--seconds {}: must be in 1..=600", args.seconds));
    }
    sa_keys(&args.suite, 0)?;
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if !root {
        return Err("needs root (network namespaces, TUN devices)".into());
    }
    if Command::new("iperf3").arg("--version").output().is_err() {
        return Err("iperf3 not found (apt-get install iperf3)".into());
    }
    let congestion = congestion_control(&args.congestion)?;
    let load = load_avg();
    remove_stale();
    eprintln!("bench tunnel: setting up namespaces (load average {load:.2})");
    let mut topo = Topo::new()?;
    let pids = [
        topo.start_node(0, &topo.config(0, &args.suite, args.queues)?)?,
        topo.start_node(1, &topo.config(1, &args.suite, args.queues)?)?,
    ];
    struct Round {
        plain: PathResult,
        tunnel: PathResult,
        cpu: [f64; 2],
        threads: Vec<Vec<(String, f64)>>,
    }
    let mut rounds: Vec<Round> = Vec::new();
    for round in 1..=args.rounds {
        eprintln!(
            "bench tunnel: round {round}/{}: plain veth, iperf3 {} s",
            args.rounds, args.seconds
        );
        let plain = measure(
            &mut topo,
            Ipv4Addr::new(192, 0, 2, 2),
            args.seconds,
            &congestion,
            args.parallel,
            stop,
            &mut |_| {},
        )?;
        eprintln!(
            "bench tunnel: round {round}/{}: hipsec tunnel ({}), iperf3 {} s",
            args.rounds, args.suite, args.seconds
        );
        let mut cpu0 = [0.0f64; 2];
        let mut cpu1 = [0.0f64; 2];
        let mut th0: Vec<Vec<(u32, String, f64)>> = vec![Vec::new(), Vec::new()];
        let mut th1 = th0.clone();
        let tunnel = measure(
            &mut topo,
            Ipv4Addr::new(10, 99, 0, 2),
            args.seconds,
            &congestion,
            args.parallel,
            stop,
            &mut |b| {
                for (i, &pid) in pids.iter().enumerate() {
                    let c = node::netns::cpu_seconds(pid).unwrap_or(f64::NAN);
                    let t = node::netns::thread_cpu_seconds(pid).unwrap_or_default();
                    if b {
                        (cpu0[i], th0[i]) = (c, t);
                    } else {
                        (cpu1[i], th1[i]) = (c, t);
                    }
                }
            },
        )?;
        let threads = (0..2)
            .map(|i| {
                th1[i]
                    .iter()
                    .map(|(tid, name, s)| {
                        let before = th0[i].iter().find(|x| x.0 == *tid).map_or(0.0, |x| x.2);
                        (name.clone(), s - before)
                    })
                    .collect()
            })
            .collect();
        rounds.push(Round { plain, tunnel, cpu: [cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]], threads });
    }
    let demand = |r: &Round| {
        let kb = r.tunnel.bytes as f64 / 1024.0;
        if kb > 0.0 { (r.cpu[0] + r.cpu[1]) * 1e6 / kb } else { f64::NAN }
    };
    // The round with the median tunnel throughput (the lower middle one of an even count).
    let mut order: Vec<usize> = (0..rounds.len()).collect();
    order.sort_by(|&a, &b| rounds[a].tunnel.gbps.total_cmp(&rounds[b].tunnel.gbps));
    let median_round = order[(order.len() - 1) / 2];
    let summaries = rounds
        .iter()
        .map(|r| RoundSummary {
            plain_gbps: r.plain.gbps,
            tunnel_gbps: r.tunnel.gbps,
            throughput_ratio: r.tunnel.gbps / r.plain.gbps,
            service_demand_us_per_kb: demand(r),
        })
        .collect();
    let mut nodes = Vec::new();
    for (i, side) in ["a", "b"].into_iter().enumerate() {
        let st: Value = node::status(&topo.sock(i))
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or(Value::Null);
        let drops: serde_json::Map<String, Value> = st["drops"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(_, v)| v.as_u64() != Some(0))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        nodes.push(NodeCpu {
            side,
            cpu_s: rounds[median_round].cpu[i],
            threads: rounds[median_round].threads[i].clone(),
            node_counters: st["node"].clone(),
            drops: Value::Object(drops),
            scheduling: st["workers"]
                .as_array()
                .map(|ws| {
                    ws.iter().map(|w| w["scheduling"].as_str().unwrap_or("-").to_string()).collect()
                })
                .unwrap_or_default(),
        });
    }
    drop(topo);
    let m = rounds.swap_remove(median_round);
    let hipsec_cpu_s = m.cpu[0] + m.cpu[1];
    Ok(Report {
        suite: args.suite.clone(),
        transport: "udp",
        congestion,
        queues: args.queues,
        parallel: args.parallel,
        seconds: args.seconds,
        node_tuning: std::env::var("HIPSEC_NODE_TUNING").unwrap_or_default(),
        load_at_start: load,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        bench_pid: std::process::id(),
        service_demand_us_per_kb: demand(&m),
        throughput_ratio: m.tunnel.gbps / m.plain.gbps,
        rtt_ratio: m.tunnel.rtt_ms / m.plain.rtt_ms,
        plain: m.plain,
        tunnel: m.tunnel,
        nodes,
        hipsec_cpu_s,
        rounds: summaries,
        median_round,
    })
}

/// Runs the benchmark and prints the table or JSON.
pub fn run(args: &BenchTunnelArgs) -> Result<(), String> {
    let stop = node::netns::stop_flag().map_err(|e| format!("signal handler: {e}"))?;
    let r = measure_all(args, &stop)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!(
        "hipsec bench tunnel: {} over UDP, {} lane(s), iperf3 TCP ({}, {} stream(s)) {} s each, \
         {} round(s), {} CPUs, load average {:.2} at start",
        r.suite,
        r.queues,
        r.congestion,
        r.parallel,
        r.seconds,
        r.rounds.len(),
        r.cpus,
        r.load_at_start
    );
    println!(
        "{:<16} {:>8} {:>9} {:>8} {:>13} {:>10} {:>8}",
        "path", "Gbit/s", "RTT ms", "retrans", "hipsec CPU s", "µs/KB", "busy"
    );
    println!(
        "{:<16} {:>8.2} {:>9.3} {:>8} {:>13} {:>10} {:>7.0}%",
        "plain veth",
        r.plain.gbps,
        r.plain.rtt_ms,
        r.plain.retransmits,
        "-",
        "-",
        r.plain.machine_busy * 100.0
    );
    println!(
        "{:<16} {:>8.2} {:>9.3} {:>8} {:>13} {:>10.2} {:>7.0}%",
        "hipsec tunnel",
        r.tunnel.gbps,
        r.tunnel.rtt_ms,
        r.tunnel.retransmits,
        format!("{:.2}+{:.2}", r.nodes[0].cpu_s, r.nodes[1].cpu_s),
        r.service_demand_us_per_kb,
        r.tunnel.machine_busy * 100.0
    );
    println!("{:<16} {:>8.3} {:>9.2}", "tunnel/plain", r.throughput_ratio, r.rtt_ratio);
    if r.rounds.len() > 1 {
        println!(
            "rounds (the one above is round {} of {}, the median tunnel throughput):",
            r.median_round + 1,
            r.rounds.len()
        );
        for (i, x) in r.rounds.iter().enumerate() {
            println!(
                "  {}: tunnel {:.2} Gbit/s, plain {:.2} Gbit/s, ratio {:.3}, {:.2} µs/KB",
                i + 1,
                x.tunnel_gbps,
                x.plain_gbps,
                x.throughput_ratio,
                x.service_demand_us_per_kb
            );
        }
    }
    for n in &r.nodes {
        let th: Vec<String> = n.threads.iter().map(|(t, s)| format!("{t} {s:.2}")).collect();
        println!(
            "node {} threads (CPU s): {} (scheduling {})",
            n.side,
            th.join(", "),
            n.scheduling.join(", ")
        );
        if n.drops.as_object().is_some_and(|m| !m.is_empty()) {
            println!("node {} drops: {}", n.side, n.drops);
        }
    }
    Ok(())
}
