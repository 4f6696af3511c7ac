//! A node keyed by IKE with two data-path lanes (`[interface] queues = 2`), against strongSwan
//! 5.9 (charon + kernel-libipsec): the CHILD SA's outbound SA is on both lanes, so whichever
//! TUN queue the kernel hands a flow to seals it, both copies taking their sequence numbers
//! from one counter (RFC 4303 §3.3.3: "The sender increments the sequence number (or ESN)
//! counter for this SA and inserts the low-order 32 bits of the value into the Sequence Number
//! field" — one counter per SA, whichever core seals); the inbound SA is on the lane its SPI
//! steers to. Many flows at
//! once, pings through two CHILD rekeys (RFC 7296 §2.8, make-before-break on every lane) and a
//! 1 MiB TCP transfer: charon accepts every packet of both lanes, none twice.
//!
//! Needs root, netns, TUN and strongSwan (scripts/test-all.sh installs it); else SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod strongswan;
use common::BIN;
use std::path::Path;
use std::process::Command;
use strongswan::{Pair, Setup};

fn hex(v: &serde_json::Value) -> u32 {
    let s = v.as_str().unwrap_or_default();
    u32::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or(0)
}

/// The child's (inbound, outbound) SPIs as hipsec's status shows them.
fn child_spis(p: &Pair) -> (u32, u32) {
    let st = p.status(BIN);
    let c = &st["ike"]["ike_sas"][0]["children"][0];
    (hex(&c["spi_in"]), hex(&c["spi_out"]))
}

/// (lane, packets, seq_out) of every data-path copy of SA `spi` in `direction`.
fn copies(p: &Pair, direction: &str, spi: u32) -> Vec<(u64, u64, u64)> {
    let st = p.status(BIN);
    st["sas"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["direction"] == direction && hex(&s["spi"]) == spi)
        .map(|s| {
            let n = |k: &str| s[k].as_u64().unwrap_or(0);
            (n("lane"), n("packets"), n("seq_out"))
        })
        .collect()
}

/// 64 UDP flows from our inner address, each from its own port: the kernel spreads flows over
/// the TUN device's queues by hash, so both lanes get some (all 64 on one queue: 2⁻⁶³).
fn many_flows(p: &Pair) {
    let py = "import socket\nfor i in range(64):\n  s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n  s.bind(('10.0.1.1',0))\n  s.sendto(b'x'*200,('10.0.2.1',9))\n  s.close()\n";
    let out =
        Command::new("ip").args(["netns", "exec", &p.a, "python3", "-c", py]).output().unwrap();
    assert!(out.status.success(), "flows: {}", String::from_utf8_lossy(&out.stderr));
}

fn two_lanes(d: &Path) {
    let path = d.join("a.toml");
    let t = std::fs::read_to_string(&path).unwrap();
    assert!(t.contains("name = \"hipsec0\"\n"), "{t}");
    let t = t.replacen("name = \"hipsec0\"\n", "name = \"hipsec0\"\nqueues = 2\n", 1);
    std::fs::write(&path, t).unwrap();
}

#[test]
fn two_lanes_seal_one_child_sa_with_one_sequence() {
    if !strongswan::can_run() {
        return;
    }
    let setup = Setup { child_rekey: "5s", child_rand: "1s", ..Setup::default() };
    let p = Pair::start_edited(BIN, setup, two_lanes);
    p.wait_up(BIN);
    let st = p.status(BIN);
    let lanes: Vec<u64> =
        st["workers"].as_array().unwrap().iter().filter_map(|w| w["lane"].as_u64()).collect();
    assert!(lanes.contains(&1), "one lane only: {lanes:?}\n{}", p.hipsec_log());

    // A fresh pair (no rekey due for a while): flows on both lanes, on one SA.
    let (spi_in, spi_out) = child_spis(&p);
    many_flows(&p);
    let outs = copies(&p, "out", spi_out);
    println!("outbound copies of {spi_out:08x} (lane, packets, seq_out): {outs:?}");
    assert_eq!(outs.len(), 2, "one copy per lane: {outs:?}");
    assert!(outs.iter().all(|&(_, pk, _)| pk > 0), "a lane sealed nothing: {outs:?}");
    let sent: u64 = outs.iter().map(|&(_, pk, _)| pk).sum();
    // One counter: both copies report the last number handed out, which counts every packet
    // of both lanes (a packet sealed between the two reads may add to it).
    assert!(outs.iter().all(|&(_, _, seq)| seq >= sent), "sequence behind the packets: {outs:?}");
    let ins = copies(&p, "in", spi_in);
    assert_eq!(ins.len(), 1, "{ins:?}");
    assert_eq!(ins[0].0, u64::from(spi_in % 2), "inbound SA off its SPI's lane: {ins:?}");

    // Through two CHILD rekeys by either side: no ping lost, and a TCP transfer intact.
    let got = p.ping(120, "0.1");
    let (sink, sent_sha) = p.tcp_transfer(1 << 20);
    let (_, spi_out_after) = child_spis(&p);
    println!("pings {got}/120, spi_out {spi_out:08x} → {spi_out_after:08x}");
    assert_ne!(spi_out, spi_out_after, "not rekeyed\n{}", p.hipsec_log());
    assert_eq!(
        got,
        120,
        "pings lost\n--- hipsec\n{}\n--- charon\n{}",
        p.hipsec_log(),
        p.charon_log()
    );
    assert_eq!(sink, sent_sha, "TCP transfer damaged");
    // Every copy of the old outbound SA went with it (none left on a lane).
    assert!(
        copies(&p, "out", spi_out).is_empty(),
        "old outbound SA left: {:?}",
        copies(&p, "out", spi_out)
    );
    // charon dropped nothing as a replay (libipsec logs "replay" for a rejected number).
    let log = p.charon_log();
    assert!(!log.to_lowercase().contains("replay"), "charon saw replays:\n{log}");
}
