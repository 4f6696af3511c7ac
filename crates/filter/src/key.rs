//! `PacketKey`: the fields a rule looks at, taken from an IPv4/IPv6 packet with etherparse
//! (RFC 791, RFC 8200 §4 extension headers and §4.5 fragments).

use std::net::IpAddr;

use etherparse::{IpSlice, Ipv6ExtensionSlice};

use crate::rule::{Direction, PROTO_ICMP, PROTO_ICMP6, PROTO_TCP, PROTO_UDP};

/// The classification key of one packet. Ports are zero for protocols without ports and for
/// non-first fragments; `icmp_type` is `Some` only for ICMP/ICMPv6 packets that carry their
/// header (not for non-first fragments).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PacketKey {
    /// Direction the packet travels.
    pub dir: Direction,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP protocol number of the payload (after IPv6 extension headers and AH).
    pub proto: u8,
    /// TCP/UDP source port, else 0.
    pub src_port: u16,
    /// TCP/UDP destination port, else 0.
    pub dst_port: u16,
    /// ICMP/ICMPv6 type.
    pub icmp_type: Option<u8>,
}

/// A packet from which no [`PacketKey`] could be taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The IP header or an extension header is malformed or truncated.
    #[error("bad IP header: {0}")]
    Ip(#[from] etherparse::err::ip::SliceError),
    /// The first fragment (or unfragmented packet) is too short for the transport fields.
    #[error("transport header of protocol {proto} truncated: {len} bytes, need {needed}")]
    TruncatedTransport {
        /// IP protocol number.
        proto: u8,
        /// Bytes of payload present.
        len: usize,
        /// Bytes needed to read the ports or ICMP type.
        needed: usize,
    },
}

impl PacketKey {
    /// A key for a packet with ports (TCP/UDP); `icmp_type` is `None`.
    pub fn new(
        dir: Direction,
        src: IpAddr,
        dst: IpAddr,
        proto: u8,
        src_port: u16,
        dst_port: u16,
    ) -> PacketKey {
        PacketKey { dir, src, dst, proto, src_port, dst_port, icmp_type: None }
    }

    /// The key of the return traffic: addresses and ports swapped, direction reversed.
    pub fn reversed(&self) -> PacketKey {
        PacketKey {
            dir: self.dir.reverse(),
            src: self.dst,
            dst: self.src,
            proto: self.proto,
            src_port: self.dst_port,
            dst_port: self.src_port,
            icmp_type: self.icmp_type,
        }
    }

    /// Take the key from a raw IPv4 or IPv6 packet (starting at the IP header). Never panics;
    /// malformed packets give a [`KeyError`].
    pub fn from_ip_packet(dir: Direction, packet: &[u8]) -> Result<PacketKey, KeyError> {
        let ip = IpSlice::from_slice(packet)?;
        let payload = ip.payload();
        let proto = payload.ip_number.0;
        let non_first_fragment = match &ip {
            IpSlice::Ipv4(v4) => v4.header().fragments_offset().value() != 0,
            IpSlice::Ipv6(v6) => v6.extensions().clone().into_iter().any(|ext| match ext {
                Ipv6ExtensionSlice::Fragment(f) => f.fragment_offset().value() != 0,
                _ => false,
            }),
        };
        let mut key = PacketKey::new(dir, ip.source_addr(), ip.destination_addr(), proto, 0, 0);
        if non_first_fragment {
            return Ok(key);
        }
        let data = payload.payload;
        match proto {
            PROTO_TCP | PROTO_UDP => match data {
                [a, b, c, d, ..] => {
                    key.src_port = u16::from_be_bytes([*a, *b]);
                    key.dst_port = u16::from_be_bytes([*c, *d]);
                }
                _ => {
                    return Err(KeyError::TruncatedTransport { proto, len: data.len(), needed: 4 });
                }
            },
            PROTO_ICMP | PROTO_ICMP6 => match data.first() {
                Some(t) => key.icmp_type = Some(*t),
                None => {
                    return Err(KeyError::TruncatedTransport { proto, len: 0, needed: 1 });
                }
            },
            _ => {}
        }
        Ok(key)
    }
}
