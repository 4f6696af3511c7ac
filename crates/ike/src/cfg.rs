//! The Configuration payload in IKE_AUTH (RFC 7296 §2.19, §3.15): what a road warrior asks
//! for (CP(CFG_REQUEST) with INTERNAL_IP4_ADDRESS / INTERNAL_IP6_ADDRESS, and DNS), and what the
//! responder answers from its pools (CP(CFG_REPLY)), or the notify it sends instead (§2.19,
//! §3.15.4; the notify types are §3.10.1's).
//! The pools themselves are in [`crate::pool`].

use crate::pool::Grant;
use crate::sa::take_payload;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use wire::ikev2::{CfgAttribute, CfgType, Cp, KnownAttribute, NotifyType, Payload};

/// What the endpoint decided for an IKE_AUTH request on a connection with pools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressAnswer {
    /// Addresses leased: answer CP(CFG_REPLY) and narrow TSi to them (§2.9).
    Granted(Grant),
    /// A family asked for has no address left: §3.15.4 "If the responder encounters an error
    /// while attempting to assign an IP address to the initiator during the processing of a
    /// Configuration payload, it responds with an INTERNAL_ADDRESS_FAILURE notification. The
    /// IKE SA is still created even if the initial Child SA cannot be created because of this
    /// failure."
    Exhausted,
    /// The connection hands out addresses and the request asked for none: §2.19 "In the case
    /// where the IRAS's configuration requires that CP be used for a given identity IDi, but
    /// IRAC has failed to send a CP(CFG_REQUEST), IRAS MUST fail the request, and terminate
    /// the Child SA creation with a FAILED_CP_REQUIRED error."
    Required,
}

impl AddressAnswer {
    /// The notify that replaces the CHILD SA, when there is one.
    pub fn refusal(&self) -> Option<NotifyType> {
        match self {
            AddressAnswer::Granted(_) => None,
            AddressAnswer::Exhausted => Some(NotifyType::INTERNAL_ADDRESS_FAILURE),
            AddressAnswer::Required => Some(NotifyType::FAILED_CP_REQUIRED),
        }
    }
}

/// The address families (`true`: IPv4) a CP(CFG_REQUEST) among `payloads` asks an address of,
/// in order; `None` when there is no CFG_REQUEST. Malformed attributes are skipped: §3.15.1
/// lets a responder ignore what it does not support.
pub fn requested_families(payloads: &[Payload]) -> Option<Vec<bool>> {
    let cp = payloads.iter().find_map(|p| match p {
        Payload::Cp(cp) if cp.cfg_type == CfgType::CFG_REQUEST => Some(cp),
        _ => None,
    })?;
    let mut fams = Vec::new();
    for a in &cp.attributes {
        let v4 = match a.known() {
            Ok(Some(KnownAttribute::Ip4Address(_))) => true,
            Ok(Some(KnownAttribute::Ip6Address(_))) => false,
            _ => continue,
        };
        if !fams.contains(&v4) {
            fams.push(v4);
        }
    }
    Some(fams)
}

/// The CFG_REPLY for a grant: each address (v4 with no netmask: a road warrior's address is a
/// host, as strongSwan sends it), then the DNS servers.
pub fn reply(grant: &Grant) -> Payload {
    let mut attributes = Vec::new();
    for &(a, len) in &grant.addrs {
        attributes.push(CfgAttribute::from_known(match a {
            IpAddr::V4(a) => KnownAttribute::Ip4Address(Some(a)),
            IpAddr::V6(a) => KnownAttribute::Ip6Address(Some((a, len))),
        }));
    }
    for &d in &grant.dns {
        attributes.push(CfgAttribute::from_known(match d {
            IpAddr::V4(d) => KnownAttribute::Ip4Dns(Some(d)),
            IpAddr::V6(d) => KnownAttribute::Ip6Dns(Some(d)),
        }));
    }
    Payload::Cp(Cp { cfg_type: CfgType::CFG_REPLY, attributes })
}

/// The CFG_REQUEST for `vips` (swanctl's `vips`): an unspecified address asks for any one
/// (a zero-length attribute, §3.15.1), a given one asks for that one; and a DNS server of
/// each family.
pub fn request(vips: &[IpAddr]) -> Payload {
    let mut attributes = Vec::new();
    for &v in vips {
        attributes.push(CfgAttribute::from_known(match v {
            IpAddr::V4(a) => KnownAttribute::Ip4Address((a != Ipv4Addr::UNSPECIFIED).then_some(a)),
            IpAddr::V6(a) => {
                KnownAttribute::Ip6Address((a != Ipv6Addr::UNSPECIFIED).then_some((a, 128)))
            }
        }));
    }
    for &v in vips {
        attributes.push(CfgAttribute::from_known(match v {
            IpAddr::V4(_) => KnownAttribute::Ip4Dns(None),
            IpAddr::V6(_) => KnownAttribute::Ip6Dns(None),
        }));
    }
    Payload::Cp(Cp { cfg_type: CfgType::CFG_REQUEST, attributes })
}

/// What a CP(CFG_REPLY) among `payloads` grants us: addresses (with prefix lengths, 32 for
/// IPv4) and DNS servers. No reply, or none with an address, is an empty grant.
pub fn read_reply(payloads: &[Payload]) -> Grant {
    let mut g = Grant::default();
    let Some(cp) = take_payload!(payloads, Cp) else { return g };
    if cp.cfg_type != CfgType::CFG_REPLY {
        return g;
    }
    for a in &cp.attributes {
        match a.known() {
            Ok(Some(KnownAttribute::Ip4Address(Some(a)))) => g.addrs.push((a.into(), 32)),
            Ok(Some(KnownAttribute::Ip6Address(Some((a, len))))) => g.addrs.push((a.into(), len)),
            Ok(Some(KnownAttribute::Ip4Dns(Some(d)))) => g.dns.push(d.into()),
            Ok(Some(KnownAttribute::Ip6Dns(Some(d)))) => g.dns.push(d.into()),
            _ => {}
        }
    }
    g
}

/// The connection's configuration for the rest of an IKE SA with virtual IPs: the road
/// warrior's side of every CHILD SA is its virtual IPs. As responder, the peer's side of each
/// child policy is narrowed to what we leased it, so a CREATE_CHILD_SA (a new child or a
/// rekey) cannot claim another road warrior's address from the pool (§2.9's narrowing, as for
/// IKE_AUTH's TSi); as initiator, our side is what we were granted.
pub fn restrict(config: &mut crate::config::Config, grant: &Grant, initiator: bool) {
    if grant.addrs.is_empty() {
        return;
    }
    let hosts: Vec<_> =
        grant.addrs.iter().map(|&(a, _)| wire::ikev2::TrafficSelector::host(a)).collect();
    let narrow = |ts: &mut Vec<wire::ikev2::TrafficSelector>| {
        *ts = if initiator { hosts.clone() } else { crate::auth::ts_narrow(&hosts, ts) };
    };
    if initiator {
        narrow(&mut config.local_ts);
        config.more_children.iter_mut().for_each(|c| narrow(&mut c.local_ts));
    } else {
        narrow(&mut config.remote_ts);
        config.more_children.iter_mut().for_each(|c| narrow(&mut c.remote_ts));
    }
}
