//! Why bytes are not a valid IKEv2 message or payload, and the shared cursor's errors as
//! IKEv2's (kept apart from `mod.rs` so that the payload modules import it from beside them).

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
