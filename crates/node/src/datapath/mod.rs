//! The data path: lanes of worker threads that move packets between the TUN device and the
//! carrier sockets through the `ipsec` engine (RFC 4301 §5). Nothing here decides keys or
//! policy: the control plane sends updates that each lane applies between batches
//! ([`mailbox`]), and the lanes send events back (acquires, lifetimes, acknowledgements).
//!
//! Outbound: [`tun`] → [`outbound`] (filter, SPD, seal) → [`udp`] or [`carrier`].
//! Inbound: [`udp`] or [`carrier`] → [`inbound`] (open, inbound SPD, filter) → [`gro`] → [`tun`].

pub mod board;
pub mod carrier;
pub mod cipher;
pub mod clear;
pub mod counters;
pub mod encap;
pub mod filter_stage;
pub mod gro;
pub mod held;
pub mod icmp;
pub mod inbound;
pub mod lanes;
pub mod mailbox;
pub mod outbound;
pub mod snapshot;
pub mod tables;
pub mod tun;
pub mod tuning;
pub mod udp;
pub mod worker;
