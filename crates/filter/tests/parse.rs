//! Parser tests: the grammar's accepted forms, every error kind with its line and column, and
//! the round trip `parse_rules(rules.to_string()) == rules`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use filter::{
    Action, Direction, IpNet, ParseError, ParseErrorKind, PortRange, RuleSet, parse_rules,
};
use proptest::prelude::*;

fn err(text: &str) -> ParseError {
    match parse_rules(text) {
        Ok(r) => panic!("{text:?} parsed as {r:?}"),
        Err(e) => e,
    }
}

#[test]
fn accepts_the_documented_example() {
    let text = "\
# default pass, as in IPFilter
block in all
pass in quick proto tcp from any to 192.0.2.10 port 22 keep state
pass in proto udp from 2001:db8::/32 port 1000:2000 to any   # trailing comment
block in quick proto icmp from any to any icmp-type 8

pass out proto tcp from 10.0.0.0/8 to any keep state
";
    let set = parse_rules(text).unwrap();
    assert_eq!(set.default_action, Action::Pass);
    assert_eq!(set.rules.len(), 5);
    let r = &set.rules[1];
    assert_eq!(r.action, Action::Pass);
    assert_eq!(r.dir, Some(Direction::In));
    assert!(r.quick && r.keep_state);
    assert_eq!(r.proto, Some(6));
    assert_eq!(r.to.net, Some(IpNet::host("192.0.2.10".parse().unwrap())));
    assert_eq!(r.to.ports, Some(PortRange::single(22)));
    let r = &set.rules[2];
    assert_eq!(r.from.ports, PortRange::new(1000, 2000));
    assert_eq!(r.from.net.unwrap().prefix_len(), 32);
    assert_eq!(set.rules[3].icmp_type, Some(8));
}

#[test]
fn defaults_and_shorthands() {
    let set = parse_rules("default block\npass\nblock out proto 132\npass to any\n").unwrap();
    assert_eq!(set.default_action, Action::Block);
    assert_eq!(set.rules.len(), 3);
    assert_eq!(set.rules[0].dir, None);
    assert_eq!(set.rules[1].proto, Some(132));
    assert_eq!(set.to_string(), "default block\npass all\nblock out proto 132 all\npass all\n");
    assert_eq!(parse_rules("").unwrap(), RuleSet::default());
}

#[test]
fn host_bits_are_cleared() {
    let set = parse_rules("pass from 10.1.2.3/8 to 2001:db8::1/0").unwrap_err();
    assert_eq!(set.kind, ParseErrorKind::MixedFamilies);
    let set = parse_rules("pass from 10.1.2.3/8 to 10.9.9.9/24").unwrap();
    assert_eq!(set.rules[0].to_string(), "pass from 10.0.0.0/8 to 10.9.9.0/24");
}

#[test]
fn error_expected_port_names_line_and_column() {
    let e = err("pass all\n# comment\npass in proto tcp from any port http to any\n");
    assert_eq!((e.line, e.column), (3, 33));
    assert_eq!(e.to_string(), "line 3, column 33: expected a port number or range, found \"http\"");
}

#[test]
fn error_kinds_and_positions() {
    let cases: [(&str, usize, usize, &str); 17] = [
        ("allow in all", 1, 1, "expected \"pass\", \"block\" or \"default\", found \"allow\""),
        ("pass in proto tpc all", 1, 15, "expected a protocol"),
        ("pass in proto", 1, 14, "found end of line"),
        ("pass from 10.0.0.300 to any", 1, 11, "expected an address"),
        ("pass from 10.0.0.0/33", 1, 11, "prefix length 33 is longer than the address (32 bits)"),
        ("pass to 2001:db8::/129", 1, 9, "prefix length 129"),
        ("pass from 10.0.0.0/x", 1, 11, "expected an address"),
        ("pass proto tcp to any port 90:80", 1, 28, "port range 90:80 is empty"),
        ("pass proto tcp to any port 70000", 1, 28, "expected a port number or range"),
        ("pass proto icmp to any port 80", 1, 24, "port needs proto tcp or udp"),
        ("pass to any port 80", 1, 13, "port needs proto tcp or udp"),
        ("pass proto tcp all icmp-type 3", 1, 20, "icmp-type needs proto icmp or icmp6"),
        ("pass proto icmp all icmp-type 300", 1, 31, "expected an ICMP type number"),
        ("pass from 10.0.0.1 to ::1", 1, 23, "different families"),
        ("block in all keep state", 1, 14, "keep state is only allowed on pass rules"),
        ("pass in all keep", 1, 17, "expected \"state\" after \"keep\", found end of line"),
        ("\n\n  pass in all quick", 3, 15, "expected end of rule, found \"quick\""),
    ];
    for (text, line, column, msg) in cases {
        let e = err(text);
        assert_eq!((e.line, e.column), (line, column), "{text:?}: {e}");
        assert!(e.to_string().contains(msg), "{text:?}: {e}");
        assert!(e.to_string().starts_with(&format!("line {line}, column {column}: ")));
    }
    let e = err("default drop");
    assert_eq!((e.line, e.column), (1, 9));
    let e = err("pass in bogus");
    assert_eq!((e.line, e.column), (1, 9));
    assert!(matches!(e.kind, ParseErrorKind::Expected { .. }));
}

#[test]
fn columns_count_characters_not_bytes() {
    // The comment holds multi-byte characters but is cut; the word before it is counted in chars.
    let e = err("pass\u{a0}in é # ünïcode");
    assert_eq!((e.line, e.column), (1, 9), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn emit_then_parse_is_identity(set in common::arb_ruleset(20, true)) {
        let text = set.to_string();
        let back = parse_rules(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(back, set);
    }

    #[test]
    fn parser_never_panics(text in "\\PC{0,200}") {
        let _ = parse_rules(&text);
    }

    #[test]
    fn parser_never_panics_on_near_rules(
        words in prop::collection::vec(prop::sample::select(vec![
            "pass", "block", "in", "out", "quick", "proto", "tcp", "udp", "icmp", "icmp6", "from",
            "to", "any", "all", "port", "80", "1:2", "2:1", "10.0.0.0/8", "::/0", "::1",
            "icmp-type", "8", "keep", "state", "default", "#", "\n", "65536", "/", ":",
        ]), 0..16)
    ) {
        let _ = parse_rules(&words.join(" "));
    }
}
