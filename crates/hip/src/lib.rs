//! Sans-IO HIP, version 2 (RFC 7401): host identities and their tags, the base exchange's
//! puzzle and key material, ESP keys for HIP (RFC 7402). Like the `ike` crate, it takes bytes
//! and time and returns bytes, timers and SA requests; the node owns sockets and clocks.
//!
//! Read first: RFC 7401 §3 (HI and HIT), §4.1.2 (puzzle), §6.5 (KEYMAT), RFC 7343 (ORCHIDv2),
//! RFC 7402 §7 (ESP keys from KEYMAT).
//!
//! The whole life of an association is in [`assoc`]: an [`assoc::Endpoint`] owns every
//! association of a host, keyed by the peer's HIT, in the shape of the `ike` crate's
//! (`handle`, `handle_timeout`, `poll_timeout`, `poll_transmit`, `poll_event`, and the commands
//! `initiate`, `rekey`, `update_locator`, `close`), with the states of RFC 7401 §4.4,
//! retransmission, UPDATE rekeying make-before-break, mobility and CLOSE; its clock is
//! [`wire::Time`], shared with IKEv2. `tests/sim/` is the simulated network that tests it over
//! 10,000 seeds. The exchange modules below it ([`bex`], [`update`], [`rekey`], [`close`])
//! build and check single packets.
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
