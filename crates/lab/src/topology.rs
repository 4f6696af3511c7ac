//! Network-namespace topologies: namespaces, veth links, IPv4/IPv6 addresses, static routes,
//! forwarding and optional `tc tbf` link rates or a `tc netem` Wi-Fi-like link, torn down on drop,
//! on Ctrl-C and after a crash.
//!
//! Seed 004's shape (`Topology::seed004`), one /24 and one /64 per link (RFC 5737 / RFC 3849):
//! ```text
//!   h1 ──l0── r1 ──l1── r2 ──l2── h2
//!   192.0.2.1  .2 198.51.100.1 .2  203.0.113.1  .2
//!   2001:db8:1::1 ::2 2001:db8:2::1 ::2 2001:db8:3::1 ::2
//! ```
//! Interface `lN` is link N in both namespaces it joins. Namespace names are
//! `hlab-<pid>-<seq>-<role>`; a namespace whose owning pid is gone is stale and removed at start.

use crate::error::LabError;
use crate::sys;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// Every namespace the lab creates starts with this (defined beside the teardown that guards on it).
pub use crate::sys::PREFIX;

/// One namespace of a topology.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub role: String,
    pub forwarding: bool,
}

/// A veth link between nodes `a` and `b` (indices into `nodes`), with one address each per family.
#[derive(Debug, Clone)]
pub struct LinkSpec {
    pub a: usize,
    pub b: usize,
    pub a_v4: Ipv4Addr,
    pub b_v4: Ipv4Addr,
    pub v4_prefix_len: u8,
    pub a_v6: Ipv6Addr,
    pub b_v6: Ipv6Addr,
    pub v6_prefix_len: u8,
}

/// A static route in node `node`: `dst` is a CIDR or `default`.
#[derive(Debug, Clone)]
pub struct RouteSpec {
    pub node: usize,
    pub dst: String,
    pub via: IpAddr,
}

/// The whole shape, independent of the namespaces that realise it.
#[derive(Debug, Clone)]
pub struct TopologySpec {
    pub name: String,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    pub routes: Vec<RouteSpec>,
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> Ipv4Addr {
    Ipv4Addr::new(a, b, c, d)
}

fn v6_net(n: u16, host: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, n, 0, 0, 0, 0, host)
}

fn link(a: usize, b: usize, net4: [u8; 3], net6: u16) -> LinkSpec {
    LinkSpec {
        a,
        b,
        a_v4: v4(net4[0], net4[1], net4[2], 1),
        b_v4: v4(net4[0], net4[1], net4[2], 2),
        v4_prefix_len: 24,
        a_v6: v6_net(net6, 1),
        b_v6: v6_net(net6, 2),
        v6_prefix_len: 64,
    }
}

fn node(role: &str, forwarding: bool) -> NodeSpec {
    NodeSpec { role: role.to_string(), forwarding }
}

impl TopologySpec {
    /// Seed 004: host — router — router — host.
    pub fn seed004() -> Self {
        let links = vec![
            link(0, 1, [192, 0, 2], 1),
            link(1, 2, [198, 51, 100], 2),
            link(2, 3, [203, 0, 113], 3),
        ];
        let r = |node, dst: &str, via: IpAddr| RouteSpec { node, dst: dst.to_string(), via };
        let routes = vec![
            r(0, "default", links[0].b_v4.into()),
            r(0, "default", links[0].b_v6.into()),
            r(3, "default", links[2].a_v4.into()),
            r(3, "default", links[2].a_v6.into()),
            r(1, "203.0.113.0/24", links[1].b_v4.into()),
            r(1, "2001:db8:3::/64", links[1].b_v6.into()),
            r(2, "192.0.2.0/24", links[1].a_v4.into()),
            r(2, "2001:db8:1::/64", links[1].a_v6.into()),
        ];
        TopologySpec {
            name: "seed004".into(),
            nodes: vec![node("h1", false), node("r1", true), node("r2", true), node("h2", false)],
            links,
            routes,
        }
    }

    /// Host — router — host (seed 002's path through one filtering host): h1 on 192.0.2.0/24 and
    /// 2001:db8:1::/64, h2 on 203.0.113.0/24 and 2001:db8:3::/64, router `r` between them.
    pub fn host_router_host() -> Self {
        let links = vec![link(0, 1, [192, 0, 2], 1), link(1, 2, [203, 0, 113], 3)];
        let r = |node, dst: &str, via: IpAddr| RouteSpec { node, dst: dst.to_string(), via };
        let routes = vec![
            r(0, "default", links[0].b_v4.into()),
            r(0, "default", links[0].b_v6.into()),
            r(2, "default", links[1].a_v4.into()),
            r(2, "default", links[1].a_v6.into()),
        ];
        TopologySpec {
            name: "h1-r-h2".into(),
            nodes: vec![node("h1", false), node("r", true), node("h2", false)],
            links,
            routes,
        }
    }

    /// Two hosts on one veth link.
    pub fn two_hosts() -> Self {
        TopologySpec {
            name: "two-hosts".into(),
            nodes: vec![node("h1", false), node("h2", false)],
            links: vec![link(0, 1, [192, 0, 2], 1)],
            routes: Vec::new(),
        }
    }
}

/// IP family of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Family {
    #[serde(rename = "ipv4")]
    V4,
    #[serde(rename = "ipv6")]
    V6,
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        })
    }
}

/// A realised topology; dropping it kills its processes and deletes its namespaces.
#[derive(Debug)]
pub struct Topology {
    spec: TopologySpec,
    namespaces: Vec<String>,
    rate_bps: Option<u64>,
    /// A root qdisc is on both ends of every link.
    shaped: bool,
}

/// A Wi-Fi-like link for `tc netem`: a rate, a one-way delay with normally distributed jitter,
/// and a queue of `limit` packets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Netem {
    pub rate_bps: u64,
    pub delay_us: u64,
    pub jitter_us: u64,
    pub limit: u32,
}

impl Netem {
    /// The qdisc's arguments after `root`.
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            "netem".to_string(),
            "rate".into(),
            format!("{}bit", self.rate_bps),
            "delay".into(),
            format!("{}us", self.delay_us),
        ];
        if self.jitter_us > 0 {
            a.extend([format!("{}us", self.jitter_us), "distribution".into(), "normal".into()]);
        }
        a.extend(["limit".into(), self.limit.to_string()]);
        a
    }
}

/// What [`Topology::set_netem`] could put on the links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shaped {
    /// netem: rate, delay and jitter.
    Netem,
    /// The kernel has no netem (CONFIG_NET_SCH_NETEM unset): the rate alone, by tbf.
    RateOnly,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

impl Topology {
    /// Builds `spec`: checks privileges, removes stale `hlab-` namespaces, creates everything.
    pub fn new(spec: TopologySpec) -> Result<Self, LabError> {
        sys::check_privileges()?;
        sys::install_signal_teardown();
        cleanup_stale()?;
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let mut topo = Topology { spec, namespaces: Vec::new(), rate_bps: None, shaped: false };
        let pid = std::process::id();
        for node in &topo.spec.nodes {
            let name = format!("{PREFIX}{pid}-{seq}-{}", node.role);
            sys::registry().namespaces.insert(name.clone());
            // Registered first: a failure in `ip netns add` after creating it still cleans up.
            topo.namespaces.push(name.clone());
            sys::run("ip", &["netns", "add", &name])?;
            sys::run("ip", &["-n", &name, "link", "set", "lo", "up"])?;
        }
        topo.build()?;
        Ok(topo)
    }

    fn build(&self) -> Result<(), LabError> {
        for (i, l) in self.spec.links.iter().enumerate() {
            let (na, nb) = (&self.namespaces[l.a], &self.namespaces[l.b]);
            let ifname = format!("l{i}");
            sys::run(
                "ip",
                &[
                    "-n", na, "link", "add", &ifname, "type", "veth", "peer", "name", &ifname,
                    "netns", nb,
                ],
            )?;
            for (ns, a4, a6) in [(na, l.a_v4, l.a_v6), (nb, l.b_v4, l.b_v6)] {
                let c4 = format!("{a4}/{}", l.v4_prefix_len);
                let c6 = format!("{a6}/{}", l.v6_prefix_len);
                sys::run("ip", &["-n", ns, "addr", "add", &c4, "dev", &ifname])?;
                sys::run("ip", &["-n", ns, "-6", "addr", "add", &c6, "dev", &ifname, "nodad"])?;
                sys::run("ip", &["-n", ns, "link", "set", &ifname, "up"])?;
            }
        }
        for (node, ns) in self.spec.nodes.iter().zip(&self.namespaces) {
            if node.forwarding {
                sys::run_in(ns, "sysctl", &["-qw", "net.ipv4.ip_forward=1"])?;
                sys::run_in(ns, "sysctl", &["-qw", "net.ipv6.conf.all.forwarding=1"])?;
            }
        }
        for r in &self.spec.routes {
            let ns = &self.namespaces[r.node];
            let fam = if r.via.is_ipv4() { "-4" } else { "-6" };
            let via = r.via.to_string();
            sys::run("ip", &["-n", ns, fam, "route", "add", &r.dst, "via", &via])?;
        }
        Ok(())
    }

    pub fn spec(&self) -> &TopologySpec {
        &self.spec
    }

    /// Names of the namespaces, in node order.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    fn index(&self, role: &str) -> Result<usize, LabError> {
        self.spec.nodes.iter().position(|n| n.role == role).ok_or_else(|| LabError::InvalidOption {
            field: "role".into(),
            reason: format!("no node `{role}` in topology {}", self.spec.name),
        })
    }

    /// The namespace of the node named `role` (e.g. `h1`).
    pub fn ns(&self, role: &str) -> Result<&str, LabError> {
        Ok(&self.namespaces[self.index(role)?])
    }

    /// The address of `role` on its first link, in `family`.
    pub fn addr(&self, role: &str, family: Family) -> Result<IpAddr, LabError> {
        let i = self.index(role)?;
        let l = self.spec.links.iter().find(|l| l.a == i || l.b == i).ok_or_else(|| {
            LabError::InvalidOption {
                field: "role".into(),
                reason: format!("node `{role}` has no link"),
            }
        })?;
        Ok(match (family, l.a == i) {
            (Family::V4, true) => l.a_v4.into(),
            (Family::V4, false) => l.b_v4.into(),
            (Family::V6, true) => l.a_v6.into(),
            (Family::V6, false) => l.b_v6.into(),
        })
    }

    /// The current link rate (None: unlimited).
    pub fn rate_bps(&self) -> Option<u64> {
        self.rate_bps
    }

    /// Removes the root qdisc of both ends of every link, if one is there.
    fn unshape(&mut self) -> Result<(), LabError> {
        if self.shaped {
            for (i, l) in self.spec.links.iter().enumerate() {
                let ifname = format!("l{i}");
                for ns in [&self.namespaces[l.a], &self.namespaces[l.b]] {
                    sys::run("tc", &["-n", ns, "qdisc", "del", "dev", &ifname, "root"])?;
                }
            }
        }
        self.shaped = false;
        self.rate_bps = None;
        Ok(())
    }

    /// Puts `tc netem` on both ends of every link (None removes it); where the kernel has no
    /// netem, a `tc tbf` of the same rate ([`Shaped::RateOnly`]).
    pub fn set_netem(&mut self, netem: Option<&Netem>) -> Result<Option<Shaped>, LabError> {
        self.unshape()?;
        let Some(n) = netem else { return Ok(None) };
        let args = n.args();
        let mut shaped = Shaped::Netem;
        for (i, l) in self.spec.links.iter().enumerate() {
            let ifname = format!("l{i}");
            for ns in [&self.namespaces[l.a], &self.namespaces[l.b]] {
                let mut a = vec!["-n", ns, "qdisc", "add", "dev", &ifname, "root"];
                a.extend(args.iter().map(String::as_str));
                match sys::run("tc", &a) {
                    Ok(_) => self.shaped = true,
                    // Only the first add can meet a missing netem; fall back for every end.
                    Err(e) if !self.shaped && e.to_string().contains("qdisc kind is unknown") => {
                        shaped = Shaped::RateOnly;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        if shaped == Shaped::RateOnly {
            self.set_rate(Some(n.rate_bps))?;
        } else {
            self.rate_bps = Some(n.rate_bps);
        }
        Ok(Some(shaped))
    }

    /// Puts a `tc tbf` of `rate_bps` on both ends of every link (None removes it).
    pub fn set_rate(&mut self, rate_bps: Option<u64>) -> Result<(), LabError> {
        self.unshape()?;
        for (i, l) in self.spec.links.iter().enumerate() {
            let ifname = format!("l{i}");
            for ns in [&self.namespaces[l.a], &self.namespaces[l.b]] {
                if let Some(rate) = rate_bps {
                    let rate = format!("{rate}bit");
                    // burst 64 KiB holds one GSO super-packet; 50 ms of queue like a small switch.
                    sys::run(
                        "tc",
                        &[
                            "-n", ns, "qdisc", "add", "dev", &ifname, "root", "tbf", "rate", &rate,
                            "burst", "64kb", "latency", "50ms",
                        ],
                    )?;
                    self.shaped = true;
                }
            }
        }
        self.rate_bps = rate_bps;
        Ok(())
    }

    /// Starts `program args` inside `role`'s namespace with piped stdout; killed on drop.
    pub fn spawn(
        &self,
        role: &str,
        program: &Path,
        args: &[String],
    ) -> Result<ChildProc, LabError> {
        spawn_in(self.ns(role)?, program, args)
    }

    /// Runs a command in `role`'s namespace to completion and returns its stdout.
    pub fn exec(&self, role: &str, program: &str, args: &[&str]) -> Result<String, LabError> {
        sys::run_in(self.ns(role)?, program, args)
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            sys::delete_namespace(ns);
            sys::registry().namespaces.remove(ns);
        }
    }
}

/// A process started inside a namespace; killed and reaped on drop.
#[derive(Debug)]
pub struct ChildProc {
    child: Option<Child>,
    pid: u32,
    cmd: String,
}

/// Spawns `program args` in namespace `ns` via `ip netns exec` (which execs, so the pid is the
/// program's own).
pub fn spawn_in(ns: &str, program: &Path, args: &[String]) -> Result<ChildProc, LabError> {
    let cmd = format!("ip netns exec {ns} {} {}", program.display(), args.join(" "));
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(program).args(args);
    let (child, pid) = spawn_registered(c, &cmd)?;
    Ok(ChildProc { child: Some(child), pid, cmd })
}

/// Spawns `c` (described as `cmd` in errors) with stdin closed and stdout/stderr piped, and
/// registers its pid so that a cleanup on Ctrl-C kills it.
pub(crate) fn spawn_registered(mut c: Command, cmd: &str) -> Result<(Child, u32), LabError> {
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| LabError::Spawn { cmd: cmd.to_string(), source })?;
    let pid = child.id();
    sys::registry().pids.insert(pid);
    Ok((child, pid))
}

impl ChildProc {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The command line, for error messages.
    pub fn cmd(&self) -> &str {
        &self.cmd
    }

    /// Waits for the process and returns its stdout; an error if it exited non-zero.
    pub fn wait_output(mut self) -> Result<String, LabError> {
        let Some(child) = self.child.take() else {
            return Err(LabError::Traffic {
                test: self.cmd.clone(),
                reason: "already waited".into(),
            });
        };
        let out = child.wait_with_output().map_err(|e| LabError::io(self.cmd.clone(), e));
        sys::registry().pids.remove(&self.pid);
        let out = out?;
        if !out.status.success() {
            return Err(LabError::Command {
                cmd: self.cmd.clone(),
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        sys::registry().pids.remove(&self.pid);
    }
}

/// Names from `ip netns list` (the output is `name` or `name (id: N)` per line).
pub fn list_namespaces() -> Result<Vec<String>, LabError> {
    let out = sys::run("ip", &["netns", "list"])?;
    Ok(out.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect())
}

/// Removes `hlab-<pid>-...` namespaces whose owning process no longer exists (a crashed run).
/// Namespaces of a live lab process (e.g. tests running in parallel) are left alone.
pub fn cleanup_stale() -> Result<usize, LabError> {
    let mut removed = 0;
    for ns in list_namespaces()? {
        let Some(rest) = ns.strip_prefix(PREFIX) else { continue };
        let owner = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        let alive = owner.is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            eprintln!("lab: removing stale namespace {ns} from an earlier run");
            sys::delete_namespace(&ns);
            removed += 1;
        }
    }
    Ok(removed)
}

/// Parses a link rate such as `100mbit`, `1gbit`, `512kbit` or `1000000bit` into bit/s.
pub fn parse_rate(text: &str) -> Result<u64, LabError> {
    let t = text.trim().to_ascii_lowercase();
    let bad = |reason: &str| LabError::InvalidOption {
        field: "--link".into(),
        reason: format!("`{text}`: {reason}"),
    };
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| bad("expected a number then a unit, like 100mbit"))?;
    let mult = match unit {
        "bit" | "" => 1,
        "kbit" => 1_000,
        "mbit" => 1_000_000,
        "gbit" => 1_000_000_000,
        _ => return Err(bad("unit must be bit, kbit, mbit or gbit")),
    };
    match n.checked_mul(mult) {
        Some(0) | None => Err(bad("rate must be positive and below 2^64 bit/s")),
        Some(r) => Ok(r),
    }
}

#[cfg(test)]
mod tests {
    use super::Netem;

    #[test]
    fn netem_arguments() {
        let n = Netem { rate_bps: 5_600_000, delay_us: 450, jitter_us: 150, limit: 100 };
        assert_eq!(
            n.args().join(" "),
            "netem rate 5600000bit delay 450us 150us distribution normal limit 100"
        );
        let flat = Netem { jitter_us: 0, ..n };
        assert_eq!(flat.args().join(" "), "netem rate 5600000bit delay 450us limit 100");
    }
}
