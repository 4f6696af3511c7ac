//! The protected modes of `ipsec-netperf`, set up by real hipsec nodes (issue 3): for a mode, two
//! pairs of `hipsec run -c CONFIG` processes, one pair per IP family, in h1 and h2. Each node owns
//! a TUN device carrying new inner addresses (10.99.0.0/24, fd00:99::/64); the traffic tests target
//! h2's inner address, so every test packet crosses h1 — r1 — r2 — h2 as ESP/AH between the
//! hosts' real addresses (outer IPv4 for the IPv4 tests, outer IPv6 for the IPv6 tests).
//!
//! The lab relies only on the node's config file format (docs/node-example.toml) and its
//! `hipsec run -c` / control-socket interface. Keys are fixed lab keys, public by construction.

use super::ipsec_netperf::{EspSuite, Mode, ModeGuard, ModeHook, NoProtection};
use crate::error::LabError;
use crate::topology::{Family, Topology};
use crate::traffic::runner::CONTROL_PORT;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Inner (TUN) addresses of h1 and h2.
pub const INNER_V4: [Ipv4Addr; 2] = [Ipv4Addr::new(10, 99, 0, 1), Ipv4Addr::new(10, 99, 0, 2)];
pub const INNER_V6: [Ipv6Addr; 2] =
    [Ipv6Addr::new(0xfd00, 0x99, 0, 0, 0, 0, 0, 1), Ipv6Addr::new(0xfd00, 0x99, 0, 0, 0, 0, 0, 2)];

/// How long a node may take to answer on its control socket.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Tunnel check: TCP connection attempts through the tunnel, each this long.
const PROBE_TRIES: u32 = 20;
const PROBE_TIMEOUT_MS: u64 = 250;
/// After SIGTERM, how long the nodes get to remove their TUN devices before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// What carries ESP between the hosts. AH always goes over raw IP (protocol 51): the node does
/// not put AH in UDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EspCarrier {
    /// Raw IP protocol 50, like AH and like the seed's KAME stack: the AH/ESP comparison then
    /// compares protocols, not carriers.
    #[default]
    Raw,
    /// ESP in UDP port 4500 (RFC 3948), the node's batched path (GSO/GRO).
    Udp,
}

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

/// Which evaluator a node's `[filter]` table selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FilterEngine {
    /// `filter::Classifier` (tuple-space search, flat in the rule count).
    Classifier,
    /// `filter::LinearFilter` (the reference, rule by rule).
    Linear,
}

impl FilterEngine {
    /// The config value (`engine = "..."`).
    pub fn as_str(self) -> &'static str {
        match self {
            FilterEngine::Classifier => "classifier",
            FilterEngine::Linear => "linear",
        }
    }
}

/// A `[filter]` table for the nodes of some hosts:
/// `[filter]` / `rules = "/path/rules.txt"` / `engine = "classifier" | "linear"`; the node applies
/// it to packets entering from and leaving to its TUN device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFilter {
    /// The rule file (filter's rule language).
    pub rules: PathBuf,
    pub engine: FilterEngine,
    /// Roles whose nodes get the table (e.g. `["h2"]`); the other nodes run without a filter.
    pub hosts: Vec<String>,
}

impl NodeFilter {
    /// The TOML table appended to a node config.
    pub fn table(&self) -> String {
        format!(
            "\n[filter]\nrules = {}\nengine = \"{}\"\n",
            toml_string(&self.rules.display().to_string()),
            self.engine.as_str()
        )
    }
}

/// A TOML basic string (quotes and backslashes escaped).
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// True if `e` says a node refused its config because it does not know the `[filter]` table
/// (e.g. `unknown field `filter``): the node predates the filter integration.
pub fn filter_unsupported(e: &LabError) -> bool {
    match e {
        LabError::Node { detail, .. } => {
            let d = detail.to_ascii_lowercase();
            d.contains("filter") && (d.contains("unknown field") || d.contains("unknown key"))
        }
        _ => false,
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

/// Lab key material: `n` bytes derived from `seed` (fixed and public; never use outside the lab).
fn lab_key(seed: u8, n: usize) -> String {
    let mut s = String::from("0x");
    for i in 0..n {
        let _ = write!(s, "{:02x}", seed.wrapping_mul(31).wrapping_add(i as u8 * 7));
    }
    s
}

/// The `[[sa]]` key lines of an ESP suite.
fn esp_keys(suite: EspSuite, seed: u8) -> String {
    match suite {
        // 16-byte key || 4-byte salt (RFC 4106 §8.1).
        EspSuite::Aes128Gcm => format!("aead = \"aes128gcm\"\nkey = \"{}\"\n", lab_key(seed, 20)),
        EspSuite::AesCbcHmacSha1 => format!(
            "enc = \"aes128cbc\"\nenc-key = \"{}\"\nauth = \"sha1\"\nauth-key = \"{}\"\n",
            lab_key(seed, 16),
            lab_key(seed ^ 0x55, 20)
        ),
        EspSuite::TripleDesHmacSha1 => format!(
            "enc = \"3des\"\nenc-key = \"{}\"\nauth = \"sha1\"\nauth-key = \"{}\"\n",
            lab_key(seed, 24),
            lab_key(seed ^ 0x55, 20)
        ),
    }
}

/// The config of the node on side 0 (h1) or 1 (h2) for `family`.
fn config(
    mode: Mode,
    carrier: EspCarrier,
    family: Family,
    side: usize,
    outer: [IpAddr; 2],
    socket: &Path,
) -> String {
    let (me, peer) = (outer[side], outer[1 - side]);
    let (inner, net, tun) = match family {
        Family::V4 => (format!("{}/24", INNER_V4[side]), "10.99.0.0/24", "hlab4"),
        Family::V6 => (format!("{}/64", INNER_V6[side]), "fd00:99::/64", "hlab6"),
    };
    let (local, peer_ep, transport) = match carrier {
        EspCarrier::Raw => (me.to_string(), peer.to_string(), "raw"),
        EspCarrier::Udp => {
            (SocketAddr::new(me, 4500).to_string(), SocketAddr::new(peer, 4500).to_string(), "udp")
        }
    };
    let mut t = format!(
        "# hipsec lab, mode {mode}, {family}, {} (generated)\n\
         [interface]\nname = \"{tun}\"\nmtu = 1500\naddresses = [\"{inner}\"]\n\n\
         [network]\ntransport = \"{transport}\"\nlocal = \"{local}\"\npeer = \"{peer_ep}\"\n\n\
         [control]\nsocket = \"{}\"\n\n",
        ["h1", "h2"][side],
        socket.display()
    );
    // SPIs name the sender (0x1xxx from h1, 0x2xxx from h2), the family (+0x100 for IPv6) and the
    // protocol (+1 for AH); key seeds differ per direction.
    let fam = if family == Family::V4 { 0 } else { 0x100 };
    let spi = |from: usize, ah: bool| 0x1000 * (from as u32 + 1) + fam + u32::from(ah);
    let seed = |from: usize, ah: bool| (from as u8) * 2 + u8::from(ah) + 1;
    let sa = |name: &str, dir: &str, proto: &str, sa_mode: &str, from: usize, keys: &str| {
        format!(
            "[[sa]]\nname = \"{name}\"\ndirection = \"{dir}\"\nproto = \"{proto}\"\nmode = \"{sa_mode}\"\n\
             src = \"{}\"\ndst = \"{}\"\nspi = \"0x{:08x}\"\n{keys}\n",
            outer[from],
            outer[1 - from],
            spi(from, proto == "ah"),
        )
    };
    let ah_keys = |from: usize| {
        format!("auth = \"sha256\"\nauth-key = \"{}\"\n", lab_key(seed(from, true), 32))
    };
    let (esp, ah_mode) = match mode {
        Mode::None => (None, None),
        Mode::Ah => (None, Some("tunnel")),
        Mode::Esp(s) => (Some(s), None),
        // ESP tunnel inside, AH transport over the outer header (RFC 4301 §4.5 bundle).
        Mode::AhEsp(s) => (Some(s), Some("transport")),
    };
    let mut sas = Vec::new();
    if let Some(s) = esp {
        t += &sa("esp-out", "out", "esp", "tunnel", side, &esp_keys(s, seed(side, false)));
        t += &sa("esp-in", "in", "esp", "tunnel", 1 - side, &esp_keys(s, seed(1 - side, false)));
        sas.push("\"esp-out\"");
    }
    if let Some(m) = ah_mode {
        t += &sa("ah-out", "out", "ah", m, side, &ah_keys(side));
        t += &sa("ah-in", "in", "ah", m, 1 - side, &ah_keys(1 - side));
        sas.push("\"ah-out\"");
    }
    let _ = write!(
        t,
        "[[policy]]\nsrc = \"{net}\"\ndst = \"{net}\"\naction = \"protect\"\nsas = [{}]\n",
        sas.join(", ")
    );
    t
}

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
        let file = |p: &Path| {
            std::fs::File::create(p)
                .map_err(|e| LabError::io(format!("creating {}", p.display()), e))
        };
        let err = file(&log)?;
        let out = err.try_clone().map_err(|e| LabError::io("duplicating the log handle", e))?;
        let cmd = format!("ip netns exec {ns} {} run -c {}", exe.display(), cfg.display());
        // `ip netns exec` execs the program: the child's pid is the node's own.
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(exe)
            .arg("run")
            .arg("-c")
            .arg(cfg)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|source| LabError::Spawn { cmd, source })?;
        let pid = child.id();
        crate::sys::registry().pids.insert(pid);
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

/// One line for the report: what protects the traffic in `mode`.
fn describe(mode: Mode, carrier: EspCarrier, filter: Option<&NodeFilter>) -> String {
    let esp_carrier = match carrier {
        EspCarrier::Raw => "raw IP (protocol 50)",
        EspCarrier::Udp => "UDP 4500 (RFC 3948)",
    };
    let what = match mode {
        Mode::None => "no protection".to_string(),
        Mode::Ah => "AH tunnel mode, HMAC-SHA-256-128, raw IP (protocol 51)".to_string(),
        Mode::Esp(_) => format!("ESP tunnel mode over {esp_carrier}"),
        Mode::AhEsp(_) => {
            "a bundle: ESP tunnel mode, then AH transport mode (HMAC-SHA-256-128) over the outer header, raw IP".to_string()
        }
    };
    let filter = filter.map_or(String::new(), |f| {
        format!("; [filter] engine {} in the nodes of {}", f.engine.as_str(), f.hosts.join(", "))
    });
    format!(
        "{mode}: {what}; one hipsec node pair per family (TUN 10.99.0.0/24 and fd00:99::/64, outer h1/h2 addresses of the same family){filter}"
    )
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
        for n in &self.nodes {
            let _ = Command::new("kill")
                .args(["-TERM", &n.pid.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let deadline = Instant::now() + STOP_GRACE;
        for n in &self.nodes {
            let mut c = n.child.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                match c.try_wait() {
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    Ok(None) => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break;
                    }
                    _ => break,
                }
            }
            crate::sys::registry().pids.remove(&n.pid);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outer4() -> [IpAddr; 2] {
        [
            "192.0.2.1".parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            "203.0.113.2".parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        ]
    }

    #[test]
    fn ah_esp_config_is_a_bundle_esp_then_ah() {
        let t = config(
            Mode::AhEsp(EspSuite::Aes128Gcm),
            EspCarrier::Raw,
            Family::V4,
            0,
            outer4(),
            Path::new("/tmp/x.sock"),
        );
        assert!(t.contains("sas = [\"esp-out\", \"ah-out\"]"), "{t}");
        assert!(t.contains("transport = \"raw\""), "{t}");
        assert!(t.contains("mode = \"transport\""), "{t}");
        assert!(t.contains("spi = \"0x00001000\"") && t.contains("spi = \"0x00002001\""), "{t}");
        let parsed: Result<toml::Table, _> = toml::from_str(&t);
        assert!(parsed.is_ok(), "{t}");
    }

    #[test]
    fn suites_have_the_node_key_lengths() {
        let cbc = esp_keys(EspSuite::AesCbcHmacSha1, 3);
        assert!(cbc.contains(&format!("enc-key = \"{}\"", lab_key(3, 16))), "{cbc}");
        let des = esp_keys(EspSuite::TripleDesHmacSha1, 3);
        assert!(des.contains("enc = \"3des\"") && des.contains(&lab_key(3, 24)), "{des}");
        assert_eq!(lab_key(1, 20).len(), 2 + 40);
        let udp = config(
            Mode::Esp(EspSuite::Aes128Gcm),
            EspCarrier::Udp,
            Family::V6,
            1,
            [
                "2001:db8:1::1".parse().unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
                "2001:db8:3::2".parse().unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
            ],
            Path::new("/tmp/y.sock"),
        );
        assert!(udp.contains("local = \"[2001:db8:3::2]:4500\""), "{udp}");
        assert!(udp.contains("fd00:99::2/64") && udp.contains("spi = \"0x00002100\""), "{udp}");
    }
}
