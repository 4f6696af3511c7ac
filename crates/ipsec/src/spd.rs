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
    ///
    /// Runs for every packet on the data path, so it compares whole integers under a mask
    /// rather than byte slices (which cost a memcmp call each).
    pub fn contains(&self, a: &[u8]) -> bool {
        match (&self.addr, a) {
            (IpAddr::V4(v), &[a0, a1, a2, a3]) => {
                let x = u32::from(*v) ^ u32::from_be_bytes([a0, a1, a2, a3]);
                let mask = u32::MAX.checked_shl(32 - u32::from(self.len.min(32))).unwrap_or(0);
                x & mask == 0
            }
            (IpAddr::V6(v), a) if a.len() == 16 => {
                let mut b = [0u8; 16];
                b.copy_from_slice(a);
                let x = u128::from(*v) ^ u128::from_be_bytes(b);
                let mask = u128::MAX.checked_shl(128 - u32::from(self.len.min(128))).unwrap_or(0);
                x & mask == 0
            }
            _ => false,
        }
    }
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

/// The fields of a packet that [`Selector::matches`] reads, and nothing else: two packets with
/// equal keys meet the same SPD entry. The inbound check remembers its last verdict per SA
/// under this key (`Engine::inbound`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowKey {
    /// Source then destination address, each in a 16-byte half (IPv4 in the first four).
    addrs: [u8; 32],
    v6: bool,
    proto: u8,
    /// Source and destination port, when `matches` would read them (TCP/UDP, not a fragment).
    ports: Option<[u8; 4]>,
}

impl FlowKey {
    /// The key of a packet whose `layout` was parsed from `p`.
    pub(crate) fn of(p: &[u8], layout: &IpLayout) -> FlowKey {
        let (s, d) = layout.addrs(p);
        let mut addrs = [0u8; 32];
        let (a, b) = addrs.split_at_mut(16);
        for (to, from) in [(a, s), (b, d)] {
            let n = from.len().min(16);
            to[..n].copy_from_slice(&from[..n]);
        }
        let ports = match layout.next_header {
            proto::TCP | proto::UDP if !layout.is_fragment => {
                p.get(layout.header_len..layout.header_len + 4).map(|x| [x[0], x[1], x[2], x[3]])
            }
            _ => None,
        };
        FlowKey { addrs, v6: s.len() == 16, proto: layout.next_header, ports }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bit by bit, the definition the masked comparison must agree with.
    fn reference(net: &[u8], a: &[u8], bits: usize) -> bool {
        (0..bits).all(|i| (net[i / 8] >> (7 - i % 8)) & 1 == (a[i / 8] >> (7 - i % 8)) & 1)
    }

    #[test]
    fn edges() {
        let p: Prefix = "10.1.0.0/16".parse().unwrap();
        assert!(p.contains(&[10, 1, 200, 3]));
        assert!(!p.contains(&[10, 2, 0, 0]));
        assert!(!p.contains(&[0; 16]), "an IPv6 address is never in an IPv4 prefix");
        assert!(Prefix::any(false).contains(&[255, 1, 2, 3]));
        assert!(Prefix::any(true).contains(&[0xff; 16]));
        let h: Prefix = "2001:db8::1".parse().unwrap();
        assert!(h.contains(&h.addr_octets()));
        let mut o = h.addr_octets();
        o[15] ^= 1;
        assert!(!h.contains(&o));
    }

    impl Prefix {
        fn addr_octets(&self) -> Vec<u8> {
            match self.addr {
                IpAddr::V4(v) => v.octets().to_vec(),
                IpAddr::V6(v) => v.octets().to_vec(),
            }
        }
    }

    proptest! {
        #[test]
        fn contains_matches_bitwise_definition(
            v6 in any::<bool>(), net in any::<[u8; 16]>(), a in any::<[u8; 16]>(),
            len in 0u8..=128, flip in 0usize..128,
        ) {
            let n = if v6 { 16 } else { 4 };
            let len = len.min(n as u8 * 8);
            let addr = if v6 {
                IpAddr::V6(std::net::Ipv6Addr::from(net))
            } else {
                IpAddr::V4(std::net::Ipv4Addr::new(net[0], net[1], net[2], net[3]))
            };
            let p = Prefix { addr, len };
            let a = &a[..n];
            prop_assert_eq!(p.contains(a), reference(&net[..n], a, len as usize));
            // An address one bit away from the network, inside or outside the prefix.
            let mut near = net[..n].to_vec();
            let bit = flip % (n * 8);
            near[bit / 8] ^= 0x80 >> (bit % 8);
            prop_assert_eq!(p.contains(&near), bit >= len as usize);
        }
    }
}
