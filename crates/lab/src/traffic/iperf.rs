//! iperf3 (Debian's /usr/bin/iperf3) as an independent cross-check of the STREAM figures: a
//! one-off server in one namespace, a client with `-J` in another, receiver-side bit/s compared.

use super::{Request, TestKind};
use crate::error::LabError;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

pub const IPERF3: &str = "/usr/bin/iperf3";
pub const IPERF_PORT: u16 = 5201;
/// Relative disagreement above which the report flags a test.
pub const DISAGREEMENT_LIMIT: f64 = 0.10;

/// Receiver-side throughput and CPU reported by iperf3.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IperfResult {
    pub mbit_s: f64,
    pub sender_mbit_s: f64,
    pub lost_pct: Option<f64>,
    pub cpu_host_pct: f64,
    pub cpu_remote_pct: f64,
}

pub fn available() -> bool {
    Path::new(IPERF3).is_file()
}

/// Relative difference of `ours` to `reference` (|a-b|/b).
pub fn disagreement(ours: f64, reference: f64) -> f64 {
    if reference == 0.0 { f64::INFINITY } else { (ours - reference).abs() / reference }
}

/// Runs one iperf3 test of `duration_s` whole seconds (iperf 3.12 truncates fractions) after
/// `omit_s` omitted seconds, from `client` to `server` at `server_ip`.
pub fn run(
    topo: &Topology,
    client: &str,
    server: &str,
    server_ip: IpAddr,
    req: Request,
    duration_s: u64,
    omit_s: u64,
) -> Result<IperfResult, LabError> {
    if !req.test.is_stream() {
        return Err(LabError::InvalidOption {
            field: "test".into(),
            reason: format!("iperf3 runs STREAM tests, not {}", req.test),
        });
    }
    let ip = server_ip.to_string();
    let port = IPERF_PORT.to_string();
    let srv_args: Vec<String> =
        ["-s", "-1", "-B", &ip, "-p", &port].iter().map(|s| s.to_string()).collect();
    let _srv = topo.spawn(server, Path::new(IPERF3), &srv_args)?;
    let mut args: Vec<String> = ["-c", &ip, "-p", &port, "-J", "-l", &req.msg_size.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["-t".into(), duration_s.max(1).to_string(), "-O".into(), omit_s.to_string()]);
    if req.test == TestKind::UdpStream {
        args.extend(["-u".into(), "-b".into(), "0".into()]);
    }
    // The server may not be listening yet: retry the client briefly.
    let mut last = None;
    for _ in 0..50 {
        match topo
            .spawn(client, Path::new(IPERF3), &args)?
            .wait_output()
            .and_then(|out| parse(&out))
        {
            Ok(r) => return Ok(r),
            Err(e) => {
                last = Some(e);
                std::thread::sleep(Duration::from_millis(40));
            }
        }
    }
    Err(last.unwrap_or(LabError::Traffic { test: "iperf3".into(), reason: "never ran".into() }))
}

fn num(v: &serde_json::Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(serde_json::Value::as_f64)
}

/// Parses `iperf3 -J` client output.
pub fn parse(out: &str) -> Result<IperfResult, LabError> {
    let v: serde_json::Value =
        serde_json::from_str(out).map_err(|e| LabError::parse("iperf3 JSON", e.to_string()))?;
    if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
        return Err(LabError::Traffic { test: "iperf3".into(), reason: err.to_string() });
    }
    let field = |path: &[&str]| {
        num(&v, path)
            .ok_or_else(|| LabError::parse(format!("iperf3 {}", path.join(".")), "missing"))
    };
    Ok(IperfResult {
        mbit_s: field(&["end", "sum_received", "bits_per_second"])? / 1e6,
        sender_mbit_s: field(&["end", "sum_sent", "bits_per_second"])? / 1e6,
        lost_pct: num(&v, &["end", "sum", "lost_percent"]),
        cpu_host_pct: field(&["end", "cpu_utilization_percent", "host_total"])?,
        cpu_remote_pct: field(&["end", "cpu_utilization_percent", "remote_total"])?,
    })
}
