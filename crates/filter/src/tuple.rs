//! Tuple-space search (Srinivasan et al., SIGCOMM '99): rules grouped by mask shape, one hash
//! table per shape, with IPFilter priorities so one max over the shapes gives the verdict.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::hash::{SeededState, addr_bits, digest};
use crate::key::PacketKey;
use crate::ports::{blocks, port_mask};
use crate::rule::{Direction, IpNet, Rule, v4_mask, v6_mask};

/// Rules beyond this count cannot be given distinct priorities in a `u32`.
pub const MAX_RULES: usize = (u32::MAX / 2 - 1) as usize;

/// A rule set that cannot be compiled within the configured bounds.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The rules fall into more distinct mask shapes than allowed; each shape costs one hash
    /// probe per packet, so the cap bounds the per-packet cost.
    #[error("rules need {shapes} mask shapes, the limit (max_shapes) is {limit}")]
    TooManyShapes {
        /// Distinct shapes the rule set needs.
        shapes: usize,
        /// `ClassifierConfig::max_shapes`.
        limit: usize,
    },
    /// Port-range expansion would create more table entries than allowed.
    #[error("rules expand to {entries} table entries, the limit (max_entries) is {limit}")]
    TooManyEntries {
        /// Entries the rule set would need.
        entries: usize,
        /// `ClassifierConfig::max_entries`.
        limit: usize,
    },
    /// More rules than priorities fit in 32 bits.
    #[error("{rules} rules, the limit is {limit}")]
    TooManyRules {
        /// Rules given.
        rules: usize,
        /// [`MAX_RULES`].
        limit: usize,
    },
}

/// Bit layout of the small fields packed into one `u64` of a [`MaskedKey`].
const SPORT_SHIFT: u32 = 0;
const DPORT_SHIFT: u32 = 16;
const ICMP_SHIFT: u32 = 32; // 9 bits: 0x100 | type, or 0 for none
const PROTO_SHIFT: u32 = 41;
const DIR_SHIFT: u32 = 49; // 2 bits: 1 = in, 2 = out
const FAM_SHIFT: u32 = 51; // 4 bits: src family tag | dst family tag << 2

/// A key with the shape's mask applied: what the per-shape hash tables are keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MaskedKey {
    src: u128,
    dst: u128,
    small: u64,
}

impl Hash for MaskedKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(digest(self.src, self.dst, self.small));
    }
}

/// The packet's fields laid out like a [`MaskedKey`], computed once per lookup.
#[derive(Clone, Copy, Debug)]
struct Prepared {
    src: u128,
    dst: u128,
    small: u64,
    fams: u8,
    proto: u8,
    dir: u8,
}

fn dir_bits(dir: Direction) -> u8 {
    match dir {
        Direction::In => 1,
        Direction::Out => 2,
    }
}

impl Prepared {
    #[inline]
    fn new(key: &PacketKey) -> Prepared {
        let (src, sf) = addr_bits(key.src);
        let (dst, df) = addr_bits(key.dst);
        let fams = sf | (df << 2);
        let dir = dir_bits(key.dir);
        let icmp = key.icmp_type.map_or(0, |t| 0x100 | u64::from(t));
        let small = (u64::from(key.src_port) << SPORT_SHIFT)
            | (u64::from(key.dst_port) << DPORT_SHIFT)
            | (icmp << ICMP_SHIFT)
            | (u64::from(key.proto) << PROTO_SHIFT)
            | (u64::from(dir) << DIR_SHIFT)
            | (u64::from(fams) << FAM_SHIFT);
        Prepared { src, dst, small, fams, proto: key.proto, dir }
    }
}

/// Which fields a group of rules constrains, and how many bits of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct ShapeId {
    dir: bool,
    /// (family tag, prefix length), `None` for `any`.
    src: Option<(u8, u8)>,
    dst: Option<(u8, u8)>,
    proto: bool,
    icmp: bool,
    sport_len: u8,
    dport_len: u8,
}

impl ShapeId {
    fn masks(&self) -> (u128, u128, u64) {
        let addr_mask = |a: Option<(u8, u8)>| match a {
            None => 0,
            Some((1, len)) => u128::from(v4_mask(len)),
            Some((_, len)) => v6_mask(len),
        };
        let mut small = (u64::from(port_mask(self.sport_len)) << SPORT_SHIFT)
            | (u64::from(port_mask(self.dport_len)) << DPORT_SHIFT);
        if self.icmp {
            small |= 0x1ff << ICMP_SHIFT;
        }
        if self.proto {
            small |= 0xff << PROTO_SHIFT;
        }
        if self.dir {
            small |= 0b11 << DIR_SHIFT;
        }
        if self.src.is_some() {
            small |= 0b0011 << FAM_SHIFT;
        }
        if self.dst.is_some() {
            small |= 0b1100 << FAM_SHIFT;
        }
        (addr_mask(self.src), addr_mask(self.dst), small)
    }

    /// Family tags (src | dst << 2) of packets this shape can match; bit set per allowed tag.
    fn allows_fams(&self, fams: u8) -> bool {
        let ok = |a: Option<(u8, u8)>, tag: u8| a.is_none_or(|(f, _)| f == tag);
        ok(self.src, fams & 0b11) && ok(self.dst, fams >> 2)
    }
}

/// The best rule for a masked key: highest priority, and its index.
#[derive(Clone, Copy, Debug)]
struct Entry {
    prio: u32,
    rule: u32,
}

#[derive(Debug)]
struct Shape {
    mask_src: u128,
    mask_dst: u128,
    mask_small: u64,
    /// Highest priority of any entry: the search stops when it cannot beat the best so far.
    max_prio: u32,
    /// Protocols present among the rules (all set when the shape has no protocol).
    protos: [u64; 4],
    /// Direction bits present among the rules (both when the shape has no direction).
    dirs: u8,
    table: HashMap<MaskedKey, Entry, SeededState>,
}

/// The compiled tuple space.
#[derive(Debug)]
pub(crate) struct TupleSpace {
    shapes: Vec<Shape>,
    /// Shape indices by descending `max_prio`, for IPv4 packets, IPv6 packets, and keys whose
    /// source and destination families differ.
    order_v4: Vec<u16>,
    order_v6: Vec<u16>,
    order_all: Vec<u16>,
    entries: usize,
}

/// The IPFilter priority of rule `i` of `n`: quick rules above all others, earlier first;
/// other rules later first. A larger number wins.
pub(crate) fn priority(i: usize, n: usize, quick: bool) -> u32 {
    let p = if quick { 2 * n - i } else { i + 1 };
    u32::try_from(p).unwrap_or(u32::MAX)
}

fn addr_part(net: Option<IpNet>) -> (Option<(u8, u8)>, u128) {
    match net {
        None => (None, 0),
        Some(n) => {
            let (bits, fam) = addr_bits(n.addr());
            (Some((fam, n.prefix_len())), bits)
        }
    }
}

/// A rule's shape without the port lengths, its field values, and its port blocks.
struct RulePlan {
    base: ShapeId,
    src: u128,
    dst: u128,
    small: u64,
    dir: u8,
    sblocks: Vec<(u16, u8)>,
    dblocks: Vec<(u16, u8)>,
}

fn plan(rule: &Rule) -> RulePlan {
    let (src_shape, src) = addr_part(rule.from.net);
    let (dst_shape, dst) = addr_part(rule.to.net);
    let fams = src_shape.map_or(0, |(f, _)| f) | (dst_shape.map_or(0, |(f, _)| f) << 2);
    let dir = rule.dir.map_or(0b11, dir_bits);
    let small = rule.icmp_type.map_or(0, |t| (0x100 | u64::from(t)) << ICMP_SHIFT)
        | (u64::from(rule.proto.unwrap_or(0)) << PROTO_SHIFT)
        | (u64::from(rule.dir.map_or(0, dir_bits)) << DIR_SHIFT)
        | (u64::from(fams) << FAM_SHIFT);
    RulePlan {
        base: ShapeId {
            dir: rule.dir.is_some(),
            src: src_shape,
            dst: dst_shape,
            proto: rule.proto.is_some(),
            icmp: rule.icmp_type.is_some(),
            sport_len: 0,
            dport_len: 0,
        },
        src,
        dst,
        small,
        dir,
        sblocks: blocks(rule.from.ports),
        dblocks: blocks(rule.to.ports),
    }
}

/// Distinct port lengths in `blocks`, in ascending order.
fn lens(blocks: &[(u16, u8)]) -> Vec<u8> {
    let mut v: Vec<u8> = blocks.iter().map(|b| b.1).collect();
    v.sort_unstable();
    v.dedup();
    v
}

impl TupleSpace {
    /// Compile `rules` (priorities per IPFilter order) within the bounds given.
    pub(crate) fn compile(
        rules: &[Rule],
        max_shapes: usize,
        max_entries: usize,
        seed: u64,
    ) -> Result<TupleSpace, CompileError> {
        let n = rules.len();
        if n > MAX_RULES {
            return Err(CompileError::TooManyRules { rules: n, limit: MAX_RULES });
        }
        let plans: Vec<RulePlan> = rules.iter().map(plan).collect();

        // Pass 1: the shapes and the entry count, checked against the caps before building.
        let mut shape_ids: HashMap<ShapeId, usize> = HashMap::new();
        let mut entries = 0usize;
        for p in &plans {
            for sl in lens(&p.sblocks) {
                for dl in lens(&p.dblocks) {
                    let id = ShapeId { sport_len: sl, dport_len: dl, ..p.base };
                    let next = shape_ids.len();
                    shape_ids.entry(id).or_insert(next);
                }
            }
            entries = entries.saturating_add(p.sblocks.len().saturating_mul(p.dblocks.len()));
        }
        if shape_ids.len() > max_shapes {
            return Err(CompileError::TooManyShapes { shapes: shape_ids.len(), limit: max_shapes });
        }
        if entries > max_entries {
            return Err(CompileError::TooManyEntries { entries, limit: max_entries });
        }

        // Pass 2: build the tables.
        let mut ids: Vec<(ShapeId, usize)> = shape_ids.iter().map(|(k, v)| (*k, *v)).collect();
        ids.sort_unstable_by_key(|(_, i)| *i);
        let mut shapes: Vec<Shape> = ids
            .iter()
            .map(|(id, _)| {
                let (mask_src, mask_dst, mask_small) = id.masks();
                Shape {
                    mask_src,
                    mask_dst,
                    mask_small,
                    max_prio: 0,
                    protos: if id.proto { [0; 4] } else { [u64::MAX; 4] },
                    dirs: 0,
                    table: HashMap::with_hasher(SeededState { seed }),
                }
            })
            .collect();
        for (i, (p, rule)) in plans.iter().zip(rules).enumerate() {
            let prio = priority(i, n, rule.quick);
            let rule_no = u32::try_from(i).unwrap_or(u32::MAX);
            for &(sp, sl) in &p.sblocks {
                for &(dp, dl) in &p.dblocks {
                    let id = ShapeId { sport_len: sl, dport_len: dl, ..p.base };
                    let Some(shape) = shape_ids.get(&id).and_then(|&s| shapes.get_mut(s)) else {
                        continue; // every id was registered in pass 1
                    };
                    let small =
                        p.small | (u64::from(sp) << SPORT_SHIFT) | (u64::from(dp) << DPORT_SHIFT);
                    let key = MaskedKey {
                        src: p.src & shape.mask_src,
                        dst: p.dst & shape.mask_dst,
                        small: small & shape.mask_small,
                    };
                    let e = shape.table.entry(key).or_insert(Entry { prio, rule: rule_no });
                    if prio > e.prio {
                        *e = Entry { prio, rule: rule_no };
                    }
                    shape.max_prio = shape.max_prio.max(prio);
                    if let Some(proto) = rule.proto {
                        shape.protos[usize::from(proto >> 6)] |= 1 << (proto & 63);
                    }
                    shape.dirs |= p.dir;
                }
            }
        }
        // Keep the tables at most half full: fewer tag collisions, so a miss rarely touches
        // a bucket (most traffic matches no rule and probes every shape).
        for s in &mut shapes {
            s.table.reserve(s.table.len());
        }
        let entries = shapes.iter().map(|s| s.table.len()).sum();
        let order = |fams: Option<u8>| {
            let mut v: Vec<u16> = ids
                .iter()
                .filter(|(id, _)| fams.is_none_or(|f| id.allows_fams(f)))
                .filter_map(|(_, i)| u16::try_from(*i).ok())
                .collect();
            v.sort_by_key(|&i| {
                std::cmp::Reverse(shapes.get(usize::from(i)).map_or(0, |s| s.max_prio))
            });
            v
        };
        Ok(TupleSpace {
            order_v4: order(Some(0b0101)),
            order_v6: order(Some(0b1010)),
            order_all: order(None),
            shapes,
            entries,
        })
    }

    /// The index of the highest-priority rule matching `key`, if any.
    #[inline]
    pub(crate) fn lookup(&self, key: &PacketKey) -> Option<usize> {
        let pk = Prepared::new(key);
        let order = match pk.fams {
            0b0101 => &self.order_v4,
            0b1010 => &self.order_v6,
            _ => &self.order_all,
        };
        let proto_word = usize::from(pk.proto >> 6);
        let proto_bit = 1u64 << (pk.proto & 63);
        let mut best_prio = 0u32;
        let mut best_rule = None;
        for &i in order {
            let Some(s) = self.shapes.get(usize::from(i)) else {
                continue;
            };
            if s.max_prio <= best_prio {
                break;
            }
            if s.dirs & pk.dir == 0 || s.protos[proto_word] & proto_bit == 0 {
                continue;
            }
            let mk = MaskedKey {
                src: pk.src & s.mask_src,
                dst: pk.dst & s.mask_dst,
                small: pk.small & s.mask_small,
            };
            if let Some(e) = s.table.get(&mk) {
                if e.prio > best_prio {
                    best_prio = e.prio;
                    best_rule = Some(e.rule as usize);
                }
            }
        }
        best_rule
    }

    /// Number of distinct mask shapes.
    pub(crate) fn shape_count(&self) -> usize {
        self.shapes.len()
    }

    /// Number of hash-table entries over all shapes.
    pub(crate) fn entry_count(&self) -> usize {
        self.entries
    }
}
