//! Translation of a hipsec rule set (`filter::RuleSet`) into an nftables ruleset for `nft -f`,
//! so the kernel's own filter runs the same rules as hipsec's classifier.
//!
//! # Translation
//!
//! - One table `inet hlab_filter` with base chains on the `input` and `output` hooks. They jump to
//!   `rules_in` / `rules_out` only for packets arriving from (`iifname`) or leaving to (`oifname`)
//!   the named interfaces (the node's TUN devices in the scenario, a veth in the cross-check
//!   test): the same packets hipsec's filter sees (from/to TUN). Direction `in` = input hook,
//!   `out` = output hook, no direction = both chains.
//! - IPFilter order (last match wins, `quick` decides at once) becomes nftables' first match by
//!   reordering: quick rules in file order, then the other rules in **reverse** file order, then
//!   the default action as the chain's last rule. This is exact: the first quick match is the
//!   IPFilter verdict, and without one the last matching rule is.
//! - Fields: `proto` → `meta l4proto`, prefixes → `ip`/`ip6 saddr`/`daddr`, ports →
//!   `tcp`/`udp sport`/`dport` (ranges `lo-hi`), `icmp-type` → `icmp type` / `icmpv6 type`.
//! - `keep state` → the passing rule sets `ct mark 0x1`, and `ct mark 0x1 accept` heads both
//!   chains: later packets of the connection, either way, pass without the rules.
//!
//! Where it is **not exact**: `keep state` rides on conntrack, whose notion of a flow differs from
//! hipsec's state table (ICMP flows are keyed by echo id, not by address pair only; entries time
//! out; the classifier's table is bounded and evicts). Conntrack also reassembles fragments before
//! the input hook, whereas hipsec classifies a non-first fragment with ports 0. `icmp type` in the
//! inet family is matched only on ICMP of the matching IP version (a rule `proto icmp` between IPv6
//! addresses, which hipsec accepts, never matches here).
//!
//! # Sets
//!
//! [`Layout::Sets`] groups the ordered rules by verdict (action and keep-state), `quick`, and
//! shape (direction chain, protocol, family, which fields are constrained); each group becomes one
//! rule matching a concatenated set (e.g. `ip saddr . tcp dport @s3 drop`, with `flags interval`
//! when it holds prefixes or port ranges). Groups keep the order of their first rule. Moving a
//! rule into its group's place changes the verdict only if it jumps over an overlapping rule with
//! a different verdict; [`translate`] counts such pairs ([`Exactness::conflicts`]), so a zero says
//! the set layout is exactly equivalent for that rule set.

use filter::{Action, Direction, IpNet, PortRange, Rule, RuleSet};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::IpAddr;

/// The nft table the lab creates (and deletes).
pub const TABLE: &str = "hlab_filter";
/// The nft binary (Debian's nftables package).
pub const NFT: &str = "/usr/sbin/nft";

/// Ok if `nft` can be run; else why not.
pub fn available() -> Result<(), String> {
    match std::process::Command::new(NFT).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => {
            Err(format!("{NFT} --version failed: {}", String::from_utf8_lossy(&o.stderr).trim()))
        }
        Err(e) => Err(format!("nft not usable at {NFT}: {e} (apt-get install nftables)")),
    }
}

/// One rule per line, or one set lookup per rule group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Layout {
    Linear,
    Sets,
}

/// Whether the set layout is equivalent to the rules (always true for [`Layout::Linear`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Exactness {
    /// Pairs of overlapping rules with different verdicts whose order the grouping inverted.
    pub conflicts: usize,
    /// False when the check gave up (too many pairs to compare); `conflicts` is then a lower bound.
    pub verified: bool,
}

/// An nft ruleset text and what it holds.
#[derive(Debug, Clone)]
pub struct Translation {
    /// The table, its chains and (empty) sets: the first `nft -f` file.
    pub text: String,
    /// Set elements, one `nft -f` file (one netlink transaction) each, loaded after `text`: a
    /// single transaction of 100000 elements fails with ENOBUFS.
    pub batches: Vec<String>,
    /// nft rules in the two rule chains (set lookups count as one).
    pub nft_rules: usize,
    /// Named sets and their total elements.
    pub sets: usize,
    pub elements: usize,
    pub exact: Exactness,
}

fn proto_expr(p: u8) -> String {
    match p {
        6 => "meta l4proto tcp".into(),
        17 => "meta l4proto udp".into(),
        1 => "meta l4proto icmp".into(),
        58 => "meta l4proto ipv6-icmp".into(),
        n => format!("meta l4proto {n}"),
    }
}

fn l4(p: Option<u8>) -> &'static str {
    if p == Some(17) { "udp" } else { "tcp" }
}

fn ports(r: PortRange) -> String {
    if r.lo() == r.hi() { r.lo().to_string() } else { format!("{}-{}", r.lo(), r.hi()) }
}

fn family(r: &Rule) -> Option<bool> {
    r.from.net.or(r.to.net).map(|n| n.addr().is_ipv4())
}

fn ip_kw(v4: bool) -> &'static str {
    if v4 { "ip" } else { "ip6" }
}

fn icmp_kw(proto: Option<u8>) -> &'static str {
    if proto == Some(58) { "icmpv6 type" } else { "icmp type" }
}

/// The match expressions of one rule, in nft syntax.
pub fn rule_match(r: &Rule) -> String {
    let mut parts = Vec::new();
    if let Some(p) = r.proto {
        parts.push(proto_expr(p));
    }
    for (net, side) in [(r.from.net, "saddr"), (r.to.net, "daddr")] {
        if let Some(n) = net {
            parts.push(format!("{} {side} {n}", ip_kw(n.addr().is_ipv4())));
        }
    }
    for (pr, side) in [(r.from.ports, "sport"), (r.to.ports, "dport")] {
        if let Some(pr) = pr {
            parts.push(format!("{} {side} {}", l4(r.proto), ports(pr)));
        }
    }
    if let Some(t) = r.icmp_type {
        parts.push(format!("{} {t}", icmp_kw(r.proto)));
    }
    parts.join(" ")
}

fn verdict(r: &Rule) -> &'static str {
    match (r.action, r.keep_state) {
        (Action::Block, _) => "drop",
        (Action::Pass, true) => "ct mark set 0x1 accept",
        (Action::Pass, false) => "accept",
    }
}

/// The rules that apply to `dir`, in nftables (first match) order: quick rules in file order,
/// then the others last first.
pub fn ordered(set: &RuleSet, dir: Direction) -> Vec<&Rule> {
    let applies = |r: &&Rule| r.dir.is_none_or(|d| d == dir);
    let mut v: Vec<&Rule> = set.rules.iter().filter(|r| r.quick).filter(applies).collect();
    v.extend(set.rules.iter().rev().filter(|r| !r.quick).filter(applies));
    v
}

/// What a group's rules have in common besides the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Shape {
    quick: bool,
    action: Action,
    keep_state: bool,
    proto: Option<u8>,
    v4: Option<bool>,
    src: Option<u8>,
    dst: Option<u8>,
    sport: bool,
    dport: bool,
    icmp: bool,
}

fn shape(r: &Rule) -> Shape {
    Shape {
        quick: r.quick,
        action: r.action,
        keep_state: r.keep_state,
        proto: r.proto,
        v4: family(r),
        src: r.from.net.map(|n| n.prefix_len()),
        dst: r.to.net.map(|n| n.prefix_len()),
        sport: r.from.ports.is_some(),
        dport: r.to.ports.is_some(),
        icmp: r.icmp_type.is_some(),
    }
}

fn nets_overlap(a: Option<IpNet>, b: Option<IpNet>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            let (short, long) = if a.prefix_len() <= b.prefix_len() { (a, b) } else { (b, a) };
            short.contains(long.addr())
        }
        _ => true,
    }
}

fn ports_overlap(a: Option<PortRange>, b: Option<PortRange>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.lo() <= b.hi() && b.lo() <= a.hi(),
        _ => true,
    }
}

/// True if some packet matches both rules (directions are equal within one chain).
pub fn overlap(a: &Rule, b: &Rule) -> bool {
    let eq = |x: Option<u8>, y: Option<u8>| x.is_none() || y.is_none() || x == y;
    let fam = match (family(a), family(b)) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    };
    fam && eq(a.proto, b.proto)
        && eq(a.icmp_type, b.icmp_type)
        && nets_overlap(a.from.net, b.from.net)
        && nets_overlap(a.to.net, b.to.net)
        && ports_overlap(a.from.ports, b.from.ports)
        && ports_overlap(a.to.ports, b.to.ports)
}

fn masked(ip: IpAddr, len: u8) -> u128 {
    match IpNet::new(ip, len).map(|n| n.addr()) {
        Ok(IpAddr::V4(a)) => u128::from(a.to_bits()),
        Ok(IpAddr::V6(a)) => a.to_bits(),
        Err(_) => 0,
    }
}

/// Set elements per `add element` command, and commands per transaction.
const ELEMENT_CHUNK: usize = 2000;
const CHUNKS_PER_BATCH: usize = 5;

/// Pair comparisons the exactness check may spend before it gives up.
const CHECK_BUDGET: u64 = 50_000_000;

/// Counts inverted overlapping pairs between groups (see the module docs). `groups` hold
/// indices into `rules` (priority = index: lower wins), in chain order.
fn conflicts(rules: &[&Rule], groups: &[(Shape, Vec<usize>)]) -> Exactness {
    let mut n = 0;
    let mut spent: u64 = 0;
    for (ga, (sa, a_idx)) in groups.iter().enumerate() {
        // Index group A's rules by source (or destination) address masked to a length.
        let mut cache: HashMap<(bool, u8), HashMap<u128, Vec<usize>>> = HashMap::new();
        for (sb, b_idx) in &groups[ga + 1..] {
            if (sa.action, sa.keep_state) == (sb.action, sb.keep_state) {
                continue;
            }
            let side = match (sa.src, sb.src, sa.dst, sb.dst) {
                (Some(x), Some(y), _, _) => Some((true, x.min(y))),
                (_, _, Some(x), Some(y)) => Some((false, x.min(y))),
                _ => None,
            };
            for &b in b_idx {
                let rb = rules[b];
                let cands: Vec<usize> = match side {
                    Some((src, len)) => {
                        let map = cache.entry((src, len)).or_insert_with(|| {
                            let mut m: HashMap<u128, Vec<usize>> = HashMap::new();
                            for &a in a_idx {
                                let net = if src { rules[a].from.net } else { rules[a].to.net };
                                if let Some(net) = net {
                                    m.entry(masked(net.addr(), len)).or_default().push(a);
                                }
                            }
                            m
                        });
                        let net = if src { rb.from.net } else { rb.to.net };
                        net.and_then(|net| map.get(&masked(net.addr(), len)))
                            .cloned()
                            .unwrap_or_default()
                    }
                    None => a_idx.clone(),
                };
                spent += cands.len() as u64;
                if spent > CHECK_BUDGET {
                    return Exactness { conflicts: n, verified: false };
                }
                // Group A comes first in the chain; a conflict is a B rule that should have won.
                n += cands.iter().filter(|&&a| b < a && overlap(rules[a], rb)).count();
            }
        }
    }
    Exactness { conflicts: n, verified: true }
}

fn set_type(sh: &Shape) -> (Vec<String>, Vec<&'static str>) {
    let v4 = sh.v4.unwrap_or(true);
    let addr = if v4 { "ipv4_addr" } else { "ipv6_addr" };
    let mut keys = Vec::new();
    let mut types = Vec::new();
    if sh.src.is_some() {
        keys.push(format!("{} saddr", ip_kw(v4)));
        types.push(addr);
    }
    if sh.dst.is_some() {
        keys.push(format!("{} daddr", ip_kw(v4)));
        types.push(addr);
    }
    if sh.sport {
        keys.push(format!("{} sport", l4(sh.proto)));
        types.push("inet_service");
    }
    if sh.dport {
        keys.push(format!("{} dport", l4(sh.proto)));
        types.push("inet_service");
    }
    if sh.icmp {
        keys.push(icmp_kw(sh.proto).to_string());
        types.push(if sh.proto == Some(58) { "icmpv6_type" } else { "icmp_type" });
    }
    (keys, types)
}

/// The set elements of a group's rules (in nft syntax) and whether the set needs
/// `flags interval`. Duplicates are dropped, and where the rules constrain one port field, the
/// port ranges of elements that agree on every other field are merged: the kernel refuses
/// overlapping interval elements (EEXIST), and one verdict per set makes the union exact.
fn elements(rules: &[&Rule], sh: &Shape) -> (Vec<String>, bool) {
    let mut interval = false;
    // (other fields, port ranges) in order of first appearance.
    let mut keyed: Vec<(Vec<String>, Vec<PortRange>)> = Vec::new();
    let mut index: HashMap<Vec<String>, usize> = HashMap::new();
    for r in rules {
        let mut key = Vec::new();
        for n in [r.from.net, r.to.net].into_iter().flatten() {
            interval |= n.prefix_len() < if n.addr().is_ipv4() { 32 } else { 128 };
            key.push(n.to_string());
        }
        let prs: Vec<PortRange> = [r.from.ports, r.to.ports].into_iter().flatten().collect();
        interval |= prs.iter().any(|p| p.lo() != p.hi());
        let mergeable = prs.len() == 1;
        if !mergeable {
            key.extend(prs.iter().map(|p| ports(*p)));
        }
        if sh.icmp {
            key.push(format!("#{}", r.icmp_type.unwrap_or(0)));
        }
        let i = *index.entry(key.clone()).or_insert_with(|| {
            keyed.push((key, Vec::new()));
            keyed.len() - 1
        });
        if mergeable {
            keyed[i].1.extend(prs);
        }
    }
    let mut out = Vec::with_capacity(keyed.len());
    for (key, mut prs) in keyed {
        let icmp = key.last().filter(|k| k.starts_with('#')).map(|k| k[1..].to_string());
        let fields: Vec<String> = key.into_iter().filter(|k| !k.starts_with('#')).collect();
        prs.sort_by_key(|p| (p.lo(), p.hi()));
        let mut merged: Vec<PortRange> = Vec::new();
        for p in prs {
            match merged.last_mut() {
                Some(m) if p.lo() <= m.hi() => {
                    *m = PortRange::new(m.lo(), m.hi().max(p.hi())).unwrap_or(*m);
                }
                _ => merged.push(p),
            }
        }
        let ranges: Vec<Option<PortRange>> =
            if merged.is_empty() { vec![None] } else { merged.into_iter().map(Some).collect() };
        for pr in ranges {
            let mut parts = fields.clone();
            parts.extend(pr.map(ports));
            parts.extend(icmp.clone());
            out.push(parts.join(" . "));
        }
    }
    (out, interval)
}

/// The body of one rule chain and the set definitions it uses.
struct Chain {
    rules: Vec<String>,
    sets: Vec<String>,
    /// `add element` commands filling the sets.
    elements_cmds: Vec<String>,
    elements: usize,
    exact: Exactness,
}

fn chain(set: &RuleSet, dir: Direction, layout: Layout, set_prefix: &str) -> Chain {
    let rules = ordered(set, dir);
    let mut out = Chain {
        rules: Vec::new(),
        sets: Vec::new(),
        elements_cmds: Vec::new(),
        elements: 0,
        exact: Exactness { conflicts: 0, verified: true },
    };
    // Return traffic of a kept flow goes the other way: both chains check the mark.
    if set.rules.iter().any(|r| r.keep_state) {
        out.rules.push("ct mark 0x1 accept".into());
    }
    match layout {
        Layout::Linear => {
            for r in &rules {
                out.rules.push(format!("{} {}", rule_match(r), verdict(r)).trim().to_string());
            }
        }
        Layout::Sets => {
            let mut groups: Vec<(Shape, Vec<usize>)> = Vec::new();
            let mut index: HashMap<Shape, usize> = HashMap::new();
            for (i, r) in rules.iter().enumerate() {
                let sh = shape(r);
                let g = *index.entry(sh).or_insert_with(|| {
                    groups.push((sh, Vec::new()));
                    groups.len() - 1
                });
                groups[g].1.push(i);
            }
            out.exact = conflicts(&rules, &groups);
            for (k, (sh, members)) in groups.iter().enumerate() {
                let first = rules[members[0]];
                let (keys, types) = set_type(sh);
                let mut head = Vec::new();
                if let Some(p) = sh.proto {
                    head.push(proto_expr(p));
                }
                if keys.is_empty() {
                    // Nothing to look up (e.g. `block in proto tcp all`): one rule stands for all.
                    head.push(verdict(first).to_string());
                    out.rules.push(head.join(" "));
                    continue;
                }
                let name = format!("{set_prefix}{k}");
                let group: Vec<&Rule> = members.iter().map(|&m| rules[m]).collect();
                let (elems, interval) = elements(&group, sh);
                out.elements += elems.len();
                // Elements go in chunks of `add element` commands after the table: one huge
                // set literal overflows the netlink socket (ENOBUFS) at 100000 rules.
                out.sets.push(format!(
                    "\tset {name} {{\n\t\ttype {}\n{}\t}}\n",
                    types.join(" . "),
                    if interval { "\t\tflags interval\n" } else { "" }
                ));
                for chunk in elems.chunks(ELEMENT_CHUNK) {
                    let mut e = format!("add element inet {TABLE} {name} {{ ");
                    e.push_str(&chunk.join(", "));
                    e.push_str(" }\n");
                    out.elements_cmds.push(e);
                }
                head.push(format!("{} @{name} {}", keys.join(" . "), verdict(first)));
                out.rules.push(head.join(" "));
            }
        }
    }
    out.rules.push(
        match set.default_action {
            Action::Pass => "accept",
            Action::Block => "drop",
        }
        .into(),
    );
    out
}

fn quoted(ifaces: &[&str]) -> String {
    let q: Vec<String> = ifaces.iter().map(|i| format!("\"{i}\"")).collect();
    if q.len() == 1 { q.join("") } else { format!("{{ {} }}", q.join(", ")) }
}

/// The ruleset for `nft -f`: deletes an earlier `hlab_filter` table, then creates it filtering
/// the packets that arrive from / leave to `ifaces`.
pub fn translate(set: &RuleSet, ifaces: &[&str], layout: Layout) -> Translation {
    let cin = chain(set, Direction::In, layout, "in_");
    let cout = chain(set, Direction::Out, layout, "out_");
    let mut t = String::with_capacity(64 * set.rules.len() + 1024);
    let _ = writeln!(t, "table inet {TABLE}\ndelete table inet {TABLE}\ntable inet {TABLE} {{");
    for s in cin.sets.iter().chain(&cout.sets) {
        t.push_str(s);
    }
    let ifs = quoted(ifaces);
    let _ = writeln!(
        t,
        "\tchain input {{\n\t\ttype filter hook input priority filter; policy accept;\n\t\tiifname {ifs} jump rules_in\n\t}}"
    );
    let _ = writeln!(
        t,
        "\tchain output {{\n\t\ttype filter hook output priority filter; policy accept;\n\t\toifname {ifs} jump rules_out\n\t}}"
    );
    for (name, c) in [("rules_in", &cin), ("rules_out", &cout)] {
        let _ = writeln!(t, "\tchain {name} {{");
        for r in &c.rules {
            let _ = writeln!(t, "\t\t{r}");
        }
        let _ = writeln!(t, "\t}}");
    }
    t.push_str("}\n");
    let cmds: Vec<&String> = cin.elements_cmds.iter().chain(&cout.elements_cmds).collect();
    let batches =
        cmds.chunks(CHUNKS_PER_BATCH).map(|c| c.iter().map(|s| s.as_str()).collect()).collect();
    Translation {
        text: t,
        batches,
        nft_rules: cin.rules.len() + cout.rules.len(),
        sets: cin.sets.len() + cout.sets.len(),
        elements: cin.elements + cout.elements,
        exact: Exactness {
            conflicts: cin.exact.conflicts + cout.exact.conflicts,
            verified: cin.exact.verified && cout.exact.verified,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(text: &str) -> RuleSet {
        filter::parse_rules(text).unwrap()
    }

    #[test]
    fn linear_reorders_quick_first_then_last_match_first() {
        let set = rs("block in proto tcp from 10.0.0.1 to any port 80\n\
                      pass in quick proto udp from any to 10.0.0.0/8 port 1000:2000\n\
                      pass out from 10.1.0.0/16 to any keep state\n\
                      block quick proto icmp from any to 10.2.3.4 icmp-type 8\n");
        let t = translate(&set, &["hlab4"], Layout::Linear);
        let text = &t.text;
        let pos = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} missing in\n{text}"));
        assert!(
            pos("meta l4proto udp ip daddr 10.0.0.0/8 udp dport 1000-2000 accept")
                < pos("meta l4proto icmp ip daddr 10.2.3.4 icmp type 8 drop")
        );
        assert!(
            pos("meta l4proto icmp ip daddr 10.2.3.4 icmp type 8 drop")
                < pos("meta l4proto tcp ip saddr 10.0.0.1 tcp dport 80 drop")
        );
        assert!(text.contains("ip saddr 10.1.0.0/16 ct mark set 0x1 accept"), "{text}");
        assert!(text.contains("ct mark 0x1 accept"), "{text}");
        assert!(text.contains("iifname \"hlab4\" jump rules_in"), "{text}");
        // in: ct, udp, icmp, tcp + default; out: ct, icmp, keep-state pass + default.
        assert_eq!(t.nft_rules, 5 + 4, "{text}");
    }

    #[test]
    fn sets_group_by_shape_and_count_inversions() {
        let set = rs("block in proto tcp from 10.0.0.1 to any port 80\n\
                      block in proto tcp from 10.0.0.2 to any port 81\n\
                      pass in proto tcp from 10.0.0.0/24 to any\n\
                      block in proto tcp from 10.0.0.3 to any port 82\n");
        // Order (last first): block .3, pass /24, block .2, block .1. Grouping puts .2 and .1
        // beside .3, before the pass: .2/.1 overlap the /24 pass with a different verdict.
        let t = translate(&set, &["hlab4"], Layout::Sets);
        assert_eq!(t.exact, Exactness { conflicts: 2, verified: true }, "{}", t.text);
        assert!(t.text.contains("ip saddr . tcp dport @in_0 drop"), "{}", t.text);
        assert!(t.text.contains("type ipv4_addr . inet_service"), "{}", t.text);
        let disjoint = rs("block in proto tcp from 10.0.0.1 to any port 80\n\
                           pass in proto tcp from 10.9.0.0/24 to any\n\
                           block in proto tcp from 10.0.0.3 to any port 82\n");
        let t = translate(&disjoint, &["hlab4"], Layout::Sets);
        assert_eq!(t.exact, Exactness { conflicts: 0, verified: true });
        assert!(t.text.contains("flags interval"), "{}", t.text);
        assert_eq!(t.elements, 3);
        // Overlapping ranges of one address merge (nft refuses overlapping interval elements).
        let ranges = rs("block in proto tcp from any to 10.0.0.0/24 port 100:200\n\
                         block in proto tcp from any to 10.0.0.0/24 port 150:300\n\
                         block in proto tcp from any to 10.0.1.0/24 port 150:300\n\
                         block in proto tcp from any to 10.0.0.0/24 port 400\n");
        let t = translate(&ranges, &["hlab4"], Layout::Sets);
        assert!(
            t.batches
                .concat()
                .contains("{ 10.0.0.0/24 . 100-300, 10.0.0.0/24 . 400, 10.0.1.0/24 . 150-300 }"),
            "{:?}",
            t.batches
        );
    }

    #[test]
    fn generated_rules_as_sets_are_compact_but_not_exact() {
        let set = rs(&filter::bench::generate_rules(2000, 7));
        let t = translate(&set, &["hlab4", "hlab6"], Layout::Sets);
        assert!(t.exact.verified);
        // `block in from X/16 to any` and `pass in proto tcp from any to Y/24 port R` overlap, and
        // a set per shape cannot keep their interleaved order.
        assert!(t.exact.conflicts > 0, "{:?}", t.exact);
        assert!(t.sets <= 40 && t.elements >= 1900, "{} sets, {} elements", t.sets, t.elements);
    }
}
