//! The IKE header (RFC 7296 §3.1): SPIs, next payload, version, exchange type, flags, message ID,
//! length. [`Packet`] is the checked view over a whole message; [`Header`] its repr.

use super::consts::{ExchangeType, PayloadType};
use super::error::IkeError;
use crate::cursor::{Reader, Writer};

/// Length of the IKE header.
pub const HEADER_LEN: usize = 28;

/// The flags octet (§3.1): I (bit 3), V (bit 4), R (bit 5); the other bits are ignored on receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// Initiator: set by the original initiator of the IKE SA.
    pub initiator: bool,
    /// Version: a higher major version is supported (never set by us).
    pub version: bool,
    /// Response: this message answers a request with the same message ID.
    pub response: bool,
}

impl Flags {
    /// Initiator bit.
    pub const I: u8 = 0x08;
    /// Version bit.
    pub const V: u8 = 0x10;
    /// Response bit.
    pub const R: u8 = 0x20;

    /// Reads the three defined bits.
    pub fn from_byte(b: u8) -> Flags {
        Flags { initiator: b & Self::I != 0, version: b & Self::V != 0, response: b & Self::R != 0 }
    }

    /// The octet with the three defined bits.
    pub fn to_byte(self) -> u8 {
        (if self.initiator { Self::I } else { 0 })
            | (if self.version { Self::V } else { 0 })
            | (if self.response { Self::R } else { 0 })
    }
}

/// A checked view of one IKE message: the header's length field is at least [`HEADER_LEN`], at
/// most the buffer, and the major version is 2. Bytes past the length field are ignored.
#[derive(Debug, Clone, Copy)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
    len: usize,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks the header (§3.1) of the message in `buffer`.
    pub fn new_checked(buffer: T) -> Result<Self, IkeError> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(IkeError::Truncated { what: "header", len: b.len(), need: HEADER_LEN });
        }
        let mut r = Reader::new(b);
        r.take(17, "header")?;
        let version = r.u8("header")?;
        r.take(6, "header")?;
        let len = r.u32("header")? as usize;
        if version >> 4 != 2 {
            return Err(IkeError::MajorVersion { major: version >> 4 });
        }
        if len < HEADER_LEN || len > b.len() {
            return Err(IkeError::BadLength { what: "header length", value: len });
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

    /// IKE SA Initiator's SPI.
    pub fn spi_i(&self) -> u64 {
        u64::from_be_bytes(self.field(0))
    }
    /// IKE SA Responder's SPI (zero in the first IKE_SA_INIT request).
    pub fn spi_r(&self) -> u64 {
        u64::from_be_bytes(self.field(8))
    }
    /// Type of the first payload.
    pub fn next_payload(&self) -> PayloadType {
        PayloadType(self.field::<1>(16)[0])
    }
    /// Minor version (ignored on receipt, 0 on send).
    pub fn minor_version(&self) -> u8 {
        self.field::<1>(17)[0] & 0x0f
    }
    /// Exchange type.
    pub fn exchange_type(&self) -> ExchangeType {
        ExchangeType(self.field::<1>(18)[0])
    }
    /// Flags.
    pub fn flags(&self) -> Flags {
        Flags::from_byte(self.field::<1>(19)[0])
    }
    /// Message ID.
    pub fn message_id(&self) -> u32 {
        u32::from_be_bytes(self.field(20))
    }
    /// The header's length field: the whole message, header included.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never true for a checked packet; here for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The message: the first `len()` bytes of the buffer.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref().get(..self.len).unwrap_or_default()
    }
    /// The payloads after the header.
    pub fn payload_bytes(&self) -> &[u8] {
        self.as_bytes().get(HEADER_LEN..).unwrap_or_default()
    }
}

/// The IKE header's fields (§3.1). `next_payload` and the length are filled in by `Message::emit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// IKE SA Initiator's SPI.
    pub spi_i: u64,
    /// IKE SA Responder's SPI.
    pub spi_r: u64,
    /// Exchange type.
    pub exchange_type: ExchangeType,
    /// Flags.
    pub flags: Flags,
    /// Message ID.
    pub message_id: u32,
}

impl Header {
    /// Reads the fields from a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Header {
        Header {
            spi_i: p.spi_i(),
            spi_r: p.spi_r(),
            exchange_type: p.exchange_type(),
            flags: p.flags(),
            message_id: p.message_id(),
        }
    }

    /// Bytes `emit` writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header (version 2.0) with the given first payload type and message length
    /// into exactly [`HEADER_LEN`] bytes.
    pub fn emit(&self, next: PayloadType, length: u32, out: &mut [u8]) -> Result<(), IkeError> {
        let mut w = Writer::new(out, HEADER_LEN, "header")?;
        w.bytes(&self.spi_i.to_be_bytes())?;
        w.bytes(&self.spi_r.to_be_bytes())?;
        w.u8(next.0)?;
        w.u8(0x20)?;
        w.u8(self.exchange_type.0)?;
        w.u8(self.flags.to_byte())?;
        w.u32(self.message_id)?;
        w.u32(length)?;
        Ok(w.finish()?)
    }
}
