//! Packet filter for hipsec: a pf/IPFilter-style rule language, a classifier whose per-packet
//! cost does not grow with the number of rules, and a linear reference evaluator.
#![forbid(unsafe_code)]
//!
//! # Rule language
//!
//! One rule per line; `#` starts a comment that runs to the end of the line; blank lines are
//! ignored. Words are separated by whitespace and must appear in this order:
//!
//! ```text
//! line      = default | rule
//! default   = "default" ("pass" | "block")
//! rule      = action [dir] ["quick"] ["proto" proto] [hosts] ["icmp-type" number]
//!             ["keep" "state"]
//! action    = "pass" | "block"
//! dir       = "in" | "out"                      ; absent: both directions
//! proto     = "tcp" | "udp" | "icmp" | "icmp6" | "esp" | "ah" | "gre" | number (0-255)
//! hosts     = "all" | ["from" endpoint] ["to" endpoint]   ; absent side: any
//! endpoint  = address ["port" ports]
//! address   = "any" | ipv4 ["/" 0-32] | ipv6 ["/" 0-128]  ; no "/": a single host
//! ports     = number | number ":" number        ; inclusive range, 0-65535
//! ```
//!
//! Constraints checked by the parser: `port` needs `proto tcp` or `proto udp` (or 6/17);
//! `icmp-type` needs `proto icmp` or `proto icmp6`; `from` and `to` prefixes must be of one
//! family; `keep state` only on `pass`; a range's low end must not exceed its high end. Host
//! bits of a prefix are cleared (`10.1.2.3/8` is `10.0.0.0/8`).
//!
//! ```text
//! # default pass, as in IPFilter; uncomment to fail closed
//! # default block
//! block in all
//! pass in quick proto tcp from any to 192.0.2.10 port 22 keep state
//! pass in proto udp from 2001:db8::/32 port 1000:2000 to any
//! block in quick proto icmp from any to any icmp-type 8
//! pass out proto tcp from 10.0.0.0/8 to any keep state
//! ```
//!
//! # Semantics (IPFilter)
//!
//! Rules are evaluated in file order and the **last** matching rule decides, except that a
//! matching rule marked `quick` decides at once. When nothing matches, the rule set's
//! [`RuleSet::default_action`] applies: [`Action::Pass`] unless the file says `default block`.
//!
//! `keep state` on a matching pass rule records the packet's flow (direction, addresses,
//! protocol, ports; not the ICMP type): later packets of that flow, and of its reverse (swapped
//! addresses and ports, opposite direction), pass without consulting the rules. In the
//! [`Classifier`] the state table has a fixed capacity and evicts old entries; there are no
//! timeouts (the library never reads a clock), [`Classifier::flush_state`] clears it.
//!
//! Packets are described by a [`PacketKey`], built by [`PacketKey::from_ip_packet`] from raw
//! IPv4/IPv6 bytes. Non-first fragments carry ports 0 and no ICMP type.
//!
//! # Classifier
//!
//! [`Classifier::compile`] groups rules by mask shape (which fields they constrain and with how
//! many bits) into one hash table per shape (tuple-space search). Each rule gets a priority
//! (quick rules first in file order, then other rules last-first), so the verdict is the
//! highest-priority hit over the shapes; shapes are searched in order of their best priority,
//! stopping when no remaining shape can win. Port ranges are expanded into aligned blocks of
//! 1, 16, 256, 4096 or 65536 ports, so each block is an exact hash key. The number of shapes is
//! capped ([`ClassifierConfig::max_shapes`], default 64), and so is the number of entries: a
//! crafted rule set gets a [`CompileError`] instead of a slow classifier. A fixed-size flow
//! cache in front answers repeated flows with one probe; it is flushed on recompile.

mod classifier;
mod flowtable;
mod hash;
mod key;
mod linear;
mod parse;
mod ports;
mod rule;
mod tuple;

pub mod bench;

pub use classifier::{
    Classifier, ClassifierConfig, ClassifierStats, DEFAULT_CACHE_ENTRIES, DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_SHAPES, DEFAULT_STATE_ENTRIES, Verdict,
};
pub use key::{KeyError, PacketKey};
pub use linear::LinearFilter;
pub use parse::{ParseError, ParseErrorKind, parse_rules};
pub use rule::{
    Action, Direction, Endpoint, IpNet, NetError, PROTO_ICMP, PROTO_ICMP6, PROTO_TCP, PROTO_UDP,
    PortRange, Rule, RuleSet,
};
pub use tuple::{CompileError, MAX_RULES};
