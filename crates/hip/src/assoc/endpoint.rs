//! The endpoint: every HIP association of one host, keyed by the peer's HIT; the stateless
//! Responder (I1 → R1 keeps no state, §4.1.1) and its R1 generations (§4.1.4); the crossing
//! rules of §4.4.2 for I1 and I2; the peers we want associations with, retried with back-off.

use super::association::{Association, Ctx, Ended, State};
use super::schedule::Backoff;
use super::{AssocView, CommandError, DownReason, Event, PuzzleSolver, Timers, Transmit};
use crate::bex::Config;
use crate::bex::responder::Responder;
use crate::error::Error;
use crate::hit::HostIdentityTag;
use crate::identity::LocalHost;
use crypto::Provider;
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use wire::Time;
use wire::hip::{Packet, PacketType};

/// How long one R1 generation lasts (its puzzles and DH keys; the previous one is still
/// accepted, §4.1.4).
pub const R1_GENERATION: Duration = Duration::from_secs(120);

/// Counters for status and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Packets dropped (malformed, for no association, failing to verify, not for this state).
    pub dropped: u64,
    /// Base exchanges started as Initiator (first tries and retries).
    pub setups: u64,
    /// Packets sent again on a retransmission timer.
    pub retransmits: u64,
    /// ESP pairs rekeyed by UPDATE (either side).
    pub rekeys: u64,
    /// Rekeys of ours that ended with the peer lost.
    pub rekeys_failed: u64,
}

/// An ESP pair as the endpoint holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairView {
    /// The peer.
    pub peer: HostIdentityTag,
    /// Inbound SPI.
    pub spi_in: u32,
    /// Outbound SPI.
    pub spi_out: u32,
    /// Whether the peer's traffic is sent on it.
    pub sending: bool,
}

/// A peer we want an association with.
struct Wanted {
    locator: IpAddr,
    retry_at: Option<Time>,
    failures: u32,
}

/// Every HIP association of one host.
pub struct Endpoint {
    host: Arc<LocalHost>,
    config: Config,
    provider: &'static dyn Provider,
    timers: Timers,
    responder: Responder,
    next_rotation: Time,
    local: IpAddr,
    assocs: BTreeMap<HostIdentityTag, Association>,
    wanted: BTreeMap<HostIdentityTag, Wanted>,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    next_seq: u32,
    stats: Stats,
    solver: Option<PuzzleSolver>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("hit", &self.host.hit())
            .field("associations", &self.assocs.len())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint for `host` at locator `local` (the host identity is shared: a restarted
    /// endpoint, or a test's many, need not load or make it again).
    pub fn new(
        now: Time,
        host: Arc<LocalHost>,
        config: Config,
        timers: Timers,
        provider: &'static dyn Provider,
        local: IpAddr,
    ) -> Result<Endpoint, Error> {
        let responder = Responder::new(&host, config.clone(), provider)?;
        Ok(Endpoint {
            host,
            config,
            provider,
            timers,
            responder,
            next_rotation: now + R1_GENERATION,
            local,
            assocs: BTreeMap::new(),
            wanted: BTreeMap::new(),
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            next_seq: 1,
            stats: Stats::default(),
            solver: None,
        })
    }

    /// Solves R1s' puzzles with `solver` from now on (the default searches on this thread).
    pub fn set_solver(&mut self, solver: PuzzleSolver) {
        self.solver = Some(solver);
    }

    /// Makes the Diffie-Hellman key of every exchange whose I1 is out: call it after sending
    /// what [`Endpoint::poll_transmit`] gave, so that the key is made while I1 and R1 travel
    /// and R1's processing (T2) does not wait for it. Without it, R1's processing makes it.
    pub fn prepare_keys(&mut self) {
        for a in self.assocs.values_mut() {
            // A failure here only means R1's processing makes the key.
            let _ = a.prepare_dh();
        }
    }

    /// The association with `peer`, as status shows it.
    pub fn view(&self, peer: &HostIdentityTag) -> Option<AssocView> {
        self.assocs.get(peer).map(Association::view)
    }

    /// Every association, as status shows it.
    pub fn views(&self) -> Vec<AssocView> {
        self.assocs.values().map(Association::view).collect()
    }

    /// The Responder's current R1 generation (§4.1.4).
    pub fn r1_generation(&self) -> u64 {
        self.responder.generation()
    }

    /// The puzzle difficulty our R1s carry.
    pub fn puzzle_k(&self) -> u8 {
        self.responder.puzzle_k()
    }

    /// Our HIT.
    pub fn hit(&self) -> HostIdentityTag {
        self.host.hit()
    }

    /// Our locator.
    pub fn local(&self) -> IpAddr {
        self.local
    }

    /// The next packet to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next event to act on.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`Endpoint::handle_timeout`] should run next.
    pub fn poll_timeout(&self) -> Option<Time> {
        let retries = self.wanted.values().filter_map(|w| w.retry_at);
        let assocs = self.assocs.values().filter_map(Association::poll_timeout);
        retries.chain(assocs).chain([self.next_rotation]).min()
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Every ESP pair in the data path.
    pub fn pairs(&self) -> Vec<PairView> {
        let mut v = Vec::new();
        for a in self.assocs.values() {
            let Some(up) = a.state.up() else { continue };
            for &(spi_in, spi_out) in &up.pairs {
                let sending = up.sending == Some(spi_in);
                v.push(PairView { peer: a.peer, spi_in, spi_out, sending });
            }
        }
        v
    }

    /// The state of the association with `peer` (RFC 7401 §4.4.2's name), or UNASSOCIATED.
    pub fn state(&self, peer: &HostIdentityTag) -> &'static str {
        self.assocs.get(peer).map_or("UNASSOCIATED", |a| a.state.name())
    }

    /// Associations in any state.
    pub fn associations(&self) -> usize {
        self.assocs.len()
    }

    /// Whether a retry of a failed association with `peer` is pending.
    pub fn retry_pending(&self, peer: &HostIdentityTag) -> bool {
        self.wanted.get(peer).is_some_and(|w| w.retry_at.is_some())
    }

    fn ctx(&mut self) -> (Ctx<'_>, &mut BTreeMap<HostIdentityTag, Association>) {
        (
            Ctx {
                host: &self.host,
                provider: self.provider,
                timers: &self.timers,
                local: self.local,
                transmits: &mut self.transmits,
                events: &mut self.events,
                next_seq: &mut self.next_seq,
                stats: &mut self.stats,
                solver: self.solver.as_deref().map(|f| f as crate::puzzle::Solver<'_>),
            },
            &mut self.assocs,
        )
    }

    fn start(&mut self, now: Time, peer: HostIdentityTag, locator: IpAddr) {
        self.stats.setups += 1;
        if let Some(w) = self.wanted.get_mut(&peer) {
            w.retry_at = None;
        }
        let config = self.config.clone();
        let (mut ctx, assocs) = self.ctx();
        match Association::initiate(&mut ctx, now, peer, locator, config) {
            Ok(a) => {
                assocs.insert(peer, a);
            }
            Err(_) => self.schedule_retry(now, peer),
        }
    }

    fn schedule_retry(&mut self, now: Time, peer: HostIdentityTag) {
        let b: Backoff = self.timers.setup_retry;
        let Some(w) = self.wanted.get_mut(&peer) else { return };
        if w.retry_at.is_none() {
            w.failures = w.failures.saturating_add(1);
            w.retry_at = Some(now + b.wait(w.failures));
        }
    }

    /// Acts on how a step left the association with `peer`.
    fn after(&mut self, now: Time, peer: HostIdentityTag, ended: Ended) {
        if let Some(a) = self.assocs.get(&peer) {
            if let (State::Established(_), Some(w)) = (&a.state, self.wanted.get_mut(&peer)) {
                // Up: the retry chain starts afresh, and a retry goes where the peer is now
                // (it may have moved since it was wanted).
                w.failures = 0;
                w.locator = a.locator;
            }
        }
        match ended {
            Ended::Yes { retry } => {
                self.assocs.remove(&peer);
                if retry {
                    self.schedule_retry(now, peer);
                }
            }
            // §6.14: the peer ended it; setting it up again is for the next `initiate`.
            Ended::PeerClosed => {
                self.wanted.remove(&peer);
            }
            Ended::No => {}
        }
    }

    /// Brings up an association with `peer` at `locator` (and again whenever it fails, until
    /// closed). Nothing new starts while one exists (other than a CLOSED one); a pending retry
    /// is brought forward.
    pub fn initiate(&mut self, now: Time, peer: HostIdentityTag, locator: IpAddr) {
        let w = self.wanted.entry(peer).or_insert(Wanted { locator, retry_at: None, failures: 0 });
        w.locator = locator;
        // §4.4.2 CLOSED, paraphrased (text not reachable): a datagram to send starts another
        // incarnation of the association (I1, to I1-SENT); CLOSED only answered repeated CLOSEs.
        if matches!(self.assocs.get(&peer).map(|a| &a.state), Some(State::Closed { .. })) {
            self.assocs.remove(&peer);
        }
        if self.assocs.contains_key(&peer) {
            return;
        }
        self.start(now, peer, locator);
    }

    /// Rekeys the ESP pair with `peer` by UPDATE (RFC 7402 §6.8).
    pub fn rekey(&mut self, now: Time, peer: &HostIdentityTag) -> Result<(), CommandError> {
        let (mut ctx, assocs) = self.ctx();
        let a = assocs.get_mut(peer).ok_or(CommandError::NoAssociation(*peer))?;
        a.rekey(&mut ctx, now)
    }

    /// Ends the association with `peer` by CLOSE (§6.14) and stops wanting it. One not yet
    /// ESTABLISHED is dropped at once (no pairs were installed for it).
    pub fn close(&mut self, now: Time, peer: &HostIdentityTag) -> Result<(), CommandError> {
        let had = self.wanted.remove(peer).is_some();
        let (mut ctx, assocs) = self.ctx();
        let Some(a) = assocs.get_mut(peer) else {
            return if had { Ok(()) } else { Err(CommandError::NoAssociation(*peer)) };
        };
        match a.state {
            State::Established(_) | State::R2Sent { .. } => {
                a.close(&mut ctx, now).map_err(|e| CommandError::Local(e.to_string()))
            }
            State::I1Sent { .. } | State::I2Sent { .. } => {
                assocs.remove(peer);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Our locator is now `new` (the host moved): every ESTABLISHED peer is told by UPDATE
    /// with a LOCATOR_SET (RFC 8046 §3.2.1).
    pub fn update_locator(&mut self, now: Time, new: IpAddr) {
        self.local = new;
        let (mut ctx, assocs) = self.ctx();
        for a in assocs.values_mut() {
            a.announce(&mut ctx, now, new);
        }
    }

    /// The data path saw ESP arrive on inbound SPI `spi` (it authenticated).
    pub fn esp_received(&mut self, now: Time, spi: u32) {
        let (mut ctx, assocs) = self.ctx();
        let Some(a) = assocs
            .values_mut()
            .find(|a| a.state.up().is_some_and(|u| u.pairs.iter().any(|p| p.0 == spi)))
        else {
            return;
        };
        let peer = a.peer;
        a.esp_received(&mut ctx, spi);
        self.after(now, peer, Ended::No);
    }

    /// Runs every timer due at `now`: retransmissions, R2-SENT and CLOSED expiry, retries of
    /// failed associations, the R1 generation.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.next_rotation <= now {
            self.next_rotation = now + R1_GENERATION;
            // A failed rotation keeps the current generation (its R1s stay valid).
            let _ = self.responder.rotate(&self.host);
        }
        let peers: Vec<HostIdentityTag> = self.assocs.keys().copied().collect();
        for peer in peers {
            let (mut ctx, assocs) = self.ctx();
            let Some(a) = assocs.get_mut(&peer) else { continue };
            if a.poll_timeout().is_none_or(|t| t > now) {
                continue;
            }
            let ended = a.handle_timeout(&mut ctx, now);
            self.after(now, peer, ended);
        }
        let due: Vec<(HostIdentityTag, IpAddr)> = self
            .wanted
            .iter()
            .filter(|(_, w)| w.retry_at.is_some_and(|t| t <= now))
            .map(|(p, w)| (*p, w.locator))
            .collect();
        for (peer, locator) in due {
            if !self.assocs.contains_key(&peer) {
                self.start(now, peer, locator);
            }
        }
    }

    /// A HIP packet from `from` to our locator. Anything malformed, for no association,
    /// failing to verify or not for the state is dropped and counted; the `Err` says why.
    pub fn handle(&mut self, now: Time, from: IpAddr, datagram: &[u8]) -> Result<(), Error> {
        let r = self.route(now, from, datagram);
        if r.is_err() {
            self.stats.dropped += 1;
        }
        r
    }

    fn route(&mut self, now: Time, from: IpAddr, bytes: &[u8]) -> Result<(), Error> {
        let p = Packet::new_checked(bytes).map_err(|e| Error::Peer(e.to_string()))?;
        let (ty, sender) = (p.packet_type(), HostIdentityTag(p.sender_hit()));
        let me = self.host.hit();
        match ty {
            PacketType::I1 => {
                // RFC 7401 §4.4 I1-SENT, paraphrased (text not reachable; a translated summary
                // of its state table says the same): an I1 crossing ours is dropped when the
                // local HIT is the smaller, answered with R1 when it is the greater: the greater
                // HIT becomes the Responder.
                let crossing = matches!(
                    self.assocs.get(&sender).map(|a| &a.state),
                    Some(State::I1Sent { .. })
                );
                if crossing && me.0 < sender.0 {
                    return Err(Error::Peer("I1 crossing ours; the greater HIT goes on".into()));
                }
                let r1 = self.responder.on_i1(&me, bytes, from, self.local)?;
                self.transmits.push_back(Transmit { from: self.local, to: from, payload: r1 });
                if crossing {
                    // We are the Responder of this pair of hosts, so our own exchange goes:
                    // were both to go on (the peer answers our I1 from I2-SENT, §4.4.2), each
                    // host could end with the pair of a different exchange. Nothing was
                    // installed for it. The retry that stands in, should the peer's I2 never
                    // come, waits out the peer's whole resend chain: an earlier one would start
                    // the second exchange all the same.
                    self.assocs.remove(&sender);
                    let wait =
                        (1..=self.timers.tries).map(|n| self.timers.retransmit.wait(n)).sum();
                    if let Some(w) = self.wanted.get_mut(&sender) {
                        w.retry_at = Some(now + wait);
                    }
                }
                Ok(())
            }
            PacketType::I2 => self.on_i2(now, from, sender, bytes),
            _ => {
                let (mut ctx, assocs) = self.ctx();
                let a = assocs
                    .get_mut(&sender)
                    .ok_or_else(|| Error::Peer(format!("no association with {sender}")))?;
                let ended = a.handle(&mut ctx, now, from, ty, bytes)?;
                self.after(now, sender, ended);
                Ok(())
            }
        }
    }

    fn on_i2(
        &mut self,
        now: Time,
        from: IpAddr,
        sender: HostIdentityTag,
        bytes: &[u8],
    ) -> Result<(), Error> {
        let me = self.host.hit();
        let held = self.assocs.get(&sender).map(|a| &a.state);
        // A repeated I2 (our R2 was lost) gets the same R2 again (§6.9).
        if let Some((i2, r2)) = held.and_then(|s| s.up()).and_then(|u| u.r2.as_ref()) {
            if i2.as_slice() == bytes {
                let mut r2 = r2.clone();
                wire::hip::fill_checksum(self.local, from, &mut r2)
                    .map_err(|e| Error::Config(e.to_string()))?;
                self.transmits.push_back(Transmit { from: self.local, to: from, payload: r2 });
                return Ok(());
            }
        }
        // RFC 7401 §4.4 I2-SENT, paraphrased (text not reachable; a translated summary of its
        // state table says the same): an I2 crossing ours is dropped when the local HIT is the
        // smaller, answered with R2 (to R2-SENT) when it is the greater: as for crossing I1s,
        // the greater HIT becomes the Responder, and our own I2 is then forgotten.
        if matches!(held, Some(State::I2Sent { .. })) && me.0 < sender.0 {
            return Err(Error::Peer("I2 crossing ours; the greater HIT goes on".into()));
        }
        let (r2, est) = self.responder.on_i2(&self.host, bytes, from, self.local)?;
        let (mut ctx, assocs) = self.ctx();
        // A new base exchange with a peer we hold (it restarted; RFC 7401 §4.4 ESTABLISHED,
        // paraphrased, text not reachable: an I2 that processes sends R2 and replaces the old
        // association; RFC 5201 §4.4.2, as quoted in HIPL's source, has for a processed I2
        // "send R2 and go to R2-SENT"): the old pairs go first.
        if let Some(mut old) = assocs.remove(&sender) {
            if old.state.up().is_some() {
                old.down(&mut ctx, DownReason::Replaced);
            }
        }
        let a = Association::responded(&mut ctx, now, from, est, bytes, r2);
        assocs.insert(sender, a);
        if let Some(w) = self.wanted.get_mut(&sender) {
            w.retry_at = None;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "endpoint_tests.rs"]
mod tests;
