//! The outbound half of the data path (RFC 4301 §5.1): TUN → SPD → ESP/AH seal in place →
//! carrier. With TUN offloads a read yields a TCP super-packet that tun-rs splits into
//! MTU-sized segments; the sealed packets go out as UDP GSO runs in one sendmsg(2) each, or
//! over raw IP in one sendmmsg(2).
//!
//! This half owns every outbound SA, so sequence numbers (and so GCM nonces, RFC 4106 §3) are
//! never shared between threads.

use super::carrier::Carrier;
use super::counters::NodeCounters;
use super::held::Held;
use super::mailbox::Update;
use super::tables::OutTables;
use super::tun::VNET_HDR_LEN;
use super::udp::UdpBatch;
use ipsec::{DropReason, Engine, PacketBuf, Processed, Time};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tun_rs::SyncDevice;

/// Packet buffers of the outbound half.
pub const OUT_BUFS: usize = 256;
/// Free buffers needed before another TUN read (the segments of one super-packet).
const SPLIT_ROOM: usize = tun_rs::IDEAL_BATCH_SIZE;
/// Bytes after the packet for the ESP trailer, padding and ICV.
const TAILROOM: usize = 256;

/// TUN → engine → carrier.
pub struct Outbound {
    pub(crate) engine: Engine,
    tun: Arc<SyncDevice>,
    carrier: Arc<Carrier>,
    udp: Option<UdpBatch>,
    /// Where packets of SAs without an endpoint of their own go (`[network] peer`).
    default_peer: Option<SocketAddr>,
    /// SA keys, policies and per-SA endpoints, for the control plane's updates.
    pub(crate) tables: OutTables,
    bufs: Vec<PacketBuf>,
    sizes: Vec<usize>,
    /// Offset of the UDP payload in each sealed packet (0: do not send).
    send_at: Vec<usize>,
    /// Where each sealed packet goes (ESP in UDP: its SA's endpoint).
    dests: Vec<Option<SocketAddr>>,
    /// Per sealed packet: it goes on `raw`, not on the carrier.
    raw_at: Vec<bool>,
    /// Raw-IP sockets beside a UDP carrier, for the SAs whose ESP goes as protocol 50 (an IKE
    /// CHILD SA without NAT or `encap`, a HIP association: `mailbox::Update::AddOutbound`'s
    /// `raw_ip`).
    pub(crate) raw: Option<Arc<Carrier>>,
    results: Vec<Result<Processed, DropReason>>,
    /// Raw read buffer: virtio-net header + a 64 KB super-packet.
    super_buf: Box<[u8]>,
    pub(crate) counters: NodeCounters,
    /// Packet filter applied before protection.
    pub(crate) filter: Option<super::filter_stage::SharedFilter>,
    /// Where bypassed packets leave in clear (`[network] bypass-device`); None: dropped.
    pub(crate) clear: Option<super::clear::ClearPath>,
    /// The tunnel's MTU: the largest inner packet that is sealed (the TUN MTU it was opened with).
    mtu: usize,
    /// Scratch for an ICMP "too big" answer: virtio-net header + up to 1280 bytes.
    icmp_buf: Box<[u8]>,
    /// Packets waiting for their SA (acquire), sent after the next update.
    held: Held,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound").field("counters", &self.counters).finish_non_exhaustive()
    }
}

impl Outbound {
    /// The half over its engine (outbound SAs and the SPD), the device and the carrier.
    /// `udp` is the batched sender when the carrier is UDP and batching is on.
    pub fn new(
        engine: Engine,
        tun: Arc<SyncDevice>,
        carrier: Arc<Carrier>,
        udp: Option<UdpBatch>,
        default_peer: Option<SocketAddr>,
        tun_mtu: usize,
    ) -> Outbound {
        let head = ipsec::buf::DEFAULT_HEADROOM;
        Outbound {
            tables: OutTables::from_engine(&engine),
            engine,
            tun,
            carrier,
            udp,
            default_peer,
            dests: vec![None; OUT_BUFS],
            raw_at: vec![false; OUT_BUFS],
            raw: None,
            bufs: (0..OUT_BUFS).map(|_| PacketBuf::new(head + tun_mtu + TAILROOM, head)).collect(),
            sizes: vec![0; OUT_BUFS],
            send_at: vec![0; OUT_BUFS],
            results: vec![Ok(Processed::Bypassed); OUT_BUFS],
            super_buf: vec![0u8; VNET_HDR_LEN + 65535].into_boxed_slice(),
            counters: NodeCounters::default(),
            filter: None,
            clear: None,
            mtu: tun_mtu,
            icmp_buf: vec![0u8; VNET_HDR_LEN + 1280].into_boxed_slice(),
            held: Held::new(tun_mtu),
        }
    }

    /// Applies a control-plane update to this half's SAs and policies (between batches).
    pub fn apply(&mut self, u: Update) -> Result<(), String> {
        self.tables.apply(&mut self.engine, u, &mut self.default_peer)
    }

    /// Reads what the TUN device has (up to the buffers), protects it and sends it.
    pub fn on_readable(&mut self, now: Time) -> io::Result<()> {
        let n = self.read_tun()?;
        if n == 0 {
            return Ok(());
        }
        self.counters.tun_rx += n as u64;
        self.counters.batches += 1;
        let n = self.refuse_too_big(n);
        let n = self.apply_filter(n);
        if n == 0 {
            return Ok(());
        }
        self.protect_and_send(n, now, false);
        Ok(())
    }

    /// Sends the packets held for an SA through the SPD again (after the lane applied an
    /// update: the SA they waited for may be there now). Those still without one are held
    /// again, with their first hold time.
    pub fn release_held(&mut self, now: Time) {
        if self.held.is_empty() {
            return;
        }
        let head = ipsec::buf::DEFAULT_HEADROOM;
        let (n, expired) = self.held.release(&mut self.bufs, head, now);
        self.counters.held_expired += expired;
        if n > 0 {
            self.protect_and_send(n, now, true);
        }
    }

    /// Seals the first `n` buffers and sends what was sealed; a packet whose policy has no SA
    /// yet is held (`released`: these are held packets coming back).
    fn protect_and_send(&mut self, n: usize, now: Time, released: bool) {
        self.engine.outbound_batch(
            &mut self.bufs[..n],
            &mut self.results[..n],
            now,
            crate::sys::prefetch,
        );
        for i in 0..n {
            self.send_at[i] = 0;
            self.raw_at[i] = false;
            if released && matches!(self.results[i], Ok(Processed::Protected { .. })) {
                self.counters.held_sent += 1;
            }
            match self.results[i] {
                // Counted by the engine and never sent in clear; kept for when the SA comes.
                Err(DropReason::NoSa) => {
                    let at = if released { self.held.released_at(i) } else { now };
                    if self.held.hold(self.bufs[i].as_slice(), at) && !released {
                        self.counters.held += 1;
                    }
                }
                Ok(Processed::Protected { sa }) => {
                    let to = self.tables.endpoint(sa).or(self.default_peer);
                    let raw = self.raw.as_ref().filter(|_| self.tables.raw_ip(sa));
                    let carrier = raw.unwrap_or(&self.carrier);
                    match super::encap::outer_info(self.bufs[i].as_slice()) {
                        // Over UDP a packet needs an endpoint; raw IP goes by its header.
                        Some((hdr_len, p, _))
                            if carrier.can_send(p)
                                && (to.is_some() || self.udp.is_none() || raw.is_some()) =>
                        {
                            self.send_at[i] = hdr_len;
                            self.dests[i] = to;
                            self.raw_at[i] = raw.is_some();
                        }
                        _ => self.counters.unsendable += 1,
                    }
                }
                Ok(Processed::Bypassed) => match &self.clear {
                    Some(c) if c.send(self.bufs[i].as_slice()).is_ok() => {
                        self.counters.bypass_forwarded += 1
                    }
                    _ => self.counters.bypass_unforwarded += 1,
                },
                // Counted by the engine; nothing is sent (fail closed).
                Ok(Processed::Decapsulated { .. }) | Err(_) => {}
            }
        }
        self.send_raw_beside(n);
        let (bufs, send_at, dests) = (&self.bufs[..n], &self.send_at[..n], &self.dests[..n]);
        if let Some(udp) = &mut self.udp {
            // One send per run of packets to the same peer (a GSO run has one destination).
            let mut i = 0;
            while i < n {
                let Some(dst) = dests[i].filter(|_| send_at[i] > 0) else {
                    i += 1;
                    continue;
                };
                let mut end = i + 1;
                while end < n && (send_at[end] == 0 || dests[end] == Some(dst)) {
                    end += 1;
                }
                let payloads = bufs[i..end]
                    .iter()
                    .zip(&send_at[i..end])
                    .filter(|(_, o)| **o > 0)
                    .map(|(b, o)| &b.as_slice()[*o..]);
                let st = udp.send(dst, payloads);
                self.counters.net_tx += st.sent;
                self.counters.send_errors += st.errors;
                self.counters.send_syscalls += st.syscalls;
                i = end;
            }
        } else if self.carrier.raw_batched() {
            // Raw IP: the whole batch in one sendmmsg(2) (one per socket it needs).
            let packets = bufs
                .iter()
                .zip(send_at)
                .zip(dests)
                .filter(|((_, o), _)| **o > 0)
                .map(|((b, _), d)| (b.as_slice(), d.map(|d| d.ip())));
            let st = self.carrier.send_batch(packets);
            self.counters.net_tx += st.sent;
            self.counters.send_errors += st.errors;
            self.counters.unsendable += st.unsendable;
            self.counters.send_syscalls += st.syscalls;
        } else {
            for ((b, _), to) in bufs.iter().zip(send_at).zip(dests).filter(|((_, o), _)| **o > 0) {
                self.counters.send_syscalls += 1;
                match self.carrier.send(b, *to) {
                    Ok(true) => self.counters.net_tx += 1,
                    Ok(false) => self.counters.unsendable += 1,
                    Err(_) => self.counters.send_errors += 1,
                }
            }
        }
    }

    /// Sends the sealed packets of `bufs[..n]` that go over raw IP beside the UDP carrier
    /// (`raw_at`), in one sendmmsg(2) per run, and takes them off the carrier's list.
    fn send_raw_beside(&mut self, n: usize) {
        let Some(raw) = &self.raw else { return };
        if !self.raw_at[..n].contains(&true) {
            return;
        }
        let picked = (0..n).filter(|&i| self.raw_at[i] && self.send_at[i] > 0);
        if raw.raw_batched() {
            let packets = picked.map(|i| (self.bufs[i].as_slice(), self.dests[i].map(|d| d.ip())));
            let st = raw.send_batch(packets);
            self.counters.net_tx += st.sent;
            self.counters.send_errors += st.errors;
            self.counters.unsendable += st.unsendable;
            self.counters.send_syscalls += st.syscalls;
        } else {
            for i in picked {
                self.counters.send_syscalls += 1;
                match raw.send(&self.bufs[i], self.dests[i]) {
                    Ok(true) => self.counters.net_tx += 1,
                    Ok(false) => self.counters.unsendable += 1,
                    Err(_) => self.counters.send_errors += 1,
                }
            }
        }
        for i in 0..n {
            if self.raw_at[i] {
                self.send_at[i] = 0;
            }
        }
    }

    /// Path MTU (RFC 1191, RFC 8201): drops the packets longer than the tunnel's MTU that may not
    /// be fragmented (IPv4 with DF, any IPv6) and answers each with an ICMP "too big" written
    /// to the TUN device; keeps the others at the front of the buffers and returns how many.
    /// It runs on single IP packets: TCP super-packets from the TUN offloads were already split
    /// into MTU-sized segments by [`Outbound::read_tun`], so they never trip it.
    fn refuse_too_big(&mut self, n: usize) -> usize {
        let mut kept = 0;
        for i in 0..n {
            if !super::icmp::needs_too_big(self.bufs[i].as_slice(), self.mtu) {
                self.bufs.swap(kept, i);
                kept += 1;
                continue;
            }
            self.counters.icmp_too_big += 1;
            // With offloads every packet written starts with a virtio-net header; all zero:
            // no checksum or segmentation work asked of the kernel.
            let head = if self.tun.tcp_gso() { VNET_HDR_LEN } else { 0 };
            self.icmp_buf[..head].fill(0);
            let mtu = self.mtu.min(u16::MAX as usize) as u16;
            let out = &mut self.icmp_buf[head..];
            if let Some(len) = super::icmp::too_big(self.bufs[i].as_slice(), mtu, out) {
                if self.tun.send(&self.icmp_buf[..head + len]).is_err() {
                    self.counters.tun_write_errors += 1;
                }
            }
        }
        kept
    }

    /// Keeps the packets the filter admits at the front of the buffers; returns how many.
    fn apply_filter(&mut self, n: usize) -> usize {
        let Some(f) = &self.filter else { return n };
        let mut f = super::filter_stage::lock(f);
        let mut kept = 0;
        for i in 0..n {
            if f.admit(true, self.bufs[i].as_slice()) {
                self.bufs.swap(kept, i);
                kept += 1;
            } else {
                self.counters.filter_blocked += 1;
            }
        }
        kept
    }

    /// Reads super-packets (or packets) into the buffers until the device is empty or fewer
    /// than [`SPLIT_ROOM`] buffers are left; returns how many packets the buffers hold.
    fn read_tun(&mut self) -> io::Result<usize> {
        let head = ipsec::buf::DEFAULT_HEADROOM;
        let mut n = 0;
        {
            let mut it = self.bufs.iter_mut();
            let mut raws: [&mut [u8]; OUT_BUFS] =
                std::array::from_fn(|_| it.next().map_or(Default::default(), |b| b.raw_mut()));
            while OUT_BUFS - n >= SPLIT_ROOM {
                let r = self.tun.recv_multiple(
                    &mut self.super_buf,
                    &mut raws[n..],
                    &mut self.sizes[n..],
                    head,
                );
                self.counters.tun_reads += 1;
                match r {
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => break,
                    // A system-call failure is the device's; anything else is one bad
                    // super-packet (consumed), counted and skipped.
                    Err(e) if e.raw_os_error().is_some() => return Err(e),
                    Err(_) => self.counters.tun_read_errors += 1,
                }
            }
        }
        let mut kept = 0;
        for i in 0..n {
            let len = self.sizes[i];
            if len > 0 && self.bufs[i].set_window(head, len).is_ok() {
                if kept != i {
                    self.bufs.swap(kept, i);
                }
                kept += 1;
            }
        }
        Ok(kept)
    }
}
