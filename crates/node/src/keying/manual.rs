//! Manual keying (RFC 4301 §4.5): the SAs and policies of the node config, turned into one
//! engine per lane and half. Policies name lane 0's SAs; in lane k each stands for its
//! counterpart (`crate::config::sa::counterpart`, RFC 9611 per-resource SAs).

use crate::config::sa::{Direction, counterpart};
use crate::config::{NodeConfig, PolicyAction, PolicyConf, Transport};
use crate::datapath::mailbox::{self, InKey, InboundPeer, PolicySpec};
use crate::error::NodeError;
use crate::keying::plane::{ControlPlane, SaSpec, in_key_of, out_key_of, record};
use ipsec::spd::{Action, Selector, SpdEntry};
use ipsec::spd_table::DEFAULT_PRIORITY;
use ipsec::{Engine, Mode, PolicyId, SaParams, SecurityAssociation, Time};
use std::net::SocketAddr;

/// Inbound SAs' header addresses and peer endpoints, by (SPI, protocol).
pub type InboundAddrs = HashMap<InKey, InboundPeer>;
use std::collections::HashMap;

/// Builds the engine from a checked config. Also returns the inbound SAs' addresses.
pub fn build_engine(c: &NodeConfig, now: Time) -> Result<(Engine, InboundAddrs), NodeError> {
    build_engine_for(c, now, true, true, 0)
}

/// Builds an engine holding only the outbound SAs and the SPD (`out`), only the inbound SAs and
/// the inbound SPD (`inb`), or both: each worker half gets the SAs it alone uses.
///
/// The inbound SPD mirrors the configured policies (source and destination swapped, RFC 4301
/// §4.4.1: a policy for traffic to a peer also names the traffic from it): after ESP/AH is
/// removed, the inner packet must match a mirrored protect entry that lists the SA it came in
/// on (its `in-sas`, or any inbound SA), else it is dropped as `inbound_policy_mismatch`
/// (RFC 4301 §5.2 step 4): a peer cannot inject inner addresses its policy does not cover.
/// A config without policies checks nothing inbound.
pub fn build_engine_for(
    c: &NodeConfig,
    now: Time,
    out: bool,
    inb: bool,
    lane: usize,
) -> Result<(Engine, InboundAddrs), NodeError> {
    let file = c.file.display().to_string();
    let mut engine = Engine::new(crate::datapath::cipher::provider());
    let mut handles = vec![None; c.sas.len()];
    let mut in_handles = vec![None; c.sas.len()];
    let mut in_addrs = HashMap::new();
    // Policies name lane 0's SAs; in lane k each stands for its counterpart (`lanes`).
    let here = |i: usize| counterpart(&c.sas, i, lane);
    for (i, s) in c.sas.iter().enumerate().filter(|(_, s)| s.lane == lane) {
        let err = |source| NodeError::Engine { file: file.clone(), line: s.line, source };
        match s.direction {
            Direction::Out if !out => {}
            Direction::In if !inb => {}
            Direction::Out => handles[i] = Some(engine.add_outbound(&s.params, now).map_err(err)?),
            Direction::In => {
                in_handles[i] = Some(engine.add_inbound(&s.params, now).map_err(err)?.0);
                let key = (s.params.spi.0, s.params.protocol.number());
                let endpoint = s.peer.or_else(|| inbound_endpoint(c, s));
                in_addrs
                    .insert(key, InboundPeer { src: s.params.src, dst: s.params.dst, endpoint });
            }
        }
    }
    for (id, p) in policy_ids(c).filter(|_| out) {
        let action = match &p.action {
            PolicyAction::Bypass => Action::Bypass,
            PolicyAction::Discard => Action::Discard,
            PolicyAction::Protect(v) => Action::Protect(
                v.iter().filter_map(|&i| here(i).and_then(|j| handles[j]).map(|h| h.0)).collect(),
            ),
        };
        engine
            .set_policy(id, DEFAULT_PRIORITY, SpdEntry { selector: p.selector.clone(), action })
            .map_err(|source| NodeError::Engine { file: file.clone(), line: p.line, source })?;
    }
    for (id, p) in policy_ids(c).filter(|_| inb) {
        let action = match &p.action {
            PolicyAction::Bypass => Action::Bypass,
            PolicyAction::Discard => Action::Discard,
            // No `in-sas`: any inbound SA, also those the control plane installs later.
            PolicyAction::Protect(_) if p.in_sas.is_empty() => Action::Protect(vec![]),
            PolicyAction::Protect(_) => {
                let hs: Vec<usize> =
                    p.in_sas.iter().filter_map(|&i| here(i).and_then(|j| in_handles[j])).collect();
                // None of its SAs here: nothing may arrive for this entry.
                if hs.is_empty() { Action::Discard } else { Action::Protect(hs) }
            }
        };
        let sel = &p.selector;
        let mirrored = Selector {
            src: sel.dst,
            dst: sel.src,
            proto: sel.proto,
            src_ports: sel.dst_ports,
            dst_ports: sel.src_ports,
        };
        engine
            .set_inbound_policy(id, DEFAULT_PRIORITY, SpdEntry { selector: mirrored, action })
            .map_err(|source| NodeError::Engine { file: file.clone(), line: p.line, source })?;
    }
    Ok((engine, in_addrs))
}

/// The ids of the config's policies: their place in the file, from 1 (what `hipsec policy
/// list` shows and `hipsec policy del` takes).
pub fn policy_ids(c: &NodeConfig) -> impl Iterator<Item = (PolicyId, &PolicyConf)> {
    c.policies.iter().enumerate().map(|(i, p)| (i as PolicyId + 1, p))
}

/// Where an SA's peer sends from or receives at when the SA does not say (`peer`): the
/// `[network] peer` if there is one, else, for a tunnel-mode SA over UDP, the SA's outer
/// address on the carrier's port. `None` over raw IP (the IP header names the peer).
pub fn default_endpoint(c: &NodeConfig, p: &SaParams, dir: Direction) -> Option<SocketAddr> {
    let Transport::Udp { local, peer } = c.transport else { return None };
    if let Some(peer) = peer {
        return Some(peer);
    }
    let addr = if dir == Direction::Out { p.dst } else { p.src };
    (p.mode == Mode::Tunnel).then_some(SocketAddr::new(addr, local.port()))
}

/// ESP header (8) + CBC IV (16) + padding and trailer (at most 15 + 2) + ICV (32).
pub const MAX_ESP_OVERHEAD: usize = 8 + 16 + 17 + 32;

/// Where an inbound SA's packets are expected from. The peer's lane k (k ≥ 1) sends from its
/// own port (`crate::datapath::lanes`), not the one we send to: those SAs learn their peer from
/// the first authenticated packet instead of taking it as a NAT rebinding.
pub fn inbound_endpoint(c: &NodeConfig, s: &crate::config::sa::SaConf) -> Option<SocketAddr> {
    if c.interface.queues > 1 && s.lane > 0 {
        return None;
    }
    default_endpoint(c, &s.params, Direction::In)
}

/// Bytes the largest protect bundle adds on the wire: per SA its ESP/AH overhead without the
/// tunnel header (the carrier's own IP header replaces it), plus that IP header and UDP.
pub fn wire_overhead(c: &NodeConfig) -> usize {
    let provider = crypto::default_provider();
    let sa_overhead = |i: usize| {
        let p = &c.sas[i].params;
        SecurityAssociation::new(p, provider, Time(0)).map_or(0, |sa| sa.overhead_without_outer())
    };
    let bundle = c
        .policies
        .iter()
        .filter_map(|p| match &p.action {
            PolicyAction::Protect(v) => Some(v.iter().map(|&i| sa_overhead(i)).sum::<usize>()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    // A node started without protected traffic gets its SAs at run time: leave room for the
    // largest ESP overhead any suite has (tunnel mode, AES-CBC with HMAC-SHA-512-256).
    let bundle = if bundle == 0 { MAX_ESP_OVERHEAD } else { bundle };
    let ip = if c.transport.local_ip().is_ipv4() { 20 } else { 40 };
    let udp = if matches!(c.transport, Transport::Udp { .. }) { 8 } else { 0 };
    bundle + ip + udp
}

#[cfg(test)]
#[path = "spd_tests.rs"]
mod spd_tests;

/// What the control plane records of the config's SAs and policies at start (no keys), so
/// that requests can name them: SAs by key, policies by their place in the file.
pub fn adopt(c: &NodeConfig, plane: &mut ControlPlane) {
    let mut ins = Vec::new();
    let mut outs = Vec::new();
    for s in &c.sas {
        let out = s.direction == Direction::Out;
        let endpoint = match s.direction {
            Direction::Out => s.peer.or_else(|| default_endpoint(c, &s.params, s.direction)),
            Direction::In => s.peer.or_else(|| inbound_endpoint(c, s)),
        };
        let spec = SaSpec {
            params: s.params.clone(),
            lane: s.lane,
            endpoint,
            beet: s.beet,
            raw_ip: false,
            name: s.name.clone(),
        };
        let rec = record(&spec);
        if out {
            outs.push((out_key_of(&s.params), rec));
        } else {
            ins.push((in_key_of(&s.params), rec));
        }
    }
    let policies = policy_ids(c)
        .map(|(id, p)| {
            let action = match &p.action {
                PolicyAction::Bypass => mailbox::PolicyAction::Bypass,
                PolicyAction::Discard => mailbox::PolicyAction::Discard,
                PolicyAction::Protect(v) => mailbox::PolicyAction::Protect(
                    v.iter().map(|&i| out_key_of(&c.sas[i].params)).collect(),
                ),
            };
            let in_sas = p.in_sas.iter().map(|&i| in_key_of(&c.sas[i].params)).collect();
            let spec = PolicySpec {
                selector: p.selector.clone(),
                action,
                in_sas,
                priority: DEFAULT_PRIORITY,
            };
            (id, spec)
        })
        .collect();
    plane.adopt(ins, outs, policies);
}
