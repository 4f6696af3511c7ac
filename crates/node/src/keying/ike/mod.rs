//! The IKEv2 driver (RFC 7296): a thin adapter between the node and the `ike` crate's
//! [`Endpoint`], which owns every IKE SA's whole life — the initial exchanges, retransmission,
//! the rekey schedule and its retries, DPD, INITIAL_CONTACT, what a failure tears down. The
//! driver gives it the node's `[[connection]]`s, each datagram with the port it came on, and
//! the clock; it sends what comes out and turns the endpoint's events into control-plane updates
//! ([`children`]): inbound first (DESIGN rule 4: events are applied before the datagrams of the
//! same step leave, so the responder's inbound SA is live before its IKE_AUTH response goes).

pub mod children;
pub mod install;
mod ops;
pub mod runtime;
pub mod sockets;
mod status;
mod vip;

use crate::config::connection::{AuthConf, ConnectionConf, StartAction};
use crate::keying::handover::SignallingEvent;
use crate::keying::plane::ControlPlane;
use crate::log::{Level, event_at};
use children::{ChildPath, Ctx};
use ike::assoc::{
    AssocId, Backoff, ChildConfig, ConnectionConfig, DownReason, Endpoint, Event, Lifetimes,
};
use ike::auth::CookieSecret;
use ike::{AuthConfig, Config, Time};
use ipsec::spd_table::PolicyId;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// IKE-made policy ids start here, far above the config's (its index + 1) and the command
/// line's.
const POLICY_BASE: PolicyId = 1 << 40;
/// Waits between failed setups of a connection that should be up: 2 s, doubling to 64 s (a
/// peer that is not ready yet is reached soon, one that is gone is not hammered).
const SETUP_RETRY: Backoff =
    Backoff { first: Duration::from_secs(2), max: Duration::from_secs(64) };
/// Waits between failed rekeys of ours: 10 s, doubling to 60 s, until the hard lifetime.
const REKEY_RETRY: Backoff =
    Backoff { first: Duration::from_secs(10), max: Duration::from_secs(60) };

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

/// What the node keeps of an association besides the endpoint's own state: its data-path
/// children and when it started, for status.
#[derive(Debug)]
struct Assoc {
    conn: usize,
    children: HashMap<String, ChildPath>,
}

/// The driver of every IKE SA of the node.
pub struct IkeDriver {
    endpoint: Endpoint,
    conns: Vec<ConnectionConf>,
    assocs: HashMap<AssocId, Assoc>,
    local_ip: IpAddr,
    ike_port: u16,
    natt_port: u16,
    /// When the driver started: its clock's epoch.
    epoch: Instant,
    next_policy: PolicyId,
    /// Every IKE SA's and CHILD SA's tshark key-table lines, when the node was started to
    /// export them.
    key_log: Option<KeyLog>,
    /// When the datagram being handled was read.
    received: Instant,
    /// Trap policies (their acquires start the connection).
    traps: HashMap<PolicyId, usize>,
    traps_installed: bool,
    /// Pairs of `mip6 = "signalling"` children for the Mobile IPv6 role, not yet collected.
    signalling: Vec<SignallingEvent>,
    /// Datagrams the endpoint dropped for being for no IKE SA we run (CREATE_CHILD_SA or
    /// INFORMATIONAL for an unknown SPI).
    unsupported: u64,
    /// The TUN device: virtual IPs granted to us go on it, routes to those we lease into it.
    tun: Option<String>,
    /// Virtual IPs on the TUN device (ours) or routed into it (leased), by association.
    vips: Vec<(AssocId, Vec<(IpAddr, u8)>)>,
    /// Routed into the device rather than put on it (leased to peers).
    leased: Vec<AssocId>,
    /// Each IKE SA's log span (`ike{conn id peer}`), from its first event to its end.
    spans: HashMap<AssocId, tracing::Span>,
}

/// The Wireshark key tables.
#[derive(Debug, Default)]
pub struct KeyLog {
    /// `ikev2_decryption_table` lines.
    pub ike: Vec<String>,
    /// `esp_sa` lines.
    pub esp: Vec<String>,
}

impl std::fmt::Debug for IkeDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IkeDriver").field("endpoint", &self.endpoint).finish_non_exhaustive()
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
        // A road warrior proposes any address of its virtual IPs' families as TSi, which the
        // responder narrows to the address it grants (RFC 7296 §2.9).
        local_ts: if c.vips.is_empty() {
            first.map(|ch| ch.local_ts.clone()).unwrap_or_default()
        } else {
            c.vips.iter().map(|v| wire::ikev2::TrafficSelector::any(v.is_ipv6())).collect()
        },
        remote_ts: first.map(|ch| ch.remote_ts.clone()).unwrap_or_default(),
        mode: first.map_or(ike::Mode::Tunnel, |ch| ch.mode),
        peer_eap: c.eap.clone(),
        more_children: c
            .children
            .iter()
            .skip(1)
            .map(|ch| ike::ChildPolicy {
                suites: ch.esp_proposals.clone(),
                local_ts: ch.local_ts.clone(),
                remote_ts: ch.remote_ts.clone(),
                mode: ch.mode,
            })
            .collect(),
    }
}

/// A child's name and timers as the endpoint takes them.
fn child_config(ch: &crate::config::connection::ChildConf) -> ChildConfig {
    ChildConfig {
        name: ch.name.clone(),
        lifetimes: Lifetimes {
            rekey_time: ch.rekey_time,
            rand_time: ch.rand_time,
            life_time: ch.life_time,
            over_time: Duration::ZERO,
        },
    }
}

/// The endpoint's view of a `[[connection]]`: IKE on port 500, or on the NAT-T port from the
/// first message with `encap` (RFC 7296 §2.23).
fn connection_config(
    c: &ConnectionConf,
    local_ip: IpAddr,
    ike_port: u16,
    natt_port: u16,
) -> ConnectionConfig {
    let local_ip = c.local_addr.unwrap_or(local_ip);
    let port = if c.encap { natt_port } else { ike_port };
    let unspecified = if local_ip.is_ipv4() {
        IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
    };
    let child = c.children.first().map_or_else(
        || ChildConfig { name: "-".to_owned(), lifetimes: Lifetimes::NEVER },
        child_config,
    );
    ConnectionConfig {
        name: c.name.clone(),
        ike: ike_config(c, local_ip),
        child,
        more_children: c.children.iter().skip(1).map(child_config).collect(),
        local: SocketAddr::new(local_ip, port),
        remote: SocketAddr::new(c.remote_addr.unwrap_or(unspecified), port),
        any_peer: c.remote_addr.is_none(),
        natt_port: Some(natt_port),
        encap: c.encap,
        start: c.children.iter().any(|ch| ch.start_action == StartAction::Start),
        ike_lifetimes: Lifetimes { rekey_time: c.rekey_time, ..Lifetimes::NEVER },
        dpd_delay: c.dpd_delay,
        setup_retry: SETUP_RETRY,
        rekey_retry: REKEY_RETRY,
        pools: c.pools.clone(),
        vips: c.vips.clone(),
    }
}

impl IkeDriver {
    /// A driver for `conns`; `local_ip` is the node's address, IKE on `ike_port` (500) and
    /// `natt_port` (the ESP-in-UDP port, 4500). Nothing is sent before the first
    /// [`IkeDriver::tick`].
    pub fn new(
        export_keys: bool,
        limits: crate::config::ike_limits::IkeLimits,
        conns: &[ConnectionConf],
        provider: &'static dyn crypto::Provider,
        local_ip: IpAddr,
        ike_port: u16,
        natt_port: u16,
    ) -> Result<IkeDriver, String> {
        let mut key = zeroize::Zeroizing::new([0u8; 32]);
        provider.fill_random(&mut key[..]).map_err(|e| format!("random: {e}"))?;
        let mut seed = [0u8; 8];
        provider.fill_random(&mut seed).map_err(|e| format!("random: {e}"))?;
        let cfgs: Vec<ConnectionConfig> = conns
            .iter()
            .map(|c| ConnectionConfig {
                // The endpoint starts these at the first tick, not before the traps are in.
                start: false,
                ..connection_config(c, local_ip, ike_port, natt_port)
            })
            .collect();
        let mut endpoint = Endpoint::new(
            Time::ZERO,
            cfgs,
            provider,
            CookieSecret { version: 0, key },
            u64::from_ne_bytes(seed),
        )
        .map_err(|e| format!("connections: {e}"))?;
        endpoint.export_keys(export_keys);
        endpoint.set_cookie_threshold(limits.cookie_threshold);
        endpoint.set_half_open_per_peer(limits.half_open_per_peer);
        Ok(IkeDriver {
            endpoint,
            conns: conns.to_vec(),
            assocs: HashMap::new(),
            local_ip,
            ike_port,
            natt_port,
            epoch: Instant::now(),
            next_policy: POLICY_BASE,
            key_log: export_keys.then(KeyLog::default),
            received: Instant::now(),
            traps: HashMap::new(),
            traps_installed: false,
            signalling: Vec::new(),
            unsupported: 0,
            tun: None,
            vips: Vec::new(),
            leased: Vec::new(),
            spans: HashMap::new(),
        })
    }

    /// The driver's clock.
    fn now(&self) -> Time {
        Time::from_micros(u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// The signalling CHILD SAs' steps since the last call (`keying::handover`), in order.
    pub fn take_signalling(&mut self) -> Vec<SignallingEvent> {
        std::mem::take(&mut self.signalling)
    }

    /// Initiates every connection whose child says `start_action = start`.
    pub fn start(&mut self, plane: &mut ControlPlane) -> Vec<Transmit> {
        let now = self.now();
        for c in &self.conns {
            if c.children.iter().any(|ch| ch.start_action == StartAction::Start)
                && c.remote_addr.is_some()
            {
                let _ = self.endpoint.initiate(now, &c.name);
            }
        }
        self.drain(plane)
    }

    /// The index of connection `name`.
    pub fn connection(&self, name: &str) -> Option<usize> {
        self.conns.iter().position(|c| c.name == name)
    }

    /// Brings connection `name` up (`hipsec initiate`); a pending retry is brought forward,
    /// never doubled.
    pub fn initiate(
        &mut self,
        plane: &mut ControlPlane,
        name: &str,
    ) -> Result<Vec<Transmit>, String> {
        let c = self.conns.iter().find(|c| c.name == name).ok_or("no such connection")?;
        if c.remote_addr.is_none() {
            return Err("remote_addrs = %any: this connection only responds".into());
        }
        let now = self.now();
        self.endpoint.initiate(now, name).map_err(|e| e.to_string())?;
        Ok(self.drain(plane))
    }

    /// Handles one IKE datagram from `from` (`natt`: it came on the ESP-in-UDP port).
    pub fn datagram(
        &mut self,
        plane: &mut ControlPlane,
        from: SocketAddr,
        natt: bool,
        bytes: &[u8],
    ) -> Vec<Transmit> {
        self.received = Instant::now();
        let now = self.now();
        let port = if natt { self.natt_port } else { self.ike_port };
        let local = SocketAddr::new(self.local_ip, port);
        if let Err(why) = self.endpoint.handle_at(now, Some(local), from, bytes) {
            if matches!(why, ike::Error::PeerMisbehaved(ike::PeerMisbehaved::UnexpectedMessage(m)) if m.starts_with("no IKE SA"))
            {
                self.unsupported += 1;
            }
            tracing::debug!(peer = %from, why = why.to_string(), "ike-dropped");
        }
        self.drain(plane)
    }

    /// The endpoint's timers: retransmissions, rekeys and their retries, hard lifetimes, DPD,
    /// half-open expiry, setup retries. Call every few tens of milliseconds.
    pub fn tick(&mut self, plane: &mut ControlPlane) -> Vec<Transmit> {
        let now = self.now();
        if self.endpoint.poll_timeout().is_some_and(|t| t <= now) {
            self.endpoint.handle_timeout(now);
        }
        self.drain(plane)
    }

    /// Applies the endpoint's events to the data path, then hands out its datagrams (so what
    /// an answer promises is installed before the answer leaves).
    fn drain(&mut self, plane: &mut ControlPlane) -> Vec<Transmit> {
        let mut events: Vec<Option<Event>> =
            std::iter::from_fn(|| self.endpoint.poll_event()).map(Some).collect();
        for i in 0..events.len() {
            let Some(e) = events[i].take() else { continue };
            // An install and the switch to it that follows in the same step go in one envelope
            // (one acknowledgement to wait for), unless another pair changes in between.
            let mut switch = false;
            if let Event::InstallChild { assoc, keys, .. } = &e {
                let (a, s) = (*assoc, keys.spi_in);
                for later in events.iter_mut().skip(i + 1) {
                    match later {
                        Some(Event::SwitchOutbound { assoc, spi_in, .. })
                            if *assoc == a && *spi_in == s =>
                        {
                            *later = None;
                            switch = true;
                            break;
                        }
                        Some(Event::ChildRekeyed { .. } | Event::DecryptionKeys { .. }) | None => {}
                        Some(_) => break,
                    }
                }
            }
            self.event(plane, e, switch);
        }
        let mut out = Vec::new();
        while let Some(t) = self.endpoint.poll_transmit() {
            let natt = t.from.port() == self.natt_port;
            out.push(Transmit { natt, to: t.to, bytes: t.payload });
        }
        out
    }

    /// The log span of the IKE SA `e` is about: made at its first event, with the peer's
    /// address once it is up, so every line of one IKE SA (and of its CHILD SAs, in `child`
    /// spans inside it) carries the same fields and a span filter shows one peer's story.
    fn span_of(&mut self, e: &Event) -> tracing::Span {
        let conn_of_event = match e {
            Event::Initiating { conn, .. }
            | Event::VirtualIp { conn, .. }
            | Event::Established { conn, .. }
            | Event::Down { conn, .. } => Some(conn.clone()),
            _ => None,
        };
        let Some(assoc) = e.assoc() else {
            return tracing::info_span!("ike", conn = %conn_of_event.unwrap_or_default());
        };
        let conn = conn_of_event
            .or_else(|| self.assoc_conn(assoc).map(|c| c.name.clone()))
            .unwrap_or_default();
        let span = self
            .spans
            .entry(assoc)
            .or_insert_with(|| {
                tracing::info_span!("ike", conn = %conn, id = assoc, peer = tracing::field::Empty)
            })
            .clone();
        if let Event::Established { peer, .. } = e {
            span.record("peer", tracing::field::display(peer));
        }
        span
    }

    fn event(&mut self, plane: &mut ControlPlane, e: Event, switch: bool) {
        let span = self.span_of(&e);
        let _ike = span.enter();
        let child = e.child().map(|name| tracing::info_span!("child", name = %name));
        let _child = child.as_ref().map(tracing::Span::enter);
        if let Event::Down { assoc, .. } = &e {
            self.spans.remove(assoc);
        }
        let now_ms = self.now().as_millis();
        match e {
            Event::Initiating { conn, failures } => {
                if failures == 0 {
                    tracing::info!(connection = %conn, "ike-initiate");
                } else {
                    tracing::info!(connection = %conn, failures = failures, "ike-retry");
                }
            }
            Event::ChildFailed { assoc, child, error } => {
                let conn = self.assoc_conn(assoc).map(|c| c.name.clone()).unwrap_or_default();
                tracing::warn!(connection = %conn, child = %child, why = error.to_string(), "child-sa-failed");
            }
            Event::DecryptionKeys { line, .. } => {
                if let Some(k) = &mut self.key_log {
                    k.ike.push(line);
                }
            }
            Event::Established { assoc, conn, peer, spi_i, spi_r } => {
                let ci = self.connection(&conn).unwrap_or(0);
                self.assocs.insert(assoc, Assoc { conn: ci, children: HashMap::new() });
                tracing::info!(connection = %conn, peer = %peer, spi_i = %format!("{spi_i:016x}"), spi_r = %format!("{spi_r:016x}"), "ike-sa-up");
            }
            Event::IkeRekeyed { assoc, spi_i, spi_r } => {
                let conn = self.assoc_conn(assoc).map(|c| c.name.clone()).unwrap_or_default();
                tracing::info!(connection = %conn, spi_i = %format!("{spi_i:016x}"), spi_r = %format!("{spi_r:016x}"), "ike-sa-rekeyed");
            }
            Event::VirtualIp { assoc, conn, ours, addrs, dns } => {
                self.virtual_ip(assoc, &conn, ours, addrs, &dns);
            }
            Event::Down { assoc, conn, reason } => {
                self.assocs.remove(&assoc);
                self.drop_virtual_ips(assoc);
                let (level, what) = match &reason {
                    DownReason::SetupFailed(_) => (Level::Warn, "ike-failed"),
                    // What a flood of spoofed IKE_SA_INITs leaves by the dozen.
                    DownReason::HalfOpenExpired => (Level::Debug, "ike-failed"),
                    _ => (Level::Info, "ike-sa-down"),
                };
                event_at!(level, connection = %conn, why = down_reason(&reason), "{what}");
            }
            Event::RekeyStarted { assoc, child, spi_in } => {
                if let Some(p) = self.child_path(assoc, &child) {
                    p.rekey_started(spi_in);
                }
            }
            Event::InstallChild { assoc, child, keys, udp_encap } => {
                let received = self.received;
                let Some(a) = self.assocs.get_mut(&assoc) else { return };
                let Some(conn) = self.conns.get(a.conn) else { return };
                let Some(cc) = conn.children.iter().find(|c| c.name == child) else { return };
                // ESP goes in UDP to the port IKE moved to behind a NAT (§2.23), else to the
                // peer's NAT-T port.
                let view = self.endpoint.views().into_iter().find(|v| v.assoc == assoc);
                let (peer, floated) = view
                    .map_or((SocketAddr::new(self.local_ip, 0), false), |v| {
                        (v.peer, v.local.port() == self.natt_port)
                    });
                let esp_port = if floated { peer.port() } else { self.natt_port };
                if let Some(log) = &mut self.key_log {
                    let local = conn.local_addr.unwrap_or(self.local_ip);
                    if let Some(lines) = ike::wireshark::esp_sa_lines(&keys, local, peer.ip()) {
                        log.esp.extend(lines);
                    }
                }
                let mut cx = Ctx {
                    plane,
                    conn,
                    child: cc,
                    local: conn.local_addr.unwrap_or(self.local_ip),
                    esp_peer: SocketAddr::new(peer.ip(), esp_port),
                    raw_ip: !udp_encap,
                    next_policy: &mut self.next_policy,
                    now_ms,
                    received,
                    signalling: &mut self.signalling,
                };
                let name = format!("{}/{}", conn.name, cc.name);
                let path = a.children.entry(child).or_insert_with(|| ChildPath::new(name));
                path.install(&keys, switch, &mut cx);
            }
            Event::ChildRekeyed { assoc, child, old_spi_in, spi_in } => {
                let received = self.received;
                if let Some(p) = self.child_path(assoc, &child) {
                    p.rekeyed(old_spi_in, spi_in, received);
                }
            }
            Event::SwitchOutbound { assoc, child, spi_in, .. } => {
                self.with_child(plane, assoc, &child, now_ms, |p, cx| p.switch(spi_in, cx));
            }
            Event::RemoveChild { assoc, child, spi_in, .. } => {
                self.with_child(plane, assoc, &child, now_ms, |p, cx| p.remove(spi_in, cx));
            }
        }
    }

    fn assoc_conn(&self, assoc: AssocId) -> Option<&ConnectionConf> {
        self.assocs.get(&assoc).and_then(|a| self.conns.get(a.conn))
    }

    fn child_path(&mut self, assoc: AssocId, child: &str) -> Option<&mut ChildPath> {
        self.assocs.get_mut(&assoc).and_then(|a| a.children.get_mut(child))
    }

    fn with_child(
        &mut self,
        plane: &mut ControlPlane,
        assoc: AssocId,
        child: &str,
        now_ms: u64,
        f: impl FnOnce(&mut ChildPath, &mut Ctx<'_>),
    ) {
        let received = self.received;
        let Some(a) = self.assocs.get_mut(&assoc) else { return };
        let Some(conn) = self.conns.get(a.conn) else { return };
        let Some(cc) = conn.children.iter().find(|c| c.name == child) else { return };
        let Some(path) = a.children.get_mut(child) else { return };
        let mut cx = Ctx {
            plane,
            conn,
            child: cc,
            local: conn.local_addr.unwrap_or(self.local_ip),
            esp_peer: SocketAddr::new(self.local_ip, 0),
            raw_ip: false,
            next_policy: &mut self.next_policy,
            now_ms,
            received,
            signalling: &mut self.signalling,
        };
        f(path, &mut cx);
    }
}

/// A down reason for the log.
fn down_reason(r: &DownReason) -> String {
    match r {
        DownReason::SetupFailed(e) => e.to_string(),
        DownReason::HalfOpenExpired => "no IKE_AUTH before the half-open timeout".into(),
        DownReason::PeerDead => "the peer stopped answering".into(),
        DownReason::DeletedByPeer => "deleted by the peer".into(),
        DownReason::Terminated => "terminated".into(),
        DownReason::Replaced => "the peer came back with INITIAL_CONTACT".into(),
    }
}
