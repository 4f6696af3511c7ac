//! Parser for the rule language described in the crate docs: one rule per line, `#` comments,
//! errors naming line, column and what was expected.

use std::net::IpAddr;

use crate::rule::{
    Action, Direction, Endpoint, IpNet, PROTO_ICMP, PROTO_ICMP6, PROTO_NAMES, PROTO_TCP, PROTO_UDP,
    PortRange, Rule, RuleSet, max_len,
};

/// A rule file could not be parsed. `line` and `column` are 1-based; the column counts
/// characters and points at the start of the offending word.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {kind}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column (in characters) of the offending word.
    pub column: usize,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What is wrong at the place a [`ParseError`] points to.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// A word of the wrong kind, or the line ended early.
    #[error("expected {expected}, found {found}")]
    Expected {
        /// What the grammar allows here.
        expected: &'static str,
        /// The word found (quoted), or `end of line`.
        found: String,
    },
    /// A prefix length longer than the address.
    #[error("prefix length {len} is longer than the address ({max} bits)")]
    PrefixTooLong {
        /// The length written.
        len: u32,
        /// 32 or 128.
        max: u8,
    },
    /// A port range whose low end is above its high end.
    #[error("port range {lo}:{hi} is empty (low end above high end)")]
    EmptyPortRange {
        /// Low end written.
        lo: u16,
        /// High end written.
        hi: u16,
    },
    /// `port` on a rule whose protocol is not `tcp` or `udp`.
    #[error("port needs proto tcp or udp")]
    PortWithoutTcpUdp,
    /// `icmp-type` on a rule whose protocol is not `icmp` or `icmp6`.
    #[error("icmp-type needs proto icmp or icmp6")]
    IcmpTypeWithoutIcmp,
    /// `from` and `to` name prefixes of different address families.
    #[error("from and to addresses are of different families (IPv4 and IPv6)")]
    MixedFamilies,
    /// `keep state` on a `block` rule.
    #[error("keep state is only allowed on pass rules")]
    KeepStateOnBlock,
}

/// A whitespace-separated word and its 1-based column.
#[derive(Clone, Copy, Debug)]
struct Word<'a> {
    text: &'a str,
    column: usize,
}

struct Line<'a> {
    number: usize,
    words: Vec<Word<'a>>,
    pos: usize,
    /// Column just past the last character, for "end of line" errors.
    end_column: usize,
}

impl<'a> Line<'a> {
    fn new(number: usize, text: &'a str) -> Line<'a> {
        let text = match text.find('#') {
            Some(i) => &text[..i],
            None => text,
        };
        let mut words = Vec::new();
        let mut start: Option<(usize, usize)> = None; // (byte index, column)
        let mut column = 0;
        for (i, c) in text.char_indices() {
            column += 1;
            if c.is_whitespace() {
                if let Some((s, col)) = start.take() {
                    words.push(Word { text: &text[s..i], column: col });
                }
            } else if start.is_none() {
                start = Some((i, column));
            }
        }
        if let Some((s, col)) = start {
            words.push(Word { text: &text[s..], column: col });
        }
        Line { number, words, pos: 0, end_column: column + 1 }
    }

    fn peek(&self) -> Option<Word<'a>> {
        self.words.get(self.pos).copied()
    }

    fn peek_is(&self, keyword: &str) -> bool {
        self.peek().is_some_and(|w| w.text == keyword)
    }

    fn next(&mut self) -> Option<Word<'a>> {
        let w = self.peek();
        if w.is_some() {
            self.pos += 1;
        }
        w
    }

    fn error_at(&self, word: Option<Word<'a>>, kind: ParseErrorKind) -> ParseError {
        ParseError { line: self.number, column: word.map_or(self.end_column, |w| w.column), kind }
    }

    fn expected(&self, word: Option<Word<'a>>, expected: &'static str) -> ParseError {
        let found = word.map_or_else(|| "end of line".to_string(), |w| format!("{:?}", w.text));
        self.error_at(word, ParseErrorKind::Expected { expected, found })
    }

    /// Consume the next word if it is `keyword`.
    fn eat(&mut self, keyword: &str) -> bool {
        if self.peek_is(keyword) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Consume `keyword` or fail.
    fn expect(&mut self, keyword: &'static str, expected: &'static str) -> Result<(), ParseError> {
        if self.eat(keyword) { Ok(()) } else { Err(self.expected(self.peek(), expected)) }
    }
}

/// Parse a rule file (see the crate docs for the grammar).
pub fn parse_rules(text: &str) -> Result<RuleSet, ParseError> {
    let mut set = RuleSet::default();
    for (i, raw) in text.lines().enumerate() {
        let mut line = Line::new(i + 1, raw);
        let Some(first) = line.peek() else {
            continue;
        };
        if first.text == "default" {
            line.next();
            let w = line.next();
            set.default_action = match w.map(|w| w.text) {
                Some("pass") => Action::Pass,
                Some("block") => Action::Block,
                _ => return Err(line.expected(w, "\"pass\" or \"block\"")),
            };
        } else {
            set.rules.push(parse_rule(&mut line)?);
        }
        if let Some(w) = line.peek() {
            return Err(line.expected(Some(w), "end of rule"));
        }
    }
    Ok(set)
}

fn parse_rule(line: &mut Line<'_>) -> Result<Rule, ParseError> {
    let w = line.next();
    let action = match w.map(|w| w.text) {
        Some("pass") => Action::Pass,
        Some("block") => Action::Block,
        _ => return Err(line.expected(w, "\"pass\", \"block\" or \"default\"")),
    };
    let mut rule = Rule::new(action);
    if line.eat("in") {
        rule.dir = Some(Direction::In);
    } else if line.eat("out") {
        rule.dir = Some(Direction::Out);
    }
    rule.quick = line.eat("quick");
    if line.eat("proto") {
        rule.proto = Some(parse_proto(line)?);
    }
    if !line.eat("all") {
        if line.eat("from") {
            rule.from = parse_endpoint(line, rule.proto)?;
        }
        if line.eat("to") {
            let to_word = line.peek();
            rule.to = parse_endpoint(line, rule.proto)?;
            if let (Some(a), Some(b)) = (rule.from.net, rule.to.net) {
                if a.addr().is_ipv4() != b.addr().is_ipv4() {
                    return Err(line.error_at(to_word, ParseErrorKind::MixedFamilies));
                }
            }
        } else if line.peek().is_some() && !line.peek_is("icmp-type") && !line.peek_is("keep") {
            return Err(line.expected(
                line.peek(),
                "\"all\", \"from\", \"to\", \"icmp-type\" or \"keep state\"",
            ));
        }
    }
    if line.peek_is("icmp-type") {
        let kw = line.next();
        if !matches!(rule.proto, Some(PROTO_ICMP | PROTO_ICMP6)) {
            return Err(line.error_at(kw, ParseErrorKind::IcmpTypeWithoutIcmp));
        }
        let w = line.next();
        rule.icmp_type = Some(
            w.and_then(|w| parse_decimal::<u8>(w.text))
                .ok_or_else(|| line.expected(w, "an ICMP type number (0-255)"))?,
        );
    }
    if line.peek_is("keep") {
        let kw = line.next();
        line.expect("state", "\"state\" after \"keep\"")?;
        if action != Action::Pass {
            return Err(line.error_at(kw, ParseErrorKind::KeepStateOnBlock));
        }
        rule.keep_state = true;
    }
    Ok(rule)
}

fn parse_proto(line: &mut Line<'_>) -> Result<u8, ParseError> {
    let w = line.next();
    let text = w.map_or("", |w| w.text);
    if let Some((_, n)) = PROTO_NAMES.iter().find(|(name, _)| *name == text) {
        return Ok(*n);
    }
    parse_decimal::<u8>(text).ok_or_else(|| {
        line.expected(w, "a protocol (tcp, udp, icmp, icmp6, esp, ah, gre or a number 0-255)")
    })
}

fn parse_endpoint(line: &mut Line<'_>, proto: Option<u8>) -> Result<Endpoint, ParseError> {
    let w = line.next();
    let net = match w.map(|w| w.text) {
        Some("any") => None,
        Some(text) => Some(parse_net(line, w, text)?),
        None => return Err(line.expected(w, "an address, a prefix or \"any\"")),
    };
    let mut ports = None;
    if line.peek_is("port") {
        let kw = line.next();
        if !matches!(proto, Some(PROTO_TCP | PROTO_UDP)) {
            return Err(line.error_at(kw, ParseErrorKind::PortWithoutTcpUdp));
        }
        ports = Some(parse_ports(line)?);
    }
    Ok(Endpoint { net, ports })
}

fn parse_net<'a>(line: &Line<'a>, w: Option<Word<'a>>, text: &str) -> Result<IpNet, ParseError> {
    const WHAT: &str = "an address, a prefix or \"any\"";
    let (addr_text, len_text) = match text.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (text, None),
    };
    let addr: IpAddr = addr_text.parse().map_err(|_| line.expected(w, WHAT))?;
    let max = max_len(addr);
    let len = match len_text {
        None => max,
        Some(l) => {
            let len = parse_decimal::<u32>(l).ok_or_else(|| line.expected(w, WHAT))?;
            u8::try_from(len)
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(|| line.error_at(w, ParseErrorKind::PrefixTooLong { len, max }))?
        }
    };
    IpNet::new(addr, len)
        .map_err(|_| line.error_at(w, ParseErrorKind::PrefixTooLong { len: u32::from(len), max }))
}

fn parse_ports(line: &mut Line<'_>) -> Result<PortRange, ParseError> {
    const WHAT: &str = "a port number or range";
    let w = line.next();
    let text = w.map_or("", |w| w.text);
    let (lo, hi) = match text.split_once(':') {
        Some((a, b)) => (parse_decimal::<u16>(a), parse_decimal::<u16>(b)),
        None => {
            let p = parse_decimal::<u16>(text);
            (p, p)
        }
    };
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return Err(line.expected(w, WHAT));
    };
    PortRange::new(lo, hi)
        .ok_or_else(|| line.error_at(w, ParseErrorKind::EmptyPortRange { lo, hi }))
}

/// Plain decimal digits only (no sign, no spaces), within the target type.
fn parse_decimal<T: std::str::FromStr>(text: &str) -> Option<T> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}
