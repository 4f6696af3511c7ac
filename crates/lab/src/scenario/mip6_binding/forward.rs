//! The forwarding topology: a correspondent node behind the home link's
//! router, a home agent on the home link, a mobile node on a foreign link — two hipsec nodes.
//!
//! ```text
//!   cn: l0 2001:db8:4::2 (to the home address), 2001:db8:4::3 (to the care-of address)
//!        │
//!   r:  l0 2001:db8:4::1 │ l1 2001:db8:1::fe (home link) │ l2 2001:db8:2::1, 2001:db8:3::1, fe80::1
//!                             │                                 │ foreign link
//!   ha: l1 2001:db8:1::1, hipsec [home-agent]      mn: l2 2001:db8:2::100 (care-of; after the move
//!       TUN mip6ha0                                    2001:db8:3::100), hipsec [mobile-node],
//!                                                      TUN mip6mn0 with the home address 2001:db8:1::100
//! ```
//! The home agent is a host on the home link, as RFC 6275 §10.4.1 has it: the router resolves
//! the home address by neighbour discovery there, and the home agent answers for it (proxy
//! neighbour discovery) while a binding lasts, then tunnels it to the care-of address in ESP
//! (RFC 4877). The mobile node's replies go back through the reverse tunnel.
//!
//! The correspondent has two addresses so that one mobile node can be reached both ways at
//! once: traffic to the home address leaves from 2001:db8:4::2, which the mobile node routes
//! into its tunnel (source: the home address); traffic to the care-of address — the plain
//! path, the reference figures — leaves from 2001:db8:4::3, which the mobile node routes
//! straight to the foreign link's router (source: the care-of address). Route `src` hints on
//! the correspondent pick them, so the traffic engine needs no bind.

use crate::error::LabError;
use crate::topology::{LinkSpec, NodeSpec, RouteSpec, Topology, TopologySpec};
use serde_json::Value;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

const fn a6(net: u16, host: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, net, 0, 0, 0, 0, host)
}

/// The mobile node's home address.
pub const HOME: Ipv6Addr = a6(1, 0x100);
/// The home agent.
pub const HA: Ipv6Addr = a6(1, 1);
/// The care-of address before and after the move.
pub const CARE_OF: Ipv6Addr = a6(2, 0x100);
pub const CARE_OF_2: Ipv6Addr = a6(3, 0x100);
/// The correspondent's address for the home address, and the one for the care-of address.
pub const CN_HOME: Ipv6Addr = a6(4, 2);
pub const CN_PLAIN: Ipv6Addr = a6(4, 3);
/// The router's addresses on the home link and the correspondent's link.
const R_HOME: Ipv6Addr = a6(1, 0xfe);
const R_CN: Ipv6Addr = a6(4, 1);
/// Interfaces: the home agent's home link, the mobile node's foreign link.
const HA_DEV: &str = "l1";
const MN_DEV: &str = "l2";
/// The tunnels' suite (both directions, and the signalling SAs): AES-128-GCM.
pub const SUITE: &str = "aes128gcm";
/// How long the nodes may take to start and the mobile node to register.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The namespaces: cn — r, ha — r, mn — r.
pub fn spec() -> TopologySpec {
    let link = |a, b, v4: u8, a_v6, b_v6| LinkSpec {
        a,
        b,
        a_v4: Ipv4Addr::new(10, 13, v4, 2),
        b_v4: Ipv4Addr::new(10, 13, v4, 1),
        v4_prefix_len: 24,
        a_v6,
        b_v6,
        v6_prefix_len: 64,
    };
    let route =
        |node, dst: &str, via: Ipv6Addr| RouteSpec { node, dst: dst.into(), via: via.into() };
    TopologySpec {
        name: "cn-r-ha-mn".into(),
        nodes: vec![
            NodeSpec { role: "cn".into(), forwarding: false },
            NodeSpec { role: "r".into(), forwarding: true },
            // The home agent forwards between its TUN (the reverse tunnel) and the home link.
            NodeSpec { role: "ha".into(), forwarding: true },
            NodeSpec { role: "mn".into(), forwarding: false },
        ],
        links: vec![
            link(0, 1, 4, CN_HOME, R_CN),
            link(2, 1, 1, HA, R_HOME),
            link(3, 1, 2, CARE_OF, a6(2, 1)),
        ],
        routes: vec![route(2, "default", R_HOME)],
    }
}

fn key(seed: u8) -> String {
    let hex: String =
        (0..20u8).map(|i| format!("{:02x}", seed.wrapping_add(i.wrapping_mul(7)))).collect();
    format!("0x{hex}")
}

/// One SA table of docs/mip6.md (AES-128-GCM: a 16-octet key and a 4-octet salt).
fn sa(table: &str, src: Ipv6Addr, dst: Ipv6Addr, mode: &str, spi: u32, seed: u8) -> String {
    format!(
        "[{table}]\nsrc = \"{src}\"\ndst = \"{dst}\"\nproto = \"esp\"\nmode = \"{mode}\"\n\
         spi = \"0x{spi:x}\"\naead = \"{SUITE}\"\nkey = \"{}\"\n",
        key(seed)
    )
}

/// The home agent's config: one mobile node with signalling and tunnel SAs.
pub fn ha_config(sock: &Path) -> String {
    let t = "home-agent.mobile-node";
    format!(
        "# hipsec lab, scenario mip6-binding, forwarding (generated)\n\
         [interface]\nname = \"mip6ha0\"\n\n[network]\ntransport = \"raw\"\nlocal = \"{HA}\"\n\n\
         [data-path]\nscheduling = \"other\"\n\n[control]\nsocket = \"{}\"\n\n\
         [home-agent]\ninterface = \"{HA_DEV}\"\naddress = \"{HA}\"\nhome-prefix = \"2001:db8:1::/64\"\nmax-lifetime = 600\n\n\
         [[home-agent.mobile-node]]\nhome-address = \"{HOME}\"\n{}{}{}{}",
        sock.display(),
        sa(&format!("{t}.sa-in"), HOME, HA, "transport", 0x1100, 1),
        sa(&format!("{t}.sa-out"), HA, HOME, "transport", 0x2100, 2),
        sa(&format!("{t}.tunnel-in"), HOME, HA, "tunnel", 0x3100, 3),
        sa(&format!("{t}.tunnel-out"), HA, HOME, "tunnel", 0x4100, 4),
    )
}

/// The mobile node's config: the same SAs from its side.
pub fn mn_config(sock: &Path) -> String {
    format!(
        "# hipsec lab, scenario mip6-binding, forwarding (generated)\n\
         [interface]\nname = \"mip6mn0\"\naddresses = [\"{HOME}/128\"]\n\n[network]\ntransport = \"raw\"\nlocal = \"::\"\npeer = \"{HA}\"\n\n\
         [data-path]\nscheduling = \"other\"\n\n[control]\nsocket = \"{}\"\n\n\
         [mobile-node]\ninterface = \"{MN_DEV}\"\nhome-address = \"{HOME}\"\nhome-agent = \"{HA}\"\nlifetime = 60\n{}{}{}{}",
        sock.display(),
        sa("mobile-node.sa-out", HOME, HA, "transport", 0x1100, 1),
        sa("mobile-node.sa-in", HA, HOME, "transport", 0x2100, 2),
        sa("mobile-node.tunnel-out", HOME, HA, "tunnel", 0x3100, 3),
        sa("mobile-node.tunnel-in", HA, HOME, "tunnel", 0x4100, 4),
    )
}

/// The namespaces, the work folder and the two nodes.
#[derive(Debug)]
pub struct Forwarding {
    pub topo: Topology,
    exe: PathBuf,
    dir: PathBuf,
    /// (role, child, pid) of the running nodes: the home agent, then the mobile node.
    nodes: Vec<(&'static str, Child, u32)>,
}

impl Forwarding {
    /// Builds the namespaces, addresses and routes (no node yet).
    pub fn new(exe: &Path) -> Result<Forwarding, LabError> {
        let topo = Topology::new(spec())?;
        // The TUN addresses the nodes add later (the home address) must be usable at once:
        // no duplicate address detection in the namespaces (RFC 4862 §5.4 would hold them
        // tentative for a second).
        for role in ["ha", "mn"] {
            for k in ["all", "default"] {
                topo.exec(role, "sysctl", &["-qw", &format!("net.ipv6.conf.{k}.accept_dad=0")])?;
            }
        }
        let ip = |role: &str, args: &str| -> Result<String, LabError> {
            topo.exec(role, "ip", &args.split_whitespace().collect::<Vec<_>>())
        };
        ip("r", "-6 addr add 2001:db8:3::1/64 dev l2 nodad")?;
        ip("r", "-6 addr add fe80::1/64 dev l2 nodad")?;
        ip("cn", &format!("-6 addr add {CN_PLAIN}/64 dev l0 nodad"))?;
        ip("cn", &format!("-6 route add {HOME}/128 via {R_CN} src {CN_HOME}"))?;
        ip("cn", &format!("-6 route add 2001:db8:2::/47 via {R_CN} src {CN_PLAIN}"))?;
        // The mobile node reaches its home agent and the plain path's correspondent address
        // through the foreign link's router by its link-local address, which outlives a move.
        ip("mn", &format!("-6 route add {HA}/128 via fe80::1 dev {MN_DEV}"))?;
        ip("mn", &format!("-6 route add {CN_PLAIN}/128 via fe80::1 dev {MN_DEV}"))?;
        let dir = std::env::temp_dir().join(format!("hlab-mip6fwd-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
        Ok(Forwarding { topo, exe: exe.to_path_buf(), dir, nodes: Vec::new() })
    }

    fn sock(&self, role: &str) -> PathBuf {
        self.dir.join(format!("{role}.sock"))
    }

    fn node_error(&self, role: &str, detail: String) -> LabError {
        let text =
            std::fs::read_to_string(self.dir.join(format!("{role}.log"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        LabError::Node {
            mode: "mip6 forwarding".into(),
            node: role.into(),
            detail: format!("{detail}; log:\n{tail}"),
        }
    }

    /// Pids of the running nodes (their CPU is charged to the tests).
    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.2).collect()
    }

    /// `hipsec status --json` of `role`'s node.
    pub fn status(&self, role: &str) -> Result<Value, LabError> {
        let exe = self.exe.to_string_lossy().into_owned();
        let sock = self.sock(role).to_string_lossy().into_owned();
        let out = crate::sys::run(&exe, &["status", "--json", &sock])?;
        serde_json::from_str(out.trim())
            .map_err(|e| LabError::parse(format!("hipsec status --json of {role}"), e.to_string()))
    }

    /// Waits until `f` holds on `role`'s status; a node that exits or a timeout is an error
    /// naming `what`.
    pub fn wait_status(
        &mut self,
        role: &'static str,
        what: &str,
        f: impl Fn(&Value) -> bool,
    ) -> Result<(), LabError> {
        let t0 = Instant::now();
        loop {
            if let Ok(v) = self.status(role) {
                if f(&v) {
                    return Ok(());
                }
            }
            let exited = self.nodes.iter_mut().find_map(|(r, c, _)| match c.try_wait() {
                Ok(Some(st)) => Some((*r, st)),
                _ => None,
            });
            if let Some((r, st)) = exited {
                return Err(self.node_error(r, format!("exited ({st}) while waiting for {what}")));
            }
            if t0.elapsed() > START_TIMEOUT {
                return Err(self.node_error(role, format!("no {what} after {START_TIMEOUT:?}")));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn spawn(&mut self, role: &'static str, config: String) -> Result<(), LabError> {
        let cfg = self.dir.join(format!("{role}.toml"));
        std::fs::write(&cfg, config)
            .map_err(|e| LabError::io(format!("writing {}", cfg.display()), e))?;
        // The config holds keys: readable by root alone.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| LabError::io(format!("chmod 600 {}", cfg.display()), e))?;
        let _ = std::fs::remove_file(self.sock(role));
        let ns = self.topo.ns(role)?.to_string();
        let log = self.dir.join(format!("{role}.log"));
        let (child, pid) = crate::node::spawn::spawn_node(&self.exe, &ns, &cfg, &log)?;
        self.nodes.push((role, child, pid));
        Ok(())
    }

    /// Starts the home agent and the mobile node and waits until the home agent tunnels the
    /// home address to the first care-of address; returns the seconds from the mobile node's
    /// start to that.
    pub fn start(&mut self) -> Result<f64, LabError> {
        self.spawn("ha", ha_config(&self.sock("ha")))?;
        // The tunnel SAs go in on the home agent's first tick (docs/mip6.md).
        self.wait_status("ha", "home agent tunnel SAs", |s| {
            s["home_agent"]["forwarding"]["tunnels"][0]["tunnel_out_spi"].is_string()
        })?;
        let t0 = Instant::now();
        self.spawn("mn", mn_config(&self.sock("mn")))?;
        let coa = CARE_OF.to_string();
        self.wait_status("mn", "registration", |s| {
            s["mobile_node"]["registration"]["care_of_address"] == coa.as_str()
        })?;
        // The correspondent's link is reached through the tunnel (from the home address); the
        // TUN exists once the node runs.
        self.topo.exec("mn", "ip", &["-6", "route", "add", "2001:db8:4::/64", "dev", "mip6mn0"])?;
        self.wait_status("ha", "tunnel to the care-of address", |s| {
            s["home_agent"]["forwarding"]["tunnels"][0]["care_of_address"] == coa.as_str()
        })?;
        Ok(t0.elapsed().as_secs_f64())
    }

    /// The move from care-of address `from` to `to`: `to` added, `from` deleted (RFC 6275
    /// §11.5.1: the mobile node notices and sends a Binding Update from the new one). Returns
    /// the wall clock (µs since the epoch) just before the add and just after the delete.
    pub fn change_care_of(&self, from: Ipv6Addr, to: Ipv6Addr) -> Result<(u64, u64), LabError> {
        let now = crate::traffic::paced::now_us;
        let added = now();
        let new = format!("{to}/64");
        self.topo.exec("mn", "ip", &["-6", "addr", "add", &new, "dev", MN_DEV, "nodad"])?;
        let old = format!("{from}/64");
        self.topo.exec("mn", "ip", &["-6", "addr", "del", &old, "dev", MN_DEV])?;
        Ok((added, now()))
    }

    /// Stops the nodes (the mobile node first: it de-registers).
    pub fn stop(&mut self) {
        let mut nodes = std::mem::take(&mut self.nodes);
        nodes.reverse();
        crate::node::spawn::stop_nodes(nodes.iter_mut().map(|(_, c, pid)| (*pid, c)));
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_pair_up_and_name_the_suite() {
        let ha = ha_config(Path::new("/x/ha.sock"));
        let mn = mn_config(Path::new("/x/mn.sock"));
        for spi in ["0x1100", "0x2100", "0x3100", "0x4100"] {
            assert!(ha.contains(spi) && mn.contains(spi), "{spi}");
        }
        assert_eq!(ha.matches(SUITE).count(), 4);
        assert!(ha.parse::<toml::Table>().is_ok() && mn.parse::<toml::Table>().is_ok());
        assert!(mn.contains("interface = \"l2\"") && ha.contains("interface = \"l1\""));
    }
}
