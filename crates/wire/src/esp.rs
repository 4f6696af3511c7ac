//! ESP header and trailer (RFC 4303 §2): SPI, sequence number, payload, and the
//! padding / pad length / next header trailer found at the end of the decrypted payload.

use crate::error::WireError;

/// Length of the ESP header (SPI + sequence number).
pub const HEADER_LEN: usize = 8;
/// Length of the fixed part of the trailer (pad length + next header).
pub const TRAILER_LEN: usize = 2;

/// A view of an ESP packet: `SPI | Sequence Number | payload...` (RFC 4303 §2, Figure 1).
#[derive(Debug, Clone, Copy)]
pub struct EspPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EspPacket<T> {
    /// Checks that `buffer` holds at least the ESP header.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let len = buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated { what: "esp header", len, need: HEADER_LEN });
        }
        Ok(EspPacket { buffer })
    }

    /// Security Parameters Index (§2.1).
    pub fn spi(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The low 32 bits of the sequence number (§2.2).
    pub fn seq(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([b[4], b[5], b[6], b[7]])
    }

    /// Everything after the header: IV, ciphertext, ICV.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }

    /// The whole packet.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The ESP header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EspRepr {
    /// SPI.
    pub spi: u32,
    /// Low 32 bits of the sequence number.
    pub seq: u32,
}

impl EspRepr {
    /// Reads the header fields from a checked view.
    pub fn parse<T: AsRef<[u8]>>(packet: &EspPacket<T>) -> EspRepr {
        EspRepr { spi: packet.spi(), seq: packet.seq() }
    }

    /// Bytes `emit` writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first 8 bytes of `out`.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
        let len = out.len();
        let out = out.get_mut(..HEADER_LEN).ok_or(WireError::Truncated {
            what: "esp header",
            len,
            need: HEADER_LEN,
        })?;
        out[..4].copy_from_slice(&self.spi.to_be_bytes());
        out[4..].copy_from_slice(&self.seq.to_be_bytes());
        Ok(())
    }
}

/// The ESP trailer at the end of the decrypted payload (§2.4–2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EspTrailer {
    /// Number of padding bytes before the trailer.
    pub pad_len: u8,
    /// Protocol of the payload (4 or 41 in tunnel mode, the transport protocol otherwise).
    pub next_header: u8,
}

impl EspTrailer {
    /// Reads the trailer from the end of `plaintext` and checks the default padding
    /// `1, 2, 3, ...` (§2.4: "the receiver SHOULD inspect the Padding field").
    /// Returns the trailer and the length of the payload data before the padding.
    pub fn parse(plaintext: &[u8]) -> Result<(EspTrailer, usize), WireError> {
        let len = plaintext.len();
        if len < TRAILER_LEN {
            return Err(WireError::Truncated { what: "esp trailer", len, need: TRAILER_LEN });
        }
        let pad_len = plaintext[len - 2];
        let next_header = plaintext[len - 1];
        let data_len = (len - TRAILER_LEN)
            .checked_sub(pad_len as usize)
            .ok_or(WireError::BadLength { what: "esp pad length", value: pad_len as usize })?;
        let pad = &plaintext[data_len..len - TRAILER_LEN];
        for (i, &b) in pad.iter().enumerate() {
            if b as usize != i + 1 {
                return Err(WireError::BadValue { what: "esp padding", value: b as u64 });
            }
        }
        Ok((EspTrailer { pad_len, next_header }, data_len))
    }

    /// Number of padding bytes so that `data_len + pad + 2` is a multiple of `align` (§2.4).
    pub fn pad_for(data_len: usize, align: usize) -> u8 {
        let align = align.max(4);
        let rem = (data_len + TRAILER_LEN) % align;
        (if rem == 0 { 0 } else { align - rem }) as u8
    }

    /// Writes padding `1, 2, ...`, pad length and next header into `out`, which must be exactly
    /// `pad_len + 2` bytes long.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
        let need = self.pad_len as usize + TRAILER_LEN;
        if out.len() != need {
            return Err(WireError::BadLength { what: "esp trailer buffer", value: out.len() });
        }
        for (i, b) in out[..self.pad_len as usize].iter_mut().enumerate() {
            *b = (i + 1) as u8;
        }
        out[need - 2] = self.pad_len;
        out[need - 1] = self.next_header;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 3602 §4 Case #5 starts with SPI 0x00004321, seq 1.
    const HEADER: [u8; 8] = [0x00, 0x00, 0x43, 0x21, 0x00, 0x00, 0x00, 0x01];

    #[test]
    fn parse_header() {
        let p = EspPacket::new_checked(&HEADER[..]).unwrap();
        assert_eq!(EspRepr::parse(&p), EspRepr { spi: 0x4321, seq: 1 });
        assert!(p.payload().is_empty());
    }

    #[test]
    fn emit_header() {
        let mut out = [0u8; 8];
        EspRepr { spi: 0x4321, seq: 1 }.emit(&mut out).unwrap();
        assert_eq!(out, HEADER);
        assert!(EspRepr { spi: 1, seq: 1 }.emit(&mut [0u8; 7]).is_err());
    }

    #[test]
    fn truncated_header() {
        assert_eq!(
            EspPacket::new_checked(&HEADER[..7]).unwrap_err(),
            WireError::Truncated { what: "esp header", len: 7, need: 8 }
        );
    }

    #[test]
    fn trailer_round_trip() {
        // 5 data bytes, 16-byte alignment: 5 + 9 + 2 = 16.
        let pad = EspTrailer::pad_for(5, 16);
        assert_eq!(pad, 9);
        let mut buf = vec![0xaa; 5 + 9 + 2];
        EspTrailer { pad_len: pad, next_header: 4 }.emit(&mut buf[5..]).unwrap();
        assert_eq!(&buf[5..], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 4]);
        let (t, data) = EspTrailer::parse(&buf).unwrap();
        assert_eq!((t.pad_len, t.next_header, data), (9, 4, 5));
    }

    #[test]
    fn trailer_rejects_bad_padding() {
        assert!(matches!(
            EspTrailer::parse(&[0xaa, 1, 3, 2, 4]),
            Err(WireError::BadValue { what: "esp padding", value: 3 })
        ));
        assert!(matches!(
            EspTrailer::parse(&[1, 2, 9, 4]),
            Err(WireError::BadLength { what: "esp pad length", value: 9 })
        ));
        assert!(EspTrailer::parse(&[4]).is_err());
    }

    #[test]
    fn pad_minimum_alignment_is_four() {
        assert_eq!(EspTrailer::pad_for(2, 1), 0);
        assert_eq!(EspTrailer::pad_for(3, 1), 3);
    }
}
