//! Why a view could not be made over some bytes: the one error every packet view of this
//! crate returns (kept in a module of its own so that the views import it from beside them,
//! not from the crate root).

/// Why a view could not be made over some bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the header needs.
    #[error("{what}: truncated ({len} bytes, need {need})")]
    Truncated {
        /// Which header.
        what: &'static str,
        /// Bytes present.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// A length field disagrees with the bytes present or with the protocol's rules.
    #[error("{what}: bad length field {value}")]
    BadLength {
        /// Which field.
        what: &'static str,
        /// Its value.
        value: usize,
    },
    /// A field holds a value the protocol forbids.
    #[error("{what}: bad value {value}")]
    BadValue {
        /// Which field.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// The IP layer (etherparse) refused the packet.
    #[error("ip: {0}")]
    Ip(&'static str),
}
