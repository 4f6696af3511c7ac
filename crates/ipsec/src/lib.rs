//! The IPsec engine: Security Associations, the SAD and SPD, ESP (RFC 4303) and AH (RFC 4302)
//! in tunnel and transport mode over IPv4 and IPv6, anti-replay with ESN (RFC 6479 bitmap,
//! RFC 4303 Appendix A), lifetimes, and a named, counted reason for every dropped packet.
//!
//! Sans-IO: packets come in as bytes in a [`PacketBuf`] with headroom and go out the same way,
//! transformed in place; time is an argument ([`Time`]); nothing here reads a clock or a socket.
//! Read first: RFC 4301 §4.4 (databases), RFC 4303 §3, RFC 4302 §3.
#![forbid(unsafe_code)]

mod admitted;
pub mod ah;
pub mod buf;
pub mod drop;
pub mod engine;
pub mod esp;
pub mod keyed_index;
pub mod lifetime;
pub mod replay;
pub mod sa;
mod sad;
pub mod spd;
mod spd_hosts;
pub mod spd_table;
pub mod types;

pub use buf::PacketBuf;
pub use drop::{DropCounters, DropReason};
pub use engine::SaHandle;
pub use engine::{Engine, EngineError, Processed};
pub use lifetime::{Lifetime, SaEvent};
pub use replay::ReplayWindow;
pub use sa::{Mode, Protocol, SaError, SaParams, SecurityAssociation, Transform};
pub use spd::{Action, Selector, SpdEntry};
pub use spd_table::{PolicyId, SpdTable};
pub use types::{SeqNum, Spi, Time};
