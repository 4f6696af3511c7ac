//! Sans-IO Mobile IPv6 home registration (RFC 6275) with ESP-protected bindings (RFC 3776,
//! RFC 4877): the home agent's binding cache and Binding Update processing, and the mobile
//! node's registration state. Bytes, SA identities and time go in; bytes, binding changes and
//! deadlines come out; the node owns sockets, ESP and clocks.
//!
//! Read first: RFC 6275 §9.5.1 (receiving Binding Updates), §10.3.1–§10.3.2 (home
//! registration), §11.7.1 and §11.7.3 (the mobile node's side); RFC 3776 §4.1 and §5 (which SA
//! may carry a Binding Update). The packet formats are in [`wire::mip6`].
//!
//! ```
//! use ipsec::{Spi, Time};
//! use mip6::*;
//! let home = "2001:db8:1::100".parse().unwrap();
//! let ha_addr = "2001:db8:1::1".parse().unwrap();
//! let mut ha = HomeAgent::new(HomeAgentConfig {
//!     address: ha_addr, home_prefix: "2001:db8:1::".parse().unwrap(), home_prefix_len: 64,
//!     max_lifetime_units: 150, capacity: 1000,
//! });
//! let mut mn = MobileNode::new(
//!     MobileNodeConfig { home_address: home, home_agent: ha_addr, lifetime_units: 100 },
//!     "2001:db8:2::7".parse().unwrap(), 1);
//! let now = Time::from_secs(10);
//! let bu = mn.poll(now).unwrap().unwrap();
//! let sa = Some(SaIdentity { spi: Spi(0x1234), home_address: home });
//! let d = ha.handle(&InboundMh { src: bu.src, dst: bu.dst, home_address_option: Some(home), sa, mh: &bu.mh }, now);
//! let Decision::Accepted { reply: Some(ba), .. } = d else { panic!("{d:?}") };
//! let AckOutcome::Registered(r) = mn.on_binding_ack(ba.src, home, &ba.mh) else { panic!() };
//! assert_eq!(r.expires, now.plus_secs(400));
//! assert_eq!(ha.cache().get(&home, now).unwrap().care_of_address, mn.care_of());
//! ```
#![forbid(unsafe_code)]

pub mod cache;
pub mod home_agent;
pub mod mobile_node;
pub mod outgoing;
pub mod refusal;
pub mod seq;
pub mod workload;

pub use cache::{Binding, BindingCache, Upsert};
pub use home_agent::{BindingChange, Decision, HomeAgent, HomeAgentConfig, InboundMh};
pub use mobile_node::{AckOutcome, MobileNode, MobileNodeConfig, Registration, binding_update};
pub use outgoing::{Extension, Outgoing};
pub use refusal::{Counters, Refusal, SaIdentity};
