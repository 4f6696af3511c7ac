//! Classifier unit tests: `keep state` and return traffic, flow-cache invalidation, hit
//! counters, bounded tables, and the shape and entry caps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::IpAddr;

use filter::{
    Action, Classifier, ClassifierConfig, CompileError, Direction, LinearFilter, PacketKey,
    Verdict, parse_rules,
};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn tcp(dir: Direction, src: &str, sport: u16, dst: &str, dport: u16) -> PacketKey {
    PacketKey::new(dir, ip(src), ip(dst), 6, sport, dport)
}

fn compile(text: &str) -> Classifier {
    Classifier::compile(&parse_rules(text).unwrap()).unwrap()
}

const PASS: Action = Action::Pass;
const BLOCK: Action = Action::Block;

fn v(action: Action, rule: Option<usize>) -> Verdict {
    Verdict { action, rule }
}

#[test]
fn last_match_wins_unless_quick() {
    let mut c = compile(
        "block in all\n\
         pass in proto tcp from any to 10.0.0.0/8 port 22\n\
         block in quick proto tcp from 192.0.2.66 to any\n\
         block in proto tcp from any to 10.0.0.1\n",
    );
    let ssh = tcp(Direction::In, "192.0.2.1", 4000, "10.0.0.2", 22);
    assert_eq!(c.classify(&ssh), v(PASS, Some(1)));
    let evil = tcp(Direction::In, "192.0.2.66", 4000, "10.0.0.2", 22);
    assert_eq!(c.classify(&evil), v(BLOCK, Some(2)));
    let to_one = tcp(Direction::In, "192.0.2.1", 4000, "10.0.0.1", 22);
    assert_eq!(c.classify(&to_one), v(BLOCK, Some(3)));
    let out = tcp(Direction::Out, "10.0.0.1", 22, "192.0.2.1", 4000);
    assert_eq!(c.classify(&out), v(PASS, None));
    assert_eq!(c.hit_counts(), &[0, 1, 1, 1]);
    assert_eq!(c.hits(2), 1);
    assert_eq!(c.hits(99), 0);
}

#[test]
fn default_action_is_configurable() {
    let c = compile("default block\npass in proto udp all\n");
    let k = tcp(Direction::In, "192.0.2.1", 1, "192.0.2.2", 2);
    assert_eq!(c.classify_uncached(&k), v(BLOCK, None));
    assert_eq!(c.default_action(), BLOCK);
}

#[test]
fn keep_state_passes_return_traffic() {
    let text = "block in all\npass out quick proto tcp from 10.0.0.0/8 to any keep state\n";
    let mut c = compile(text);
    let mut lin = LinearFilter::new(&parse_rules(text).unwrap());
    let req = tcp(Direction::Out, "10.0.0.5", 40000, "198.51.100.7", 443);
    let reply = req.reversed();
    assert_eq!(reply.dir, Direction::In);
    // The reply before any request is blocked (and the verdict is cached)...
    assert_eq!(c.classify(&reply), v(BLOCK, Some(0)));
    // ...the request passes and creates state, which must override the cached block.
    assert_eq!(c.classify(&req), v(PASS, Some(1)));
    assert_eq!(c.classify(&reply), v(PASS, Some(1)));
    assert_eq!(c.classify(&reply), v(PASS, Some(1)));
    // The rules alone still block the reply.
    assert_eq!(c.classify_uncached(&reply), v(BLOCK, Some(0)));
    // Another flow from the same host is not covered.
    let other = tcp(Direction::In, "198.51.100.7", 443, "10.0.0.5", 40001);
    assert_eq!(c.classify(&other), v(BLOCK, Some(0)));
    let s = c.stats();
    assert_eq!(s.states_created, 1);
    assert_eq!(s.states, 1);
    assert!(s.state_hits >= 1);
    for k in [reply, req, reply, reply, other] {
        lin.classify(&k);
    }
    assert_eq!(lin.hit_counts(), c.hit_counts());
}

#[test]
fn keep_state_for_icmp_ignores_the_type() {
    let mut c = compile("block all\npass out proto icmp from any to any icmp-type 8 keep state\n");
    let echo = PacketKey {
        icmp_type: Some(8),
        ..PacketKey::new(Direction::Out, ip("10.0.0.1"), ip("10.0.0.2"), 1, 0, 0)
    };
    let reply = PacketKey { icmp_type: Some(0), ..echo.reversed() };
    assert_eq!(c.classify(&reply).action, BLOCK);
    assert_eq!(c.classify(&echo), v(PASS, Some(1)));
    assert_eq!(c.classify(&reply), v(PASS, Some(1)));
}

#[test]
fn recompile_flushes_cache_and_keeps_state() {
    let mut c = compile("pass out proto tcp all keep state\n");
    let req = tcp(Direction::Out, "10.0.0.5", 40000, "198.51.100.7", 443);
    let unrelated = tcp(Direction::In, "192.0.2.9", 1, "10.0.0.5", 2);
    assert_eq!(c.classify(&unrelated), v(PASS, None));
    assert_eq!(c.classify(&req), v(PASS, Some(0)));
    c.recompile(&parse_rules("block all\n").unwrap()).unwrap();
    assert_eq!(c.hit_counts(), &[0]);
    // Cached pass is gone: the new rules decide.
    assert_eq!(c.classify(&unrelated), v(BLOCK, Some(0)));
    // The established flow survives the reload, no longer naming a rule.
    assert_eq!(c.classify(&req.reversed()), v(PASS, None));
    c.flush_state();
    assert_eq!(c.classify(&req.reversed()), v(BLOCK, Some(0)));
}

#[test]
fn failed_recompile_keeps_old_rules() {
    let mut c = compile("block in all\n");
    let cfg = ClassifierConfig { max_shapes: 1, ..ClassifierConfig::default() };
    let mut c2 = Classifier::compile_with(&parse_rules("block in all").unwrap(), cfg).unwrap();
    let two = parse_rules("block from 10.0.0.0/8\nblock from 10.0.0.0/16\n").unwrap();
    assert!(c2.recompile(&two).is_err());
    let k = tcp(Direction::In, "192.0.2.1", 1, "192.0.2.2", 2);
    assert_eq!(c2.classify(&k), v(BLOCK, Some(0)));
    assert_eq!(c.classify(&k), v(BLOCK, Some(0)));
}

#[test]
fn shape_cap_is_an_error() {
    let mut text = String::new();
    for len in 0..=32 {
        text.push_str(&format!("block from 10.0.0.0/{len}\n"));
    }
    for len in 0..32 {
        text.push_str(&format!("block from 2001:db8::/{len}\n"));
    }
    let set = parse_rules(&text).unwrap();
    let e = Classifier::compile(&set).unwrap_err();
    assert_eq!(e, CompileError::TooManyShapes { shapes: 65, limit: 64 });
    assert_eq!(e.to_string(), "rules need 65 mask shapes, the limit (max_shapes) is 64");
    let roomy = ClassifierConfig { max_shapes: 65, ..ClassifierConfig::default() };
    let c = Classifier::compile_with(&set, roomy).unwrap();
    assert_eq!(c.shape_count(), 65);
}

#[test]
fn same_shape_many_rules_is_one_table() {
    let mut text = String::new();
    for i in 0..1000u32 {
        text.push_str(&format!(
            "block in proto tcp from 10.{}.{}.0/24 to any port {}\n",
            i >> 8,
            i & 255,
            i + 1
        ));
    }
    let c = compile(&text);
    assert_eq!(c.shape_count(), 1);
    assert_eq!(c.entry_count(), 1000);
}

#[test]
fn port_ranges_expand_within_the_entry_cap() {
    let set = parse_rules("pass proto tcp from any port 1:65534 to any port 1:65534\n").unwrap();
    let c = Classifier::compile(&set).unwrap();
    assert!(c.shape_count() <= 16, "{}", c.shape_count());
    let k = tcp(Direction::In, "192.0.2.1", 65534, "192.0.2.2", 1);
    assert_eq!(c.classify_uncached(&k), v(PASS, Some(0)));
    let k = tcp(Direction::In, "192.0.2.1", 65535, "192.0.2.2", 1);
    assert_eq!(c.classify_uncached(&k), v(PASS, None));
    let small = ClassifierConfig { max_entries: 100, ..ClassifierConfig::default() };
    match Classifier::compile_with(&set, small) {
        Err(CompileError::TooManyEntries { entries, limit: 100 }) => assert!(entries > 100),
        other => panic!("{other:?}"),
    }
}

#[test]
fn tables_are_bounded() {
    let cfg =
        ClassifierConfig { cache_entries: 16, state_entries: 16, ..ClassifierConfig::default() };
    let mut c =
        Classifier::compile_with(&parse_rules("pass out all keep state").unwrap(), cfg).unwrap();
    assert_eq!(c.capacities(), (16, 16));
    for port in 0..1000 {
        let k = tcp(Direction::Out, "10.0.0.1", port, "10.0.0.2", 80);
        assert_eq!(c.classify(&k).action, PASS);
    }
    let s = c.stats();
    assert!(s.states <= 16);
    assert_eq!(s.states_created, 1000);
    assert!(s.state_evictions >= 1000 - 16);
    // An evicted flow's return traffic is judged by the rules again (no rule: default pass).
    let back = tcp(Direction::In, "10.0.0.2", 80, "10.0.0.1", 0);
    assert_eq!(c.classify(&back).action, PASS);
}

#[test]
fn flow_cache_evicts_when_full() {
    let cfg = ClassifierConfig { cache_entries: 16, ..ClassifierConfig::default() };
    let mut c = Classifier::compile_with(&parse_rules("block in all").unwrap(), cfg).unwrap();
    for port in 0..1000 {
        let k = tcp(Direction::In, "10.0.0.1", port, "10.0.0.2", 80);
        assert_eq!(c.classify(&k), v(BLOCK, Some(0)));
    }
    let s = c.stats();
    assert_eq!(s.cache_misses, 1000);
    assert!(s.cache_evictions >= 1000 - 16);
}

#[test]
fn cache_hits_are_counted() {
    let mut c = compile("block in proto udp all\n");
    let k = PacketKey::new(Direction::In, ip("::1"), ip("::2"), 17, 5, 6);
    for _ in 0..10 {
        assert_eq!(c.classify(&k), v(BLOCK, Some(0)));
    }
    let s = c.stats();
    assert_eq!((s.cache_misses, s.cache_hits), (1, 9));
    assert_eq!(c.hits(0), 10);
}
