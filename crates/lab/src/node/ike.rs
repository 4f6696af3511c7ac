//! hipsec nodes as IKEv2 security gateways (seed 003): the `[[connection]]` config of one
//! gateway ([`IkeGateway`]), and [`IkeNodes`], the running `hipsec run` processes of a set of
//! gateways with their JSON event logs and `hipsec status --json`.
//!
//! Each gateway owns a TUN device with a /32 address of its own; the scenario routes the far
//! inner network into it. The log is written as JSON lines (`[log] format = "json"`) so that
//! events (`ike-sa-up`, `child-sa-rekeyed`, `ike-sa-rekeyed`, ...) carry a millisecond timestamp.
//! The pre-shared key is a fixed lab secret, public by construction; the file is still 0600
//! because the node insists on it for files that hold keys.

use crate::error::LabError;
use crate::topology::Topology;
use serde_json::Value;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a node may take to answer on its control socket.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// The TUN device of every gateway (one per namespace).
pub const IKE_TUN: &str = "hipsec0";

/// One security gateway: where it runs, who it talks to, what it protects and how often it
/// rekeys. A zero rekey time means "never" (the node's own convention).
#[derive(Debug, Clone, PartialEq)]
pub struct IkeGateway {
    /// Namespace role in the topology, e.g. `gw1`.
    pub role: String,
    /// The TUN device's own address (/32).
    pub tun_addr: Ipv4Addr,
    /// Outer addresses: ours and the peer gateway's.
    pub local: IpAddr,
    pub remote: IpAddr,
    pub local_id: String,
    pub remote_id: String,
    /// Traffic selectors (CIDR): our side's network and the far one.
    pub local_ts: String,
    pub remote_ts: String,
    /// IKE proposal (swanctl syntax) and ESP proposal.
    pub proposal: String,
    pub esp_proposal: String,
    pub ike_rekey: Duration,
    pub child_rekey: Duration,
    pub rand_time: Duration,
    pub life_time: Duration,
    /// `start_action = "start"` (true) or `"none"` (waits for the peer).
    pub initiator: bool,
    /// `[data-path] scheduling = "other"`: ordinary threads, which a CPU cap (cgroup CFS quota)
    /// can throttle; the default SCHED_FIFO threads are outside the CFS quota.
    pub ordinary_threads: bool,
}

/// The lab's pre-shared key (public: it protects test traffic in namespaces only).
const LAB_PSK: &str = "hipsec lab seed 003 pre-shared key";

fn dur(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

impl IkeGateway {
    /// The node's config file.
    pub fn config(&self, socket: &Path) -> String {
        let mut t = format!(
            "# hipsec lab, IKEv2 security gateway {} (generated)\n\
             [interface]\nname = \"{IKE_TUN}\"\nmtu = 1500\naddresses = [\"{}/32\"]\n\n\
             [network]\nlocal = \"{}:4500\"\n\n[control]\nsocket = \"{}\"\n\n\
             [log]\nformat = \"json\"\n\n",
            self.role,
            self.tun_addr,
            self.local,
            socket.display()
        );
        if self.ordinary_threads {
            t += "[data-path]\nscheduling = \"other\"\n\n";
        }
        let _ = write!(
            t,
            "[[connection]]\nname = \"site\"\nremote_addrs = \"{}\"\nproposals = [\"{}\"]\n\
             rekey_time = \"{}\"\n\n\
             [connection.local]\nauth = \"psk\"\nid = \"{}\"\n\n\
             [connection.remote]\nauth = \"psk\"\nid = \"{}\"\n\n\
             [connection.children.net]\nlocal_ts = [\"{}\"]\nremote_ts = [\"{}\"]\n\
             esp_proposals = [\"{}\"]\nrekey_time = \"{}\"\nlife_time = \"{}\"\n\
             rand_time = \"{}\"\nstart_action = \"{}\"\n\n\
             [secrets.lab]\nid = [\"{}\", \"{}\"]\nsecret = \"{LAB_PSK}\"\n",
            self.remote,
            self.proposal,
            dur(self.ike_rekey),
            self.local_id,
            self.remote_id,
            self.local_ts,
            self.remote_ts,
            self.esp_proposal,
            dur(self.child_rekey),
            dur(self.life_time),
            dur(self.rand_time),
            if self.initiator { "start" } else { "none" },
            self.local_id,
            self.remote_id,
        );
        t
    }
}

/// One line of a node's JSON log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEvent {
    /// Unix time, ms.
    pub unix_ms: f64,
    pub event: String,
    /// The whole line.
    pub fields: Value,
}

/// One running `hipsec run`.
#[derive(Debug)]
struct IkeProc {
    role: String,
    child: Mutex<Child>,
    pid: u32,
    log: PathBuf,
    socket: PathBuf,
}

/// The gateways' nodes; dropping it stops them (SIGTERM, then SIGKILL) and removes their files.
#[derive(Debug)]
pub struct IkeNodes {
    exe: PathBuf,
    dir: PathBuf,
    nodes: Vec<IkeProc>,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Last `n` lines of a log file.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let t = lines[lines.len().saturating_sub(n)..].join("\n");
    if t.trim().is_empty() { "(stderr empty)".into() } else { t }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix ms of the node's RFC 3339 timestamp `2025-01-02T03:04:05.678Z`.
pub fn parse_ts(ts: &str) -> Option<f64> {
    let (date, time) = ts.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (y, mo, da) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':');
    let (h, mi) = (t.next()?.parse::<i64>().ok()?, t.next()?.parse::<i64>().ok()?);
    let s: f64 = t.next()?.parse().ok()?;
    let secs = days_from_civil(y, mo, da) * 86_400 + h * 3600 + mi * 60;
    Some(secs as f64 * 1e3 + s * 1e3)
}

impl IkeNodes {
    /// Starts one node per gateway (in order: put responders first), each in its namespace,
    /// and waits until every one answers on its control socket.
    pub fn start(exe: &Path, topo: &Topology, gateways: &[IkeGateway]) -> Result<Self, LabError> {
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("hlab-ike-{}-{seq}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
        let mut nodes = IkeNodes { exe: exe.to_path_buf(), dir, nodes: Vec::new() };
        for gw in gateways {
            let socket = nodes.dir.join(format!("{}.sock", gw.role));
            let cfg = nodes.dir.join(format!("{}.toml", gw.role));
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&cfg)
                .map_err(|e| LabError::io(format!("creating {}", cfg.display()), e))?;
            f.write_all(gw.config(&socket).as_bytes())
                .map_err(|e| LabError::io(format!("writing {}", cfg.display()), e))?;
            let p = nodes.spawn(topo.ns(&gw.role)?, &gw.role, &cfg, socket)?;
            nodes.nodes.push(p);
        }
        for n in &nodes.nodes {
            nodes.wait_ready(n)?;
        }
        Ok(nodes)
    }

    fn spawn(
        &self,
        ns: &str,
        role: &str,
        cfg: &Path,
        socket: PathBuf,
    ) -> Result<IkeProc, LabError> {
        let log = self.dir.join(format!("{role}.log"));
        let (child, pid) = super::spawn::spawn_node(&self.exe, ns, cfg, &log)?;
        Ok(IkeProc { role: role.to_string(), child: Mutex::new(child), pid, log, socket })
    }

    fn error(&self, role: &str, detail: String) -> LabError {
        LabError::Node { mode: "IKEv2 gateway".into(), node: role.to_string(), detail }
    }

    fn node(&self, role: &str) -> Result<&IkeProc, LabError> {
        self.nodes
            .iter()
            .find(|n| n.role == role)
            .ok_or_else(|| self.error(role, "no such gateway".into()))
    }

    fn alive(&self, n: &IkeProc) -> Result<(), LabError> {
        let mut c = n.child.lock().unwrap_or_else(|p| p.into_inner());
        match c.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                Err(self
                    .error(&n.role, format!("exited ({status}); stderr:\n{}", tail(&n.log, 12))))
            }
            Err(e) => Err(self.error(&n.role, format!("cannot poll the process: {e}"))),
        }
    }

    fn wait_ready(&self, n: &IkeProc) -> Result<(), LabError> {
        let t0 = Instant::now();
        loop {
            self.alive(n)?;
            if UnixStream::connect(&n.socket).is_ok() {
                return Ok(());
            }
            if t0.elapsed() > START_TIMEOUT {
                return Err(self.error(
                    &n.role,
                    format!(
                        "no control socket after {START_TIMEOUT:?}; stderr:\n{}",
                        tail(&n.log, 12)
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Fails (with the node's stderr) if a node exited.
    pub fn check(&self) -> Result<(), LabError> {
        self.nodes.iter().try_for_each(|n| self.alive(n))
    }

    /// The pid of `role`'s node.
    pub fn pid(&self, role: &str) -> Result<u32, LabError> {
        Ok(self.node(role)?.pid)
    }

    /// Every pid, in start order.
    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.pid).collect()
    }

    /// The events `role`'s node logged so far (lines that are not JSON events are skipped).
    pub fn events(&self, role: &str) -> Result<Vec<LogEvent>, LabError> {
        let n = self.node(role)?;
        let text = std::fs::read_to_string(&n.log)
            .map_err(|e| LabError::io(format!("reading {}", n.log.display()), e))?;
        Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| {
                // tracing-subscriber's JSON lines: the event's name is their message.
                let unix_ms = parse_ts(v["timestamp"].as_str()?)?;
                let event = v["message"].as_str()?.to_string();
                Some(LogEvent { unix_ms, event, fields: v })
            })
            .collect())
    }

    /// Waits until `role` logged `event` (checking that every node still runs).
    pub fn wait_event(&self, role: &str, event: &str, limit: Duration) -> Result<(), LabError> {
        let t0 = Instant::now();
        loop {
            self.check()?;
            if self.events(role)?.iter().any(|e| e.event == event) {
                return Ok(());
            }
            if t0.elapsed() > limit {
                let n = self.node(role)?;
                return Err(self.error(
                    role,
                    format!("no {event} after {limit:?}; stderr:\n{}", tail(&n.log, 12)),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `hipsec status --json` of `role`'s node.
    pub fn status(&self, role: &str) -> Result<Value, LabError> {
        let n = self.node(role)?;
        let out = crate::sys::run(
            &self.exe.to_string_lossy(),
            &["status", "--json", &n.socket.to_string_lossy()],
        )?;
        serde_json::from_str(out.trim())
            .map_err(|e| LabError::parse(format!("hipsec status --json of {role}"), e.to_string()))
    }

    /// The tail of `role`'s log, for error messages.
    pub fn log_tail(&self, role: &str, lines: usize) -> String {
        self.node(role).map_or_else(|e| e.to_string(), |n| tail(&n.log, lines))
    }
}

impl Drop for IkeNodes {
    fn drop(&mut self) {
        let mut guards: Vec<_> = self
            .nodes
            .iter()
            .map(|n| (n.pid, n.child.lock().unwrap_or_else(|p| p.into_inner())))
            .collect();
        super::spawn::stop_nodes(guards.iter_mut().map(|(pid, c)| (*pid, &mut **c)));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_unix_ms() {
        assert_eq!(parse_ts("1970-01-01T00:00:00.000Z"), Some(0.0));
        assert_eq!(parse_ts("2000-03-01T00:00:01.250Z"), Some(951_868_801_250.0));
        assert_eq!(parse_ts("2026-11-24T23:02:00.390Z"), Some(1_795_561_320_390.0));
        assert_eq!(parse_ts("yesterday"), None);
    }

    #[test]
    fn gateway_config_parses_as_toml_with_every_field() {
        let gw = IkeGateway {
            role: "gw1".into(),
            tun_addr: Ipv4Addr::new(10, 0, 1, 254),
            local: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            remote: IpAddr::V4(Ipv4Addr::new(198, 51, 100, 2)),
            local_id: "gw1.lab".into(),
            remote_id: "gw2.lab".into(),
            local_ts: "10.0.1.0/24".into(),
            remote_ts: "10.0.2.0/24".into(),
            proposal: "aes128gcm16-prfsha256-x25519".into(),
            esp_proposal: "aes128gcm16".into(),
            ike_rekey: Duration::from_secs(5),
            child_rekey: Duration::from_millis(1500),
            rand_time: Duration::from_millis(200),
            life_time: Duration::from_secs(7200),
            initiator: true,
            ordinary_threads: true,
        };
        let t = gw.config(Path::new("/tmp/gw1.sock"));
        let v: toml::Table = toml::from_str(&t).unwrap_or_default();
        assert_eq!(v["connection"][0]["rekey_time"].as_str(), Some("5000ms"), "{t}");
        let child = &v["connection"][0]["children"]["net"];
        assert_eq!(child["rekey_time"].as_str(), Some("1500ms"), "{t}");
        assert_eq!(child["start_action"].as_str(), Some("start"), "{t}");
        assert_eq!(v["data-path"]["scheduling"].as_str(), Some("other"), "{t}");
        assert_eq!(v["interface"]["addresses"][0].as_str(), Some("10.0.1.254/32"), "{t}");
    }
}
