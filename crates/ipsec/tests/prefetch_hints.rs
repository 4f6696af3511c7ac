//! Sealing and opening a batch prefetch, for each packet's SA, the SA's own lines and every
//! line of its cipher's expanded key where the provider says it is (`Aead::state_span`),
//! without first reading the SA: the engine keeps the key's address beside the SA's index
//! (`SadEntry`) and in the SA's line 1, which sealing prefetches earlier. A provider that does not say gets no key
//! prefetch at all (never one at address 0).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]
mod common;

use common::*;
use crypto::{
    Aead, AeadAlg, BlockCipher, CbcAlg, CryptoError, HmacAlg, Mac, Provider, default_provider,
};
use etherparse::PacketBuilder;
use ipsec::spd::{Action, Prefix, Selector, SpdEntry};
use ipsec::types::no_prefetch;
use ipsec::{Engine, Mode, PacketBuf, Time};
use std::cell::RefCell;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

thread_local! {
    /// Where each key `Spanned` made on this thread says its state is (address, length):
    /// per thread, as the tests run in parallel.
    static SPANS: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

/// The spans recorded on this thread since the last call.
fn take_spans() -> Vec<(usize, usize)> {
    SPANS.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

const STATE_LEN: usize = 600;

/// The default provider's AEAD, with a 600-byte block of its own that it names as its state.
#[derive(Debug)]
#[repr(C, align(64))]
struct SpannedAead {
    state: [u8; STATE_LEN],
    inner: Box<dyn Aead>,
}

impl Aead for SpannedAead {
    fn tag_len(&self) -> usize {
        self.inner.tag_len()
    }
    fn state_span(&self) -> (usize, usize) {
        (self.state.as_ptr() as usize, STATE_LEN)
    }
    fn seal_in_place(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &mut [u8],
    ) -> Result<(), CryptoError> {
        self.inner.seal_in_place(nonce, aad, in_out, tag)
    }
    fn open_in_place(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<usize, CryptoError> {
        self.inner.open_in_place(nonce, aad, in_out)
    }
}

#[derive(Debug)]
struct Spanned;

impl Provider for Spanned {
    fn name(&self) -> &'static str {
        "spanned test provider"
    }
    fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn Aead>, CryptoError> {
        let a = Box::new(SpannedAead {
            state: [0; STATE_LEN],
            inner: default_provider().aead(alg, key)?,
        });
        SPANS.with(|s| s.borrow_mut().push(a.state_span()));
        Ok(a)
    }
    fn cbc(&self, alg: CbcAlg, key: &[u8]) -> Result<Box<dyn BlockCipher>, CryptoError> {
        default_provider().cbc(alg, key)
    }
    fn hmac(&self, alg: HmacAlg, key: &[u8]) -> Result<Box<dyn Mac>, CryptoError> {
        default_provider().hmac(alg, key)
    }
    fn fill_random(&self, out: &mut [u8]) -> Result<(), CryptoError> {
        default_provider().fill_random(out)
    }
}

static SPANNED: Spanned = Spanned;

const SAS: u32 = 6;

/// Packets to `SAS` inbound SAs of `rx` (keyed by `rx_provider`; SA s has SPI 0x200 + s ×
/// `spi_step`), sealed by a sender with a host policy per SA, in an order that changes SA at
/// every packet.
fn sealed_batch(rx_provider: &'static dyn Provider, spi_step: u32) -> (Engine, Vec<PacketBuf>) {
    let (mut tx, rx, pkts) = engines(default_provider(), rx_provider, false, spi_step);
    let mut bufs = common::bufs_of(&pkts);
    for b in &mut bufs {
        tx.outbound(b, Time(1)).unwrap();
    }
    (rx, bufs)
}

/// A sender and a receiver with `SAS` SAs (IPv6 tunnels if `v6_outer`) and host policies, and
/// cleartext packets to them in an order that changes SA at every packet.
fn engines(
    tx_provider: &'static dyn Provider,
    rx_provider: &'static dyn Provider,
    v6_outer: bool,
    spi_step: u32,
) -> (Engine, Engine, Vec<Vec<u8>>) {
    let mut tx = Engine::new(tx_provider);
    let mut rx = Engine::new(rx_provider);
    let inner = |s: u32| Ipv4Addr::new(10, 2, 0, 32 + s as u8);
    for s in 0..SAS {
        let p = esp_params(
            "aes128gcm".parse().unwrap(),
            Mode::Tunnel,
            v6_outer,
            false,
            0x200 + s * spi_step,
        );
        let h = tx.add_outbound(&p, Time(0)).unwrap();
        rx.add_inbound(&p, Time(0)).unwrap();
        let selector = Selector {
            src: Prefix { addr: IpAddr::V4(Ipv4Addr::new(10, 1, 0, 16)), len: 32 },
            dst: Prefix { addr: IpAddr::V4(inner(s)), len: 32 },
            proto: None,
            src_ports: None,
            dst_ports: None,
        };
        tx.set_policy(
            u64::from(s) + 1,
            10,
            SpdEntry { selector, action: Action::Protect(vec![h.0]) },
        )
        .unwrap();
    }
    let pkts = (0..3 * SAS)
        .map(|i| {
            let mut p = Vec::new();
            PacketBuilder::ipv4([10, 1, 0, 16], inner((i * 5) % SAS).octets(), 64)
                .udp(40000, 5001)
                .write(&mut p, &[i as u8; 64])
                .unwrap();
            p
        })
        .collect();
    (tx, rx, pkts)
}

/// Seals (`open == false`) or opens `bufs` as one batch, and returns the cache lines the
/// engine asked to prefetch.
fn batch_recording(e: &mut Engine, bufs: &mut [PacketBuf], open: bool) -> HashSet<usize> {
    let asked: RefCell<HashSet<usize>> = RefCell::new(HashSet::new());
    let record = |p: *const u8| {
        asked.borrow_mut().insert(p as usize / 64);
    };
    let mut results = vec![Err(ipsec::DropReason::Malformed); bufs.len()];
    if open {
        e.inbound_batch(bufs, &mut results, Time(1), record);
    } else {
        e.outbound_batch(bufs, &mut results, Time(1), record);
    }
    assert!(results.iter().all(|r| r.is_ok()), "every packet goes through: {results:?}");
    asked.into_inner()
}

fn assert_every_key_line_in(spans: &[(usize, usize)], lines: &HashSet<usize>) {
    assert_eq!(spans.len(), SAS as usize, "one key per SA from `Spanned`");
    for &(at, len) in spans {
        for line in at / 64..(at + len).div_ceil(64) {
            assert!(
                lines.contains(&line),
                "key line {line:#x} of span {at:#x}+{len} not prefetched"
            );
        }
    }
}

/// Also for SAs whose SPIs share their low bits, found through the SAD's hashed index: fails
/// if the batch's third lookup pass (`inbound_lookups`) is left out.
#[test]
fn opening_prefetches_every_line_of_each_sas_key() {
    for step in [SPI_RUN, SPI_SHARED_LOW_BITS] {
        take_spans();
        let (mut rx, mut bufs) = sealed_batch(&SPANNED, step);
        // Only the receiver's keys come from `Spanned`.
        let spans = take_spans();
        assert_every_key_line_in(&spans, &batch_recording(&mut rx, &mut bufs, true));
    }
}

#[test]
fn sealing_prefetches_every_line_of_each_sas_key() {
    take_spans();
    let (mut tx, _, pkts) = engines(&SPANNED, default_provider(), false, SPI_RUN);
    let spans = take_spans();
    let mut bufs = common::bufs_of(&pkts);
    assert_every_key_line_in(&spans, &batch_recording(&mut tx, &mut bufs, false));
}

/// Sealing reads an SA's lines 0 and 1, and its line 4 (the outer header template) only
/// through an IPv6 tunnel: an IPv4 header is built from line 1. It prefetches what it reads.
#[test]
fn sealing_prefetches_the_sa_lines_it_reads() {
    for v6 in [false, true] {
        let (mut tx, _, pkts) = engines(default_provider(), default_provider(), v6, SPI_RUN);
        let mut bufs = common::bufs_of(&pkts);
        let lines = batch_recording(&mut tx, &mut bufs, false);
        for (_, sa) in tx.outbound_entries() {
            let at = std::ptr::from_ref(sa) as usize / 64;
            assert!(lines.contains(&at) && lines.contains(&(at + 1)), "lines 0 and 1");
            assert_eq!(lines.contains(&(at + 4)), v6, "line 4, IPv6 tunnel: {v6}");
        }
    }
}

/// Opening reads an SA's lines 0 to 2 (an IPv4 flow's policy memo is in line 1), and line 3
/// (an IPv6 flow's memo) is prefetched only where the outer family says the flows are likely
/// IPv6 (`SecurityAssociation::open_lines`). Fails if line 3 is fetched for every SA again,
/// or if any line opening reads is not.
#[test]
fn opening_prefetches_the_sa_lines_it_reads() {
    for v6 in [false, true] {
        let (mut tx, mut rx, pkts) = engines(default_provider(), default_provider(), v6, SPI_RUN);
        let mut bufs = common::bufs_of(&pkts);
        for b in &mut bufs {
            tx.outbound(b, Time(1)).unwrap();
        }
        let lines = batch_recording(&mut rx, &mut bufs, true);
        assert_eq!(rx.inbound_entries().count(), SAS as usize);
        for (_, sa) in rx.inbound_entries() {
            let at = std::ptr::from_ref(sa) as usize / 64;
            assert!((0..3).all(|l| lines.contains(&(at + l))), "lines 0 to 2");
            assert_eq!(lines.contains(&(at + 3)), v6, "line 3, IPv6 outer: {v6}");
        }
    }
}

#[test]
fn a_provider_that_does_not_say_gets_no_key_prefetch() {
    let (mut rx, mut bufs) = sealed_batch(default_provider(), SPI_RUN);
    let lines = batch_recording(&mut rx, &mut bufs, true);
    assert!(!lines.is_empty(), "the SAD slots and SAs are still prefetched");
    assert!(lines.iter().all(|&l| l >= 4096 / 64), "a prefetch near address 0: {lines:?}");
    // And opening gives the same without any prefetch.
    let (mut rx2, mut bufs2) = sealed_batch(default_provider(), SPI_RUN);
    let mut results = vec![Err(ipsec::DropReason::Malformed); bufs2.len()];
    rx2.inbound_batch(&mut bufs2, &mut results, Time(1), no_prefetch);
    assert!(results.iter().all(|r| r.is_ok()));
}
