//! The EAP payload (RFC 7296 §3.16) and the EAP packet it carries (RFC 3748 §4): Code,
//! Identifier, Length, and for a Request or Response the Type (§5) and its data. Read RFC 3748
//! §4 and §5.1 (Identity) first; the EAP-MSCHAPv2 type data is in `mschapv2`.
//!
//! §3.16 (paraphrased): the payload's body is exactly one EAP message; its Length field counts
//! the whole EAP message, header included.

use super::error::IkeError;
use crate::cursor::{Reader, Writer, len16};

named_number! {
    /// EAP Code (RFC 3748 §4).
    EapCode(u8) {
        /// Sent by the authenticator (the IKE responder).
        REQUEST = 1,
        /// Sent by the peer, answering a Request of the same Identifier.
        RESPONSE = 2,
        /// The authentication succeeded (no Type, no data).
        SUCCESS = 3,
        /// The authentication failed (no Type, no data).
        FAILURE = 4,
    }
}

named_number! {
    /// EAP Type of a Request or Response (RFC 3748 §5, IANA "Method Types").
    EapType(u8) {
        /// Identity (RFC 3748 §5.1).
        IDENTITY = 1,
        /// Notification (RFC 3748 §5.2).
        NOTIFICATION = 2,
        /// Legacy Nak (RFC 3748 §5.3.1): a Response naming the methods the peer wants.
        NAK = 3,
        /// MD5-Challenge (RFC 3748 §5.4).
        MD5_CHALLENGE = 4,
        /// EAP-MSCHAPv2 (draft-kamath-pppext-eap-mschapv2).
        MSCHAPV2 = 26,
        /// Expanded Types (RFC 3748 §5.7).
        EXPANDED = 254,
    }
}

/// The EAP header's length (Code, Identifier, Length), RFC 3748 §4.
pub const EAP_HEADER_LEN: usize = 4;

/// One EAP packet (RFC 3748 §4), the body of an EAP payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eap {
    /// Request, Response, Success or Failure.
    pub code: EapCode,
    /// Matches a Response to its Request (RFC 3748 §4: "The Identifier field is one octet and
    /// aids in matching Responses with Requests.").
    pub identifier: u8,
    /// Type and type data of a Request or Response; `None` for Success and Failure.
    pub typed: Option<(EapType, Vec<u8>)>,
}

impl Eap {
    /// A Request of type `t`.
    pub fn request(identifier: u8, t: EapType, data: Vec<u8>) -> Eap {
        Eap { code: EapCode::REQUEST, identifier, typed: Some((t, data)) }
    }

    /// A Response of type `t`.
    pub fn response(identifier: u8, t: EapType, data: Vec<u8>) -> Eap {
        Eap { code: EapCode::RESPONSE, identifier, typed: Some((t, data)) }
    }

    /// A Success or Failure (code without type).
    pub fn result(identifier: u8, success: bool) -> Eap {
        let code = if success { EapCode::SUCCESS } else { EapCode::FAILURE };
        Eap { code, identifier, typed: None }
    }

    /// The Type, for a Request or Response.
    pub fn eap_type(&self) -> Option<EapType> {
        self.typed.as_ref().map(|(t, _)| *t)
    }

    /// The type data, for a Request or Response (empty otherwise).
    pub fn type_data(&self) -> &[u8] {
        self.typed.as_ref().map_or(&[], |(_, d)| d.as_slice())
    }

    /// Parses an EAP packet. RFC 3748 §4: "Octets outside the range of the Length field
    /// should be treated as Data Link Layer padding and MUST be ignored upon reception. A
    /// message with the Length field set to a value larger than the number of received octets
    /// MUST be silently discarded." Such a message is an error here, for the caller to drop.
    /// Success and Failure are exactly four octets (§4.2); a Request or Response has at least
    /// its Type.
    pub fn parse(bytes: &[u8]) -> Result<Eap, IkeError> {
        let mut r = Reader::new(bytes);
        let code = EapCode(r.u8("eap code")?);
        let identifier = r.u8("eap identifier")?;
        let len = usize::from(r.u16("eap length")?);
        let body_len = len
            .checked_sub(EAP_HEADER_LEN)
            .ok_or(IkeError::BadLength { what: "eap length", value: len })?;
        let mut body = Reader::new(r.take(body_len, "eap data")?);
        let typed = match code {
            EapCode::REQUEST | EapCode::RESPONSE => {
                let t = EapType(body.u8("eap type")?);
                Some((t, body.rest().to_vec()))
            }
            EapCode::SUCCESS | EapCode::FAILURE => {
                body.end("eap length")?;
                None
            }
            other => return Err(IkeError::BadValue { what: "eap code", value: other.0.into() }),
        };
        Ok(Eap { code, identifier, typed })
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        EAP_HEADER_LEN + self.typed.as_ref().map_or(0, |(_, d)| 1 + d.len())
    }

    /// Writes the packet into exactly `buffer_len()` bytes.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), IkeError> {
        let len = self.buffer_len();
        let mut w = Writer::new(out, len, "eap")?;
        let typed = matches!(self.code, EapCode::REQUEST | EapCode::RESPONSE);
        if typed != self.typed.is_some() {
            return Err(IkeError::BadValue { what: "eap code", value: self.code.0.into() });
        }
        w.u8(self.code.0)?;
        w.u8(self.identifier)?;
        w.u16(len16(len, "eap length")?)?;
        if let Some((t, d)) = &self.typed {
            w.u8(t.0)?;
            w.bytes(d)?;
        }
        Ok(w.finish()?)
    }

    /// The packet as bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, IkeError> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}
