//! Why the home agent did not register a Binding Update, and the counters by reason. Silent
//! drops (RFC 6275 §9.2, §9.5.1; RFC 3776 §4.1, §5) and rejections answered with a Binding
//! Acknowledgement status (§6.1.8, §10.3.1) share one enum so the node can count every BU that
//! did not reach the binding cache under one name.

use std::net::Ipv6Addr;

use ipsec::Spi;
use wire::mip6::{BaStatus, BeStatus};

/// The inbound SA a Mobility Header arrived in, as the ESP layer saw it (RFC 3776 §4.1): its
/// SPI and the mobile node's home address its selectors name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SaIdentity {
    /// The SA's SPI.
    pub spi: Spi,
    /// The home address in the SA's selectors (RFC 3776 §4.1: the SA is set up for it).
    pub home_address: Ipv6Addr,
}

/// Why a Mobility Header did not change the binding cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Refusal {
    /// The Mobility Header did not parse (§9.2): dropped.
    #[error("malformed mobility header")]
    Malformed,
    /// The Checksum did not verify (§9.2): dropped.
    #[error("bad mobility header checksum")]
    BadChecksum,
    /// No ESP SA protected the Binding Update (RFC 3776 §4.1, RFC 4877 §3): dropped.
    #[error("binding update not protected by esp")]
    Unprotected,
    /// The SA belongs to another mobile node than the home address claimed (RFC 3776 §4.1,
    /// §5): dropped.
    #[error("binding update in another mobile node's sa")]
    WrongSa,
    /// The care-of address is not a unicast routable address (§9.5.1): dropped.
    #[error("care-of address not unicast routable")]
    BadCareOf,
    /// Sequence number not newer than the last accepted one (§9.5.1): BA status 135.
    #[error("sequence number out of window")]
    OutOfWindow,
    /// The Mobility Header's Payload Proto is not IPPROTO_NONE (59) (§6.1.1, §9.2): dropped.
    #[error("mobility header payload proto not 59")]
    BadPayloadProto,
    /// H flag clear: this home agent serves home registrations only (BA status 131).
    #[error("not a home registration")]
    NotHomeRegistration,
    /// H flag clear for a home address that holds a home registration (§9.5.1): BA status 139.
    #[error("registration type change disallowed")]
    RegistrationTypeChange,
    /// A de-registration for a home address with no home registration (§10.3.2): BA status
    /// 133.
    #[error("de-registration without a home registration")]
    NothingToDeregister,
    /// Duplicate Address Detection found the home address in use on the home link (§10.3.1):
    /// BA status 134.
    #[error("duplicate address detection failed")]
    DuplicateAddress,
    /// Home address outside the home prefix (§10.3.1): BA status 132.
    #[error("home address not in the home subnet")]
    NotHomeSubnet,
    /// The mobile node is not one this home agent serves (§10.3.1): BA status 133.
    #[error("not home agent for this mobile node")]
    NotHomeAgentForThisMobileNode,
    /// The cache is full (§10.3.1): BA status 130.
    #[error("binding cache full")]
    InsufficientResources,
    /// A return-routability message or Binding Refresh Request, which a home agent without
    /// route optimization does not serve: answered with Binding Error status 2 (§9.2).
    #[error("unsupported mobility message")]
    UnsupportedMessage,
    /// A Binding Acknowledgement or Binding Error sent to the home agent: ignored.
    #[error("mobility message not for a home agent")]
    NotForHomeAgent,
}

impl Refusal {
    /// Every reason, in counter order.
    pub const ALL: [Refusal; 16] = [
        Refusal::Malformed,
        Refusal::BadChecksum,
        Refusal::BadPayloadProto,
        Refusal::Unprotected,
        Refusal::WrongSa,
        Refusal::BadCareOf,
        Refusal::OutOfWindow,
        Refusal::NotHomeRegistration,
        Refusal::RegistrationTypeChange,
        Refusal::NotHomeSubnet,
        Refusal::NotHomeAgentForThisMobileNode,
        Refusal::NothingToDeregister,
        Refusal::DuplicateAddress,
        Refusal::InsufficientResources,
        Refusal::UnsupportedMessage,
        Refusal::NotForHomeAgent,
    ];

    fn index(self) -> usize {
        Refusal::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }

    /// The Binding Acknowledgement status that answers this refusal, if it gets one.
    pub fn ba_status(self) -> Option<BaStatus> {
        match self {
            Refusal::OutOfWindow => Some(BaStatus::SEQUENCE_NUMBER_OUT_OF_WINDOW),
            Refusal::NotHomeRegistration => Some(BaStatus::HOME_REGISTRATION_NOT_SUPPORTED),
            Refusal::RegistrationTypeChange => Some(BaStatus::REGISTRATION_TYPE_CHANGE_DISALLOWED),
            Refusal::NotHomeSubnet => Some(BaStatus::NOT_HOME_SUBNET),
            Refusal::NotHomeAgentForThisMobileNode | Refusal::NothingToDeregister => {
                Some(BaStatus::NOT_HOME_AGENT_FOR_THIS_MOBILE_NODE)
            }
            Refusal::DuplicateAddress => Some(BaStatus::DUPLICATE_ADDRESS_DETECTION_FAILED),
            Refusal::InsufficientResources => Some(BaStatus::INSUFFICIENT_RESOURCES),
            _ => None,
        }
    }

    /// The Binding Error status that answers this refusal, if it gets one.
    pub fn be_status(self) -> Option<BeStatus> {
        (self == Refusal::UnsupportedMessage).then_some(BeStatus::UNRECOGNIZED_MH_TYPE)
    }

    /// True if the refusal is silent (no Binding Acknowledgement or Error goes back).
    pub fn is_silent(self) -> bool {
        self.ba_status().is_none() && self.be_status().is_none()
    }
}

/// What the home agent did with the Mobility Headers it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Registrations that created an entry.
    pub created: u64,
    /// Registrations that updated an entry (refresh or move).
    pub updated: u64,
    /// De-registrations (lifetime 0 or care-of = home address) that removed an entry.
    pub deregistered: u64,
    /// Entries removed because their lifetime ran out.
    pub expired: u64,
    refused: [u64; Refusal::ALL.len()],
}

impl Counters {
    /// How many Mobility Headers were refused for `reason`.
    pub fn refused(&self, reason: Refusal) -> u64 {
        self.refused.get(reason.index()).copied().unwrap_or(0)
    }

    /// Every reason with its count.
    pub fn refusals(&self) -> impl Iterator<Item = (Refusal, u64)> + '_ {
        Refusal::ALL.iter().map(|r| (*r, self.refused(*r)))
    }

    /// Refusals of all reasons.
    pub fn refused_total(&self) -> u64 {
        self.refused.iter().sum()
    }

    pub(crate) fn count(&mut self, reason: Refusal) {
        if let Some(c) = self.refused.get_mut(reason.index()) {
            *c += 1;
        }
    }
}
