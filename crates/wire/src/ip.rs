//! The IP facts IPsec needs, on top of etherparse's validation: where the upper-layer header
//! starts (the ESP/AH insertion point, RFC 4303 §3.1.1, RFC 4302 §3.1.1), which byte names it,
//! how to fix the length fields after a transform, and which fields AH treats as mutable
//! (RFC 4302 §3.3.3.1).

use crate::error::WireError;
use etherparse::{IpSlice, Ipv4HeaderSlice, Ipv6HeaderSlice};

/// IP version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpVersion {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

/// IPv6 extension headers that precede ESP/AH in a packet (RFC 8200 §4.1, RFC 4303 §3.1.1).
const EXT_HOP_BY_HOP: u8 = 0;
const EXT_ROUTING: u8 = 43;
const EXT_FRAGMENT: u8 = 44;
const EXT_DEST_OPTS: u8 = 60;

/// The layout of an IP packet as IPsec sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpLayout {
    /// IP version.
    pub version: IpVersion,
    /// Bytes from the start of the packet to the upper-layer header (IPv4 header with options, or
    /// IPv6 header with the extension headers that come before ESP/AH).
    pub header_len: usize,
    /// Offset of the byte that holds `next_header` (IPv4 protocol, or the last extension header's
    /// Next Header field).
    pub next_header_offset: usize,
    /// Protocol of what starts at `header_len`.
    pub next_header: u8,
    /// Length of the packet according to its header (may be less than the buffer).
    pub total_len: usize,
    /// True if this is a fragment (IPv4 MF/offset, or an IPv6 fragment header): IPsec only handles
    /// whole packets (RFC 4303 §3.4.1).
    pub is_fragment: bool,
}

impl IpLayout {
    /// Parses and validates an IPv4 or IPv6 packet (etherparse checks lengths and versions).
    pub fn parse(packet: &[u8]) -> Result<IpLayout, WireError> {
        let first =
            *packet.first().ok_or(WireError::Truncated { what: "ip header", len: 0, need: 20 })?;
        match first >> 4 {
            4 => Self::parse_v4(packet),
            6 => Self::parse_v6(packet),
            v => Err(WireError::BadValue { what: "ip version", value: v as u64 }),
        }
    }

    fn parse_v4(packet: &[u8]) -> Result<IpLayout, WireError> {
        let h =
            Ipv4HeaderSlice::from_slice(packet).map_err(|_| WireError::Ip("bad ipv4 header"))?;
        let header_len = h.slice().len();
        let total_len = h.total_len() as usize;
        if total_len < header_len || total_len > packet.len() {
            return Err(WireError::BadLength { what: "ipv4 total length", value: total_len });
        }
        Ok(IpLayout {
            version: IpVersion::V4,
            header_len,
            next_header_offset: 9,
            next_header: h.protocol().0,
            total_len,
            is_fragment: h.more_fragments() || h.fragments_offset().value() != 0,
        })
    }

    fn parse_v6(packet: &[u8]) -> Result<IpLayout, WireError> {
        let h =
            Ipv6HeaderSlice::from_slice(packet).map_err(|_| WireError::Ip("bad ipv6 header"))?;
        let payload_len = h.payload_length() as usize;
        if payload_len == 0 {
            return Err(WireError::BadLength { what: "ipv6 payload length (jumbogram)", value: 0 });
        }
        let total_len = 40 + payload_len;
        if total_len > packet.len() {
            return Err(WireError::BadLength { what: "ipv6 payload length", value: payload_len });
        }
        let mut off = 40;
        let mut nh_off = 6;
        let mut nh = h.next_header().0;
        let mut is_fragment = false;
        while matches!(nh, EXT_HOP_BY_HOP | EXT_ROUTING | EXT_FRAGMENT | EXT_DEST_OPTS) {
            let len = if nh == EXT_FRAGMENT {
                is_fragment = true;
                8
            } else {
                let hdr_ext_len = *packet.get(off + 1).ok_or(WireError::Truncated {
                    what: "ipv6 extension header",
                    len: total_len,
                    need: off + 2,
                })?;
                (hdr_ext_len as usize + 1) * 8
            };
            if off + len > total_len {
                return Err(WireError::Truncated {
                    what: "ipv6 extension header",
                    len: total_len,
                    need: off + len,
                });
            }
            nh_off = off;
            nh = packet[off];
            off += len;
        }
        Ok(IpLayout {
            version: IpVersion::V6,
            header_len: off,
            next_header_offset: nh_off,
            next_header: nh,
            total_len,
            is_fragment,
        })
    }

    /// Source and destination addresses as byte slices (4 or 16 bytes each).
    pub fn addrs<'a>(&self, packet: &'a [u8]) -> (&'a [u8], &'a [u8]) {
        match self.version {
            IpVersion::V4 => (&packet[12..16], &packet[16..20]),
            IpVersion::V6 => (&packet[8..24], &packet[24..40]),
        }
    }
}

/// Validates a packet with etherparse's full slicer (headers and extension chain). Used by tools
/// that want etherparse's own verdict on top of [`IpLayout::parse`].
pub fn validate(packet: &[u8]) -> Result<(), WireError> {
    IpSlice::from_slice(packet)
        .map(|_| ())
        .map_err(|_| WireError::Ip("etherparse refused the packet"))
}

/// The ones'-complement sum (RFC 1071 §1) of `data` as big-endian 16-bit words, added to
/// `initial` and folded to 16 bits, not complemented: the running sum that checksums over
/// several pieces (a pseudo-header, then a segment) are built from. A checksummed region is
/// valid when its sum, with the checksum field in it, is 0xffff.
///
/// Fast enough to verify whole segments on the data path: it adds 32-bit words in the host's
/// byte order into a 64-bit accumulator (which the compiler vectorises, and which cannot
/// overflow below 16 GiB of input) and swaps once at the end, which RFC 1071 §2(B) allows.
pub fn ones_complement_sum(data: &[u8], initial: u16) -> u16 {
    let mut words = data.chunks_exact(4);
    let mut acc: u64 =
        (&mut words).map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]) as u64).sum();
    let rest = words.remainder();
    if !rest.is_empty() {
        // The tail starts at a multiple of 4, so zero padding keeps every byte in its lane.
        let mut last = [0u8; 4];
        last[..rest.len()].copy_from_slice(rest);
        acc += u32::from_ne_bytes(last) as u64;
    }
    let mut folded = (acc & 0xffff_ffff) + (acc >> 32);
    folded = (folded & 0xffff_ffff) + (folded >> 32);
    let mut s = (folded & 0xffff) + (folded >> 16);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    // Host order to big-endian (a no-op on big-endian hosts), then add the caller's sum.
    let mut t = u16::from_be(s as u16) as u32 + initial as u32;
    t = (t & 0xffff) + (t >> 16);
    t as u16
}

/// The running sum of the IPv6 pseudo-header (RFC 8200 §8.1) of an upper-layer packet of `len`
/// octets with next header `next_header`, for [`ones_complement_sum`]'s `initial`.
pub fn ipv6_pseudo_header_sum(
    src: std::net::Ipv6Addr,
    dst: std::net::Ipv6Addr,
    len: usize,
    next_header: u8,
) -> u16 {
    let mut ph = [0u8; 40];
    ph[..16].copy_from_slice(&src.octets());
    ph[16..32].copy_from_slice(&dst.octets());
    ph[32..36].copy_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
    ph[39] = next_header;
    ones_complement_sum(&ph, 0)
}

/// The Internet checksum of `packet` after a pseudo-header whose sum is `pseudo`, computed as
/// if the 2-octet checksum field at the even offset `at` were zero (how HIP, RFC 7401 §5.1.1,
/// and the Mobility Header, RFC 6275 §6.1.1, define theirs). Both pieces start on even offsets,
/// so the 16-bit words keep their alignment.
pub fn checksum_without_field(pseudo: u16, packet: &[u8], at: usize) -> u16 {
    let mut s = ones_complement_sum(packet.get(..at.min(packet.len())).unwrap_or_default(), pseudo);
    s = ones_complement_sum(packet.get(at + 2..).unwrap_or_default(), s);
    !s
}

/// The Internet checksum (RFC 1071) of `data`.
pub fn internet_checksum(data: &[u8]) -> u16 {
    !ones_complement_sum(data, 0)
}

/// Sets the length field of the IP header at the start of `packet` to `packet.len()` and, for
/// IPv4, recomputes the header checksum. `packet` must start with a header of that version.
pub fn set_total_len(packet: &mut [u8], version: IpVersion) -> Result<(), WireError> {
    let len = packet.len();
    match version {
        IpVersion::V4 => {
            let ihl = (*packet.first().ok_or(WireError::Ip("empty"))? & 0x0f) as usize * 4;
            if len > u16::MAX as usize || ihl < 20 || ihl > len {
                return Err(WireError::BadLength { what: "ipv4 total length", value: len });
            }
            packet[2..4].copy_from_slice(&(len as u16).to_be_bytes());
            packet[10..12].fill(0);
            let c = internet_checksum(&packet[..ihl]);
            packet[10..12].copy_from_slice(&c.to_be_bytes());
        }
        IpVersion::V6 => {
            if !(40..=40 + u16::MAX as usize).contains(&len) {
                return Err(WireError::BadLength { what: "ipv6 payload length", value: len });
            }
            packet[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
        }
    }
    Ok(())
}

/// Largest IP header (with options or extension headers) AH will handle.
pub const AH_MAX_HEADER: usize = 256;

/// Copies the IP header `packet[..layout.header_len]` into `out` with the fields AH treats as
/// mutable set to zero (RFC 4302 §3.3.3.1.1 for IPv4, §3.3.3.1.2 for IPv6), so that the ICV can be
/// computed over `out` followed by the rest of the packet. IPv4 options are all treated as mutable
/// (zeroed); IPv6 options with the "may change en route" bit are zeroed; a routing header with
/// segments left is refused (its final form is not computed here).
pub fn ah_zero_mutable<'o>(
    packet: &[u8],
    layout: &IpLayout,
    out: &'o mut [u8; AH_MAX_HEADER],
) -> Result<&'o [u8], WireError> {
    let n = layout.header_len;
    if n > AH_MAX_HEADER || n > packet.len() {
        return Err(WireError::BadLength { what: "ip header length for ah", value: n });
    }
    let out = &mut out[..n];
    out.copy_from_slice(&packet[..n]);
    match layout.version {
        IpVersion::V4 => {
            out[1] = 0; // TOS/DSCP+ECN
            out[6] = 0; // flags + fragment offset
            out[7] = 0;
            out[8] = 0; // TTL
            out[10] = 0; // header checksum
            out[11] = 0;
            out[20..].fill(0); // options
        }
        IpVersion::V6 => {
            out[0] &= 0xf0; // traffic class (high nibble of byte 0 is the version)
            out[1] = 0; // traffic class + flow label
            out[2] = 0;
            out[3] = 0;
            out[7] = 0; // hop limit
            let mut off = 40;
            let mut nh = out[6];
            while off < n {
                let len = if nh == EXT_FRAGMENT { 8 } else { (out[off + 1] as usize + 1) * 8 };
                match nh {
                    EXT_HOP_BY_HOP | EXT_DEST_OPTS => {
                        zero_mutable_options(&mut out[off + 2..off + len])?
                    }
                    EXT_ROUTING if out[off + 3] != 0 => {
                        return Err(WireError::BadValue {
                            what: "ipv6 routing header segments left (ah)",
                            value: out[off + 3] as u64,
                        });
                    }
                    _ => {}
                }
                nh = out[off];
                off += len;
            }
        }
    }
    Ok(out)
}

/// Zeroes the data of TLV options whose type has the 0x20 "may change" bit (RFC 8200 §4.2).
fn zero_mutable_options(opts: &mut [u8]) -> Result<(), WireError> {
    let mut i = 0;
    while i < opts.len() {
        let t = opts[i];
        if t == 0 {
            i += 1; // Pad1
            continue;
        }
        let len = *opts.get(i + 1).ok_or(WireError::Truncated {
            what: "ipv6 option",
            len: opts.len(),
            need: i + 2,
        })? as usize;
        let end = i + 2 + len;
        let data = opts.get_mut(i + 2..end).ok_or(WireError::Truncated {
            what: "ipv6 option",
            len: i + 2,
            need: end,
        })?;
        if t & 0x20 != 0 {
            data.fill(0);
        }
        i = end;
    }
    Ok(())
}

#[cfg(test)]
#[path = "ip_tests.rs"]
mod tests;
