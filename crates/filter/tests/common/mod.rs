//! Shared proptest strategies: rule sets over a few base prefixes, and packets biased to hit
//! those rules (addresses inside their prefixes, ports at and around their range edges).
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use filter::{
    Action, Direction, Endpoint, IpNet, PROTO_ICMP, PROTO_ICMP6, PROTO_TCP, PROTO_UDP, PacketKey,
    PortRange, Rule, RuleSet,
};
use proptest::prelude::*;

const V4_BASES: [u32; 3] = [0x0a00_0000, 0x0a01_0000, 0xc0a8_0100];
const V6_BASES: [u128; 3] = [
    0x2001_0db8_0000_0000_0000_0000_0000_0000,
    0x2001_0db8_0001_0000_0000_0000_0000_0000,
    0xfe80_0000_0000_0000_0000_0000_0000_0000,
];

/// Raw material of one address spec: none / v4 / v6, base, low bits, prefix length choice.
#[derive(Clone, Debug)]
pub struct AddrSeed {
    kind: u8,
    base: usize,
    bits: u32,
    len: u8,
}

fn arb_addr_seed() -> impl Strategy<Value = AddrSeed> {
    (0u8..3, 0usize..3, any::<u32>(), any::<u8>()).prop_map(|(kind, base, bits, len)| AddrSeed {
        kind,
        base,
        bits,
        len,
    })
}

/// Prefix length biased to the interesting ones.
fn pick_len(choice: u8, max: u8) -> u8 {
    let common: &[u8] = if max == 32 {
        &[0, 8, 16, 24, 28, 31, 32, 32]
    } else {
        &[0, 32, 48, 64, 112, 120, 127, 128]
    };
    if choice < 160 { common[usize::from(choice) % common.len()] } else { choice % (max + 1) }
}

fn seed_net(s: &AddrSeed, family_v6: Option<bool>) -> Option<IpNet> {
    let v6 = match (s.kind, family_v6) {
        (0, _) => return None,
        (_, Some(f)) => f,
        (k, None) => k == 2,
    };
    let base = s.base % 3;
    let addr = if v6 {
        IpAddr::V6(Ipv6Addr::from_bits(V6_BASES[base] | u128::from(s.bits & 0xffff)))
    } else {
        IpAddr::V4(Ipv4Addr::from_bits(V4_BASES[base] | (s.bits & 0xffff)))
    };
    let len = pick_len(s.len, if v6 { 128 } else { 32 });
    IpNet::new(addr, len).ok()
}

fn seed_ports(kind: u8, a: u16, b: u16) -> Option<PortRange> {
    match kind % 4 {
        0 => None,
        1 => Some(PortRange::single(a % 1024)),
        2 => {
            let lo = a % 2048;
            PortRange::new(lo, lo.saturating_add(b % 300))
        }
        _ => PortRange::new(a.min(b), a.max(b)),
    }
}

const PROTOS: [u8; 6] = [PROTO_TCP, PROTO_UDP, PROTO_ICMP, PROTO_ICMP6, 50, 6];

/// Raw material of one rule.
type RuleSeed =
    ((bool, u8, bool, u8, bool), (AddrSeed, AddrSeed), (u8, u16, u16, u8, u16, u16), (u8, u8));

fn arb_rule_seed() -> impl Strategy<Value = RuleSeed> {
    (
        (any::<bool>(), 0u8..3, any::<bool>(), 0u8..8, any::<bool>()),
        (arb_addr_seed(), arb_addr_seed()),
        (any::<u8>(), any::<u16>(), any::<u16>(), any::<u8>(), any::<u16>(), any::<u16>()),
        (0u8..4, any::<u8>()),
    )
}

/// Build a rule. With `valid`, the result obeys the parser's constraints (ports only with
/// tcp/udp, icmp-type only with icmp, one family, keep state only on pass).
fn build_rule(seed: &RuleSeed, valid: bool) -> Rule {
    let ((pass, dir, quick, proto, keep), (from, to), (spk, sa, sb, dpk, da, db), (icmpk, icmp)) =
        seed;
    let action = if *pass { Action::Pass } else { Action::Block };
    let proto = (*proto < 6).then(|| PROTOS[usize::from(*proto)]);
    let from_net = seed_net(from, None);
    let fam = if valid { from_net.map(|n| n.addr().is_ipv6()) } else { None };
    let to_net = seed_net(to, fam);
    let ports_ok = !valid || matches!(proto, Some(PROTO_TCP | PROTO_UDP));
    let icmp_ok = !valid || matches!(proto, Some(PROTO_ICMP | PROTO_ICMP6));
    Rule {
        action,
        dir: match dir {
            0 => None,
            1 => Some(Direction::In),
            _ => Some(Direction::Out),
        },
        quick: *quick,
        proto,
        from: Endpoint {
            net: from_net,
            ports: if ports_ok { seed_ports(*spk, *sa, *sb) } else { None },
        },
        to: Endpoint {
            net: to_net,
            ports: if ports_ok { seed_ports(*dpk, *da, *db) } else { None },
        },
        icmp_type: (icmp_ok && *icmpk == 1).then_some(*icmp % 4 + 7),
        keep_state: *keep && (!valid || *pass),
    }
}

/// Rule sets of up to `max` rules; `valid` as in `build_rule`.
pub fn arb_ruleset(max: usize, valid: bool) -> impl Strategy<Value = RuleSet> {
    (prop::collection::vec(arb_rule_seed(), 0..max), any::<bool>()).prop_map(
        move |(seeds, block)| RuleSet {
            rules: seeds.iter().map(|s| build_rule(s, valid)).collect(),
            default_action: if block { Action::Block } else { Action::Pass },
        },
    )
}

/// Raw material of one packet.
pub type PacketSeed = ((u8, u16, bool, u8), (u128, u128, u8), (u16, u16, u8, u8), u8);

pub fn arb_packet_seed() -> impl Strategy<Value = PacketSeed> {
    (
        (0u8..10, any::<u16>(), any::<bool>(), 0u8..8),
        (any::<u128>(), any::<u128>(), 0u8..24),
        (any::<u16>(), any::<u16>(), any::<u8>(), any::<u8>()),
        0u8..8,
    )
}

fn addr_in(net: Option<IpNet>, bits: u128, host_bits: u8, v6: bool, base: usize) -> IpAddr {
    match net {
        Some(n) => match n.addr() {
            IpAddr::V4(a) => {
                let host = if n.prefix_len() == 0 {
                    u32::MAX
                } else {
                    !(u32::MAX << (32 - n.prefix_len()))
                };
                // Inside the prefix; misses come from unaimed packets and perturbations.
                let noise = bits as u32 & host & low_mask32(host_bits);
                IpAddr::V4(Ipv4Addr::from_bits(a.to_bits() | noise))
            }
            IpAddr::V6(a) => {
                let host = if n.prefix_len() == 0 {
                    u128::MAX
                } else {
                    !(u128::MAX << (128 - n.prefix_len()))
                };
                let noise = bits & host & low_mask128(host_bits);
                IpAddr::V6(Ipv6Addr::from_bits(a.to_bits() | noise))
            }
        },
        None if v6 => {
            IpAddr::V6(Ipv6Addr::from_bits(V6_BASES[base % 3] | (bits & low_mask128(host_bits))))
        }
        None => IpAddr::V4(Ipv4Addr::from_bits(
            V4_BASES[base % 3] | (bits as u32 & low_mask32(host_bits)),
        )),
    }
}

fn low_mask32(bits: u8) -> u32 {
    if bits >= 32 { u32::MAX } else { (1u32 << bits) - 1 }
}

fn low_mask128(bits: u8) -> u128 {
    if bits >= 128 { u128::MAX } else { (1u128 << bits) - 1 }
}

fn port_near(range: Option<PortRange>, raw: u16, mode: u8) -> u16 {
    let Some(r) = range else { return raw };
    match mode % 6 {
        0 => r.lo(),
        1 => r.hi(),
        2 => r.lo().wrapping_sub(1),
        3 => r.hi().wrapping_add(1),
        4 => r.lo() + raw % (r.hi() - r.lo()).saturating_add(1).max(1),
        _ => raw,
    }
}

/// A packet from its seed: usually aimed at one of the rules (and then perturbed in one
/// field), otherwise random over the same base prefixes.
pub fn build_packet(seed: &PacketSeed, rules: &[Rule]) -> PacketKey {
    let ((mode, pick, out, proto_pick), (sbits, dbits, host_bits), (sp, dp, spm, dpm), perturb) =
        *seed;
    let dir = if out { Direction::Out } else { Direction::In };
    let random_proto = PROTOS[usize::from(proto_pick) % PROTOS.len()];
    let v6 = pick % 3 == 0;
    let aimed = if rules.is_empty() || mode >= 7 {
        None
    } else {
        rules.get(usize::from(pick) % rules.len())
    };
    let mut key = match aimed {
        Some(r) => {
            let fam = r.from.net.or(r.to.net).map_or(v6, |n| n.addr().is_ipv6());
            let proto = r.proto.unwrap_or(random_proto);
            PacketKey {
                dir: r.dir.unwrap_or(dir),
                src: addr_in(r.from.net, sbits, host_bits, fam, usize::from(spm)),
                dst: addr_in(r.to.net, dbits, host_bits, fam, usize::from(dpm)),
                proto,
                src_port: port_near(r.from.ports, sp, spm),
                dst_port: port_near(r.to.ports, dp, dpm),
                icmp_type: if matches!(proto, PROTO_ICMP | PROTO_ICMP6) {
                    Some(r.icmp_type.unwrap_or(spm % 4 + 7))
                } else {
                    None
                },
            }
        }
        None => PacketKey {
            dir,
            src: addr_in(None, sbits, host_bits, v6, usize::from(spm)),
            dst: addr_in(None, dbits, host_bits, v6, usize::from(dpm)),
            proto: random_proto,
            src_port: sp % 2100,
            dst_port: dp % 2100,
            icmp_type: matches!(random_proto, PROTO_ICMP | PROTO_ICMP6).then_some(spm % 4 + 7),
        },
    };
    // Perturb one field so near misses are tried too.
    match perturb {
        0 => key.dir = key.dir.reverse(),
        1 => key.proto = key.proto.wrapping_add(1),
        2 => key.icmp_type = key.icmp_type.map(|t| t.wrapping_add(1)),
        _ => {}
    }
    key
}
