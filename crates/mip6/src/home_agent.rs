//! The home agent's processing of Binding Updates for home registrations (RFC 6275 §9.5.1,
//! §10.3.1, §10.3.2) behind the RFC 3776 rule that a Binding Update counts only when it came in
//! the ESP SA of the mobile node whose home address it claims. Read RFC 3776 §4.1 and §5, then
//! RFC 6275 §9.2, §9.5.1, §10.3.1 and §10.3.2.
//!
//! Order of the checks in [`HomeAgent::handle`], each a named [`Refusal`]:
//! 1. the Mobility Header parses and its Checksum verifies, with the Home Address option's
//!    address as the pseudo-header source (§6.1.1, §9.2) — else dropped;
//! 2. it is a Binding Update; a Binding Refresh Request or return-routability message gets a
//!    Binding Error, status 2 (§9.2: this home agent does no route optimization); a BA or BE is
//!    ignored;
//! 3. its Payload Proto is IPPROTO_NONE, 59 (§9.2) — else dropped;
//! 4. it arrived in an ESP SA whose selector names the claimed home address (RFC 3776 §4.1,
//!    §5) — else dropped as `Unprotected` or `WrongSa`, before any state is read;
//! 5. the care-of address (Alternate Care-of Address option, else the source, §9.5.1) is
//!    unicast — else dropped;
//! 6. the Sequence Number is newer than the cached one modulo 2^16 (§9.5.1) — else BA 135
//!    carrying the last accepted number;
//! 7. H set, else BA 139 when the home address holds a home registration (§9.5.1: the type of
//!    a binding does not change) and BA 131 when it holds none (§10.3.1: this node is no
//!    correspondent node); the home address on the home prefix (else 132), a mobile node this
//!    agent serves (else 133);
//! 8. lifetime 0 or care-of = home address de-registers (§10.3.2), and is refused with 133
//!    when there is no home registration to remove; otherwise a new entry needs room (else
//!    130) and the lifetime is capped at the configured maximum (§10.3.1);
//! 9. with [`HomeAgent::require_dad`], a home address without a binding waits for Duplicate
//!    Address Detection on the home link (§10.3.1): [`Decision::AwaitingDad`] asks the node to
//!    run it, [`HomeAgent::dad_complete`] gives the answer (registered, or BA 134).

use std::collections::{HashMap, HashSet};
use std::net::Ipv6Addr;

use ipsec::Time;
use wire::mip6::{
    BaStatus, BindingAck, BindingError, BindingUpdate, Body, IPPROTO_NONE, LIFETIME_UNIT_SECS,
    Message, MhPacket, MobilityOption,
};

use crate::cache::{Binding, BindingCache, Upsert};
use crate::outgoing::{Extension, Outgoing};
use crate::refusal::{Counters, Refusal, SaIdentity};
use crate::seq::is_newer;

/// The home agent's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeAgentConfig {
    /// The home agent's own address (the source of its Binding Acknowledgements).
    pub address: Ipv6Addr,
    /// The home prefix (§10.3.1: home addresses must be on it).
    pub home_prefix: Ipv6Addr,
    /// Its length in bits.
    pub home_prefix_len: u8,
    /// Longest lifetime granted, in 4-second units (§10.3.1: the home agent may shorten it).
    pub max_lifetime_units: u16,
    /// Most bindings held.
    pub capacity: usize,
}

impl HomeAgentConfig {
    /// True if `a` is on the home prefix.
    pub fn on_home_prefix(&self, a: Ipv6Addr) -> bool {
        let bits = u32::from(self.home_prefix_len.min(128));
        let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
        u128::from(a) & mask == u128::from(self.home_prefix) & mask
    }
}

/// A Mobility Header as the node's data path hands it over after ESP (RFC 3776 §3).
#[derive(Debug, Clone, Copy)]
pub struct InboundMh<'a> {
    /// IPv6 Source Address as received (the care-of address when away).
    pub src: Ipv6Addr,
    /// IPv6 Destination Address.
    pub dst: Ipv6Addr,
    /// The Home Address option's address, if the packet had one (§6.3).
    pub home_address_option: Option<Ipv6Addr>,
    /// The ESP SA the Mobility Header was decrypted with; `None` if it came in the clear.
    pub sa: Option<SaIdentity>,
    /// The Mobility Header.
    pub mh: &'a [u8],
}

/// What happened to the binding cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingChange {
    /// A new entry.
    Created(Binding),
    /// An entry refreshed or moved to a new care-of address.
    Updated {
        /// Before.
        old: Binding,
        /// After.
        new: Binding,
    },
    /// A de-registration removed this entry.
    Deleted(Binding),
}

/// The home agent's answer to one Mobility Header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Registered or de-registered; a BA with status 0 goes back when the A flag asked for one.
    Accepted {
        /// The change.
        change: BindingChange,
        /// The Binding Acknowledgement to send.
        reply: Option<Outgoing>,
    },
    /// Refused with a BA status (§6.1.8) or Binding Error (§6.1.9) to send; the cache is
    /// unchanged.
    Rejected {
        /// Why.
        reason: Refusal,
        /// The Binding Acknowledgement or Error.
        reply: Outgoing,
    },
    /// Dropped without an answer; the cache is unchanged.
    Dropped(Refusal),
    /// The home address has no binding yet and [`HomeAgent::require_dad`] is on: the Binding
    /// Update is held until the node reports Duplicate Address Detection's result through
    /// [`HomeAgent::dad_complete`] (§10.3.1). Nothing is sent yet.
    AwaitingDad {
        /// The home address to probe on the home link.
        home_address: Ipv6Addr,
        /// True for the first Binding Update of this wait: the node starts DAD now. False for
        /// a retransmission that replaced the held one while DAD runs.
        start: bool,
    },
}

/// A Binding Update held while the node runs Duplicate Address Detection for its home address.
#[derive(Debug, Clone, Copy)]
struct HeldBu {
    src: Ipv6Addr,
    dst: Ipv6Addr,
    home_address_option: Option<Ipv6Addr>,
    care_of: Ipv6Addr,
    sequence: u16,
    spi: ipsec::Spi,
    granted: u16,
    acknowledge: bool,
}

/// A Mobile IPv6 home agent (§10): the binding cache and the processing in front of it.
#[derive(Debug, Clone)]
pub struct HomeAgent {
    config: HomeAgentConfig,
    cache: BindingCache,
    served: Option<HashSet<Ipv6Addr, ahash::RandomState>>,
    counters: Counters,
    dad: bool,
    held: HashMap<Ipv6Addr, HeldBu, ahash::RandomState>,
}

impl HomeAgent {
    /// A home agent serving every home address on its prefix that has an SA.
    pub fn new(mut config: HomeAgentConfig) -> HomeAgent {
        // A grant of 0 units would read as a de-registration (§6.1.8): grant at least one.
        config.max_lifetime_units = config.max_lifetime_units.max(1);
        let max_secs = u32::from(config.max_lifetime_units) * LIFETIME_UNIT_SECS;
        let cache = BindingCache::new(config.capacity, max_secs);
        HomeAgent {
            config,
            cache,
            served: None,
            counters: Counters::default(),
            dad: false,
            held: HashMap::default(),
        }
    }

    /// Runs Duplicate Address Detection for a home address before its first binding (§10.3.1):
    /// such a Binding Update yields [`Decision::AwaitingDad`] instead of a binding. Off by
    /// default, for callers (benchmarks, simulations) that have no home link to probe.
    pub fn require_dad(&mut self, on: bool) {
        self.dad = on;
    }

    /// Home addresses whose Binding Update waits for Duplicate Address Detection.
    pub fn awaiting_dad(&self) -> impl Iterator<Item = Ipv6Addr> + '_ {
        self.held.keys().copied()
    }

    /// The node's answer to [`Decision::AwaitingDad`]: `unique` is true when no other node
    /// defended the home address on the home link. Registers the held Binding Update, or
    /// refuses it with BA status 134 (§10.3.1). `None` if nothing was held for `home`.
    pub fn dad_complete(&mut self, home: Ipv6Addr, unique: bool, now: Time) -> Option<Decision> {
        let h = self.held.remove(&home)?;
        let m = InboundMh {
            src: h.src,
            dst: h.dst,
            home_address_option: h.home_address_option,
            sa: None,
            mh: &[],
        };
        let d = if unique {
            self.register(&m, home, h.care_of, h.sequence, h.spi, h.granted, h.acknowledge, now)
        } else {
            let reason = Refusal::DuplicateAddress;
            let status = BaStatus::DUPLICATE_ADDRESS_DETECTION_FAILED;
            Decision::Rejected { reason, reply: ack(&m, home, status, h.sequence, 0) }
        };
        self.count(&d);
        Some(d)
    }

    /// Serves only the listed home addresses (others get BA status 133, §10.3.1).
    pub fn serve_only(&mut self, homes: impl IntoIterator<Item = Ipv6Addr>) {
        self.served.get_or_insert_with(HashSet::default).extend(homes);
    }

    /// The configuration.
    pub fn config(&self) -> &HomeAgentConfig {
        &self.config
    }

    /// The binding cache (read only: only [`HomeAgent::handle`] and
    /// [`HomeAgent::expire`] change it).
    pub fn cache(&self) -> &BindingCache {
        &self.cache
    }

    /// Reserves room for `n` more bindings.
    pub fn reserve(&mut self, n: usize) {
        self.cache.reserve(n);
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Removes the bindings whose lifetime ran out by `now` (call it about once a second).
    pub fn expire(&mut self, now: Time) -> Vec<Binding> {
        let gone = self.cache.expire(now);
        self.counters.expired += gone.len() as u64;
        gone
    }

    /// Processes one Mobility Header in the order the module documentation gives.
    pub fn handle(&mut self, m: &InboundMh<'_>, now: Time) -> Decision {
        let d = self.decide(m, now);
        self.count(&d);
        d
    }

    fn count(&mut self, d: &Decision) {
        match d {
            Decision::Accepted { change, .. } => match change {
                BindingChange::Created(_) => self.counters.created += 1,
                BindingChange::Updated { .. } => self.counters.updated += 1,
                BindingChange::Deleted(_) => self.counters.deregistered += 1,
            },
            Decision::Rejected { reason, .. } | Decision::Dropped(reason) => {
                self.counters.count(*reason)
            }
            Decision::AwaitingDad { .. } => {}
        }
    }

    /// Processes a batch of Mobility Headers in order, as [`HomeAgent::handle`] would one by
    /// one. It first touches every claimed home address's cache entry, so that in a large cache
    /// the memory loads of the batch overlap instead of each waiting in turn.
    pub fn handle_batch(&mut self, batch: &[InboundMh<'_>], now: Time) -> Vec<Decision> {
        for m in batch {
            self.cache.touch(&m.home_address_option.unwrap_or(m.src));
        }
        batch.iter().map(|m| self.handle(m, now)).collect()
    }

    fn decide(&mut self, m: &InboundMh<'_>, now: Time) -> Decision {
        let home = m.home_address_option.unwrap_or(m.src);
        let Ok(packet) = MhPacket::new_checked(m.mh) else {
            return Decision::Dropped(Refusal::Malformed);
        };
        let Ok(message) = Message::from_packet(&packet) else {
            return Decision::Dropped(Refusal::Malformed);
        };
        if !packet.verify_checksum(home, m.dst) {
            return Decision::Dropped(Refusal::BadChecksum);
        }
        let bu = match message.body {
            Body::BindingUpdate(bu) => bu,
            Body::BindingAck(_) | Body::BindingError(_) => {
                return Decision::Dropped(Refusal::NotForHomeAgent);
            }
            _ => return binding_error(m, home),
        };
        // §9.2: "The Payload Proto field MUST be IPPROTO_NONE (59 decimal). Otherwise, the node
        // MUST discard the message" (the ICMP Parameter Problem it SHOULD send is the node's).
        if packet.payload_proto() != IPPROTO_NONE {
            return Decision::Dropped(Refusal::BadPayloadProto);
        }
        // RFC 3776 §4.1, §5: the SA must be the one set up for this home address.
        match m.sa {
            None => return Decision::Dropped(Refusal::Unprotected),
            Some(sa) if sa.home_address != home => return Decision::Dropped(Refusal::WrongSa),
            Some(_) => {}
        }
        let spi = m.sa.map(|s| s.spi).unwrap_or(ipsec::Spi(0));
        let care_of = alternate_care_of(&bu).unwrap_or(m.src);
        if !is_unicast(care_of) {
            return Decision::Dropped(Refusal::BadCareOf);
        }
        let reply_to = |status, sequence, lifetime| ack(m, home, status, sequence, lifetime);
        let existing = self.cache.get(&home, now);
        if let Some(b) = existing
            && !is_newer(bu.sequence, b.sequence)
        {
            let reply = reply_to(BaStatus::SEQUENCE_NUMBER_OUT_OF_WINDOW, b.sequence, 0);
            return Decision::Rejected { reason: Refusal::OutOfWindow, reply };
        }
        let refuse = |reason: Refusal| {
            let status = reason.ba_status().unwrap_or(BaStatus::REASON_UNSPECIFIED);
            Decision::Rejected { reason, reply: reply_to(status, bu.sequence, 0) }
        };
        if !bu.home_registration {
            // §9.5.1: a binding keeps its type; a home address that holds a home registration
            // cannot turn it into a correspondent registration (139). Without one, the BU asks
            // for route optimization, which this home agent does not offer (131, §10.3.1).
            return refuse(if existing.is_some() {
                Refusal::RegistrationTypeChange
            } else {
                Refusal::NotHomeRegistration
            });
        }
        if !self.config.on_home_prefix(home) {
            return refuse(Refusal::NotHomeSubnet);
        }
        if self.served.as_ref().is_some_and(|s| !s.contains(&home)) {
            return refuse(Refusal::NotHomeAgentForThisMobileNode);
        }
        // §10.3.2: lifetime 0 or the home address as care-of address de-registers.
        if bu.lifetime == 0 || care_of == home {
            self.held.remove(&home);
            // §10.3.2: "If the receiving node has no entry marked as a home registration in its
            // Binding Cache for this mobile node, then this node MUST reject the Binding Update
            // and SHOULD return a Binding Acknowledgement to the mobile node, in which the
            // Status field is set to 133 (not home agent for this mobile node)."
            let Some(b) = self.cache.remove(&home) else {
                return refuse(Refusal::NothingToDeregister);
            };
            let reply = bu.acknowledge.then(|| reply_to(BaStatus::ACCEPTED, bu.sequence, 0));
            return Decision::Accepted { change: BindingChange::Deleted(b), reply };
        }
        let granted = bu.lifetime.min(self.config.max_lifetime_units);
        if self.dad && existing.is_none() {
            return self.hold(m, home, care_of, &bu, spi, granted);
        }
        self.register(m, home, care_of, bu.sequence, spi, granted, bu.acknowledge, now)
    }

    /// Holds a first Binding Update for `home` until DAD answers; a newer one replaces it.
    fn hold(
        &mut self,
        m: &InboundMh<'_>,
        home: Ipv6Addr,
        care_of: Ipv6Addr,
        bu: &BindingUpdate,
        spi: ipsec::Spi,
        granted: u16,
    ) -> Decision {
        let held = HeldBu {
            src: m.src,
            dst: m.dst,
            home_address_option: m.home_address_option,
            care_of,
            sequence: bu.sequence,
            spi,
            granted,
            acknowledge: bu.acknowledge,
        };
        let full = self.cache.len() + self.held.len() >= self.cache.capacity();
        match self.held.get_mut(&home) {
            Some(h) => {
                if h.sequence == bu.sequence || is_newer(bu.sequence, h.sequence) {
                    *h = held;
                }
                Decision::AwaitingDad { home_address: home, start: false }
            }
            None if full => {
                let status = BaStatus::INSUFFICIENT_RESOURCES;
                let reply = ack(m, home, status, bu.sequence, 0);
                Decision::Rejected { reason: Refusal::InsufficientResources, reply }
            }
            None => {
                self.held.insert(home, held);
                Decision::AwaitingDad { home_address: home, start: true }
            }
        }
    }

    /// Creates or updates the binding (§10.3.1), answering with a BA when `acknowledge`.
    #[allow(clippy::too_many_arguments)]
    fn register(
        &mut self,
        m: &InboundMh<'_>,
        home: Ipv6Addr,
        care_of: Ipv6Addr,
        sequence: u16,
        spi: ipsec::Spi,
        granted: u16,
        acknowledge: bool,
        now: Time,
    ) -> Decision {
        let secs = u32::from(granted) * LIFETIME_UNIT_SECS;
        match self.cache.upsert(home, care_of, sequence, spi, secs, now) {
            None => {
                let status = BaStatus::INSUFFICIENT_RESOURCES;
                let reply = ack(m, home, status, sequence, 0);
                Decision::Rejected { reason: Refusal::InsufficientResources, reply }
            }
            Some((up, new)) => {
                let change = match up {
                    Upsert::Created => BindingChange::Created(new),
                    Upsert::Updated(old) => BindingChange::Updated { old, new },
                };
                let reply =
                    acknowledge.then(|| ack(m, home, BaStatus::ACCEPTED, sequence, granted));
                Decision::Accepted { change, reply }
            }
        }
    }
}

/// A Binding Acknowledgement (§6.1.8) to the mobile node: to the care-of address through a
/// type 2 routing header when the BU came with a Home Address option (§9.5.4), else to the
/// source; the Checksum's pseudo-header names the home address (§6.1.1).
fn ack(
    m: &InboundMh<'_>,
    home: Ipv6Addr,
    status: BaStatus,
    sequence: u16,
    lifetime: u16,
) -> Outgoing {
    let ba =
        BindingAck { status, key_management_mobility: false, sequence, lifetime, options: vec![] };
    reply(m, home, Body::BindingAck(ba))
}

fn binding_error(m: &InboundMh<'_>, home: Ipv6Addr) -> Decision {
    let reason = Refusal::UnsupportedMessage;
    let status = reason.be_status().unwrap_or_default();
    let home_address = m.home_address_option.unwrap_or(Ipv6Addr::UNSPECIFIED);
    let be = BindingError { status, home_address, options: vec![] };
    Decision::Rejected { reason, reply: reply(m, home, Body::BindingError(be)) }
}

fn reply(m: &InboundMh<'_>, home: Ipv6Addr, body: Body) -> Outgoing {
    let src = m.dst;
    let (dst, extension) = match m.home_address_option {
        Some(h) if h != m.src => (m.src, Extension::RoutingHeader2(h)),
        _ => (m.src, Extension::None),
    };
    // A BA or BE of at most 24 octets plus no options always fits; emit cannot fail.
    let mh = Message::new(body).to_vec_with_checksum(src, home).unwrap_or_default();
    Outgoing { src, dst, extension, mh }
}

/// The Alternate Care-of Address option's address, if the BU has one (§6.2.5, §9.5.1).
fn alternate_care_of(bu: &BindingUpdate) -> Option<Ipv6Addr> {
    bu.options.iter().find_map(|o| match o {
        MobilityOption::AlternateCareOfAddress(a) => Some(*a),
        _ => None,
    })
}

/// A care-of address must be unicast (§9.5.1): not unspecified, loopback or multicast.
fn is_unicast(a: Ipv6Addr) -> bool {
    !(a.is_unspecified() || a.is_loopback() || a.is_multicast())
}
