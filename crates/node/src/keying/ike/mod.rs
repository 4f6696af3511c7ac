//! The IKEv2 driver (RFC 7296): runs the sans-IO exchanges of the `ike` crate for the node's
//! `[[connection]]`s — datagrams and milliseconds in, datagrams out — and installs each CHILD SA
//! through the control plane, inbound first (DESIGN rule 4: the responder's inbound SA is live
//! before its IKE_AUTH response leaves, so the initiator's first ESP packet finds it).
//! Read RFC 7296 §1.2 (the initial exchanges), §2.1 (retransmission), §2.23 (NAT traversal).

pub mod established;
pub mod install;
pub mod runtime;
pub mod sockets;

use crate::config::connection::{AuthConf, ConnectionConf, StartAction};
use crate::keying::plane::ControlPlane;
use crate::log::{Level, log_event};
use established::{Ctx, Up};
use ike::auth::CookieSecret;
use ike::initiator::{InitiatorAuth, InitiatorSaInit, SaInitNext};
use ike::responder::{AuthOutcome, InitOutcome, Responder, ResponderAuth};
use ike::sa::{Established, Rejected};
use ike::session::Session;
use ike::{AuthConfig, Config, Endpoints};
use ipsec::spd_table::PolicyId;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

/// IKE-made policy ids start here, far above the config's (its index + 1) and the command
/// line's.
const POLICY_BASE: PolicyId = 1 << 40;
/// How long after a failed initiation a connection that starts on its own tries again.
const RETRY_MS: u64 = 2_000;
/// Half-open IKE SAs beyond which the responder asks for a cookie (RFC 7296 §2.6).
const COOKIE_THRESHOLD: usize = 64;

/// A datagram for the node to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// On the ESP-in-UDP port, after the non-ESP marker.
    pub natt: bool,
    /// Where.
    pub to: SocketAddr,
    /// The IKE message.
    pub bytes: Vec<u8>,
}

/// Counters for `status` and metrics.
#[derive(Debug, Default, Clone, Copy)]
pub struct IkeStats {
    /// IKE SAs that came up.
    pub established: u64,
    /// Exchanges that failed (peer or config at fault, or no answer).
    pub failed: u64,
    /// Messages dropped (malformed, unauthenticated, unexpected), RFC 7296 §2.21.
    pub dropped: u64,
    /// Messages for an exchange this node does not run yet (CREATE_CHILD_SA, INFORMATIONAL).
    pub unsupported: u64,
    /// Requests answered from the response cache (retransmissions, §2.1).
    pub resent: u64,
}

struct Conn {
    conf: ConnectionConf,
    config: Config,
    responder: Responder,
}

enum State {
    InitSent(Box<InitiatorSaInit>),
    AuthSent(Box<InitiatorAuth>),
    HalfOpen(Box<ResponderAuth>),
    Up(Box<Up>),
    /// Only while a message is being handled (the state is moved out and put back).
    Taken,
}

impl State {
    fn name(&self) -> &'static str {
        match self {
            State::InitSent(_) => "IKE_SA_INIT sent",
            State::AuthSent(_) => "IKE_AUTH sent",
            State::HalfOpen(_) => "half-open",
            State::Up(_) => "established",
            State::Taken => "busy",
        }
    }
}

struct Entry {
    conn: usize,
    /// We started this IKE SA.
    initiator: bool,
    /// Where the peer's IKE messages come from (and ours go).
    peer: SocketAddr,
    natt: bool,
    state: State,
    created_ms: u64,
    /// Our SPI's peer: the responder's half-open key, to forget it with the entry.
    spi_i: u64,
}

/// The driver of every IKE SA of the node.
pub struct IkeDriver {
    provider: &'static dyn crypto::Provider,
    conns: Vec<Conn>,
    /// By our own SPI (SPIi where we initiated, SPIr where we responded).
    sas: HashMap<u64, Entry>,
    /// Half-open responder SAs by (SPIi, peer), to recognise a retransmitted IKE_SA_INIT.
    half_open: HashMap<(u64, SocketAddr), u64>,
    /// An IKE SA's SPI before its rekey → after (§2.18: the old one's DELETE still comes).
    alias: HashMap<u64, u64>,
    /// Connections to initiate again at the next tick (their IKE SA died).
    restart: Vec<usize>,
    /// Connections that start on their own and whose initiation failed: when to try again.
    retry: Vec<(u64, usize)>,
    local_ip: IpAddr,
    ike_port: u16,
    natt_port: u16,
    next_policy: PolicyId,
    stats: IkeStats,
    /// Every IKE SA's tshark key-table line, when the node was started to export them.
    key_log: Option<Vec<String>>,
    /// When the datagram being handled was read.
    received: std::time::Instant,
    /// Trap policies (their acquires start the connection).
    traps: HashMap<PolicyId, usize>,
    traps_installed: bool,
}

impl std::fmt::Debug for IkeDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IkeDriver").field("sas", &self.sas.len()).finish_non_exhaustive()
    }
}

fn ike_config(c: &ConnectionConf, local_ip: IpAddr) -> Config {
    let first = c.children.first();
    Config {
        local_id: c.local_id.clone().unwrap_or_else(|| wire::ikev2::Id::ip(local_ip)),
        remote_id: c.remote_id.clone(),
        auth: match &c.auth {
            AuthConf::Psk(k) => AuthConfig::Psk(k.clone()),
            AuthConf::Pubkey { key, peer_alg, peer_public_key } => AuthConfig::Signature {
                key: key.clone(),
                peer_public_key: peer_public_key.clone(),
                peer_alg: *peer_alg,
            },
        },
        ike_suites: c.proposals.clone(),
        // PFS applies to CREATE_CHILD_SA only (§1.2): IKE_AUTH offers the suites without it.
        child_suites: first
            .map(|ch| {
                ch.esp_proposals
                    .iter()
                    .map(|s| ike::suite::ChildSuite { pfs: None, ..*s })
                    .collect()
            })
            .unwrap_or_default(),
        local_ts: first.map(|ch| ch.local_ts.clone()).unwrap_or_default(),
        remote_ts: first.map(|ch| ch.remote_ts.clone()).unwrap_or_default(),
        mode: first.map_or(ike::Mode::Tunnel, |ch| ch.mode),
    }
}

impl IkeDriver {
    /// A driver for `conns`; `local_ip` is the node's address, IKE on `ike_port` (500) and
    /// `natt_port` (the ESP-in-UDP port, 4500).
    pub fn new(
        export_keys: bool,
        conns: &[ConnectionConf],
        provider: &'static dyn crypto::Provider,
        local_ip: IpAddr,
        ike_port: u16,
        natt_port: u16,
    ) -> Result<IkeDriver, String> {
        let mut v = Vec::with_capacity(conns.len());
        for c in conns {
            let local = c.local_addr.unwrap_or(local_ip);
            let config = ike_config(c, local);
            let mut key = zeroize::Zeroizing::new([0u8; 32]);
            provider.fill_random(&mut key[..]).map_err(|e| format!("random: {e}"))?;
            let responder =
                Responder::new(config.clone(), provider, CookieSecret { version: 0, key })
                    .map_err(|e| format!("connection {:?}: {e}", c.name))?;
            v.push(Conn { conf: c.clone(), config, responder });
        }
        Ok(IkeDriver {
            provider,
            conns: v,
            sas: HashMap::new(),
            half_open: HashMap::new(),
            alias: HashMap::new(),
            restart: Vec::new(),
            retry: Vec::new(),
            local_ip,
            ike_port,
            natt_port,
            next_policy: POLICY_BASE,
            stats: IkeStats::default(),
            key_log: export_keys.then(Vec::new),
            received: std::time::Instant::now(),
            traps: HashMap::new(),
            traps_installed: false,
        })
    }

    /// Counters.
    pub fn stats(&self) -> IkeStats {
        self.stats
    }

    /// Initiates every connection whose child says `start_action = start`.
    pub fn start(&mut self, now_ms: u64) -> Vec<Transmit> {
        let want: Vec<usize> = (0..self.conns.len())
            .filter(|&i| {
                self.conns[i].conf.children.iter().any(|c| c.start_action == StartAction::Start)
            })
            .collect();
        want.into_iter().filter_map(|i| self.initiate(i, now_ms).ok()).flatten().collect()
    }

    /// Installs the trap policies of `start_action = trap` children (once).
    pub fn install_traps(&mut self, plane: &mut ControlPlane) {
        if std::mem::replace(&mut self.traps_installed, true) {
            return;
        }
        for (i, c) in self.conns.iter().enumerate() {
            let Some(peer) = c.conf.remote_addr else { continue };
            for ch in c.conf.children.iter().filter(|ch| ch.start_action == StartAction::Trap) {
                let ps = install::trap_policies(&ch.local_ts, &ch.remote_ts, peer);
                let ids: Vec<PolicyId> =
                    (0..ps.len() as u64).map(|k| self.next_policy + k).collect();
                self.next_policy += ps.len() as u64;
                match plane.set_policies(ids.iter().copied().zip(ps).collect()) {
                    Ok(()) => {
                        self.traps.extend(ids.iter().map(|id| (*id, i)));
                        log_event!(Level::Info, "ike-trap", "connection" => c.conf.name, "child" => ch.name, "policies" => ids.len());
                    }
                    Err(e) => {
                        log_event!(Level::Warn, "ike-trap-failed", "connection" => c.conf.name, "why" => e.to_string());
                    }
                }
            }
        }
    }

    /// An acquire for `policy`: if it is a trap whose connection has no IKE SA yet (or in
    /// progress), initiate it.
    pub fn acquire(&mut self, policy: PolicyId, now_ms: u64) -> Vec<Transmit> {
        let Some(&ci) = self.traps.get(&policy) else { return Vec::new() };
        if self.sas.values().any(|e| e.conn == ci) {
            return Vec::new();
        }
        log_event!(Level::Info, "ike-acquire", "connection" => self.conns[ci].conf.name, "policy" => policy);
        self.initiate(ci, now_ms).unwrap_or_default()
    }

    /// The index of connection `name`.
    pub fn connection(&self, name: &str) -> Option<usize> {
        self.conns.iter().position(|c| c.conf.name == name)
    }

    /// Starts an IKE SA for connection `i` (IKE_SA_INIT to the peer's port 500, or 4500 with
    /// `encap`).
    pub fn initiate(&mut self, i: usize, now_ms: u64) -> Result<Vec<Transmit>, String> {
        let c = self.conns.get(i).ok_or("no such connection")?;
        let natt = c.conf.encap;
        let port = if natt { self.natt_port } else { self.ike_port };
        let local = SocketAddr::new(c.conf.local_addr.unwrap_or(self.local_ip), port);
        let remote_ip =
            c.conf.remote_addr.ok_or("remote_addrs = %any: this connection only responds")?;
        let remote = SocketAddr::new(remote_ip, port);
        let (st, bytes) = ike::initiator::start(
            c.config.clone(),
            self.provider,
            Endpoints { local, remote },
            now_ms,
        )
        .map_err(|e| e.to_string())?;
        let spi = st.spi_i();
        log_event!(Level::Info, "ike-initiate", "connection" => c.conf.name, "peer" => remote, "spi_i" => format!("{spi:016x}"));
        self.sas.insert(
            spi,
            Entry {
                conn: i,
                peer: remote,
                natt,
                state: State::InitSent(Box::new(st)),
                created_ms: now_ms,
                spi_i: spi,
                initiator: true,
            },
        );
        Ok(vec![Transmit { natt, to: remote, bytes }])
    }

    /// Handles one IKE datagram from `from` (`natt`: it came on the ESP-in-UDP port).
    pub fn datagram(
        &mut self,
        plane: &mut ControlPlane,
        from: SocketAddr,
        natt: bool,
        bytes: &[u8],
        now_ms: u64,
    ) -> Vec<Transmit> {
        self.received = std::time::Instant::now();
        let Ok(p) = wire::ikev2::Packet::new_checked(bytes) else {
            self.stats.dropped += 1;
            return Vec::new();
        };
        let (spi_i, spi_r, flags, mid) = (p.spi_i(), p.spi_r(), p.flags(), p.message_id());
        // The I flag names the sender's role: set, it is the original initiator and we
        // responded (our SPI is SPIr); clear, we initiated (ours is SPIi). §3.1.
        let ours = if flags.initiator { spi_r } else { spi_i };
        if flags.initiator && spi_r == 0 && !flags.response {
            return self.init_request(from, natt, bytes, spi_i, now_ms);
        }
        let ours = self.alias.get(&ours).copied().unwrap_or(ours);
        let Some(mut e) = self.sas.remove(&ours) else {
            self.stats.dropped += 1;
            return Vec::new();
        };
        let mut out = Vec::new();
        let keep = match std::mem::replace(&mut e.state, State::Taken) {
            State::InitSent(st) => self.on_init_response(&mut e, *st, bytes, now_ms, &mut out),
            State::AuthSent(st) => self.on_auth_response(plane, &mut e, *st, bytes, from, now_ms),
            State::HalfOpen(st) => self.on_auth_request(
                plane,
                &mut e,
                *st,
                (bytes, from, natt, ours),
                now_ms,
                &mut out,
            ),
            State::Taken => false,
            State::Up(mut up) => {
                match up.session.handle(now_ms, bytes) {
                    Ok(o) => {
                        let sent = self.with_ctx(plane, &e, now_ms, |cx| up.apply(o, cx));
                        let (natt, to) = (e.natt, e.peer);
                        out.extend(sent.into_iter().map(|bytes| Transmit { natt, to, bytes }));
                    }
                    Err(why) => {
                        self.stats.dropped += 1;
                        log_event!(Level::Debug, "ike-dropped", "connection" => self.conns[e.conn].conf.name, "exchange" => format!("{:?}", p.exchange_type()), "message_id" => mid, "why" => why.to_string());
                    }
                }
                e.state = State::Up(up);
                true
            }
        };
        let keep = keep && !self.closed(&e);
        if keep {
            self.file(ours, e);
        }
        out
    }

    /// A failed initiation of a connection that starts on its own is tried again later (as
    /// strongSwan's keyingtries = 0 would), so a peer that was not ready yet is reached.
    fn retry_later(&mut self, e: &Entry) {
        let c = &self.conns[e.conn].conf;
        if e.initiator && c.children.iter().any(|ch| ch.start_action == StartAction::Start) {
            self.retry.push((e.created_ms + RETRY_MS, e.conn));
        }
    }

    /// True (and the connection queued for a restart if it starts on its own) when an
    /// established IKE SA is gone.
    fn closed(&mut self, e: &Entry) -> bool {
        let State::Up(up) = &e.state else { return false };
        if !up.session.is_closed() {
            return false;
        }
        let c = &self.conns[e.conn].conf;
        if c.children.iter().any(|ch| ch.start_action == StartAction::Start) {
            self.restart.push(e.conn);
        }
        true
    }

    /// Stores an entry under our current SPI (a rekeyed IKE SA has a new one; the old maps to
    /// it until the old SA's DELETE is done).
    fn file(&mut self, key: u64, e: Entry) {
        let now_key = match &e.state {
            State::Up(up) => {
                let ike = up.session.ike();
                if ike.role == ike::sk::Role::Initiator { ike.spi_i } else { ike.spi_r }
            }
            _ => key,
        };
        if now_key != key {
            self.alias.retain(|_, v| *v != key);
            self.alias.insert(key, now_key);
            self.log_keys(&e);
        }
        self.sas.insert(now_key, e);
    }

    /// Runs `f` with the context an established IKE SA needs.
    fn with_ctx<R>(
        &mut self,
        plane: &mut ControlPlane,
        e: &Entry,
        now_ms: u64,
        f: impl FnOnce(&mut Ctx<'_>) -> R,
    ) -> R {
        let conn = &self.conns[e.conn].conf;
        let mut j = [0u8; 8];
        let _ = self.provider.fill_random(&mut j);
        let esp_port = if e.natt { e.peer.port() } else { self.natt_port };
        let mut cx = Ctx {
            plane,
            conn,
            local: conn.local_addr.unwrap_or(self.local_ip),
            esp_peer: SocketAddr::new(e.peer.ip(), esp_port),
            next_policy: &mut self.next_policy,
            now_ms,
            jitter: u64::from_ne_bytes(j),
            received: self.received,
        };
        f(&mut cx)
    }

    fn init_request(
        &mut self,
        from: SocketAddr,
        natt: bool,
        bytes: &[u8],
        spi_i: u64,
        now_ms: u64,
    ) -> Vec<Transmit> {
        if let Some(st) = self.half_open.get(&(spi_i, from)).and_then(|r| self.sas.get(r)) {
            // A retransmitted IKE_SA_INIT: the same response again (§2.1).
            if let State::HalfOpen(h) = &st.state {
                if let Some(r) = h.retransmitted_init(bytes) {
                    self.stats.resent += 1;
                    return vec![Transmit { natt, to: from, bytes: r.to_vec() }];
                }
            }
            self.stats.dropped += 1;
            return Vec::new();
        }
        // The connection whose peer this is: by address, else one open to any peer, else the
        // only one.
        let Some(ci) = self
            .conns
            .iter()
            .position(|c| c.conf.remote_addr == Some(from.ip()))
            .or_else(|| self.conns.iter().position(|c| c.conf.remote_addr.is_none()))
            .or((self.conns.len() == 1).then_some(0))
        else {
            self.stats.dropped += 1;
            return Vec::new();
        };
        let port = if natt { self.natt_port } else { self.ike_port };
        let local = SocketAddr::new(self.conns[ci].conf.local_addr.unwrap_or(self.local_ip), port);
        let busy = self.half_open.len() >= COOKIE_THRESHOLD;
        match self.conns[ci].responder.handle_init(
            now_ms,
            Endpoints { local, remote: from },
            bytes,
            busy,
        ) {
            InitOutcome::Reply(r, why) => {
                log_event!(Level::Debug, "ike-init-refused", "peer" => from, "why" => why.to_string());
                vec![Transmit { natt, to: from, bytes: r }]
            }
            InitOutcome::Drop(why) => {
                self.stats.dropped += 1;
                log_event!(Level::Debug, "ike-dropped", "peer" => from, "why" => why.to_string());
                Vec::new()
            }
            InitOutcome::HalfOpen(st, r) => {
                let spi_r = st.spi_r();
                self.half_open.insert((spi_i, from), spi_r);
                self.sas.insert(
                    spi_r,
                    Entry {
                        conn: ci,
                        peer: from,
                        natt,
                        state: State::HalfOpen(st),
                        created_ms: now_ms,
                        spi_i,
                        initiator: false,
                    },
                );
                vec![Transmit { natt, to: from, bytes: r }]
            }
        }
    }

    fn on_init_response(
        &mut self,
        e: &mut Entry,
        st: InitiatorSaInit,
        bytes: &[u8],
        now_ms: u64,
        out: &mut Vec<Transmit>,
    ) -> bool {
        match st.handle(now_ms, bytes) {
            Ok(SaInitNext::Resend(st, r)) => {
                // COOKIE or INVALID_KE_PAYLOAD: IKE_SA_INIT again (§2.6, §1.3).
                out.push(Transmit { natt: e.natt, to: e.peer, bytes: r });
                e.state = State::InitSent(Box::new(st));
                true
            }
            Ok(SaInitNext::Auth(st, r)) => {
                // §2.23: behind a NAT (or told to encapsulate), float to 4500 from IKE_AUTH on.
                let n = st.nat();
                if !e.natt
                    && (n.local_behind_nat || n.remote_behind_nat || self.conns[e.conn].conf.encap)
                {
                    e.natt = true;
                    e.peer.set_port(self.natt_port);
                }
                out.push(Transmit { natt: e.natt, to: e.peer, bytes: r });
                e.state = State::AuthSent(Box::new(st));
                true
            }
            Err(rej) => self.rejected(e, rej, |s| State::InitSent(Box::new(s))),
        }
    }

    fn on_auth_response(
        &mut self,
        plane: &mut ControlPlane,
        e: &mut Entry,
        st: InitiatorAuth,
        bytes: &[u8],
        from: SocketAddr,
        now_ms: u64,
    ) -> bool {
        match st.handle(bytes) {
            Ok(est) => {
                e.peer = from;
                self.established(plane, e, est, now_ms);
                true
            }
            Err(rej) => self.rejected(e, rej, |s| State::AuthSent(Box::new(s))),
        }
    }

    /// `msg`: the datagram, its sender, whether it came on 4500, and our SPI.
    fn on_auth_request(
        &mut self,
        plane: &mut ControlPlane,
        e: &mut Entry,
        st: ResponderAuth,
        msg: (&[u8], SocketAddr, bool, u64),
        now_ms: u64,
        out: &mut Vec<Transmit>,
    ) -> bool {
        let (bytes, from, natt, ours) = msg;
        self.half_open.remove(&(e.spi_i, e.peer));
        match st.handle(bytes) {
            Ok(AuthOutcome::Established(est, reply)) => {
                e.peer = from;
                e.natt = natt;
                // Inbound live before the response leaves (DESIGN rule 4).
                self.established(plane, e, *est, now_ms);
                out.push(Transmit { natt, to: from, bytes: reply });
                true
            }
            Ok(AuthOutcome::Failed(why, reply)) => {
                self.stats.failed += 1;
                log_event!(Level::Warn, "ike-failed", "connection" => self.conns[e.conn].conf.name, "peer" => from, "why" => why.to_string());
                out.push(Transmit { natt, to: from, bytes: reply });
                false
            }
            Err(rej) => {
                let keep = self.rejected(e, rej, |s| State::HalfOpen(Box::new(s)));
                if keep {
                    self.half_open.insert((e.spi_i, e.peer), ours);
                }
                keep
            }
        }
    }

    /// A dropped message keeps the state (§2.21); a failed exchange ends it.
    fn rejected<S>(
        &mut self,
        e: &mut Entry,
        rej: Rejected<S>,
        back: impl FnOnce(S) -> State,
    ) -> bool {
        let why = rej.error().to_string();
        match rej.into_state() {
            Some(s) => {
                self.stats.dropped += 1;
                log_event!(Level::Debug, "ike-dropped", "connection" => self.conns[e.conn].conf.name, "why" => why);
                e.state = back(s);
                true
            }
            None => {
                self.stats.failed += 1;
                log_event!(Level::Warn, "ike-failed", "connection" => self.conns[e.conn].conf.name, "peer" => e.peer, "why" => why);
                self.retry_later(e);
                false
            }
        }
    }

    fn established(
        &mut self,
        plane: &mut ControlPlane,
        e: &mut Entry,
        est: Established,
        now_ms: u64,
    ) {
        let config = self.conns[e.conn].config.clone();
        self.stats.established += 1;
        log_event!(Level::Info, "ike-sa-up", "connection" => self.conns[e.conn].conf.name, "peer" => e.peer, "spi_i" => format!("{:016x}", est.ike.spi_i), "spi_r" => format!("{:016x}", est.ike.spi_r), "suite" => format!("{:?}", est.ike.suite));
        let (session, first) = Session::new(config, self.provider, est);
        let up = self.with_ctx(plane, e, now_ms, |cx| Up::new(session, first, cx));
        e.state = State::Up(Box::new(up));
        self.log_keys(e);
    }

    fn log_keys(&mut self, e: &Entry) {
        if let (Some(log), State::Up(up)) = (&mut self.key_log, &e.state) {
            if let Some(line) = ike::wireshark::ikev2_decryption_line(up.session.ike()) {
                log.push(line);
            }
        }
    }

    /// tshark's `ikev2_decryption_table` lines of every IKE SA so far (rekeyed ones too), or
    /// `None` unless the node was started to export keys.
    pub fn wireshark_keys(&self) -> Option<&[String]> {
        self.key_log.as_deref()
    }

    /// Deletes connection `name`'s IKE SAs (and with them their CHILD SAs, §1.4.1); half-open
    /// exchanges are dropped. Returns the datagrams to send and how many IKE SAs it touched.
    pub fn terminate(
        &mut self,
        plane: &mut ControlPlane,
        name: &str,
        now_ms: u64,
    ) -> Result<(Vec<Transmit>, usize), String> {
        let ci = self.connection(name).ok_or_else(|| format!("no connection {name:?}"))?;
        self.retry.retain(|(_, c)| *c != ci);
        let keys: Vec<u64> =
            self.sas.iter().filter(|(_, e)| e.conn == ci).map(|(k, _)| *k).collect();
        let mut out = Vec::new();
        for k in &keys {
            let Some(mut e) = self.sas.remove(k) else { continue };
            if let State::Up(mut up) = std::mem::replace(&mut e.state, State::Taken) {
                let sent = self.with_ctx(plane, &e, now_ms, |cx| {
                    // Our pairs go at once: fail closed even if the peer never answers.
                    up.remove_all(cx);
                    up.request(ike::session::Request::DeleteIke, cx)
                });
                let (natt, to) = (e.natt, e.peer);
                out.extend(sent.into_iter().map(|bytes| Transmit { natt, to, bytes }));
            }
            self.alias.retain(|_, v| v != k);
        }
        log_event!(Level::Info, "ike-terminate", "connection" => name, "ike_sas" => keys.len());
        Ok((out, keys.len()))
    }

    /// Rekeys connection `name`'s newest CHILD SA (or, with `ike`, its IKE SA) now.
    pub fn rekey(
        &mut self,
        plane: &mut ControlPlane,
        name: &str,
        ike: bool,
        now_ms: u64,
    ) -> Result<(Vec<Transmit>, usize), String> {
        let ci = self.connection(name).ok_or_else(|| format!("no connection {name:?}"))?;
        let keys: Vec<u64> = self
            .sas
            .iter()
            .filter(|(_, e)| e.conn == ci && matches!(e.state, State::Up(_)))
            .map(|(k, _)| *k)
            .collect();
        if keys.is_empty() {
            return Err(format!("connection {name:?} has no established IKE SA"));
        }
        let mut out = Vec::new();
        for k in &keys {
            let Some(mut e) = self.sas.remove(k) else { continue };
            if let State::Up(mut up) = std::mem::replace(&mut e.state, State::Taken) {
                let sent = self.with_ctx(plane, &e, now_ms, |cx| {
                    let r = if ike {
                        Some(ike::session::Request::RekeyIke)
                    } else {
                        up.child_spis().last().map(|s| ike::session::Request::RekeyChild(*s))
                    };
                    r.map(|r| up.request(r, cx)).unwrap_or_default()
                });
                let (natt, to) = (e.natt, e.peer);
                out.extend(sent.into_iter().map(|bytes| Transmit { natt, to, bytes }));
                e.state = State::Up(up);
            }
            self.file(*k, e);
        }
        Ok((out, keys.len()))
    }

    /// Retransmissions (§2.1) and half-open expiry; call every few tens of milliseconds.
    pub fn tick(&mut self, plane: &mut ControlPlane, now_ms: u64) -> Vec<Transmit> {
        let mut out = Vec::new();
        // Established IKE SAs: their own timers (retransmission, rekeys, liveness).
        let up: Vec<u64> = self
            .sas
            .iter()
            .filter(|(_, e)| matches!(e.state, State::Up(_)))
            .map(|(k, _)| *k)
            .collect();
        for k in up {
            let Some(mut e) = self.sas.remove(&k) else { continue };
            if let State::Up(mut u) = std::mem::replace(&mut e.state, State::Taken) {
                let sent = self.with_ctx(plane, &e, now_ms, |cx| u.tick(cx));
                out.extend(sent.into_iter().map(|bytes| Transmit {
                    natt: e.natt,
                    to: e.peer,
                    bytes,
                }));
                e.state = State::Up(u);
            }
            if self.closed(&e) {
                self.alias.retain(|_, v| *v != k);
            } else {
                self.file(k, e);
            }
        }
        for i in std::mem::take(&mut self.restart) {
            log_event!(Level::Info, "ike-restart", "connection" => self.conns[i].conf.name);
            out.extend(self.initiate(i, now_ms).unwrap_or_default());
        }
        let mut gone = Vec::new();
        for (spi, e) in self.sas.iter_mut() {
            let r = match &mut e.state {
                State::InitSent(s) => {
                    s.retransmit().on_timeout(now_ms).map(|b| b.map(<[u8]>::to_vec))
                }
                State::AuthSent(s) => {
                    s.retransmit().on_timeout(now_ms).map(|b| b.map(<[u8]>::to_vec))
                }
                State::HalfOpen(s) if now_ms >= s.expires_ms() => {
                    Err(ike::Error::PeerMisbehaved(ike::PeerMisbehaved::UnexpectedMessage(
                        "no IKE_AUTH before the half-open timeout",
                    )))
                }
                _ => Ok(None),
            };
            match r {
                Ok(Some(b)) => out.push(Transmit { natt: e.natt, to: e.peer, bytes: b }),
                Ok(None) => {}
                Err(why) => {
                    log_event!(Level::Warn, "ike-failed", "connection" => self.conns[e.conn].conf.name, "peer" => e.peer, "why" => why.to_string());
                    gone.push((*spi, e.spi_i, e.peer));
                }
            }
        }
        for (spi, spi_i, peer) in gone {
            self.stats.failed += 1;
            if let Some(e) = self.sas.remove(&spi) {
                self.retry_later(&e);
            }
            self.half_open.remove(&(spi_i, peer));
        }
        let due: Vec<usize> =
            self.retry.iter().filter(|(t, _)| *t <= now_ms).map(|(_, c)| *c).collect();
        self.retry.retain(|(t, _)| *t > now_ms);
        for i in due {
            log_event!(Level::Info, "ike-retry", "connection" => self.conns[i].conf.name);
            out.extend(self.initiate(i, now_ms).unwrap_or_default());
        }
        out
    }

    /// `status`: every IKE SA with its state and CHILD SA (SPIs, suite; never keys).
    pub fn status(&self, now_ms: u64) -> Value {
        let mut v: Vec<Value> = self
            .sas
            .values()
            .map(|e| {
                let mut j = json!({
                    "connection": self.conns[e.conn].conf.name,
                    "peer": e.peer.to_string(),
                    "state": e.state.name(),
                    "udp_encap": e.natt,
                    "age_s": now_ms.saturating_sub(e.created_ms) / 1000,
                });
                if let State::Up(up) = &e.state {
                    let ike = up.session.ike();
                    j["role"] = json!(if ike.role == ike::sk::Role::Initiator {
                        "initiator"
                    } else {
                        "responder"
                    });
                    j["spi_i"] = json!(format!("{:016x}", ike.spi_i));
                    j["spi_r"] = json!(format!("{:016x}", ike.spi_r));
                    j["suite"] = json!(format!("{:?}", ike.suite));
                    j["child_rekeys"] = json!(up.rekeys);
                    let (n, median, exchange) = up.rekey_delay();
                    j["our_rekeys"] = json!(n);
                    j["our_rekey_delay_median_us"] = json!(median);
                    j["our_rekey_exchange_median_us"] = json!(exchange);
                    j["children"] = json!(up.children_json(now_ms));
                }
                j
            })
            .collect();
        v.sort_by(|a, b| a["connection"].as_str().cmp(&b["connection"].as_str()));
        let s = self.stats;
        json!({
            "ike_sas": v,
            "counters": {
                "established": s.established,
                "failed": s.failed,
                "dropped": s.dropped,
                "unsupported": s.unsupported,
                "resent": s.resent,
            }
        })
    }
}
