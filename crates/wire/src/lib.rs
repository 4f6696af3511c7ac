//! Typed packet views for hipsec: ESP (RFC 4303 §2) and AH (RFC 4302 §2) headers, the ESP trailer,
//! and the few IP header facts IPsec needs (where ESP/AH sit, which fields AH treats as mutable).
//! IPv4/IPv6 parsing and validation itself comes from `etherparse`, re-exported here. IKEv2
//! messages live in [`ikev2`], HIPv2 packets and parameters (RFC 7401, 7402, 8046) in [`hip`].
//!
//! Every view is checked once by `new_checked`; after that its accessors cannot panic.
#![forbid(unsafe_code)]

#[macro_use]
mod named;

pub mod ah;
mod cursor;
pub mod esp;
pub mod hip;
pub mod ikev2;
pub mod ip;
pub mod mip6;

pub use ah::{AhPacket, AhRepr};
pub use esp::{EspPacket, EspRepr, EspTrailer};
pub use etherparse;
pub use ip::{IpLayout, IpVersion};

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

/// IP protocol numbers used here (IANA).
pub mod proto {
    /// IPv4-in-IP (tunnel mode inner IPv4).
    pub const IPV4: u8 = 4;
    /// IPv6-in-IP (tunnel mode inner IPv6).
    pub const IPV6: u8 = 41;
    /// Encapsulating Security Payload.
    pub const ESP: u8 = 50;
    /// Authentication Header.
    pub const AH: u8 = 51;
    /// UDP.
    pub const UDP: u8 = 17;
    /// TCP.
    pub const TCP: u8 = 6;
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// "No next header" (RFC 8200 §4.7): the ESP dummy-packet marker (RFC 4303 §2.6).
    pub const NO_NEXT: u8 = 59;
}
