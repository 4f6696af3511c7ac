//! The data path of one worker: poll(2) over the TUN device, the carrier sockets and the control
//! socket; TUN → `Engine::outbound` → socket, socket → `Engine::inbound` → TUN, in batches over
//! buffers made once (DESIGN rule 5). RFC 4301 §5.1 (outbound) and §5.2 (inbound) processing.

use crate::control::{self, ControlServer};
use crate::net::{Carrier, Rx};
use crate::sys;
use ipsec::{DropReason, Engine, PacketBuf, Processed, Time};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tun_rs::SyncDevice;

/// Packets read per batch from one descriptor before the others get a turn.
pub const BATCH: usize = 32;
/// Poll timeout: how soon a stop request or a lifetime timer is noticed when idle.
const POLL_MS: i32 = 100;

/// Counters of the node (the engine counts its own drops).
#[derive(Debug, Clone, Default)]
pub struct NodeCounters {
    /// Packets read from the TUN device.
    pub tun_rx: u64,
    /// Packets written to the TUN device.
    pub tun_tx: u64,
    /// Datagrams/packets received on the carrier.
    pub net_rx: u64,
    /// Protected packets sent on the carrier.
    pub net_tx: u64,
    /// IKE messages (RFC 3948 non-ESP marker) dropped: no IKE daemon in this node yet.
    pub ike_dropped: u64,
    /// NAT-keepalives received and ignored (RFC 3948 §2.3).
    pub keepalives: u64,
    /// Datagrams too short to hold an SPI.
    pub runts: u64,
    /// Packets the SPD said to bypass; not forwarded (no clear-text path in this node).
    pub bypass_unforwarded: u64,
    /// Protected packets the carrier cannot send (AH over UDP).
    pub unsendable: u64,
    /// Send errors (full socket buffer, unreachable).
    pub send_errors: u64,
    /// TUN write errors.
    pub tun_write_errors: u64,
}

impl NodeCounters {
    /// As JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "tun_rx": self.tun_rx, "tun_tx": self.tun_tx,
            "net_rx": self.net_rx, "net_tx": self.net_tx,
            "ike_dropped": self.ike_dropped, "keepalives": self.keepalives,
            "runts": self.runts, "bypass_unforwarded": self.bypass_unforwarded,
            "unsendable": self.unsendable, "send_errors": self.send_errors,
            "tun_write_errors": self.tun_write_errors,
        })
    }
}

/// Configured (src, dst) of inbound SAs by (SPI, IP protocol).
pub type InboundAddrs = HashMap<(u32, u8), (IpAddr, IpAddr)>;

/// One worker: engine, device, sockets and buffers.
pub struct Worker {
    pub(crate) engine: Engine,
    pub(crate) tun: SyncDevice,
    pub(crate) carrier: Carrier,
    pub(crate) control: Option<ControlServer>,
    /// Configured (src, dst) of inbound SAs by (SPI, protocol), for rebuilt outer headers.
    pub(crate) in_addrs: InboundAddrs,
    pub(crate) counters: NodeCounters,
    pub(crate) start: Instant,
    bufs: Vec<PacketBuf>,
    results: Vec<Result<Processed, DropReason>>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("counters", &self.counters).finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker over opened resources.
    pub fn new(
        engine: Engine,
        tun: SyncDevice,
        carrier: Carrier,
        control: Option<ControlServer>,
        in_addrs: InboundAddrs,
        start: Instant,
    ) -> Worker {
        Worker {
            engine,
            tun,
            carrier,
            control,
            in_addrs,
            counters: NodeCounters::default(),
            start,
            bufs: (0..BATCH).map(|_| PacketBuf::with_max_packet()).collect(),
            results: vec![Ok(Processed::Bypassed); BATCH],
        }
    }

    fn now(&self) -> Time {
        Time(self.start.elapsed().as_micros() as u64)
    }

    /// Runs until `stop` is set (by SIGINT/SIGTERM).
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        let mut fds = vec![self.tun.as_raw_fd()];
        let carrier_fds = self.carrier.fds();
        fds.extend(&carrier_fds);
        if let Some(c) = &self.control {
            fds.push(c.fd());
        }
        let mut ready = vec![false; fds.len()];
        let mut last_poll = self.now();
        while !stop.load(Ordering::Relaxed) {
            sys::poll_readable(&fds, &mut ready, POLL_MS)?;
            if ready[0] {
                self.tun_to_net()?;
            }
            for (i, _) in carrier_fds.iter().enumerate() {
                if ready[1 + i] {
                    self.net_to_tun(i)?;
                }
            }
            if ready.get(1 + carrier_fds.len()).copied().unwrap_or(false) {
                self.serve_control();
            }
            let now = self.now();
            if now.0.saturating_sub(last_poll.0) >= 1_000_000 {
                last_poll = now;
                self.engine.poll(now);
                for e in self.engine.drain_events() {
                    eprintln!("hipsec-node: {e:?}");
                }
            }
        }
        Ok(())
    }

    fn serve_control(&mut self) {
        let Some(c) = &self.control else { return };
        let now = Time(self.start.elapsed().as_micros() as u64);
        let (engine, counters) = (&self.engine, &self.counters);
        c.serve(|cmd| match cmd {
            "status" => control::status_json(engine, counters, now),
            other => {
                json!({ "error": format!("unknown command {other:?}; try \"status\"") }).to_string()
            }
        });
    }

    /// Reads a batch from the TUN device, protects it, sends it.
    fn tun_to_net(&mut self) -> io::Result<()> {
        let head = ipsec::buf::DEFAULT_HEADROOM;
        let mut n = 0;
        while n < BATCH {
            let b = &mut self.bufs[n];
            match self.tun.recv(&mut b.raw_mut()[head..head + 65535]) {
                Ok(len) => {
                    if b.set_window(head, len).is_ok() && len > 0 {
                        n += 1;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => break,
                Err(e) => return Err(e),
            }
        }
        self.counters.tun_rx += n as u64;
        let now = self.now();
        self.engine.outbound_batch(&mut self.bufs[..n], &mut self.results[..n], now);
        for (b, r) in self.bufs[..n].iter().zip(&self.results[..n]) {
            match r {
                Ok(Processed::Protected { .. }) => match self.carrier.send(b) {
                    Ok(true) => self.counters.net_tx += 1,
                    Ok(false) => self.counters.unsendable += 1,
                    Err(_) => self.counters.send_errors += 1,
                },
                Ok(Processed::Bypassed) => self.counters.bypass_unforwarded += 1,
                // Counted by the engine; nothing is sent (fail closed).
                Ok(Processed::Decapsulated { .. }) | Err(_) => {}
            }
        }
        Ok(())
    }

    /// Reads a batch from carrier socket `which`, removes IPsec, writes to the TUN device.
    fn net_to_tun(&mut self, which: usize) -> io::Result<()> {
        let in_addrs = &self.in_addrs;
        let lookup = |spi: u32, p: u8| in_addrs.get(&(spi, p)).copied();
        let mut n = 0;
        while n < BATCH {
            match self.carrier.recv(which, &mut self.bufs[n], &lookup)? {
                Rx::Empty => break,
                Rx::Packet => n += 1,
                Rx::Ike => self.counters.ike_dropped += 1,
                Rx::Keepalive => self.counters.keepalives += 1,
                Rx::Runt => self.counters.runts += 1,
            }
            self.counters.net_rx += 1;
        }
        let now = self.now();
        self.engine.inbound_batch(&mut self.bufs[..n], &mut self.results[..n], now);
        for (b, r) in self.bufs[..n].iter().zip(&self.results[..n]) {
            if let Ok(Processed::Decapsulated { .. }) = r {
                match self.tun.send(b.as_slice()) {
                    Ok(_) => self.counters.tun_tx += 1,
                    Err(_) => self.counters.tun_write_errors += 1,
                }
            }
        }
        Ok(())
    }
}
