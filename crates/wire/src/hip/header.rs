//! The HIP header (RFC 7401 §5.1) and its checksum (§5.1.1). [`Packet`] is the checked view over
//! a whole packet; [`Header`] its repr.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! | Next Header   | Header Length |0| Packet Type |Version| RES.|1|
//! |          Checksum             |           Controls            |
//! |                Sender's Host Identity Tag (HIT)  (16 octets)  |
//! |               Receiver's Host Identity Tag (HIT) (16 octets)  |
//! /                        HIP Parameters                         /
//! ```

use std::net::IpAddr;

use super::consts::{HEADER_LEN, MAX_PACKET_LEN, PacketType, ParamType, VERSION};
use super::param::{ParamRepr, Params, RawParam};
use crate::cursor::{Reader, Writer};
use crate::error::WireError;
use crate::ip::{checksum_without_field, ipv6_pseudo_header_sum, ones_complement_sum};

/// IP protocol number of HIP (RFC 7401 §5.1: 139), used in the checksum's pseudo-header.
pub const IPPROTO_HIP: u8 = 139;

/// The Controls field's only defined bit in HIPv2 is none: RFC 7401 §5.1.2 leaves all 16 bits
/// unassigned ("zero when sent, ignored when received"). HIPv1's anonymous bit is gone.
pub const CONTROLS_NONE: u16 = 0;

/// A checked view of one HIP packet: at least [`HEADER_LEN`] octets, the Header Length field
/// covers at least the fixed header and at most the buffer, the fixed bits are 0 and 1 and the
/// version is 2. Bytes past the Header Length are ignored. Parameters are checked lazily by
/// [`Packet::params`].
#[derive(Debug, Clone, Copy)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
    len: usize,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks the fixed header (§5.1) of the packet in `buffer`.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        let mut r = Reader::new(b);
        let head = r.take(HEADER_LEN, "hip header")?;
        let mut r = Reader::new(head);
        let _next = r.u8("hip header")?;
        let hdr_len = r.u8("hip header")?;
        let type_byte = r.u8("hip header")?;
        let ver_byte = r.u8("hip header")?;
        // §5.1: the length counts 8-octet units beyond the first 8 octets, so a packet is
        // (Header Length + 1) * 8 octets and at least the 40-octet fixed header.
        let len = (usize::from(hdr_len) + 1) * 8;
        if len < HEADER_LEN || len > b.len() {
            return Err(WireError::BadLength { what: "hip header length", value: len });
        }
        // §5.1: the bit before Packet Type is 0 and the last bit of the version octet is 1;
        // both keep HIP distinguishable from SHIM6 (RFC 5533 §5).
        if type_byte & 0x80 != 0 {
            return Err(WireError::BadValue { what: "hip fixed bit 0", value: 1 });
        }
        if ver_byte & 0x01 != 1 {
            return Err(WireError::BadValue { what: "hip fixed bit 1", value: 0 });
        }
        if ver_byte >> 4 != VERSION {
            return Err(WireError::BadValue {
                what: "hip version",
                value: u64::from(ver_byte >> 4),
            });
        }
        Ok(Packet { buffer, len })
    }

    fn field<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(s) = self.buffer.as_ref().get(at..at + N) {
            out.copy_from_slice(s);
        }
        out
    }

    /// Next Header: IPPROTO_NONE (59) unless data rides in the packet (§5.1).
    pub fn next_header(&self) -> u8 {
        self.field::<1>(0)[0]
    }
    /// The Header Length field (8-octet units beyond the first 8 octets).
    pub fn header_length(&self) -> u8 {
        self.field::<1>(1)[0]
    }
    /// Packet Type.
    pub fn packet_type(&self) -> PacketType {
        PacketType(self.field::<1>(2)[0] & 0x7f)
    }
    /// Version (always 2 in a checked packet).
    pub fn version(&self) -> u8 {
        self.field::<1>(3)[0] >> 4
    }
    /// Checksum (§5.1.1).
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes(self.field(4))
    }
    /// Controls (§5.1.2: no bits defined in HIPv2).
    pub fn controls(&self) -> u16 {
        u16::from_be_bytes(self.field(6))
    }
    /// Sender's HIT.
    pub fn sender_hit(&self) -> [u8; 16] {
        self.field(8)
    }
    /// Receiver's HIT (all zeros in opportunistic I1, §5.3.1).
    pub fn receiver_hit(&self) -> [u8; 16] {
        self.field(24)
    }
    /// The packet's length in octets: `(Header Length + 1) * 8`.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never true for a checked packet; here for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The packet: the first `len()` octets of the buffer.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref().get(..self.len).unwrap_or_default()
    }
    /// The parameters after the fixed header.
    pub fn param_bytes(&self) -> &[u8] {
        self.as_bytes().get(HEADER_LEN..).unwrap_or_default()
    }
    /// Iterates over the parameters; errors on truncation, a bad length or a type below its
    /// predecessor (§5.2.1), then stops. Offsets are from the start of the packet.
    pub fn params(&self) -> Params<'_> {
        Params::with_base(self.param_bytes(), HEADER_LEN)
    }
    /// The first parameter of type `ty`, `Ok(None)` if there is none. Parameters before it
    /// must be well formed and in order; those after it are not looked at.
    pub fn find(&self, ty: ParamType) -> Result<Option<RawParam<'_>>, WireError> {
        for p in self.params() {
            let p = p?;
            if p.param_type == ty {
                return Ok(Some(p));
            }
            if p.param_type > ty {
                break;
            }
        }
        Ok(None)
    }
    /// The first parameter of `P`'s type, parsed with `P`'s repr; `Ok(None)` if absent.
    pub fn get<P: ParamRepr>(&self) -> Result<Option<P>, WireError> {
        self.find(P::TYPE)?.map(|raw| P::parse(raw.contents)).transpose()
    }
    /// Verifies the checksum against the IP addresses the packet arrived with (§5.1.1).
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        verify_checksum(src, dst, self.as_bytes())
    }
    /// The bytes a HIP_MAC, HIP_MAC_2, HIP_SIGNATURE or HIP_SIGNATURE_2 of type `ty` covers
    /// in this received packet: every parameter before the first one of type `ty` or higher,
    /// with the Header Length rewritten as if the packet ended there and the Checksum zeroed
    /// (RFC 7401 §5.2.12–§5.2.15, §6.4.1, §6.4.2). For HIP_SIGNATURE_2 in R1 also apply
    /// [`zero_for_signature_2`]; for HIP_MAC_2 (R2) the sender's HOST_ID must be inserted, which
    /// [`super::Message::to_vec_before`] does when you rebuild the packet with it.
    pub fn to_vec_before(&self, ty: ParamType) -> Result<Vec<u8>, WireError> {
        let mut end = self.len;
        for p in self.params() {
            let p = p?;
            if p.param_type >= ty {
                end = p.offset;
                break;
            }
        }
        let mut out = self.as_bytes().get(..end).unwrap_or_default().to_vec();
        set_header_length(&mut out)?;
        zero_checksum(&mut out);
        Ok(out)
    }
}

/// Sets the Header Length of the HIP packet in `packet` from `packet.len()` (a multiple of 8,
/// 40 to 2048 octets).
pub fn set_header_length(packet: &mut [u8]) -> Result<(), WireError> {
    let len = packet.len();
    if !(HEADER_LEN..=MAX_PACKET_LEN).contains(&len) || len % 8 != 0 {
        return Err(WireError::BadLength { what: "hip packet length", value: len });
    }
    if let Some(b) = packet.get_mut(1) {
        *b = u8::try_from(len / 8 - 1).unwrap_or(u8::MAX);
    }
    Ok(())
}

fn zero_checksum(packet: &mut [u8]) {
    if let Some(c) = packet.get_mut(4..6) {
        c.fill(0);
    }
}

/// Zeroes what HIP_SIGNATURE_2 does not cover in an R1 (RFC 7401 §5.2.15): the Receiver's HIT
/// and the PUZZLE's Opaque and Random #I fields, so a Responder can sign R1s ahead of time.
/// Apply it to the output of `to_vec_before(ParamType::HIP_SIGNATURE_2)` on both sides.
pub fn zero_for_signature_2(packet: &mut [u8]) -> Result<(), WireError> {
    if let Some(h) = packet.get_mut(24..HEADER_LEN) {
        h.fill(0);
    }
    let puzzle = {
        let p = Packet::new_checked(&*packet)?;
        p.find(ParamType::PUZZLE)?.map(|raw| (raw.offset, raw.contents.len()))
    };
    if let Some((offset, len)) = puzzle {
        // Contents: #K (1), Lifetime (1), Opaque (2), Random #I: zero from Opaque on.
        if let Some(c) = packet.get_mut(offset + 4 + 2..offset + 4 + len) {
            c.fill(0);
        }
    }
    Ok(())
}

/// The HIP header's fields (§5.1). The Header Length and Checksum are filled in on emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Next Header: [`crate::proto::NO_NEXT`] (59) normally.
    pub next_header: u8,
    /// Packet Type.
    pub packet_type: PacketType,
    /// Controls (§5.1.2: zero when sent).
    pub controls: u16,
    /// Sender's HIT.
    pub sender_hit: [u8; 16],
    /// Receiver's HIT.
    pub receiver_hit: [u8; 16],
}

impl Header {
    /// A header with Next Header 59 and no controls.
    pub fn new(packet_type: PacketType, sender_hit: [u8; 16], receiver_hit: [u8; 16]) -> Header {
        Header {
            next_header: crate::proto::NO_NEXT,
            packet_type,
            controls: CONTROLS_NONE,
            sender_hit,
            receiver_hit,
        }
    }

    /// Reads the fields from a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Header {
        Header {
            next_header: p.next_header(),
            packet_type: p.packet_type(),
            controls: p.controls(),
            sender_hit: p.sender_hit(),
            receiver_hit: p.receiver_hit(),
        }
    }

    /// Octets `emit` writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header for a packet of `packet_len` octets (a multiple of 8, at most
    /// [`MAX_PACKET_LEN`]) with a zero checksum into exactly [`HEADER_LEN`] octets.
    pub fn emit(&self, packet_len: usize, out: &mut [u8]) -> Result<(), WireError> {
        if !(HEADER_LEN..=MAX_PACKET_LEN).contains(&packet_len) || packet_len % 8 != 0 {
            return Err(WireError::BadLength { what: "hip packet length", value: packet_len });
        }
        if self.packet_type.0 > 0x7f {
            return Err(WireError::BadValue {
                what: "hip packet type",
                value: u64::from(self.packet_type.0),
            });
        }
        let mut w = Writer::new(out, HEADER_LEN, "hip header")?;
        w.u8(self.next_header)?;
        w.u8(u8::try_from(packet_len / 8 - 1).unwrap_or(u8::MAX))?;
        w.u8(self.packet_type.0)?;
        w.u8(VERSION << 4 | 1)?;
        w.u16(0)?;
        w.u16(self.controls)?;
        w.bytes(&self.sender_hit)?;
        w.bytes(&self.receiver_hit)?;
        w.finish()
    }
}

/// The running sum of the pseudo-header (§5.1.1: as for TCP/UDP, RFC 8200 §8.1 for IPv6 and
/// RFC 793 for IPv4) with next header 139. Mixed families use the IPv4-mapped IPv6 form.
fn pseudo_header_sum(src: IpAddr, dst: IpAddr, len: usize) -> u16 {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut ph = [0u8; 12];
            ph[..4].copy_from_slice(&s.octets());
            ph[4..8].copy_from_slice(&d.octets());
            ph[9] = IPPROTO_HIP;
            ph[10..12].copy_from_slice(&(len as u16).to_be_bytes());
            ones_complement_sum(&ph, 0)
        }
        _ => {
            let v6 = |a: IpAddr| match a {
                IpAddr::V4(a) => a.to_ipv6_mapped(),
                IpAddr::V6(a) => a,
            };
            ipv6_pseudo_header_sum(v6(src), v6(dst), len, IPPROTO_HIP)
        }
    }
}

/// The checksum (§5.1.1) of the HIP `packet` sent from `src` to `dst`: the Internet checksum
/// over the pseudo-header and the packet, computed as if the Checksum field were zero.
pub fn compute_checksum(src: IpAddr, dst: IpAddr, packet: &[u8]) -> u16 {
    checksum_without_field(pseudo_header_sum(src, dst, packet.len()), packet, 4)
}

/// Writes the checksum (§5.1.1) into `packet` (at least [`HEADER_LEN`] octets).
pub fn fill_checksum(src: IpAddr, dst: IpAddr, packet: &mut [u8]) -> Result<(), WireError> {
    if packet.len() < HEADER_LEN {
        return Err(WireError::Truncated {
            what: "hip header",
            len: packet.len(),
            need: HEADER_LEN,
        });
    }
    let c = compute_checksum(src, dst, packet);
    if let Some(f) = packet.get_mut(4..6) {
        f.copy_from_slice(&c.to_be_bytes());
    }
    Ok(())
}

/// True if `packet`'s Checksum field is right for `src` → `dst` (§5.1.1): the sum over the
/// pseudo-header and the whole packet, checksum included, is all ones.
pub fn verify_checksum(src: IpAddr, dst: IpAddr, packet: &[u8]) -> bool {
    packet.len() >= HEADER_LEN
        && ones_complement_sum(packet, pseudo_header_sum(src, dst, packet.len())) == 0xffff
}
