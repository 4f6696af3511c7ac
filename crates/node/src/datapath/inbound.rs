//! The inbound half of the data path (RFC 4301 §5.2): carrier → ESP/AH open (replay check, RFC
//! 4303 §3.4.3) → TUN. With UDP batching, recvmmsg(2) brings up to 16 messages, each (with
//! UDP_GRO) up to 64 KB of same-size ESP datagrams; the decrypted TCP segments are coalesced
//! (`crate::gro`) and written to the device as super-packets. Over raw IP, recvmmsg(2) brings
//! up to 256 packets straight into the engine's buffers.
//!
//! This half owns every inbound SA, so replay windows are updated by one thread only.

use super::carrier::{Carrier, Rx};
use super::counters::NodeCounters;
use super::encap::{self, UdpPayload};
use super::gro::{Coalescer, MAX_SEGMENTS};
use super::mailbox::{Event, InboundPeer, PuntKind, Update};
use super::tables::InTables;
use super::udp::UdpBatch;
use ipsec::{DropReason, Engine, PacketBuf, Processed, Time};
use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::Arc;
use tun_rs::SyncDevice;
use wire::proto;

/// Packet buffers of the inbound half (each holds a coalesced 64 KB super-packet at most).
pub const IN_BUFS: usize = 256;
/// Most datagrams one GRO message holds (the kernel's UDP_GRO_CNT_MAX).
const GRO_SEGMENTS: usize = 64;
/// recvmmsg rounds (of up to 16 GRO messages) per wakeup before the other descriptors get a
/// turn. One: with a single worker the TCP ACKs the receiver's kernel writes back into the TUN
/// device wait for the outbound half while this loop runs, and eight rounds (up to ~8 MB) held
/// them long enough to stall the sender. Measured (`hipsec bench tunnel`, 3 rounds, 4 alternating
/// pairs): 8 rounds 4.62 / 4.69 / 5.25 / 4.88 Gbit/s, 1 round 4.82 / 5.18 / 5.45 / 5.33, at the
/// same µs/KB.
const RECV_ROUNDS: usize = 1;
/// Most events (punted IKE messages, rebindings) a half holds for its worker; beyond, punted
/// messages are dropped and counted (`ike_dropped`) rather than queued without bound.
const MAX_EVENTS: usize = 256;

/// Carrier → engine → TUN.
pub struct Inbound {
    pub(crate) engine: Engine,
    tun: Arc<SyncDevice>,
    carrier: Arc<Carrier>,
    udp: Option<UdpBatch>,
    /// Raw-IP sockets beside a UDP carrier (ESP as protocol 50 for SAs that are not in UDP);
    /// their descriptors follow the carrier's in `on_readable`'s numbering.
    raw: Option<Arc<Carrier>>,
    /// Inbound SAs' header addresses and peer endpoints, and the policies by SA key.
    pub(crate) tables: InTables,
    /// Last (SPI, addresses) looked up in `in_addrs`.
    last_addrs: Option<(u32, (IpAddr, IpAddr))>,
    /// Last (SPI, sender) whose endpoint was checked: a run of one SA's datagrams from one
    /// sender is checked once.
    last_from: Option<(u32, SocketAddr)>,
    local: IpAddr,
    bufs: Vec<PacketBuf>,
    results: Vec<Result<Processed, DropReason>>,
    /// Per buffer of a UDP batch: (message, offset, length) of its ESP part in the receive
    /// buffers, which the engine decrypts from.
    sources: Vec<(usize, usize, usize)>,
    gro: Coalescer,
    pub(crate) counters: NodeCounters,
    /// Packet filter applied after IPsec is removed.
    pub(crate) filter: Option<super::filter_stage::SharedFilter>,
    /// Events for the control plane, taken by the worker after each turn.
    pub(crate) events: Vec<Event>,
    /// The lane this half serves (named in events).
    pub(crate) lane: usize,
}

impl std::fmt::Debug for Inbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbound").field("counters", &self.counters).finish_non_exhaustive()
    }
}

impl Inbound {
    /// The half over its engine (inbound SAs), the device and the carrier; `udp` is the
    /// batched receiver when the carrier is UDP and batching is on.
    pub fn new(
        engine: Engine,
        tun: Arc<SyncDevice>,
        carrier: Arc<Carrier>,
        udp: Option<UdpBatch>,
        in_addrs: HashMap<(u32, u8), InboundPeer>,
    ) -> Inbound {
        let local = carrier.local();
        Inbound {
            tables: InTables::from_engine(&engine, in_addrs),
            engine,
            tun,
            carrier,
            udp,
            raw: None,
            events: Vec::with_capacity(MAX_EVENTS),
            lane: 0,
            last_addrs: None,
            last_from: None,
            local,
            bufs: (0..IN_BUFS).map(|_| PacketBuf::with_max_packet()).collect(),
            results: vec![Ok(Processed::Bypassed); IN_BUFS],
            sources: vec![(0, 0, 0); IN_BUFS],
            gro: Coalescer::default(),
            counters: NodeCounters::default(),
            filter: None,
        }
    }

    /// Applies a control-plane update to this half's SAs and policies (between batches).
    pub fn apply(&mut self, u: Update) -> Result<(), String> {
        self.last_addrs = None;
        self.last_from = None;
        self.tables.apply(&mut self.engine, u)
    }

    /// Adds raw-IP sockets beside the UDP carrier; returns the descriptors to poll, the
    /// carrier's first, numbered as `on_readable` takes them.
    pub fn with_raw(&mut self, raw: Arc<Carrier>) -> Vec<RawFd> {
        self.raw = Some(raw);
        self.fds()
    }

    /// The descriptors to poll: the carrier's, then the raw-IP ones beside it.
    pub fn fds(&self) -> Vec<RawFd> {
        let mut v = self.carrier.fds();
        v.extend(self.raw.iter().flat_map(|r| r.fds()));
        v
    }

    /// Reads what socket `which` of [`Inbound::fds`] has, opens it and writes it to the TUN
    /// device.
    pub fn on_readable(&mut self, which: usize, now: Time) -> io::Result<()> {
        let main = self.carrier.fds().len();
        if which >= main {
            let Some(raw) = self.raw.clone() else { return Ok(()) };
            return if raw.raw_batched() {
                self.recv_raw(&raw, which - main, now)
            } else {
                self.recv_single(&raw, which - main, now)
            };
        }
        let carrier = Arc::clone(&self.carrier);
        if self.udp.is_some() {
            self.recv_batched(now)
        } else if carrier.raw_batched() {
            self.recv_raw(&carrier, which, now)
        } else {
            self.recv_single(&carrier, which, now)
        }
    }

    /// Raw IP: one recvmmsg(2) of up to [`IN_BUFS`] packets straight into the buffers, then
    /// one engine batch (as many packets per wakeup as [`Inbound::recv_single`] takes, with
    /// one system call instead of one per packet).
    fn recv_raw(&mut self, carrier: &Carrier, which: usize, now: Time) -> io::Result<()> {
        let peers = &self.tables.peers;
        let lookup = |spi: u32, p: u8| peers.get(&(spi, p)).map(|a| (a.src, a.dst));
        let r = carrier.recv_batch(which, &mut self.bufs, &lookup)?;
        self.counters.recv_syscalls += 1;
        self.counters.net_rx += r.received as u64;
        self.counters.runts += r.runts as u64;
        self.flush(r.packets, false, now);
        Ok(())
    }

    fn recv_batched(&mut self, now: Time) -> io::Result<()> {
        let head = ipsec::buf::DEFAULT_HEADROOM;
        let mut n = 0;
        for _ in 0..RECV_ROUNDS {
            let Some(udp) = self.udp.as_mut() else { return Ok(()) };
            let m = udp.recv()?;
            self.counters.recv_syscalls += 1;
            if m == 0 {
                break;
            }
            for i in 0..m {
                if IN_BUFS - n < GRO_SEGMENTS {
                    self.flush(n, true, now);
                    n = 0;
                }
                let Some(udp) = self.udp.as_ref() else { return Ok(()) };
                let (bytes, meta) = udp.message(i);
                if bytes.is_empty() {
                    self.counters.runts += 1;
                    continue;
                }
                for (k, d) in bytes.chunks(meta.seg).enumerate() {
                    self.counters.net_rx += 1;
                    match encap::classify(d) {
                        UdpPayload::Esp => {}
                        UdpPayload::Ike if self.events.len() < MAX_EVENTS => {
                            // RFC 3948 §2.2: the IKE message follows the non-ESP marker.
                            self.counters.punted += 1;
                            self.events.push(Event::Punted {
                                lane: self.lane,
                                kind: PuntKind::Ike,
                                from: meta.from,
                                bytes: d[4..].to_vec(),
                            });
                            continue;
                        }
                        UdpPayload::Ike => {
                            self.counters.ike_dropped += 1;
                            continue;
                        }
                        UdpPayload::Keepalive => {
                            self.counters.keepalives += 1;
                            continue;
                        }
                        UdpPayload::Runt => {
                            self.counters.runts += 1;
                            continue;
                        }
                    }
                    let spi = u32::from_be_bytes([d[0], d[1], d[2], d[3]]);
                    let addrs = match self.last_addrs {
                        Some((s, a)) if s == spi => Some(a),
                        _ => {
                            let a =
                                self.tables.peers.get(&(spi, proto::ESP)).map(|p| (p.src, p.dst));
                            if let Some(a) = a {
                                self.last_addrs = Some((spi, a));
                            }
                            a
                        }
                    };
                    // Unknown SPIs get the datagram's addresses; the engine refuses them (no_sa).
                    let (src, dst) = addrs.unwrap_or((meta.from.ip(), self.local));
                    // Only the IP header is written here: the engine copies the ESP header
                    // and decrypts the rest straight from the receive buffer (`flush`).
                    let b = &mut self.bufs[n];
                    if b.set_window(head, d.len()).is_err()
                        || !encap::prepend_ip_header(b, src, dst, proto::ESP)
                    {
                        self.counters.runts += 1;
                        continue;
                    }
                    self.sources[n] = (i, k * meta.seg, d.len());
                    n += 1;
                }
            }
        }
        self.flush(n, true, now);
        Ok(())
    }

    fn recv_single(&mut self, carrier: &Carrier, which: usize, now: Time) -> io::Result<()> {
        let peers = &self.tables.peers;
        let lookup = |spi: u32, p: u8| peers.get(&(spi, p)).map(|a| (a.src, a.dst));
        let mut n = 0;
        while n < IN_BUFS {
            let rx = carrier.recv(which, &mut self.bufs[n], &lookup)?;
            self.counters.recv_syscalls += 1;
            match rx {
                Rx::Empty => break,
                Rx::Packet => n += 1,
                Rx::Ike(from) if self.events.len() < MAX_EVENTS => {
                    // The same punt as the batched path's (RFC 3948 §2.2).
                    self.counters.punted += 1;
                    let bytes = self.bufs[n].as_slice().get(4..).unwrap_or_default().to_vec();
                    self.events.push(Event::Punted {
                        lane: self.lane,
                        kind: PuntKind::Ike,
                        from,
                        bytes,
                    });
                }
                Rx::Ike(_) => self.counters.ike_dropped += 1,
                Rx::Keepalive => self.counters.keepalives += 1,
                Rx::Runt => self.counters.runts += 1,
            }
            self.counters.net_rx += 1;
        }
        self.flush(n, false, now);
        Ok(())
    }

    /// Opens `bufs[..n]` and writes the decapsulated packets to the device (coalesced when the
    /// device has offloads). `from_udp`: the buffers hold only IP headers and `sources` says
    /// where in the last recvmmsg's messages each packet's ESP part is.
    fn flush(&mut self, n: usize, from_udp: bool, now: Time) {
        if n == 0 {
            return;
        }
        self.counters.batches += 1;
        match self.udp.as_ref().filter(|_| from_udp) {
            Some(udp) => {
                // One engine batch (its SAD lookups and prefetches first, as for raw IP),
                // decrypting straight from the receive buffers.
                let sources = &self.sources;
                let src = |i: usize| {
                    let (m, off, len) = sources[i];
                    udp.message(m).0.get(off..off + len).unwrap_or(&[])
                };
                self.engine.inbound_from_batch(
                    &mut self.bufs[..n],
                    src,
                    &mut self.results[..n],
                    now,
                    crate::sys::prefetch,
                );
                for i in 0..n {
                    let (m, _, _) = self.sources[i];
                    let (_, meta) = udp.message(m);
                    if let Ok(Processed::Decapsulated { spi, .. }) = self.results[i] {
                        if self.last_from == Some((spi.0, meta.from)) {
                            continue;
                        }
                        self.last_from = Some((spi.0, meta.from));
                        Self::check_endpoint(
                            &mut self.tables,
                            &mut self.counters,
                            &mut self.events,
                            self.lane,
                            spi,
                            meta.from,
                        );
                    }
                }
            }
            None => self.engine.inbound_batch(
                &mut self.bufs[..n],
                &mut self.results[..n],
                now,
                crate::sys::prefetch,
            ),
        }
        let mut k = 0;
        let mut filter = self.filter.as_ref().map(super::filter_stage::lock);
        for i in 0..n {
            if let Ok(Processed::Decapsulated { .. }) = self.results[i] {
                if let Some(f) = filter.as_mut() {
                    if !f.admit(false, self.bufs[i].as_slice()) {
                        self.counters.filter_blocked += 1;
                        continue;
                    }
                }
                self.bufs.swap(k, i);
                k += 1;
            }
        }
        drop(filter);
        if k == 0 {
            return;
        }
        self.write_tun(k);
    }

    /// NAT traversal (RFC 3948 §3.1): an authenticated packet of inbound SA `spi`
    /// from another address or port than its peer's moves the peer's endpoint. Only after the
    /// ICV verified: a forged packet from a new address moves nothing. An SA whose endpoint is
    /// not known yet learns it quietly.
    fn check_endpoint(
        tables: &mut InTables,
        counters: &mut NodeCounters,
        events: &mut Vec<Event>,
        lane: usize,
        spi: ipsec::Spi,
        from: SocketAddr,
    ) {
        let Some(p) = tables.peers.get_mut(&(spi.0, proto::ESP)) else { return };
        match p.endpoint {
            Some(e) if e == from => {}
            Some(e) => {
                p.endpoint = Some(from);
                counters.nat_rebinds += 1;
                if events.len() < MAX_EVENTS {
                    events.push(Event::Rebound { lane, spi, from: e, to: from });
                }
            }
            None => p.endpoint = Some(from),
        }
    }

    /// Writes the packets in `bufs[..k]` to the device: with offloads, coalesced by
    /// [`Coalescer`] and gathered by writev(2) (no copy in user space), else one write each.
    fn write_tun(&mut self, k: usize) {
        self.counters.tun_write_batches += 1;
        if !self.tun.tcp_gso() {
            for b in &self.bufs[..k] {
                self.counters.tun_writes += 1;
                match self.tun.send(b.as_slice()) {
                    Ok(_) => self.counters.tun_tx += 1,
                    Err(_) => self.counters.tun_write_errors += 1,
                }
            }
            return;
        }
        self.gro.plan(&mut self.bufs[..k], self.tun.udp_gso());
        for w in self.gro.writes() {
            let mut iov: [IoSlice<'_>; MAX_SEGMENTS + 1] =
                std::array::from_fn(|_| IoSlice::new(&[]));
            iov[0] = IoSlice::new(&w.vnet);
            let mut m = 1;
            for (j, i) in self.gro.segments(w).enumerate() {
                let p = self.bufs[i].as_slice();
                // The first packet whole, the payloads of the others after their headers.
                iov[m] =
                    IoSlice::new(if j == 0 { p } else { p.get(w.header_len..).unwrap_or(&[]) });
                m += 1;
            }
            self.counters.tun_writes += 1;
            match self.tun.send_vectored(&iov[..m]) {
                Ok(_) => self.counters.tun_tx += w.segments as u64,
                Err(_) => self.counters.tun_write_errors += 1,
            }
        }
    }
}
