//! Two established IKE SAs rekeying the same CHILD SA from both ends, over and over, on a
//! virtual clock (now and then rekeying the IKE SA too), with every datagram in flight delivered
//! in a random order (requests crossing, responses crossing, DELETEs crossing, a datagram lost
//! now and then and retransmitted), each end driving a model of the node's data path
//! (crates/node `Up::install`, `Up::remove`, `Up::switch_to`, `Up::tick`, `Up::apply`) exactly:
//!
//! - `InstallChild { rekeys: Some(old) }` installs the inbound SA at once; the node takes the
//!   rekey for its own if it asked to rekey `old` (its `rekeying` map, removed on that install or
//!   on `RequestFailed { RekeyChild(old) }`) and then switches outbound at once; otherwise the
//!   pair awaits the removal of the old pair.
//! - `RemoveChild` of the pair sending switches to the newest pair awaiting a switch, else the
//!   newest pair; every removal clears the awaiting flags.
//! - events are applied in order, before the datagrams of the same `Output` go out.
//!
//! After every event the invariant is checked: each end sends on an outbound SA, and the other
//! end has that SA's inbound half installed (a pair of its current list). At the end, once
//! quiet, both ends hold the same single pair, and the node's pairs are the session's.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_range_loop,
    reason = "test code; the two ends are indexed 0 and 1 throughout"
)]

use crypto::{AeadAlg, CbcAlg, EncrAlg, EspSuite, HmacAlg, IntegAlg, PrfAlg};
use ike::auth::CookieSecret;
use ike::{
    AuthConfig, AuthOutcome, ChildSaKeys, ChildSuite, Config, Endpoints, Event, IkeSuite,
    InitOutcome, Mode, Output, Request, Responder, SaInitNext, Session, initiator,
};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use wire::ikev2::{Id, TrafficSelector};
use zeroize::Zeroizing;

fn config(local: &str, remote: &str) -> Config {
    Config {
        local_id: Id::fqdn(local),
        remote_id: Some(Id::fqdn(remote)),
        auth: AuthConfig::Psk(Zeroizing::new(b"k".to_vec())),
        ike_suites: vec![IkeSuite {
            encr: EncrAlg::Aead(AeadAlg::Aes128Gcm),
            integ: IntegAlg::None,
            prf: PrfAlg::HmacSha256,
            dh: crypto::DhGroup::Curve25519,
        }],
        more_children: Vec::new(),
        peer_eap: None,
        child_suites: vec![ChildSuite {
            esp: EspSuite::new(EncrAlg::Cbc(CbcAlg::Aes128), IntegAlg::Hmac(HmacAlg::Sha256_128))
                .unwrap(),
            esn: true,
            pfs: None,
        }],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    }
}

fn established() -> ((Session, ChildSaKeys), (Session, ChildSaKeys)) {
    let p = crypto::default_provider();
    let a = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 500);
    let b = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)), 500);
    let (st, m1) =
        initiator::start(config("a", "b"), p, Endpoints { local: a, remote: b }, 0).unwrap();
    let r = Responder::new(
        config("b", "a"),
        p,
        CookieSecret { version: 1, key: Zeroizing::new([2; 32]) },
    )
    .unwrap();
    let InitOutcome::HalfOpen(half, m2) =
        r.handle_init(0, Endpoints { local: b, remote: a }, &m1, false)
    else {
        panic!()
    };
    let SaInitNext::Auth(auth, m3) = st.handle(0, &m2).unwrap() else { panic!() };
    let AuthOutcome::Established(eb, m4) = half.handle(&m3).unwrap() else { panic!() };
    let ea = auth.handle(&m4).unwrap();
    let (sa, ka) = Session::new(config("a", "b"), p, ea);
    let (sb, kb) = Session::new(config("b", "a"), p, *eb);
    ((sa, ka.expect("a CHILD SA")), (sb, kb.expect("a CHILD SA")))
}

/// A pair in the model of the node's data path.
#[derive(Debug, Clone)]
struct Pair {
    spi_in: u32,
    spi_out: u32,
    /// Its rekey timer is set (cleared when we ask to rekey it or it was rekeyed).
    armed: bool,
    /// A rekey the peer started: outbound moves here once the old pair is removed.
    awaiting: bool,
}

/// The node's `Up`, reduced to what decides where outbound traffic goes.
#[derive(Debug, Default)]
struct Node {
    pairs: Vec<Pair>,
    policies: bool,
    active_out: Option<u32>,
    /// Inbound SPIs of pairs whose rekey we asked for.
    rekeying: HashSet<u32>,
    rekeys_by_us: u64,
    /// Rekeys of ours that lost a simultaneous one (§2.8.1).
    lost_races: u64,
    /// IKE SA rekeys (either end's), the CHILD SAs moving to the new IKE SA.
    ike_rekeys: u64,
}

impl Node {
    /// `Up::install`.
    fn install(&mut self, k: &ChildSaKeys, rekeys: Option<u32>) {
        if !self.policies {
            self.policies = true;
            self.active_out = Some(k.spi_out);
        }
        let ours = rekeys.is_some_and(|o| self.rekeying.remove(&o));
        if let Some(old) = rekeys {
            if let Some(p) = self.pairs.iter_mut().find(|p| p.spi_in == old) {
                p.armed = false;
            }
        }
        self.pairs.push(Pair {
            spi_in: k.spi_in,
            spi_out: k.spi_out,
            armed: true,
            awaiting: rekeys.is_some() && !ours,
        });
        if ours {
            self.rekeys_by_us += 1;
            self.active_out = Some(k.spi_out);
        }
    }

    /// `Up::remove`.
    fn remove(&mut self, spi_in: u32) {
        let Some(i) = self.pairs.iter().position(|p| p.spi_in == spi_in) else { return };
        let old = self.pairs.remove(i);
        if self.pairs.is_empty() {
            self.policies = false;
            self.active_out = None;
            return;
        }
        if self.active_out == Some(old.spi_out) {
            let next = self.pairs.iter().rev().find(|p| p.awaiting).or(self.pairs.last());
            if let Some(n) = next {
                self.active_out = Some(n.spi_out);
            }
        }
        for p in &mut self.pairs {
            p.awaiting = false;
        }
    }

    /// One event of `Up::apply`.
    fn apply(&mut self, e: &Event) {
        match e {
            Event::InstallChild { keys, rekeys } => self.install(keys, *rekeys),
            Event::RemoveChild { spi_in, .. } => self.remove(*spi_in),
            Event::RequestFailed { request: Request::RekeyChild(spi), error } => {
                if error.to_string().contains("2.8.1") {
                    self.lost_races += 1;
                }
                self.rekeying.remove(spi);
            }
            Event::IkeRekeyed { .. } => self.ike_rekeys += 1,
            Event::IkeClosed => {
                self.pairs.clear();
                self.policies = false;
                self.active_out = None;
            }
            _ => {}
        }
    }
}

/// A small deterministic generator (xorshift64*), so that a failing seed replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

struct World {
    s: [Session; 2],
    n: [Node; 2],
    /// Datagrams in flight: (to, bytes).
    net: Vec<(usize, Vec<u8>)>,
    /// Datagrams lost once already (a retransmission of one is not lost again).
    lost: HashSet<Vec<u8>>,
    now: u64,
    trace: Vec<String>,
}

const NAME: [&str; 2] = ["A", "B"];

impl World {
    fn new() -> World {
        let ((a, ka), (b, kb)) = established();
        let mut w = World {
            s: [a, b],
            n: [Node::default(), Node::default()],
            net: Vec::new(),
            lost: HashSet::new(),
            now: 0,
            trace: vec!["last steps".into()],
        };
        w.n[0].install(&ka, None);
        w.n[1].install(&kb, None);
        w.check("start");
        w
    }

    fn fail(&self, why: String) -> ! {
        let keep = std::env::var("TRACE").map_or(60, |v| v.parse().unwrap());
        let start = self.trace.len().saturating_sub(keep).max(1);
        panic!("{why}\n--- {} ---\n{}", self.trace[0], self.trace[start..].join("\n"));
    }

    /// The invariant: each end sends, on an SA whose inbound half the other end has.
    fn check(&self, at: &str) {
        for x in 0..2 {
            let y = 1 - x;
            let Some(out) = self.n[x].active_out else {
                self.fail(format!("{at}: {} has no outbound SA", NAME[x]))
            };
            if !self.n[y].pairs.iter().any(|p| p.spi_in == out) {
                self.fail(format!(
                    "{at}: {} sends on {out:08x}, whose inbound SA {} has not installed \
                     (its pairs: {:?})",
                    NAME[x], NAME[y], self.n[y].pairs
                ));
            }
        }
    }

    /// Applies an output of end `x`: its events one by one (checking after each), then its
    /// datagrams go in flight.
    fn absorb(&mut self, x: usize, out: Output, what: &str) {
        let mut line = format!("t={} {} {what}:", self.now, NAME[x]);
        for e in &out.events {
            match e {
                Event::InstallChild { keys, rekeys } => write!(
                    line,
                    " Install(in={:08x} out={:08x} rekeys={:?})",
                    keys.spi_in,
                    keys.spi_out,
                    rekeys.map(|r| format!("{r:08x}"))
                ),
                Event::RemoveChild { spi_in, spi_out } => {
                    write!(line, " Remove(in={spi_in:08x} out={spi_out:08x})")
                }
                Event::RequestFailed { request, error } => {
                    write!(line, " Failed({request:x?}: {error})")
                }
                e => write!(line, " {e:?}"),
            }
            .unwrap();
        }
        write!(line, " sends {}", out.send.len()).unwrap();
        self.trace.push(line);
        for e in &out.events {
            self.n[x].apply(e);
            let active = self.n[x].active_out.map(|s| format!("{s:08x}"));
            self.trace.push(format!("    {} now sends on {active:?}", NAME[x]));
            self.check(what);
        }
        self.net.extend(out.send.into_iter().map(|d| (1 - x, d)));
    }

    /// `Up::tick` for CHILD rekeys: every armed pair whose timer is due (here: each with some
    /// chance) and not being rekeyed already is asked for.
    fn tick(&mut self, x: usize, rng: &mut Rng, percent: u64) {
        let mut reqs = Vec::new();
        for p in &mut self.n[x].pairs {
            if p.armed && !self.n[x].rekeying.contains(&p.spi_in) && rng.chance(percent) {
                p.armed = false;
                self.n[x].rekeying.insert(p.spi_in);
                reqs.push(Request::RekeyChild(p.spi_in));
            }
        }
        for r in reqs {
            let out = self.s[x].request(self.now, r).unwrap();
            self.absorb(x, out, &format!("asks {r:x?}"));
        }
    }

    fn deliver(&mut self, i: usize, rng: &mut Rng, may_lose: bool) {
        let (to, d) = self.net.remove(i);
        if may_lose && rng.chance(4) && self.lost.insert(d.clone()) {
            self.trace.push(format!("t={} lost a datagram to {}", self.now, NAME[to]));
            return;
        }
        let now = self.now;
        let p = wire::ikev2::Packet::new_checked(&d[..]).unwrap();
        let what = format!(
            "handles {} {:?} #{}",
            if p.flags().response { "response" } else { "request" },
            p.exchange_type(),
            p.message_id()
        );
        match self.s[to].handle(now, &d) {
            Ok(out) => self.absorb(to, out, &what),
            Err(e) => self.trace.push(format!("t={now} {} {what}: dropped: {e}", NAME[to])),
        }
    }

    /// Time moves to the earliest retransmission deadline.
    fn timeout(&mut self) -> bool {
        let Some(t) = self.s.iter().filter_map(|s| s.deadline_ms()).min() else { return false };
        self.now = self.now.max(t);
        for x in 0..2 {
            let out = self.s[x].on_timeout(self.now);
            let what = format!("times out ({} in flight)", self.net.len());
            self.absorb(x, out, &what);
        }
        true
    }

    /// Everything in flight is delivered (in a random order, nothing lost) until quiet.
    fn drain(&mut self, rng: &mut Rng) {
        for _ in 0..10_000 {
            if !self.net.is_empty() {
                let i = rng.below(self.net.len());
                self.deliver(i, rng, false);
            } else if !self.timeout() {
                return;
            }
        }
        self.fail("never quiet".into());
    }

    /// Once quiet: one pair, the same at both ends, in the sessions and in the data paths.
    fn settled(&self) {
        for x in 0..2 {
            let s: Vec<u32> = self.s[x].children().iter().map(|c| c.spi_in).collect();
            let n: Vec<u32> = self.n[x].pairs.iter().map(|p| p.spi_in).collect();
            if s != n || s.len() != 1 {
                self.fail(format!(
                    "{}: session pairs {s:08x?}, data path pairs {n:08x?}; want the same one",
                    NAME[x]
                ));
            }
            if !self.n[x].rekeying.is_empty() {
                self.fail(format!(
                    "{}: rekeys asked and never ended: {:x?}",
                    NAME[x], self.n[x].rekeying
                ));
            }
        }
        let (a, b) = (&self.s[0].children()[0], &self.s[1].children()[0]);
        if (a.spi_in, a.spi_out) != (b.spi_out, b.spi_in) {
            self.fail(format!("the ends hold different pairs: {a:?} / {b:?}"));
        }
    }
}

/// One run: `steps` random actions (rekey timers firing at one end or both at once, a datagram
/// in flight delivered or lost, time passing to a retransmission), then quiet.
fn run(seed: u64, steps: usize) -> [u64; 3] {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut w = World::new();
    w.trace[0] = format!("seed {seed}, last steps");
    let mut timed_out = false;
    for _ in 0..steps {
        let r = rng.below(100);
        match r {
            // Now and then the IKE SA itself is rekeyed (§2.18) amid the CHILD rekeys.
            19 => {
                let x = rng.below(2);
                let out = w.s[x].request(w.now, Request::RekeyIke).unwrap();
                w.absorb(x, out, "asks RekeyIke");
            }
            0..20 => {
                let x = rng.below(2);
                w.tick(x, &mut rng, 60);
            }
            20..30 => {
                // Both timers fire together: the requests cross.
                let x = rng.below(2);
                w.tick(x, &mut rng, 100);
                w.tick(1 - x, &mut rng, 100);
            }
            30..96 if !w.net.is_empty() => {
                let i = rng.below(w.net.len());
                // Now and then a datagram arrives twice.
                if rng.chance(3) {
                    let d = w.net[i].clone();
                    w.net.push(d);
                }
                w.deliver(i, &mut rng, true);
            }
            // Time runs to a retransmission when little is in flight (a retransmission
            // crossing the answer it asks for), never twice in a row: the tries are not used up.
            96..100 if w.net.len() <= 1 && !timed_out => {
                w.timeout();
                timed_out = true;
                continue;
            }
            _ => w.now += 10,
        }
        w.now += rng.below(5) as u64;
        timed_out = false;
    }
    w.drain(&mut rng);
    w.settled();
    let [a, b] = &w.n;
    [a.rekeys_by_us + b.rekeys_by_us, a.lost_races + b.lost_races, a.ike_rekeys]
}

#[test]
fn crossing_child_rekeys_never_send_on_an_sa_the_peer_lacks() {
    // SEEDS=n for a longer search.
    let seeds = std::env::var("SEEDS").map_or(300, |v| v.parse().unwrap());
    let (mut rekeys, mut races, mut ike) = (0, 0, 0);
    for seed in 0..seeds {
        let [r, l, i] = run(seed, 300);
        rekeys += r;
        races += l;
        ike += i;
    }
    eprintln!("{rekeys} CHILD rekeys, {races} lost a simultaneous rekey; {ike} IKE rekeys");
    assert!(
        rekeys > seeds * 10 && races > seeds / 3 && ike > seeds / 2,
        "{rekeys} rekeys, {races} races lost, {ike} IKE rekeys"
    );
}

/// The case of the logged run: both ends ask to rekey the same pair; each request reaches the
/// other end before either response (§2.8.1); then the responses, then the DELETEs.
#[test]
fn both_requests_in_flight_before_either_response() {
    for _ in 0..20 {
        let mut w = World::new();
        let mut rng = Rng(7);
        w.tick(0, &mut rng, 100);
        w.tick(1, &mut rng, 100);
        let [(to_b, req_a), (to_a, req_b)] = [w.net[0].clone(), w.net[1].clone()];
        assert_eq!((to_b, to_a), (1, 0));
        w.net.clear();
        // A answers B's request while its own is out, then B answers A's.
        let out = w.s[0].handle(0, &req_b).unwrap();
        w.absorb(0, out, "handles B's request");
        let out = w.s[1].handle(0, &req_a).unwrap();
        w.absorb(1, out, "handles A's request");
        // The responses, B's first; then whatever follows, in order.
        w.net.reverse();
        while !w.net.is_empty() {
            w.deliver(0, &mut rng, false);
        }
        w.settled();
    }
}

/// The peer's rekey request arrives while ours is asked for but still queued behind another
/// request (window of one, §2.3): ours must not be taken for the answer.
#[test]
fn a_peer_rekey_while_ours_waits_in_the_queue() {
    for _ in 0..10 {
        let mut w = World::new();
        let mut rng = Rng(9);
        let out = w.s[0].request(0, Request::Liveness).unwrap();
        w.absorb(0, out, "asks Liveness");
        w.tick(0, &mut rng, 100); // queued behind the liveness check
        w.tick(1, &mut rng, 100);
        // B's request reaches A first, then everything else in order.
        let i = w.net.iter().position(|(to, _)| *to == 0).unwrap();
        w.deliver(i, &mut rng, false);
        while !w.net.is_empty() {
            w.deliver(0, &mut rng, false);
        }
        w.drain(&mut rng);
        w.settled();
    }
}

/// Rekeys from each end in turn, no crossing: the plain make-before-break path.
#[test]
fn alternating_rekeys_switch_at_once_or_on_the_delete() {
    let mut w = World::new();
    let mut rng = Rng(3);
    for round in 0..20 {
        let x = round % 2;
        w.tick(x, &mut rng, 100);
        while !w.net.is_empty() {
            w.deliver(0, &mut rng, false);
        }
        w.settled();
    }
    assert_eq!((w.n[0].rekeys_by_us, w.n[1].rekeys_by_us), (10, 10));
}
