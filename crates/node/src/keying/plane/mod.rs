//! The control interface: what a key manager (manual keying over the control socket today; the
//! IKEv2, HIP and Mobile IPv6 drivers next) calls to change a running node. DESIGN §6.
//!
//! Every call is checked whole before anything is sent (a bad request changes nothing), then
//! sent as one envelope per worker that owns a part of it, and returns once every one of them
//! acknowledged: an inbound SA is live when `install` returns, so a key manager may then tell
//! the peer. SAs are keyed here, on the control thread, so a lane only files them.
//!
//! Make-before-break rekeying (RFC 4301 rule, DESIGN rule 4) is [`ControlPlane::rekey`]: new
//! inbound SA live → outbound switched to the new SA (policies repointed in the same envelope)
//! → old inbound retired after a grace period. The new SA's sequence numbers and replay window
//! start fresh, as every new SA's do.

use crate::datapath::mailbox::{
    Envelope, Event, InKey, InboundPeer, OutKey, PolicySpec, Port, Update,
};
use ipsec::{Mode, PolicyId, SaParams, SecurityAssociation, Spi, Time};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

mod endpoint;
mod lanes;
mod rekey;

pub use lanes::EVERY_LANE;

/// How long a worker may take to acknowledge an envelope.
const ACK_TIMEOUT: Duration = Duration::from_secs(2);
/// Most events kept for [`ControlPlane::poll`] between two calls; the oldest go first.
const MAX_PENDING: usize = 4096;

/// An SA as a key manager installs it.
#[derive(Debug, Clone)]
pub struct SaSpec {
    /// Parameters (with keys; zeroized when dropped).
    pub params: SaParams,
    /// The lane that owns it (inbound: SPI mod lanes must equal it); outbound also
    /// [`EVERY_LANE`]: a copy on each lane.
    pub lane: usize,
    /// The peer's UDP endpoint; None: the node's default for this SA.
    pub endpoint: Option<SocketAddr>,
    /// Outbound: ESP over raw IP (protocol 50) to the endpoint's address, on a node whose
    /// carrier is UDP (an IKE CHILD SA without NAT or `encap`, RFC 7296 §2.23; HIP's default,
    /// RFC 7402). A node whose carrier is raw IP sends every SA so anyway.
    pub raw_ip: bool,
    /// BEET mode (RFC 7402 §5), carried as transport mode by the engine.
    pub beet: bool,
    /// A name for `list` (optional).
    pub name: Option<String>,
}

/// What the control plane remembers of an SA: no keys, ever.
#[derive(Debug, Clone)]
pub struct SaRecord {
    /// Lane.
    pub lane: usize,
    /// SPI.
    pub spi: Spi,
    /// "esp" or "ah".
    pub proto: &'static str,
    /// Suite as `status` names it.
    pub suite: String,
    /// tunnel, transport or beet.
    pub mode: &'static str,
    /// Source address.
    pub src: std::net::IpAddr,
    /// Destination address.
    pub dst: std::net::IpAddr,
    /// Peer endpoint (UDP), if known.
    pub endpoint: Option<SocketAddr>,
    /// Sent over raw IP beside a UDP carrier ([`SaSpec::raw_ip`]).
    pub raw_ip: bool,
    /// Name, if given.
    pub name: Option<String>,
    /// Extended sequence numbers.
    pub esn: bool,
    /// Replay window (inbound).
    pub replay_window: u32,
}

/// Why a request was refused or failed; `field` names what was wrong where one thing was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", field.as_ref().map(|f| format!("field \"{f}\": ")).unwrap_or_default())]
pub struct PlaneError {
    /// The bad field, if one is to blame.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl PlaneError {
    /// An error about `field`.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> PlaneError {
        PlaneError { field: Some(field.into()), message: message.into() }
    }
    /// An error about the request as a whole.
    pub fn other(message: impl Into<String>) -> PlaneError {
        PlaneError { field: None, message: message.into() }
    }
}

/// One worker as the control plane sees it.
#[derive(Debug)]
pub struct WorkerPort {
    /// Its lane.
    pub lane: usize,
    /// Owns the lane's outbound half.
    pub out: bool,
    /// Owns the lane's inbound half.
    pub inb: bool,
    /// Its mailbox.
    pub port: Port,
}

/// Defaults of the node that SAs without an endpoint of their own fall back to.
#[derive(Debug, Clone, Copy, Default)]
pub struct EndpointDefaults {
    /// The carrier's local port (ESP in UDP); None: raw IP, no endpoints.
    pub udp_port: Option<u16>,
    /// `[network] peer`.
    pub peer: Option<SocketAddr>,
}

/// The control interface of one node.
#[derive(Debug)]
pub struct ControlPlane {
    workers: Vec<WorkerPort>,
    events: Receiver<Event>,
    pending: VecDeque<Event>,
    next_ticket: u64,
    lanes: usize,
    start: Instant,
    defaults: EndpointDefaults,
    inbound: BTreeMap<InKey, SaRecord>,
    outbound: BTreeMap<OutKey, SaRecord>,
    policies: BTreeMap<PolicyId, PolicySpec>,
    /// Old inbound SAs to remove once their grace period is over.
    retire: Vec<(Instant, InKey)>,
    /// Totals for `status`: SAs installed and removed, rekeys done.
    pub stats: PlaneStats,
    wake: Option<std::os::unix::net::UnixDatagram>,
}

/// Counts of what the control plane did.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlaneStats {
    /// SAs installed (replacements included).
    pub installed: u64,
    /// SAs removed (retirements included).
    pub removed: u64,
    /// Make-before-break rekeys completed.
    pub rekeys: u64,
    /// Endpoints moved after a NAT rebinding.
    pub rebinds: u64,
}

/// The record of an SA.
pub fn record(s: &SaSpec) -> SaRecord {
    let p = &s.params;
    let (proto, suite) = match p.protocol {
        ipsec::Protocol::Esp(suite) => ("esp", suite.to_string()),
        ipsec::Protocol::Ah(i) => ("ah", i.name().to_string()),
    };
    let mode = match (s.beet, p.mode) {
        (true, _) => "beet",
        (false, Mode::Tunnel) => "tunnel",
        (false, Mode::Transport) => "transport",
    };
    SaRecord {
        lane: s.lane,
        spi: p.spi,
        proto,
        suite,
        mode,
        src: p.src,
        dst: p.dst,
        endpoint: s.endpoint,
        raw_ip: s.raw_ip,
        name: s.name.clone(),
        esn: p.esn,
        replay_window: p.replay_window,
    }
}

/// The key an outbound SA of these parameters is known by.
pub fn out_key_of(p: &SaParams) -> OutKey {
    OutKey { spi: p.spi.0, proto: p.protocol.number(), dst: p.dst }
}

/// The key an inbound SA of these parameters is known by.
pub fn in_key_of(p: &SaParams) -> InKey {
    (p.spi.0, p.protocol.number())
}

impl ControlPlane {
    /// A control plane over `workers`, whose events arrive on `events`; `start` is the time
    /// origin of the workers' engines.
    pub fn new(
        workers: Vec<WorkerPort>,
        events: Receiver<Event>,
        start: Instant,
        defaults: EndpointDefaults,
    ) -> ControlPlane {
        let lanes = workers.iter().map(|w| w.lane + 1).max().unwrap_or(1);
        ControlPlane {
            workers,
            events,
            pending: VecDeque::new(),
            next_ticket: 1,
            lanes,
            start,
            defaults,
            inbound: BTreeMap::new(),
            outbound: BTreeMap::new(),
            policies: BTreeMap::new(),
            retire: Vec::new(),
            stats: PlaneStats::default(),
            wake: None,
        }
    }

    /// The read end of the lanes' wake-up socket (`Mailbox::with_control_wake`), which the
    /// control thread polls so that events reach it at once.
    pub fn with_wake(mut self, wake: std::os::unix::net::UnixDatagram) -> ControlPlane {
        self.wake = Some(wake);
        self
    }

    /// Wakes every worker (see [`crate::datapath::mailbox::Port::wake`]).
    pub fn wake_workers(&self) {
        for w in &self.workers {
            w.port.wake();
        }
    }

    /// The wake-up socket's descriptor, for poll(2).
    pub fn wake_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.wake.as_ref().map(|w| w.as_raw_fd())
    }

    /// Records what the lanes were started with (the config's SAs and policies), so that
    /// requests can name them.
    pub fn adopt(
        &mut self,
        inbound: Vec<(InKey, SaRecord)>,
        outbound: Vec<(OutKey, SaRecord)>,
        policies: Vec<(PolicyId, PolicySpec)>,
    ) {
        self.inbound.extend(inbound);
        self.outbound.extend(outbound);
        self.policies.extend(policies);
    }

    /// Inbound SAs (no keys).
    pub fn inbound(&self) -> &BTreeMap<InKey, SaRecord> {
        &self.inbound
    }

    /// Outbound SAs (no keys).
    pub fn outbound(&self) -> &BTreeMap<OutKey, SaRecord> {
        &self.outbound
    }

    /// Policies.
    pub fn policies(&self) -> &BTreeMap<PolicyId, PolicySpec> {
        &self.policies
    }

    /// Lanes of the node.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    fn now(&self) -> Time {
        Time(self.start.elapsed().as_micros() as u64)
    }

    /// The endpoint an SA uses when it names none (see `keying::manual::default_endpoint`).
    pub fn default_endpoint(&self, p: &SaParams, outbound: bool) -> Option<SocketAddr> {
        let port = self.defaults.udp_port?;
        if let Some(peer) = self.defaults.peer {
            return Some(peer);
        }
        let addr = if outbound { p.dst } else { p.src };
        (p.mode == Mode::Tunnel).then_some(SocketAddr::new(addr, port))
    }

    /// Where an inbound SA's packets are expected from when it names no peer: as
    /// `keying::manual::inbound_endpoint` (lanes ≥ 1 learn theirs from the first packet).
    fn inbound_endpoint(&self, s: &SaSpec) -> Option<SocketAddr> {
        if self.lanes > 1 && s.lane > 0 {
            return None;
        }
        self.default_endpoint(&s.params, false)
    }

    fn build(&self, s: &SaSpec, field: &str) -> Result<Box<SecurityAssociation>, PlaneError> {
        SecurityAssociation::new(&s.params, crate::datapath::cipher::provider(), self.now())
            .map(Box::new)
            .map_err(|e| PlaneError::field(field, e.to_string()))
    }

    fn check_lane(&self, s: &SaSpec, inbound: bool, at: &str) -> Result<(), PlaneError> {
        if !inbound && s.lane == EVERY_LANE {
            return Ok(());
        }
        if s.lane >= self.lanes {
            return Err(PlaneError::field(
                format!("{at}lane"),
                format!("{}: this node has lanes 0..{}", s.lane, self.lanes),
            ));
        }
        if inbound && self.lanes > 1 && s.params.spi.0 as usize % self.lanes != s.lane {
            return Err(PlaneError::field(
                format!("{at}spi"),
                format!(
                    "{}: lane {} receives SPIs ≡ {} mod {} (the kernel steers by SPI)",
                    s.params.spi, s.lane, s.lane, self.lanes
                ),
            ));
        }
        if !inbound && self.lanes > 1 {
            return Err(PlaneError::other(
                "with several lanes ([interface] queues > 1) an outbound SA installed at run \
                 time goes on every lane: each lane seals what its own TUN queue reads",
            ));
        }
        Ok(())
    }

    /// Sends `per_worker[i]` to worker i (empty ones are skipped) and waits for every
    /// acknowledgement; other events are kept for [`ControlPlane::poll`].
    fn send(&mut self, per_worker: Vec<Vec<Update>>) -> Result<(), PlaneError> {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let mut waiting = Vec::new();
        for (i, updates) in per_worker.into_iter().enumerate() {
            if updates.is_empty() {
                continue;
            }
            let w = &self.workers[i];
            w.port
                .send(Envelope { ticket, updates })
                .map_err(|e| PlaneError::other(format!("worker {i}: {e}")))?;
            waiting.push(i);
        }
        let deadline = Instant::now() + ACK_TIMEOUT;
        let mut errors = Vec::new();
        while !waiting.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Applied { ticket: t, worker, errors: e }) if t == ticket => {
                    waiting.retain(|&w| w != worker);
                    errors.extend(e.into_iter().map(|(k, m)| format!("worker {worker} #{k}: {m}")));
                }
                Ok(other) => self.keep(other),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(PlaneError::other(format!(
                        "workers {waiting:?} did not acknowledge within {ACK_TIMEOUT:?}"
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(PlaneError::other("the data path has stopped"));
                }
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(PlaneError::other(errors.join("; "))) }
    }

    fn keep(&mut self, e: Event) {
        if matches!(e, Event::Applied { .. }) {
            return;
        }
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(e);
    }

    /// Adds `SetPolicy` for each of `ps` to every worker's updates (policies live in both halves
    /// of every lane).
    fn set_everywhere(per: &mut [Vec<Update>], ps: &[(PolicyId, PolicySpec)]) {
        for (id, spec) in ps {
            per.iter_mut().for_each(|u| u.push(Update::SetPolicy { id: *id, spec: spec.clone() }));
        }
    }

    fn empty(&self) -> Vec<Vec<Update>> {
        self.workers.iter().map(|_| Vec::new()).collect()
    }

    fn worker_for(&self, lane: usize, outbound: bool) -> Result<usize, PlaneError> {
        self.workers
            .iter()
            .position(|w| w.lane == lane && if outbound { w.out } else { w.inb })
            .ok_or_else(|| PlaneError::other(format!("no worker serves lane {lane}")))
    }

    /// Installs SAs (`replace`: each must exist and is replaced, fresh counters; else none may
    /// exist), all in one envelope per worker, and returns once they are live.
    pub fn install(
        &mut self,
        inbound: Vec<SaSpec>,
        outbound: Vec<SaSpec>,
        replace: bool,
    ) -> Result<(), PlaneError> {
        self.install_then(inbound, outbound, replace, Vec::new())
    }

    /// [`ControlPlane::install`] and then policies `then`, in the same envelope: one
    /// acknowledgement to wait for (a key manager that has just finished an exchange sends its
    /// answer that much sooner).
    pub fn install_then(
        &mut self,
        inbound: Vec<SaSpec>,
        outbound: Vec<SaSpec>,
        replace: bool,
        then: Vec<(PolicyId, PolicySpec)>,
    ) -> Result<(), PlaneError> {
        let new_out: Vec<OutKey> = outbound.iter().map(|s| out_key_of(&s.params)).collect();
        self.check_policies(&then, &new_out)?;
        let mut per = self.empty();
        let (mut in_recs, mut out_recs) = (Vec::new(), Vec::new());
        let mut seen = HashSet::new();
        for (i, s) in inbound.iter().enumerate() {
            let at = format!("in[{i}].");
            self.check_lane(s, true, &at)?;
            let key = in_key_of(&s.params);
            if !seen.insert(key) {
                return Err(PlaneError::field(format!("{at}spi"), "given twice in one request"));
            }
            if self.inbound.contains_key(&key) != replace {
                let what = if replace { "no inbound SA" } else { "an inbound SA already" };
                return Err(PlaneError::field(
                    format!("{at}spi"),
                    format!("{what} with spi {} {}", s.params.spi, s.params.protocol.name()),
                ));
            }
            let sa = self.build(s, &format!("{at}key"))?;
            let endpoint = s.endpoint.or_else(|| self.inbound_endpoint(s));
            let peer = InboundPeer { src: s.params.src, dst: s.params.dst, endpoint };
            per[self.worker_for(s.lane, false)?].push(Update::AddInbound { sa, peer });
            in_recs.push((key, SaRecord { endpoint, ..record(s) }));
        }
        let mut seen_out = HashSet::new();
        for (i, s) in outbound.iter().enumerate() {
            let at = format!("out[{i}].");
            self.check_lane(s, false, &at)?;
            let key = out_key_of(&s.params);
            if !seen_out.insert(key) {
                return Err(PlaneError::field(format!("{at}spi"), "given twice in one request"));
            }
            if self.outbound.contains_key(&key) != replace {
                let what = if replace { "no outbound SA" } else { "an outbound SA already" };
                return Err(PlaneError::field(
                    format!("{at}spi"),
                    format!("{what} with spi {} to {}", s.params.spi, s.params.dst),
                ));
            }
            let workers = self.out_workers(s.lane)?;
            let sas = self.build_out(s, workers.len(), &format!("{at}key"))?;
            let endpoint = s.endpoint.or_else(|| self.default_endpoint(&s.params, true));
            let raw_ip = s.raw_ip;
            for (w, sa) in workers.into_iter().zip(sas) {
                per[w].push(Update::AddOutbound { key, sa, endpoint, raw_ip });
            }
            out_recs.push((key, SaRecord { endpoint, ..record(s) }));
        }
        Self::set_everywhere(&mut per, &then);
        self.send(per)?;
        self.stats.installed += (in_recs.len() + out_recs.len()) as u64;
        self.inbound.extend(in_recs);
        self.outbound.extend(out_recs);
        self.policies.extend(then);
        Ok(())
    }

    /// Removes SAs. Outbound: the policies naming them drop their packets (no_sa) and raise
    /// acquires until repointed. Inbound: policies that list them among other `in-sas` forget
    /// them (a list never becomes empty, which would mean any SA).
    pub fn remove(&mut self, inbound: &[InKey], outbound: &[OutKey]) -> Result<(), PlaneError> {
        let mut per = self.empty();
        for (i, k) in inbound.iter().enumerate() {
            let r = self.inbound.get(k).ok_or_else(|| {
                PlaneError::field(format!("in[{i}].spi"), format!("no inbound SA {}", Spi(k.0)))
            })?;
            per[self.worker_for(r.lane, false)?].push(Update::DelInbound { key: *k });
        }
        for (i, k) in outbound.iter().enumerate() {
            let r = self.outbound.get(k).ok_or_else(|| {
                PlaneError::field(
                    format!("out[{i}].spi"),
                    format!("no outbound SA {} to {}", Spi(k.spi), k.dst),
                )
            })?;
            for w in self.out_workers(r.lane)? {
                per[w].push(Update::DelOutbound { key: *k });
            }
        }
        let shrunk: Vec<(PolicyId, PolicySpec)> = self
            .policies
            .iter()
            .filter(|(_, p)| p.in_sas.iter().any(|k| inbound.contains(k)))
            .filter_map(|(id, p)| {
                let mut p = p.clone();
                p.in_sas.retain(|k| !inbound.contains(k));
                (!p.in_sas.is_empty()).then_some((*id, p))
            })
            .collect();
        Self::set_everywhere(&mut per, &shrunk);
        self.send(per)?;
        self.policies.extend(shrunk);
        for k in inbound {
            self.inbound.remove(k);
            self.stats.removed += 1;
            self.retire.retain(|(_, r)| r != k);
        }
        for k in outbound {
            self.outbound.remove(k);
            self.stats.removed += 1;
        }
        Ok(())
    }

    /// Installs or replaces policies (a replacement at the same priority keeps its place).
    /// Protect may name SAs not installed yet: their packets raise acquires.
    pub fn set_policies(&mut self, ps: Vec<(PolicyId, PolicySpec)>) -> Result<(), PlaneError> {
        self.check_policies(&ps, &[])?;
        let mut per = self.empty();
        Self::set_everywhere(&mut per, &ps);
        self.send(per)?;
        self.policies.extend(ps);
        Ok(())
    }

    /// Removes policies.
    pub fn remove_policies(&mut self, ids: &[PolicyId]) -> Result<(), PlaneError> {
        if let Some((i, id)) =
            ids.iter().enumerate().find(|(_, id)| !self.policies.contains_key(id))
        {
            return Err(PlaneError::field(format!("ids[{i}]"), format!("no policy {id}")));
        }
        let mut per = self.empty();
        for id in ids {
            per.iter_mut().for_each(|u| u.push(Update::DelPolicy { id: *id }));
        }
        self.send(per)?;
        for id in ids {
            self.policies.remove(id);
        }
        Ok(())
    }

    /// Takes the events that arrived, retires inbound SAs whose grace period is over, and
    /// follows NAT rebindings (an authenticated packet moved a peer: its outbound SAs follow).
    pub fn poll(&mut self) -> Vec<Event> {
        if let Some(w) = &self.wake {
            let mut b = [0u8; 64];
            while matches!(w.recv(&mut b), Ok(n) if n > 0) {}
        }
        while let Ok(e) = self.events.try_recv() {
            self.keep(e);
        }
        let now = Instant::now();
        let due: Vec<InKey> =
            self.retire.iter().filter(|(t, _)| *t <= now).map(|(_, k)| *k).collect();
        self.retire.retain(|(t, _)| *t > now);
        let due: Vec<InKey> = due.into_iter().filter(|k| self.inbound.contains_key(k)).collect();
        if !due.is_empty() {
            if let Err(e) = self.remove(&due, &[]) {
                tracing::warn!(error = e.to_string(), "retire-failed");
            }
        }
        let events: Vec<Event> = self.pending.drain(..).collect();
        for e in &events {
            if let Event::Rebound { spi, from, to, .. } = e {
                self.follow(*spi, *from, *to);
            }
        }
        events
    }
}
