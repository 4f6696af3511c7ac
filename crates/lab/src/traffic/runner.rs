//! The lab side of traffic: start the helper's server in one namespace, run clients from another,
//! repeat, and keep every sample (plus CPU of watched processes such as hipsec nodes).

use super::stats::Summary;
use super::{ClientResult, Request, TrafficBin};
use crate::cpu::ProcCpu;
use crate::error::LabError;
use crate::topology::{ChildProc, Topology};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};

/// Port of the helper's control connection (netperf's own).
pub const CONTROL_PORT: u16 = 12865;

/// Warm-up, measured window and repetitions of one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunParams {
    pub warmup_ms: u64,
    pub duration_ms: u64,
    pub repetitions: usize,
}

/// A running helper server; killed on drop.
#[derive(Debug)]
pub struct TrafficServer {
    proc: ChildProc,
}

impl TrafficServer {
    /// Starts `hipsec-traffic server` in `role`'s namespace listening on `addrs`.
    pub fn start(
        topo: &Topology,
        role: &str,
        addrs: &[SocketAddr],
        bin: &TrafficBin,
    ) -> Result<Self, LabError> {
        let (prog, mut args) = bin.command();
        args.push("server".into());
        for a in addrs {
            args.push("--listen".into());
            args.push(a.to_string());
        }
        Ok(TrafficServer { proc: topo.spawn(role, &prog, &args)? })
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }
}

/// One repetition: the helper's result plus CPU µs of watched processes in the measured window
/// (their CPU over the whole client run × window / run wall time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub result: ClientResult,
    pub value: f64,
    pub watched_cpu_us: u64,
}

/// Where a client goes: the server's control address, and optionally another address of the
/// server for the data (e.g. behind a tunnel; the control connection then stays outside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub control: SocketAddr,
    pub data: Option<IpAddr>,
}

impl From<SocketAddr> for Target {
    fn from(control: SocketAddr) -> Self {
        Target { control, data: None }
    }
}

/// Runs one client to completion in `role`'s namespace.
pub fn run_client(
    topo: &Topology,
    role: &str,
    server: impl Into<Target>,
    req: Request,
    params: &RunParams,
    bin: &TrafficBin,
) -> Result<ClientResult, LabError> {
    let server = server.into();
    let (prog, mut args) = bin.command();
    if let Some(ip) = server.data {
        args.extend(["client".to_string(), "--data-ip".into(), ip.to_string()]);
    } else {
        args.push("client".to_string());
    }
    args.extend([
        "--server".into(),
        server.control.to_string(),
        "--test".into(),
        req.test.to_string(),
        "--msg-size".into(),
        req.msg_size.to_string(),
        "--resp-size".into(),
        req.resp_size.to_string(),
        "--warmup-ms".into(),
        params.warmup_ms.to_string(),
        "--duration-ms".into(),
        params.duration_ms.to_string(),
    ]);
    let out = topo.spawn(role, &prog, &args)?.wait_output()?;
    serde_json::from_str(out.trim())
        .map_err(|e| LabError::parse(format!("{} client output", req.test), e.to_string()))
}

/// Runs `params.repetitions` clients; `each` is called before every repetition (progress).
#[allow(clippy::too_many_arguments)]
pub fn measure(
    topo: &Topology,
    role: &str,
    server: impl Into<Target>,
    req: Request,
    params: &RunParams,
    bin: &TrafficBin,
    watch: &[u32],
    each: &mut dyn FnMut(usize),
) -> Result<(Vec<Sample>, Option<Summary>), LabError> {
    req.validate()?;
    let server = server.into();
    let mut samples = Vec::with_capacity(params.repetitions);
    for rep in 0..params.repetitions {
        each(rep);
        let before: Vec<u64> =
            watch.iter().map(|&p| ProcCpu::read(p).map(|c| c.total_us()).unwrap_or(0)).collect();
        let t0 = std::time::Instant::now();
        let result = run_client(topo, role, server, req, params, bin)?;
        let wall_ns = t0.elapsed().as_nanos() as u64;
        let after: Vec<u64> =
            watch.iter().map(|&p| ProcCpu::read(p).map(|c| c.total_us()).unwrap_or(0)).collect();
        let whole: u64 = after.iter().zip(&before).map(|(a, b)| a.saturating_sub(*b)).sum();
        // The watched processes are read around the whole client run (start, warm-up, window,
        // report); charge the measured window its share, as the helper does for its own CPU.
        let share = (result.elapsed_ns as f64 / wall_ns.max(1) as f64).min(1.0);
        let watched_cpu_us = (whole as f64 * share).round() as u64;
        let value = result.value();
        samples.push(Sample { result, value, watched_cpu_us });
    }
    let values: Vec<f64> = samples.iter().map(|s| s.value).collect();
    Ok((samples, Summary::of(&values)))
}
