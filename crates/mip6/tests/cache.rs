//! The binding cache's timer wheel against a naive model (a map scanned in full), expiry order,
//! and the million-entry size (RFC 6275 §9.1, §10.3.1; the 1,000,000 entries).

use std::collections::BTreeMap;
use std::net::Ipv6Addr;

use ipsec::Time;
use mip6::workload::{self, Workload};
use mip6::{BindingCache, HomeAgent, HomeAgentConfig, InboundMh, SaIdentity};
use proptest::prelude::*;
use wire::mip6::{BindingUpdate, Body, Message};

fn config(capacity: usize, max_units: u16) -> HomeAgentConfig {
    HomeAgentConfig {
        address: workload::HOME_AGENT,
        home_prefix: Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0),
        home_prefix_len: 64,
        max_lifetime_units: max_units,
        capacity,
    }
}

/// Hands a prepared BU to the home agent at second `now`, as the data path would after ESP.
fn handle(ha: &mut HomeAgent, b: &workload::PreparedBu, now: u64) {
    let m = InboundMh {
        src: b.src,
        dst: workload::HOME_AGENT,
        home_address_option: Some(b.home_address),
        sa: Some(b.sa),
        mh: &b.mh,
    };
    let _ = ha.handle(&m, Time::from_secs(now));
}

#[test]
fn entry_size_and_million_entries() {
    println!("binding cache entry: {} octets", BindingCache::ENTRY_BYTES);
    const { assert!(BindingCache::ENTRY_BYTES <= 48) };
    let n = 1_000_000;
    let now = Time::from_secs(1_000);
    let mut w = Workload::new(n, now);
    assert_eq!(w.home_agent.cache().len(), n as usize);
    let bytes = w.home_agent.cache().memory_bytes();
    println!("1,000,000 entries: {} bytes, {} per entry", bytes, bytes / n as usize);
    assert!(bytes / (n as usize) < 128, "{bytes}");
    // Updates at that size are accepted and move entries in the wheel.
    let ups = w.prepare_updates(1000);
    assert!(ups.iter().all(|u| w.apply(u, Time::from_secs(1_001))));
    assert_eq!(w.home_agent.counters().updated, 1000);
    // The capacity is the configured one: one more mobile node is refused.
    let extra = workload::binding_update(n, 0, 0, 150);
    assert!(!w.apply(&extra, Time::from_secs(1_002)));
    // Expiry of everything: the 600 s lifetime ran out.
    let gone = w.home_agent.expire(Time::from_secs(1_000 + 600 + 1));
    assert_eq!(gone.len() as u64 + w.home_agent.cache().len() as u64, u64::from(n));
    assert!(w.home_agent.expire(Time::from_secs(5_000)).len() + gone.len() == n as usize);
    assert!(w.home_agent.cache().is_empty());
}

#[test]
fn expiry_comes_out_in_order_and_only_when_due() {
    let mut ha = HomeAgent::new(config(100, 100));
    let start = 50;
    for (i, units) in [(0u32, 5u16), (1, 1), (2, 3), (3, 1), (4, 2)] {
        handle(&mut ha, &workload::binding_update(i, 0, 1, units), start);
    }
    assert!(ha.expire(Time::from_secs(start + 3)).is_empty());
    let got: Vec<u32> = ha
        .expire(Time::from_secs(start + 12))
        .iter()
        .map(|b| (u128::from(b.home_address) as u32) - 0x100)
        .collect();
    // Lifetimes 4, 4, 8, 12 s: nodes 1 and 3, then 4, then 2; node 0 (20 s) stays.
    assert_eq!(&got[2..], &[4, 2]);
    assert!(got[..2].contains(&1) && got[..2].contains(&3));
    assert_eq!(ha.cache().len(), 1);
    // Time running backwards changes nothing.
    assert!(ha.expire(Time::from_secs(0)).is_empty());
    assert_eq!(ha.expire(Time::from_secs(start + 20)).len(), 1);
}

#[derive(Debug, Clone)]
enum Op {
    Register { node: u8, units: u16 },
    Deregister { node: u8 },
    Advance { secs: u16 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..24, 0u16..40).prop_map(|(node, units)| Op::Register { node, units }),
        (0u8..24).prop_map(|node| Op::Deregister { node }),
        (0u16..300).prop_map(|secs| Op::Advance { secs }),
    ]
}

proptest! {
    /// The wheel agrees with a naive model: same live bindings after every step, and expire
    /// returns exactly the model's due entries, in expiry order. The cap (30 units = 120 s) is
    /// below some of the lifetimes asked, and the jumps in time exceed a lap of the wheel.
    #[test]
    fn wheel_matches_naive_model(ops in prop::collection::vec(op(), 1..80)) {
        let mut ha = HomeAgent::new(config(1000, 30));
        let mut model: BTreeMap<Ipv6Addr, (u64, u16)> = BTreeMap::new();
        let mut now = 1_000u64;
        let mut seq = 0u16;
        for o in ops {
            match o {
                Op::Register { .. } | Op::Deregister { .. } => {
                    let (node, units) = match o {
                        Op::Register { node, units } => (node, units),
                        Op::Deregister { node } => (node, 0),
                        Op::Advance { .. } => (0, 0),
                    };
                    seq = seq.wrapping_add(1);
                    let home = workload::home_address(u32::from(node));
                    let b = BindingUpdate { sequence: seq, acknowledge: true, home_registration: true, lifetime: units, ..BindingUpdate::default() };
                    let mh = Message::new(Body::BindingUpdate(b)).to_vec_with_checksum(home, workload::HOME_AGENT).unwrap_or_default();
                    let sa = Some(SaIdentity { spi: ipsec::Spi(9), home_address: home });
                    let m = InboundMh { src: Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 5), dst: workload::HOME_AGENT, home_address_option: Some(home), sa, mh: &mh };
                    let _ = ha.handle(&m, Time::from_secs(now));
                    // The model drops expired entries first (the HA compares sequence numbers
                    // only with live ones).
                    model.retain(|_, (exp, _)| *exp > now);
                    if units == 0 {
                        model.remove(&home);
                    } else {
                        model.insert(home, (now + u64::from(units.min(30)) * 4, seq));
                    }
                }
                Op::Advance { secs } => {
                    now += u64::from(secs);
                    let got: Vec<(Ipv6Addr, u64)> = ha.expire(Time::from_secs(now)).iter().map(|b| (b.home_address, b.expires.0 / 1_000_000)).collect();
                    let mut want: Vec<(Ipv6Addr, u64)> = model.iter().filter(|(_, (e, _))| *e <= now).map(|(h, (e, _))| (*h, *e)).collect();
                    model.retain(|_, (e, _)| *e > now);
                    let mut sorted = got.clone();
                    sorted.sort_by_key(|x| (x.1, x.0));
                    want.sort_by_key(|x| (x.1, x.0));
                    prop_assert_eq!(&sorted, &want);
                    prop_assert!(got.windows(2).all(|w| w[0].1 <= w[1].1), "expiry order");
                }
            }
            let live: BTreeMap<Ipv6Addr, (u64, u16)> = ha.cache().iter().filter(|b| b.expires.0 / 1_000_000 > now).map(|b| (b.home_address, (b.expires.0 / 1_000_000, b.sequence))).collect();
            let model_live: BTreeMap<Ipv6Addr, (u64, u16)> = model.iter().filter(|(_, (e, _))| *e > now).map(|(h, v)| (*h, *v)).collect();
            prop_assert_eq!(live, model_live);
        }
    }
}

/// Refreshes leave stale mentions in the wheel; they are bounded (rebuilds happen) and never
/// make an entry expire early or late. 10 nodes re-register 3 times a second for 300 s with
/// changing lifetimes, expiry runs every 50 s (so the wheel does not drain its stale mentions
/// itself), and each node must expire exactly when its last registration says.
#[test]
fn wheel_rebuilds_keep_expiry_exact() {
    let mut ha = HomeAgent::new(config(100, 30));
    let mut due: BTreeMap<Ipv6Addr, u64> = BTreeMap::new();
    let mut seq = 0u16;
    for step in 0..300u64 {
        let now = 1_000 + step;
        for (node, round) in (0..10u32).flat_map(|n| (0..3u64).map(move |r| (n, r))) {
            seq = seq.wrapping_add(1);
            let units = ((step + u64::from(node) + round) % 7 + 1) as u16;
            let b = workload::binding_update(node, 0, seq, units);
            handle(&mut ha, &b, now);
            due.insert(b.home_address, now + u64::from(units) * 4);
        }
        if step % 50 == 49 {
            assert!(ha.expire(Time::from_secs(now)).is_empty(), "nothing is due before its time");
        }
        let (mentions, _) = ha.cache().wheel_mentions();
        assert!(mentions <= 2 * 10 + 1024 + 1, "{mentions} mentions for 10 entries");
    }
    let (_, rebuilds) = ha.cache().wheel_mentions();
    assert!(rebuilds >= 2, "9,000 refreshes of 10 entries rebuild the wheel ({rebuilds})");
    let mut got = BTreeMap::new();
    for t in 1_300..1_400u64 {
        for b in ha.expire(Time::from_secs(t)) {
            assert_eq!(b.expires.0 / 1_000_000, t, "expired in its own second");
            got.insert(b.home_address, t);
        }
    }
    assert_eq!(got, due);
    assert!(ha.cache().is_empty());
}
