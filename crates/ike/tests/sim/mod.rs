//! A simulated network for `ike::assoc` endpoints (after smoltcp's netsim and quinn-proto's
//! two-endpoint tests): two endpoints on one virtual clock, joined by a seeded link with delay,
//! loss, reordering (each datagram's delay drawn anew) and duplication, and a model of each
//! side's data path built from the events alone, checked against the endpoint's own view at
//! every step. Each side's clock may jump ahead of the shared one; a side may restart,
//! forgetting everything.
#![allow(dead_code, reason = "each test binary uses part of the harness")]

use crypto::{AeadAlg, DhGroup, EncrAlg, EspSuite, IntegAlg, PrfAlg};
use ike::assoc::{
    AssocId, Backoff, ChildConfig, ConnectionConfig, Endpoint, Event, Lifetimes, Transmit,
};
use ike::auth::CookieSecret;
use ike::{AuthConfig, ChildSuite, Config, IkeSuite, Mode, Time};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;
use wire::ikev2::{Id, TrafficSelector};
use zeroize::Zeroizing;

pub const CONN: &str = "net";

/// (inbound SPI, outbound SPI) of CHILD SA pairs.
pub type SpiPairs = BTreeSet<(u32, u32)>;
/// The link's mutator: changes a datagram in flight, or drops it by returning `false`.
pub type Mangle = Box<dyn FnMut(&mut Vec<u8>) -> bool>;
pub const CHILD: &str = "net-child";

pub fn addr(i: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1 + i as u8)), 500)
}

/// Side `i`'s connection to side `1 - i`.
pub fn connection(i: usize, start: bool, timers: &Timers) -> ConnectionConfig {
    let names = ["alice", "bob"];
    let ike = Config {
        local_id: Id::fqdn(names[i]),
        remote_id: Some(Id::fqdn(names[1 - i])),
        auth: AuthConfig::Psk(Zeroizing::new(b"sim".to_vec())),
        ike_suites: vec![IkeSuite {
            encr: EncrAlg::Aead(AeadAlg::Aes128Gcm),
            integ: IntegAlg::None,
            prf: PrfAlg::HmacSha256,
            dh: DhGroup::Curve25519,
        }],
        more_children: Vec::new(),
        peer_eap: None,
        child_suites: vec![ChildSuite {
            esp: EspSuite::new(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None)
                .expect("AES-GCM is an ESP suite"),
            esn: false,
            pfs: timers.pfs,
        }],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    };
    ConnectionConfig {
        name: CONN.into(),
        ike,
        child: ChildConfig { name: CHILD.into(), lifetimes: timers.child },
        more_children: Vec::new(),
        local: addr(i),
        remote: addr(1 - i),
        any_peer: false,
        natt_port: None,
        encap: false,
        start,
        ike_lifetimes: timers.ike,
        dpd_delay: timers.dpd,
        setup_retry: Backoff { first: Duration::from_secs(1), max: Duration::from_secs(16) },
        rekey_retry: Backoff { first: Duration::from_secs(2), max: Duration::from_secs(8) },
        pools: Vec::new(),
        vips: Vec::new(),
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Timers {
    pub child: Lifetimes,
    pub ike: Lifetimes,
    pub pfs: Option<DhGroup>,
    pub dpd: Duration,
}

impl Timers {
    pub fn short() -> Timers {
        Timers {
            child: Lifetimes {
                rekey_time: Duration::from_secs(30),
                rand_time: Duration::from_secs(5),
                life_time: Duration::ZERO,
                over_time: Duration::from_secs(40),
            },
            ike: Lifetimes {
                rekey_time: Duration::from_secs(70),
                rand_time: Duration::from_secs(5),
                ..Lifetimes::NEVER
            },
            pfs: None,
            dpd: Duration::ZERO,
        }
    }
}

/// The default provider with SPIs and nonces from a seed, so that a failing seed replays
/// exactly (which end wins a rekey collision depends on the nonces, RFC 7296 §2.8.1). Key
/// exchanges keep their own randomness; they change no decision.
#[derive(Debug)]
struct SeededProvider {
    rng: std::sync::Mutex<fastrand::Rng>,
}

impl crypto::Provider for SeededProvider {
    fn name(&self) -> &'static str {
        "seeded"
    }
    fn aead(
        &self,
        alg: crypto::AeadAlg,
        key: &[u8],
    ) -> Result<Box<dyn crypto::Aead>, crypto::CryptoError> {
        crypto::default_provider().aead(alg, key)
    }
    fn cbc(
        &self,
        alg: crypto::CbcAlg,
        key: &[u8],
    ) -> Result<Box<dyn crypto::BlockCipher>, crypto::CryptoError> {
        crypto::default_provider().cbc(alg, key)
    }
    fn hmac(
        &self,
        alg: crypto::HmacAlg,
        key: &[u8],
    ) -> Result<Box<dyn crypto::Mac>, crypto::CryptoError> {
        crypto::default_provider().hmac(alg, key)
    }
    fn fill_random(&self, out: &mut [u8]) -> Result<(), crypto::CryptoError> {
        let mut rng = self.rng.lock().map_err(|_| crypto::CryptoError::Length)?;
        rng.fill(out);
        Ok(())
    }
}

fn leaked_provider() -> &'static SeededProvider {
    Box::leak(Box::new(SeededProvider { rng: std::sync::Mutex::new(fastrand::Rng::with_seed(0)) }))
}

thread_local! {
    /// Each side's provider on this thread (tests run on several threads at once, each its own
    /// seeds).
    static PROVIDERS: [&'static SeededProvider; 2] = [leaked_provider(), leaked_provider()];
}

/// Side `i`'s endpoint; `seed` drives its timer jitter and its SPIs and nonces.
pub fn endpoint(now: Time, i: usize, start: bool, timers: &Timers, seed: u64) -> Endpoint {
    endpoint_with(now, i, connection(i, start, timers), seed)
}

/// Side `i`'s endpoint with connection `conn`.
pub fn endpoint_with(now: Time, i: usize, conn: ConnectionConfig, seed: u64) -> Endpoint {
    let cookie = CookieSecret { version: 1, key: Zeroizing::new([i as u8; 32]) };
    // The endpoint wants a provider for the program's life: one per side and thread, made once
    // and reseeded here (a new one per run would leak a little each run, which the fuzzer's
    // leak check reports).
    let provider = PROVIDERS.with(|p| p[i % 2]);
    if let Ok(mut rng) = provider.rng.lock() {
        rng.seed(seed ^ 0x9e37_79b9);
    }
    Endpoint::new(now, vec![conn], provider, cookie, seed).expect("a valid configuration")
}

/// The link's behaviour.
#[derive(Debug, Clone, Copy)]
pub struct LinkParams {
    pub delay_min_us: u64,
    pub delay_spread_us: u64,
    pub loss: f64,
    pub dup: f64,
}

impl LinkParams {
    pub const CLEAN: LinkParams =
        LinkParams { delay_min_us: 5_000, delay_spread_us: 0, loss: 0.0, dup: 0.0 };
}

struct InFlight {
    to: usize,
    from: SocketAddr,
    bytes: Vec<u8>,
}

/// One side's data path, as the events built it: pairs by inbound SPI, and the sending pair of
/// each association.
#[derive(Debug, Default, Clone)]
pub struct DataPath {
    pub pairs: BTreeMap<u32, (AssocId, u32)>,
    pub sending: BTreeMap<AssocId, u32>,
    /// Inbound SPIs of the pairs IKE_AUTH made (the first of their association).
    pub first: BTreeSet<u32>,
    pub child_rekeys: u64,
    pub ike_rekeys: u64,
    pub established: u64,
}

impl DataPath {
    /// Applies one event, failing on any that breaks make-before-break.
    fn apply(&mut self, e: &Event) -> Result<(), String> {
        match e {
            Event::InstallChild { assoc, keys, .. } => {
                if !self.pairs.values().any(|p| p.0 == *assoc) {
                    self.first.insert(keys.spi_in);
                }
                if self.pairs.insert(keys.spi_in, (*assoc, keys.spi_out)).is_some() {
                    return Err(format!("pair {:08x} installed twice", keys.spi_in));
                }
            }
            Event::SwitchOutbound { assoc, spi_in, .. } => {
                if self.pairs.get(spi_in).map(|p| p.0) != Some(*assoc) {
                    return Err(format!("switch to {spi_in:08x}, not installed"));
                }
                self.sending.insert(*assoc, *spi_in);
            }
            Event::RemoveChild { assoc, spi_in, .. } => {
                if self.pairs.remove(spi_in).is_none() {
                    return Err(format!("remove of {spi_in:08x}, not installed"));
                }
                if self.sending.get(assoc) == Some(spi_in) {
                    self.sending.remove(assoc);
                    if self.pairs.values().any(|p| p.0 == *assoc) {
                        return Err(format!(
                            "the sending pair {spi_in:08x} removed before outbound moved"
                        ));
                    }
                }
            }
            Event::Down { assoc, .. } => {
                if self.pairs.values().any(|p| p.0 == *assoc) || self.sending.contains_key(assoc) {
                    return Err(format!("association {assoc} down with pairs installed"));
                }
            }
            Event::ChildRekeyed { .. } => self.child_rekeys += 1,
            Event::IkeRekeyed { .. } => self.ike_rekeys += 1,
            Event::Established { .. } => self.established += 1,
            Event::RekeyStarted { .. }
            | Event::DecryptionKeys { .. }
            | Event::Initiating { .. }
            | Event::ChildFailed { .. }
            | Event::VirtualIp { .. } => {}
        }
        Ok(())
    }

    /// (in, out) of every pair, and of the sending ones.
    pub fn spis(&self) -> (SpiPairs, SpiPairs) {
        let all = self.pairs.iter().map(|(i, (_, o))| (*i, *o)).collect();
        let sending = self
            .sending
            .values()
            .filter_map(|i| self.pairs.get(i).map(|(_, o)| (*i, *o)))
            .collect();
        (all, sending)
    }
}

pub struct Side {
    pub ep: Endpoint,
    /// How far this side's clock is ahead of the shared one.
    pub ahead: Duration,
    pub dp: DataPath,
    pub hard_expired: u64,
}

pub struct Sim {
    pub now: Time,
    pub sides: [Side; 2],
    pub link: LinkParams,
    pub rng: fastrand::Rng,
    queue: BTreeMap<(Time, u64), InFlight>,
    seq: u64,
    pub delivered: u64,
    /// Applied to each datagram as it arrives; `false` drops it (the fuzz target's mutator).
    pub mangle: Option<Mangle>,
}

impl Sim {
    pub fn new(a: Endpoint, b: Endpoint, link: LinkParams, seed: u64) -> Sim {
        let side =
            |ep| Side { ep, ahead: Duration::ZERO, dp: DataPath::default(), hard_expired: 0 };
        Sim {
            now: Time::ZERO,
            sides: [side(a), side(b)],
            link,
            rng: fastrand::Rng::with_seed(seed),
            queue: BTreeMap::new(),
            seq: 0,
            delivered: 0,
            mangle: None,
        }
    }

    pub fn local(&self, i: usize) -> Time {
        self.now + self.sides[i].ahead
    }

    /// Whether nothing is on the link.
    pub fn quiet(&self) -> bool {
        self.queue.is_empty()
    }

    /// Side `i` forgets everything and comes back as `ep`.
    pub fn restart(&mut self, i: usize, ep: Endpoint) {
        let s = &mut self.sides[i];
        s.hard_expired += s.ep.stats().hard_expired;
        s.ep = ep;
        s.dp = DataPath::default();
    }

    fn send(&mut self, from_side: usize, t: Transmit) {
        let mut copies = 1;
        if self.rng.f64() < self.link.dup {
            copies = 2;
        }
        for _ in 0..copies {
            if self.rng.f64() < self.link.loss {
                continue;
            }
            let spread = self.link.delay_spread_us;
            let d = self.link.delay_min_us + if spread > 0 { self.rng.u64(0..spread) } else { 0 };
            self.seq += 1;
            let at = self.now + Duration::from_micros(d);
            self.queue.insert(
                (at, self.seq),
                InFlight { to: 1 - from_side, from: t.from, bytes: t.payload.clone() },
            );
        }
    }

    /// Moves what both endpoints want sent onto the link and their events into the models,
    /// then checks each model against its endpoint.
    fn drain(&mut self) -> Result<(), String> {
        for i in 0..2 {
            while let Some(t) = self.sides[i].ep.poll_transmit() {
                if t.to != addr(1 - i) || t.from != addr(i) {
                    return Err(format!("side {i} sent {:?} -> {:?}", t.from, t.to));
                }
                self.send(i, t);
            }
            while let Some(e) = self.sides[i].ep.poll_event() {
                if std::env::var_os("SIM_TRACE").is_some() {
                    println!("{:>12?} side {i}: {e:x?}", self.now);
                }
                self.sides[i].dp.apply(&e).map_err(|m| format!("side {i}: {m}"))?;
            }
            self.check_side(i)?;
        }
        Ok(())
    }

    fn check_side(&self, i: usize) -> Result<(), String> {
        let s = &self.sides[i];
        let view = s.ep.children();
        let mine: BTreeSet<(u32, u32, bool)> =
            view.iter().map(|c| (c.spi_in, c.spi_out, c.sending)).collect();
        let model: BTreeSet<(u32, u32, bool)> =
            s.dp.pairs.iter().map(|(i, (a, o))| (*i, *o, s.dp.sending.get(a) == Some(i))).collect();
        if mine != model || view.len() != model.len() {
            return Err(format!("side {i}: endpoint holds {mine:x?}, the data path {model:x?}"));
        }
        if s.ep.setups_in_flight(CONN) > 1 {
            return Err(format!("side {i}: two setups of one connection at once"));
        }
        Ok(())
    }

    /// Runs until `until` (shared clock), calling `each` after every step.
    pub fn run_until(
        &mut self,
        until: Time,
        mut each: impl FnMut(&Sim) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut same = 0u32;
        loop {
            self.drain()?;
            each(self)?;
            let mut next = self.queue.keys().next().map(|k| k.0);
            for i in 0..2 {
                let ahead = self.sides[i].ahead;
                if let Some(t) = self.sides[i].ep.poll_timeout() {
                    // The shared instant at which side i's clock reads t.
                    let shared = Time::from_micros(
                        t.as_micros().saturating_sub(u64::try_from(ahead.as_micros()).unwrap_or(0)),
                    );
                    next = Some(next.map_or(shared, |n| n.min(shared)));
                }
            }
            let Some(next) = next.filter(|n| *n <= until) else {
                self.now = until;
                return Ok(());
            };
            if next <= self.now {
                same += 1;
                if same > 10_000 {
                    return Err(format!("stuck at {:?}: a timer that never clears", self.now));
                }
            } else {
                same = 0;
            }
            self.now = self.now.max(next);
            while let Some(e) = self.queue.first_entry() {
                if e.key().0 > self.now {
                    break;
                }
                let mut f = e.remove();
                if let Some(m) = self.mangle.as_mut() {
                    if !m(&mut f.bytes) {
                        continue;
                    }
                }
                let t = self.local(f.to);
                self.delivered += 1;
                // Drops (stale SPIs after a restart, duplicates) are normal here; counted.
                let _ = self.sides[f.to].ep.handle(t, f.from, &f.bytes);
                self.drain()?;
            }
            for i in 0..2 {
                let t = self.local(i);
                self.sides[i].ep.handle_timeout(t);
            }
        }
    }

    /// Both sides hold one IKE SA with the same CHILD SA pairs, crossed, and send on crossed
    /// pairs: exactly one pair sends on each side.
    pub fn matched(&self) -> Result<(), String> {
        let (a_all, a_send) = self.sides[0].dp.spis();
        let (b_all, b_send) = self.sides[1].dp.spis();
        let crossed: BTreeSet<(u32, u32)> = b_all.iter().map(|(i, o)| (*o, *i)).collect();
        let b_send_x: BTreeSet<(u32, u32)> = b_send.iter().map(|(i, o)| (*o, *i)).collect();
        let ups = (self.sides[0].ep.established(), self.sides[1].ep.established());
        if a_all.is_empty()
            || a_all != crossed
            || a_send != b_send_x
            || a_send.len() != 1
            || ups != (1, 1)
        {
            return Err(format!(
                "not matched: IKE SAs {ups:?}; A pairs {a_all:x?} sending {a_send:x?}; B pairs \
                 {b_all:x?} sending {b_send:x?}"
            ));
        }
        Ok(())
    }

    /// Make-before-break across the link: every pair a rekey made is sent on only once the
    /// other side has installed its inbound SA, so no packet meets a missing SA. (A restarted
    /// side forgot its SAs; and IKE_AUTH's pair is the exception RFC 7296 lives with: the
    /// responder may send on it before the initiator has read the response.)
    pub fn no_black_hole(&self) -> Result<(), String> {
        for i in 0..2 {
            let (_, sending) = self.sides[i].dp.spis();
            for (spi_in, spi_out) in sending {
                if self.sides[i].dp.first.contains(&spi_in) {
                    continue;
                }
                if !self.sides[1 - i].dp.pairs.contains_key(&spi_out) {
                    return Err(format!(
                        "side {i} sends on {spi_out:08x} (pair {spi_in:08x}), not installed on the \
                         other side"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Total pairs that reached their hard lifetime without a successor, both sides, restarts
    /// included.
    pub fn hard_expired(&self) -> u64 {
        self.sides.iter().map(|s| s.hard_expired + s.ep.stats().hard_expired).sum()
    }
}
