//! The batch entry points give, packet by packet, exactly what the per-packet ones give: same
//! outcomes, same bytes, same counters — whatever the mix of peers, policies and damage in a
//! batch (`engine_batch.rs` only reorders the lookups).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]
mod common;

use common::*;
use etherparse::PacketBuilder;
use ipsec::spd::{Action, Prefix, Selector, SpdEntry};
use ipsec::types::no_prefetch;
use ipsec::{DropReason, Engine, Mode, PacketBuf, Processed, Time};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr};

const PEERS: u8 = 4;

fn inner(p: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 2, 0, 32 + p)
}

fn host(a: Ipv4Addr) -> Prefix {
    Prefix { addr: IpAddr::V4(a), len: 32 }
}

fn pair() -> (Engine, Engine) {
    pair_with(SPI_RUN)
}

/// A sender with one SA and host policy per peer, a discard policy for peer PEERS, and a
/// receiver holding the matching inbound SAs and policies; peer p's SPI is 0x100 + p × `step`.
fn pair_with(step: u32) -> (Engine, Engine) {
    let mut tx = Engine::new(crypto::default_provider());
    let mut rx = Engine::new(crypto::default_provider());
    for p in 0..=PEERS {
        let sel = Selector {
            src: host(Ipv4Addr::new(10, 1, 0, 16)),
            dst: host(inner(p)),
            proto: None,
            src_ports: None,
            dst_ports: None,
        };
        if p == PEERS {
            tx.set_policy(100, 10, SpdEntry { selector: sel, action: Action::Discard }).unwrap();
            continue;
        }
        let params = esp_params(
            "aes128gcm".parse().unwrap(),
            Mode::Tunnel,
            false,
            false,
            0x100 + p as u32 * step,
        );
        let h = tx.add_outbound(&params, Time(0)).unwrap();
        let hi = rx.add_inbound(&params, Time(0)).unwrap();
        let id = p as u64 + 1;
        let e = SpdEntry { selector: sel.clone(), action: Action::Protect(vec![h.0]) };
        tx.set_policy(id, 10, e).unwrap();
        rx.set_inbound_policy(
            id,
            10,
            SpdEntry { selector: sel, action: Action::Protect(vec![hi.0]) },
        )
        .unwrap();
    }
    (tx, rx)
}

/// Packet kinds: 0..PEERS to a peer, PEERS discarded by policy, then no policy, then garbage.
fn packet_for(kind: u8, n: u8) -> Vec<u8> {
    let dst = match kind {
        k if k <= PEERS => inner(k),
        k if k == PEERS + 1 => Ipv4Addr::new(192, 0, 2, 99),
        _ => return vec![0x45, n, 0, 3],
    };
    let mut out = Vec::new();
    PacketBuilder::ipv4([10, 1, 0, 16], dst.octets(), 64)
        .udp(40000, 5001)
        .write(&mut out, &[n; 40])
        .unwrap();
    out
}

type Outcome = Result<Processed, DropReason>;

fn one_by_one(
    e: &mut Engine,
    pkts: &[Vec<u8>],
    f: fn(&mut Engine, &mut PacketBuf, Time) -> Outcome,
) -> (Vec<Outcome>, Vec<Vec<u8>>) {
    let mut bufs = common::bufs_of(pkts);
    let rs = bufs.iter_mut().map(|b| f(e, b, Time(1))).collect();
    (rs, bufs.iter().map(|b| b.as_slice().to_vec()).collect())
}

fn batched(
    e: &mut Engine,
    pkts: &[Vec<u8>],
    f: impl FnOnce(&mut Engine, &mut [PacketBuf], &mut [Outcome], Time),
) -> (Vec<Outcome>, Vec<Vec<u8>>) {
    let mut bufs = common::bufs_of(pkts);
    let mut rs = vec![Err(DropReason::Malformed); pkts.len()];
    f(e, &mut bufs, &mut rs, Time(1));
    (rs, bufs.iter().map(|b| b.as_slice().to_vec()).collect())
}

/// Runs `kinds` through both ways, outbound then inbound (with the sealed packets, some of
/// them replayed or damaged), and compares everything.
fn check(kinds: &[u8], replay: &[usize], flip: &[usize], step: u32) {
    let pkts: Vec<Vec<u8>> =
        kinds.iter().enumerate().map(|(i, &k)| packet_for(k, i as u8)).collect();
    let ((mut tx1, mut rx1), (mut tx2, mut rx2)) = (pair_with(step), pair_with(step));
    let (r1, out1) = one_by_one(&mut tx1, &pkts, Engine::outbound);
    // The prefetch given is called (it only counts here: a prefetch changes nothing a test
    // can see, which is the point of comparing outcomes with it against those without).
    let asked = std::cell::Cell::new(0usize);
    let count = |_: *const u8| asked.set(asked.get() + 1);
    let (r2, out2) = batched(&mut tx2, &pkts, |e, b, r, t| e.outbound_batch(b, r, t, count));
    // A packet it protected had its policy looked up, which prefetches the index slot.
    assert!(!r2.iter().any(|r| r.is_ok()) || asked.get() > 0, "outbound_batch never prefetched");
    assert_eq!(r1, r2, "outbound outcomes");
    assert_eq!(out1, out2, "outbound bytes");
    assert_eq!(tx1.counters(), tx2.counters());
    assert_eq!(tx1.totals(), tx2.totals());
    // Inbound: what was sealed, plus replays and bit flips, plus the unsealed packets.
    let mut wire: Vec<Vec<u8>> = out1.clone();
    wire.extend(replay.iter().filter_map(|&i| out1.get(i % out1.len().max(1)).cloned()));
    for &i in flip {
        if let Some(mut p) = out1.get(i % out1.len().max(1)).cloned() {
            let at = p.len() - 1;
            p[at] ^= 1;
            wire.push(p);
        }
    }
    let (r1, in1) = one_by_one(&mut rx1, &wire, Engine::inbound);
    asked.set(0);
    let (r2, in2) = batched(&mut rx2, &wire, |e, b, r, t| e.inbound_batch(b, r, t, count));
    // A packet it opened had its SA looked up, which prefetches the SAD slot.
    assert!(!r2.iter().any(|r| r.is_ok()) || asked.get() > 0, "inbound_batch never prefetched");
    assert_eq!(r1, r2, "inbound outcomes");
    assert_eq!(in1, in2, "inbound bytes");
    assert_eq!(rx1.counters(), rx2.counters());
    assert_eq!(rx1.totals(), rx2.totals());
}

#[test]
fn a_mixed_batch_matches_packet_by_packet() {
    let kinds = [0, 1, 1, 2, PEERS, 3, PEERS + 1, PEERS + 2, 0, 3, 2, 2];
    check(&kinds, &[0, 3], &[1, 5], SPI_RUN);
    check(&kinds, &[0, 3], &[1, 5], SPI_SHARED_LOW_BITS);
    // And it did protect, discard, miss and reject something.
    let (mut tx, _) = pair();
    let pkts: Vec<Vec<u8>> = kinds.iter().map(|&k| packet_for(k, 0)).collect();
    let (r, _) = batched(&mut tx, &pkts, |e, b, r, t| e.outbound_batch(b, r, t, no_prefetch));
    assert!(r.iter().any(|x| matches!(x, Ok(Processed::Protected { .. }))));
    for d in [DropReason::PolicyDiscard, DropReason::NoPolicy, DropReason::Malformed] {
        assert!(r.contains(&Err(d)), "{d:?} in {r:?}");
    }
}

proptest! {
    #[test]
    fn any_batch_matches_packet_by_packet(
        kinds in proptest::collection::vec(0..PEERS + 3, 0..40),
        replay in proptest::collection::vec(0usize..40, 0..4),
        flip in proptest::collection::vec(0usize..40, 0..4),
        shared in any::<bool>(),
    ) {
        check(&kinds, &replay, &flip, if shared { SPI_SHARED_LOW_BITS } else { SPI_RUN });
    }
}
