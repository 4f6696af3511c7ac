//! The Mobile IPv6 mobile node in the node (`[mobile-node]`, RFC 6275 §11): the `mip6` crate's
//! sans-IO [`mip6::MobileNode`] (Binding Update, retransmission, refresh before the lifetime
//! runs out) driven by the care-of address of the node's interface ([`super::care_of`]). Read
//! RFC 6275 §11.7.1 and §11.7.3, RFC 3776 §3 and RFC 4877 §4.3 first; docs/mip6.md has the
//! configuration.
//!
//! - A Binding Update is `IPv6 (care-of → home agent) | Destination Options (Home Address) |
//!   ESP (sa-out, transport) | MH`, built by `mip6`, sealed here and sent by
//!   [`super::socket::RawSender`] (the header is ours: IPV6_HDRINCL).
//! - The Binding Acknowledgement comes with a type 2 routing header (§6.4), which this kernel
//!   would answer with Parameter Problem: [`super::nft`] drops it at prerouting and
//!   [`super::socket::LinkSocket`] reads it off the link; ESP is opened with `sa-in`.
//! - The traffic of the home address (on the TUN device) goes through the node's data path: a
//!   policy `src = home address → protect with tunnel-out` (ESP tunnel mode to the home agent,
//!   whose outer source the kernel picks: the care-of address), installed through the control
//!   plane on the first tick with `tunnel-in` for the way back.

use super::{care_of, forward, nft, signalling, socket};
use crate::config::mip6_sa::SignallingKeys;
use crate::config::mobile_node::MobileNodeConf;
use crate::datapath::mailbox::{PolicyAction, PolicySpec};
use crate::keying::handover::SignallingEvent;
use crate::keying::plane::{ControlPlane, SaSpec, in_key_of, out_key_of};
use crate::sys::{Datagram, recv_mmsg};
use ipsec::spd::Prefix;
use ipsec::{DropReason, Engine, PacketBuf, PolicyId, Processed, SaHandle, Selector, Time};
use mip6::{AckOutcome, MobileNode, MobileNodeConfig, Outgoing};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;
use std::time::Instant;
use wire::mip6::IPPROTO_MH;

/// The tunnel policy's id (the home agent's are `1 << 42` and up; a node is one or the other).
const POLICY_ID: PolicyId = (1 << 42) + (1 << 32);
/// Datagrams read per recvmmsg(2) (Binding Acknowledgements are rare).
const BATCH: usize = 8;
/// Bytes per receive buffer.
const FRAME: usize = wire::mip6::MAX_LEN + 256;
/// Room in front of a Binding Update for ESP's header and IV.
const HEADROOM: usize = 64;
/// How often the interface's addresses are read (movement detection, §11.5.1).
const SCAN_US: u64 = 1_000_000;

/// What the mobile node did, for `status`.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct MobileCounters {
    /// Binding Updates sent (retransmissions and refreshes included).
    pub bu_sent: u64,
    /// Binding Updates the raw socket refused or that could not be sealed.
    pub bu_failed: u64,
    /// Packets the link socket delivered.
    pub received: u64,
    /// Of them, not to our care-of address or not parsed.
    pub not_ours: u64,
    /// Binding Acknowledgements that registered us.
    pub registered: u64,
    /// Binding Acknowledgements with a refusal status.
    pub rejected: u64,
    /// Binding Acknowledgements that matched no pending Binding Update.
    pub ignored: u64,
    /// Care-of address changes.
    pub moves: u64,
    /// IKEv2-made signalling SAs refused (selectors not our home address and home agent).
    pub ike_refused: u64,
}

/// The mobile node with its sockets and signalling SAs: what the control thread holds.
#[derive(Debug)]
pub struct MobileNodeRuntime {
    conf: MobileNodeConf,
    /// The state machine, once the interface has a care-of address.
    mn: Option<MobileNode>,
    engine: Engine,
    /// The SA our Binding Updates go out in: the configured `sa-out`, or the IKEv2-made one
    /// (RFC 4877 §4.4) once it is up; no registration starts before.
    bu_sa: Option<SaHandle>,
    buf: PacketBuf,
    link: socket::LinkSocket,
    sender: socket::RawSender,
    _silencer: nft::KernelSilencer,
    start: Instant,
    bufs: Vec<Vec<u8>>,
    got: Vec<Datagram>,
    counters: MobileCounters,
    esp_refused: BTreeMap<&'static str, u64>,
    last_status: Option<&'static str>,
    events: Vec<Value>,
    /// Whether `hipsec monitor` clients listen.
    pub want_events: bool,
    next_scan: u64,
    started: bool,
    /// Address notices from the kernel; `None` if the socket could not be opened (then the
    /// once-a-second read alone detects movement).
    watch: Option<care_of::AddrWatch>,
}

impl MobileNodeRuntime {
    /// Opens the link socket, the raw sender and the nftables table, and keys the signalling SAs.
    pub fn open(conf: &MobileNodeConf) -> Result<MobileNodeRuntime, String> {
        let start = Instant::now();
        let mut engine = Engine::new(crate::datapath::cipher::provider());
        let bu_sa = match conf.keys.manual() {
            Some((sa_in, sa_out)) => {
                let h = engine.add_outbound(sa_out, Time(0)).map_err(|e| format!("sa-out: {e}"))?;
                engine.add_inbound(sa_in, Time(0)).map_err(|e| format!("sa-in: {e}"))?;
                Some(h)
            }
            None => None,
        };
        let link = socket::LinkSocket::open_mobile(&conf.interface)
            .map_err(|e| format!("AF_PACKET socket on {}: {e}", conf.interface))?;
        let sender = socket::RawSender::open().map_err(|e| format!("raw IPv6 socket: {e}"))?;
        let silencer = nft::KernelSilencer::install_mobile()
            .map_err(|e| format!("nftables table {}: {e}", nft::MOBILE_TABLE))?;
        let watch = care_of::AddrWatch::open()
            .map_err(|e| {
                let why =
                    format!("rtnetlink address notices: {e}; reading addresses once a second");
                tracing::warn!(why = why.to_string(), "mip6-addr-watch-failed");
            })
            .ok();
        Ok(MobileNodeRuntime {
            conf: conf.clone(),
            mn: None,
            engine,
            bu_sa,
            buf: PacketBuf::new(FRAME + HEADROOM, HEADROOM),
            link,
            sender,
            _silencer: silencer,
            start,
            bufs: vec![vec![0; FRAME]; BATCH],
            got: vec![Datagram::default(); BATCH],
            counters: MobileCounters::default(),
            esp_refused: BTreeMap::new(),
            last_status: None,
            events: Vec::new(),
            want_events: false,
            next_scan: 0,
            started: false,
            watch,
        })
    }

    /// The link socket, for poll(2).
    pub fn fd(&self) -> RawFd {
        self.link.fd()
    }

    /// The address-notice socket, for poll(2), if it opened.
    pub fn watch_fd(&self) -> Option<RawFd> {
        self.watch.as_ref().map(care_of::AddrWatch::fd)
    }

    /// The kernel announced an address change: the next tick reads the addresses at once.
    pub fn addresses_changed(&mut self) {
        if self.watch.as_mut().is_some_and(care_of::AddrWatch::drain) {
            self.next_scan = 0;
        }
    }

    fn now(&self) -> Time {
        Time(self.start.elapsed().as_micros() as u64)
    }

    /// Installs the tunnel SAs and the policy that sends the home address's traffic through
    /// them (RFC 4877 §4.3), once.
    fn start_tunnel(&mut self, plane: &mut ControlPlane) {
        self.started = true;
        let c = &self.conf;
        let ha = SocketAddr::new(IpAddr::V6(c.home_agent), 0);
        let tin = SaSpec {
            params: c.tunnel_in.clone(),
            lane: 0,
            endpoint: None,
            beet: false,
            raw_ip: false,
            name: Some("mip6-tunnel-in".into()),
        };
        let tout = SaSpec {
            params: c.tunnel_out.clone(),
            lane: 0,
            endpoint: Some(ha),
            beet: false,
            raw_ip: false,
            name: Some("mip6-tunnel-out".into()),
        };
        let selector = Selector {
            src: Prefix { addr: IpAddr::V6(c.home_address), len: 128 },
            dst: Prefix::any(true),
            proto: None,
            src_ports: None,
            dst_ports: None,
        };
        let policy = PolicySpec {
            selector,
            action: PolicyAction::Protect(vec![out_key_of(&c.tunnel_out)]),
            in_sas: vec![in_key_of(&c.tunnel_in)],
            priority: forward::POLICY_PRIORITY,
        };
        if let Err(e) = plane.install_then(vec![tin], vec![tout], false, vec![(POLICY_ID, policy)])
        {
            tracing::warn!(why = e.to_string(), "mip6-tunnel-failed");
        }
    }

    /// Movement detection (at once after an address notice, else once a second), then whatever
    /// Binding Update is due (first one,
    /// retransmission with back-off, refresh before the lifetime runs out: `mip6`'s timers).
    pub fn tick(&mut self, plane: &mut ControlPlane) {
        if !self.started {
            self.start_tunnel(plane);
        }
        let now = self.now();
        if now.0 >= self.next_scan {
            self.next_scan = now.0 + SCAN_US;
            self.scan(now);
        }
        if let Some(Some(bu)) = self.mn.as_mut().map(|m| m.poll(now)) {
            self.send(bu, now);
        }
    }

    fn scan(&mut self, now: Time) {
        if self.bu_sa.is_none() {
            // Keyed by IKEv2 and not up yet: a Binding Update could not be protected.
            return;
        }
        let current = self.mn.as_ref().map(|m| m.care_of());
        let Some(next) = care_of::pick(current, &care_of::read(&self.conf.interface)) else {
            return;
        };
        if current == Some(next) {
            return;
        }
        self.event(json!({
            "event": "care-of-changed",
            "from": current.map(|c| c.to_string()), "to": next.to_string(),
        }));
        let _b = tracing::info_span!("binding", home_address = %self.conf.home_address).entered();
        tracing::info!(to = %next, "care-of-changed");
        let bu = match &mut self.mn {
            None => {
                let cfg = MobileNodeConfig {
                    home_address: self.conf.home_address,
                    home_agent: self.conf.home_agent,
                    lifetime_units: self.conf.lifetime_units,
                };
                // A first sequence number from the clock: a restarted node is unlikely to fall
                // behind its old binding (and BA 135 resynchronises it if it does, §11.7.3).
                let seq = (std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0)
                    & 0x7fff) as u16;
                self.mn.insert(MobileNode::new(cfg, next, seq)).poll(now)
            }
            Some(m) => {
                self.counters.moves += 1;
                Some(m.move_to(next, now))
            }
        };
        if let Some(bu) = bu {
            self.send(bu, now);
        }
    }

    fn send(&mut self, bu: Result<Outgoing, wire::WireError>, now: Time) {
        let sealed = bu.ok().and_then(|o| {
            let plain = o.to_plain_ipv6().ok()?;
            self.buf.load(&plain, HEADROOM).ok()?;
            let sa = self.bu_sa?;
            self.engine.protect_with(&[sa], &mut self.buf, now).ok()?;
            Some(o)
        });
        let Some(o) = sealed else {
            self.counters.bu_failed += 1;
            return;
        };
        self.sender.push(o.dst, self.buf.as_slice());
        let (f, err) = self.sender.flush();
        self.counters.bu_sent += f.sent;
        self.counters.bu_failed += f.failed;
        if let Some(e) = err {
            tracing::warn!(why = e.to_string(), "mip6-send-failed");
        }
        let seq = self.mn.as_ref().and_then(|m| m.pending_sequence());
        self.event(json!({
            "event": "binding-update-sent", "care_of_address": o.src.to_string(),
            "sequence": seq,
        }));
    }

    /// Everything waiting on the link socket.
    pub fn read_socket(&mut self) {
        let mut bufs = std::mem::take(&mut self.bufs);
        loop {
            let n = {
                let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
                recv_mmsg(self.link.fd(), &mut views, &mut self.got).unwrap_or(0)
            };
            for i in 0..n {
                self.counters.received += 1;
                let len = self.got[i].len;
                match bufs.get(i).and_then(|b| b.get(..len)).filter(|_| !self.got[i].truncated) {
                    Some(frame) => self.frame(frame),
                    None => self.counters.not_ours += 1,
                }
            }
            if n < bufs.len() {
                break;
            }
        }
        self.bufs = bufs;
    }

    /// One packet with a routing header: a Binding Acknowledgement to our care-of address?
    fn frame(&mut self, frame: &[u8]) {
        let addr = |at: usize| -> Option<Ipv6Addr> {
            let b: [u8; 16] = frame.get(at..at + 16)?.try_into().ok()?;
            Some(Ipv6Addr::from(b))
        };
        let (Some(src), Some(dst)) = (addr(8), addr(24)) else {
            self.counters.not_ours += 1;
            return;
        };
        if self.mn.as_ref().map(|m| m.care_of()) != Some(dst) {
            self.counters.not_ours += 1;
            return;
        }
        let now = self.now();
        let mh = match self.open_ba(frame, now) {
            Ok(mh) => mh,
            Err(reason) => {
                *self.esp_refused.entry(reason.name()).or_insert(0) += 1;
                return;
            }
        };
        let Some(mn) = self.mn.as_mut() else { return };
        let outcome = mn.on_binding_ack(src, self.conf.home_address, &mh);
        self.outcome(outcome, now);
    }

    /// Verifies and decrypts the ESP (sa-in) and returns the Mobility Header after it.
    fn open_ba(&mut self, frame: &[u8], now: Time) -> Result<Vec<u8>, DropReason> {
        self.buf.load(frame, HEADROOM).map_err(|_| DropReason::Malformed)?;
        match self.engine.inbound(&mut self.buf, now)? {
            Processed::Decapsulated { .. } => {}
            _ => return Err(DropReason::NotIpsec),
        }
        let plain = self.buf.as_slice();
        let layout = wire::ip::IpLayout::parse(plain).map_err(|_| DropReason::Malformed)?;
        if layout.next_header != IPPROTO_MH {
            return Err(DropReason::Malformed);
        }
        plain
            .get(layout.header_len..layout.total_len)
            .map(<[u8]>::to_vec)
            .ok_or(DropReason::Malformed)
    }

    fn outcome(&mut self, o: AckOutcome, now: Time) {
        let _b = tracing::info_span!("binding", home_address = %self.conf.home_address).entered();
        let (event, status) = match o {
            AckOutcome::Registered(r) => {
                self.counters.registered += 1;
                tracing::info!(care_of = %r.care_of_address, "binding-registered");
                let mut v = registration_json(&r, now);
                v["event"] = json!("binding-registered");
                (v, "registered")
            }
            AckOutcome::Deregistered => {
                tracing::info!("binding-deregistered");
                (json!({ "event": "binding-deregistered" }), "deregistered")
            }
            AckOutcome::Resynchronized { last_accepted } => (
                json!({ "event": "binding-resynchronized", "last_accepted": last_accepted }),
                "resynchronized",
            ),
            AckOutcome::Rejected(s) => {
                self.counters.rejected += 1;
                tracing::warn!(status = s.0, "binding-rejected");
                (json!({ "event": "binding-rejected", "status": s.0 }), "rejected")
            }
            AckOutcome::Ignored => {
                self.counters.ignored += 1;
                return;
            }
        };
        self.last_status = Some(status);
        self.event(event);
    }

    fn event(&mut self, v: Value) {
        if self.want_events {
            self.events.push(v);
        }
    }

    /// Monitor events since the last call.
    pub fn take_events(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.events)
    }

    /// The `mobile_node` part of `status` (addresses, registration, SPIs; never keys).
    pub fn status(&self) -> Value {
        let now = self.now();
        let c = &self.conf;
        let registration = self.mn.as_ref().and_then(|m| m.registration());
        let mut refused = serde_json::Map::new();
        for (name, n) in &self.esp_refused {
            refused.insert(format!("esp_{name}"), json!(n));
        }
        json!({
            "interface": c.interface,
            "home_address": c.home_address.to_string(),
            "home_agent": c.home_agent.to_string(),
            "care_of_address": self.mn.as_ref().map(|m| m.care_of().to_string()),
            "registration": registration.map(|r| registration_json(&r, now)),
            "pending_sequence": self.mn.as_ref().and_then(|m| m.pending_sequence()),
            "last_ack": self.last_status,
            "counters": self.counters,
            "refused": refused,
            "signalling": {
                "keyed_by": match &c.keys {
                    SignallingKeys::Manual { .. } => "config".to_string(),
                    SignallingKeys::Ike { connection } => format!("ike:{connection}"),
                },
                "sa_out_spi": self.bu_sa.and_then(|h| self.engine.outbound_sa(h)).map(|sa| sa.spi().to_string()),
                "sa_in_spis": self.engine.inbound_sas().map(|sa| sa.spi().to_string()).collect::<Vec<_>>(),
                "tunnel_out_spi": c.tunnel_out.spi.to_string(),
                "tunnel_in_spi": c.tunnel_in.spi.to_string(),
            },
        })
    }
}

impl MobileNodeRuntime {
    /// A step of the IKEv2-made signalling SAs (RFC 4877 §4.4) of connection `ike`: only the
    /// connection this node names, and only for our home address and home agent.
    pub fn signalling(&mut self, e: SignallingEvent) {
        let ours = matches!(&self.conf.keys, SignallingKeys::Ike { connection } if connection == e.connection());
        if !ours {
            tracing::warn!(connection = %e.connection(), "mip6-ike-not-ours");
            return;
        }
        let now = self.now();
        match e {
            SignallingEvent::Install { local, remote, sa_in, sa_out, send, connection } => {
                if local != self.conf.home_address || remote != self.conf.home_agent {
                    self.counters.ike_refused += 1;
                    tracing::warn!(connection = %connection, local_ts = %local, remote_ts = %remote, why = "not our home address and home agent", "mip6-ike-refused");
                    return;
                }
                match signalling::add_pair(&mut self.engine, &sa_in, &sa_out, now) {
                    Ok(h) => {
                        let first = self.bu_sa.is_none();
                        if send || first {
                            self.bu_sa = Some(h);
                        }
                        if first {
                            // Register at once rather than at the next scan.
                            self.next_scan = 0;
                        }
                        tracing::info!(connection = %connection, spi_in = %sa_in.spi, spi_out = %sa_out.spi, "mip6-signalling-sa-up");
                        self.event(json!({ "event": "signalling-sa-up", "connection": connection, "spi_in": sa_in.spi.to_string(), "spi_out": sa_out.spi.to_string() }));
                    }
                    Err(why) => {
                        tracing::warn!(why = why.to_string(), "mip6-ike-install-failed");
                    }
                }
            }
            SignallingEvent::Send { spi_out, .. } => {
                if let Some(h) =
                    signalling::outbound_to(&self.engine, spi_out, self.conf.home_agent)
                {
                    self.bu_sa = Some(h);
                }
            }
            SignallingEvent::Remove { spi_in, spi_out, .. } => {
                let gone = signalling::remove_pair(
                    &mut self.engine,
                    spi_in,
                    spi_out,
                    self.conf.home_agent,
                );
                if gone.is_some() && self.bu_sa == gone {
                    self.bu_sa = None;
                }
            }
        }
    }
}

impl Drop for MobileNodeRuntime {
    /// A node that stops de-registers (RFC 6275 §11.7.1: a Binding Update with lifetime 0) so
    /// that its home agent stops tunnelling to a care-of address nobody listens on at once, not
    /// when the binding expires. The acknowledgement is not waited for.
    fn drop(&mut self) {
        let now = self.now();
        let bu = match self.mn.as_mut() {
            Some(m) if m.registration().is_some() => m.deregister(now),
            _ => return,
        };
        self.send(bu, now);
        let _b = tracing::info_span!("binding", home_address = %self.conf.home_address).entered();
        tracing::info!("binding-deregistering");
    }
}

fn registration_json(r: &mip6::Registration, now: Time) -> Value {
    json!({
        "care_of_address": r.care_of_address.to_string(),
        "lifetime_s": u64::from(r.lifetime_units) * u64::from(wire::mip6::LIFETIME_UNIT_SECS),
        "expires_in_s": r.expires.0.saturating_sub(now.0) / 1_000_000,
        "refresh_in_s": r.refresh_at.0.saturating_sub(now.0) / 1_000_000,
    })
}
