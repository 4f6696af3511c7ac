//! What the namespace benchmarks share (`hipsec bench tunnel`, `hipsec bench rekey`): two
//! namespaces joined by a veth, a hipsec node in each (this same binary, `run -c`), iperf3
//! between them, and the machine's load. Everything is removed on drop, and stale leftovers of
//! a killed run at the next start.
//!
//! ```text
//!   ns PREFIX-PID-a                                   ns PREFIX-PID-b
//!   10.99.0.1/24 hbtun0 (TUN)                         hbtun0 (TUN) 10.99.0.2/24
//!   192.0.2.1/24 hb-a  ================ veth ================  hb-b 192.0.2.2/24
//! ```

use serde_json::Value;
use std::fs::File;
use std::io::Read;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Pings per RTT measurement.
pub(crate) const PINGS: u16 = 20;
/// The TUN device of the benchmark nodes.
pub(crate) const TUN: &str = "hbtun0";

pub(crate) fn sa_keys(suite: &str, seed: u8) -> Result<String, String> {
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

pub(crate) fn sh(args: &[&str]) -> Result<(), String> {
    let out =
        Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args[0]))?;
    if !out.status.success() {
        return Err(format!("{}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

pub(crate) fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes namespaces (and their processes) and temp dirs left by runs that no longer exist.
pub(crate) fn remove_stale(prefix: &str) {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else { continue };
        let Some(rest) = name.strip_prefix(prefix) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid_alive(pid) {
            continue;
        }
        eprintln!("bench: removing stale namespace {name}");
        if let Ok(p) = Command::new("ip").args(["netns", "pids", name]).output() {
            for q in String::from_utf8_lossy(&p.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-TERM", q]).status();
            }
        }
        let _ = Command::new("ip").args(["netns", "del", name]).status();
        let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("{prefix}{pid}")));
    }
}

/// Sends SIGTERM (the node's clean shutdown) to a child we started and waits for it.
pub(crate) fn stop_child(c: &mut Child) {
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
pub(crate) struct Topo {
    pub(crate) ns: [String; 2],
    pub(crate) dir: PathBuf,
    pub(crate) children: Vec<Child>,
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
    pub(crate) fn new(prefix: &str) -> Result<Topo, String> {
        let pid = std::process::id();
        let base = format!("{prefix}{pid}");
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

    pub(crate) fn sock(&self, side: usize) -> PathBuf {
        self.dir.join(format!("node{side}.sock"))
    }

    pub(crate) fn config(&self, side: usize, suite: &str, queues: u32) -> Result<PathBuf, String> {
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
    pub(crate) fn start_node(&mut self, side: usize, config: &Path) -> Result<u32, String> {
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

    pub(crate) fn ping(&self, side: usize, dst: Ipv4Addr) -> Result<Vec<Duration>, String> {
        let ns = self.ns[side].clone();
        std::thread::spawn(move || {
            node::netns::enter(&ns).map_err(|e| format!("setns {ns}: {e}"))?;
            node::netns::ping(dst, PINGS, Duration::from_millis(20)).map_err(|e| e.to_string())
        })
        .join()
        .map_err(|_| "ping thread panicked".to_string())?
    }

    /// One iperf3 TCP transfer from A to `dst` (an address of B); returns iperf3's JSON.
    /// `mss`: the TCP maximum segment size (iperf3 -M), for smaller packets than the path's;
    /// `gbps`: the rate of all flows together (iperf3 -b, per flow), none for unpaced.
    pub(crate) fn iperf(
        &mut self,
        dst: &str,
        seconds: u32,
        congestion: &str,
        (parallel, mss, gbps): (u32, Option<u16>, Option<f64>),
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
            .args(mss.map(|m| ["-M".to_string(), m.to_string()]).into_iter().flatten())
            .args(
                gbps.map(|g| {
                    let per_flow = (g * 1e9 / f64::from(parallel.max(1))).round() as u64;
                    ["-b".to_string(), per_flow.to_string()]
                })
                .into_iter()
                .flatten(),
            )
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
pub(crate) fn congestion_control(name: &str) -> Result<String, String> {
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
pub(crate) fn machine_jiffies() -> (u64, u64) {
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

pub(crate) fn load_avg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(f64::NAN)
}

pub(crate) fn mean_ms(v: &[Duration]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().map(|d| d.as_secs_f64()).sum::<f64>() * 1e3 / v.len() as f64
}

/// Runs `measure` with a flag that SIGINT/SIGTERM set (so the topology is cleaned up); with
/// `json` prints its report as JSON and returns None, else returns it for the table.
pub(crate) fn measured<R: serde::Serialize>(
    json: bool,
    measure: impl FnOnce(&std::sync::Arc<AtomicBool>) -> Result<R, String>,
) -> Result<Option<R>, String> {
    let stop = node::netns::stop_flag().map_err(|e| format!("signal handler: {e}"))?;
    let r = measure(&stop)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
        return Ok(None);
    }
    Ok(Some(r))
}
