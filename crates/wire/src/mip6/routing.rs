//! The type 2 routing header (RFC 6275 §6.4): a correspondent or home agent sends to the mobile
//! node's care-of address and names its home address here; the mobile node delivers the packet
//! to itself at the home address. Hdr Ext Len 2, Segments Left 1, 24 octets in all.
//!
//! ```text
//! |  Next Header  | Hdr Ext Len=2 | Routing Type=2|Segments Left=1|
//! |                            Reserved                           |
//! |                         Home Address (16 octets)              |
//! ```

use std::net::Ipv6Addr;

use super::consts::ROUTING_TYPE_2;
use crate::cursor::{Reader, Writer};
use crate::error::WireError;

/// Length of a type 2 routing header (§6.4).
pub const ROUTING_HEADER_2_LEN: usize = 24;

/// A type 2 routing header (§6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoutingHeader2 {
    /// Next Header.
    pub next_header: u8,
    /// Segments Left: 1 as sent; 0 once the mobile node has processed it (§6.4).
    pub segments_left: u8,
    /// The mobile node's home address.
    pub home_address: Ipv6Addr,
}

impl RoutingHeader2 {
    /// A header as sent (Segments Left 1).
    pub fn new(next_header: u8, home_address: Ipv6Addr) -> RoutingHeader2 {
        RoutingHeader2 { next_header, segments_left: 1, home_address }
    }

    /// Parses the type 2 routing header at the start of `bytes` (octets after its 24 are
    /// ignored): Hdr Ext Len must be 2 and Routing Type 2 (§6.4), Segments Left 0 or 1.
    pub fn parse(bytes: &[u8]) -> Result<RoutingHeader2, WireError> {
        let mut r = Reader::new(bytes);
        let next_header = r.u8("type 2 routing header")?;
        let ext_len = r.u8("type 2 routing header")?;
        let routing_type = r.u8("type 2 routing header")?;
        let segments_left = r.u8("type 2 routing header")?;
        if ext_len != 2 {
            return Err(WireError::BadLength {
                what: "type 2 routing header hdr ext len",
                value: usize::from(ext_len),
            });
        }
        if routing_type != ROUTING_TYPE_2 {
            return Err(WireError::BadValue {
                what: "routing type",
                value: u64::from(routing_type),
            });
        }
        if segments_left > 1 {
            return Err(WireError::BadValue {
                what: "type 2 routing header segments left",
                value: u64::from(segments_left),
            });
        }
        r.take(4, "type 2 routing header reserved")?;
        let home_address = Ipv6Addr::from(r.array::<16>("type 2 routing header home address")?);
        Ok(RoutingHeader2 { next_header, segments_left, home_address })
    }

    /// Octets [`RoutingHeader2::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        ROUTING_HEADER_2_LEN
    }

    /// Writes the header into exactly 24 octets.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
        if self.segments_left > 1 {
            return Err(WireError::BadValue {
                what: "type 2 routing header segments left",
                value: u64::from(self.segments_left),
            });
        }
        let mut w = Writer::new(out, ROUTING_HEADER_2_LEN, "type 2 routing header")?;
        w.u8(self.next_header)?;
        w.u8(2)?;
        w.u8(ROUTING_TYPE_2)?;
        w.u8(self.segments_left)?;
        w.zeros(4)?;
        w.bytes(&self.home_address.octets())?;
        w.finish()
    }

    /// The header as bytes.
    pub fn to_vec(&self) -> Result<[u8; ROUTING_HEADER_2_LEN], WireError> {
        let mut v = [0; ROUTING_HEADER_2_LEN];
        self.emit(&mut v)?;
        Ok(v)
    }
}
