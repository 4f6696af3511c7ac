//! From a negotiated CHILD SA (`ike::ChildSaKeys`) to what the control plane installs: the
//! inbound and outbound ESP SAs (RFC 7296 §2.17 keys, §3.3 suite) and the SPD entries of its
//! traffic selectors (RFC 4301 §4.4.1; IKEv2 selectors are address *ranges*, §3.13.1, which
//! become the smallest set of prefixes covering each range exactly).

use crate::config::connection::ChildConf;
use crate::datapath::mailbox::{InKey, OutKey, PolicyAction, PolicySpec};
use crate::keying::plane::SaSpec;
use ike::ChildSaKeys;
use ipsec::spd::{Prefix, Selector};
use ipsec::{Lifetime, Mode, Protocol, SaParams, Spi};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use wire::ikev2::TrafficSelector;

/// Priority of IKE-made policies: after the config's (which count up from 0) and before
/// catch-alls an operator adds with a large number.
pub const IKE_POLICY_PRIORITY: u32 = 1_000;

/// The two SAs of one CHILD SA.
#[derive(Debug)]
pub struct ChildSpecs {
    /// Ours to receive on.
    pub inbound: SaSpec,
    /// Ours to send on.
    pub outbound: SaSpec,
}

/// Builds the SA pair. `local`: our outer address; `peer`: the peer's (and, for ESP in UDP,
/// its port); `raw_ip`: ESP goes as IP protocol 50, not in UDP. On a node with `lanes` > 1 the
/// inbound SA goes to the lane its SPI steers to (SPI mod lanes, `crate::datapath::lanes`) and
/// the outbound SA to every lane (`crate::keying::plane::EVERY_LANE`): any TUN queue may read
/// the child's traffic.
pub fn child_specs(
    k: &ChildSaKeys,
    c: &ChildConf,
    (local, peer, raw_ip): (IpAddr, SocketAddr, bool),
    (name, lanes): (&str, usize),
) -> ChildSpecs {
    let (in_lane, out_lane) = if lanes > 1 {
        (k.spi_in as usize % lanes, crate::keying::plane::EVERY_LANE)
    } else {
        (0, 0)
    };
    let remote = peer.ip();
    let mode = match k.mode {
        ike::Mode::Tunnel => Mode::Tunnel,
        ike::Mode::Transport => Mode::Transport,
    };
    // RFC 4301 §4.4.2.1: the soft limit asks the key manager to rekey; the hard one stops the
    // SA. The IKE driver rekeys on its own timer, so the engine's hard limit is the backstop.
    let hard = Lifetime { bytes: None, packets: None, seconds: Some(c.life_time.as_secs().max(1)) };
    let params = |spi: u32, src, dst, enc: &[u8], auth: &[u8]| SaParams {
        spi: Spi(spi),
        protocol: Protocol::Esp(k.suite.esp),
        mode,
        src,
        dst,
        enc_key: zeroize::Zeroizing::new(enc.to_vec()),
        auth_key: zeroize::Zeroizing::new(auth.to_vec()),
        esn: k.suite.esn,
        replay_window: crate::config::sa::DEFAULT_REPLAY_WINDOW,
        soft: Lifetime::default(),
        hard,
    };
    ChildSpecs {
        inbound: SaSpec {
            params: params(k.spi_in, remote, local, &k.enc_key_in, &k.auth_key_in),
            lane: in_lane,
            endpoint: Some(peer),
            beet: false,
            raw_ip,
            name: Some(format!("{name}-in")),
        },
        outbound: SaSpec {
            params: params(k.spi_out, local, remote, &k.enc_key_out, &k.auth_key_out),
            lane: out_lane,
            endpoint: Some(peer),
            beet: false,
            raw_ip,
            name: Some(format!("{name}-out")),
        },
    }
}

/// Priority of trap policies (`start_action = trap`): below the CHILD SA's own entries for
/// the same traffic, so they catch it only while no CHILD SA is up.
pub const TRAP_PRIORITY: u32 = 2_000;

/// The SPD entries of a CHILD SA: one per pair of (local, remote) prefixes, protecting with
/// `out` and admitting `inb` the other way.
pub fn child_policies(k: &ChildSaKeys, out: OutKey, inb: InKey) -> Vec<PolicySpec> {
    policies(&k.local_ts, &k.remote_ts, out, Some(inb), IKE_POLICY_PRIORITY)
}

/// A trap (RFC 4301 §4.4.1.1, swanctl's `start_action = trap`): the configured selectors
/// protected by an SA that does not exist, so their packets are dropped (never sent in
/// clear) and raise an acquire, which starts the exchange.
pub fn trap_policies(
    local: &[TrafficSelector],
    remote: &[TrafficSelector],
    peer: IpAddr,
) -> Vec<PolicySpec> {
    // SPI 0 is reserved (RFC 4303 §2.1): no SA ever has it.
    let none = OutKey { spi: 0, proto: 50, dst: peer };
    policies(local, remote, none, None, TRAP_PRIORITY)
}

fn policies(
    local: &[TrafficSelector],
    remote: &[TrafficSelector],
    out: OutKey,
    inb: Option<InKey>,
    priority: u32,
) -> Vec<PolicySpec> {
    let mut v = Vec::new();
    for l in local {
        for r in remote {
            if l.start_addr.is_ipv4() != r.start_addr.is_ipv4() {
                continue;
            }
            // A selector's protocol and ports apply to both ends (RFC 4301 §4.4.1.1); when the
            // two sides name different protocols nothing matches both, so skip the pair.
            let proto = match (l.ip_protocol, r.ip_protocol) {
                (0, p) | (p, 0) => p,
                (a, b) if a == b => a,
                _ => continue,
            };
            for sp in prefixes(l.start_addr, l.end_addr) {
                for dp in prefixes(r.start_addr, r.end_addr) {
                    v.push(PolicySpec {
                        selector: Selector {
                            src: sp,
                            dst: dp,
                            proto: (proto != 0).then_some(proto),
                            src_ports: ports(l),
                            dst_ports: ports(r),
                        },
                        action: PolicyAction::Protect(vec![out]),
                        in_sas: inb.into_iter().collect(),
                        priority,
                    });
                }
            }
        }
    }
    v
}

fn ports(t: &TrafficSelector) -> Option<(u16, u16)> {
    (t.start_port != 0 || t.end_port != u16::MAX).then_some((t.start_port, t.end_port))
}

/// The fewest prefixes whose union is exactly `[start, end]` (empty if the range runs
/// backwards or mixes families).
pub fn prefixes(start: IpAddr, end: IpAddr) -> Vec<Prefix> {
    match (start, end) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            split(u32::from(a) as u128, u32::from(b) as u128, 32, |x| {
                IpAddr::V4(Ipv4Addr::from(x as u32))
            })
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            split(u128::from(a), u128::from(b), 128, |x| IpAddr::V6(Ipv6Addr::from(x)))
        }
        _ => Vec::new(),
    }
}

fn split(lo: u128, hi: u128, bits: u32, addr: impl Fn(u128) -> IpAddr) -> Vec<Prefix> {
    if lo > hi {
        return Vec::new();
    }
    let full = if bits == 128 { u128::MAX } else { (1u128 << bits) - 1 };
    if lo == 0 && hi == full {
        return vec![Prefix { addr: addr(0), len: 0 }];
    }
    let mut out = Vec::new();
    let mut lo = lo;
    loop {
        // The largest aligned block starting at `lo` that ends at or before `hi` (the whole
        // space was handled above, so a block is at most half of it).
        let mut size = lo.trailing_zeros().min(bits - 1);
        while size > 0 && lo + ((1u128 << size) - 1) > hi {
            size -= 1;
        }
        out.push(Prefix { addr: addr(lo), len: (bits - size) as u8 });
        let last = lo + ((1u128 << size) - 1);
        // 256 prefixes cover any range a peer sensibly proposes; stop a pathological one there.
        if last >= hi || out.len() >= 256 {
            return out;
        }
        lo = last + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Prefix {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_become_exact_prefixes() {
        let a = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(prefixes(a("10.1.0.0"), a("10.1.255.255")), vec![p("10.1.0.0/16")]);
        assert_eq!(prefixes(a("0.0.0.0"), a("255.255.255.255")), vec![p("0.0.0.0/0")]);
        assert_eq!(prefixes(a("10.0.0.5"), a("10.0.0.5")), vec![p("10.0.0.5/32")]);
        assert_eq!(
            prefixes(a("10.0.0.1"), a("10.0.0.6")),
            vec![p("10.0.0.1/32"), p("10.0.0.2/31"), p("10.0.0.4/31"), p("10.0.0.6/32")]
        );
        assert_eq!(
            prefixes(a("::"), a("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")),
            vec![p("::/0")]
        );
        assert_eq!(prefixes(a("2001:db8::"), a("2001:db8::ffff")), vec![p("2001:db8::/112")]);
        assert!(prefixes(a("10.0.0.9"), a("10.0.0.1")).is_empty());
        assert!(prefixes(a("10.0.0.1"), a("::1")).is_empty());
    }
}
