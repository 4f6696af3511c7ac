//! The IKEv2 driver (RFC 7296): runs the sans-IO exchanges of the `ike` crate for the node's
//! `[[connection]]`s — datagrams and milliseconds in, datagrams out — and installs each CHILD SA
//! through the control plane, inbound first (DESIGN rule 4: the responder's inbound SA is live
//! before its IKE_AUTH response leaves, so the initiator's first ESP packet finds it).
//! Read RFC 7296 §1.2 (the initial exchanges), §2.1 (retransmission), §2.23 (NAT traversal).

pub mod established;
mod initial;
pub mod install;
mod ops;
pub mod runtime;
pub mod sockets;
mod status;

use crate::config::connection::{AuthConf, ConnectionConf, StartAction};
use crate::keying::handover::SignallingEvent;
use crate::keying::plane::ControlPlane;
use crate::log::{Level, log_event};
use established::{Ctx, Up};
use ike::auth::CookieSecret;
use ike::initiator::{InitiatorAuth, InitiatorSaInit};
use ike::responder::{Responder, ResponderAuth};
use ike::sa::Established;
use ike::session::Session;
use ike::{AuthConfig, Config, Endpoints};
use ipsec::spd_table::PolicyId;
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
    /// IKE_SA_INIT requests answered without keeping state: COOKIE (§2.6, many half-open
    /// SAs), INVALID_KE_PAYLOAD, NO_PROPOSAL_CHOSEN.
    pub init_refused: u64,
    /// Of those, COOKIE requests.
    pub cookies: u64,
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
    /// Pairs of `mip6 = "signalling"` children for the Mobile IPv6 role, not yet collected.
    signalling: Vec<SignallingEvent>,
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
            AuthConf::Certificate { key, chain, trust } => AuthConfig::Certificate {
                key: key.clone(),
                chain: chain.clone(),
                trust: trust.clone(),
                // The driver's clock counts from about now; validity is checked at the
                // exchange's time on it plus this.
                epoch_unix_s: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            },
        },
        ike_suites: c.proposals.clone(),
        // With their PFS groups: the `ike` crate leaves the group out of what IKE_AUTH offers
        // and accepts (§1.2) and uses it for CREATE_CHILD_SA (§1.3.1, §1.3.3).
        child_suites: first.map(|ch| ch.esp_proposals.clone()).unwrap_or_default(),
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
            signalling: Vec::new(),
        })
    }

    /// The signalling CHILD SAs' steps since the last call (`keying::handover`), in order.
    pub fn take_signalling(&mut self) -> Vec<SignallingEvent> {
        std::mem::take(&mut self.signalling)
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
                        // RFC 7296 §2.11: a response goes to the address and port the request
                        // came from (a mobile node that moved asks from its new care-of
                        // address); our own requests still go to the peer we know.
                        let to = if flags.response { e.peer } else { from };
                        let natt = e.natt;
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
            signalling: &mut self.signalling,
        };
        f(&mut cx)
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
        log_event!(Level::Info, "ike-sa-up", "connection" => self.conns[e.conn].conf.name, "peer" => e.peer, "spi_i" => format!("{:016x}", est.ike.spi_i), "spi_r" => format!("{:016x}", est.ike.spi_r), "suite" => crate::config::proposal::ike_suite_name(&est.ike.suite));
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
                    // A half-open SA that never got its IKE_AUTH is what a flood of spoofed
                    // IKE_SA_INITs leaves by the dozen: not worth a warning each.
                    let level = if e.initiator { Level::Warn } else { Level::Debug };
                    log_event!(level, "ike-failed", "connection" => self.conns[e.conn].conf.name, "peer" => e.peer, "why" => why.to_string());
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
}
