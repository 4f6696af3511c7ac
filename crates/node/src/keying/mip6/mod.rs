//! The Mobile IPv6 home agent in the node: the `mip6` crate's sans-IO
//! [`mip6::HomeAgent`] fed with Binding Updates read off the link, answered with Binding
//! Acknowledgements sealed in the mobile node's SA. Read RFC 6275 §9.3.1, §9.5.1, §10.3 and
//! RFC 3776 §3–§5 first; docs/mip6.md has the configuration.
//!
//! A Binding Update is `IPv6 (care-of → home agent) | Destination Options (Home Address) | ESP
//! (transport) | Mobility Header` (RFC 3776 §3). Per packet, on the control thread:
//! 1. [`socket::LinkSocket`] hands over the IPv6 packet in a batch (recvmmsg(2));
//!    [`nft::KernelSilencer`] has kept the kernel from answering it with Parameter Problem;
//! 2. [`packet::parse`] notes the Home Address option (§9.3.1) without acting on it;
//! 3. [`signalling::Signalling::open`] verifies and decrypts the ESP with the SA its SPI
//!    names — on the packet as sent, as RFC 3776 §3 orders — and so knows the home address
//!    that SA was set up for (a replayed or forged packet stops here, counted as `esp_*`);
//! 4. [`mip6::HomeAgent::handle`] checks the option's home address against the SA's and runs
//!    §9.5.1/§10.3.1 on the binding cache;
//! 5. the Binding Acknowledgement goes back to the care-of address with a type 2 routing
//!    header (§6.4, §9.5.4), sealed with the mobile node's outbound SA, by
//!    [`socket::RawSender`]: queued, and the batch's replies sent by one sendmmsg(2).
//!
//! A home address's first Binding Update waits for Duplicate Address Detection on the home link
//! (§10.3.1, [`dad`]): the tick reads the kernel's verdict and hands it to
//! [`mip6::HomeAgent::dad_complete`]. Expiry runs on the control thread's tick (`expire`, about
//! once a second).
//!
//! Forwarding to the care-of address (§10.4.1, RFC 4877 §4.3) is [`forward`]'s: the binding
//! changes of a batch are applied through the control plane once the batch is answered.
//! The mobile node's role is [`mobile`].

pub mod bpf;
pub mod care_of;
pub mod dad;
pub mod forward;
mod ike_keys;
mod json;
pub mod kernel;
pub mod mobile;
pub mod nft;
pub mod packet;
pub mod signalling;
pub mod socket;
mod status;

use crate::config::home_agent::HomeAgentConf;
use crate::keying::plane::ControlPlane;
use crate::sys::{Datagram, MMSG_MAX, recv_mmsg};
use ipsec::Time;
use mip6::{Binding, BindingChange, Decision, HomeAgent, HomeAgentConfig, InboundMh};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::time::Instant;
use wire::mip6::{IPPROTO_MH, MAX_LEN};

/// Datagrams read per recvmmsg(2).
const BATCH: usize = 32;
/// Bytes per receive buffer: the largest Mobility Header with its headers and ESP.
const FRAME: usize = MAX_LEN + 256;
const IPPROTO_ESP: u8 = 50;

/// The node's own counters (the binding counters are the `mip6` crate's).
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct LinkCounters {
    /// Packets the link socket delivered.
    pub received: u64,
    /// Packets whose IPv6 or Destination Options header did not parse.
    pub not_parsed: u64,
    /// Packets with neither ESP nor a Mobility Header after the options.
    pub not_mobility: u64,
    /// Binding Acknowledgements and Errors sent.
    pub sent: u64,
    /// Replies the raw socket refused.
    pub send_failed: u64,
    /// Replies that could not be sealed (no outbound SA for the home address).
    pub not_sealed: u64,
    /// Duplicate Address Detection runs started for a home address's first binding.
    pub dad_started: u64,
    /// Runs that could not start (the probe address could not be added): the registration
    /// went ahead without DAD.
    pub dad_unavailable: u64,
    /// IKEv2-made signalling SAs refused: their selectors were not the home address of the
    /// mobile node that names the connection (RFC 4877 §4.4).
    pub ike_refused: u64,
}

/// The home agent with its sockets, SAs and clock: what the control thread holds.
#[derive(Debug)]
pub struct HomeAgentRuntime {
    conf: HomeAgentConf,
    ha: HomeAgent,
    sigs: signalling::Signalling,
    link: socket::LinkSocket,
    sender: socket::RawSender,
    _silencer: nft::KernelSilencer,
    start: Instant,
    bufs: Vec<Vec<u8>>,
    got: Vec<Datagram>,
    counters: LinkCounters,
    /// ESP drops by `ipsec::DropReason` name (`esp_replayed`, `esp_integrity_failed`, ...).
    esp_refused: BTreeMap<&'static str, u64>,
    /// Monitor events not yet collected (only while someone listens).
    events: Vec<Value>,
    /// Whether `hipsec monitor` clients listen (events are built only then).
    pub want_events: bool,
    next_expire_s: u64,
    fwd: forward::Forwarding,
    /// Binding changes of the batch for `fwd`: the home address and its care-of address
    /// (None: the binding is gone).
    changed: Vec<(std::net::Ipv6Addr, Option<std::net::Ipv6Addr>)>,
    /// `ike = "NAME"` of the mobile nodes keyed by IKEv2: connection → home address.
    ike_homes: std::collections::HashMap<String, std::net::Ipv6Addr>,
    /// Duplicate Address Detection runs on the home link.
    dad: dad::Probes,
    /// Where each held Binding Update's answer goes: the packet it came in (for the event)
    /// and the home address whose SA seals the reply.
    dad_from: std::collections::HashMap<std::net::Ipv6Addr, packet::Inbound>,
}

impl HomeAgentRuntime {
    /// Opens the sockets, installs the nftables rule and builds the SAs; `tun` is the node's
    /// TUN device, where forwarded packets for home addresses are routed.
    pub fn open(conf: &HomeAgentConf, tun: &str) -> Result<HomeAgentRuntime, String> {
        let start = Instant::now();
        let sigs = signalling::Signalling::new(&conf.mobile_nodes, Time(0))?;
        let home = (conf.home_prefix, conf.home_prefix_len);
        let link = socket::LinkSocket::open(&conf.interface, conf.address, home)
            .map_err(|e| format!("AF_PACKET socket on {}: {e}", conf.interface))?;
        let sender = socket::RawSender::open().map_err(|e| format!("raw IPv6 socket: {e}"))?;
        let silencer = nft::KernelSilencer::install(conf.address)
            .map_err(|e| format!("nftables table {}: {e}", nft::TABLE))?;
        let mut ha = HomeAgent::new(HomeAgentConfig {
            address: conf.address,
            home_prefix: conf.home_prefix,
            home_prefix_len: conf.home_prefix_len,
            max_lifetime_units: conf.max_lifetime_units,
            capacity: conf.capacity,
        });
        ha.serve_only(conf.mobile_nodes.iter().map(|m| m.home_address));
        ha.require_dad(conf.dad);
        Ok(HomeAgentRuntime {
            conf: conf.clone(),
            ha,
            sigs,
            link,
            sender,
            _silencer: silencer,
            start,
            bufs: vec![vec![0; FRAME]; BATCH.min(MMSG_MAX)],
            got: vec![Datagram::default(); BATCH.min(MMSG_MAX)],
            counters: LinkCounters::default(),
            esp_refused: BTreeMap::new(),
            events: Vec::new(),
            want_events: false,
            next_expire_s: 1,
            fwd: forward::Forwarding::new(conf, tun),
            changed: Vec::new(),
            ike_homes: conf.ike_homes(),
            dad: dad::Probes::new(&conf.interface),
            dad_from: std::collections::HashMap::new(),
        })
    }

    /// The link socket, for poll(2).
    pub fn fd(&self) -> RawFd {
        self.link.fd()
    }

    fn now(&self) -> Time {
        Time(self.start.elapsed().as_micros() as u64)
    }

    /// Everything waiting on the link socket, a batch per recvmmsg(2); the bindings that
    /// changed move their tunnels through `plane`.
    pub fn read_socket(&mut self, plane: &mut ControlPlane) {
        let mut bufs = std::mem::take(&mut self.bufs);
        loop {
            let n = {
                let k = bufs.len().min(BATCH);
                let mut views: [&mut [u8]; BATCH] = Default::default();
                for (v, b) in views.iter_mut().zip(bufs.iter_mut()) {
                    *v = b.as_mut_slice();
                }
                match recv_mmsg(self.link.fd(), &mut views[..k], &mut self.got) {
                    Ok(n) => n,
                    Err(e) => {
                        tracing::warn!(why = e.to_string(), "mip6-recv-failed");
                        0
                    }
                }
            };
            if n == 0 {
                break;
            }
            let now = self.now();
            // Parse the batch and touch every claimed home address's cache entry first, so that
            // in a large cache the batch's memory loads overlap (mip6::BindingCache::touch).
            let mut parsed: [Option<packet::Inbound>; BATCH] = [None; BATCH];
            for ((got, buf), p) in self.got.iter().zip(bufs.iter()).zip(parsed.iter_mut()).take(n) {
                *p = buf.get(..got.len).and_then(|f| packet::parse(f).ok());
                if let Some(inb) = p {
                    self.ha.cache().touch(&inb.home_address.unwrap_or(inb.src));
                }
            }
            for i in 0..n {
                let (len, cut) = (self.got[i].len, self.got[i].truncated);
                self.counters.received += 1;
                if cut {
                    self.counters.not_parsed += 1;
                    continue;
                }
                if let Some(frame) = bufs.get(i).and_then(|b| b.get(..len)) {
                    self.packet(frame, parsed.get(i).copied().flatten(), now);
                }
            }
            // The batch's replies leave together (RFC 6275 §9.5.4: each to its care-of address).
            self.flush_replies();
            if n < bufs.len() {
                break;
            }
        }
        self.bufs = bufs;
        self.forward(plane);
    }

    /// Applies the binding changes collected to the tunnels.
    fn forward(&mut self, plane: &mut ControlPlane) {
        // The buffer is kept: no allocation per batch.
        let mut changed = std::mem::take(&mut self.changed);
        for (home, care_of) in changed.drain(..) {
            match care_of {
                Some(c) => self.fwd.bound(plane, home, c),
                None => self.fwd.unbound(plane, home),
            }
        }
        self.changed = changed;
    }

    /// One packet: steps 2–5 of the module documentation.
    fn packet(&mut self, frame: &[u8], inb: Option<packet::Inbound>, now: Time) {
        let Some(inb) = inb else {
            self.counters.not_parsed += 1;
            return;
        };
        let Some(p) = frame.get(..inb.len) else { return };
        // The reverse tunnel's ESP (RFC 4877 §4.3) is the data path's: not signalling.
        if inb.next_header == IPPROTO_ESP && inb.home_address.is_none() {
            let spi = p.get(inb.offset..inb.offset + 4).map(|b| [b[0], b[1], b[2], b[3]]);
            if spi.is_some_and(|b| self.fwd.is_tunnel_spi(u32::from_be_bytes(b))) {
                self.fwd.counters.tunnelled_seen += 1;
                return;
            }
        }
        let (decision, sa_home) = match inb.next_header {
            IPPROTO_ESP => match self.sigs.open(p, now) {
                Ok((sa, plain)) => {
                    // Transport mode restored the packet with the MH where ESP was.
                    let nh_at = if inb.offset == 40 { 6 } else { 40 };
                    if plain.get(nh_at) != Some(&IPPROTO_MH) {
                        self.counters.not_mobility += 1;
                        return;
                    }
                    let mh = plain.get(inb.offset..).unwrap_or_default();
                    let m = InboundMh {
                        src: inb.src,
                        dst: inb.dst,
                        home_address_option: inb.home_address,
                        sa: Some(sa),
                        mh,
                    };
                    (self.ha.handle(&m, now), Some(sa.home_address))
                }
                Err(reason) => {
                    let name = reason.name();
                    *self.esp_refused.entry(name).or_insert(0) += 1;
                    self.refused_event(&inb, "esp_", name);
                    return;
                }
            },
            IPPROTO_MH => {
                let mh = p.get(inb.offset..).unwrap_or_default();
                let m = InboundMh {
                    src: inb.src,
                    dst: inb.dst,
                    home_address_option: inb.home_address,
                    sa: None,
                    mh,
                };
                (self.ha.handle(&m, now), None)
            }
            _ => {
                self.counters.not_mobility += 1;
                return;
            }
        };
        self.decided(&inb, decision, sa_home, now);
    }

    fn decided(
        &mut self,
        inb: &packet::Inbound,
        d: Decision,
        sa_home: Option<std::net::Ipv6Addr>,
        now: Time,
    ) {
        let reply = match d {
            Decision::Accepted { change, reply } => {
                self.change_event(change, now);
                reply
            }
            Decision::Rejected { reason, reply } => {
                self.refused_event(inb, "", json::refusal_name(reason));
                Some(reply)
            }
            Decision::Dropped(reason) => {
                self.refused_event(inb, "", json::refusal_name(reason));
                None
            }
            Decision::AwaitingDad { home_address, start } => {
                self.dad_from.insert(home_address, *inb);
                if start {
                    self.start_dad(home_address, now);
                }
                None
            }
        };
        let (Some(reply), Some(home)) = (reply, sa_home) else { return };
        match self.sigs.seal(home, &reply, now) {
            Ok(bytes) => {
                if let Some(done) = self.sender.push(reply.dst, bytes) {
                    self.count_flushed(done);
                }
            }
            Err(_) => self.counters.not_sealed += 1,
        }
    }

    /// Starts DAD for `home` on the home link (§10.3.1). If it cannot run, the held Binding
    /// Update is registered at once (counted as `dad_unavailable`, logged).
    fn start_dad(&mut self, home: std::net::Ipv6Addr, now: Time) {
        match self.dad.start(home, now) {
            Ok(()) => self.counters.dad_started += 1,
            Err(e) => {
                self.counters.dad_unavailable += 1;
                tracing::warn!(home_address = %home, why = e.to_string(), "mip6-dad-unavailable");
                self.dad_done(home, true, now);
            }
        }
    }

    /// Hands DAD's verdict for `home` to the home agent and sends its answer.
    fn dad_done(&mut self, home: std::net::Ipv6Addr, unique: bool, now: Time) {
        let from = self.dad_from.remove(&home);
        let (Some(d), Some(inb)) = (self.ha.dad_complete(home, unique, now), from) else {
            return;
        };
        let _b = tracing::info_span!("binding", home_address = %home).entered();
        tracing::debug!(unique, "mip6-dad-done");
        self.decided(&inb, d, Some(home), now);
    }

    /// Sends the queued replies (one sendmmsg(2) per batch instead of a sendto(2) each).
    fn flush_replies(&mut self) {
        let done = self.sender.flush();
        self.count_flushed(done);
    }

    fn count_flushed(&mut self, (f, err): (socket::Flushed, Option<std::io::Error>)) {
        self.counters.sent += f.sent;
        self.counters.send_failed += f.failed;
        if let Some(e) = err {
            tracing::warn!(why = e.to_string(), "mip6-send-failed");
        }
    }

    fn change_event(&mut self, change: BindingChange, now: Time) {
        let (kind, b) = match change {
            BindingChange::Created(b) => ("binding-created", b),
            BindingChange::Updated { new, .. } => ("binding-updated", new),
            BindingChange::Deleted(b) => ("binding-deleted", b),
        };
        if self.fwd.tunnels(b.home_address) {
            let care_of = (kind != "binding-deleted").then_some(b.care_of_address);
            self.changed.push((b.home_address, care_of));
        }
        self.binding_event(kind, &b, now, None);
    }

    fn binding_event(&mut self, kind: &str, b: &Binding, now: Time, why: Option<&str>) {
        let _b = tracing::info_span!("binding", home_address = %b.home_address).entered();
        tracing::debug!(care_of = %b.care_of_address, "{}", kind);
        if self.want_events {
            let mut v = json::binding_json(b, now);
            v["event"] = Value::from(kind);
            if let Some(w) = why {
                v["why"] = Value::from(w);
            }
            self.events.push(v);
        }
    }

    /// A refusal: `prefix` and `reason` make its name (`esp_replayed`, `unprotected`, ...);
    /// nothing is built unless the log level or a monitor wants it.
    fn refused_event(&mut self, inb: &packet::Inbound, prefix: &str, reason: &str) {
        let home = inb.home_address.map_or_else(String::new, |h| h.to_string());
        let _b = tracing::info_span!("binding", home_address = %home).entered();
        tracing::debug!(from = %inb.src, reason = format!("{prefix}{reason}"), "binding-refused");
        if self.want_events {
            self.events.push(serde_json::json!({
                "event": "binding-refused", "reason": format!("{prefix}{reason}"),
                "src": inb.src.to_string(),
                "home_address": inb.home_address.map(|h| h.to_string()),
            }));
        }
    }

    /// Expires bindings about once a second (their tunnels close through `plane`); the first
    /// tick installs the tunnels' SAs.
    pub fn tick(&mut self, plane: &mut ControlPlane) {
        self.fwd.start(plane);
        let now = self.now();
        if self.dad.any() {
            for (home, unique) in self.dad.poll(now) {
                self.dad_done(home, unique, now);
            }
            self.flush_replies();
            self.forward(plane);
        }
        if now.0 / 1_000_000 < self.next_expire_s {
            return;
        }
        self.next_expire_s = now.0 / 1_000_000 + 1;
        for b in self.ha.expire(now) {
            self.binding_event("binding-deleted", &b, now, Some("expired"));
            if self.fwd.tunnels(b.home_address) {
                self.changed.push((b.home_address, None));
            }
        }
        self.forward(plane);
    }

    /// Monitor events since the last call.
    pub fn take_events(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.events)
    }
}
