//! IKEv2 messages (RFC 7296 §3): the fixed header, the generic payload chain and every payload the
//! initial exchanges, CREATE_CHILD_SA and INFORMATIONAL use. Read RFC 7296 §3.1–3.3 first, then
//! §3.10 (notify types) and §3.14 (the encrypted payload, kept opaque here; `ike::sk` opens it).
//!
//! Shape (smoltcp's): [`Packet`] is a view over bytes whose accessors cannot panic after
//! [`Packet::new_checked`]; [`Message`] and the payload types are owned reprs with
//! `parse` / `buffer_len` / `emit`. Numbers on the wire are newtypes with the RFC's names as
//! associated constants, so unknown values pass through losslessly.

mod consts;
mod header;
mod payload;
mod sa;
mod ts;

pub use consts::{
    AuthMethod, ExchangeType, IdType, NotifyType, PayloadType, ProtocolId, TransformType, dh, encr,
    esn, integ, prf,
};
pub use header::{Flags, HEADER_LEN, Header, Packet};
pub use payload::{
    Auth, Cert, Delete, Id, Ke, Message, Notify, Payload, RawPayload, RawPayloads, Sk, emit_chain,
    parse_chain,
};
pub use sa::{ATTR_KEY_LENGTH, Attribute, AttributeValue, Proposal, Sa, Transform};
pub use ts::{TS_IPV4_ADDR_RANGE, TS_IPV6_ADDR_RANGE, TrafficSelector, Ts};

/// Length of a generic payload header (§3.2).
pub const GENERIC_HEADER_LEN: usize = 4;
/// Smallest nonce a peer may send (§3.9: at least 16 bytes).
pub const NONCE_MIN_LEN: usize = 16;
/// Largest nonce a peer may send (§3.9: at most 256 bytes).
pub const NONCE_MAX_LEN: usize = 256;

/// Why bytes are not a valid IKEv2 message or payload. `Display` names the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IkeError {
    /// Fewer bytes than the field needs.
    #[error("ikev2 {what}: truncated ({len} bytes, need {need})")]
    Truncated {
        /// Which field or structure.
        what: &'static str,
        /// Bytes present.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// A length field disagrees with the bytes present or with the RFC's rules.
    #[error("ikev2 {what}: bad length {value}")]
    BadLength {
        /// Which length field.
        what: &'static str,
        /// Its value.
        value: usize,
    },
    /// A field holds a value the RFC forbids here.
    #[error("ikev2 {what}: bad value {value}")]
    BadValue {
        /// Which field.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// The major version is not 2 (§2.5: answer INVALID_MAJOR_VERSION if it is higher).
    #[error("ikev2 header: major version {major} (want 2)")]
    MajorVersion {
        /// The major version received.
        major: u8,
    },
    /// A payload we do not understand has its critical bit set (§2.5: UNSUPPORTED_CRITICAL_PAYLOAD).
    #[error("ikev2 payload type {payload_type}: unknown and marked critical")]
    UnsupportedCriticalPayload {
        /// Its payload type number.
        payload_type: u8,
    },
    /// The encrypted payload (SK) is not the last one in the chain (§3.14).
    #[error("ikev2 encrypted payload: not the last payload")]
    SkNotLast,
    /// The output buffer is not exactly `buffer_len()` long.
    #[error("ikev2 emit {what}: buffer is {len} bytes, need {need}")]
    EmitBuffer {
        /// Which structure.
        what: &'static str,
        /// Buffer length given.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
}

#[cfg(test)]
mod scapy_tests;
#[cfg(test)]
mod tests;

/// The shared cursor's errors as IKEv2's (same fields, `ikev2` in the message).
impl From<crate::error::WireError> for IkeError {
    fn from(e: crate::error::WireError) -> IkeError {
        match e {
            crate::error::WireError::Truncated { what, len, need } => {
                IkeError::Truncated { what, len, need }
            }
            crate::error::WireError::BadLength { what, value } => {
                IkeError::BadLength { what, value }
            }
            crate::error::WireError::BadValue { what, value } => IkeError::BadValue { what, value },
            crate::error::WireError::Ip(what) => IkeError::BadValue { what, value: 0 },
        }
    }
}
