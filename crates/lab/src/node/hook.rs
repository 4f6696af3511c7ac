//! The hook that sets the protected modes up with real hipsec nodes: for a mode, two
//! pairs of `hipsec run -c CONFIG` processes, one pair per IP family, in h1 and h2. Each node owns
//! a TUN device carrying new inner addresses (10.99.0.0/24, fd00:99::/64); the traffic tests target
//! h2's inner address, so every test packet crosses the routers as ESP/AH between the hosts' real
//! addresses (outer IPv4 for the IPv4 tests, outer IPv6 for the IPv6 tests).
//!
//! The lab relies only on the node's config file format (docs/node-example.toml) and its
//! `hipsec run -c` / control-socket interface. Keys are fixed lab keys, public by construction.

use super::config::{EspCarrier, INNER_V4, INNER_V6, config, describe};
use super::filter::NodeFilter;
use super::ike::{IkeGateway, IkeNodes};
use super::mode::{Mode, ModeGuard, ModeHook, NoProtection};
use crate::error::LabError;
use crate::topology::{Family, Topology};
use crate::traffic::runner::CONTROL_PORT;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a node may take to answer on its control socket.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Tunnel check: TCP connection attempts through the tunnel, each this long.
const PROBE_TRIES: u32 = 20;
const PROBE_TIMEOUT_MS: u64 = 250;
/// Starts hipsec nodes for each protected mode; `exe` is the `hipsec` binary.
#[derive(Debug, Clone)]
pub struct NodeHook {
    exe: PathBuf,
    esp_carrier: EspCarrier,
}

impl NodeHook {
    pub fn new(exe: impl Into<PathBuf>) -> Self {
        NodeHook { exe: exe.into(), esp_carrier: EspCarrier::default() }
    }

    /// Carrier of ESP-only modes (default raw IP).
    pub fn with_esp_carrier(mut self, c: EspCarrier) -> Self {
        self.esp_carrier = c;
        self
    }

    /// Carrier used for `mode` (AH and AH+ESP need raw IP).
    pub fn carrier(&self, mode: Mode) -> EspCarrier {
        match mode {
            Mode::Esp(_) => self.esp_carrier,
            _ => EspCarrier::Raw,
        }
    }
}

impl ModeHook for NodeHook {
    fn setup(&self, mode: Mode, topo: &Topology) -> Result<Box<dyn ModeGuard>, LabError> {
        self.setup_with(mode, topo, None)
    }

    fn setup_filtered(
        &self,
        mode: Mode,
        topo: &Topology,
        filter: &NodeFilter,
    ) -> Result<Box<dyn ModeGuard>, LabError> {
        self.setup_with(mode, topo, Some(filter))
    }

    fn start_ike(&self, topo: &Topology, gateways: &[IkeGateway]) -> Result<IkeNodes, LabError> {
        if !self.exe.is_file() {
            return Err(LabError::ModePending {
                mode: "IKEv2 gateways".into(),
                reason: format!("no hipsec binary at {}", self.exe.display()),
            });
        }
        IkeNodes::start(&self.exe, topo, gateways)
    }
}

impl NodeHook {
    fn setup_with(
        &self,
        mode: Mode,
        topo: &Topology,
        filter: Option<&NodeFilter>,
    ) -> Result<Box<dyn ModeGuard>, LabError> {
        if mode == Mode::None && filter.is_none() {
            return Ok(Box::new(NoProtection));
        }
        if !self.exe.is_file() {
            return Err(LabError::ModePending {
                mode: mode.to_string(),
                reason: format!("no hipsec binary at {}", self.exe.display()),
            });
        }
        let guard = NodeGuard::start(self, mode, topo, filter)?;
        Ok(Box::new(guard))
    }
}

/// One running `hipsec run` process.
#[derive(Debug)]
struct NodeProc {
    /// e.g. "h1 IPv4".
    name: String,
    child: Mutex<Child>,
    pid: u32,
    log: PathBuf,
    socket: PathBuf,
}

/// The nodes of one mode; dropping it stops them (SIGTERM, then SIGKILL) and removes the configs.
#[derive(Debug)]
pub struct NodeGuard {
    mode: String,
    dir: PathBuf,
    nodes: Vec<NodeProc>,
    note: String,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Last `n` lines of a log file.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let t = lines[lines.len().saturating_sub(n)..].join("\n");
    if t.trim().is_empty() { "(stderr empty)".into() } else { t }
}

impl NodeGuard {
    fn start(
        hook: &NodeHook,
        mode: Mode,
        topo: &Topology,
        filter: Option<&NodeFilter>,
    ) -> Result<NodeGuard, LabError> {
        let carrier = hook.carrier(mode);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("hlab-node-{}-{seq}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
        let mut guard = NodeGuard {
            mode: mode.to_string(),
            dir,
            nodes: Vec::new(),
            note: describe(mode, carrier, filter),
        };
        for family in [Family::V4, Family::V6] {
            let outer = [topo.addr("h1", family)?, topo.addr("h2", family)?];
            for (side, role) in ["h1", "h2"].into_iter().enumerate() {
                let tag = format!("{role}-{}", family.to_string().to_ascii_lowercase());
                let socket = guard.dir.join(format!("{tag}.sock"));
                let cfg = guard.dir.join(format!("{tag}.toml"));
                let mut text = config(mode, carrier, family, side, outer, &socket);
                if let Some(f) = filter.filter(|f| f.hosts.iter().any(|h| h == role)) {
                    text += &f.table();
                }
                std::fs::write(&cfg, text)
                    .map_err(|e| LabError::io(format!("writing {}", cfg.display()), e))?;
                let proc = guard.spawn(
                    &hook.exe,
                    topo.ns(role)?,
                    &format!("{role} {family}"),
                    &cfg,
                    socket,
                    &tag,
                )?;
                guard.nodes.push(proc);
            }
        }
        for n in &guard.nodes {
            guard.wait_ready(n)?;
        }
        for family in [Family::V4, Family::V6] {
            guard.wait_tunnel(hook, topo, family)?;
        }
        Ok(guard)
    }

    fn spawn(
        &self,
        exe: &Path,
        ns: &str,
        name: &str,
        cfg: &Path,
        socket: PathBuf,
        tag: &str,
    ) -> Result<NodeProc, LabError> {
        let log = self.dir.join(format!("{tag}.log"));
        let (child, pid) = super::spawn::spawn_node(exe, ns, cfg, &log)?;
        Ok(NodeProc { name: name.to_string(), child: Mutex::new(child), pid, log, socket })
    }

    fn error(&self, node: &str, detail: String) -> LabError {
        LabError::Node { mode: self.mode.clone(), node: node.to_string(), detail }
    }

    /// Fails if `n` exited; else Ok.
    fn alive(&self, n: &NodeProc) -> Result<(), LabError> {
        let mut c = n.child.lock().unwrap_or_else(|p| p.into_inner());
        match c.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                Err(self
                    .error(&n.name, format!("exited ({status}); stderr:\n{}", tail(&n.log, 12))))
            }
            Err(e) => Err(self.error(&n.name, format!("cannot poll the process: {e}"))),
        }
    }

    /// Waits until the node answers on its control socket (it then has its TUN and sockets).
    fn wait_ready(&self, n: &NodeProc) -> Result<(), LabError> {
        let t0 = Instant::now();
        loop {
            self.alive(n)?;
            if UnixStream::connect(&n.socket).is_ok() {
                return Ok(());
            }
            if t0.elapsed() > START_TIMEOUT {
                return Err(self.error(
                    &n.name,
                    format!(
                        "no control socket {} after {:?}; stderr:\n{}",
                        n.socket.display(),
                        START_TIMEOUT,
                        tail(&n.log, 12)
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A TCP connection attempt from h1 to h2's inner address must come back through the tunnel.
    fn wait_tunnel(
        &self,
        hook: &NodeHook,
        topo: &Topology,
        family: Family,
    ) -> Result<(), LabError> {
        let Some(dst) = self.target(family) else { return Ok(()) };
        let server = SocketAddr::new(dst, CONTROL_PORT).to_string();
        let args: Vec<String> = [
            "traffic",
            "probe",
            "--server",
            &server,
            "--tries",
            &PROBE_TRIES.to_string(),
            "--timeout-ms",
            &PROBE_TIMEOUT_MS.to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let res = topo.spawn("h1", &hook.exe, &args)?.wait_output();
        for n in &self.nodes {
            self.alive(n)?;
        }
        res.map(|_| ()).map_err(|e| {
            let logs: Vec<String> = self
                .nodes
                .iter()
                .filter(|n| n.name.ends_with(&family.to_string()))
                .map(|n| format!("[{}]\n{}", n.name, tail(&n.log, 6)))
                .collect();
            self.error(
                &format!("h1↔h2 {family} tunnel"),
                format!("not up: {e}; node stderr:\n{}", logs.join("\n")),
            )
        })
    }
}

impl ModeGuard for NodeGuard {
    fn pids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.pid).collect()
    }

    fn target(&self, family: Family) -> Option<IpAddr> {
        Some(match family {
            Family::V4 => INNER_V4[1].into(),
            Family::V6 => INNER_V6[1].into(),
        })
    }

    fn check(&self) -> Result<(), LabError> {
        self.nodes.iter().try_for_each(|n| self.alive(n))
    }

    fn note(&self) -> Option<String> {
        Some(self.note.clone())
    }
}

impl Drop for NodeGuard {
    fn drop(&mut self) {
        // SIGTERM all first (a clean shutdown removes the TUN device), then wait, then SIGKILL.
        let mut guards: Vec<_> = self
            .nodes
            .iter()
            .map(|n| (n.pid, n.child.lock().unwrap_or_else(|p| p.into_inner())))
            .collect();
        super::spawn::stop_nodes(guards.iter_mut().map(|(pid, c)| (*pid, &mut **c)));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
