//! A simulated network for `hip::assoc` endpoints (after the `ike` crate's `tests/sim`,
//! smoltcp's netsim and quinn-proto's two-endpoint tests): two hosts on one virtual clock,
//! joined by a seeded link with delay, loss, reordering (each packet's delay drawn anew) and
//! duplication, delivering by destination address (a host that moved no longer gets what was
//! sent to its old locator). Each host's data path is a model built from the events alone,
//! checked against the endpoint's own view at every step; it sends one ESP packet on its
//! sending pair every [`ESP_EVERY`], and the receiving model tells its endpoint when one
//! arrives on an installed pair (what moves R2-SENT to ESTABLISHED). A host's clock may jump
//! ahead of the shared one; a host may restart, forgetting everything.
#![allow(dead_code, reason = "each test binary uses part of the harness")]

use hip::HostIdentityTag;
use hip::LocalHost;
use hip::assoc::{Endpoint, Event, Timers, Transmit};
use hip::bex::Config;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;
use wire::Time;
use wire::hip::{DhGroupId, EspSuite};

/// How often a data path sends ESP on its sending pair.
pub const ESP_EVERY: Duration = Duration::from_millis(500);
/// How long a data path keeps a removed pair's inbound SA (the node's grace period): packets
/// the peer sealed before it switched still open.
pub const GRACE: Duration = Duration::from_secs(2);

/// The link's mutator: changes a packet in flight, or drops it by returning `false`.
pub type Mangle = Box<dyn FnMut(&mut Vec<u8>) -> bool>;
/// (inbound SPI, outbound SPI) of ESP pairs.
pub type SpiPairs = BTreeSet<(u32, u32)>;

/// Side `i`'s first locator; `moves` later ones are `addr_n(i, moves)`.
pub fn addr(i: usize) -> IpAddr {
    addr_n(i, 0)
}

pub fn addr_n(i: usize, n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2 + n, 1 + i as u8))
}

fn make_host(i: usize) -> Arc<LocalHost> {
    let k = LocalHost::from_scalar(crypto::EcCurve::P256, &[0x11 * (i as u8 + 1); 32]);
    Arc::new(k.expect("a valid P-256 scalar"))
}

thread_local! {
    /// Both hosts' identities, made once per thread (fixed scalars: the same HITs every run).
    static HOSTS: [Arc<LocalHost>; 2] = [make_host(0), make_host(1)];
}

/// Side `i`'s host identity.
pub fn host(i: usize) -> Arc<LocalHost> {
    HOSTS.with(|h| Arc::clone(&h[i % 2]))
}

pub fn hit(i: usize) -> HostIdentityTag {
    HOSTS.with(|h| h[i % 2].hit())
}

/// The configuration of the simulated hosts: one DH group (one R1 per generation) and an easy
/// puzzle, so a base exchange costs little more than its signatures.
pub fn config() -> Config {
    Config {
        dh_groups: vec![DhGroupId::NIST_P256],
        esp_suites: vec![EspSuite::AES_GCM_16],
        puzzle_k: 2,
        ..Config::default()
    }
}

/// The default provider with SPIs and nonces from a seed, so a failing seed replays exactly.
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
    /// Each side's provider on this thread, made once and reseeded per run (a new one per run
    /// would leak a little each run, which the fuzzer's leak check reports).
    static PROVIDERS: [&'static SeededProvider; 2] = [leaked_provider(), leaked_provider()];
}

/// Side `i`'s endpoint at locator `local`; `seed` drives its SPIs and nonces.
pub fn endpoint(now: Time, i: usize, local: IpAddr, timers: Timers, seed: u64) -> Endpoint {
    let provider = PROVIDERS.with(|p| p[i % 2]);
    if let Ok(mut rng) = provider.rng.lock() {
        rng.seed(seed ^ 0x9e37_79b9);
    }
    Endpoint::new(now, host(i), config(), timers, provider, local).expect("a valid configuration")
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

enum Payload {
    Hip(Vec<u8>),
    Esp(u32),
}

struct InFlight {
    from: IpAddr,
    to: IpAddr,
    what: Payload,
}

/// One side's data path, as the events built it.
#[derive(Debug, Default, Clone)]
pub struct DataPath {
    /// Pairs by inbound SPI: (peer, outbound SPI).
    pub pairs: BTreeMap<u32, (HostIdentityTag, u32)>,
    /// The sending pair's inbound SPI, by peer.
    pub sending: BTreeMap<HostIdentityTag, u32>,
    /// Inbound SPIs of the pairs a base exchange made.
    pub first: BTreeSet<u32>,
    pub rekeys: u64,
    pub established: u64,
    pub closed: u64,
    pub down: u64,
    /// Inbound SPIs of removed pairs, kept until the grace period ends.
    pub retired: BTreeMap<u32, Time>,
    /// ESP packets that met no inbound SA here.
    pub esp_missed: u64,
}

impl DataPath {
    /// Applies one event, failing on any that breaks make-before-break.
    fn apply(&mut self, now: Time, e: &Event) -> Result<(), String> {
        self.retired.retain(|_, t| *t > now);
        match e {
            Event::InstallPair { peer, keys, .. } => {
                if !self.pairs.values().any(|p| p.0 == *peer) {
                    self.first.insert(keys.spi_in);
                }
                if self.pairs.insert(keys.spi_in, (*peer, keys.spi_out)).is_some() {
                    return Err(format!("pair {:08x} installed twice", keys.spi_in));
                }
            }
            Event::SwitchOutbound { peer, spi_in, spi_out } => {
                if self.pairs.get(spi_in) != Some(&(*peer, *spi_out)) {
                    return Err(format!("switch to {spi_in:08x}, not installed"));
                }
                self.sending.insert(*peer, *spi_in);
            }
            Event::RemovePair { peer, spi_in, .. } => {
                if self.pairs.remove(spi_in).is_none() {
                    return Err(format!("remove of {spi_in:08x}, not installed"));
                }
                self.retired.insert(*spi_in, now + GRACE);
                if self.sending.get(peer) == Some(spi_in) {
                    self.sending.remove(peer);
                    if self.pairs.values().any(|p| p.0 == *peer) {
                        return Err(format!(
                            "the sending pair {spi_in:08x} removed before outbound moved"
                        ));
                    }
                }
            }
            Event::Closed { peer } | Event::Down { peer, .. } => {
                if self.pairs.values().any(|p| p.0 == *peer) || self.sending.contains_key(peer) {
                    return Err(format!("association with {peer} ended with pairs installed"));
                }
                if matches!(e, Event::Closed { .. }) {
                    self.closed += 1;
                } else {
                    self.down += 1;
                }
            }
            Event::Rekeyed { .. } => self.rekeys += 1,
            Event::Established { .. } => self.established += 1,
            Event::PeerMoved { .. } => {}
        }
        Ok(())
    }

    /// Whether ESP on `spi` opens here at `now` (a pair's, or a removed one's in its grace).
    pub fn admits(&self, spi: u32, now: Time) -> bool {
        self.pairs.contains_key(&spi) || self.retired.get(&spi).is_some_and(|t| *t > now)
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
    /// The peer's locator as this side's data path sends to it.
    pub peer_locator: IpAddr,
    pub next_esp: Time,
}

pub struct Sim {
    pub now: Time,
    pub sides: [Side; 2],
    pub link: LinkParams,
    pub rng: fastrand::Rng,
    queue: BTreeMap<(Time, u64), InFlight>,
    seq: u64,
    pub delivered: u64,
    /// Packets sent to a locator nobody holds (any more).
    pub misrouted: u64,
    /// Applied to each HIP packet as it arrives; `false` drops it (the fuzz target's mutator;
    /// a changed packet's checksum is refilled).
    pub mangle: Option<Mangle>,
}

impl Sim {
    pub fn new(a: Endpoint, b: Endpoint, link: LinkParams, seed: u64) -> Sim {
        let side = |ep: Endpoint, peer| Side {
            ep,
            ahead: Duration::ZERO,
            dp: DataPath::default(),
            peer_locator: peer,
            next_esp: Time::ZERO,
        };
        let (la, lb) = (a.local(), b.local());
        Sim {
            now: Time::ZERO,
            sides: [side(a, lb), side(b, la)],
            link,
            rng: fastrand::Rng::with_seed(seed),
            queue: BTreeMap::new(),
            seq: 0,
            delivered: 0,
            misrouted: 0,
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

    /// Side `i` forgets everything and comes back as `ep` (at the same locator).
    pub fn restart(&mut self, i: usize, ep: Endpoint) {
        let s = &mut self.sides[i];
        s.ep = ep;
        s.dp = DataPath::default();
    }

    /// Side `i` moves to locator `new` and tells its endpoint.
    pub fn move_to(&mut self, i: usize, new: IpAddr) {
        let t = self.local(i);
        self.sides[i].ep.update_locator(t, new);
    }

    fn put(&mut self, from: IpAddr, to: IpAddr, what: Payload) {
        let copies = if self.rng.f64() < self.link.dup { 2 } else { 1 };
        for _ in 0..copies {
            if self.rng.f64() < self.link.loss {
                continue;
            }
            let spread = self.link.delay_spread_us;
            let d = self.link.delay_min_us + if spread > 0 { self.rng.u64(0..spread) } else { 0 };
            self.seq += 1;
            let at = self.now + Duration::from_micros(d);
            let what = match &what {
                Payload::Hip(b) => Payload::Hip(b.clone()),
                Payload::Esp(s) => Payload::Esp(*s),
            };
            self.queue.insert((at, self.seq), InFlight { from, to, what });
        }
    }

    /// Moves what both endpoints want sent onto the link and their events into the models,
    /// then checks each model against its endpoint.
    fn drain(&mut self) -> Result<(), String> {
        for i in 0..2 {
            while let Some(t) = self.sides[i].ep.poll_transmit() {
                let Transmit { from, to, payload } = t;
                if std::env::var_os("SIM_TRACE").is_some() {
                    let ty = payload.get(2).map_or(0, |t| t & 0x7f);
                    println!("{:>12?} side {i}: sends type {ty} {from} -> {to}", self.now);
                }
                if from != self.sides[i].ep.local() {
                    return Err(format!("side {i} sent from {from}, not its locator"));
                }
                self.put(from, to, Payload::Hip(payload));
            }
            // As the node does once its packets are out: DH keys while I1 travels.
            self.sides[i].ep.prepare_keys();
            while let Some(e) = self.sides[i].ep.poll_event() {
                if std::env::var_os("SIM_TRACE").is_some() {
                    println!("{:>12?} side {i}: {e:x?}", self.now);
                }
                if let Event::PeerMoved { locator, .. } = &e {
                    self.sides[i].peer_locator = *locator;
                }
                if let Event::Established { locator, .. } = &e {
                    self.sides[i].peer_locator = *locator;
                }
                self.sides[i].dp.apply(self.now, &e).map_err(|m| format!("side {i}: {m}"))?;
            }
            self.check_side(i)?;
        }
        Ok(())
    }

    fn check_side(&self, i: usize) -> Result<(), String> {
        let s = &self.sides[i];
        let mut view: Vec<(u32, u32, bool)> =
            s.ep.pairs().iter().map(|c| (c.spi_in, c.spi_out, c.sending)).collect();
        view.sort_unstable();
        let model = s.dp.pairs.iter().map(|(i, (p, o))| (*i, *o, s.dp.sending.get(p) == Some(i)));
        if !view.iter().copied().eq(model) {
            let model: Vec<_> =
                s.dp.pairs
                    .iter()
                    .map(|(i, (p, o))| (*i, *o, s.dp.sending.get(p) == Some(i)))
                    .collect();
            return Err(format!("side {i}: endpoint holds {view:x?}, the data path {model:x?}"));
        }
        if s.ep.associations() > 1 {
            return Err(format!("side {i}: {} associations with one peer", s.ep.associations()));
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
                let ahead = u64::try_from(self.sides[i].ahead.as_micros()).unwrap_or(0);
                let mut wake = vec![self.sides[i].next_esp];
                if let Some(t) = self.sides[i].ep.poll_timeout() {
                    // The shared instant at which side i's clock reads t.
                    wake.push(Time::from_micros(t.as_micros().saturating_sub(ahead)));
                }
                for w in wake {
                    next = Some(next.map_or(w, |n| n.min(w)));
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
                let f = e.remove();
                let Some(to) = (0..2).find(|&i| self.sides[i].ep.local() == f.to) else {
                    self.misrouted += 1;
                    continue;
                };
                let t = self.local(to);
                self.delivered += 1;
                match f.what {
                    Payload::Hip(mut bytes) => {
                        if let Some(m) = self.mangle.as_mut() {
                            let before = bytes.clone();
                            if !m(&mut bytes) {
                                continue;
                            }
                            // A changed packet gets its checksum refilled, so that the change
                            // reaches the checks behind it (MAC, signature, state).
                            if bytes != before {
                                let _ = wire::hip::fill_checksum(f.from, f.to, &mut bytes);
                            }
                        }
                        // Drops (stale state after a restart, duplicates) are normal; counted.
                        let _ = self.sides[to].ep.handle(t, f.from, &bytes);
                    }
                    Payload::Esp(spi) => {
                        if self.sides[to].dp.pairs.contains_key(&spi) {
                            self.sides[to].ep.esp_received(t, spi);
                        } else if !self.sides[to].dp.admits(spi, self.now) {
                            self.sides[to].dp.esp_missed += 1;
                        }
                    }
                }
                self.drain()?;
            }
            for i in 0..2 {
                let t = self.local(i);
                if self.sides[i].ep.poll_timeout().is_some_and(|d| d <= t) {
                    self.sides[i].ep.handle_timeout(t);
                }
                if self.sides[i].next_esp <= self.now {
                    self.sides[i].next_esp = self.now + ESP_EVERY;
                    let dp = &self.sides[i].dp;
                    let out: Vec<u32> =
                        dp.sending.values().filter_map(|i| dp.pairs.get(i).map(|p| p.1)).collect();
                    let (from, to) = (self.sides[i].ep.local(), self.sides[i].peer_locator);
                    for spi_out in out {
                        self.put(from, to, Payload::Esp(spi_out));
                    }
                }
            }
        }
    }

    /// Both sides hold one ESTABLISHED association with the same pairs, crossed, and send on
    /// crossed pairs: exactly one pair sends on each side.
    pub fn matched(&self) -> Result<(), String> {
        let (a_all, a_send) = self.sides[0].dp.spis();
        let (b_all, b_send) = self.sides[1].dp.spis();
        let crossed: BTreeSet<(u32, u32)> = b_all.iter().map(|(i, o)| (*o, *i)).collect();
        let b_send_x: BTreeSet<(u32, u32)> = b_send.iter().map(|(i, o)| (*o, *i)).collect();
        let states = (self.sides[0].ep.state(&hit(1)), self.sides[1].ep.state(&hit(0)));
        if a_all.is_empty()
            || a_all != crossed
            || a_send != b_send_x
            || a_send.len() != 1
            || states != ("ESTABLISHED", "ESTABLISHED")
        {
            return Err(format!(
                "not matched: states {states:?}; A pairs {a_all:x?} sending {a_send:x?}; B pairs \
                 {b_all:x?} sending {b_send:x?}"
            ));
        }
        Ok(())
    }

    /// Make-before-break across the link: every pair a rekey made is sent on only once the
    /// other side has installed its inbound SA, and while the other side still admits it (its
    /// grace period after removing the pair). (A restarted side forgot its SAs; a base
    /// exchange's first pair is the exception: a Responder whose R2-SENT timer ran out sends
    /// before it knows the Initiator has R2, §4.4.2.)
    pub fn no_black_hole(&self) -> Result<(), String> {
        for i in 0..2 {
            let dp = &self.sides[i].dp;
            let sending = dp.sending.values().filter_map(|i| dp.pairs.get(i).map(|p| (*i, p.1)));
            for (spi_in, spi_out) in sending {
                if self.sides[i].dp.first.contains(&spi_in) {
                    continue;
                }
                if !self.sides[1 - i].dp.admits(spi_out, self.now) {
                    return Err(format!(
                        "side {i} sends on {spi_out:08x} (pair {spi_in:08x}), not installed on the \
                         other side"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Nothing left on either side: no association, pair or pending retry.
    pub fn empty(&self) -> Result<(), String> {
        for i in 0..2 {
            let s = &self.sides[i];
            let peer = hit(1 - i);
            if s.ep.associations() != 0
                || !s.ep.pairs().is_empty()
                || !s.dp.pairs.is_empty()
                || s.ep.retry_pending(&peer)
            {
                return Err(format!(
                    "side {i} still holds {} (pairs {:?}, retry {})",
                    s.ep.state(&peer),
                    s.ep.pairs(),
                    s.ep.retry_pending(&peer)
                ));
            }
        }
        Ok(())
    }
}
