//! The namespaces and processes of one run: the mobile nodes' foreign link and the home agent.
//!
//! ```text
//!   mn: l0 2001:db8:f::2 (care-of addresses 2001:db8:2::/64 sent from here)
//!         ══ veth ══
//!   ha: l0 2001:db8:f::1, 2001:db8:1::1/64 (home agent, `hipsec run` with [home-agent])
//! ```
//! The home agent routes the care-of prefix to `mn` and `mn` routes the home prefix to the home
//! agent. The generator (`hipsec-traffic mip6`) plays every mobile node in `mn`; an nftables
//! rule there drops, at prerouting, the Binding Acknowledgements (addressed to care-of
//! addresses the namespace does not own) once its link socket has its copy. The forwarding
//! phase, with a correspondent node, has its own topology ([`super::forward`]).
//!
//! A home agent is started afresh for every generator run, so each run's first Binding
//! Updates create entries (RFC 6275 §10.3.1) and meet replay windows that have seen nothing.

use crate::error::LabError;
use crate::mip6gen::{GenResult, Suite, nodes};
use crate::topology::{LinkSpec, NodeSpec, RouteSpec, Topology, TopologySpec};
use serde_json::Value;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// The foreign link's addresses of the generator and the home agent.
const MN_LINK: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xf, 0, 0, 0, 0, 2);
const HA_LINK: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xf, 0, 0, 0, 0, 1);
/// The home agent's interface (the topology's first veth).
const HA_DEV: &str = "l0";
/// How long a home agent may take to answer on its control socket.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The topology: `mn` and `ha` on one veth.
pub fn spec() -> TopologySpec {
    let link = LinkSpec {
        a: 0,
        b: 1,
        a_v4: Ipv4Addr::new(192, 0, 2, 2),
        b_v4: Ipv4Addr::new(192, 0, 2, 1),
        v4_prefix_len: 24,
        a_v6: MN_LINK,
        b_v6: HA_LINK,
        v6_prefix_len: 64,
    };
    let routes = vec![
        RouteSpec { node: 0, dst: "2001:db8:1::/64".into(), via: HA_LINK.into() },
        RouteSpec { node: 1, dst: nodes::CARE_OF_PREFIX.into(), via: MN_LINK.into() },
    ];
    TopologySpec {
        name: "mn-ha".into(),
        nodes: vec![
            NodeSpec { role: "mn".into(), forwarding: false },
            NodeSpec { role: "ha".into(), forwarding: false },
        ],
        links: vec![link],
        routes,
    }
}

/// The namespaces, the work folder, and the home agent while one runs.
#[derive(Debug)]
pub struct HomeLink {
    pub topo: Topology,
    exe: PathBuf,
    dir: PathBuf,
    node: Option<(Child, u32)>,
}

/// One generator run with the home agent's own view of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunOutcome {
    pub generator: GenResult,
    /// The home agent's `status` after the run: bindings created/updated, refusals, link counters.
    pub home_agent: Value,
    /// CPU seconds the home agent's process used during the generator run.
    pub ha_cpu_s: f64,
    /// Wall seconds of the generator run.
    pub wall_s: f64,
}

impl HomeLink {
    /// Builds the namespaces and the foreign link.
    pub fn new(exe: &Path) -> Result<HomeLink, LabError> {
        let topo = Topology::new(spec())?;
        let ha_addr = format!("{}/64", nodes::HOME_AGENT);
        topo.exec("ha", "ip", &["-6", "addr", "add", &ha_addr, "dev", HA_DEV, "nodad"])?;
        let dir = std::env::temp_dir().join(format!("hlab-mip6-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
        let nft = dir.join("mn.nft");
        let rules = format!(
            "table ip6 hlab_mn {{\n  chain pre {{\n    type filter hook prerouting priority raw;\n    \
             ip6 daddr {} drop comment \"binding acknowledgements: read off the link by the generator\"\n  }}\n}}\n",
            nodes::CARE_OF_PREFIX
        );
        std::fs::write(&nft, rules)
            .map_err(|e| LabError::io(format!("writing {}", nft.display()), e))?;
        topo.exec("mn", "nft", &["-f", &nft.to_string_lossy()])?;
        // Neighbour discovery both ways before any measurement: the kernel holds only a few
        // packets per unresolved neighbour (RFC 4861 §7.2.2) and drops the rest, which lost a
        // first run's opening Binding Updates and Acknowledgements.
        topo.exec("mn", "ping", &["-6", "-c", "1", "-W", "2", &HA_LINK.to_string()])?;
        topo.exec("ha", "ping", &["-6", "-c", "1", "-W", "2", &MN_LINK.to_string()])?;
        Ok(HomeLink { topo, exe: exe.to_path_buf(), dir, node: None })
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("ha.sock")
    }

    fn log(&self) -> PathBuf {
        self.dir.join("ha.log")
    }

    fn node_error(&self, detail: String) -> LabError {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        LabError::Node {
            mode: "home agent".into(),
            node: "ha".into(),
            detail: format!("{detail}; log:\n{tail}"),
        }
    }

    /// The home agent's config for `nodes` mobile nodes with `suite` (docs/mip6.md).
    pub fn config(&self, n: u32, suite: Suite) -> String {
        format!(
            "# hipsec lab, scenario mip6-binding (generated)\n\
             [interface]\nname = \"hm6tun0\"\naddresses = [\"fd00:99::1/64\"]\n\n\
             [network]\nlocal = \"[{}]:4500\"\n\n\
             [data-path]\nscheduling = \"other\"\n\n\
             [control]\nsocket = \"{}\"\n\n{}",
            nodes::HOME_AGENT,
            self.socket().display(),
            nodes::home_agent_toml(HA_DEV, n, suite, n as usize)
        )
    }

    /// Starts a home agent for `n` nodes with `suite` and waits for its control socket.
    pub fn start(&mut self, n: u32, suite: Suite) -> Result<(), LabError> {
        self.stop();
        let cfg = self.dir.join("ha.toml");
        std::fs::write(&cfg, self.config(n, suite))
            .map_err(|e| LabError::io(format!("writing {}", cfg.display()), e))?;
        let _ = std::fs::remove_file(self.socket());
        let ns = self.topo.ns("ha")?.to_string();
        self.node = Some(crate::node::spawn::spawn_node(&self.exe, &ns, &cfg, &self.log())?);
        let t0 = Instant::now();
        while UnixStream::connect(self.socket()).is_err() {
            if let Some((c, _)) = self.node.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    return Err(self.node_error(format!("exited ({st})")));
                }
            }
            if t0.elapsed() > START_TIMEOUT {
                return Err(self.node_error(format!("no control socket after {START_TIMEOUT:?}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The control socket can answer before the home agent's link socket and nftables
        // table are in place; its status has a `home_agent` part once they are.
        while self.status().map_or(true, |v| v.get("binding_cache").is_none()) {
            if t0.elapsed() > START_TIMEOUT {
                return Err(self.node_error("no home_agent in its status".into()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Stops the home agent.
    pub fn stop(&mut self) {
        if let Some((mut c, pid)) = self.node.take() {
            crate::node::spawn::stop_nodes([(pid, &mut c)]);
        }
    }

    /// CPU seconds of the running home agent (all threads, /proc/PID/task/*/schedstat).
    fn ha_cpu_s(&self) -> f64 {
        let Some((_, pid)) = &self.node else { return 0.0 };
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0.0 };
        let mut ns = 0u64;
        for t in tasks.flatten() {
            let s = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            ns += s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
        ns as f64 / 1e9
    }

    /// `hipsec status --json`'s `home_agent` part.
    pub fn status(&self) -> Result<Value, LabError> {
        let exe = self.exe.to_string_lossy().into_owned();
        let sock = self.socket().to_string_lossy().into_owned();
        let out = crate::sys::run(&exe, &["status", "--json", &sock])?;
        let v: Value = serde_json::from_str(out.trim()).map_err(|e| {
            LabError::parse("hipsec status --json of the home agent", e.to_string())
        })?;
        Ok(v.get("home_agent").cloned().unwrap_or(v))
    }

    /// Runs the generator in `mn` with `args` (after `mip6`) against the running home agent.
    pub fn generate(
        &self,
        traffic: &(PathBuf, Vec<String>),
        args: &[String],
    ) -> Result<RunOutcome, LabError> {
        let (prog, lead) = traffic;
        let mut all = lead.clone();
        all.push("mip6".into());
        all.extend_from_slice(args);
        let cpu0 = self.ha_cpu_s();
        let t0 = Instant::now();
        let out = self.topo.spawn("mn", prog, &all)?.wait_output()?;
        let wall_s = t0.elapsed().as_secs_f64();
        let ha_cpu_s = self.ha_cpu_s() - cpu0;
        let generator: GenResult = serde_json::from_str(out.trim())
            .map_err(|e| LabError::parse("hipsec-traffic mip6 output", e.to_string()))?;
        // The counters only: the status also lists every signalling SA (megabytes per run).
        let st = self.status()?;
        let home_agent = serde_json::json!({
            "bindings": st["bindings"], "refused": st["refused"], "link": st["link"],
            "binding_cache_count": st["binding_cache"]["count"],
            "binding_cache_memory_bytes": st["binding_cache"]["memory_bytes"],
        });
        Ok(RunOutcome { generator, home_agent, ha_cpu_s, wall_s })
    }
}

impl Drop for HomeLink {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
