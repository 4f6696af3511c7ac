//! The two HIP hosts of the scenario: namespaces `h1` (initiator) and `h2` (responder) on one
//! veth link (192.0.2.1/24 and 192.0.2.2/24, 2001:db8:1::1/64 and ::2/64), a host identity each
//! (`hipsec keygen --hip`), and one `hipsec run` per host with a `[hip]` section naming the
//! other's HIT and locator. The nodes are started and stopped per run, so that every base
//! exchange starts from no association; the namespaces and keys stay.
//!
//! ```text
//!   h1: hipsec0 HIT-1/28 ── l0 192.0.2.1 ══ l0 192.0.2.2 ── hipsec0 HIT-2/28 :h2
//! ```
//! The node drops the packet that meets its trap (and raises the acquire that starts the
//! exchange), so the trigger is a train of UDP datagrams about 0.1 ms apart, stopped at the
//! first answer from h2. A CPU cap ([`HipHosts::cap`]) can hold the initiator's node to a share of a
//! core: its cgroup is made when the node has started and goes when it stops.

use crate::cap::CpuCap;
use crate::error::LabError;
use crate::topology::{Family, Topology, TopologySpec};
use serde_json::Value;
use std::net::IpAddr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The initiator's and the responder's namespace roles.
pub const ROLES: [&str; 2] = ["h1", "h2"];
/// How long a node may take to answer on its control socket.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// The `hipsec` binary: `HIPSEC_BIN`, the running executable when it is `hipsec` (`hipsec lab
/// run`), else a `hipsec` beside the running executable or one folder up (cargo's `target/<profile>`
/// for tests).
pub fn locate_hipsec() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HIPSEC_BIN") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let exe = std::env::current_exe().ok()?;
    if exe.file_name().is_some_and(|n| n == "hipsec") {
        return Some(exe);
    }
    let dirs = exe.parent().into_iter().chain(exe.parent().and_then(|p| p.parent()));
    dirs.map(|d| d.join("hipsec")).find(|p| p.is_file())
}

/// One running `hipsec run`.
#[derive(Debug)]
struct NodeProc {
    child: Child,
    pid: u32,
}

/// The topology, the identities and (between `start` and `stop`) the two nodes.
#[derive(Debug)]
pub struct HipHosts {
    pub topo: Topology,
    exe: PathBuf,
    dir: PathBuf,
    /// HITs of h1 and h2.
    pub hits: [String; 2],
    nodes: Vec<NodeProc>,
    /// The initiator's CPU cap for the nodes started from now on: (share of a core, period µs).
    pub cap: Option<(f64, u64)>,
    /// The cap on the running initiator.
    applied: Option<CpuCap>,
}

/// `ping` statistics.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PingStats {
    pub sent: u64,
    pub received: u64,
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    pub mdev_ms: f64,
}

/// Parses iputils ping's summary (`N packets transmitted, M received` and `rtt min/avg/max/mdev
/// = a/b/c/d ms`).
pub fn parse_ping(out: &str) -> Result<PingStats, LabError> {
    let bad = |why: &str| LabError::parse("ping summary", format!("{why}: {}", out.trim()));
    let counts = out.lines().find(|l| l.contains("packets transmitted")).ok_or(bad("no counts"))?;
    let first = |s: &str| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok());
    let mut parts = counts.split(',');
    let sent = parts.next().and_then(first).ok_or(bad("no sent count"))?;
    let received = parts.next().and_then(first).ok_or(bad("no received count"))?;
    let rtt = out.lines().find(|l| l.starts_with("rtt ")).ok_or(bad("no rtt line"))?;
    let v: Vec<f64> = rtt
        .split('=')
        .nth(1)
        // A slow reply adds `, pipe N` after the unit: the values are the first word.
        .and_then(|r| r.split_whitespace().next())
        .map(|r| r.split('/').filter_map(|x| x.parse().ok()))
        .ok_or(bad("no rtt values"))?
        .collect();
    let [min_ms, avg_ms, max_ms, mdev_ms] = v[..] else { return Err(bad("not 4 rtt values")) };
    Ok(PingStats { sent, received, min_ms, avg_ms, max_ms, mdev_ms })
}

/// True if `ip -6 addr show` output lists `addr` (compared as addresses, not text).
fn has_addr(out: &str, addr: &str) -> bool {
    let Ok(want) = addr.parse::<std::net::Ipv6Addr>() else { return false };
    out.lines().filter_map(|l| l.trim().strip_prefix("inet6 ")).any(|l| {
        l.split('/').next().and_then(|a| a.parse::<std::net::Ipv6Addr>().ok()) == Some(want)
    })
}

impl HipHosts {
    /// Builds the namespaces and makes a host identity for each host.
    pub fn new(exe: &Path) -> Result<HipHosts, LabError> {
        let topo = Topology::new(TopologySpec::two_hosts())?;
        for ns in topo.namespaces() {
            // The HIT goes on the TUN device as it comes up: no duplicate address detection, or
            // `ping -I HIT` finds it tentative.
            for k in ["all", "default"] {
                crate::sys::run_in(
                    ns,
                    "sysctl",
                    &["-qw", &format!("net.ipv6.conf.{k}.accept_dad=0")],
                )?;
            }
        }
        let dir = std::env::temp_dir().join(format!("hlab-hip-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
        let mut hits = [String::new(), String::new()];
        for (i, hit) in hits.iter_mut().enumerate() {
            let key = dir.join(format!("{}.pem", ROLES[i]));
            let _ = std::fs::remove_file(&key);
            let k = key.to_string_lossy().into_owned();
            let exe_s = exe.to_string_lossy().into_owned();
            let out = crate::sys::run(&exe_s, &["keygen", "--hip", "--json", "-o", &k])?;
            let v: Value = serde_json::from_str(out.trim())
                .map_err(|e| LabError::parse("hipsec keygen --hip --json", e.to_string()))?;
            *hit = v["hit"]
                .as_str()
                .ok_or_else(|| LabError::parse("hipsec keygen --hip --json", "no `hit` field"))?
                .to_string();
        }
        Ok(HipHosts {
            topo,
            exe: exe.to_path_buf(),
            dir,
            hits,
            nodes: Vec::new(),
            cap: None,
            applied: None,
        })
    }

    fn socket(&self, i: usize) -> PathBuf {
        self.dir.join(format!("{}.sock", ROLES[i]))
    }

    fn log(&self, i: usize) -> PathBuf {
        self.dir.join(format!("{}.log", ROLES[i]))
    }

    /// The last `n` lines of host `i`'s node log.
    pub fn log_tail(&self, i: usize, n: usize) -> String {
        let text = std::fs::read_to_string(self.log(i)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let t = lines[lines.len().saturating_sub(n)..].join("\n");
        if t.trim().is_empty() { "(log empty)".into() } else { t }
    }

    fn node_error(&self, i: usize, detail: String) -> LabError {
        LabError::Node {
            mode: "HIP".into(),
            node: ROLES[i].into(),
            detail: format!("{detail}; log:\n{}", self.log_tail(i, 10)),
        }
    }

    /// The node config of host `i` with puzzle difficulty `k`. A capped initiator's data path
    /// runs as ordinary threads (`[data-path] scheduling = "other"`): the default SCHED_FIFO
    /// threads are outside the CFS quota, and cgroup v1 refuses to take them into a group with
    /// no real-time budget.
    pub fn config(&self, i: usize, k: u8) -> String {
        let sched = if i == 0 && self.cap.is_some() {
            "[data-path]\nscheduling = \"other\"\n\n"
        } else {
            ""
        };
        format!(
            "# hipsec lab, scenario hip-bex, {} (generated)\n\
             [interface]\nname = \"hipsec0\"\naddresses = [\"10.0.{me}.1/24\"]\n\n\
             [network]\ntransport = \"udp\"\nlocal = \"192.0.2.{me}:4500\"\n\n\
             [control]\nsocket = \"{sock}\"\n\n{sched}\
             [hip]\nidentity = \"{key}\"\npuzzle-k = {k}\n\n\
             [[hip.peer]]\nhit = \"{hit}\"\nlocator = \"192.0.2.{peer}\"\n",
            ROLES[i],
            me = i + 1,
            peer = 2 - i,
            sock = self.socket(i).display(),
            key = self.dir.join(format!("{}.pem", ROLES[i])).display(),
            hit = self.hits[1 - i],
        )
    }

    /// Starts both nodes (responder first) with puzzle difficulty `k` and waits until both
    /// answer on their control sockets.
    pub fn start(&mut self, k: u8) -> Result<(), LabError> {
        self.stop();
        for i in [1, 0] {
            let cfg = self.dir.join(format!("{}.toml", ROLES[i]));
            std::fs::write(&cfg, self.config(i, k))
                .map_err(|e| LabError::io(format!("writing {}", cfg.display()), e))?;
            let _ = std::fs::remove_file(self.socket(i));
            let ns = self.topo.ns(ROLES[i])?;
            let (child, pid) = crate::node::spawn::spawn_node(&self.exe, ns, &cfg, &self.log(i))?;
            self.nodes.push(NodeProc { child, pid });
        }
        for i in 0..2 {
            let t0 = Instant::now();
            while UnixStream::connect(self.socket(i)).is_err() {
                self.check()?;
                if t0.elapsed() > START_TIMEOUT {
                    return Err(
                        self.node_error(i, format!("no control socket after {START_TIMEOUT:?}"))
                    );
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // The HIT is on the TUN device once the node answers; wait until the kernel has it.
        let t0 = Instant::now();
        for (i, role) in ROLES.iter().enumerate() {
            while !has_addr(&self.topo.exec(role, "ip", &["-6", "addr", "show"])?, &self.hits[i]) {
                if t0.elapsed() > START_TIMEOUT {
                    return Err(self.node_error(i, "its HIT never appeared on a device".into()));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // Capped once up: the node's start (keys, TUN, pre-signed R1s) runs at full speed.
        if let Some((fraction, period_us)) = self.cap {
            let pid = self.pid(0).ok_or_else(|| self.node_error(0, "no process".into()))?;
            self.applied = Some(CpuCap::apply_with_period(pid, fraction, period_us)?);
        }
        Ok(())
    }

    /// The process id of host `i`'s running node.
    pub fn pid(&self, i: usize) -> Option<u32> {
        // Nodes are pushed responder first.
        self.nodes.get(1 - i.min(1)).map(|n| n.pid)
    }

    /// The cap on the running initiator.
    pub fn applied_cap(&self) -> Option<&CpuCap> {
        self.applied.as_ref()
    }

    /// CPU time host `i`'s node has run so far, all its live threads (`/proc/PID/task/*/schedstat`,
    /// ns), µs.
    pub fn cpu_us(&self, i: usize) -> Option<f64> {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.pid(i)?)).ok()?;
        let mut ns = 0u64;
        for t in tasks.flatten() {
            let s = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            ns += s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
        Some(ns as f64 / 1e3)
    }

    /// Fails if a started node exited.
    pub fn check(&mut self) -> Result<(), LabError> {
        let mut dead = None;
        for (j, n) in self.nodes.iter_mut().enumerate() {
            if let Ok(Some(st)) = n.child.try_wait() {
                dead = Some((j, st.to_string()));
            }
        }
        match dead {
            // Nodes are pushed responder first.
            Some((j, st)) => Err(self.node_error(1 - j, format!("exited ({st})"))),
            None => Ok(()),
        }
    }

    /// Stops both nodes (SIGTERM, then SIGKILL after the grace time).
    pub fn stop(&mut self) {
        let mut nodes: Vec<NodeProc> = self.nodes.drain(..).collect();
        crate::node::spawn::stop_nodes(nodes.iter_mut().map(|n| (n.pid, &mut n.child)));
        self.applied = None;
    }

    /// `hipsec status --json` of host `i`.
    pub fn status(&self, i: usize) -> Result<Value, LabError> {
        let exe = self.exe.to_string_lossy().into_owned();
        let sock = self.socket(i).to_string_lossy().into_owned();
        let out = crate::sys::run(&exe, &["status", "--json", &sock])?;
        serde_json::from_str(out.trim()).map_err(|e| {
            LabError::parse(format!("hipsec status --json of {}", ROLES[i]), e.to_string())
        })
    }

    /// h2's plain IPv6 address on the veth.
    pub fn plain_v6(&self, i: usize) -> Result<IpAddr, LabError> {
        self.topo.addr(ROLES[i], Family::V6)
    }

    /// Sends a UDP datagram from h1's HIT to h2's discard port about every 0.1 ms (a 50 µs
    /// sleep and the kernel's default 50 µs timer slack) until the first
    /// answer (h2's ICMPv6 port unreachable, back through ESP, fails the next send with
    /// ECONNREFUSED) or `limit`; true if an answer came. The base exchange happens on the way.
    /// (ping would not do: iputils ping backs off to one request per 10 ms while none is
    /// answered, which would put up to 10 ms of its own pacing into T4.)
    pub fn trigger(&self, limit: Duration) -> Result<bool, LabError> {
        let script = format!(
            "import socket,sys,time\n\
             s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM)\n\
             s.bind(('{src}',0))\n\
             s.connect(('{dst}',9))\n\
             end=time.time()+{secs}\n\
             while time.time()<end:\n\
             \x20 try: s.send(b'hip-bex')\n\
             \x20 except ConnectionRefusedError: sys.exit(0)\n\
             \x20 except OSError: pass\n\
             \x20 time.sleep(0.00005)\n\
             sys.exit(3)\n",
            src = self.hits[0],
            dst = self.hits[1],
            secs = limit.as_secs_f64()
        );
        let ns = self.topo.ns(ROLES[0])?;
        let cmd = format!("ip netns exec {ns} python3 -c <trigger>");
        let st = Command::new("ip")
            .args(["netns", "exec", ns, "python3", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|source| LabError::Spawn { cmd: cmd.clone(), source })?;
        match st.status.code() {
            Some(0) => Ok(true),
            Some(3) => Ok(false),
            _ => Err(LabError::Command {
                cmd,
                status: st.status.to_string(),
                stderr: String::from_utf8_lossy(&st.stderr).trim().to_string(),
            }),
        }
    }

    /// `count` pings from h1 to `dst` (from `src`) at 10 ms intervals.
    pub fn ping(&self, src: &str, dst: &str, count: u32) -> Result<PingStats, LabError> {
        let c = count.to_string();
        let out = self.topo.exec(
            ROLES[0],
            "ping",
            &["-6", "-n", "-q", "-c", &c, "-i", "0.01", "-W", "1", "-I", src, dst],
        )?;
        parse_ping(&out)
    }
}

impl Drop for HipHosts {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_summary_parses() {
        let out = "PING x\n\n--- x ping statistics ---\n50 packets transmitted, 49 received, 2% packet loss, time 520ms\nrtt min/avg/max/mdev = 0.041/0.062/0.188/0.021 ms\n";
        let p = parse_ping(out).unwrap_or(PingStats {
            sent: 0,
            received: 0,
            min_ms: 0.0,
            avg_ms: 0.0,
            max_ms: 0.0,
            mdev_ms: 0.0,
        });
        assert_eq!((p.sent, p.received), (50, 49));
        assert_eq!(p.avg_ms, 0.062);
        assert!(parse_ping("nothing").is_err());
    }

    #[test]
    fn ping_summary_with_a_pipe_parses() {
        // iputils appends `, pipe N` when replies overlap (a slow first reply).
        let out = "10 packets transmitted, 10 received, 0% packet loss, time 95ms\nrtt min/avg/max/mdev = 0.931/4.410/23.434/6.797 ms, pipe 2\n";
        let p = parse_ping(out).map(|p| (p.received, p.max_ms)).map_err(|e| e.to_string());
        assert_eq!(p, Ok((10, 23.434)));
    }
}
