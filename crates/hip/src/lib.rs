//! Sans-IO HIP, version 2 (RFC 7401): host identities and their tags, the base exchange's
//! puzzle and key material, ESP keys for HIP (RFC 7402). Like the `ike` crate, it takes bytes
//! and time and returns bytes, timers and SA requests; the node owns sockets and clocks.
//!
//! Read first: RFC 7401 §3 (HI and HIT), §4.1.2 (puzzle), §6.5 (KEYMAT), RFC 7343 (ORCHIDv2),
//! RFC 7402 §7 (ESP keys from KEYMAT).
#![forbid(unsafe_code)]

pub mod assoc;
pub mod bex;
pub mod cipher;
pub mod close;
pub mod error;
pub mod esp;
pub mod hit;
pub mod identity;
pub mod keymat;
pub mod notify;
pub mod puzzle;
pub mod rekey;
mod signed;
pub mod suite;
pub mod update;

pub use error::Error;
pub use hit::HostIdentityTag;
pub use identity::{HostIdentity, LocalHost};
pub use keymat::Keymat;
pub use puzzle::Puzzle;
pub use suite::HitSuite;
