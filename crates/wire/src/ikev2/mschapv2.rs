//! EAP-MSCHAPv2's type data (EAP Type 26, draft-kamath-pppext-eap-mschapv2 §2): an OpCode,
//! then for Challenge, Response and the authenticator's Success and Failure requests the
//! MS-CHAPv2-ID, MS-Length and the MS-CHAP-V2 packet's value (RFC 2759 §3–§6). The peer's
//! Success and Failure responses are the OpCode alone. The crypto is in `ike::eap`.
//!
//! Layout (paraphrased from the draft): OpCode (1) | MS-CHAPv2-ID (1) | MS-Length (2, the
//! EAP Length minus 5, i.e. from the OpCode to the end) | data. Challenge data: Value-Size
//! (16) | Challenge (16) | Name. Response data: Value-Size (49) | Peer-Challenge (16) |
//! Reserved (8, zero) | NT-Response (24) | Flags (1, zero) | Name. Success/Failure request
//! data: the Message text ("S=<40 hex digits> M=..." or "E=691 R=0 C=... V=3 M=...").

use super::eap::EapCode;
use super::error::IkeError;
use crate::cursor::{Reader, Writer, len16};

named_number! {
    /// MS-CHAPv2 OpCode (draft-kamath-pppext-eap-mschapv2 §2).
    MsChapV2OpCode(u8) {
        /// The authenticator's challenge.
        CHALLENGE = 1,
        /// The peer's response.
        RESPONSE = 2,
        /// Success (request: the authenticator response; response: the peer's ack).
        SUCCESS = 3,
        /// Failure (request: error text; response: the peer's ack).
        FAILURE = 4,
        /// Change-Password (not supported here).
        CHANGE_PASSWORD = 7,
    }
}

/// Challenge length (RFC 2759 §3: "MS-CHAP-V2 authenticators send an 16-octet challenge Value
/// field.").
pub const MSCHAPV2_CHALLENGE_LEN: usize = 16;
/// Response value length (RFC 2759 §4): 16 + 8 + 24 + 1.
pub const MSCHAPV2_RESPONSE_LEN: usize = 49;

/// One EAP-MSCHAPv2 message (the type data of an EAP Request or Response of type 26).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MsChapV2 {
    /// Request: the authenticator's 16-octet challenge and its name.
    Challenge {
        /// MS-CHAPv2-ID.
        id: u8,
        /// The Authenticator Challenge.
        challenge: [u8; MSCHAPV2_CHALLENGE_LEN],
        /// The authenticator's name.
        name: Vec<u8>,
    },
    /// Response: the peer's challenge, its NT-Response and its user name.
    Response {
        /// MS-CHAPv2-ID (echoes the Challenge's).
        id: u8,
        /// The Peer-Challenge.
        peer_challenge: [u8; MSCHAPV2_CHALLENGE_LEN],
        /// The NT-Response (RFC 2759 §8.1 GenerateNTResponse).
        nt_response: [u8; 24],
        /// Flags (RFC 2759 §4: "reserved for future use and MUST be zero").
        flags: u8,
        /// The user name, possibly prefixed "DOMAIN\".
        name: Vec<u8>,
    },
    /// Request: the authenticator's Success message (`S=<AuthenticatorResponse> M=...`).
    SuccessRequest {
        /// MS-CHAPv2-ID.
        id: u8,
        /// The message text.
        message: Vec<u8>,
    },
    /// Request: the authenticator's Failure message ("E=... R=... C=... V=... M=...").
    FailureRequest {
        /// MS-CHAPv2-ID.
        id: u8,
        /// The message text.
        message: Vec<u8>,
    },
    /// Response: the peer acknowledges Success.
    SuccessResponse,
    /// Response: the peer acknowledges Failure.
    FailureResponse,
}

fn header<'a>(r: &mut Reader<'a>, total: usize) -> Result<(u8, Reader<'a>), IkeError> {
    let id = r.u8("mschapv2 id")?;
    let ms_len = usize::from(r.u16("mschapv2 ms-length")?);
    // MS-Length counts from the OpCode: the bytes read so far (4) plus the rest.
    if ms_len != total {
        return Err(IkeError::BadLength { what: "mschapv2 ms-length", value: ms_len });
    }
    Ok((id, Reader::new(r.rest())))
}

impl MsChapV2 {
    /// Parses the type data of an EAP packet of type 26 with code `code` (which says whether
    /// a Success or Failure is the authenticator's request or the peer's one-octet response).
    pub fn parse(code: EapCode, data: &[u8]) -> Result<MsChapV2, IkeError> {
        let total = data.len();
        let mut r = Reader::new(data);
        let op = MsChapV2OpCode(r.u8("mschapv2 opcode")?);
        let request = code == EapCode::REQUEST;
        Ok(match (op, request) {
            (MsChapV2OpCode::CHALLENGE, true) => {
                let (id, mut v) = header(&mut r, total)?;
                let size = v.u8("mschapv2 value-size")?;
                if usize::from(size) != MSCHAPV2_CHALLENGE_LEN {
                    return Err(IkeError::BadValue {
                        what: "mschapv2 value-size",
                        value: size.into(),
                    });
                }
                let challenge = v.array("mschapv2 challenge")?;
                MsChapV2::Challenge { id, challenge, name: v.rest().to_vec() }
            }
            (MsChapV2OpCode::RESPONSE, false) => {
                let (id, mut v) = header(&mut r, total)?;
                let size = v.u8("mschapv2 value-size")?;
                if usize::from(size) != MSCHAPV2_RESPONSE_LEN {
                    return Err(IkeError::BadValue {
                        what: "mschapv2 value-size",
                        value: size.into(),
                    });
                }
                let peer_challenge = v.array("mschapv2 peer-challenge")?;
                v.take(8, "mschapv2 reserved")?;
                let nt_response = v.array("mschapv2 nt-response")?;
                let flags = v.u8("mschapv2 flags")?;
                MsChapV2::Response {
                    id,
                    peer_challenge,
                    nt_response,
                    flags,
                    name: v.rest().to_vec(),
                }
            }
            (MsChapV2OpCode::SUCCESS, true) => {
                let (id, mut v) = header(&mut r, total)?;
                MsChapV2::SuccessRequest { id, message: v.rest().to_vec() }
            }
            (MsChapV2OpCode::FAILURE, true) => {
                let (id, mut v) = header(&mut r, total)?;
                MsChapV2::FailureRequest { id, message: v.rest().to_vec() }
            }
            // The peer's acknowledgements are the OpCode alone (draft §2.4, §2.5, paraphrased).
            (MsChapV2OpCode::SUCCESS, false) => MsChapV2::SuccessResponse,
            (MsChapV2OpCode::FAILURE, false) => MsChapV2::FailureResponse,
            (op, _) => {
                return Err(IkeError::BadValue { what: "mschapv2 opcode", value: op.0.into() });
            }
        })
    }

    /// The EAP code this message travels in.
    pub fn code(&self) -> EapCode {
        match self {
            MsChapV2::Challenge { .. }
            | MsChapV2::SuccessRequest { .. }
            | MsChapV2::FailureRequest { .. } => EapCode::REQUEST,
            _ => EapCode::RESPONSE,
        }
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        match self {
            MsChapV2::Challenge { name, .. } => 4 + 1 + MSCHAPV2_CHALLENGE_LEN + name.len(),
            MsChapV2::Response { name, .. } => 4 + 1 + MSCHAPV2_RESPONSE_LEN + name.len(),
            MsChapV2::SuccessRequest { message, .. } | MsChapV2::FailureRequest { message, .. } => {
                4 + message.len()
            }
            MsChapV2::SuccessResponse | MsChapV2::FailureResponse => 1,
        }
    }

    /// Writes the type data into exactly `buffer_len()` bytes.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), IkeError> {
        let len = self.buffer_len();
        let mut w = Writer::new(out, len, "mschapv2")?;
        let ms_len = len16(len, "mschapv2 ms-length")?;
        match self {
            MsChapV2::Challenge { id, challenge, name } => {
                w.bytes(&[MsChapV2OpCode::CHALLENGE.0, *id])?;
                w.u16(ms_len)?;
                w.u8(MSCHAPV2_CHALLENGE_LEN as u8)?;
                w.bytes(challenge)?;
                w.bytes(name)?;
            }
            MsChapV2::Response { id, peer_challenge, nt_response, flags, name } => {
                w.bytes(&[MsChapV2OpCode::RESPONSE.0, *id])?;
                w.u16(ms_len)?;
                w.u8(MSCHAPV2_RESPONSE_LEN as u8)?;
                w.bytes(peer_challenge)?;
                w.zeros(8)?;
                w.bytes(nt_response)?;
                w.u8(*flags)?;
                w.bytes(name)?;
            }
            MsChapV2::SuccessRequest { id, message } => {
                w.bytes(&[MsChapV2OpCode::SUCCESS.0, *id])?;
                w.u16(ms_len)?;
                w.bytes(message)?;
            }
            MsChapV2::FailureRequest { id, message } => {
                w.bytes(&[MsChapV2OpCode::FAILURE.0, *id])?;
                w.u16(ms_len)?;
                w.bytes(message)?;
            }
            MsChapV2::SuccessResponse => w.u8(MsChapV2OpCode::SUCCESS.0)?,
            MsChapV2::FailureResponse => w.u8(MsChapV2OpCode::FAILURE.0)?,
        }
        Ok(w.finish()?)
    }

    /// The type data as bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, IkeError> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}
