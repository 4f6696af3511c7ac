//! From a completed base exchange to what the control plane installs: an ESP SA pair in BEET
//! mode between the two HITs (RFC 7402 §5: the HITs are the inner addresses, never on the wire;
//! the locators are: as IP protocol 50, or in UDP to the peer's ESP port with `[hip] encap`),
//! and the policy between the HITs.

use crate::datapath::mailbox::{InKey, OutKey, PolicyAction, PolicySpec};
use crate::keying::plane::SaSpec;
use hip::HostIdentityTag;
use hip::esp::EspKeys;
use ipsec::spd::{Prefix, Selector};
use ipsec::{Lifetime, Mode, Protocol, SaParams, Spi};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// Priority of HIP's policies between two HITs.
pub const HIP_POLICY_PRIORITY: u32 = 1_100;
/// Priority of the traps that start a base exchange: below the association's own policy.
pub const HIP_TRAP_PRIORITY: u32 = 2_100;

fn hit_addr(h: &HostIdentityTag) -> IpAddr {
    IpAddr::V6(Ipv6Addr::from(h.0))
}

/// The inbound and outbound SAs of `keys` between our HIT and the peer's (an association's
/// first pair, or one a rekey made); `raw_ip`: ESP goes as IP protocol 50 to the peer's
/// locator (RFC 7402), else in UDP to `peer`.
pub fn pair(
    me: &HostIdentityTag,
    peer_hit: &HostIdentityTag,
    keys: &EspKeys,
    peer: SocketAddr,
    raw_ip: bool,
) -> (SaSpec, SaSpec) {
    let (me, them) = (hit_addr(me), hit_addr(peer_hit));
    let params = |spi: u32, src, dst, enc: &[u8], auth: &[u8]| SaParams {
        spi: Spi(spi),
        protocol: Protocol::Esp(keys.suite),
        mode: Mode::Transport,
        src,
        dst,
        enc_key: zeroize::Zeroizing::new(enc.to_vec()),
        auth_key: zeroize::Zeroizing::new(auth.to_vec()),
        esn: false,
        replay_window: crate::config::sa::DEFAULT_REPLAY_WINDOW,
        soft: Lifetime::default(),
        hard: Lifetime::default(),
    };
    let name = |d: &str| Some(format!("hip-{peer_hit}-{d}"));
    let inbound = SaSpec {
        params: params(keys.spi_in, them, me, &keys.enc_in, &keys.auth_in),
        lane: 0,
        endpoint: Some(peer),
        beet: true,
        raw_ip,
        name: name("in"),
    };
    let outbound = SaSpec {
        params: params(keys.spi_out, me, them, &keys.enc_out, &keys.auth_out),
        lane: 0,
        endpoint: Some(peer),
        beet: true,
        raw_ip,
        name: name("out"),
    };
    (inbound, outbound)
}

fn selector(me: &HostIdentityTag, peer: &HostIdentityTag) -> Selector {
    Selector {
        src: Prefix { addr: hit_addr(me), len: 128 },
        dst: Prefix { addr: hit_addr(peer), len: 128 },
        proto: None,
        src_ports: None,
        dst_ports: None,
    }
}

/// Our HIT to the peer's, protected by `out` and admitting `inb` the other way.
pub fn policy(me: &HostIdentityTag, peer: &HostIdentityTag, out: OutKey, inb: InKey) -> PolicySpec {
    PolicySpec {
        selector: selector(me, peer),
        action: PolicyAction::Protect(vec![out]),
        in_sas: vec![inb],
        priority: HIP_POLICY_PRIORITY,
    }
}

/// The trap for a known peer (RFC 4301 §4.4.1.1): protected by an SA that does not exist
/// (SPI 0 is reserved), so the first packet to its HIT is dropped, never sent in clear, and
/// raises the acquire that starts the base exchange.
pub fn trap(me: &HostIdentityTag, peer: &HostIdentityTag) -> PolicySpec {
    PolicySpec {
        selector: selector(me, peer),
        action: PolicyAction::Protect(vec![OutKey { spi: 0, proto: 50, dst: hit_addr(peer) }]),
        in_sas: Vec::new(),
        priority: HIP_TRAP_PRIORITY,
    }
}
