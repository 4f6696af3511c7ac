//! The Mobility Header (RFC 6275 §6.1.1) and its checksum: [`MhPacket`] is the checked view over
//! one header. Read §6.1.1 and, for the addresses the pseudo-header takes, §6.1.1 with RFC 8200
//! §8.1 (the home address of a Home Address option as source; the final destination of a type 2
//! routing header as destination).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! | Payload Proto |  Header Len   |   MH Type     |   Reserved    |
//! |           Checksum            |                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               |
//! .                       Message Data                            .
//! ```

use std::net::Ipv6Addr;

use super::consts::{IPPROTO_MH, MAX_LEN, MIN_LEN, MhType};
use crate::error::WireError;
use crate::ip::{checksum_without_field, ipv6_pseudo_header_sum, ones_complement_sum};

/// Offset of the Message Data (after Payload Proto, Header Len, MH Type, Reserved, Checksum).
pub const MESSAGE_DATA_OFFSET: usize = 6;

/// A checked view of one Mobility Header: at least 8 octets, and the Header Len field (8-octet
/// units beyond the first 8) covers no more than the buffer. Octets past it are ignored.
#[derive(Debug, Clone, Copy)]
pub struct MhPacket<T: AsRef<[u8]>> {
    buffer: T,
    len: usize,
}

impl<T: AsRef<[u8]>> MhPacket<T> {
    /// Checks the fixed part of the Mobility Header (§6.1.1) in `buffer`.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < MIN_LEN {
            return Err(WireError::Truncated { what: "mobility header", len: b.len(), need: 8 });
        }
        let len = (usize::from(b[1]) + 1) * 8;
        if len > b.len() {
            return Err(WireError::BadLength { what: "mobility header length", value: len });
        }
        Ok(MhPacket { buffer, len })
    }

    fn octet(&self, at: usize) -> u8 {
        self.buffer.as_ref().get(at).copied().unwrap_or_default()
    }

    /// Payload Proto: [`super::IPPROTO_NONE`] (59) as §6.1.1 says a sender should use.
    pub fn payload_proto(&self) -> u8 {
        self.octet(0)
    }
    /// Header Len: the header's length in 8-octet units, not counting the first 8 octets.
    pub fn header_len(&self) -> u8 {
        self.octet(1)
    }
    /// MH Type.
    pub fn mh_type(&self) -> MhType {
        MhType(self.octet(2))
    }
    /// The Reserved octet (zero when sent, ignored when received).
    pub fn reserved(&self) -> u8 {
        self.octet(3)
    }
    /// Checksum.
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.octet(4), self.octet(5)])
    }
    /// The header's length in octets: `(Header Len + 1) * 8`.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never true for a checked header; here for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The header: the first `len()` octets of the buffer.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref().get(..self.len).unwrap_or_default()
    }
    /// The Message Data: from offset 6 to the end of the header.
    pub fn message_data(&self) -> &[u8] {
        self.as_bytes().get(MESSAGE_DATA_OFFSET..).unwrap_or_default()
    }
    /// Verifies the checksum against the pseudo-header's addresses (§6.1.1).
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        verify_checksum(src, dst, self.as_bytes())
    }
}

/// The running sum of the IPv6 pseudo-header (§6.1.1, RFC 8200 §8.1) for next header 135.
fn pseudo_header_sum(src: Ipv6Addr, dst: Ipv6Addr, len: usize) -> u16 {
    ipv6_pseudo_header_sum(src, dst, len, IPPROTO_MH)
}

/// The Checksum (§6.1.1) of the Mobility Header `mh` from `src` to `dst`: the Internet checksum
/// over the pseudo-header and the header, computed as if the Checksum field were zero. `src` is
/// the home address when a Home Address option is present; `dst` the home address when a type 2
/// routing header is present.
pub fn compute_checksum(src: Ipv6Addr, dst: Ipv6Addr, mh: &[u8]) -> u16 {
    checksum_without_field(pseudo_header_sum(src, dst, mh.len()), mh, 4)
}

/// Writes the Checksum (§6.1.1) into the Mobility Header `mh` (at least 8 octets).
pub fn fill_checksum(src: Ipv6Addr, dst: Ipv6Addr, mh: &mut [u8]) -> Result<(), WireError> {
    if mh.len() < MIN_LEN || mh.len() > MAX_LEN {
        return Err(WireError::BadLength { what: "mobility header length", value: mh.len() });
    }
    let c = compute_checksum(src, dst, mh);
    mh[4..6].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// True if the Checksum of `mh` is right for `src` → `dst` (§6.1.1): the sum over the
/// pseudo-header and the whole header, checksum included, is all ones.
pub fn verify_checksum(src: Ipv6Addr, dst: Ipv6Addr, mh: &[u8]) -> bool {
    mh.len() >= MIN_LEN && ones_complement_sum(mh, pseudo_header_sum(src, dst, mh.len())) == 0xffff
}
