//! `Engine::inbound_from` (headers copied, an AEAD decrypting straight from the receive buffer)
//! against `Engine::inbound` (everything copied, opened in place): for every ESP suite and AH
//! algorithm, both modes and both IP versions, intact, damaged, replayed and cut packets give the
//! same outcome, the same bytes and the same counters.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]
mod common;

use common::*;
use crypto::EspSuite;
use ipsec::{Engine, Mode, PacketBuf, Time};

fn engines(p: &ipsec::SaParams) -> (Engine, Engine, Engine, ipsec::engine::SaHandle) {
    let mut tx = Engine::new(crypto::default_provider());
    let mut a = Engine::new(crypto::default_provider());
    let mut b = Engine::new(crypto::default_provider());
    let h = tx.add_outbound(p, Time(0)).unwrap();
    a.add_inbound(p, Time(0)).unwrap();
    b.add_inbound(p, Time(0)).unwrap();
    (tx, a, b, h)
}

/// Opens `wire` both ways and checks that they agree.
fn both_ways(a: &mut Engine, b: &mut Engine, wire: &[u8], what: &str) {
    let mut copied = PacketBuf::with_max_packet();
    copied.load(wire, 128).unwrap();
    let ra = a.inbound(&mut copied, Time(5));

    let h = wire::IpLayout::parse(wire).map(|l| l.header_len).unwrap_or(20).min(wire.len());
    let mut headers = PacketBuf::with_max_packet();
    headers.load(&wire[..h], 128).unwrap();
    // Room for the rest, filled with junk: inbound_from must not read it.
    headers.append(wire.len() - h).unwrap();
    headers.as_mut_slice()[h..].fill(0xa5);
    let rb = b.inbound_from(&mut headers, &wire[h..], Time(5));

    assert_eq!(ra, rb, "{what}");
    if ra.is_ok() {
        assert_eq!(copied.as_slice(), headers.as_slice(), "{what}");
    }
    assert_eq!(a.counters(), b.counters(), "{what}");
    assert_eq!(a.totals(), b.totals(), "{what}");
}

fn check(p: &ipsec::SaParams, v6: bool, what: &str) {
    let (mut tx, mut a, mut b, h) = engines(p);
    let mut sealed = Vec::new();
    for (i, len) in [0usize, 1, 16, 100, 1400].into_iter().enumerate() {
        let payload: Vec<u8> = (0..len).map(|x| (x * 13 + i) as u8).collect();
        let mut buf = PacketBuf::with_max_packet();
        buf.load(&packet(v6, i % 2 == 0, &payload), 128).unwrap();
        tx.protect_with(&[h], &mut buf, Time(1)).unwrap();
        sealed.push(buf.as_slice().to_vec());
    }
    for (i, w) in sealed.iter().enumerate() {
        // Damage first (an unauthentic packet must not move the window), then the real one,
        // then it again (a replay).
        for at in [w.len() / 2, w.len() - 1, w.len() - 20] {
            let mut bad = w.clone();
            bad[at] ^= 0x40;
            both_ways(&mut a, &mut b, &bad, &format!("{what} #{i} flipped at {at}"));
        }
        both_ways(&mut a, &mut b, &w[..w.len() - 3], &format!("{what} #{i} cut"));
        both_ways(&mut a, &mut b, w, &format!("{what} #{i}"));
        assert_eq!(a.totals().in_packets, i as u64 + 1, "{what} #{i} opens");
        both_ways(&mut a, &mut b, w, &format!("{what} #{i} replayed"));
    }
}

#[test]
fn agrees_with_inbound_for_every_esp_suite() {
    for suite in EspSuite::all() {
        for mode in [Mode::Tunnel, Mode::Transport] {
            for v6 in [false, true] {
                let p = esp_params(suite, mode, v6, false, 0x2000);
                check(&p, v6, &format!("{suite:?} {mode:?} v6={v6}"));
            }
        }
    }
}

#[test]
fn agrees_with_inbound_for_ah() {
    for integ in all_ah() {
        for v6 in [false, true] {
            let p = ah_params(integ, Mode::Tunnel, v6, true, 0x3000);
            check(&p, v6, &format!("AH {integ:?} v6={v6}"));
        }
    }
}

#[test]
fn a_source_of_the_wrong_length_is_malformed() {
    let p = esp_params("aes128gcm".parse().unwrap(), Mode::Tunnel, false, false, 0x2000);
    let (mut tx, _, mut b, h) = engines(&p);
    let mut buf = PacketBuf::with_max_packet();
    buf.load(&packet(false, true, &[7; 100]), 128).unwrap();
    tx.protect_with(&[h], &mut buf, Time(1)).unwrap();
    let w = buf.as_slice().to_vec();
    let mut headers = PacketBuf::with_max_packet();
    headers.load(&w[..20], 128).unwrap();
    headers.append(w.len() - 20).unwrap();
    let r = b.inbound_from(&mut headers, &w[20..w.len() - 1], Time(2));
    assert_eq!(r, Err(ipsec::DropReason::Malformed));
}

#[test]
fn bytes_after_the_ip_length_are_cut_both_ways() {
    for suite in ["aes128gcm", "aes128cbc-sha256"] {
        let p = esp_params(suite.parse().unwrap(), Mode::Tunnel, false, false, 0x2000);
        let (mut tx, mut a, mut b, h) = engines(&p);
        let mut buf = PacketBuf::with_max_packet();
        buf.load(&packet(false, true, &[9; 300]), 128).unwrap();
        tx.protect_with(&[h], &mut buf, Time(1)).unwrap();
        // Link-layer padding after the IP packet (a minimum-size frame, say).
        let mut w = buf.as_slice().to_vec();
        w.extend_from_slice(&[0; 6]);
        both_ways(&mut a, &mut b, &w, suite);
        assert_eq!(b.totals().in_packets, 1, "{suite}");
    }
}

/// `inbound_from_batch` gives, packet by packet, what `inbound_from` gives in a loop: over
/// ESP and AH SAs in one batch, packets alternating between them, some damaged, cut,
/// replayed or addressed to no SA.
#[test]
fn the_batch_form_agrees_with_one_by_one() {
    let params = [
        esp_params("aes128gcm".parse().unwrap(), Mode::Tunnel, false, false, 0x2000),
        esp_params("aes256gcm".parse().unwrap(), Mode::Tunnel, false, false, 0x2001),
        esp_params("aes128cbc-sha256".parse().unwrap(), Mode::Tunnel, false, false, 0x2002),
        ah_params(all_ah()[0], Mode::Tunnel, false, false, 0x2003),
    ];
    let mut tx = Engine::new(crypto::default_provider());
    let (mut a, mut b) =
        (Engine::new(crypto::default_provider()), Engine::new(crypto::default_provider()));
    let hs: Vec<_> = params.iter().map(|p| tx.add_outbound(p, Time(0)).unwrap()).collect();
    for p in &params {
        a.add_inbound(p, Time(0)).unwrap();
        b.add_inbound(p, Time(0)).unwrap();
    }
    let mut wire: Vec<Vec<u8>> = Vec::new();
    for i in 0..24usize {
        let mut buf = PacketBuf::with_max_packet();
        buf.load(&packet(false, i % 3 == 0, &vec![i as u8; 40 + 7 * i]), 128).unwrap();
        tx.protect_with(&[hs[i % hs.len()]], &mut buf, Time(1)).unwrap();
        let w = buf.as_slice().to_vec();
        match i % 6 {
            1 => {
                let mut bad = w.clone();
                bad[w.len() / 2] ^= 0x40;
                wire.push(bad);
            }
            3 => wire.push(w[..w.len() - 3].to_vec()),
            4 => {
                let mut unknown = w.clone();
                unknown[20..24].copy_from_slice(&0x7777_7777u32.to_be_bytes());
                wire.push(unknown);
            }
            _ => {}
        }
        wire.push(w.clone());
        if i % 5 == 2 {
            wire.push(w);
        }
    }
    let split = |w: &[u8]| {
        let h = wire::IpLayout::parse(w).map(|l| l.header_len).unwrap_or(20).min(w.len());
        let mut headers = PacketBuf::with_max_packet();
        headers.load(&w[..h], 128).unwrap();
        headers.append(w.len() - h).unwrap();
        headers.as_mut_slice()[h..].fill(0xa5);
        (headers, h)
    };
    let mut one: Vec<PacketBuf> = Vec::new();
    let mut r1 = Vec::new();
    for w in &wire {
        let (mut headers, h) = split(w);
        r1.push(a.inbound_from(&mut headers, &w[h..], Time(5)));
        one.push(headers);
    }
    let (mut bufs, offs): (Vec<PacketBuf>, Vec<usize>) = wire.iter().map(|w| split(w)).unzip();
    let mut r2 = vec![Err(ipsec::DropReason::Malformed); wire.len()];
    let asked = std::cell::Cell::new(0usize);
    let count = |_: *const u8| asked.set(asked.get() + 1);
    b.inbound_from_batch(&mut bufs, |i| &wire[i][offs[i]..], &mut r2, Time(5), count);
    assert!(asked.get() > 0, "the batch prefetched nothing");
    assert!(r1.iter().filter(|r| r.is_ok()).count() >= 24, "the intact packets open: {r1:?}");
    assert_eq!(r1, r2);
    for (i, (x, y)) in one.iter().zip(&bufs).enumerate() {
        if r1[i].is_ok() {
            assert_eq!(x.as_slice(), y.as_slice(), "packet {i}");
        }
    }
    assert_eq!(a.counters(), b.counters());
    assert_eq!(a.totals(), b.totals());
}
