//! The endpoint: every connection and association of one IKE daemon, the routing of datagrams
//! to them by IKE SPI (RFC 7296 §2.6: IKE_SA_INIT to its connection's responder, the rest by
//! our SPI), each connection's one setup retry chain, and INITIAL_CONTACT (§2.4) across them.

use super::association::{Association, State, Step};
use super::schedule::Jitter;
use super::sink::Sink;
use super::{AssocId, ConnectionConfig, DownReason, Event, Transmit};
use crate::auth::CookieSecret;
use crate::cfg::AddressAnswer;
use crate::config::Endpoints;
use crate::error::Error;
use crate::initiator;
use crate::pool::{LeaseView, PoolConfig, Pools};
use crate::responder::{InitOutcome, Responder};
use crate::time::Time;
use crypto::Provider;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use wire::ikev2::{ExchangeType, Id, Packet};

/// Half-open responder SAs beyond which IKE_SA_INIT must bring a cookie (§2.6), unless
/// [`Endpoint::set_cookie_threshold`] says otherwise.
const COOKIE_THRESHOLD: usize = 64;

/// A connection and its retry chain.
pub(super) struct Conn {
    pub(super) cfg: ConnectionConfig,
    responder: Responder,
    /// We want it up (it starts, or an operator initiated it, and nobody terminated it).
    pub(super) wanted: bool,
    /// The pending retry of a failed setup, and the failures in a row so far.
    pub(super) retry_at: Option<Time>,
    pub(super) failures: u32,
}

/// Counters for status and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams dropped (not for any association, malformed, or failing to verify).
    pub dropped: u64,
    /// CHILD SA pairs that reached their hard lifetime with no successor.
    pub hard_expired: u64,
    /// Setups started (first tries and retries).
    pub setups: u64,
    /// CHILD or IKE rekeys of ours the peer refused or botched (each is retried).
    pub rekeys_failed: u64,
    /// IKE SAs that came up.
    pub established: u64,
    /// Setups that failed (refused, bad answer, no answer, half-open expiry).
    pub failed: u64,
    /// IKE_SA_INIT requests answered again from the half-open SA (§2.1).
    pub resent: u64,
    /// IKE_SA_INIT requests answered without keeping state: COOKIE (§2.6),
    /// INVALID_KE_PAYLOAD, NO_PROPOSAL_CHOSEN.
    pub init_refused: u64,
    /// Of those, COOKIE requests.
    pub cookies: u64,
    /// IKE_SA_INIT requests dropped because their address already had
    /// [`Endpoint::set_half_open_per_peer`] half-open SAs.
    pub blocked: u64,
}

/// Every connection and association of one IKE daemon.
pub struct Endpoint {
    provider: &'static dyn Provider,
    pub(super) conns: Vec<Conn>,
    pub(super) assocs: BTreeMap<AssocId, Association>,
    /// Our IKE SPIs (old ones stay until their association ends) to the association.
    pub(super) by_spi: HashMap<u64, AssocId>,
    next_id: AssocId,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    rng: Jitter,
    stats: Stats,
    export_keys: bool,
    cookie_threshold: usize,
    half_open_per_peer: usize,
    /// Road warriors' address pools and their leases.
    pub(super) pools: Pools,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("connections", &self.conns.len())
            .field("associations", &self.assocs.len())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint for `conns`; those with `start` initiate at `now`. `seed` drives the
    /// rekey jitter only (rand_time); SPIs, nonces and keys come from `provider`.
    pub fn new(
        now: Time,
        conns: Vec<ConnectionConfig>,
        provider: &'static dyn Provider,
        cookie: CookieSecret,
        seed: u64,
    ) -> Result<Endpoint, Error> {
        let mut ep = Endpoint {
            provider,
            conns: Vec::new(),
            assocs: BTreeMap::new(),
            by_spi: HashMap::new(),
            next_id: 1,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            rng: Jitter::new(seed),
            stats: Stats::default(),
            export_keys: false,
            cookie_threshold: COOKIE_THRESHOLD,
            half_open_per_peer: 0,
            pools: Pools::default(),
        };
        for cfg in conns {
            let responder = Responder::new(cfg.ike.clone(), provider, cookie.clone())?;
            let wanted = cfg.start;
            ep.conns.push(Conn { cfg, responder, wanted, retry_at: None, failures: 0 });
        }
        for i in 0..ep.conns.len() {
            if ep.conns[i].wanted {
                ep.start_setup(now, i);
            }
        }
        Ok(ep)
    }

    /// Starts using a new cookie secret (§2.6) on every connection's responder; cookies of the
    /// previous one stay valid until the next rotation.
    pub fn rotate_cookie(&mut self, next: &CookieSecret) {
        for c in &mut self.conns {
            c.responder.rotate_cookie(next.clone());
        }
    }

    /// The address pools connections name in `pools` (swanctl's `pools` section); leases of
    /// earlier pools are forgotten.
    pub fn set_pools(&mut self, pools: Vec<PoolConfig>) {
        self.pools = Pools::new(pools);
    }

    /// Every lease of every pool (online ones name their association).
    pub fn leases(&self) -> Vec<LeaseView> {
        self.pools.leases()
    }

    /// Queue [`Event::DecryptionKeys`] for every IKE SA from now on (a debugging switch: the
    /// lines hold keys).
    pub fn export_keys(&mut self, on: bool) {
        self.export_keys = on;
    }

    /// Half-open responder SAs beyond which IKE_SA_INIT must bring a cookie (§2.6).
    pub fn set_cookie_threshold(&mut self, n: usize) {
        self.cookie_threshold = n;
    }

    /// Half-open responder SAs one address may hold (strongSwan's `block_threshold`); further
    /// IKE_SA_INITs from it are dropped before any work is done. Zero: no limit.
    pub fn set_half_open_per_peer(&mut self, n: usize) {
        self.half_open_per_peer = n;
    }

    /// The two limits: (cookie threshold, half-open per peer).
    pub fn limits(&self) -> (usize, usize) {
        (self.cookie_threshold, self.half_open_per_peer)
    }

    /// Half-open responder SAs now.
    pub fn half_open(&self) -> usize {
        self.assocs.values().filter(|a| matches!(a.state, State::HalfOpen(_))).count()
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next event to act on.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`Endpoint::handle_timeout`] should run next.
    pub fn poll_timeout(&mut self) -> Option<Time> {
        let retries = self.conns.iter().filter_map(|c| c.retry_at);
        let assocs: Vec<Time> = self.assocs.values_mut().filter_map(|a| a.poll_timeout()).collect();
        retries.chain(assocs).min()
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Associations of any state (half-open and setting up included).
    pub fn associations(&self) -> usize {
        self.assocs.len()
    }

    /// Established associations.
    pub fn established(&self) -> usize {
        self.assocs.values().filter(|a| a.is_up()).count()
    }

    /// Setups of the connection named `conn` under way (initiator states; at most one).
    pub fn setups_in_flight(&self, conn: &str) -> usize {
        let Ok(i) = self.conn_index(conn) else { return 0 };
        self.assocs.values().filter(|a| a.conn == i && a.is_setting_up()).count()
    }

    /// Whether a setup retry of the connection named `conn` is pending.
    pub fn retry_pending(&self, conn: &str) -> bool {
        self.conns.iter().any(|c| c.cfg.name == conn && c.retry_at.is_some())
    }

    pub(super) fn sink(&mut self) -> (Sink<'_>, &mut BTreeMap<AssocId, Association>, &[Conn]) {
        (
            Sink {
                transmits: &mut self.transmits,
                events: &mut self.events,
                rng: &mut self.rng,
                stats: &mut self.stats,
                export_keys: self.export_keys,
            },
            &mut self.assocs,
            &self.conns,
        )
    }

    pub(super) fn start_setup(&mut self, now: Time, conn: usize) {
        let c = &mut self.conns[conn];
        c.retry_at = None;
        if c.cfg.any_peer {
            // Nobody to initiate to.
            return;
        }
        let cfg = c.cfg.clone();
        let ep = Endpoints { local: cfg.local, remote: cfg.remote };
        // §2.4: INITIAL_CONTACT when we hold no IKE SA with this peer.
        let holds = self.holds_sa_with(cfg.ike.remote_id.as_ref(), cfg.remote, None);
        self.stats.setups += 1;
        let failures = self.conns[conn].failures;
        self.events.push_back(Event::Initiating { conn: cfg.name.clone(), failures });
        match initiator::start(cfg.ike.clone(), self.provider, ep, now.as_millis()) {
            Ok((mut st, first)) => {
                st.set_initial_contact(!holds);
                st.set_virtual_ips(cfg.vips.clone());
                let id = self.next_id;
                self.next_id += 1;
                self.by_spi.insert(st.spi_i(), id);
                self.transmits.push_back(Transmit {
                    from: cfg.local,
                    to: cfg.remote,
                    payload: first,
                });
                let a = Association {
                    id,
                    conn,
                    peer: cfg.remote,
                    local: cfg.local,
                    state: State::InitSent(Box::new(st)),
                    peer_id: None,
                    initiated: true,
                    created: now,
                };
                self.assocs.insert(id, a);
            }
            Err(_) => self.schedule_retry(now, conn),
        }
    }

    /// Whether an established association (other than `except`) is with this peer: the
    /// authenticated identity when the connection names one, else the address.
    fn holds_sa_with(&self, id: Option<&Id>, addr: SocketAddr, except: Option<AssocId>) -> bool {
        self.assocs.values().any(|a| {
            Some(a.id) != except
                && a.is_up()
                && match id {
                    Some(id) => a.peer_id.as_ref() == Some(id),
                    None => a.peer.ip() == addr.ip(),
                }
        })
    }

    fn schedule_retry(&mut self, now: Time, conn: usize) {
        let c = &mut self.conns[conn];
        if !c.wanted || c.retry_at.is_some() {
            return;
        }
        c.failures = c.failures.saturating_add(1);
        c.retry_at = Some(now + c.cfg.setup_retry.wait(c.failures));
    }

    /// Acts on what an association's step says.
    pub(super) fn after(&mut self, now: Time, id: AssocId, step: Step) {
        let Some(conn) = self.assocs.get(&id).map(|a| a.conn) else { return };
        for spi in step.new_spis {
            self.by_spi.insert(spi, id);
        }
        if self.assocs.get(&id).is_some_and(Association::is_up) {
            self.conns[conn].failures = 0;
        }
        if step.initial_contact {
            self.initial_contact(now, id);
        }
        if let Some(again) = step.ended {
            self.pools.release(id, now);
            self.assocs.remove(&id);
            self.by_spi.retain(|_, a| *a != id);
            let conn_busy = self.assocs.values().any(|a| a.conn == conn);
            if again && !conn_busy {
                self.schedule_retry(now, conn);
            }
        }
    }

    /// The peer of `id` said INITIAL_CONTACT (§2.4): every other IKE SA with the same
    /// authenticated identity, and its CHILD SAs, is deleted here without a message (the peer
    /// has forgotten them).
    fn initial_contact(&mut self, now: Time, id: AssocId) {
        let Some(peer_id) = self.assocs.get(&id).and_then(|a| a.peer_id.clone()) else { return };
        let stale: Vec<AssocId> = self
            .assocs
            .values()
            .filter(|a| a.id != id && a.peer_id.as_ref() == Some(&peer_id))
            .map(|a| a.id)
            .collect();
        for s in stale {
            let (mut sink, assocs, conns) = self.sink();
            if let Some(a) = assocs.get_mut(&s) {
                a.end(&conns[a.conn].cfg, &mut sink, DownReason::Replaced);
            }
            self.assocs.remove(&s);
            self.by_spi.retain(|_, a| *a != s);
            self.pools.release(s, now);
        }
    }

    /// A datagram from `from`. Anything not for us, malformed or failing to verify is dropped
    /// and counted; the `Err` says why.
    pub fn handle(&mut self, now: Time, from: SocketAddr, datagram: &[u8]) -> Result<(), Error> {
        self.handle_at(now, None, from, datagram)
    }

    /// [`Endpoint::handle`] for a datagram that came to our address `local` (its port says
    /// whether the peer moved to the NAT-T port, RFC 7296 §2.23).
    pub fn handle_at(
        &mut self,
        now: Time,
        local: Option<SocketAddr>,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), Error> {
        let r = self.route(now, local, from, datagram);
        if r.is_err() {
            self.stats.dropped += 1;
        }
        r
    }

    fn route(
        &mut self,
        now: Time,
        local: Option<SocketAddr>,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), Error> {
        let p = Packet::new_checked(datagram).map_err(Error::InvalidMessage)?;
        let not_ours = || crate::error::PeerMisbehaved::UnexpectedMessage("no IKE SA for this SPI");
        if p.exchange_type() == ExchangeType::IKE_SA_INIT && !p.flags().response && p.spi_r() == 0 {
            return self.init_request(now, local, from, datagram);
        }
        // The sender's initiator flag says whose SPI is ours (§3.1).
        let ours = if p.flags().initiator { p.spi_r() } else { p.spi_i() };
        let id = *self.by_spi.get(&ours).ok_or_else(not_ours)?;
        let provider = self.provider;
        // A responder answers IKE_AUTH with INITIAL_CONTACT when it holds no other IKE SA with
        // the identity the request claims.
        let contact = match self.assocs.get(&id).map(|a| &a.state) {
            Some(State::HalfOpen(h)) => match h.peer_id(datagram) {
                Some(claimed) => !self.holds_sa_with(Some(&claimed), from, Some(id)),
                None => false,
            },
            _ => false,
        };
        self.pick_by_identity(id, from, datagram);
        self.answer_addresses(now, id, datagram);
        let (mut sink, assocs, conns) = self.sink();
        let a = assocs.get_mut(&id).ok_or_else(not_ours)?;
        let at = (local, from);
        let step = a.handle(now, at, datagram, &conns[a.conn].cfg, provider, contact, &mut sink)?;
        self.after(now, id, step);
        Ok(())
    }

    /// IKE_SA_INIT carries no identity, so it was answered with the first connection open to
    /// this peer. When several are (a home agent's `%any` connection per mobile node), the
    /// IKE_AUTH request's IDi picks the one whose `remote_id` it is, as strongSwan picks its
    /// config; the exchange goes on under that connection's credentials and CHILD SA policy.
    fn pick_by_identity(&mut self, id: AssocId, from: SocketAddr, datagram: &[u8]) {
        let open_to = |c: &Conn| c.cfg.any_peer || c.cfg.remote.ip() == from.ip();
        if self.conns.iter().filter(|c| open_to(c)).count() < 2 {
            return;
        }
        let Some(a) = self.assocs.get_mut(&id) else { return };
        let State::HalfOpen(h) = &mut a.state else { return };
        let Some(claimed) = h.peer_id(datagram) else { return };
        let by_id = |c: &Conn| open_to(c) && c.cfg.ike.remote_id.as_ref() == Some(&claimed);
        // A connection for this very address first, then one open to any peer.
        let found = self
            .conns
            .iter()
            .position(|c| by_id(c) && !c.cfg.any_peer)
            .or_else(|| self.conns.iter().position(by_id));
        let Some(ci) = found.filter(|&ci| ci != a.conn) else { return };
        if h.reconfigure(self.conns[ci].cfg.ike.clone()).is_ok() {
            a.conn = ci;
        }
    }

    /// A road warrior's IKE_AUTH request on a connection with pools: lease it an address of
    /// each family its CP(CFG_REQUEST) asks for, under the identity it claims (verified by the
    /// responder before anything is sent; a failed IKE_AUTH ends the association, which
    /// releases the lease), and tell the responder what to answer.
    fn answer_addresses(&mut self, now: Time, id: AssocId, datagram: &[u8]) {
        let Some(a) = self.assocs.get_mut(&id) else { return };
        let names = &self.conns[a.conn].cfg.pools;
        if names.is_empty() {
            return;
        }
        // With EAP (RFC 7296 §2.16) the lease waits for the EAP user, known once EAP
        // succeeded: it is leased before the request with the peer's AUTH is checked (a
        // refused AUTH ends the association, which releases it).
        if let State::Eap(h) = &mut a.state {
            let Some(user) = h.wants_address() else { return };
            let answer = match h.requested_families() {
                None => AddressAnswer::Required,
                Some(fams) => match self.pools.acquire(names, &fams, &user, id, now) {
                    Some(g) => AddressAnswer::Granted(g),
                    None => AddressAnswer::Exhausted,
                },
            };
            h.set_address_answer(Some(answer));
            return;
        }
        let State::HalfOpen(h) = &mut a.state else { return };
        if h.uses_eap() {
            return;
        }
        let Some(claimed) = h.peer_id(datagram) else { return };
        let answer = match h.requested_families(datagram) {
            None => AddressAnswer::Required,
            Some(fams) => match self.pools.acquire(names, &fams, &claimed, id, now) {
                Some(g) => AddressAnswer::Granted(g),
                None => AddressAnswer::Exhausted,
            },
        };
        h.set_address_answer(Some(answer));
    }

    /// The connection that answers IKE_SA_INIT from `from`: the one for its address, else one
    /// open to any peer, else the only one (a peer behind a NAT, or one that moved, is
    /// still answered; IKE_AUTH then proves who it is, and `remote_id` decides).
    fn conn_for(&self, from: SocketAddr) -> Option<usize> {
        let c = &self.conns;
        c.iter()
            .position(|c| !c.cfg.any_peer && c.cfg.remote.ip() == from.ip())
            .or_else(|| c.iter().position(|c| c.cfg.any_peer))
            .or((c.len() == 1).then_some(0))
    }

    fn init_request(
        &mut self,
        now: Time,
        at: Option<SocketAddr>,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), Error> {
        // A retransmitted request gets the same answer (§2.1).
        for a in self.assocs.values() {
            if let State::HalfOpen(h) = &a.state {
                if a.peer == from {
                    if let Some(reply) = h.retransmitted_init(datagram) {
                        let t = Transmit { from: a.local, to: from, payload: reply.to_vec() };
                        self.transmits.push_back(t);
                        self.stats.resent += 1;
                        return Ok(());
                    }
                }
            }
        }
        let conn = self.conn_for(from).ok_or(crate::error::PeerMisbehaved::UnexpectedMessage(
            "no connection for this peer",
        ))?;
        let half_open = self.half_open();
        if self.half_open_per_peer > 0 {
            let mine = self
                .assocs
                .values()
                .filter(|a| matches!(a.state, State::HalfOpen(_)) && a.peer.ip() == from.ip())
                .count();
            if mine >= self.half_open_per_peer {
                self.stats.blocked += 1;
                return Err(crate::error::PeerMisbehaved::UnexpectedMessage(
                    "too many half-open IKE SAs from this address",
                )
                .into());
            }
        }
        let local = at.unwrap_or(self.conns[conn].cfg.local);
        let ep = Endpoints { local, remote: from };
        let outcome = self.conns[conn].responder.handle_init(
            now.as_millis(),
            ep,
            datagram,
            half_open >= self.cookie_threshold,
        );
        match outcome {
            InitOutcome::Reply(bytes, why) => {
                self.stats.init_refused += 1;
                let cookie = crate::error::PeerMisbehaved::UnexpectedMessage("cookie required");
                if matches!(why, Error::PeerMisbehaved(ref m) if *m == cookie) {
                    self.stats.cookies += 1;
                }
                self.transmits.push_back(Transmit { from: local, to: from, payload: bytes });
                Ok(())
            }
            InitOutcome::Drop(e) => Err(e),
            InitOutcome::HalfOpen(st, bytes) => {
                let id = self.next_id;
                self.next_id += 1;
                self.by_spi.insert(st.spi_r(), id);
                self.transmits.push_back(Transmit { from: local, to: from, payload: bytes });
                let a = Association {
                    id,
                    conn,
                    peer: from,
                    local,
                    state: State::HalfOpen(st),
                    peer_id: None,
                    initiated: false,
                    created: now,
                };
                let (mut sink, _, _) = self.sink();
                if let State::HalfOpen(h) = &a.state {
                    sink.keys(id, h.decryption_line());
                }
                self.assocs.insert(id, a);
                Ok(())
            }
        }
    }

    /// Runs every timer due at `now`: retransmissions, rekeys, hard lifetimes, DPD, half-open
    /// expiry, setup retries.
    pub fn handle_timeout(&mut self, now: Time) {
        let ids: Vec<AssocId> = self.assocs.keys().copied().collect();
        for id in ids {
            let (mut sink, assocs, conns) = self.sink();
            let Some(a) = assocs.get_mut(&id) else { continue };
            if a.poll_timeout().is_none_or(|t| t > now) {
                continue;
            }
            let step = a.handle_timeout(now, &conns[a.conn].cfg, &mut sink);
            self.after(now, id, step);
        }
        for i in 0..self.conns.len() {
            if self.conns[i].retry_at.is_some_and(|t| t <= now) {
                self.start_setup(now, i);
            }
        }
    }
}
