//! The mobile node's side of home registration (RFC 6275 §11.7.1, §11.7.3, §11.8): build a
//! Binding Update for the current care-of address, keep it pending until the Binding
//! Acknowledgement with the same Sequence Number comes back, retransmit with exponential
//! back-off (§13: InitialBindackTimeoutFirstReg 1.5 s, MAX_BINDACK_TIMEOUT 32 s), and refresh
//! before the granted lifetime runs out. Time comes in as an argument; [`MobileNode::deadline`]
//! says when to call [`MobileNode::poll`] next.

use std::net::Ipv6Addr;

use ipsec::Time;
use wire::WireError;
use wire::mip6::{BaStatus, BindingUpdate, Body, LIFETIME_UNIT_SECS, Message, MhPacket};

use crate::outgoing::{Extension, Outgoing};
use crate::seq::is_newer;

/// First retransmission timeout of a home registration (§13: 1.5 s), in microseconds.
pub const INITIAL_BINDACK_TIMEOUT_FIRST_REG_US: u64 = 1_500_000;
/// Longest retransmission timeout (§12: 32 s), in microseconds.
pub const MAX_BINDACK_TIMEOUT_US: u64 = 32_000_000;

/// A home-registration Binding Update (§6.1.7 with A and H set, §11.7.1) from `care_of` to the
/// home agent: behind a Home Address option naming `home` when away, without one when
/// `care_of` is the home address; the Checksum's pseudo-header takes the home address as
/// source (§6.1.1).
pub fn binding_update(
    home: Ipv6Addr,
    care_of: Ipv6Addr,
    home_agent: Ipv6Addr,
    sequence: u16,
    lifetime_units: u16,
) -> Result<Outgoing, WireError> {
    let bu = BindingUpdate {
        sequence,
        acknowledge: true,
        home_registration: true,
        lifetime: lifetime_units,
        ..BindingUpdate::default()
    };
    let mh = Message::new(Body::BindingUpdate(bu)).to_vec_with_checksum(home, home_agent)?;
    let extension =
        if care_of == home { Extension::None } else { Extension::HomeAddressOption(home) };
    Ok(Outgoing { src: care_of, dst: home_agent, extension, mh })
}

/// The mobile node's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MobileNodeConfig {
    /// The home address.
    pub home_address: Ipv6Addr,
    /// The home agent's address.
    pub home_agent: Ipv6Addr,
    /// Lifetime asked for, in 4-second units.
    pub lifetime_units: u16,
}

/// A Binding Update sent and not yet acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pending {
    sequence: u16,
    lifetime_units: u16,
    care_of: Ipv6Addr,
    sent_at: Time,
    timeout_us: u64,
}

/// The registration the home agent granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    /// The care-of address bound.
    pub care_of_address: Ipv6Addr,
    /// Granted lifetime in 4-second units.
    pub lifetime_units: u16,
    /// When the binding runs out (counted from when the BU was sent, §11.7.1).
    pub expires: Time,
    /// When this node re-registers: three quarters of the way to `expires`.
    pub refresh_at: Time,
}

/// What a Binding Acknowledgement did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    /// Registered (or refreshed) with this grant.
    Registered(Registration),
    /// The de-registration was acknowledged.
    Deregistered,
    /// Status 135: the sequence number moved past the home agent's, a new BU is due now.
    Resynchronized {
        /// The home agent's last accepted Sequence Number.
        last_accepted: u16,
    },
    /// Rejected with this status; nothing pending any more.
    Rejected(BaStatus),
    /// Not the acknowledgement awaited (no BU pending, other sequence number, not a BA, bad
    /// checksum or malformed): ignored.
    Ignored,
}

/// A mobile node's home registration state.
#[derive(Debug, Clone)]
pub struct MobileNode {
    config: MobileNodeConfig,
    care_of: Ipv6Addr,
    next_sequence: u16,
    pending: Option<Pending>,
    registration: Option<Registration>,
    resend_now: bool,
}

impl MobileNode {
    /// A mobile node at `care_of`, numbering its Binding Updates from `first_sequence`.
    pub fn new(config: MobileNodeConfig, care_of: Ipv6Addr, first_sequence: u16) -> MobileNode {
        MobileNode {
            config,
            care_of,
            next_sequence: first_sequence,
            pending: None,
            registration: None,
            resend_now: true,
        }
    }

    /// The current registration, if one was acknowledged and has not been replaced.
    pub fn registration(&self) -> Option<Registration> {
        self.registration
    }

    /// The current care-of address.
    pub fn care_of(&self) -> Ipv6Addr {
        self.care_of
    }

    /// The Sequence Number of the pending Binding Update, if any.
    pub fn pending_sequence(&self) -> Option<u16> {
        self.pending.map(|p| p.sequence)
    }

    /// Builds a Binding Update (A and H set, §11.7.1) for the current care-of address and the
    /// configured lifetime, and makes it the pending one.
    pub fn binding_update(&mut self, now: Time) -> Result<Outgoing, WireError> {
        let lifetime =
            if self.care_of == self.config.home_address { 0 } else { self.config.lifetime_units };
        self.send(lifetime, now)
    }

    /// Moves to a new care-of address and builds the Binding Update for it (§11.7.1: a new
    /// primary care-of address is registered at once).
    pub fn move_to(&mut self, care_of: Ipv6Addr, now: Time) -> Result<Outgoing, WireError> {
        self.care_of = care_of;
        self.binding_update(now)
    }

    /// Builds a de-registration (lifetime 0, §11.5.4) from the current care-of address.
    pub fn deregister(&mut self, now: Time) -> Result<Outgoing, WireError> {
        self.send(0, now)
    }

    fn send(&mut self, lifetime_units: u16, now: Time) -> Result<Outgoing, WireError> {
        let sequence = self.next_sequence;
        let (home, ha) = (self.config.home_address, self.config.home_agent);
        let out = binding_update(home, self.care_of, ha, sequence, lifetime_units)?;
        let timeout_us = match self.pending {
            Some(p) if p.care_of == self.care_of && p.lifetime_units == lifetime_units => {
                (p.timeout_us * 2).min(MAX_BINDACK_TIMEOUT_US)
            }
            _ => INITIAL_BINDACK_TIMEOUT_FIRST_REG_US,
        };
        self.next_sequence = sequence.wrapping_add(1);
        self.pending = Some(Pending {
            sequence,
            lifetime_units,
            care_of: self.care_of,
            sent_at: now,
            timeout_us,
        });
        self.resend_now = false;
        Ok(out)
    }

    /// When [`MobileNode::poll`] has work: a retransmission, a refresh, or now.
    pub fn deadline(&self) -> Option<Time> {
        if self.resend_now {
            return Some(Time(0));
        }
        match (self.pending, self.registration) {
            (Some(p), _) => Some(Time(p.sent_at.0.saturating_add(p.timeout_us))),
            (None, Some(r)) => Some(r.refresh_at),
            (None, None) => None,
        }
    }

    /// The Binding Update due at `now` (a retransmission with a new Sequence Number, §11.8, or
    /// a refresh), if any.
    pub fn poll(&mut self, now: Time) -> Option<Result<Outgoing, WireError>> {
        let due = self.deadline().is_some_and(|d| d <= now);
        if !due {
            return None;
        }
        let lifetime = self.pending.map(|p| p.lifetime_units);
        Some(match lifetime {
            Some(l) => self.send(l, now),
            None => self.binding_update(now),
        })
    }

    /// Takes a Binding Acknowledgement (the Mobility Header, and the addresses the Checksum's
    /// pseudo-header uses: the home agent and, through the type 2 routing header, the home
    /// address, §6.1.1). Accepts only the one that echoes the pending Sequence Number (§11.7.3).
    pub fn on_binding_ack(&mut self, src: Ipv6Addr, dst: Ipv6Addr, mh: &[u8]) -> AckOutcome {
        let Ok(p) = MhPacket::new_checked(mh) else { return AckOutcome::Ignored };
        if !p.verify_checksum(src, dst) || src != self.config.home_agent {
            return AckOutcome::Ignored;
        }
        let Ok(Message { body: Body::BindingAck(ba), .. }) = Message::from_packet(&p) else {
            return AckOutcome::Ignored;
        };
        let Some(pending) = self.pending else { return AckOutcome::Ignored };
        if ba.status == BaStatus::SEQUENCE_NUMBER_OUT_OF_WINDOW {
            // §11.7.3: continue from the home agent's number; the BU is resent at once.
            if !is_newer(self.next_sequence, ba.sequence) {
                self.next_sequence = ba.sequence.wrapping_add(1);
            }
            self.resend_now = true;
            return AckOutcome::Resynchronized { last_accepted: ba.sequence };
        }
        if ba.sequence != pending.sequence {
            return AckOutcome::Ignored;
        }
        self.pending = None;
        if !ba.status.is_accepted() {
            self.registration = None;
            return AckOutcome::Rejected(ba.status);
        }
        if pending.lifetime_units == 0 || ba.lifetime == 0 {
            self.registration = None;
            return AckOutcome::Deregistered;
        }
        let secs =
            u64::from(ba.lifetime.min(pending.lifetime_units)) * u64::from(LIFETIME_UNIT_SECS);
        let expires = pending.sent_at.plus_secs(secs);
        let refresh_at = Time(pending.sent_at.0.saturating_add(secs * 750_000));
        let r = Registration {
            care_of_address: pending.care_of,
            lifetime_units: ba.lifetime,
            expires,
            refresh_at,
        };
        self.registration = Some(r);
        AckOutcome::Registered(r)
    }
}
