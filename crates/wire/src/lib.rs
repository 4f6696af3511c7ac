//! Typed packet views for hipsec: ESP (RFC 4303 §2) and AH (RFC 4302 §2) headers, the ESP trailer,
//! and the few IP header facts IPsec needs (where ESP/AH sit, which fields AH treats as mutable).
//! IPv4/IPv6 parsing and validation itself comes from `etherparse`, re-exported here. IKEv2
//! messages live in [`ikev2`], HIPv2 packets and parameters (RFC 7401, 7402, 8046) in [`hip`].
//! [`Time`] is the one clock type of every protocol crate (IKEv2, HIP, Mobile IPv6).
//!
//! Every view is checked once by `new_checked`; after that its accessors cannot panic.
#![forbid(unsafe_code)]

#[macro_use]
mod named;

pub mod ah;
mod cursor;
mod error;
pub mod esp;
pub mod hip;
pub mod ikev2;
pub mod ip;
pub mod mip6;
pub mod proto;
pub mod time;

pub use ah::{AhPacket, AhRepr};
pub use error::WireError;
pub use esp::{EspPacket, EspRepr, EspTrailer};
pub use etherparse;
pub use ip::{IpLayout, IpVersion};
pub use time::Time;
