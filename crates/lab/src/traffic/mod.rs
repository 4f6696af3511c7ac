//! Traffic: netperf's four tests run by the `hipsec-traffic` helper inside namespaces, summarised
//! over repetitions, with iperf3 as an independent cross-check of the STREAM figures.

pub mod cli;
pub mod dv;
pub mod engine;
pub mod iperf;
pub mod paced;
pub mod runner;
pub mod sessions;
pub mod stats;

use crate::cpu::SystemCpuDelta;
use crate::error::LabError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The four netperf tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TestKind {
    #[value(name = "TCP_STREAM")]
    TcpStream,
    #[value(name = "UDP_STREAM")]
    UdpStream,
    #[value(name = "TCP_RR")]
    TcpRr,
    #[value(name = "UDP_RR")]
    UdpRr,
}

impl TestKind {
    pub fn is_stream(self) -> bool {
        matches!(self, TestKind::TcpStream | TestKind::UdpStream)
    }

    pub fn is_udp(self) -> bool {
        matches!(self, TestKind::UdpStream | TestKind::UdpRr)
    }

    /// Unit of the headline figure.
    pub fn unit(self) -> &'static str {
        if self.is_stream() { "Mbit/s" } else { "trans/s" }
    }
}

impl std::fmt::Display for TestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TestKind::TcpStream => "TCP_STREAM",
            TestKind::UdpStream => "UDP_STREAM",
            TestKind::TcpRr => "TCP_RR",
            TestKind::UdpRr => "UDP_RR",
        })
    }
}

/// Largest UDP payload over IPv4.
pub const MAX_UDP_PAYLOAD: usize = 65_507;
/// Largest message the engine accepts for TCP.
pub const MAX_TCP_MSG: usize = 16 << 20;

/// A test and its message sizes (request size, and response size for RR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub test: TestKind,
    pub msg_size: usize,
    pub resp_size: usize,
}

impl Request {
    pub fn validate(&self) -> Result<(), LabError> {
        let max = if self.test.is_udp() { MAX_UDP_PAYLOAD } else { MAX_TCP_MSG };
        let bad = |field: &str, v: usize| LabError::InvalidOption {
            field: field.into(),
            reason: format!("{v} is outside 1..={max} for {}", self.test),
        };
        if !(1..=max).contains(&self.msg_size) {
            return Err(bad("msg_size", self.msg_size));
        }
        if !self.test.is_stream() && !(1..=max).contains(&self.resp_size) {
            return Err(bad("resp_size", self.resp_size));
        }
        Ok(())
    }
}

/// Server → client: where to send data.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Ready {
    pub data_port: u16,
}

/// What the server saw in the measured window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerReport {
    pub bytes: u64,
    pub msgs: u64,
    pub elapsed_ns: u64,
    pub cpu_us: u64,
    /// UDP_STREAM: from the `mark` line to the first datagram sent in the window, i.e. how long
    /// the path's queues held a datagram when the window opened (none came: `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_delay_ns: Option<u64>,
    /// UDP_STREAM: how long after `end` window datagrams still came in, and how many did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_msgs: Option<u64>,
}

/// Round-trip times of the measured transactions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RttStats {
    pub samples: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

impl RttStats {
    pub fn from_ns(v: &mut [u64]) -> Option<RttStats> {
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        Some(RttStats {
            samples: v.len() as u64,
            mean_us: mean / 1e3,
            p50_us: stats::quantile_sorted(v, 0.5) as f64 / 1e3,
            p99_us: stats::quantile_sorted(v, 0.99) as f64 / 1e3,
        })
    }
}

/// One client run: what `hipsec-traffic client` prints as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientResult {
    pub req: Request,
    pub elapsed_ns: u64,
    pub sent_bytes: u64,
    pub sent_msgs: u64,
    pub transactions: u64,
    pub errors: u64,
    pub rtt: Option<RttStats>,
    pub client_cpu_us: u64,
    pub system: SystemCpuDelta,
    pub server: ServerReport,
}

impl ClientResult {
    /// The headline figure: receiver Mbit/s for STREAM (as netperf), transactions/s for RR.
    pub fn value(&self) -> f64 {
        if self.req.test.is_stream() {
            self.server.bytes as f64 * 8.0 * 1e3 / self.server.elapsed_ns.max(1) as f64
        } else {
            self.transactions as f64 * 1e9 / self.elapsed_ns.max(1) as f64
        }
    }

    /// Bytes moved end to end in the window (received for STREAM, both directions for RR).
    pub fn bytes(&self) -> u64 {
        if self.req.test.is_stream() {
            self.server.bytes
        } else {
            self.transactions * (self.req.msg_size + self.req.resp_size) as u64
        }
    }
}

/// How the lab starts the traffic helper: a binary path, or a subcommand of another binary
/// (e.g. `hipsec __traffic`), in which case `args` come before the helper's own arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrafficBin {
    Path(PathBuf),
    Subcommand { exe: PathBuf, args: Vec<String> },
}

impl TrafficBin {
    /// Program and leading arguments.
    pub fn command(&self) -> (PathBuf, Vec<String>) {
        match self {
            TrafficBin::Path(p) => (p.clone(), Vec::new()),
            TrafficBin::Subcommand { exe, args } => (exe.clone(), args.clone()),
        }
    }

    /// The running `hipsec` binary itself (its hidden `traffic` subcommand), else
    /// `hipsec-traffic` beside the running executable (or one level up, for test binaries in
    /// `target/*/deps`).
    pub fn locate() -> Result<TrafficBin, LabError> {
        let exe = std::env::current_exe()
            .map_err(|e| LabError::io("locating the current executable", e))?;
        if exe.file_name().is_some_and(|n| n == "hipsec") {
            return Ok(TrafficBin::Subcommand { exe, args: vec!["traffic".into()] });
        }
        let dirs = exe.parent().into_iter().chain(exe.parent().and_then(|p| p.parent()));
        for d in dirs {
            let cand = d.join("hipsec-traffic");
            if cand.is_file() {
                return Ok(TrafficBin::Path(cand));
            }
        }
        Err(LabError::InvalidOption {
            field: "--traffic-bin".into(),
            reason: format!(
                "no hipsec-traffic beside {}; build it (cargo build -p lab) or pass the path",
                exe.display()
            ),
        })
    }
}
