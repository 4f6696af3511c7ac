//! Correspondent → home agent → mobile node forwarding: the traffic engine's
//! TCP_STREAM, UDP_STREAM, TCP_RR and UDP_RR from the correspondent to the mobile node's home
//! address — through the home agent's ESP tunnel to the care-of address (RFC 4877) and the
//! reverse tunnel back — beside the same tests to the care-of address on the plain path, then
//! the move under a paced stream ([`super::move_gap`]).

use super::forward::{CARE_OF, Forwarding, HOME, SUITE};
use super::move_gap::{self, MoveGap};
use crate::error::LabError;
use crate::scenario::common::Progress;
use crate::traffic::runner::{CONTROL_PORT, RunParams, Target, TrafficServer, measure};
use crate::traffic::stats::{Summary, median};
use crate::traffic::{Request, TestKind, TrafficBin};
use std::net::{IpAddr, SocketAddr};

/// What the forwarding phase runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForwardPlan {
    /// Warm-up, window and repetitions of each test.
    pub params: RunParams,
    /// Also run every test over the plain path to the care-of address (the reference).
    pub plain: bool,
    /// The move: ms of paced stream before the care-of address changes, and after.
    pub move_lead_ms: u64,
    pub move_after_ms: u64,
    /// µs between the paced stream's datagrams.
    pub move_interval_us: u64,
    /// Moves, back and forth between the two care-of addresses, each under its own stream.
    #[serde(default = "default_moves")]
    pub moves: usize,
}

fn default_moves() -> usize {
    5
}

impl ForwardPlan {
    /// The quick or full profile's forwarding phase.
    pub fn profile(full: bool) -> ForwardPlan {
        if full {
            ForwardPlan {
                params: RunParams { warmup_ms: 500, duration_ms: 3000, repetitions: 3 },
                plain: true,
                move_lead_ms: 1000,
                move_after_ms: 2000,
                move_interval_us: 1000,
                moves: 5,
            }
        } else {
            ForwardPlan {
                params: RunParams { warmup_ms: 200, duration_ms: 1000, repetitions: 2 },
                plain: true,
                move_lead_ms: 500,
                move_after_ms: 1500,
                move_interval_us: 1000,
                moves: 5,
            }
        }
    }

    /// The ways run.
    pub fn ways(&self) -> Vec<Way> {
        if self.plain { vec![Way::Tunnel, Way::Plain] } else { vec![Way::Tunnel] }
    }

    /// Planned seconds: start and registration, the tests, the move, the stop.
    pub fn planned_s(&self) -> f64 {
        let p = &self.params;
        let per_test = p.repetitions as f64 * ((p.warmup_ms + p.duration_ms) as f64 / 1e3 + 0.12);
        3.0 + (self.ways().len() * tests().len()) as f64 * per_test + self.move_s() + 1.0
    }

    /// Planned seconds of the moves (each with its own stream and the status reads around it).
    pub fn move_s(&self) -> f64 {
        let one = move_gap::SINK_START_MS
            + self.move_lead_ms
            + self.move_after_ms
            + move_gap::SINK_TAIL_MS
            + 100;
        (self.moves as u64 * one) as f64 / 1e3
    }
}

/// The four tests, one message size each (ipsec-netperf's quick set).
pub fn tests() -> Vec<Request> {
    let r = |test, msg_size, resp_size| Request { test, msg_size, resp_size };
    vec![
        r(TestKind::TcpStream, 16384, 1),
        r(TestKind::UdpStream, 1024, 1),
        r(TestKind::TcpRr, 1, 1),
        r(TestKind::UdpRr, 1, 1),
    ]
}

/// Which way the correspondent's traffic goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Way {
    /// To the home address: home agent, ESP tunnel to the care-of address, reverse tunnel back.
    Tunnel,
    /// To the care-of address: the routers alone, no hipsec node on the way.
    Plain,
}

/// One test on one path (medians over the repetitions).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForwardCase {
    pub way: Way,
    pub req: Request,
    /// Mbit/s (STREAM, at the receiver) or transactions/s (RR).
    pub value: f64,
    pub summary: Option<Summary>,
    /// Round-trip time of the RR transactions, median of the repetitions' p50 and p99.
    pub rtt_p50_us: Option<f64>,
    pub rtt_p99_us: Option<f64>,
    /// CPU of both hipsec nodes in the measured window, % of one core.
    pub nodes_cpu_pct: f64,
    /// Sends refused or RR transactions lost, over all repetitions.
    pub errors: u64,
}

/// The forwarding phase's figures.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForwardResults {
    /// The tunnel SAs' suite.
    pub suite: String,
    /// Warm-up, window and repetitions of each test.
    pub params: RunParams,
    /// Seconds from the mobile node's start to the home agent tunnelling to it.
    pub registration_s: f64,
    pub cases: Vec<ForwardCase>,
    /// Each move's figures, in the order run (an older report's single `move_gap` reads as one).
    #[serde(alias = "move_gap", deserialize_with = "one_or_many")]
    pub moves: Vec<MoveGap>,
}

/// A list, or a single value as a list of one.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<MoveGap>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(Box<MoveGap>),
        Many(Vec<MoveGap>),
    }
    Ok(match serde::Deserialize::deserialize(d)? {
        OneOrMany::One(m) => vec![*m],
        OneOrMany::Many(v) => v,
    })
}

impl ForwardResults {
    /// The case of `test` on `way`.
    pub fn case(&self, way: Way, test: TestKind) -> Option<&ForwardCase> {
        self.cases.iter().find(|c| c.way == way && c.req.test == test)
    }
}

/// Runs the phase in `fw` (nodes not started yet): start and registration, the tests, the move.
pub fn run(
    fw: &mut Forwarding,
    plan: &ForwardPlan,
    bin: &TrafficBin,
    progress: &mut Progress,
) -> Result<ForwardResults, LabError> {
    progress.step("forwarding: home agent and mobile node, registration", 3.0);
    let registration_s = fw.start()?;
    // The control connection stays on the plain path (to the care-of address) so that a flooded
    // tunnel cannot delay the window's marks; the data goes to the home address.
    let control = SocketAddr::new(CARE_OF.into(), CONTROL_PORT);
    let server = TrafficServer::start(&fw.topo, "mn", &[control], bin)?;
    // A round trip through both tunnels before any measurement: a connection attempt to the
    // home address (refused there: the server listens on the care-of address) comes back.
    let (prog, mut args) = bin.command();
    let probe = SocketAddr::new(HOME.into(), CONTROL_PORT).to_string();
    args.extend(["probe".into(), "--server".into(), probe]);
    fw.topo.spawn("cn", &prog, &args)?.wait_output()?;
    let p = &plan.params;
    let test_s = p.repetitions as f64 * ((p.warmup_ms + p.duration_ms) as f64 / 1e3 + 0.12);
    let watch = fw.pids();
    let mut cases = Vec::new();
    for way in plan.ways() {
        let data = (way == Way::Tunnel).then_some(IpAddr::from(HOME));
        for req in tests() {
            if crate::sys::interrupted() {
                return Err(LabError::Interrupted);
            }
            progress.step(&format!("forwarding: {} {way:?}", req.test), test_s);
            let target = Target { control, data };
            let (samples, summary) =
                measure(&fw.topo, "cn", target, req, p, bin, &watch, &mut |_| {})?;
            let window_us: f64 = samples.iter().map(|s| s.result.elapsed_ns as f64 / 1e3).sum();
            let cpu_us: f64 = samples.iter().map(|s| s.watched_cpu_us as f64).sum();
            let rtt = |f: fn(&crate::traffic::RttStats) -> f64| {
                median(
                    &samples
                        .iter()
                        .filter_map(|s| s.result.rtt.as_ref())
                        .map(f)
                        .collect::<Vec<_>>(),
                )
            };
            cases.push(ForwardCase {
                way,
                req,
                value: median(&samples.iter().map(|s| s.value).collect::<Vec<_>>()).unwrap_or(0.0),
                summary,
                rtt_p50_us: rtt(|r| r.p50_us),
                rtt_p99_us: rtt(|r| r.p99_us),
                nodes_cpu_pct: if window_us > 0.0 { 100.0 * cpu_us / window_us } else { 0.0 },
                errors: samples.iter().map(|s| s.result.errors).sum(),
            });
        }
    }
    drop(server);
    let label = format!("forwarding: {} moves under a paced stream", plan.moves);
    progress.step(&label, plan.move_s());
    let timing = (plan.move_lead_ms, plan.move_after_ms, plan.move_interval_us);
    let moves = move_gap::run_moves(fw, plan.moves, timing, bin)?;
    Ok(ForwardResults { suite: SUITE.into(), params: *p, registration_s, cases, moves })
}
