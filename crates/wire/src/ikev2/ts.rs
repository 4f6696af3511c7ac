//! The Traffic Selector payloads TSi/TSr (RFC 7296 §3.13): address ranges (§3.13.1,
//! TS_IPV4_ADDR_RANGE and TS_IPV6_ADDR_RANGE), an IP protocol and a port range each.

use super::error::IkeError;
use crate::cursor::{Reader, Writer, len16};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// TS Type of an IPv4 address range.
pub const TS_IPV4_ADDR_RANGE: u8 = 7;
/// TS Type of an IPv6 address range.
pub const TS_IPV6_ADDR_RANGE: u8 = 8;

/// One traffic selector (§3.13.1). Both addresses are of the same family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrafficSelector {
    /// IP protocol (0 = any).
    pub ip_protocol: u8,
    /// First port (0 with `end_port` 65535 = any).
    pub start_port: u16,
    /// Last port.
    pub end_port: u16,
    /// First address.
    pub start_addr: IpAddr,
    /// Last address.
    pub end_addr: IpAddr,
}

impl TrafficSelector {
    /// Every address of the family of `addr`, every protocol and port.
    pub fn any(v6: bool) -> TrafficSelector {
        let (start_addr, end_addr) = if v6 {
            (IpAddr::V6(Ipv6Addr::UNSPECIFIED), IpAddr::V6(Ipv6Addr::from(u128::MAX)))
        } else {
            (IpAddr::V4(Ipv4Addr::UNSPECIFIED), IpAddr::V4(Ipv4Addr::BROADCAST))
        };
        TrafficSelector { ip_protocol: 0, start_port: 0, end_port: 65535, start_addr, end_addr }
    }

    /// One host, every protocol and port.
    pub fn host(addr: IpAddr) -> TrafficSelector {
        TrafficSelector {
            ip_protocol: 0,
            start_port: 0,
            end_port: 65535,
            start_addr: addr,
            end_addr: addr,
        }
    }

    fn buffer_len(&self) -> usize {
        if self.start_addr.is_ipv4() { 16 } else { 40 }
    }

    fn parse(r: &mut Reader<'_>) -> Result<TrafficSelector, IkeError> {
        let ts_type = r.u8("ts type")?;
        let ip_protocol = r.u8("ts ip protocol")?;
        let len = r.u16("ts selector length")? as usize;
        let want = match ts_type {
            TS_IPV4_ADDR_RANGE => 16,
            TS_IPV6_ADDR_RANGE => 40,
            _ => return Err(IkeError::BadValue { what: "ts type", value: ts_type.into() }),
        };
        if len != want {
            return Err(IkeError::BadLength { what: "ts selector length", value: len });
        }
        let start_port = r.u16("ts start port")?;
        let end_port = r.u16("ts end port")?;
        let (start_addr, end_addr) = if ts_type == TS_IPV4_ADDR_RANGE {
            let s: [u8; 4] = r.array("ts start address")?;
            let e: [u8; 4] = r.array("ts end address")?;
            (IpAddr::from(s), IpAddr::from(e))
        } else {
            let s: [u8; 16] = r.array("ts start address")?;
            let e: [u8; 16] = r.array("ts end address")?;
            (IpAddr::from(s), IpAddr::from(e))
        };
        Ok(TrafficSelector { ip_protocol, start_port, end_port, start_addr, end_addr })
    }

    fn emit(&self, w: &mut Writer<'_>) -> Result<(), IkeError> {
        let ts_type = match (self.start_addr, self.end_addr) {
            (IpAddr::V4(_), IpAddr::V4(_)) => TS_IPV4_ADDR_RANGE,
            (IpAddr::V6(_), IpAddr::V6(_)) => TS_IPV6_ADDR_RANGE,
            _ => return Err(IkeError::BadValue { what: "ts address family", value: 0 }),
        };
        w.u8(ts_type)?;
        w.u8(self.ip_protocol)?;
        w.u16(len16(self.buffer_len(), "ts selector length")?)?;
        w.u16(self.start_port)?;
        w.u16(self.end_port)?;
        for a in [self.start_addr, self.end_addr] {
            match a {
                IpAddr::V4(a) => w.bytes(&a.octets())?,
                IpAddr::V6(a) => w.bytes(&a.octets())?,
            }
        }
        Ok(())
    }
}

/// A TSi or TSr payload body (§3.13): one or more selectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ts {
    /// The selectors.
    pub selectors: Vec<TrafficSelector>,
}

impl Ts {
    /// Parses the payload body.
    pub fn parse(body: &[u8]) -> Result<Ts, IkeError> {
        let mut r = Reader::new(body);
        let n = r.u8("ts number of ts")? as usize;
        r.take(3, "ts reserved")?;
        if n == 0 {
            return Err(IkeError::BadLength { what: "ts number of ts", value: 0 });
        }
        let mut selectors = Vec::with_capacity(n);
        for _ in 0..n {
            selectors.push(TrafficSelector::parse(&mut r)?);
        }
        if !r.is_empty() {
            return Err(IkeError::BadLength { what: "ts number of ts", value: n });
        }
        Ok(Ts { selectors })
    }

    /// Bytes of the body `emit` writes.
    pub fn buffer_len(&self) -> usize {
        4 + self.selectors.iter().map(TrafficSelector::buffer_len).sum::<usize>()
    }

    /// Writes the body into exactly `buffer_len()` bytes.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), IkeError> {
        let n = self.selectors.len();
        let n8 = u8::try_from(n).ok().filter(|&n| n > 0);
        let n8 = n8.ok_or(IkeError::BadLength { what: "ts number of ts", value: n })?;
        let mut w = Writer::new(out, self.buffer_len(), "ts")?;
        w.u8(n8)?;
        w.bytes(&[0; 3])?;
        self.selectors.iter().try_for_each(|s| s.emit(&mut w))?;
        Ok(w.finish()?)
    }
}
