//! An IKE SA's whole life, sans-IO (RFC 7296 §1–2): the initial exchanges in both roles, the
//! [`Session`](crate::Session) once up, retransmission with back-off (§2.1), the CHILD and IKE
//! rekey schedule, DPD (§2.4), retries of failed rekeys and of a failed setup with exponential
//! back-off, INITIAL_CONTACT (§2.4), and what a failure tears down.
//!
//! The shape is quinn-proto's: the driver calls [`Endpoint::handle`] with each datagram,
//! [`Endpoint::handle_timeout`] when [`Endpoint::poll_timeout`] says, and drains
//! [`Endpoint::poll_transmit`] and [`Endpoint::poll_event`]. Commands ([`Endpoint::initiate`],
//! [`Endpoint::rekey_child`], [`Endpoint::rekey_ike`], [`Endpoint::terminate`]) name a
//! connection. Unlike quinn-proto, the [`Endpoint`] owns its associations instead of handing
//! each one to the driver: INITIAL_CONTACT deletes *other* IKE SAs with the same peer identity,
//! a setup's retry chain belongs to the connection and outlives each attempt, and IKE_SA_INIT
//! must find its connection's responder. Those need a view over every association, and keeping
//! it inside one type leaves the driver no bookkeeping to get wrong.
//!
//! The data path hears about CHILD SAs through [`Event`]s, make-before-break (DESIGN rule 4,
//! §2.8): [`Event::InstallChild`] first (both SAs; the inbound one admits traffic at once),
//! then [`Event::SwitchOutbound`] when traffic moves to the new pair — at once for the first
//! pair and for a rekey we started (the peer installed before answering), on the old pair's
//! removal for the peer's rekey — and [`Event::RemoveChild`] last (the driver keeps the old
//! inbound SA for a grace period). The events name SPIs and keys only, so a HIP association's
//! ESP pairs fit the same shape.

mod association;
mod commands;
mod endpoint;
mod schedule;
mod sink;
mod up;
mod views;

pub use endpoint::{Endpoint, Stats};
pub use schedule::{Backoff, Lifetimes};
pub use views::{AssocView, ChildView};

use crate::config::{ChildSaKeys, Config};
use crate::error::Error;
use std::net::SocketAddr;
use std::time::Duration;

/// An association's handle, unique for the endpoint's life.
pub type AssocId = u64;

/// A CHILD SA's policy beyond its selectors and proposals (which are in [`Config`]).
#[derive(Debug, Clone)]
pub struct ChildConfig {
    /// Its name, as `rekey_child` and `terminate` take it.
    pub name: String,
    /// Rekey and hard lifetimes of each of its pairs.
    pub lifetimes: Lifetimes,
}

/// One connection: its IKE configuration, peer, child and timers.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    /// The connection's name.
    pub name: String,
    /// Identities, credentials, proposals and the child's selectors.
    pub ike: Config,
    /// The first child (made in IKE_AUTH; its selectors and proposals are `ike`'s).
    pub child: ChildConfig,
    /// Further children, index-aligned with `ike.more_children`: each made by CREATE_CHILD_SA
    /// once the IKE SA is up (§1.3.1), in this order, and rekeyed on its own timers.
    pub more_children: Vec<ChildConfig>,
    /// Our address for this connection.
    pub local: SocketAddr,
    /// The peer's address (IKE_SA_INIT from this IP is answered with this connection).
    pub remote: SocketAddr,
    /// Answer IKE_SA_INIT from any address (swanctl's `remote_addrs = %any`); such a
    /// connection never initiates. Among several open to one peer, the IKE_AUTH request's
    /// IDi picks the one whose `remote_id` it is.
    pub any_peer: bool,
    /// NAT traversal (RFC 7296 §2.23): the port IKE moves to from IKE_AUTH on when a NAT is
    /// detected or `encap` is set; `None` never moves.
    pub natt_port: Option<u16>,
    /// Act as if behind a NAT (swanctl's `encap`): move to `natt_port` whatever NAT detection
    /// found, so ESP goes in UDP.
    pub encap: bool,
    /// Initiate when the endpoint is made, and again whenever the IKE SA is lost (not when
    /// deleted by the peer or replaced after INITIAL_CONTACT).
    pub start: bool,
    /// IKE SA rekeying (`rekey_time`, `rand_time`; the hard lifetime is not used).
    pub ike_lifetimes: Lifetimes,
    /// Send a liveness check after this long without hearing from the peer (zero: never).
    pub dpd_delay: Duration,
    /// Waits between failed setups of this connection.
    pub setup_retry: Backoff,
    /// Waits between failed rekeys of a CHILD SA or the IKE SA.
    pub rekey_retry: Backoff,
    /// Pools (by name, [`Endpoint::set_pools`]) that lease road warriors their virtual IP
    /// when this connection answers (swanctl's `pools`); empty: no CP(CFG_REPLY).
    pub pools: Vec<String>,
    /// Virtual IPs to ask the responder for when this connection initiates (swanctl's
    /// `vips`; `0.0.0.0` or `::` for any).
    pub vips: Vec<std::net::IpAddr>,
}

impl ConnectionConfig {
    /// Child `i`'s name (0: the first).
    pub fn child_name(&self, i: usize) -> String {
        self.child_config(i).name.clone()
    }

    /// Child `i`'s lifetimes.
    pub fn lifetimes(&self, i: usize) -> &Lifetimes {
        &self.child_config(i).lifetimes
    }

    /// Child `i` (the first for an index out of range).
    pub fn child_config(&self, i: usize) -> &ChildConfig {
        i.checked_sub(1).and_then(|k| self.more_children.get(k)).unwrap_or(&self.child)
    }

    /// The index of the child named `name`.
    pub fn child_index(&self, name: &str) -> Option<usize> {
        std::iter::once(&self.child).chain(&self.more_children).position(|c| c.name == name)
    }
}

/// A datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Our address to send from.
    pub from: SocketAddr,
    /// Where to.
    pub to: SocketAddr,
    /// The IKE message.
    pub payload: Vec<u8>,
}

/// Why an association ended.
#[derive(Debug)]
pub enum DownReason {
    /// The initial exchanges failed (refused, bad answer, or no answer after retransmissions).
    SetupFailed(Error),
    /// A half-open responder SA saw no IKE_AUTH in time.
    HalfOpenExpired,
    /// The peer stopped answering (§2.4).
    PeerDead,
    /// The peer deleted the IKE SA.
    DeletedByPeer,
    /// We terminated it.
    Terminated,
    /// The peer came back with INITIAL_CONTACT (§2.4): this older IKE SA was dropped locally.
    Replaced,
}

/// What the driver acts on besides sending datagrams.
#[derive(Debug)]
pub enum Event {
    /// Keys of an IKE SA just derived (setup, or a rekey), as tshark's
    /// `ikev2_decryption_table` line; only when [`Endpoint::export_keys`] was asked for, so
    /// a setup that fails later can be decrypted too.
    DecryptionKeys {
        /// The association.
        assoc: AssocId,
        /// `SPIi,SPIr,SK_ei,SK_er,"encryption",SK_ai,SK_ar,"integrity"`.
        line: String,
    },
    /// A setup of this connection starts (its IKE_SA_INIT is queued).
    Initiating {
        /// The connection.
        conn: String,
        /// Setups of it that failed in a row before this one (0: a first try).
        failures: u32,
    },
    /// A CHILD SA could not be made (refused in IKE_AUTH or in its CREATE_CHILD_SA); the IKE
    /// SA stays up (§2.21.3).
    ChildFailed {
        /// The association.
        assoc: AssocId,
        /// The child's name.
        child: String,
        /// Why (the peer's error notify, or what was wrong with its answer).
        error: Error,
    },
    /// We asked for a rekey of this pair (our CREATE_CHILD_SA goes out now or after the
    /// outstanding exchange, §2.3).
    RekeyStarted {
        /// The association.
        assoc: AssocId,
        /// The child's name.
        child: String,
        /// The pair's inbound SPI.
        spi_in: u32,
    },
    /// Virtual IPs of an IKE SA just up (RFC 7296 §2.19), queued before its
    /// [`Event::Established`] and first [`Event::InstallChild`]: as initiator, what the
    /// peer's CFG_REPLY granted us (the driver puts them on its interface, and takes them off
    /// at [`Event::Down`]); as responder, what we leased to the peer from our pools.
    VirtualIp {
        /// The association.
        assoc: AssocId,
        /// Its connection.
        conn: String,
        /// Granted to us (`true`), or leased to the peer.
        ours: bool,
        /// The addresses with their prefix lengths.
        addrs: Vec<(std::net::IpAddr, u8)>,
        /// DNS servers sent with them.
        dns: Vec<std::net::IpAddr>,
    },
    /// An IKE SA and its first CHILD SA are up.
    Established {
        /// The association.
        assoc: AssocId,
        /// Its connection.
        conn: String,
        /// The peer's address.
        peer: SocketAddr,
        /// The IKE SA's SPIs.
        spi_i: u64,
        /// Responder SPI.
        spi_r: u64,
    },
    /// Install both SAs of this pair; traffic arrives on the inbound one at once, the
    /// outbound one waits for [`Event::SwitchOutbound`].
    InstallChild {
        /// The association.
        assoc: AssocId,
        /// The child's name.
        child: String,
        /// SPIs, keys, selectors.
        keys: Box<ChildSaKeys>,
        /// ESP in UDP (RFC 3948) for this pair: NAT detection found a NAT on either side, or
        /// the connection has `encap` set. Otherwise plain ESP, IP protocol 50 (RFC 7296
        /// §2.23: UDP encapsulation is for NAT traversal).
        udp_encap: bool,
    },
    /// Send the child's traffic on this pair from now on.
    SwitchOutbound {
        /// The association.
        assoc: AssocId,
        /// The child's name.
        child: String,
        /// The pair's inbound SPI.
        spi_in: u32,
        /// The pair's outbound SPI.
        spi_out: u32,
    },
    /// Remove this pair (outbound at once; the inbound one after the driver's grace period).
    RemoveChild {
        /// The association.
        assoc: AssocId,
        /// The child's name.
        child: String,
        /// The pair's inbound SPI.
        spi_in: u32,
        /// The pair's outbound SPI.
        spi_out: u32,
    },
    /// A pair was rekeyed: `spi_in` succeeds `old_spi_in`.
    ChildRekeyed {
        /// The association.
        assoc: AssocId,
        /// The child's name.
        child: String,
        /// The old pair's inbound SPI.
        old_spi_in: u32,
        /// The new pair's inbound SPI.
        spi_in: u32,
    },
    /// The IKE SA was rekeyed (§2.18): its new SPIs.
    IkeRekeyed {
        /// The association.
        assoc: AssocId,
        /// New initiator SPI.
        spi_i: u64,
        /// New responder SPI.
        spi_r: u64,
    },
    /// The association is gone; every pair it installed was removed before this event.
    Down {
        /// The association.
        assoc: AssocId,
        /// Its connection.
        conn: String,
        /// Why.
        reason: DownReason,
    },
}

impl Event {
    /// The association the event is about (none for a setup not started yet).
    pub fn assoc(&self) -> Option<AssocId> {
        match self {
            Event::Initiating { .. } => None,
            Event::DecryptionKeys { assoc, .. }
            | Event::ChildFailed { assoc, .. }
            | Event::RekeyStarted { assoc, .. }
            | Event::VirtualIp { assoc, .. }
            | Event::Established { assoc, .. }
            | Event::InstallChild { assoc, .. }
            | Event::SwitchOutbound { assoc, .. }
            | Event::RemoveChild { assoc, .. }
            | Event::ChildRekeyed { assoc, .. }
            | Event::IkeRekeyed { assoc, .. }
            | Event::Down { assoc, .. } => Some(*assoc),
        }
    }

    /// The CHILD SA the event is about, by name.
    pub fn child(&self) -> Option<&str> {
        match self {
            Event::ChildFailed { child, .. }
            | Event::RekeyStarted { child, .. }
            | Event::InstallChild { child, .. }
            | Event::SwitchOutbound { child, .. }
            | Event::RemoveChild { child, .. }
            | Event::ChildRekeyed { child, .. } => Some(child),
            _ => None,
        }
    }
}

/// What a command asks to end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The IKE SA and all its CHILD SAs, and any pending setup retry.
    All,
    /// The CHILD SA of this name (its pairs are DELETEd; the IKE SA stays).
    Child(String),
}

/// Why a command was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommandError {
    /// No connection has this name.
    #[error("no connection named {0:?}")]
    NoConnection(String),
    /// The connection has no established IKE SA.
    #[error("connection {0:?} is not established")]
    NotEstablished(String),
    /// The connection has no child of this name.
    #[error("connection has no child named {0:?}")]
    NoChild(String),
}
