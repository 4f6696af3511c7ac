//! Tests of the SPD table: order by priority then installation, replacement in place, the
//! per-policy acquire limit, and the indexed lookup against a plain ordered list (the model).

use super::*;
use crate::spd::{Prefix, Selector};
use proptest::prelude::*;

fn entry(src: &str, dst: &str, action: Action) -> SpdEntry {
    let p = |s: &str| s.parse::<Prefix>().unwrap_or(Prefix::any(false));
    SpdEntry {
        selector: Selector {
            src: p(src),
            dst: p(dst),
            proto: None,
            src_ports: None,
            dst_ports: None,
        },
        action,
    }
}

fn ids(t: &SpdTable) -> Vec<PolicyId> {
    t.iter().map(|(id, _, _)| id).collect()
}

fn udp(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut p = vec![0x45, 0, 0, 28, 0, 1, 0x40, 0, 64, 17, 0, 0];
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 8, 0, 0]);
    p
}

/// Every SA index named by a `Protect` action, once per entry that names it: the walk that
/// `SpdTable::names` answers without.
fn referenced(t: &SpdTable) -> impl Iterator<Item = usize> + '_ {
    t.slots.iter().flatten().flat_map(|s| handles(&s.entry.action)).copied()
}

fn lookup_id(t: &SpdTable, p: &[u8]) -> Option<PolicyId> {
    let l = IpLayout::parse(p).ok()?;
    let (i, _) = t.lookup(p, &l)?;
    t.slot(i).map(|s| s.id)
}

#[test]
fn priority_then_installation_order() {
    let mut t = SpdTable::default();
    t.set(1, 100, entry("0.0.0.0/0", "10.0.0.1/32", Action::Bypass));
    t.set(2, 50, entry("0.0.0.0/0", "10.0.0.2/32", Action::Bypass));
    t.set(3, 100, entry("0.0.0.0/0", "10.0.0.0/24", Action::Bypass));
    t.set(4, 0, entry("0.0.0.0/0", "10.0.0.4", Action::Discard));
    assert_eq!(ids(&t), [4, 2, 1, 3]);
    // Same priority: replaced in place. Other priority: moved.
    t.set(2, 50, entry("0.0.0.0/0", "10.0.0.2", Action::Protect(vec![7])));
    assert_eq!(ids(&t), [4, 2, 1, 3]);
    assert_eq!(t.get(2).map(|e| e.action.clone()), Some(Action::Protect(vec![7])));
    t.set(4, 200, entry("0.0.0.0/0", "10.0.0.4", Action::Discard));
    assert_eq!(ids(&t), [2, 1, 3, 4]);
    assert!(t.remove(1).is_some());
    assert!(t.remove(1).is_none());
    assert_eq!(ids(&t), [2, 3, 4]);
    assert_eq!(referenced(&t).collect::<Vec<_>>(), [7]);
    let auto = t.push(entry("0.0.0.0/0", "10.0.0.9", Action::Bypass));
    assert!(auto >= AUTO_ID_BASE);
    assert_eq!(ids(&t), [2, 3, 4, auto], "default priority 1000 sorts after 200");
    // The /24 (priority 100) comes before the host entry 10.0.0.4 (priority 200).
    assert_eq!(lookup_id(&t, &udp([1, 1, 1, 1], [10, 0, 0, 4])), Some(3));
    assert_eq!(lookup_id(&t, &udp([1, 1, 1, 1], [10, 0, 0, 2])), Some(2));
    assert_eq!(lookup_id(&t, &udp([1, 1, 1, 1], [10, 0, 1, 2])), None);
}

/// The verdict read from the slot's first line says what the entry's action says, for a
/// single SA (inline), a bundle, an empty bundle, a handle too large to inline, and the rest.
#[test]
fn verdict_agrees_with_action() {
    let big = u32::MAX as usize + 1;
    let cases = [
        (Action::Protect(vec![7]), Verdict::Protect(Sas::One(7))),
        (Action::Protect(vec![3, 4]), Verdict::Protect(Sas::Many(&[3, 4]))),
        (Action::Protect(vec![]), Verdict::Protect(Sas::Many(&[]))),
        (Action::Protect(vec![big]), Verdict::Protect(Sas::Many(&[big]))),
        (Action::Bypass, Verdict::Bypass),
        (Action::Discard, Verdict::Discard),
    ];
    let p = udp([10, 0, 0, 1], [10, 0, 0, 2]);
    let l = IpLayout::parse(&p).unwrap();
    for (action, want) in cases {
        let mut t = SpdTable::default();
        t.set(1, 10, entry("10.0.0.1", "10.0.0.2", action.clone()));
        let i = t.find(&p, &l).unwrap();
        assert_eq!(t.verdict(i), Some(want));
        assert_eq!(t.lookup(&p, &l).map(|(_, a)| a), Some(&action));
        let sas: Vec<usize> = match want {
            Verdict::Protect(s) => s.iter().collect(),
            _ => vec![],
        };
        let named = match &action {
            Action::Protect(v) => v.clone(),
            _ => vec![],
        };
        assert_eq!(sas, named);
    }
}

#[test]
fn acquire_rate_limited_per_entry() {
    let mut t = SpdTable::default();
    t.set(1, 1, entry("0.0.0.0/0", "10.0.0.1", Action::Protect(vec![])));
    t.set(2, 1, entry("0.0.0.0/0", "10.0.0.2", Action::Protect(vec![])));
    let (a, b) = (t.by_id[&1], t.by_id[&2]);
    let sec = Time::from_secs(1);
    assert_eq!(t.acquire_due(a, Time(10), sec), Some(1));
    assert_eq!(t.acquire_due(a, Time(999_999), sec), None);
    assert_eq!(t.acquire_due(b, Time(20), sec), Some(2), "limits are per policy");
    assert_eq!(t.acquire_due(a, Time(1_000_010), sec), Some(1));
    assert_eq!(t.acquire_due(99, Time(0), sec), None);
    // Replaced at the same priority: the limit carries over.
    t.set(1, 1, entry("0.0.0.0/0", "10.0.0.1", Action::Protect(vec![3])));
    let a = t.by_id[&1];
    assert_eq!(t.acquire_due(a, Time(1_000_020), sec), None);
}

/// One operation on the table and the model.
#[derive(Debug, Clone)]
enum Op {
    Set { id: u64, priority: u32, src: u8, dst: u8 },
    Remove { id: u64 },
    Look { src: u8, dst: u8 },
}

/// Selector shapes: 0..=3 a host of 10.0.0.0/29, 4 the /29, 5 any.
fn prefix(x: u8) -> String {
    match x % 6 {
        h @ 0..=3 => format!("10.0.0.{h}/32"),
        4 => "10.0.0.0/29".into(),
        _ => "0.0.0.0/0".into(),
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..6, 0u32..3, any::<u8>(), any::<u8>()).prop_map(|(id, priority, src, dst)| Op::Set {
            id,
            priority,
            src,
            dst
        }),
        (0u64..6).prop_map(|id| Op::Remove { id }),
        (0u8..8, 0u8..8).prop_map(|(src, dst)| Op::Look { src, dst }),
    ]
}

proptest! {
    /// The indexed lookup finds what a scan of the ordered list finds, whatever the order of
    /// installs, replacements and removals.
    #[test]
    fn lookup_agrees_with_a_scan(ops in proptest::collection::vec(op(), 1..60)) {
        let mut t = SpdTable::default();
        // The model: (priority, seq, id, entry), scanned in order.
        let mut model: Vec<(u32, u64, u64, SpdEntry)> = Vec::new();
        let mut seq = 0u64;
        for o in ops {
            match o {
                Op::Set { id, priority, src, dst } => {
                    let e = entry(&prefix(src), &prefix(dst), Action::Bypass);
                    t.set(id, priority, e.clone());
                    seq += 1;
                    match model.iter_mut().find(|m| m.2 == id) {
                        Some(m) if m.0 == priority => m.3 = e,
                        _ => {
                            model.retain(|m| m.2 != id);
                            model.push((priority, seq, id, e));
                        }
                    }
                }
                Op::Remove { id } => {
                    prop_assert_eq!(t.remove(id).is_some(), model.iter().any(|m| m.2 == id));
                    model.retain(|m| m.2 != id);
                }
                Op::Look { src, dst } => {
                    let p = udp([10, 0, 0, src], [10, 0, 0, dst]);
                    let l = IpLayout::parse(&p).map_err(|_| TestCaseError::fail("layout"))?;
                    model.sort_by_key(|m| (m.0, m.1));
                    let want = model.iter().find(|m| m.3.selector.matches(&p, &l)).map(|m| m.2);
                    prop_assert_eq!(lookup_id(&t, &p), want);
                }
            }
            prop_assert_eq!(t.len(), model.len());
        }
    }
}

proptest! {
    /// `names` (the reference counts) agrees with a walk over every entry's action
    /// (`referenced`), whatever the installs, replacements (which drop the old action's
    /// references) and removals; bundles may name one SA twice.
    #[test]
    fn names_agrees_with_a_walk(
        ops in proptest::collection::vec(
            (any::<bool>(), 0u64..8, proptest::collection::vec(0usize..6, 0..3)),
            1..80,
        ),
    ) {
        let mut t = SpdTable::default();
        for (set, id, sas) in ops {
            if set {
                let action = if sas.is_empty() { Action::Bypass } else { Action::Protect(sas) };
                t.set(id, 100, entry("0.0.0.0/0", &format!("10.0.0.{id}/32"), action));
            } else {
                t.remove(id);
            }
            for sa in 0..6 {
                prop_assert_eq!(t.names(sa), referenced(&t).any(|r| r == sa), "SA {}", sa);
            }
        }
    }
}

/// The batch's lookup passes (`engine_batch.rs`) start fetching the lookup line of every
/// packet's policy, including the policies whose address lies beyond its home slot in the
/// index, which the second pass leaves to the third rather than wait on the next slot's line.
/// With 2,000 host policies some addresses are displaced (the test checks it met some), and
/// without the third pass their lines would go unfetched.
#[test]
fn the_lookup_passes_prefetch_every_packets_policy_line() {
    use crate::types::recorded::{clear, fetched, record};
    let mut t = SpdTable::default();
    let dst = |i: u32| [10, 1, (i >> 8) as u8, i as u8];
    for i in 0..2000u32 {
        let d = std::net::Ipv4Addr::from(dst(i));
        t.set(u64::from(i), 0, entry("0.0.0.0/0", &format!("{d}/32"), Action::Protect(vec![7])));
    }
    let mut displaced = 0;
    for i in 0..2000u32 {
        let p = udp([192, 0, 2, 1], dst(i));
        let Ok(l) = IpLayout::parse(&p) else { panic!("packet {i}") };
        clear();
        let probe = t.probe(&p, &l, record);
        if t.prefetch_candidates(&probe, record) {
            displaced += 1;
            t.prefetch_displaced(&probe, record);
        }
        let Some(e) = t.find_probed(&p, &l, &probe) else { panic!("packet {i}: no policy") };
        let line = std::ptr::from_ref(&t.hot[e]) as usize;
        assert!(fetched().contains(&line), "packet {i}: policy line not fetched");
    }
    assert!(displaced > 0, "no address was displaced: the test proved nothing");
}
