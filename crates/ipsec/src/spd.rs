//! Security Policy Database (RFC 4301 §4.4.1): ordered entries whose selectors (address prefixes,
//! protocol, port ranges) map an outbound packet to protect / bypass / discard. First match wins;
//! no match means discard (fail closed).

use std::net::IpAddr;
use wire::{IpLayout, proto};

/// An address prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    /// Network address.
    pub addr: IpAddr,
    /// Prefix length in bits.
    pub len: u8,
}

/// A prefix string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad prefix {0:?}: want ADDR or ADDR/LEN (e.g. 10.0.0.0/24, 2001:db8::/32)")]
pub struct BadPrefix(pub String);

impl std::str::FromStr for Prefix {
    type Err = BadPrefix;
    fn from_str(s: &str) -> Result<Prefix, BadPrefix> {
        let bad = || BadPrefix(s.to_string());
        let (a, l) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match l {
            Some(l) => l.parse::<u8>().map_err(|_| bad())?,
            None => max,
        };
        if len > max {
            return Err(bad());
        }
        Ok(Prefix { addr, len })
    }
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl Prefix {
    /// The whole IPv4 or IPv6 space.
    pub fn any(v6: bool) -> Prefix {
        if v6 {
            Prefix { addr: IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), len: 0 }
        } else {
            Prefix { addr: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), len: 0 }
        }
    }

    /// True if the address (4 or 16 bytes, network order) lies in the prefix.
    pub fn contains(&self, a: &[u8]) -> bool {
        match &self.addr {
            IpAddr::V4(v) if a.len() == 4 => prefix_match(&v.octets(), a, self.len as usize),
            IpAddr::V6(v) if a.len() == 16 => prefix_match(&v.octets(), a, self.len as usize),
            _ => false,
        }
    }
}

fn prefix_match(net: &[u8], a: &[u8], bits: usize) -> bool {
    let whole = bits / 8;
    if net[..whole] != a[..whole] {
        return false;
    }
    let rem = bits % 8;
    rem == 0 || (net[whole] ^ a[whole]) & (0xffu8 << (8 - rem)) == 0
}

/// Traffic selectors of one SPD entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// Source prefix.
    pub src: Prefix,
    /// Destination prefix.
    pub dst: Prefix,
    /// Upper-layer protocol, or any.
    pub proto: Option<u8>,
    /// Source port range (inclusive), TCP/UDP only.
    pub src_ports: Option<(u16, u16)>,
    /// Destination port range (inclusive), TCP/UDP only.
    pub dst_ports: Option<(u16, u16)>,
}

/// What to do with matching packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send as is.
    Bypass,
    /// Drop.
    Discard,
    /// Apply these outbound SAs in order (e.g. ESP then AH).
    Protect(Vec<usize>),
}

/// One SPD entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpdEntry {
    /// Selectors.
    pub selector: Selector,
    /// Action.
    pub action: Action,
}

impl Selector {
    /// True if the packet (with `layout`) matches.
    pub fn matches(&self, p: &[u8], layout: &IpLayout) -> bool {
        let (s, d) = layout.addrs(p);
        if !self.src.contains(s) || !self.dst.contains(d) {
            return false;
        }
        if self.proto.is_some_and(|x| x != layout.next_header) {
            return false;
        }
        if self.src_ports.is_none() && self.dst_ports.is_none() {
            return true;
        }
        let ports = match layout.next_header {
            proto::TCP | proto::UDP if !layout.is_fragment => {
                p.get(layout.header_len..layout.header_len + 4)
            }
            _ => None,
        };
        let Some(ports) = ports else { return false };
        let sp = u16::from_be_bytes([ports[0], ports[1]]);
        let dp = u16::from_be_bytes([ports[2], ports[3]]);
        self.src_ports.is_none_or(|(lo, hi)| (lo..=hi).contains(&sp))
            && self.dst_ports.is_none_or(|(lo, hi)| (lo..=hi).contains(&dp))
    }
}

/// First matching entry's action (RFC 4301 §4.4.1: ordered, first match).
pub fn lookup<'a>(spd: &'a [SpdEntry], p: &[u8], layout: &IpLayout) -> Option<&'a Action> {
    spd.iter().find(|e| e.selector.matches(p, layout)).map(|e| &e.action)
}
