//! The HIP driver: the node's side of `hip::assoc`. The association's whole life (the base
//! exchange, retransmission, UPDATE for rekeying and mobility, CLOSE, restarted peers) is in
//! the `hip` crate's [`Endpoint`]; this driver keeps what only the node can do:
//!
//! - traps: each known peer gets a policy from our HIT to theirs; the first packet to a peer's
//!   HIT raises an acquire, which `initiate`s the association (I1 to its locator);
//! - the clock (µs since the driver started, as [`wire::Time`]), the socket (`runtime.rs`),
//!   the puzzle search's lanes (`solver.rs`);
//! - what the events ask of the data path (`events.rs`: SA pairs in BEET mode and the policy
//!   between the HITs, make-before-break);
//! - which I2s are taken (`accept`), NOTIFYs (`notify.rs`), the route's source address when
//!   the local address is a wildcard (`mobility.rs`), status and the phase times of seed 001.

mod events;
pub mod install;
mod mobility;
mod notify;
mod notify_state;
pub mod runtime;
pub mod socket;
pub mod solver;
mod status;

use crate::config::hip::HipConf;
use crate::keying::plane::ControlPlane;
use hip::assoc::{Endpoint, Timers};
use hip::bex::Config;
use hip::{HostIdentityTag, LocalHost};
use ipsec::spd_table::PolicyId;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use wire::Time;
use wire::hip::{NotifyType, Packet, PacketType};

/// HIP's policy ids: apart from the config's, IKE's (1 << 40) and the command line's.
const POLICY_BASE: PolicyId = 1 << 41;

/// A datagram to send.
#[derive(Debug)]
pub struct Transmit {
    /// Where to.
    pub to: IpAddr,
    /// The HIP packet.
    pub bytes: Vec<u8>,
}

/// Counters for `status`.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct HipCounters {
    /// I1s answered with an R1.
    pub r1_sent: u64,
    /// Base exchanges completed, as Initiator.
    pub established_initiator: u64,
    /// Base exchanges completed, as Responder.
    pub established_responder: u64,
    /// Packets refused (bad checksum, signature, puzzle, unknown association ...).
    pub refused: u64,
    /// Exchanges given up after the retransmissions.
    pub timed_out: u64,
    /// HIP packets of kinds not handled.
    pub unhandled: u64,
    /// Our own moves announced by UPDATE.
    pub moves: u64,
    /// Peers' new locators verified and moved to.
    pub locator_changes: u64,
    /// Associations ended by CLOSE (either side).
    pub closed: u64,
    /// NOTIFYs we sent (refusals the peer is told of, at most 10 a second).
    pub notify_sent: u64,
    /// NOTIFYs received (informational, RFC 7401 §6.13; the last one in `last_notify`).
    pub notify_received: u64,
    /// ESP pairs rekeyed by UPDATE (RFC 7402 §6.8), either side.
    pub rekeys: u64,
    /// Rekeys that ended with the peer lost.
    pub rekey_failed: u64,
    /// I2s from HITs that are not configured peers (refused with `accept = "known"`).
    pub unknown_peer: u64,
    /// The last I1's processing time (T1 of seed 001: I1 in, R1 out), microseconds.
    pub last_t1_us: u64,
}

/// What the driver remembers of an association besides the endpoint: its SAs in the data path
/// (`events.rs`) and the phase times.
#[derive(Debug, Default)]
struct Peer {
    sas: events::Sas,
    initiator: bool,
    started_us: u64,
    bex_us: Option<u64>,
    /// Processing times of seed 001's phases (its Figure 3), microseconds: T2 and T4 (ours as
    /// Initiator: R1 → I2, R2 → established), T3 (ours as Responder: I2 → R2).
    t2_us: Option<u64>,
    t3_us: Option<u64>,
    t4_us: Option<u64>,
}

/// The driver.
pub struct HipDriver {
    host: Arc<LocalHost>,
    ep: Endpoint,
    local: IpAddr,
    esp_port: u16,
    conf: HipConf,
    peers: HashMap<HostIdentityTag, Peer>,
    traps: HashMap<PolicyId, usize>,
    policies: HashMap<HostIdentityTag, PolicyId>,
    next_policy: PolicyId,
    counters: HipCounters,
    /// With the debug switch: tshark `esp_sa` lines of every SA made, else None.
    exported: Option<Vec<String>>,
    /// Our address the packet being handled was sent to (the configured local one, or with a
    /// wildcard local the one its IP header names).
    here: IpAddr,
    next_move_check_us: u64,
    /// NOTIFYs: the rate limit's window and the last one received.
    notify: notify_state::NotifyState,
}

impl std::fmt::Debug for HipDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipDriver").field("hit", &self.host.hit()).finish_non_exhaustive()
    }
}

fn time(us: u64) -> Time {
    Time::from_micros(us)
}

/// Runs `f` and measures it in microseconds (the control thread's own work, seed 001's T1–T4).
fn timed<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let t = std::time::Instant::now();
    let r = f();
    (r, t.elapsed().as_micros() as u64)
}

impl HipDriver {
    /// A driver for `host` at locator `local`, its ESP in UDP on `esp_port`. With
    /// `export_keys` (a debugging switch) it keeps each SA's keys as tshark `esp_sa` lines.
    pub fn new(
        host: LocalHost,
        conf: HipConf,
        local: IpAddr,
        esp_port: u16,
        export_keys: bool,
    ) -> Result<HipDriver, String> {
        let config = Config {
            puzzle_k: conf.puzzle_k,
            esp_suites: conf.esp_suites.clone(),
            ..Config::default()
        };
        let host = Arc::new(host);
        // The data path does not report ESP arrivals to the control thread, so a Responder
        // sends on its pair as soon as R2 is out (§4.4.2 leaves R2-SENT on the Initiator's
        // first packet, or on a timer: here the timer is zero).
        let timers = Timers { r2_sent: Duration::ZERO, ..Timers::default() };
        let first = conf.peers.first().map(|p| p.locator);
        let here = match first {
            Some(to) if local.is_unspecified() => mobility::route_source(local, to),
            _ => local,
        };
        let mut ep = Endpoint::new(
            Time::ZERO,
            Arc::clone(&host),
            config,
            timers,
            crypto::default_provider(),
            here,
        )
        .map_err(|e| e.to_string())?;
        let solver = solver::Solver::new(conf.puzzle_threads);
        ep.set_solver(Box::new(move |p, suite, i, r, seed| solver.solve(p, suite, i, r, seed)));
        Ok(HipDriver {
            notify: notify_state::NotifyState::default(),
            host,
            ep,
            local,
            esp_port,
            conf,
            peers: HashMap::new(),
            traps: HashMap::new(),
            policies: HashMap::new(),
            next_policy: POLICY_BASE,
            counters: HipCounters::default(),
            exported: export_keys.then(Vec::new),
            here,
            next_move_check_us: 0,
        })
    }

    /// Our HIT.
    pub fn hit(&self) -> HostIdentityTag {
        self.host.hit()
    }

    /// Installs a trap for every known peer.
    pub fn install_traps(&mut self, plane: &mut ControlPlane) {
        let me = self.host.hit();
        let mut specs = Vec::new();
        for (i, p) in self.conf.peers.iter().enumerate() {
            let id = self.next_policy;
            self.next_policy += 1;
            self.traps.insert(id, i);
            self.policies.insert(p.hit, id);
            specs.push((id, install::trap(&me, &p.hit)));
        }
        if let Err(e) = plane.set_policies(specs) {
            tracing::warn!(why = e.to_string(), "hip-trap-failed");
        }
    }

    /// Makes the Diffie-Hellman key of every exchange whose I1 just left (the runtime calls
    /// this after sending), so that R1's processing does not wait for it.
    pub fn prepare_keys(&mut self) {
        self.ep.prepare_keys();
    }

    /// An acquire: if it is one of our traps and no association exists, start one.
    pub fn acquire(
        &mut self,
        plane: &mut ControlPlane,
        policy: PolicyId,
        now_us: u64,
    ) -> Vec<Transmit> {
        let Some(&i) = self.traps.get(&policy) else { return Vec::new() };
        let Some(peer) = self.conf.peers.get(i).cloned() else { return Vec::new() };
        if self.ep.view(&peer.hit).is_some_and(|v| v.state != "CLOSED") {
            return Vec::new();
        }
        tracing::info!(peer = %peer.hit, locator = %peer.locator, "hip-i1");
        let p = self.peers.entry(peer.hit).or_default();
        p.initiator = true;
        p.started_us = now_us;
        p.bex_us = None;
        self.ep.initiate(time(now_us), peer.hit, peer.locator);
        self.drain(plane, now_us)
    }

    fn refuse(&mut self, what: &str, from: IpAddr, e: impl std::fmt::Display) {
        self.counters.refused += 1;
        tracing::debug!(packet = %what, from = %from, why = e.to_string(), "hip-refused");
    }

    /// A HIP packet from `from` (to `to`, if the socket knows).
    pub fn packet(
        &mut self,
        plane: &mut ControlPlane,
        from: IpAddr,
        to: Option<IpAddr>,
        bytes: &[u8],
        now_us: u64,
    ) -> Vec<Transmit> {
        self.here = to.filter(|_| self.local.is_unspecified()).unwrap_or(self.here);
        let (ty, sender) = match Packet::new_checked(bytes) {
            Ok(p) => (p.packet_type(), HostIdentityTag(p.sender_hit())),
            Err(e) => {
                self.refuse("?", from, e);
                return Vec::new();
            }
        };
        match ty {
            PacketType::NOTIFY => {
                self.on_notify(from, bytes);
                return Vec::new();
            }
            // Only known peers, unless `accept = "any"`: checked on the header, before any
            // work.
            PacketType::I2
                if !self.conf.accept_any && !self.conf.peers.iter().any(|p| p.hit == sender) =>
            {
                self.counters.unknown_peer += 1;
                self.refuse(
                    "I2",
                    from,
                    format!("HIT {sender} is not a [[hip.peer]] (accept = \"known\")"),
                );
                return self.notify(sender, from, NotifyType::BLOCKED_BY_POLICY, now_us);
            }
            PacketType::I1
            | PacketType::R1
            | PacketType::I2
            | PacketType::R2
            | PacketType::UPDATE
            | PacketType::CLOSE
            | PacketType::CLOSE_ACK => {}
            _ => {
                self.counters.unhandled += 1;
                return Vec::new();
            }
        }
        let before = self.ep.view(&sender).map(|v| v.state);
        let (r, t) = timed(|| self.ep.handle(time(now_us), from, bytes));
        match r {
            Err(e) => self.refuse(&ty.to_string(), from, e),
            Ok(()) => {
                let after = self.ep.view(&sender).map(|v| v.state);
                let p = self.peers.entry(sender).or_default();
                match (ty, before, after) {
                    (PacketType::I1, _, _) => {
                        self.counters.r1_sent += 1;
                        self.counters.last_t1_us = t;
                    }
                    (PacketType::R1, Some("I1-SENT"), Some("I2-SENT")) => p.t2_us = Some(t),
                    (PacketType::I2, _, Some("R2-SENT" | "ESTABLISHED")) => {
                        p.initiator = false;
                        p.t3_us = Some(t);
                    }
                    (PacketType::R2, Some("I2-SENT"), Some("ESTABLISHED")) => p.t4_us = Some(t),
                    _ => {}
                }
            }
        }
        self.drain(plane, now_us)
    }

    /// Runs the endpoint's timers when due, and follows the route's source address.
    pub fn tick(&mut self, plane: &mut ControlPlane, now_us: u64) -> Vec<Transmit> {
        self.moves(now_us);
        if self.ep.poll_timeout().is_some_and(|t| t <= time(now_us)) {
            self.ep.handle_timeout(time(now_us));
        }
        self.drain(plane, now_us)
    }

    /// `hipsec hip close HIT`: sends CLOSE (§6.14); the association ends on the CLOSE_ACK, or
    /// when the retransmissions run out.
    pub fn close(
        &mut self,
        plane: &mut ControlPlane,
        peer: HostIdentityTag,
        now_us: u64,
    ) -> Result<Vec<Transmit>, String> {
        self.ep.close(time(now_us), &peer).map_err(|e| e.to_string())?;
        tracing::info!(peer = %peer, "hip-close");
        Ok(self.drain(plane, now_us))
    }

    /// `hipsec hip rekey HIT`: offers new SAs to an established peer.
    pub fn rekey(
        &mut self,
        plane: &mut ControlPlane,
        peer: HostIdentityTag,
        now_us: u64,
    ) -> Result<Vec<Transmit>, String> {
        self.ep.rekey(time(now_us), &peer).map_err(|e| e.to_string())?;
        tracing::info!(peer = %peer, "hip-rekey-offered");
        Ok(self.drain(plane, now_us))
    }

    /// Acts on the endpoint's events (before its packets leave: a Responder's SAs are in
    /// before R2 goes), then hands over its packets. A zero R2-SENT wait is run at once.
    fn drain(&mut self, plane: &mut ControlPlane, now_us: u64) -> Vec<Transmit> {
        if self.ep.poll_timeout().is_some_and(|t| t <= time(now_us)) {
            self.ep.handle_timeout(time(now_us));
        }
        while let Some(e) = self.ep.poll_event() {
            self.on_event(plane, e, now_us);
        }
        self.counters.rekey_failed = self.ep.stats().rekeys_failed;
        let mut out = Vec::new();
        while let Some(t) = self.ep.poll_transmit() {
            out.push(Transmit { to: t.to, bytes: t.payload });
        }
        out
    }

    /// tshark `esp_sa` lines of every SA made, if the node was started to export them.
    pub fn wireshark_keys(&self) -> Option<&[String]> {
        self.exported.as_deref()
    }
}
