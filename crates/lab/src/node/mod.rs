//! hipsec nodes in the lab's namespaces, shared by every scenario that protects its traffic: the
//! modes and the traits a scenario sets one up through ([`mode`]), the node config a mode needs
//! ([`config`]), the `[filter]` table ([`filter`]), [`NodeHook`], which starts and stops the
//! `hipsec run` processes ([`hook`]), and IKEv2 security gateways ([`ike`]).
//!
//! Arrows run one way: scenarios → `node` → topology, traffic, sys.

pub mod config;
pub mod filter;
pub mod hook;
pub mod ike;
pub mod mode;
pub mod spawn;

pub use config::{EspCarrier, INNER_V4, INNER_V6};
pub use filter::{FilterEngine, NodeFilter, filter_unsupported};
pub use hook::{NodeGuard, NodeHook};
pub use ike::{IkeGateway, IkeNodes};
pub use mode::{EspSuite, Mode, ModeGuard, ModeHook, NoProtection, PlainOnly};
