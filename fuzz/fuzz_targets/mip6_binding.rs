//! Fuzz target: a home agent (RFC 6275 §10.3) fed a sequence of Binding Updates with arbitrary
//! fields, SA identities (none, the claimed node's, another node's), raw Mobility Header bytes
//! and forward jumps in time, with a mobile node taking arbitrary bytes as Binding
//! Acknowledgements on the side. Invariants: nothing panics; the cache changes only for the
//! home address a BU claimed, only when it was accepted and came in that node's SA (RFC 3776
//! §4.1), and each entry records that SA; `expire` returns exactly the due entries and leaves
//! none behind.
#![no_main]

use std::collections::BTreeMap;
use std::net::Ipv6Addr;

use ipsec::{Spi, Time};
use libfuzzer_sys::fuzz_target;
use mip6::{
    Binding, Decision, HomeAgent, HomeAgentConfig, InboundMh, MobileNode, MobileNodeConfig,
    SaIdentity,
};
use wire::mip6::{BindingUpdate, Body, Message, MobilityOption};

const HA: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);

/// Node `i`'s home address; nodes 6 and 7 are off the home prefix.
fn home(i: u8) -> Ipv6Addr {
    let net = if i % 8 >= 6 { 9 } else { 1 };
    Ipv6Addr::new(0x2001, 0xdb8, net, 0, 0, 0, 0, 0x100 + u16::from(i % 8))
}

fn snapshot(ha: &HomeAgent) -> BTreeMap<Ipv6Addr, Binding> {
    ha.cache().iter().map(|b| (b.home_address, b)).collect()
}

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes([self.u8()?, self.u8()?]))
    }
    fn bytes(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}

fuzz_target!(|data: &[u8]| {
    let mut ha = HomeAgent::new(HomeAgentConfig {
        address: HA,
        home_prefix: Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0),
        home_prefix_len: 64,
        max_lifetime_units: 40,
        capacity: 4,
    });
    ha.serve_only((0..5).map(home));
    let mn_cfg = MobileNodeConfig { home_address: home(0), home_agent: HA, lifetime_units: 10 };
    let mut mn = MobileNode::new(mn_cfg, Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 1), 0);
    let mut now = 1_000u64;
    let mut input = Input(data);
    while let Some(op) = input.u8() {
        let before = snapshot(&ha);
        match op % 5 {
            0 | 1 => {
                let (Some(node), Some(sa_pick), Some(sequence), Some(lifetime), Some(flags)) =
                    (input.u8(), input.u8(), input.u16(), input.u16(), input.u8())
                else {
                    return;
                };
                let h = home(node);
                let sa = match sa_pick % 3 {
                    0 => None,
                    1 => {
                        Some(SaIdentity { spi: Spi(u32::from(node % 8) + 0x100), home_address: h })
                    }
                    _ => Some(SaIdentity { spi: Spi(7), home_address: home(sa_pick / 3) }),
                };
                let care_of = Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, u16::from(flags), 1);
                let mut options = Vec::new();
                if flags & 0x10 != 0 {
                    options.push(MobilityOption::AlternateCareOfAddress(if flags & 0x20 != 0 {
                        h
                    } else {
                        Ipv6Addr::from([0xff; 16])
                    }));
                }
                let bu = BindingUpdate {
                    sequence,
                    acknowledge: flags & 1 != 0,
                    home_registration: flags & 2 != 0,
                    link_local_compatibility: flags & 4 != 0,
                    key_management_mobility: flags & 8 != 0,
                    lifetime: lifetime % 64,
                    options,
                };
                let ck_src = if flags & 0x40 != 0 { care_of } else { h };
                let mh = Message::new(Body::BindingUpdate(bu))
                    .to_vec_with_checksum(ck_src, HA)
                    .expect("a BU emits");
                let hao = (flags & 0x80 == 0).then_some(h);
                let src = if hao.is_some() { care_of } else { h };
                let m = InboundMh { src, dst: HA, home_address_option: hao, sa, mh: &mh };
                // Op 1 goes through the batch entry point, which must decide the same way.
                let d = if op % 5 == 1 {
                    let mut ds = ha.handle_batch(&[m], Time::from_secs(now));
                    assert_eq!(ds.len(), 1);
                    ds.remove(0)
                } else {
                    ha.handle(&m, Time::from_secs(now))
                };
                check_change(&before, &ha, &d, h, sa);
            }
            2 => {
                let (Some(len), Some(sa_pick)) = (input.u8(), input.u8()) else { return };
                let mh = input.bytes(usize::from(len)).to_vec();
                let h = home(sa_pick);
                let sa =
                    (sa_pick & 0x80 != 0).then_some(SaIdentity { spi: Spi(1), home_address: h });
                let m = InboundMh { src: h, dst: HA, home_address_option: None, sa, mh: &mh };
                let d = ha.handle(&m, Time::from_secs(now));
                check_change(&before, &ha, &d, h, sa);
                let _ = mn.on_binding_ack(HA, home(0), &mh);
                let _ = mn.poll(Time::from_secs(now));
            }
            3 => {
                let Some(secs) = input.u16() else { return };
                now += u64::from(secs);
            }
            _ => {
                let gone = ha.expire(Time::from_secs(now));
                let after = snapshot(&ha);
                assert_eq!(gone.len() + after.len(), before.len(), "expire lost or made entries");
                for b in &gone {
                    assert!(b.expires.0 / 1_000_000 <= now, "expired early: {b:?}");
                    assert_eq!(before.get(&b.home_address), Some(b));
                }
                assert!(after.values().all(|b| b.expires.0 / 1_000_000 > now), "due entry left");
                assert!(gone.windows(2).all(|w| w[0].expires <= w[1].expires));
            }
        }
        assert!(ha.cache().len() <= ha.cache().capacity());
    }
});

/// The cache may differ from `before` only at `h`, only after an acceptance, and only when the
/// SA was the one for `h`; an entry made or updated names that SA.
fn check_change(
    before: &BTreeMap<Ipv6Addr, Binding>,
    ha: &HomeAgent,
    d: &Decision,
    h: Ipv6Addr,
    sa: Option<SaIdentity>,
) {
    let after = snapshot(ha);
    let mut changed: Vec<Ipv6Addr> =
        before.iter().filter(|(k, v)| after.get(*k) != Some(*v)).map(|(k, _)| *k).collect();
    changed.extend(after.keys().filter(|k| !before.contains_key(*k)));
    if changed.is_empty() {
        return;
    }
    assert_eq!(changed, vec![h], "an entry changed for another home address: {d:?}");
    assert!(matches!(d, Decision::Accepted { .. }), "cache changed without acceptance: {d:?}");
    let sa = sa.expect("cache changed for an unprotected BU");
    assert_eq!(sa.home_address, h, "cache changed through another node's SA");
    if let Some(b) = after.get(&h) {
        assert_eq!(b.spi, sa.spi);
    }
}
