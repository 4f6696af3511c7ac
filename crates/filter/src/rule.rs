//! The rule model: actions, directions, prefixes, port ranges, `Rule` and `RuleSet`, and their
//! canonical text form (`Display`), which `parse_rules` reads back to an equal value.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What a rule (or the default) does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Action {
    /// Let the packet through.
    Pass,
    /// Drop the packet.
    Block,
}

/// Which way a packet crosses the interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Direction {
    /// Arriving at the node.
    In,
    /// Leaving the node.
    Out,
}

impl Direction {
    /// The opposite direction (used for the return traffic of a `keep state` flow).
    pub fn reverse(self) -> Direction {
        match self {
            Direction::In => Direction::Out,
            Direction::Out => Direction::In,
        }
    }
}

/// Error building an [`IpNet`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// `len` is longer than the address (32 for IPv4, 128 for IPv6).
    #[error("prefix length {len} is longer than the address ({max} bits)")]
    PrefixTooLong {
        /// The prefix length given.
        len: u8,
        /// The address width.
        max: u8,
    },
}

/// An address prefix such as `10.0.0.0/8` or `2001:db8::/32`, stored with its host bits cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpNet {
    addr: IpAddr,
    len: u8,
}

impl IpNet {
    /// A prefix of `len` bits; the host bits of `addr` are cleared (`10.1.2.3/8` becomes
    /// `10.0.0.0/8`).
    pub fn new(addr: IpAddr, len: u8) -> Result<IpNet, NetError> {
        let max = max_len(addr);
        if len > max {
            return Err(NetError::PrefixTooLong { len, max });
        }
        let addr = match addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from_bits(a.to_bits() & v4_mask(len))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from_bits(a.to_bits() & v6_mask(len))),
        };
        Ok(IpNet { addr, len })
    }

    /// A single host (`/32` or `/128`).
    pub fn host(addr: IpAddr) -> IpNet {
        IpNet { addr, len: max_len(addr) }
    }

    /// The network address (host bits are zero).
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length in bits (`/0` matches every address of its family).
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// True if `ip` is of the same family and inside the prefix.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => a.to_bits() & v4_mask(self.len) == n.to_bits(),
            (IpAddr::V6(n), IpAddr::V6(a)) => a.to_bits() & v6_mask(self.len) == n.to_bits(),
            _ => false,
        }
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == max_len(self.addr) {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}/{}", self.addr, self.len)
        }
    }
}

pub(crate) fn max_len(addr: IpAddr) -> u8 {
    match addr {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// Mask with the top `len` bits of an IPv4 address set.
pub(crate) fn v4_mask(len: u8) -> u32 {
    if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len.min(32))) }
}

/// Mask with the top `len` bits of an IPv6 address set.
pub(crate) fn v6_mask(len: u8) -> u128 {
    if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len.min(128))) }
}

/// An inclusive port range; a single port has `lo == hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortRange {
    lo: u16,
    hi: u16,
}

impl PortRange {
    /// The range `lo..=hi`, or `None` when `lo > hi`.
    pub fn new(lo: u16, hi: u16) -> Option<PortRange> {
        (lo <= hi).then_some(PortRange { lo, hi })
    }

    /// Exactly one port.
    pub fn single(port: u16) -> PortRange {
        PortRange { lo: port, hi: port }
    }

    /// Lowest port in the range.
    pub fn lo(&self) -> u16 {
        self.lo
    }

    /// Highest port in the range.
    pub fn hi(&self) -> u16 {
        self.hi
    }

    /// True if `port` is in the range.
    pub fn contains(&self, port: u16) -> bool {
        self.lo <= port && port <= self.hi
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}:{}", self.lo, self.hi)
        }
    }
}

/// One side (`from` or `to`) of a rule: an address prefix or `any`, and optionally ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Endpoint {
    /// `None` is `any`.
    pub net: Option<IpNet>,
    /// `None` is any port.
    pub ports: Option<PortRange>,
}

impl Endpoint {
    /// `any`, all ports.
    pub const ANY: Endpoint = Endpoint { net: None, ports: None };

    /// True if `addr` and `port` match this side.
    pub fn matches(&self, addr: IpAddr, port: u16) -> bool {
        self.net.is_none_or(|n| n.contains(addr)) && self.ports.is_none_or(|p| p.contains(port))
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.net {
            Some(n) => write!(f, "{n}")?,
            None => f.write_str("any")?,
        }
        if let Some(p) = &self.ports {
            write!(f, " port {p}")?;
        }
        Ok(())
    }
}

/// IP protocol numbers that have a name in the rule language.
pub(crate) const PROTO_NAMES: [(&str, u8); 7] =
    [("icmp", 1), ("tcp", 6), ("udp", 17), ("gre", 47), ("esp", 50), ("ah", 51), ("icmp6", 58)];

/// The IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// The IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// The IP protocol number of ICMP (IPv4).
pub const PROTO_ICMP: u8 = 1;
/// The IP protocol number of ICMPv6.
pub const PROTO_ICMP6: u8 = 58;

/// One filter rule. Every field that is `None` is a wildcard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    /// `pass` or `block`.
    pub action: Action,
    /// `in`, `out`, or `None` for both.
    pub dir: Option<Direction>,
    /// `quick`: a match ends evaluation at once.
    pub quick: bool,
    /// `proto N`.
    pub proto: Option<u8>,
    /// `from ...`.
    pub from: Endpoint,
    /// `to ...`.
    pub to: Endpoint,
    /// `icmp-type N`.
    pub icmp_type: Option<u8>,
    /// `keep state`: a pass creates a state entry so the flow and its return traffic pass.
    pub keep_state: bool,
}

impl Rule {
    /// `pass all`-like rule with every field a wildcard.
    pub fn new(action: Action) -> Rule {
        Rule {
            action,
            dir: None,
            quick: false,
            proto: None,
            from: Endpoint::ANY,
            to: Endpoint::ANY,
            icmp_type: None,
            keep_state: false,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.action {
            Action::Pass => "pass",
            Action::Block => "block",
        })?;
        match self.dir {
            Some(Direction::In) => f.write_str(" in")?,
            Some(Direction::Out) => f.write_str(" out")?,
            None => {}
        }
        if self.quick {
            f.write_str(" quick")?;
        }
        if let Some(p) = self.proto {
            match PROTO_NAMES.iter().find(|(_, n)| *n == p) {
                Some((name, _)) => write!(f, " proto {name}")?,
                None => write!(f, " proto {p}")?,
            }
        }
        if self.from == Endpoint::ANY && self.to == Endpoint::ANY {
            f.write_str(" all")?;
        } else {
            write!(f, " from {} to {}", self.from, self.to)?;
        }
        if let Some(t) = self.icmp_type {
            write!(f, " icmp-type {t}")?;
        }
        if self.keep_state {
            f.write_str(" keep state")?;
        }
        Ok(())
    }
}

/// An ordered list of rules plus the action taken when no rule matches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RuleSet {
    /// The rules in file order (index = rule number reported in verdicts and hit counters).
    pub rules: Vec<Rule>,
    /// What happens to a packet no rule matches. [`Action::Pass`] by default, as in IPFilter.
    pub default_action: Action,
}

impl Default for RuleSet {
    fn default() -> Self {
        RuleSet { rules: Vec::new(), default_action: Action::Pass }
    }
}

impl fmt::Display for RuleSet {
    /// The canonical text: a `default block` line when the default is not `pass`, then one rule
    /// per line. For every rule set the parser can produce, `parse_rules` of this text gives the
    /// same rule set back (hand-built rules that break the parser's constraints, e.g. ports
    /// without `proto tcp`, are written out but will not parse).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.default_action == Action::Block {
            writeln!(f, "default block")?;
        }
        for r in &self.rules {
            writeln!(f, "{r}")?;
        }
        Ok(())
    }
}
