//! The generator's packets, built and opened with the same code as the home agent's
//! (`wire::mip6` for the headers, the `ipsec` engine for ESP with real ciphers):
//!
//! - a Binding Update, RFC 3776 §3: `IPv6 (care-of → home agent) | Destination Options (Home
//!   Address option, RFC 6275 §6.3) | ESP (transport, the node's BU SA) | Mobility Header BU
//!   (§6.1.7, A and H set, checksum over the home address, §6.1.1)`. The engine's transport
//!   mode puts ESP after the IPv6 extension headers, so the Destination Options header stays
//!   in front of ESP, as RFC 3776 §3 orders;
//! - a Binding Acknowledgement as the home agent sends it (§9.5.4): `IPv6 (home agent →
//!   care-of) | type 2 routing header (§6.4) | ESP (the node's BA SA) | MH BA (§6.1.8)`, opened
//!   here: ESP verified and decrypted, the BA parsed and matched to its node by SPI.

use super::nodes::{self, Direction, HOME_AGENT};
use ipsec::{DropReason, Engine, PacketBuf, Processed, SaHandle, Time};
use std::net::Ipv6Addr;
use wire::mip6::{
    BaStatus, BindingUpdate, Body, DestinationOptions, IPPROTO_DSTOPTS, IPPROTO_MH, Message,
};

/// Room in front of a packet for ESP's header and IV (transport mode adds only those).
pub const HEADROOM: usize = 64;
/// Largest packet built or opened.
pub const CAPACITY: usize = 512;
/// Hop limit of the Binding Updates.
const HOP_LIMIT: u8 = 64;

/// Why a packet was not a Binding Acknowledgement of ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotABa {
    /// ESP refused it (unknown SPI, integrity, replay, ...).
    Esp(DropReason),
    /// Not one of our nodes' BA SAs.
    UnknownSpi,
    /// No Mobility Header after ESP, or not a BA, or it does not parse.
    NotBa,
}

/// A Binding Acknowledgement opened and matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaSeen {
    /// The mobile node's index.
    pub node: u32,
    /// Status (below 128: accepted, RFC 6275 §6.1.8).
    pub status: BaStatus,
    /// The sequence number it acknowledges.
    pub sequence: u16,
}

/// The plain Binding Update of node `i` with `sequence` and `lifetime_units` (4 s units),
/// before ESP: IPv6 | Destination Options (Home Address) | MH.
pub fn plain_bu(i: u32, sequence: u16, lifetime_units: u16) -> Result<Vec<u8>, wire::WireError> {
    let (home, coa) = (nodes::home_address(i), nodes::care_of_address(i));
    let bu = BindingUpdate {
        sequence,
        acknowledge: true,
        home_registration: true,
        lifetime: lifetime_units,
        ..BindingUpdate::default()
    };
    // §6.1.1: the checksum's pseudo-header carries the home address, the address the upper
    // layer sees once the Home Address option has been processed (§9.3.1).
    let mh = Message::new(Body::BindingUpdate(bu)).to_vec_with_checksum(home, HOME_AGENT)?;
    let dst_opts = DestinationOptions::home_address(IPPROTO_MH, home).to_vec()?;
    let payload = dst_opts.len() + mh.len();
    let mut p = Vec::with_capacity(40 + payload);
    p.extend_from_slice(&[0x60, 0, 0, 0]);
    p.extend_from_slice(&(payload as u16).to_be_bytes());
    p.extend_from_slice(&[IPPROTO_DSTOPTS, HOP_LIMIT]);
    p.extend_from_slice(&coa.octets());
    p.extend_from_slice(&HOME_AGENT.octets());
    p.extend_from_slice(&dst_opts);
    p.extend_from_slice(&mh);
    Ok(p)
}

/// Seals `plain` (from [`plain_bu`]) with the outbound SA `sa` in `buf`; the packet to send is
/// then `buf.as_slice()`.
pub fn seal(
    engine: &mut Engine,
    sa: SaHandle,
    plain: &[u8],
    buf: &mut PacketBuf,
    now: Time,
) -> Result<(), DropReason> {
    buf.load(plain, HEADROOM).map_err(|_| DropReason::Malformed)?;
    engine.protect_with(&[sa], buf, now).map(|_| ())
}

/// Opens `frame` (an IPv6 packet off the link) as a Binding Acknowledgement: ESP with the
/// node's BA SA (found by SPI in `engine`), then the MH after the remaining extension headers.
pub fn open_ba(
    engine: &mut Engine,
    frame: &[u8],
    buf: &mut PacketBuf,
    now: Time,
) -> Result<BaSeen, NotABa> {
    buf.load(frame, HEADROOM).map_err(|_| NotABa::Esp(DropReason::Malformed))?;
    let spi = match engine.inbound(buf, now).map_err(NotABa::Esp)? {
        Processed::Decapsulated { spi, .. } => spi,
        _ => return Err(NotABa::NotBa),
    };
    let node = nodes::index_of(spi, Direction::Ba).ok_or(NotABa::UnknownSpi)?;
    let plain = buf.as_slice();
    let layout = wire::ip::IpLayout::parse(plain).map_err(|_| NotABa::NotBa)?;
    if layout.next_header != IPPROTO_MH {
        return Err(NotABa::NotBa);
    }
    let mh = plain.get(layout.header_len..layout.total_len).ok_or(NotABa::NotBa)?;
    match Message::parse(mh).map_err(|_| NotABa::NotBa)?.body {
        Body::BindingAck(ba) => Ok(BaSeen { node, status: ba.status, sequence: ba.sequence }),
        _ => Err(NotABa::NotBa),
    }
}

/// The home address a plain or sealed BU's Home Address option names (for tests and checks).
pub fn home_address_option(p: &[u8]) -> Option<Ipv6Addr> {
    if p.get(6) != Some(&IPPROTO_DSTOPTS) {
        return None;
    }
    DestinationOptions::parse(p.get(40..)?).ok()?.0.find_home_address()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::mip6gen::nodes::{Suite, sa};
    use mip6::{Decision, HomeAgent, HomeAgentConfig, InboundMh, SaIdentity};
    use wire::mip6::{BindingAck, RoutingHeader2};

    /// A BU built and sealed by the generator is opened by an engine holding the home agent's
    /// side of the SA, parses as the node's packet parser expects (Home Address option in front
    /// of ESP), and is accepted by `mip6::HomeAgent`; a BA sealed the home agent's way opens
    /// in the generator and is matched to the node.
    #[test]
    fn bu_and_ba_round_trip_through_esp_and_the_home_agent() {
        for suite in Suite::ALL {
            let i = 42;
            let now = Time(1);
            let mut mn = Engine::new(crypto::default_provider());
            let bu_out = mn.add_outbound(&sa(i, Direction::Bu, suite), now).unwrap();
            mn.add_inbound(&sa(i, Direction::Ba, suite), now).unwrap();
            let mut ha = Engine::new(crypto::default_provider());
            ha.add_inbound(&sa(i, Direction::Bu, suite), now).unwrap();
            let ba_out = ha.add_outbound(&sa(i, Direction::Ba, suite), now).unwrap();

            let mut buf = PacketBuf::new(CAPACITY, HEADROOM);
            seal(&mut mn, bu_out, &plain_bu(i, 7, 150).unwrap(), &mut buf, now).unwrap();
            let wire_bu = buf.as_slice().to_vec();
            let home = nodes::home_address(i);
            assert_eq!(home_address_option(&wire_bu), Some(home));
            assert_eq!(wire_bu[40], 50, "ESP follows the Destination Options header");

            // The home agent's side: ESP open, then mip6::HomeAgent on the MH.
            let mut hb = PacketBuf::new(CAPACITY, HEADROOM);
            hb.load(&wire_bu, HEADROOM).unwrap();
            let Processed::Decapsulated { spi, .. } = ha.inbound(&mut hb, now).unwrap() else {
                panic!("not decapsulated")
            };
            let plain = hb.as_slice();
            let layout = wire::ip::IpLayout::parse(plain).unwrap();
            assert_eq!(layout.next_header, IPPROTO_MH);
            let mut agent = HomeAgent::new(HomeAgentConfig {
                address: HOME_AGENT,
                home_prefix: "2001:db8:1::".parse().unwrap(),
                home_prefix_len: 64,
                max_lifetime_units: 150,
                capacity: 10,
            });
            let m = InboundMh {
                src: nodes::care_of_address(i),
                dst: HOME_AGENT,
                home_address_option: Some(home),
                sa: Some(SaIdentity { spi, home_address: home }),
                mh: &plain[layout.header_len..],
            };
            assert!(matches!(agent.handle(&m, now), Decision::Accepted { .. }), "{suite:?}");
            assert_eq!(agent.cache().len(), 1);

            // A BA the home agent's way: IPv6 | RH2 | MH, sealed with the BA SA.
            let ba = BindingAck { sequence: 7, lifetime: 150, ..BindingAck::default() };
            let mh =
                Message::new(Body::BindingAck(ba)).to_vec_with_checksum(HOME_AGENT, home).unwrap();
            let rh = RoutingHeader2::new(IPPROTO_MH, home).to_vec().unwrap();
            let mut p = vec![0x60, 0, 0, 0];
            p.extend_from_slice(&((rh.len() + mh.len()) as u16).to_be_bytes());
            p.extend_from_slice(&[wire::mip6::IPPROTO_ROUTING, 64]);
            p.extend_from_slice(&HOME_AGENT.octets());
            p.extend_from_slice(&nodes::care_of_address(i).octets());
            p.extend_from_slice(&rh);
            p.extend_from_slice(&mh);
            seal(&mut ha, ba_out, &p, &mut hb, now).unwrap();
            let wire_ba = hb.as_slice().to_vec();
            let seen = open_ba(&mut mn, &wire_ba, &mut buf, now).unwrap();
            assert_eq!((seen.node, seen.sequence, seen.status.is_accepted()), (i, 7, true));
            // The same BA again is a replay.
            assert_eq!(
                open_ba(&mut mn, &wire_ba, &mut buf, now),
                Err(NotABa::Esp(DropReason::Replayed))
            );
        }
    }
}
