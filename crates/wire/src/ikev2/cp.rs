//! The Configuration payload CP (RFC 7296 §3.15): a CFG_REQUEST / CFG_REPLY / CFG_SET / CFG_ACK
//! and its attributes (§3.15.1), the internal addresses and DNS servers a road warrior asks for
//! (§2.19). Read §3.15 and §3.15.1 first; §3.15.3 covers IPv6 (address plus prefix length).
//!
//! Attributes stay a list of `(type, value)` as on the wire, so an attribute we do not know
//! passes through losslessly; [`CfgAttribute::known`] reads the ones we use into typed values.

use super::error::IkeError;
use crate::cursor::{Reader, Writer, len16};
use std::net::{Ipv4Addr, Ipv6Addr};

named_number! {
    /// CFG Type (§3.15).
    CfgType(u8) {
        /// A request for configuration (sent by the initiator in IKE_AUTH).
        CFG_REQUEST = 1,
        /// The answer to a CFG_REQUEST.
        CFG_REPLY = 2,
        /// Configuration pushed without a request.
        CFG_SET = 3,
        /// The acknowledgement of a CFG_SET.
        CFG_ACK = 4,
    }
}

named_number! {
    /// Configuration Attribute Type (§3.15.1), 15 bits.
    CfgAttrType(u16) {
        /// An internal IPv4 address, 0 or 4 octets.
        INTERNAL_IP4_ADDRESS = 1,
        /// The internal network's netmask, 0 or 4 octets.
        INTERNAL_IP4_NETMASK = 2,
        /// A DNS server, 0 or 4 octets.
        INTERNAL_IP4_DNS = 3,
        /// A NetBIOS name server, 0 or 4 octets.
        INTERNAL_IP4_NBNS = 4,
        /// A DHCP server, 0 or 4 octets.
        INTERNAL_IP4_DHCP = 6,
        /// The application version, 0 or more octets.
        APPLICATION_VERSION = 7,
        /// An internal IPv6 address and prefix length, 0 or 17 octets (§3.15.3).
        INTERNAL_IP6_ADDRESS = 8,
        /// A DNS server, 0 or 16 octets.
        INTERNAL_IP6_DNS = 10,
        /// A DHCP server, 0 or 16 octets.
        INTERNAL_IP6_DHCP = 12,
        /// A protected IPv4 subnet, 0 or 8 octets.
        INTERNAL_IP4_SUBNET = 13,
        /// The attribute types the responder supports, 0 or a multiple of 2 octets.
        SUPPORTED_ATTRIBUTES = 14,
        /// A protected IPv6 subnet, 17 octets.
        INTERNAL_IP6_SUBNET = 15,
    }
}

/// One configuration attribute as on the wire (§3.15.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CfgAttribute {
    /// Its type (the R bit is not part of it: "MUST be zero; MUST be ignored on receipt").
    pub attr_type: CfgAttrType,
    /// The value; empty in a request that asks for any value.
    pub value: Vec<u8>,
}

/// The attributes hipsec reads, typed. `None` is an attribute of length zero: in a
/// CFG_REQUEST it asks the responder to pick a value (§3.15.1, quoted in the tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnownAttribute {
    /// INTERNAL_IP4_ADDRESS.
    Ip4Address(Option<Ipv4Addr>),
    /// INTERNAL_IP4_NETMASK.
    Ip4Netmask(Option<Ipv4Addr>),
    /// INTERNAL_IP4_DNS.
    Ip4Dns(Option<Ipv4Addr>),
    /// INTERNAL_IP6_ADDRESS: the address and its prefix length (§3.15.3).
    Ip6Address(Option<(Ipv6Addr, u8)>),
    /// INTERNAL_IP6_DNS.
    Ip6Dns(Option<Ipv6Addr>),
}

impl CfgAttribute {
    /// An attribute of length zero: "give me one" in a CFG_REQUEST.
    pub fn request(attr_type: CfgAttrType) -> CfgAttribute {
        CfgAttribute { attr_type, value: Vec::new() }
    }

    /// The wire form of a typed attribute.
    pub fn from_known(k: KnownAttribute) -> CfgAttribute {
        let (attr_type, value) = match k {
            KnownAttribute::Ip4Address(a) => (CfgAttrType::INTERNAL_IP4_ADDRESS, v4(a)),
            KnownAttribute::Ip4Netmask(a) => (CfgAttrType::INTERNAL_IP4_NETMASK, v4(a)),
            KnownAttribute::Ip4Dns(a) => (CfgAttrType::INTERNAL_IP4_DNS, v4(a)),
            KnownAttribute::Ip6Address(a) => (
                CfgAttrType::INTERNAL_IP6_ADDRESS,
                a.map_or(Vec::new(), |(a, p)| {
                    let mut v = a.octets().to_vec();
                    v.push(p);
                    v
                }),
            ),
            KnownAttribute::Ip6Dns(a) => {
                (CfgAttrType::INTERNAL_IP6_DNS, a.map_or(Vec::new(), |a| a.octets().to_vec()))
            }
        };
        CfgAttribute { attr_type, value }
    }

    /// The typed value of an attribute hipsec reads; `Ok(None)` for any other type (kept, not
    /// understood). A known type with a length its table in §3.15.1 does not allow is an
    /// error naming it.
    pub fn known(&self) -> Result<Option<KnownAttribute>, IkeError> {
        let v = self.value.as_slice();
        let bad = |what| IkeError::BadLength { what, value: v.len() };
        let ip4 = |what| match v.len() {
            0 => Ok(None),
            4 => Ok(<[u8; 4]>::try_from(v).ok().map(Ipv4Addr::from)),
            _ => Err(bad(what)),
        };
        let k = match self.attr_type {
            CfgAttrType::INTERNAL_IP4_ADDRESS => KnownAttribute::Ip4Address(ip4("cp ip4 address")?),
            CfgAttrType::INTERNAL_IP4_NETMASK => KnownAttribute::Ip4Netmask(ip4("cp ip4 netmask")?),
            CfgAttrType::INTERNAL_IP4_DNS => KnownAttribute::Ip4Dns(ip4("cp ip4 dns")?),
            CfgAttrType::INTERNAL_IP6_ADDRESS => KnownAttribute::Ip6Address(match v {
                [] => None,
                [a @ .., p] if a.len() == 16 => {
                    let a = <[u8; 16]>::try_from(a).map_err(|_| bad("cp ip6 address"))?;
                    if *p > 128 {
                        return Err(IkeError::BadValue {
                            what: "cp ip6 prefix length",
                            value: (*p).into(),
                        });
                    }
                    Some((Ipv6Addr::from(a), *p))
                }
                _ => return Err(bad("cp ip6 address")),
            }),
            CfgAttrType::INTERNAL_IP6_DNS => KnownAttribute::Ip6Dns(match v.len() {
                0 => None,
                16 => <[u8; 16]>::try_from(v).ok().map(Ipv6Addr::from),
                _ => return Err(bad("cp ip6 dns")),
            }),
            _ => return Ok(None),
        };
        Ok(Some(k))
    }
}

fn v4(a: Option<Ipv4Addr>) -> Vec<u8> {
    a.map_or(Vec::new(), |a| a.octets().to_vec())
}

/// A CP payload body (§3.15).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cp {
    /// Request, reply, set or ack.
    pub cfg_type: CfgType,
    /// The attributes, in order; an unknown type is kept as it came.
    pub attributes: Vec<CfgAttribute>,
}

impl Cp {
    /// Parses the payload body. The R bit of each attribute is ignored (§3.15.1).
    pub fn parse(body: &[u8]) -> Result<Cp, IkeError> {
        let mut r = Reader::new(body);
        let cfg_type = CfgType(r.u8("cp cfg type")?);
        r.take(3, "cp reserved")?;
        let mut attributes = Vec::new();
        while !r.is_empty() {
            let attr_type = CfgAttrType(r.u16("cp attribute type")? & 0x7fff);
            let len = r.u16("cp attribute length")?;
            let value = r.take(len.into(), "cp attribute value")?.to_vec();
            attributes.push(CfgAttribute { attr_type, value });
        }
        Ok(Cp { cfg_type, attributes })
    }

    /// Bytes of the body `emit` writes.
    pub fn buffer_len(&self) -> usize {
        4 + self.attributes.iter().map(|a| 4 + a.value.len()).sum::<usize>()
    }

    /// Writes the body into exactly `buffer_len()` bytes (R bits zero).
    pub fn emit(&self, out: &mut [u8]) -> Result<(), IkeError> {
        let mut w = Writer::new(out, self.buffer_len(), "cp")?;
        w.u8(self.cfg_type.0)?;
        w.zeros(3)?;
        for a in &self.attributes {
            if a.attr_type.0 > 0x7fff {
                return Err(IkeError::BadValue {
                    what: "cp attribute type",
                    value: a.attr_type.0.into(),
                });
            }
            w.u16(a.attr_type.0)?;
            w.u16(len16(a.value.len(), "cp attribute length")?)?;
            w.bytes(&a.value)?;
        }
        Ok(w.finish()?)
    }

    /// The typed attributes hipsec reads, in order; unknown ones skipped (§3.15.1 lets a
    /// responder ignore what it does not support), malformed known ones an error.
    pub fn known(&self) -> Result<Vec<KnownAttribute>, IkeError> {
        let mut out = Vec::new();
        for a in &self.attributes {
            if let Some(k) = a.known()? {
                out.push(k);
            }
        }
        Ok(out)
    }
}
