//! What the home agent reads of a packet before ESP: the IPv6 header and a Destination Options
//! header with the Home Address option (RFC 6275 §6.3, §9.3.1), without allocating.
//!
//! RFC 6275 §9.3.1 has the receiver note the Home Address option and use the home address in
//! place of the source for the upper layers; RFC 3776 §3 puts that Destination Options header
//! before ESP, so ESP is verified on the packet as sent (its ICV does not cover the IPv6
//! header) and the option's address is then checked against the SA's home address
//! (`mip6::HomeAgent::handle`, RFC 3776 §4.1). The Home Address option is only accepted in a
//! Destination Options header that comes before any routing header (§6.3), which here means
//! right after the IPv6 header.

use std::net::Ipv6Addr;
use wire::mip6::{HOME_ADDRESS_OPTION_TYPE, IPPROTO_DSTOPTS};

/// Pad1 and PadN (RFC 8200 §4.2).
const PAD1: u8 = 0;
const PADN: u8 = 1;

/// The parts of an inbound packet the home agent needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inbound {
    /// IPv6 Source Address (the care-of address when the mobile node is away).
    pub src: Ipv6Addr,
    /// IPv6 Destination Address.
    pub dst: Ipv6Addr,
    /// The Home Address option's address, if there was one.
    pub home_address: Option<Ipv6Addr>,
    /// Protocol after the IPv6 header and the Destination Options header (50 ESP, 135 MH, ...).
    pub next_header: u8,
    /// Where that protocol's header starts.
    pub offset: usize,
    /// The packet's length per its Payload Length (the frame may carry link padding after it).
    pub len: usize,
}

/// Why a packet was not looked at further.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotParsed {
    /// Not IPv6, cut short, or a bad option area.
    Malformed,
    /// An option whose type says "discard" (RFC 8200 §4.2, action bits not 00) that we do not
    /// know.
    UnknownOption,
}

fn addr(p: &[u8], at: usize) -> Option<Ipv6Addr> {
    let b: [u8; 16] = p.get(at..at + 16)?.try_into().ok()?;
    Some(Ipv6Addr::from(b))
}

/// Parses the IPv6 header and, if the next header is Destination Options, that header.
pub fn parse(p: &[u8]) -> Result<Inbound, NotParsed> {
    use NotParsed::Malformed;
    if p.len() < 40 || p[0] >> 4 != 6 {
        return Err(Malformed);
    }
    let len = 40 + usize::from(u16::from_be_bytes([p[4], p[5]]));
    if len > p.len() {
        return Err(Malformed);
    }
    let p = &p[..len];
    let (src, dst) = (addr(p, 8).ok_or(Malformed)?, addr(p, 24).ok_or(Malformed)?);
    let mut next_header = p[6];
    let mut offset = 40;
    let mut home_address = None;
    if next_header == IPPROTO_DSTOPTS {
        let hdr_len = (usize::from(*p.get(41).ok_or(Malformed)?) + 1) * 8;
        let area = p.get(42..40 + hdr_len).ok_or(Malformed)?;
        home_address = scan_options(area)?;
        next_header = p[40];
        offset = 40 + hdr_len;
    }
    Ok(Inbound { src, dst, home_address, next_header, offset, len })
}

/// Walks the options (RFC 8200 §4.2): padding skipped, at most one Home Address option of 16
/// octets (§6.3), an unknown option skipped only if its action bits are 00.
fn scan_options(mut a: &[u8]) -> Result<Option<Ipv6Addr>, NotParsed> {
    let mut home = None;
    while let Some(&t) = a.first() {
        if t == PAD1 {
            a = &a[1..];
            continue;
        }
        let n = usize::from(*a.get(1).ok_or(NotParsed::Malformed)?);
        let data = a.get(2..2 + n).ok_or(NotParsed::Malformed)?;
        match t {
            PADN => {}
            HOME_ADDRESS_OPTION_TYPE => {
                if n != 16 || home.is_some() {
                    return Err(NotParsed::Malformed);
                }
                home = addr(data, 0);
            }
            _ if t >> 6 != 0 => return Err(NotParsed::UnknownOption),
            _ => {}
        }
        a = &a[2 + n..];
    }
    Ok(home)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use wire::mip6::{DestinationOptions, IPPROTO_MH};

    fn packet(ext: &[u8], first: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&((ext.len() + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[first, 64]);
        p.extend_from_slice(&"2001:db8:2::7".parse::<Ipv6Addr>().unwrap().octets());
        p.extend_from_slice(&"2001:db8:1::1".parse::<Ipv6Addr>().unwrap().octets());
        p.extend_from_slice(ext);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn finds_the_home_address_and_what_follows() {
        let home: Ipv6Addr = "2001:db8:1::100".parse().unwrap();
        let d = DestinationOptions::home_address(50, home).to_vec().unwrap();
        let mut p = packet(&d, IPPROTO_DSTOPTS, &[1, 2, 3, 4]);
        p.extend_from_slice(&[0; 6]); // link-layer padding after the packet
        let i = parse(&p).unwrap();
        assert_eq!(i.home_address, Some(home));
        assert_eq!((i.next_header, i.offset, i.len), (50, 40 + d.len(), 40 + d.len() + 4));
    }

    #[test]
    fn no_options_and_bad_ones() {
        let i = parse(&packet(&[], IPPROTO_MH, &[0; 8])).unwrap();
        assert_eq!((i.home_address, i.next_header, i.offset), (None, IPPROTO_MH, 40));
        // An unknown option of action 11 (discard and answer) is not skipped.
        let bad = [50, 0, 0xc3, 2, 0, 0, 1, 0];
        assert_eq!(parse(&packet(&bad, IPPROTO_DSTOPTS, &[])), Err(NotParsed::UnknownOption));
        // A header longer than the packet.
        let long = [50, 3, 1, 4, 0, 0, 0, 0];
        assert_eq!(parse(&packet(&long, IPPROTO_DSTOPTS, &[])), Err(NotParsed::Malformed));
        assert_eq!(parse(&[0x60; 20]), Err(NotParsed::Malformed));
    }
}
