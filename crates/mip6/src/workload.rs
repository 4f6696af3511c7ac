//! A deterministic Binding Update workload for measuring the home agent, for `hipsec bench`
//! and the lab: `n` mobile nodes on the home prefix `2001:db8:1::/64`, each with its own SA and
//! care-of address, registered once; then refreshes or moves of any of them. Nothing here reads
//! a clock: the caller times [`Workload::apply`] (see `examples/cache_update_cost.rs`), so the
//! cost of an update at 1,000 entries can be set beside the cost at 1,000,000.

use std::net::Ipv6Addr;

use ipsec::{Spi, Time};
use wire::mip6::{BindingUpdate, Body, Message, MobilityOption};

use crate::home_agent::{Decision, HomeAgent, HomeAgentConfig, InboundMh};
use crate::refusal::SaIdentity;

/// The home agent's address in the workload.
pub const HOME_AGENT: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);

/// A Binding Update ready to hand to [`HomeAgent::handle`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedBu {
    /// Source (care-of) address.
    pub src: Ipv6Addr,
    /// The Home Address option's address.
    pub home_address: Ipv6Addr,
    /// The SA it arrives in.
    pub sa: SaIdentity,
    /// The Mobility Header, checksum filled.
    pub mh: Vec<u8>,
}

/// Mobile node `i`'s home address.
pub fn home_address(i: u32) -> Ipv6Addr {
    Ipv6Addr::from((u128::from(0x2001_0db8_0001_0000u64) << 64) | (u128::from(i) + 0x100))
}

/// Mobile node `i`'s care-of address in generation `g` (a move changes `g`).
pub fn care_of_address(i: u32, g: u16) -> Ipv6Addr {
    Ipv6Addr::from(
        (u128::from(0x2001_0db8_0002_0000u64 | u64::from(g)) << 64) | (u128::from(i) + 1),
    )
}

/// A home-registration BU from node `i` at care-of generation `g` (H and A set, lifetime
/// `lifetime_units`), protected by node `i`'s SA (SPI 0x1000 + i).
pub fn binding_update(i: u32, g: u16, sequence: u16, lifetime_units: u16) -> PreparedBu {
    let home = home_address(i);
    let bu = BindingUpdate {
        sequence,
        acknowledge: true,
        home_registration: true,
        lifetime: lifetime_units,
        options: vec![MobilityOption::AlternateCareOfAddress(care_of_address(i, g))],
        ..BindingUpdate::default()
    };
    let mh = Message::new(Body::BindingUpdate(bu))
        .to_vec_with_checksum(home, HOME_AGENT)
        .unwrap_or_default();
    let sa = SaIdentity { spi: Spi(0x1000u32.wrapping_add(i)), home_address: home };
    PreparedBu { src: care_of_address(i, g), home_address: home, sa, mh }
}

/// A home agent with `entries` registered mobile nodes and the sequence number each used.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The home agent.
    pub home_agent: HomeAgent,
    /// Number of mobile nodes registered.
    pub entries: u32,
    /// Each node's last sequence number (and care-of generation).
    sequences: Vec<u16>,
}

impl Workload {
    /// Registers `entries` mobile nodes at time `now` (lifetime 600 s, cap 3600 s).
    pub fn new(entries: u32, now: Time) -> Workload {
        let config = HomeAgentConfig {
            address: HOME_AGENT,
            home_prefix: Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0),
            home_prefix_len: 64,
            max_lifetime_units: 900,
            capacity: entries as usize,
        };
        let mut home_agent = HomeAgent::new(config);
        home_agent.reserve(entries as usize);
        let mut w = Workload { home_agent, entries, sequences: vec![0; entries as usize] };
        for i in 0..entries {
            let bu = binding_update(i, 0, 0, 150);
            w.apply(&bu, now);
        }
        w
    }

    /// `count` BUs that each move a node (spread over all nodes by a fixed stride) to the
    /// next care-of generation with that node's next sequence number, so every one is accepted;
    /// prepare them outside the timing.
    pub fn prepare_updates(&mut self, count: u32) -> Vec<PreparedBu> {
        let n = self.entries.max(1);
        (0..count)
            .map(|k| {
                let i = (u64::from(k) * 2_654_435_761 % u64::from(n)) as u32;
                let seq = self.sequences.get_mut(i as usize).map_or(1, |s| {
                    *s = s.wrapping_add(1);
                    *s
                });
                binding_update(i, seq, seq, 150)
            })
            .collect()
    }

    /// Hands one prepared BU to the home agent; true if it was accepted.
    pub fn apply(&mut self, bu: &PreparedBu, now: Time) -> bool {
        matches!(self.home_agent.handle(&inbound(bu), now), Decision::Accepted { .. })
    }

    /// Hands a batch of prepared BUs to [`HomeAgent::handle_batch`]; returns how many were
    /// accepted.
    pub fn apply_batch(&mut self, bus: &[PreparedBu], now: Time) -> usize {
        let batch: Vec<InboundMh<'_>> = bus.iter().map(inbound).collect();
        let decisions = self.home_agent.handle_batch(&batch, now);
        decisions.iter().filter(|d| matches!(d, Decision::Accepted { .. })).count()
    }
}

fn inbound(bu: &PreparedBu) -> InboundMh<'_> {
    InboundMh {
        src: bu.src,
        dst: HOME_AGENT,
        home_address_option: Some(bu.home_address),
        sa: Some(bu.sa),
        mh: &bu.mh,
    }
}
