//! The lab side of traffic: start the helper's server in one namespace, run clients from another,
//! repeat, and keep every sample (plus CPU of watched processes such as hipsec nodes).

use super::stats::Summary;
use super::{ClientResult, Request, TrafficBin};
use crate::cpu::ProcCpu;
use crate::error::LabError;
use crate::topology::{ChildProc, Topology};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

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

/// One repetition: the helper's result plus CPU µs of watched processes during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub result: ClientResult,
    pub value: f64,
    pub watched_cpu_us: u64,
}

/// Runs one client to completion in `role`'s namespace.
pub fn run_client(
    topo: &Topology,
    role: &str,
    server: SocketAddr,
    req: Request,
    params: &RunParams,
    bin: &TrafficBin,
) -> Result<ClientResult, LabError> {
    let (prog, mut args) = bin.command();
    args.extend([
        "client".to_string(),
        "--server".into(),
        server.to_string(),
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
    server: SocketAddr,
    req: Request,
    params: &RunParams,
    bin: &TrafficBin,
    watch: &[u32],
    each: &mut dyn FnMut(usize),
) -> Result<(Vec<Sample>, Option<Summary>), LabError> {
    req.validate()?;
    let mut samples = Vec::with_capacity(params.repetitions);
    for rep in 0..params.repetitions {
        each(rep);
        let before: Vec<u64> =
            watch.iter().map(|&p| ProcCpu::read(p).map(|c| c.total_us()).unwrap_or(0)).collect();
        let result = run_client(topo, role, server, req, params, bin)?;
        let after: Vec<u64> =
            watch.iter().map(|&p| ProcCpu::read(p).map(|c| c.total_us()).unwrap_or(0)).collect();
        let watched_cpu_us = after.iter().zip(&before).map(|(a, b)| a.saturating_sub(*b)).sum();
        let value = result.value();
        samples.push(Sample { result, value, watched_cpu_us });
    }
    let values: Vec<f64> = samples.iter().map(|s| s.value).collect();
    Ok((samples, Summary::of(&values)))
}
