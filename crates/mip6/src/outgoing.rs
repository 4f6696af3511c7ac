//! A Mobility Header to send and the addressing around it (RFC 6275 §6.3, §6.4, §9.5.4,
//! §11.7.1): a mobile node away from home sends from its care-of address with a Home Address
//! option; a home agent answers to the care-of address with a type 2 routing header naming the
//! home address. Under RFC 3776 §3 ESP sits between that extension header and the Mobility
//! Header, so the node asks for the extension header with Next Header 50 and seals the MH.

use std::net::Ipv6Addr;

use wire::WireError;
use wire::mip6::{
    DestinationOptions, IPPROTO_DSTOPTS, IPPROTO_MH, IPPROTO_ROUTING, RoutingHeader2,
};

/// The extension header a Mobility Header travels behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Extension {
    /// None: sent from or to the home address itself.
    None,
    /// A Destination Options header with a Home Address option (§6.3).
    HomeAddressOption(Ipv6Addr),
    /// A type 2 routing header (§6.4).
    RoutingHeader2(Ipv6Addr),
}

/// A Mobility Header ready to send: IPv6 source and destination, the extension header, and
/// the header bytes with their Checksum filled for the pseudo-header of §6.1.1 (home address
/// in place of the care-of address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// IPv6 Source Address.
    pub src: Ipv6Addr,
    /// IPv6 Destination Address.
    pub dst: Ipv6Addr,
    /// The extension header before the MH (or before ESP).
    pub extension: Extension,
    /// The Mobility Header.
    pub mh: Vec<u8>,
}

impl Outgoing {
    /// The extension header's bytes with `next_header` (135 in the clear, 50 under ESP); empty
    /// for [`Extension::None`].
    pub fn extension_bytes(&self, next_header: u8) -> Result<Vec<u8>, WireError> {
        match self.extension {
            Extension::None => Ok(Vec::new()),
            Extension::HomeAddressOption(home) => {
                DestinationOptions::home_address(next_header, home).to_vec()
            }
            Extension::RoutingHeader2(home) => {
                Ok(RoutingHeader2::new(next_header, home).to_vec()?.to_vec())
            }
        }
    }

    /// The IPv6 Next Header value that announces the extension header (or the MH itself).
    pub fn first_next_header(&self) -> u8 {
        match self.extension {
            Extension::None => IPPROTO_MH,
            Extension::HomeAddressOption(_) => IPPROTO_DSTOPTS,
            Extension::RoutingHeader2(_) => IPPROTO_ROUTING,
        }
    }

    /// The whole IPv6 packet without ESP (hop limit 64): for tests, captures and the
    /// unprotected case that RFC 3776 forbids on a real link.
    pub fn to_plain_ipv6(&self) -> Result<Vec<u8>, WireError> {
        let ext = self.extension_bytes(IPPROTO_MH)?;
        let payload_len = ext.len() + self.mh.len();
        let len = u16::try_from(payload_len).map_err(|_| WireError::BadLength {
            what: "ipv6 payload length",
            value: payload_len,
        })?;
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&len.to_be_bytes());
        p.extend_from_slice(&[self.first_next_header(), 64]);
        p.extend_from_slice(&self.src.octets());
        p.extend_from_slice(&self.dst.octets());
        p.extend_from_slice(&ext);
        p.extend_from_slice(&self.mh);
        Ok(p)
    }
}
