//! Authentication Header (RFC 4302 §2): next header, payload length in 32-bit words minus 2,
//! SPI, sequence number and a variable-length ICV.

use crate::error::WireError;

/// Length of the fixed part of the AH header (before the ICV).
pub const FIXED_LEN: usize = 12;

/// A view of an AH header followed by the rest of the packet.
#[derive(Debug, Clone, Copy)]
pub struct AhPacket<T: AsRef<[u8]>> {
    buffer: T,
    header_len: usize,
}

impl<T: AsRef<[u8]>> AhPacket<T> {
    /// Checks the fixed header and that the Payload Len field (§2.2) fits the buffer.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        let len = b.len();
        if len < FIXED_LEN {
            return Err(WireError::Truncated { what: "ah header", len, need: FIXED_LEN });
        }
        let header_len = (b[1] as usize + 2) * 4;
        if header_len < FIXED_LEN {
            return Err(WireError::BadLength { what: "ah payload length", value: b[1] as usize });
        }
        if header_len > len {
            return Err(WireError::Truncated { what: "ah icv", len, need: header_len });
        }
        Ok(AhPacket { buffer, header_len })
    }

    /// Next Header (§2.1).
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[0]
    }
    /// Length of the whole AH header including the ICV, in bytes.
    pub fn header_len(&self) -> usize {
        self.header_len
    }
    /// SPI (§2.4).
    pub fn spi(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([b[4], b[5], b[6], b[7]])
    }
    /// Low 32 bits of the sequence number (§2.5).
    pub fn seq(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([b[8], b[9], b[10], b[11]])
    }
    /// The ICV field, including any alignment padding (§2.6).
    pub fn icv(&self) -> &[u8] {
        &self.buffer.as_ref()[FIXED_LEN..self.header_len]
    }
    /// What the AH protects after itself.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len..]
    }
}

/// The AH header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AhRepr {
    /// Next Header.
    pub next_header: u8,
    /// SPI.
    pub spi: u32,
    /// Low 32 bits of the sequence number.
    pub seq: u32,
    /// ICV length including alignment padding; a multiple of 4 (IPv4) or 8 (IPv6) with the header.
    pub icv_len: usize,
}

impl AhRepr {
    /// Reads the header fields from a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &AhPacket<T>) -> AhRepr {
        AhRepr {
            next_header: p.next_header(),
            spi: p.spi(),
            seq: p.seq(),
            icv_len: p.header_len() - FIXED_LEN,
        }
    }

    /// ICV field length for an algorithm's ICV, padded so that the whole header is a multiple of
    /// 32 bits (IPv4) or 64 bits (IPv6) (§2.6, §3.3.3.2.1).
    pub fn padded_icv_len(icv_len: usize, ipv6: bool) -> usize {
        let align = if ipv6 { 8 } else { 4 };
        (FIXED_LEN + icv_len).div_ceil(align) * align - FIXED_LEN
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        FIXED_LEN + self.icv_len
    }

    /// Writes the header with a zeroed ICV field (as the ICV computation wants it, §3.3.3.1).
    pub fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
        let need = self.buffer_len();
        let len = out.len();
        if self.icv_len % 4 != 0 || need / 4 - 2 > u8::MAX as usize {
            return Err(WireError::BadLength { what: "ah icv length", value: self.icv_len });
        }
        let out =
            out.get_mut(..need).ok_or(WireError::Truncated { what: "ah header", len, need })?;
        out[0] = self.next_header;
        out[1] = (need / 4 - 2) as u8;
        out[2] = 0;
        out[3] = 0;
        out[4..8].copy_from_slice(&self.spi.to_be_bytes());
        out[8..12].copy_from_slice(&self.seq.to_be_bytes());
        out[12..].fill(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // An AH header with HMAC-SHA1-96: next header TCP, payload len 4 (24 bytes), SPI 0x1000, seq 7.
    const AH_SHA1: [u8; 24] = [
        0x06, 0x04, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x07, 1, 2, 3, 4, 5, 6,
        7, 8, 9, 10, 11, 12,
    ];

    #[test]
    fn parse_header() {
        let p = AhPacket::new_checked(&AH_SHA1[..]).unwrap();
        let r = AhRepr::parse(&p);
        assert_eq!(r, AhRepr { next_header: 6, spi: 0x1000, seq: 7, icv_len: 12 });
        assert_eq!(p.icv(), &AH_SHA1[12..]);
        assert!(p.payload().is_empty());
    }

    #[test]
    fn emit_zeroes_icv() {
        let r = AhRepr { next_header: 6, spi: 0x1000, seq: 7, icv_len: 12 };
        let mut out = [0xffu8; 24];
        r.emit(&mut out).unwrap();
        assert_eq!(&out[..12], &AH_SHA1[..12]);
        assert_eq!(&out[12..], &[0u8; 12]);
    }

    #[test]
    fn rejects_bad_lengths() {
        let mut short = AH_SHA1;
        short[1] = 0; // 8 bytes: less than the fixed part
        assert!(matches!(AhPacket::new_checked(&short[..]), Err(WireError::BadLength { .. })));
        let mut long = AH_SHA1;
        long[1] = 10; // 48 bytes claimed, 24 present
        assert!(matches!(AhPacket::new_checked(&long[..]), Err(WireError::Truncated { .. })));
        assert!(AhPacket::new_checked(&AH_SHA1[..11]).is_err());
    }

    #[test]
    fn icv_padding() {
        // HMAC-SHA1-96 over IPv6: 12 + 12 = 24, already 64-bit aligned.
        assert_eq!(AhRepr::padded_icv_len(12, true), 12);
        // HMAC-SHA-256-128 over IPv6: 12 + 16 = 28 -> 32.
        assert_eq!(AhRepr::padded_icv_len(16, true), 20);
        assert_eq!(AhRepr::padded_icv_len(16, false), 16);
    }
}
