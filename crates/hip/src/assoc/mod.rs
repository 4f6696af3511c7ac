//! A HIP association's whole life, sans-IO (RFC 7401 §4.4, §6; RFC 7402 §6.8–§6.10; RFC 8046
//! §3.2.1): the base exchange in both roles with retransmission of I1 and I2 (§4.4.3), the
//! R2-SENT → ESTABLISHED rule, UPDATE for rekeying the ESP pair make-before-break and for
//! mobility (LOCATOR_SET checked with a signed echo), CLOSE / CLOSE_ACK, and a peer that
//! restarted (its I1 while we hold it ESTABLISHED: a new base exchange replaces the old pairs).
//!
//! The shape is that of the `ike` crate's `assoc`: the driver calls
//! [`Endpoint::handle`] with each HIP packet, [`Endpoint::handle_timeout`] when
//! [`Endpoint::poll_timeout`] says, and drains [`Endpoint::poll_transmit`] and
//! [`Endpoint::poll_event`]. Commands name a peer by HIT: [`Endpoint::initiate`],
//! [`Endpoint::rekey`], [`Endpoint::close`], and [`Endpoint::update_locator`] for the host's
//! own move. The clock is [`wire::Time`], shared with IKEv2. [`Endpoint::esp_received`] is the
//! data path telling that ESP arrived on an inbound SPI (what moves R2-SENT to ESTABLISHED,
//! §4.4.2, and completes a rekey whose last acknowledgement was lost).
//!
//! The data path hears of ESP pairs through [`Event`]s, make-before-break (DESIGN rule 4):
//! [`Event::InstallPair`] first (the inbound SA admits traffic at once), then
//! [`Event::SwitchOutbound`] once the peer is known to hold its inbound SA, then
//! [`Event::RemovePair`] for the pair it replaces (the driver keeps that inbound SA for a
//! grace period).

mod association;
mod endpoint;
mod schedule;
mod updates;

pub use endpoint::{Endpoint, PairView, Stats};

pub use schedule::Backoff;

use crate::esp::EspKeys;
use crate::hit::HostIdentityTag;
use std::net::IpAddr;
use std::time::Duration;

/// The endpoint's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timers {
    /// Waits between sends of I1, I2, UPDATE and CLOSE (§4.4.3: "the retransmission timer
    /// SHOULD be set ... and doubled" — the numbers are the implementation's).
    pub retransmit: Backoff,
    /// Sends of one packet before the exchange is given up (I1_RETRIES_MAX and its kin).
    pub tries: u32,
    /// How long a Responder waits in R2-SENT for the Initiator's first ESP packet or UPDATE
    /// before it moves to ESTABLISHED anyway (§4.4.2), answering repeated I2s meanwhile.
    pub r2_sent: Duration,
    /// Waits before a wanted association that failed is tried again.
    pub setup_retry: Backoff,
}

impl Default for Timers {
    fn default() -> Timers {
        Timers {
            retransmit: Backoff { first: Duration::from_secs(1), max: Duration::from_secs(16) },
            tries: 5,
            r2_sent: Duration::from_secs(2),
            setup_retry: Backoff { first: Duration::from_secs(1), max: Duration::from_secs(16) },
        }
    }
}

/// The puzzle search the endpoint uses for R1s: given the puzzle, the HIT suite, both HITs and
/// a seed, #J and the hashes it took (the node spreads it over cores with
/// [`crate::puzzle::Puzzle::solve_lane`]; its answer is checked, not trusted).
pub type PuzzleSolver = Box<
    dyn Fn(
            &crate::puzzle::Puzzle,
            crate::suite::HitSuite,
            &HostIdentityTag,
            &HostIdentityTag,
            &[u8],
        ) -> Result<(Vec<u8>, u64), crate::error::Error>
        + Send,
>;

/// An association as the endpoint holds it (for status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssocView {
    /// The peer.
    pub peer: HostIdentityTag,
    /// RFC 7401 §4.4.2's name of its state.
    pub state: &'static str,
    /// The peer's locator.
    pub locator: IpAddr,
    /// A rekey under way: "offered" or "answered".
    pub rekey: Option<&'static str>,
    /// Our locator announcement awaits its acknowledgement.
    pub announcing: bool,
    /// A locator of the peer's is being checked.
    pub checking: Option<IpAddr>,
}

/// A HIP packet to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Our locator to send from.
    pub from: IpAddr,
    /// The peer's locator.
    pub to: IpAddr,
    /// The HIP packet, its checksum for `from` → `to`.
    pub payload: Vec<u8>,
}

/// Why an association ended without a CLOSE exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownReason {
    /// I1 or I2 went unanswered after every retransmission (§4.4.3: to E-FAILED).
    SetupTimedOut,
    /// An UPDATE of ours went unanswered after every retransmission: the peer is gone.
    PeerLost,
    /// Our CLOSE went unacknowledged (§4.4.4: CLOSING times out to UNASSOCIATED).
    CloseTimedOut,
    /// A new base exchange with the peer (it restarted, §4.4.2) replaced this one.
    Replaced,
}

/// What the driver acts on besides sending packets.
#[derive(Debug)]
pub enum Event {
    /// The base exchange completed (for a Responder: when R2 left).
    Established {
        /// The peer.
        peer: HostIdentityTag,
        /// Its locator.
        locator: IpAddr,
        /// Whether we were the Initiator.
        initiator: bool,
    },
    /// Install both SAs of this pair; the inbound one admits traffic at once, the outbound one
    /// waits for [`Event::SwitchOutbound`].
    InstallPair {
        /// The peer.
        peer: HostIdentityTag,
        /// SPIs and keys (RFC 7402 §7).
        keys: Box<EspKeys>,
        /// The peer's locator (the outer destination).
        locator: IpAddr,
    },
    /// Send the peer's traffic on this pair from now on.
    SwitchOutbound {
        /// The peer.
        peer: HostIdentityTag,
        /// The pair's inbound SPI.
        spi_in: u32,
        /// The pair's outbound SPI.
        spi_out: u32,
    },
    /// Remove this pair (outbound at once; inbound after the driver's grace period).
    RemovePair {
        /// The peer.
        peer: HostIdentityTag,
        /// The pair's inbound SPI.
        spi_in: u32,
        /// The pair's outbound SPI.
        spi_out: u32,
    },
    /// The pair was rekeyed by UPDATE: `spi_in` succeeds `old_spi_in`.
    Rekeyed {
        /// The peer.
        peer: HostIdentityTag,
        /// The old pair's inbound SPI.
        old_spi_in: u32,
        /// The new pair's inbound SPI.
        spi_in: u32,
    },
    /// The peer's new locator answered our signed echo (RFC 8046 §3.2.1, RFC 7401 §5.4):
    /// send to it from now on.
    PeerMoved {
        /// The peer.
        peer: HostIdentityTag,
        /// Its new locator.
        locator: IpAddr,
    },
    /// The association ended by CLOSE and CLOSE_ACK (either side); its pairs were removed
    /// before this event.
    Closed {
        /// The peer.
        peer: HostIdentityTag,
    },
    /// The association ended otherwise; its pairs were removed before this event.
    Down {
        /// The peer.
        peer: HostIdentityTag,
        /// Why.
        reason: DownReason,
    },
}

impl Event {
    /// The peer the event is about.
    pub fn peer(&self) -> HostIdentityTag {
        match self {
            Event::Established { peer, .. }
            | Event::InstallPair { peer, .. }
            | Event::SwitchOutbound { peer, .. }
            | Event::RemovePair { peer, .. }
            | Event::Rekeyed { peer, .. }
            | Event::PeerMoved { peer, .. }
            | Event::Closed { peer }
            | Event::Down { peer, .. } => *peer,
        }
    }
}

/// Why a command was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommandError {
    /// No association with this HIT.
    #[error("no association with {0}")]
    NoAssociation(HostIdentityTag),
    /// The association is not ESTABLISHED.
    #[error("the association with {0} is not established")]
    NotEstablished(HostIdentityTag),
    /// A rekey with the peer is already under way.
    #[error("a rekey with {0} is already under way")]
    RekeyPending(HostIdentityTag),
    /// The KEYMAT has no ESP keys left (RFC 7402 §6.9: a new Diffie-Hellman is needed).
    #[error("the KEYMAT with {0} has no keys left; a new base exchange is needed")]
    KeymatExhausted(HostIdentityTag),
    /// Building the packet failed (no randomness, an index past 65535 ...).
    #[error("{0}")]
    Local(String),
}
