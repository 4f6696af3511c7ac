//! Sans-IO IKEv2 (RFC 7296): algorithm suites and proposal selection, the key schedule, the
//! encrypted payload, and the exchanges that set up an IKE SA and its first CHILD SA. No sockets,
//! threads or clocks: the driver (in `node`) feeds datagrams in and sends what comes out.
//!
//! Read first: RFC 7296 §1.2 (the initial exchanges), §2.13–2.18 (keys), §3.14 (SK payload).
#![forbid(unsafe_code)]

pub mod error;
pub mod keys;
pub mod sk;
pub mod suite;

pub use error::{ConfigError, Error, PeerMisbehaved};
pub use keys::{ChildKeyMat, IkeSaKeys, Secret};
pub use suite::{ChildSuite, IkeSuite};
