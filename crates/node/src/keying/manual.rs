//! Manual keying (RFC 4301 §4.5): the SAs and policies of the node config, turned into one
//! engine per lane and half. Policies name lane 0's SAs; in lane k each stands for its
//! counterpart (`crate::config::sa::counterpart`, RFC 9611 per-resource SAs).

use crate::config::sa::{Direction, counterpart};
use crate::config::{NodeConfig, PolicyAction, Transport};
use crate::datapath::counters::InboundAddrs;
use crate::error::NodeError;
use ipsec::spd::{Action, Selector, SpdEntry};
use ipsec::{Engine, SecurityAssociation, Time};
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
    let mut engine = Engine::new(crypto::default_provider());
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
                in_addrs.insert(key, (s.params.src, s.params.dst));
            }
        }
    }
    for p in c.policies.iter().filter(|_| out) {
        let action = match &p.action {
            PolicyAction::Bypass => Action::Bypass,
            PolicyAction::Discard => Action::Discard,
            PolicyAction::Protect(v) => Action::Protect(
                v.iter().filter_map(|&i| here(i).and_then(|j| handles[j]).map(|h| h.0)).collect(),
            ),
        };
        engine
            .add_policy(SpdEntry { selector: p.selector.clone(), action })
            .map_err(|source| NodeError::Engine { file: file.clone(), line: p.line, source })?;
    }
    for p in c.policies.iter().filter(|_| inb) {
        let action = match &p.action {
            PolicyAction::Bypass => Action::Bypass,
            PolicyAction::Discard => Action::Discard,
            PolicyAction::Protect(_) => {
                let hs: Vec<usize> = if p.in_sas.is_empty() {
                    in_handles.iter().flatten().copied().collect()
                } else {
                    p.in_sas.iter().filter_map(|&i| here(i).and_then(|j| in_handles[j])).collect()
                };
                if hs.is_empty() {
                    // No inbound SA: nothing can arrive protected for this entry anyway.
                    continue;
                }
                Action::Protect(hs)
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
            .add_inbound_policy(SpdEntry { selector: mirrored, action })
            .map_err(|source| NodeError::Engine { file: file.clone(), line: p.line, source })?;
    }
    Ok((engine, in_addrs))
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
    let ip = if c.transport.local_ip().is_ipv4() { 20 } else { 40 };
    let udp = if matches!(c.transport, Transport::Udp { .. }) { 8 } else { 0 };
    bundle + ip + udp
}

#[cfg(test)]
#[path = "spd_tests.rs"]
mod spd_tests;
