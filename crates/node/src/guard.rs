//! The guard: kernel state that keeps the traffic our policies protect off every route but the
//! node's TUN device, so that a node that is stopped, restarting or killed never lets it leave
//! in clear (RFC 4301 §4.4.1: traffic a protect or discard entry covers is never sent
//! unprotected), as the kernel's own XFRM policies outlive a stopped IKE daemon.
//!
//! An nftables table of ours, `inet hipsec_guard`, holds two chains per TUN device:
//! - `out_IFACE` (postrouting): a packet to a protected destination that leaves by another
//!   device is dropped. The node's own carrier (ESP, AH, HIP, and UDP from the IKE and
//!   ESP-in-UDP ports) and local delivery (`lo`) pass.
//! - `in_IFACE` (prerouting): a packet of a protect policy's reverse traffic that arrives in
//!   clear on another device is dropped; the carrier passes (the kernel has no ESP to take it).
//!
//! Policies are rendered in SPD order, so a bypass entry before a protect entry still passes
//! (first match wins, RFC 4301 §4.4.1). The chains are replaced in one nft transaction at start
//! and left in place on the way out; `hipsec guard remove` (or `nft delete table inet
//! hipsec_guard`) takes them away.

use crate::config::NodeConfig;
use crate::config::policy::PolicyAction;
use ipsec::spd::Prefix;
use std::fmt::Write as _;
use std::io;
use std::net::{IpAddr, Ipv6Addr};

/// The table (family inet: IPv4 and IPv6 in one).
pub const TABLE: &str = "hipsec_guard";

/// IKE's port (RFC 7296 §2).
const IKE_PORT: u16 = 500;

/// IP protocols of the node's own carrier: ESP (50), AH (51), HIP (139, RFC 7401 §5.1).
const CARRIER_PROTOCOLS: &str = "{ 50, 51, 139 }";

/// ORCHIDv2 (RFC 7343 §2): every HIT, which the node routes into its TUN device for HIP.
const ORCHID_V2: Prefix =
    Prefix { addr: IpAddr::V6(Ipv6Addr::new(0x2001, 0x20, 0, 0, 0, 0, 0, 0)), len: 28 };

/// An address range of a selector: a prefix, or an IKE traffic selector's first..=last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addrs {
    /// A prefix.
    Prefix(Prefix),
    /// A range, both ends included.
    Range(IpAddr, IpAddr),
}

impl Addrs {
    fn v6(&self) -> bool {
        match self {
            Addrs::Prefix(p) => p.addr.is_ipv6(),
            Addrs::Range(a, _) => a.is_ipv6(),
        }
    }

    fn nft(&self) -> String {
        match self {
            Addrs::Prefix(p) => format!("{}/{}", p.addr, p.len),
            Addrs::Range(a, b) if a == b => a.to_string(),
            Addrs::Range(a, b) => format!("{a}-{b}"),
        }
    }
}

/// One guarded selector, as seen on our outbound side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardRule {
    /// Our side's addresses (the policy's source).
    pub local: Addrs,
    /// The peer's side (the policy's destination).
    pub remote: Addrs,
    /// Upper-layer protocol, or any.
    pub proto: Option<u8>,
    /// Our side's ports.
    pub local_ports: Option<(u16, u16)>,
    /// The peer's side's ports.
    pub remote_ports: Option<(u16, u16)>,
    /// True: let it pass (a bypass entry); false: drop it unless it goes through the TUN.
    pub pass: bool,
    /// Where it comes from, for the rule's comment (`policy 2`, `connection site-b/net`).
    pub origin: String,
}

/// What the guard of one node holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// The TUN device: protected traffic may leave and arrive only through it.
    pub interface: String,
    /// UDP ports of the node's own carrier (IKE, ESP in UDP).
    pub udp_ports: Vec<u16>,
    /// The selectors, in SPD order.
    pub rules: Vec<GuardRule>,
}

impl Guard {
    /// The guard a config asks for: every `[[policy]]` in order, every IKE CHILD SA's traffic
    /// selectors, and ORCHIDv2 with `[hip]`. None when nothing is protected or discarded.
    pub fn for_config(c: &NodeConfig) -> Option<Guard> {
        let mut rules = Vec::new();
        for (i, p) in c.policies.iter().enumerate() {
            let s = &p.selector;
            rules.push(GuardRule {
                local: Addrs::Prefix(s.src),
                remote: Addrs::Prefix(s.dst),
                proto: s.proto,
                local_ports: s.src_ports,
                remote_ports: s.dst_ports,
                pass: p.action == PolicyAction::Bypass,
                origin: format!("policy {} (line {})", i + 1, p.line),
            });
        }
        for conn in &c.connections {
            for child in conn.children.iter().filter(|ch| !ch.mip6) {
                for l in &child.local_ts {
                    for r in &child.remote_ts {
                        if l.start_addr.is_ipv6() != r.start_addr.is_ipv6() {
                            continue;
                        }
                        rules.push(GuardRule {
                            local: Addrs::Range(l.start_addr, l.end_addr),
                            remote: Addrs::Range(r.start_addr, r.end_addr),
                            proto: (l.ip_protocol != 0).then_some(l.ip_protocol),
                            local_ports: ports(l.start_port, l.end_port),
                            remote_ports: ports(r.start_port, r.end_port),
                            pass: false,
                            origin: format!("connection {}/{}", conn.name, child.name),
                        });
                    }
                }
            }
        }
        if c.hip.is_some() {
            rules.push(GuardRule {
                local: Addrs::Prefix(ORCHID_V2),
                remote: Addrs::Prefix(ORCHID_V2),
                proto: None,
                local_ports: None,
                remote_ports: None,
                pass: false,
                origin: "hip (ORCHIDv2 HITs)".into(),
            });
        }
        if rules.iter().all(|r| r.pass) {
            return None;
        }
        let mut udp_ports = vec![IKE_PORT];
        if let crate::config::Transport::Udp { local, .. } = c.transport {
            udp_ports.push(local.port());
        }
        if !c.connections.is_empty() || c.hip.is_some() {
            udp_ports.push(crate::config::DEFAULT_UDP_PORT);
        }
        udp_ports.sort_unstable();
        udp_ports.dedup();
        Some(Guard { interface: c.interface.name.clone(), udp_ports, rules })
    }

    /// The nft script that replaces this interface's chains in one transaction.
    pub fn script(&self) -> Result<String, GuardError> {
        let iface = checked_name(&self.interface)?;
        let (out, inb) = chain_names(iface);
        let ports = self.udp_ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", ");
        let mut s = format!("add table inet {TABLE}\n");
        for (chain, hook) in [(&out, "postrouting"), (&inb, "prerouting")] {
            let _ = writeln!(
                s,
                "add chain inet {TABLE} {chain} {{ type filter hook {hook} priority filter; policy accept; }}\n\
                 flush chain inet {TABLE} {chain}"
            );
        }
        let rule = |s: &mut String, chain: &str, body: &str| {
            let _ = writeln!(s, "add rule inet {TABLE} {chain} {body}");
        };
        rule(&mut s, &out, &format!("oifname {{ \"{iface}\", \"lo\" }} accept"));
        rule(&mut s, &out, &format!("meta l4proto {CARRIER_PROTOCOLS} accept"));
        rule(&mut s, &out, &format!("udp sport {{ {ports} }} accept"));
        rule(&mut s, &inb, &format!("iifname {{ \"{iface}\", \"lo\" }} accept"));
        rule(&mut s, &inb, &format!("meta l4proto {CARRIER_PROTOCOLS} accept"));
        rule(&mut s, &inb, &format!("udp dport {{ {ports} }} accept"));
        for r in &self.rules {
            let verdict = if r.pass { "accept" } else { "counter drop" };
            let comment = format!("comment \"{}\"", r.origin.replace('"', "'"));
            let fam = if r.remote.v6() { "ip6" } else { "ip" };
            // Outbound by destination alone: the kernel picks the source address by route,
            // and with the TUN gone it picks the outer device's (a packet the node would have
            // protected, with another source).
            let upper = |ours: Option<(u16, u16)>, theirs: Option<(u16, u16)>, out: bool| {
                let mut u = String::new();
                if let Some(p) = r.proto {
                    let _ = write!(u, " meta l4proto {p}");
                }
                let (sport, dport) = if out { (ours, theirs) } else { (theirs, ours) };
                for (dir, range) in [("sport", sport), ("dport", dport)] {
                    match range {
                        Some((a, b)) if a == b => {
                            let _ = write!(u, " th {dir} {a}");
                        }
                        Some((a, b)) => {
                            let _ = write!(u, " th {dir} {a}-{b}");
                        }
                        None => {}
                    }
                }
                u
            };
            let o = upper(r.local_ports, r.remote_ports, true);
            rule(&mut s, &out, &format!("{fam} daddr {}{o} {verdict} {comment}", r.remote.nft()));
            let i = upper(r.local_ports, r.remote_ports, false);
            rule(
                &mut s,
                &inb,
                &format!(
                    "{fam} saddr {} {fam} daddr {}{i} {verdict} {comment}",
                    r.remote.nft(),
                    r.local.nft()
                ),
            );
        }
        Ok(s)
    }

    /// Installs (or replaces) this interface's chains.
    pub fn install(&self) -> Result<(), GuardError> {
        crate::nft::apply(&self.script()?).map_err(GuardError::Nft)
    }
}

fn ports(start: u16, end: u16) -> Option<(u16, u16)> {
    (start != 0 || end != u16::MAX).then_some((start, end))
}

/// The two chains of an interface: outbound and inbound.
fn chain_names(iface: &str) -> (String, String) {
    (format!("out_{iface}"), format!("in_{iface}"))
}

/// A device name that can stand in an nft script unquoted and in quotes.
fn checked_name(name: &str) -> Result<&str, GuardError> {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)) {
        Ok(name)
    } else {
        Err(GuardError::Interface(name.to_string()))
    }
}

/// Why the guard could not be set, shown or removed.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// nft failed (missing, no permission, or the kernel refused the rules).
    #[error("{0}")]
    Nft(io::Error),
    /// The interface name has characters an nft chain name cannot hold.
    #[error("interface {0:?}: the guard needs a name of letters, digits, '_', '.' or '-'")]
    Interface(String),
}

/// The guard table as nft prints it (`json`: `nft -j`), or None when there is none.
pub fn show(json: bool) -> Result<Option<String>, GuardError> {
    let mut args = vec!["list", "table", "inet", TABLE];
    if json {
        args.insert(0, "-j");
    }
    match crate::nft::output(&args) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.to_string().contains("No such file or directory") => Ok(None),
        Err(e) => Err(GuardError::Nft(e)),
    }
}

/// Removes one interface's chains (the table with them when it is left empty), or with
/// `None` the whole table. True when there was something to remove.
pub fn remove(interface: Option<&str>) -> Result<bool, GuardError> {
    let Some(listing) = show(false)? else { return Ok(false) };
    let script = match interface {
        None => format!("delete table inet {TABLE}\n"),
        Some(i) => {
            let (out, inb) = chain_names(checked_name(i)?);
            let has = |c: &str| listing.contains(&format!("chain {c} {{"));
            if !has(&out) && !has(&inb) {
                return Ok(false);
            }
            let mut s = String::new();
            for c in [out, inb].iter().filter(|c| has(c)) {
                let _ = writeln!(s, "delete chain inet {TABLE} {c}");
            }
            s
        }
    };
    crate::nft::apply(&script).map_err(GuardError::Nft)?;
    if interface.is_some() && show(false)?.is_some_and(|l| !l.contains("chain ")) {
        crate::nft::apply(&format!("delete table inet {TABLE}\n")).map_err(GuardError::Nft)?;
    }
    Ok(true)
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
