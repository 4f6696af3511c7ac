//! How the control plane reaches a running lane (docs/architecture.md, the control plane):
//! updates go over a per-worker queue, the worker applies them between batches and
//! acknowledges each envelope; events (acquires, lifetimes, NAT rebindings, punted control
//! packets) come back over one queue to the control thread. The queues are std's lock-free channels: the worker only calls `try_recv` between
//! batches, so the per-packet path takes no lock and allocates nothing. An idle worker sleeps in
//! poll(2); the control plane wakes it through a datagram socket pair it polls as well.
//!
//! SAs arrive already built (keyed by the control thread): a lane only files them.

use ipsec::{PolicyId, SecurityAssociation, Selector, Spi};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::sync::mpsc::{Receiver, Sender};

/// An outbound SA's identity (RFC 4301 §4.1: SPI, destination and protocol; the peer picked the
/// SPI, so two peers may pick the same one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutKey {
    /// SPI.
    pub spi: u32,
    /// IP protocol (50 or 51).
    pub proto: u8,
    /// The SA's destination address.
    pub dst: IpAddr,
}

/// An inbound SA's identity: we picked the SPI, so SPI and protocol are enough.
pub type InKey = (u32, u8);

/// What the inbound half keeps beside an inbound SA: the addresses of the IP header it rebuilds
/// around a datagram (transport and BEET mode need the SA's, not the carrier's), and the peer's
/// endpoint as last authenticated (NAT traversal, RFC 3948 §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboundPeer {
    /// Source address of the rebuilt header.
    pub src: IpAddr,
    /// Destination address of the rebuilt header.
    pub dst: IpAddr,
    /// Where the peer sends from (ESP in UDP); `None`: not watched.
    pub endpoint: Option<SocketAddr>,
}

/// The action of a policy as the control plane gives it: SAs by key, resolved by each lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyAction {
    /// Apply these outbound SAs, in order. A key with no SA (yet) drops the packet as `no_sa`
    /// and raises an acquire.
    Protect(Vec<OutKey>),
    /// Pass in clear (`[network] bypass-device`).
    Bypass,
    /// Drop.
    Discard,
}

/// A policy as the control plane installs it, for both directions (RFC 4301 §4.4.1: the
/// inbound entry is the mirror image of the outbound one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySpec {
    /// Outbound selectors (inbound: swapped).
    pub selector: Selector,
    /// What to do.
    pub action: PolicyAction,
    /// Inbound SAs that may carry the reverse traffic; empty: any inbound SA.
    pub in_sas: Vec<InKey>,
    /// Lower matches first; ties in installation order.
    pub priority: u32,
}

/// One change to a lane's SAs or policies.
#[derive(Debug)]
pub enum Update {
    /// Install (or, if the key exists, replace) an inbound SA.
    AddInbound {
        /// The SA, keyed already.
        sa: Box<SecurityAssociation>,
        /// Its header addresses and peer endpoint.
        peer: InboundPeer,
    },
    /// Remove an inbound SA.
    DelInbound {
        /// Which.
        key: InKey,
    },
    /// Install (or replace) an outbound SA; policies naming its key use it at once.
    AddOutbound {
        /// Its identity.
        key: OutKey,
        /// The SA.
        sa: Box<SecurityAssociation>,
        /// Where its packets go (ESP in UDP); `None`: the node's default peer.
        endpoint: Option<SocketAddr>,
        /// Over raw IP to the endpoint's address although the lane's carrier is UDP (the
        /// lane's raw carrier, `super::outbound::Outbound::raw`).
        raw_ip: bool,
    },
    /// Remove an outbound SA (its policies drop and raise acquires until repointed).
    DelOutbound {
        /// Which.
        key: OutKey,
    },
    /// Install or replace policy `id` in both directions.
    SetPolicy {
        /// Its id.
        id: PolicyId,
        /// What it is.
        spec: PolicySpec,
    },
    /// Remove policy `id` in both directions.
    DelPolicy {
        /// Its id.
        id: PolicyId,
    },
    /// Outbound SA `key` sends to `endpoint` from now on, keys and sequence numbers kept (a
    /// Mobile IPv6 home agent's tunnel moved to a new care-of address, RFC 6275 §10.3.1).
    SetEndpoint {
        /// Which.
        key: OutKey,
        /// Where its packets go now (raw IPv6: the address; ESP in UDP: address and port).
        endpoint: SocketAddr,
    },
    /// The peer at `from` now sends from `to` (an authenticated packet showed it): outbound
    /// SAs that sent to `from` send to `to`.
    MoveEndpoint {
        /// Old endpoint.
        from: SocketAddr,
        /// New endpoint.
        to: SocketAddr,
    },
}

/// Updates applied together, between two batches, and acknowledged once.
#[derive(Debug)]
pub struct Envelope {
    /// Echoed in the acknowledgement.
    pub ticket: u64,
    /// In order.
    pub updates: Vec<Update>,
}

/// Which control protocol a punted packet belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PuntKind {
    /// IKE on the ESP-in-UDP port after the non-ESP marker (RFC 3948 §2.2).
    Ike,
    /// HIP (IP protocol 139, RFC 7401 §5.1).
    Hip,
    /// Mobility Header (IPv6 next header 135, RFC 6275 §6.1), after ESP transport removal.
    MobilityHeader,
}

/// What a lane tells the control plane.
#[derive(Debug)]
pub enum Event {
    /// An envelope was applied; `errors` lists the updates that could not be (by index).
    Applied {
        /// The envelope's ticket.
        ticket: u64,
        /// The worker that applied it.
        worker: usize,
        /// `(update index, what went wrong)`.
        errors: Vec<(usize, String)>,
    },
    /// An SA reached a lifetime limit (RFC 4301 §4.4.2.1).
    Lifetime {
        /// Lane.
        lane: usize,
        /// "in" or "out".
        direction: &'static str,
        /// The SA's SPI.
        spi: Spi,
        /// Soft (time to rekey) or hard (the SA stopped).
        hard: bool,
        /// Which limit.
        limit: &'static str,
    },
    /// A packet needed an SA that is not there (dropped and counted; rate-limited per policy).
    Acquire {
        /// Lane.
        lane: usize,
        /// The policy.
        policy: PolicyId,
        /// The packet's addresses and protocol.
        src: IpAddr,
        /// Destination.
        dst: IpAddr,
        /// Upper-layer protocol.
        proto: u8,
    },
    /// An authenticated packet of inbound SA `spi` came from a new endpoint (NAT rebinding).
    Rebound {
        /// Lane.
        lane: usize,
        /// The inbound SA.
        spi: Spi,
        /// The endpoint it had.
        from: SocketAddr,
        /// The endpoint it came from.
        to: SocketAddr,
    },
    /// A control packet taken off the data path for the control thread.
    Punted {
        /// Lane (whose socket it came in on).
        lane: usize,
        /// Which protocol.
        kind: PuntKind,
        /// Sender.
        from: SocketAddr,
        /// The message (after the non-ESP marker, for IKE).
        bytes: Vec<u8>,
    },
}

/// A worker's end: its update queue, its wake-up socket and the event queue.
#[derive(Debug)]
pub struct Mailbox {
    updates: Receiver<Envelope>,
    wake: UnixDatagram,
    events: Sender<Event>,
    /// Wakes the control thread when an event other than an acknowledgement is queued (a
    /// punted IKE message must not wait for the next tick).
    control_wake: Option<UnixDatagram>,
    /// This worker's index (in acknowledgements).
    pub worker: usize,
}

/// The control plane's end of one worker's mailbox.
#[derive(Debug)]
pub struct Port {
    updates: Sender<Envelope>,
    wake: UnixDatagram,
}

/// A mailbox and its port, the port sending to the mailbox, the mailbox's events to `events`.
pub fn mailbox(worker: usize, events: Sender<Event>) -> io::Result<(Mailbox, Port)> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (a, b) = UnixDatagram::pair()?;
    a.set_nonblocking(true)?;
    b.set_nonblocking(true)?;
    Ok((
        Mailbox { updates: rx, wake: a, events, control_wake: None, worker },
        Port { updates: tx, wake: b },
    ))
}

impl Port {
    /// Wakes the worker without an envelope (it then publishes a requested status snapshot
    /// at once instead of at its next idle poll, up to `worker::POLL_MS` later).
    pub fn wake(&self) {
        let _ = self.wake.send(&[1]);
    }

    /// Queues an envelope and wakes the worker. Fails if the worker has stopped.
    pub fn send(&self, env: Envelope) -> io::Result<()> {
        self.updates
            .send(env)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the worker has stopped"))?;
        // A full wake-up queue already means the worker will wake: the error is of no matter.
        let _ = self.wake.send(&[1]);
        Ok(())
    }
}

impl Mailbox {
    /// Descriptor the worker polls to be woken.
    pub fn fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    /// Drains the wake-up bytes (the updates themselves are taken by [`Mailbox::next`]).
    pub fn clear_wake(&self) {
        let mut b = [0u8; 64];
        while matches!(self.wake.recv(&mut b), Ok(n) if n > 0) {}
    }

    /// The next queued envelope, if any; never blocks.
    pub fn next(&self) -> Option<Envelope> {
        self.updates.try_recv().ok()
    }

    /// Also wakes the control thread through `wake` (one end of a datagram pair whose other
    /// end it polls) for every event but acknowledgements.
    pub fn with_control_wake(mut self, wake: UnixDatagram) -> Mailbox {
        let _ = wake.set_nonblocking(true);
        self.control_wake = Some(wake);
        self
    }

    /// Sends an event to the control plane (dropped if the control plane has gone).
    pub fn emit(&self, e: Event) {
        let urgent = !matches!(e, Event::Applied { .. });
        let _ = self.events.send(e);
        if let (true, Some(w)) = (urgent, &self.control_wake) {
            // A full queue already means the control thread will wake: no matter.
            let _ = w.send(&[1]);
        }
    }
}
