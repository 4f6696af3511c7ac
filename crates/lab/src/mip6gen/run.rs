//! The load generator's run: thousands of mobile nodes (`super::nodes`) sending ESP-protected
//! Binding Updates to the home agent and timing the Binding Acknowledgements, in phases:
//!
//! 1. **register**: every node once (each BU creates a binding-cache entry, RFC 6275 §10.3.1),
//!    closed loop: at most `window` BUs unanswered, so the home agent's queue never overflows
//!    and the rate is what the home agent sustains (the seed's run: 5000 BUs);
//! 2. **ramp**: open loop at each offered rate for `step_ms`, the nodes in turn with their next
//!    sequence number (each BU refreshes a binding: §10.3.1 with an existing entry), to find the
//!    highest rate at which no Binding Acknowledgement is lost;
//! 3. **esp-only**: the same kind of BU opened by an `ipsec` engine holding the home agent's
//!    SAs, in this process, with no sockets: the ESP packet rate of this machine for the suite.
//!
//! Each BA is opened with the node's BA SA (real ciphers) and matched by SPI and sequence
//! number to its BU for the latency. One thread; it sleeps between paced batches rather than
//! spinning, since the home agent shares the machine.

use super::nodes::{self, Direction, Suite};
use super::packet::{self, CAPACITY, HEADROOM, NotABa};
use super::socket::{BaReceiver, BuSender};
use ipsec::{Engine, PacketBuf, SaHandle, Time};
use std::time::{Duration, Instant};

/// Lifetime asked for in every BU: 600 s (§6.1.7, 4-second units).
const LIFETIME_UNITS: u16 = 150;
/// Silence after which unanswered BUs of a phase count as lost.
const SILENCE: Duration = Duration::from_millis(300);

/// What the generator is asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct GenParams {
    /// ESP suite of every node's SAs (the home agent's config must use the same).
    #[arg(long, value_enum)]
    pub suite: Suite,
    /// Number of mobile nodes (0..N, as in the home agent's config).
    #[arg(long)]
    pub nodes: u32,
    /// Unanswered BUs allowed in the register phase.
    #[arg(long, default_value_t = 512)]
    pub window: usize,
    /// Offered rates of the ramp, BU/s (comma-separated; none: no ramp).
    #[arg(long, value_delimiter = ',')]
    pub ramp: Vec<u64>,
    /// Length of each ramp step.
    #[arg(long, default_value_t = 1000)]
    pub step_ms: u64,
    /// BUs per sendmmsg(2).
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// BUs opened for the ESP-only rate (0: skip).
    #[arg(long, default_value_t = 20000)]
    pub esp_only: u32,
    /// Only print the home agent's `[home-agent]` section for these nodes, with this
    /// interface, and exit.
    #[arg(long, value_name = "INTERFACE")]
    pub print_config: Option<String>,
}

/// One phase's figures.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Phase {
    /// `register` or `ramp`.
    pub kind: String,
    /// Offered rate, BU/s (0: closed loop).
    pub offered_per_s: u64,
    pub sent: u64,
    /// BAs with an accepting status (below 128).
    pub accepted: u64,
    /// BAs with a refusing status.
    pub refused: u64,
    /// BUs never answered.
    pub lost: u64,
    /// Packets on the link socket that were not one of our BAs (ESP refused, ...).
    pub not_ba: u64,
    /// Seconds from the first BU sent to the last one.
    pub send_s: f64,
    /// Seconds from the first BU sent to the last BA received.
    pub span_s: f64,
    /// Accepted BAs per second over `span_s`.
    pub accepted_per_s: f64,
    /// BU → BA latency percentiles, µs.
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
}

/// The generator's whole output (one JSON object on stdout).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GenResult {
    pub suite: String,
    pub nodes: u32,
    pub phases: Vec<Phase>,
    /// BUs opened by ESP alone per second (one core, no I/O); 0 if skipped.
    pub esp_only_per_s: f64,
    /// CPU seconds the generator used (user + system).
    pub cpu_s: f64,
}

/// The generator's state across phases: the SAs (their sequence numbers carry on, so the
/// home agent's replay windows never see a number twice) and each node's MH sequence number.
struct Gen {
    engine: Engine,
    bu_sa: Vec<SaHandle>,
    seq: Vec<u16>,
    /// When each node's outstanding BU left (ns since `t0`), if one is outstanding.
    sent_at: Vec<Option<u64>>,
    /// BUs of this phase given up: answered by nothing before the node's next BU left, or
    /// freed after a silence.
    given_up: u64,
    bufs: Vec<PacketBuf>,
    open_buf: PacketBuf,
    tx: BuSender,
    rx: BaReceiver,
    t0: Instant,
}

/// What receiving did to a phase's counters.
#[derive(Debug, Default)]
struct Tally {
    accepted: u64,
    refused: u64,
    not_ba: u64,
    last_ns: u64,
    latencies_us: Vec<f64>,
}

impl Gen {
    fn new(p: &GenParams) -> Result<Gen, String> {
        let mut engine = Engine::new(crypto::default_provider());
        let now = Time(0);
        let mut bu_sa = Vec::with_capacity(p.nodes as usize);
        for i in 0..p.nodes {
            let h = engine
                .add_outbound(&nodes::sa(i, Direction::Bu, p.suite), now)
                .map_err(|e| format!("node {i}: {e}"))?;
            engine
                .add_inbound(&nodes::sa(i, Direction::Ba, p.suite), now)
                .map_err(|e| format!("node {i}: {e}"))?;
            bu_sa.push(h);
        }
        let batch = p.batch.clamp(1, node::sys::MMSG_MAX);
        let tx =
            BuSender::open(nodes::HOME_AGENT, 4 << 20).map_err(|e| format!("raw socket: {e}"))?;
        let rx = BaReceiver::open(8 << 20, 64, 2048).map_err(|e| format!("packet socket: {e}"))?;
        Ok(Gen {
            engine,
            bu_sa,
            seq: vec![0; p.nodes as usize],
            sent_at: vec![None; p.nodes as usize],
            given_up: 0,
            bufs: (0..batch).map(|_| PacketBuf::new(CAPACITY, HEADROOM)).collect(),
            open_buf: PacketBuf::new(CAPACITY, HEADROOM),
            tx,
            rx,
            t0: Instant::now(),
        })
    }

    fn ns(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    /// Builds, seals and sends BUs for `which` (node indices, at most a batch).
    fn send(&mut self, which: &[u32]) -> Result<usize, String> {
        let now = Time(self.ns() / 1000);
        let mut n = 0;
        for (&i, buf) in which.iter().zip(self.bufs.iter_mut()) {
            let k = i as usize;
            let seq = self.seq[k].wrapping_add(1);
            self.seq[k] = seq;
            let plain = packet::plain_bu(i, seq, LIFETIME_UNITS).map_err(|e| e.to_string())?;
            packet::seal(&mut self.engine, self.bu_sa[k], &plain, buf, now)
                .map_err(|e| format!("sealing node {i}'s BU: {e:?}"))?;
            n += 1;
        }
        let stamp = self.ns();
        for &i in &which[..n] {
            if self.sent_at[i as usize].replace(stamp).is_some() {
                self.given_up += 1;
            }
        }
        let views: Vec<&[u8]> = self.bufs[..n].iter().map(PacketBuf::as_slice).collect();
        self.tx.send(&views).map_err(|e| format!("sendmmsg: {e}"))
    }

    /// Reads every BA waiting and counts it into `t`.
    fn receive(&mut self, t: &mut Tally) -> Result<usize, String> {
        let Gen { rx, engine, open_buf, seq, sent_at, t0, .. } = self;
        let now_ns = t0.elapsed().as_nanos() as u64;
        rx.drain(|frame| match packet::open_ba(engine, frame, open_buf, Time(now_ns / 1000)) {
            Ok(ba) => {
                let k = ba.node as usize;
                if seq.get(k) != Some(&ba.sequence) {
                    t.not_ba += 1;
                    return;
                }
                let Some(at) = sent_at.get_mut(k).and_then(Option::take) else { return };
                if ba.status.is_accepted() {
                    t.accepted += 1;
                } else {
                    t.refused += 1;
                }
                t.last_ns = now_ns;
                t.latencies_us.push(now_ns.saturating_sub(at) as f64 / 1e3);
            }
            Err(NotABa::Esp(_) | NotABa::UnknownSpi | NotABa::NotBa) => t.not_ba += 1,
        })
        .map_err(|e| format!("recvmmsg: {e}"))
    }

    /// Counts every outstanding BU as lost and forgets it.
    fn give_up(&mut self) {
        self.given_up += self.outstanding();
        self.sent_at.iter_mut().for_each(|s| *s = None);
    }

    fn outstanding(&self) -> u64 {
        self.sent_at.iter().filter(|s| s.is_some()).count() as u64
    }

    /// Waits for the last BAs until [`SILENCE`] passes with none; the rest are lost.
    fn settle(&mut self, t: &mut Tally) -> Result<u64, String> {
        let mut quiet = Instant::now();
        while self.outstanding() > 0 && quiet.elapsed() < SILENCE {
            if self.receive(t)? > 0 {
                quiet = Instant::now();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        self.give_up();
        Ok(std::mem::take(&mut self.given_up))
    }

    /// Phase 1: every node once, at most `window` unanswered.
    fn register(&mut self, window: usize) -> Result<Phase, String> {
        let mut t = Tally::default();
        let n = self.seq.len() as u32;
        let batch = self.bufs.len() as u32;
        let first = self.ns();
        let mut next = 0u32;
        let mut last_send = first;
        let mut quiet = Instant::now();
        while next < n {
            let room = (window as u64).saturating_sub(self.outstanding());
            if room >= u64::from(batch.min(n - next)) {
                let k = batch.min(n - next);
                let which: Vec<u32> = (next..next + k).collect();
                self.send(&which)?;
                next += k;
                last_send = self.ns();
                quiet = Instant::now();
            } else if self.receive(&mut t)? > 0 {
                quiet = Instant::now();
            } else if quiet.elapsed() > SILENCE {
                // The home agent dropped some: they will not come back; free the window.
                self.give_up();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        let lost = self.settle(&mut t)?;
        Ok(phase("register", 0, u64::from(n), lost, first, last_send, t))
    }

    /// Phase 2: `rate` BU/s for `step`, the nodes in turn.
    fn ramp_step(&mut self, rate: u64, step: Duration, cursor: &mut u32) -> Result<Phase, String> {
        let mut t = Tally::default();
        let n = self.seq.len() as u32;
        let total = (rate as f64 * step.as_secs_f64()).round() as u64;
        let batch = self.bufs.len() as u64;
        let first = self.ns();
        let mut sent = 0u64;
        let mut last_send = first;
        while sent < total {
            let elapsed = (self.ns() - first) as f64 / 1e9;
            let due = ((elapsed * rate as f64) as u64).min(total).saturating_sub(sent);
            if due >= batch.min(total - sent) {
                let k = due.min(batch);
                let which: Vec<u32> = (0..k as u32).map(|j| (*cursor + j) % n).collect();
                *cursor = (*cursor + k as u32) % n;
                self.send(&which)?;
                sent += k;
                last_send = self.ns();
            } else if self.receive(&mut t)? == 0 {
                let wait = (batch.min(total - sent) - due) as f64 / rate as f64;
                std::thread::sleep(Duration::from_secs_f64(wait.min(0.001)));
            }
        }
        let lost = self.settle(&mut t)?;
        Ok(phase("ramp", rate, sent, lost, first, last_send, t))
    }
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn phase(kind: &str, rate: u64, sent: u64, lost: u64, first: u64, last: u64, t: Tally) -> Phase {
    let mut lat = t.latencies_us;
    lat.sort_by(f64::total_cmp);
    let span_s = t.last_ns.saturating_sub(first) as f64 / 1e9;
    Phase {
        kind: kind.into(),
        offered_per_s: rate,
        sent,
        accepted: t.accepted,
        refused: t.refused,
        lost,
        not_ba: t.not_ba,
        send_s: last.saturating_sub(first) as f64 / 1e9,
        span_s,
        accepted_per_s: if span_s > 0.0 { t.accepted as f64 / span_s } else { 0.0 },
        latency_p50_us: percentile(&lat, 0.5),
        latency_p99_us: percentile(&lat, 0.99),
    }
}

/// ESP alone: `count` BUs (of nodes in turn) sealed here, then opened by an engine holding the
/// home agent's side of the SAs; opened packets per second of the opening alone.
pub fn esp_only_rate(suite: Suite, nodes: u32, count: u32) -> Result<f64, String> {
    let nodes = nodes.clamp(1, 1000);
    let now = Time(0);
    let mut mn = Engine::new(crypto::default_provider());
    let mut ha = Engine::new(crypto::default_provider());
    let mut out = Vec::new();
    for i in 0..nodes {
        out.push(
            mn.add_outbound(&nodes::sa(i, Direction::Bu, suite), now).map_err(|e| e.to_string())?,
        );
        ha.add_inbound(&nodes::sa(i, Direction::Bu, suite), now).map_err(|e| e.to_string())?;
    }
    let mut buf = PacketBuf::new(CAPACITY, HEADROOM);
    let mut sealed = Vec::with_capacity(count as usize);
    for k in 0..count {
        let i = k % nodes;
        let plain = packet::plain_bu(i, (k / nodes) as u16 + 1, LIFETIME_UNITS)
            .map_err(|e| e.to_string())?;
        packet::seal(&mut mn, out[i as usize], &plain, &mut buf, now)
            .map_err(|e| format!("{e:?}"))?;
        sealed.push(buf.as_slice().to_vec());
    }
    let t = Instant::now();
    let mut ok = 0u32;
    for p in &sealed {
        if buf.load(p, HEADROOM).is_ok() && ha.inbound(&mut buf, now).is_ok() {
            ok += 1;
        }
    }
    let s = t.elapsed().as_secs_f64();
    if ok != count {
        return Err(format!("ESP-only: {ok} of {count} BUs opened"));
    }
    Ok(if s > 0.0 { f64::from(ok) / s } else { 0.0 })
}

/// This process's CPU seconds (user + system), from /proc/self/stat (clock ticks of 100 Hz,
/// the USER_HZ every Linux exports).
fn cpu_s() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = s.rsplit(')').next().unwrap_or_default();
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 (utime, stime) are 12 and 13 after the state field.
    (tick(11) + tick(12)) / 100.0
}

/// Runs every phase `p` asks for.
pub fn run(p: &GenParams) -> Result<GenResult, String> {
    if p.nodes == 0 {
        return Err("--nodes must be at least 1".into());
    }
    let cpu0 = cpu_s();
    let mut g = Gen::new(p)?;
    let mut phases = vec![g.register(p.window)?];
    let mut cursor = 0;
    for &rate in &p.ramp {
        phases.push(g.ramp_step(rate.max(1), Duration::from_millis(p.step_ms), &mut cursor)?);
    }
    let cpu = cpu_s() - cpu0;
    let esp_only_per_s =
        if p.esp_only > 0 { esp_only_rate(p.suite, p.nodes, p.esp_only)? } else { 0.0 };
    Ok(GenResult {
        suite: p.suite.name().into(),
        nodes: p.nodes,
        phases,
        esp_only_per_s,
        cpu_s: cpu,
    })
}
