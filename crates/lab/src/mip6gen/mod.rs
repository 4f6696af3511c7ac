//! The Mobile IPv6 load generator of scenario `mip6-binding` (seed 000): many simulated mobile
//! nodes sending ESP-protected Binding Updates (RFC 3776 §3, RFC 6275 §6.1.7) to a hipsec home
//! agent and timing its Binding Acknowledgements. It runs as `hipsec-traffic mip6` in the
//! mobile nodes' namespace.
//!
//! - [`nodes`]: each node's home address, care-of address and SA pair (and the home agent's
//!   config that lists them);
//! - [`packet`]: the BU built and sealed, the BA opened (ESP through the `ipsec` engine);
//! - [`socket`]: raw IPv6 out with sendmmsg(2), AF_PACKET in with recvmmsg(2);
//! - [`run`]: the phases (register, rate ramp, ESP only) and their figures.
//!
//! Arrows run one way: `traffic::cli` and the scenario → here → `ipsec`, `wire`, `mip6`, the
//! node's system-call wrappers.

pub mod nodes;
pub mod packet;
pub mod run;
pub mod socket;

pub use nodes::Suite;
pub use run::{GenParams, GenResult, Phase};
