//! The hipsec node: the only crate that touches the OS. A TUN device ↔ the `ipsec` engine ↔ UDP
//! (ESP in UDP, RFC 3948) or raw IP sockets (ESP 50 / AH 51), a config file and a control socket.
//! Read first: RFC 4301 §5 (processing), RFC 3948 §2 (UDP encapsulation).
//!
//! Data path: `outbound` (TUN → seal → carrier) and `inbound` (carrier → open → TUN), driven by
//! `worker` threads; batched UDP with GSO/GRO in `udp`, TUN offloads in `tun`. How the halves and
//! their SAs are split between threads is explained in `worker`.
#![deny(unsafe_code)]

pub mod clear;
pub mod config;
pub mod config_sa;
pub mod control;
pub mod encap;
pub mod filter_stage;
pub mod gro;
pub mod icmp;
pub mod inbound;
pub mod lanes;
pub mod log;
pub mod metrics;
pub mod net;
pub mod netns;
pub mod outbound;
pub mod safile;
mod sys;
pub mod tun;
pub mod udp;
pub mod worker;

use crate::log::{Level, log_event};
use config::{ConfigError, NodeConfig, PolicyAction, Transport};
use config_sa::Direction;
use ipsec::spd::{Action, Selector, SpdEntry};
use ipsec::{Engine, EngineError, SecurityAssociation, Time};
use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Why the node stopped or did not start.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The configuration file is wrong; nothing was started.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The engine refused an SA or a policy.
    #[error("{file}: SA or policy at line {line}: {source}")]
    Engine {
        /// Config file.
        file: String,
        /// Line of the `[[sa]]` or `[[policy]]`.
        line: usize,
        /// What the engine said.
        source: EngineError,
    },
    /// A device, socket or signal handler could not be set up, or the data path failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The packet filter's rule file could not be loaded.
    #[error("filter: {0}")]
    Filter(filter_stage::FilterError),
    /// The link MTU leaves no room for the IPsec overhead.
    #[error("link mtu {link} minus IPsec overhead {overhead} is below 576")]
    MtuTooSmall {
        /// Link MTU.
        link: u16,
        /// Overhead.
        overhead: usize,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> NodeError {
    let what = what.into();
    move |source| NodeError::Io { what, source }
}

/// Bytes the largest protect bundle adds on the wire: per SA its ESP/AH overhead without the
/// tunnel header (the carrier's own IP header replaces it), plus that IP header and UDP.
pub fn wire_overhead(c: &NodeConfig) -> usize {
    let provider = crypto::default_provider();
    let sa_overhead = |i: usize| {
        let p = &c.sas[i].params;
        SecurityAssociation::new(p, provider, Time(0)).map_or(0, |sa| sa.overhead_without_outer())
    };
    let bundle = c
        .policies
        .iter()
        .filter_map(|p| match &p.action {
            PolicyAction::Protect(v) => Some(v.iter().map(|&i| sa_overhead(i)).sum::<usize>()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let ip = if c.transport.local_ip().is_ipv4() { 20 } else { 40 };
    let udp = if matches!(c.transport, Transport::Udp { .. }) { 8 } else { 0 };
    bundle + ip + udp
}

/// Builds the engine from a checked config. Also returns the inbound SAs' addresses.
pub fn build_engine(
    c: &NodeConfig,
    now: Time,
) -> Result<(Engine, worker::InboundAddrs), NodeError> {
    build_engine_for(c, now, true, true, 0)
}

/// Builds an engine holding only the outbound SAs and the SPD (`out`), only the inbound SAs and
/// the inbound SPD (`inb`), or both: each worker half gets the SAs it alone uses.
///
/// The inbound SPD mirrors the configured policies (source and destination swapped, RFC 4301
/// §4.4.1: a policy for traffic to a peer also names the traffic from it): after ESP/AH is
/// removed, the inner packet must match a mirrored protect entry that lists the SA it came in
/// on (its `in-sas`, or any inbound SA), else it is dropped as `inbound_policy_mismatch`
/// (RFC 4301 §5.2 step 4): a peer cannot inject inner addresses its policy does not cover.
/// A config without policies checks nothing inbound.
pub fn build_engine_for(
    c: &NodeConfig,
    now: Time,
    out: bool,
    inb: bool,
    lane: usize,
) -> Result<(Engine, worker::InboundAddrs), NodeError> {
    let file = c.file.display().to_string();
    let mut engine = Engine::new(crypto::default_provider());
    let mut handles = vec![None; c.sas.len()];
    let mut in_handles = vec![None; c.sas.len()];
    let mut in_addrs = HashMap::new();
    // Policies name lane 0's SAs; in lane k each stands for its counterpart (`lanes`).
    let here = |i: usize| lanes::counterpart(&c.sas, i, lane);
    for (i, s) in c.sas.iter().enumerate().filter(|(_, s)| s.lane == lane) {
        let err = |source| NodeError::Engine { file: file.clone(), line: s.line, source };
        match s.direction {
            Direction::Out if !out => {}
            Direction::In if !inb => {}
            Direction::Out => handles[i] = Some(engine.add_outbound(&s.params, now).map_err(err)?),
            Direction::In => {
                in_handles[i] = Some(engine.add_inbound(&s.params, now).map_err(err)?.0);
                let key = (s.params.spi.0, s.params.protocol.number());
                in_addrs.insert(key, (s.params.src, s.params.dst));
            }
        }
    }
    for p in c.policies.iter().filter(|_| out) {
        let action = match &p.action {
            PolicyAction::Bypass => Action::Bypass,
            PolicyAction::Discard => Action::Discard,
            PolicyAction::Protect(v) => Action::Protect(
                v.iter().filter_map(|&i| here(i).and_then(|j| handles[j]).map(|h| h.0)).collect(),
            ),
        };
        engine
            .add_policy(SpdEntry { selector: p.selector.clone(), action })
            .map_err(|source| NodeError::Engine { file: file.clone(), line: p.line, source })?;
    }
    for p in c.policies.iter().filter(|_| inb) {
        let action = match &p.action {
            PolicyAction::Bypass => Action::Bypass,
            PolicyAction::Discard => Action::Discard,
            PolicyAction::Protect(_) => {
                let hs: Vec<usize> = if p.in_sas.is_empty() {
                    in_handles.iter().flatten().copied().collect()
                } else {
                    p.in_sas.iter().filter_map(|&i| here(i).and_then(|j| in_handles[j])).collect()
                };
                if hs.is_empty() {
                    // No inbound SA: nothing can arrive protected for this entry anyway.
                    continue;
                }
                Action::Protect(hs)
            }
        };
        let sel = &p.selector;
        let mirrored = Selector {
            src: sel.dst,
            dst: sel.src,
            proto: sel.proto,
            src_ports: sel.dst_ports,
            dst_ports: sel.src_ports,
        };
        engine
            .add_inbound_policy(SpdEntry { selector: mirrored, action })
            .map_err(|source| NodeError::Engine { file: file.clone(), line: p.line, source })?;
    }
    Ok((engine, in_addrs))
}

/// Runs a node from the config file until SIGINT or SIGTERM; removes the TUN device and the
/// control socket on the way out. Refuses to start on any config error.
pub fn run(config_path: &Path) -> Result<(), NodeError> {
    let c = config::load(config_path)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(io_err("signal handler"))?;
    }
    run_until(&c, &stop)
}

/// TUN transmit queue with the `big_buffers` tuning (packets, or super-packets with offloads).
const BIG_TX_QUEUE: u32 = 10_000;

/// Runs a node from a checked config until `stop` is set.
pub fn run_until(c: &NodeConfig, stop: &AtomicBool) -> Result<(), NodeError> {
    let tuning = worker::Tuning::from_env()
        .map_err(|e| io_err("tuning")(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
    run_tuned(c, stop, tuning)
}

/// Runs a node with the given speed-ups until `stop` is set.
pub fn run_tuned(
    c: &NodeConfig,
    stop: &AtomicBool,
    tuning: worker::Tuning,
) -> Result<(), NodeError> {
    let start = Instant::now();
    // Set once per process: the first node's `[log]` counts (a process runs one node).
    log::init(c.log);
    let lanes = c.interface.queues;
    let mut engines = Vec::with_capacity(lanes);
    for lane in 0..lanes {
        let (out_engine, _) = build_engine_for(c, Time(0), true, false, lane)?;
        let (in_engine, in_addrs) = build_engine_for(c, Time(0), false, true, lane)?;
        engines.push((out_engine, in_engine, in_addrs));
    }
    let overhead = wire_overhead(c);
    let mtu = (c.interface.link_mtu as usize)
        .checked_sub(overhead)
        .filter(|&m| m >= 576)
        .ok_or(NodeError::MtuTooSmall { link: c.interface.link_mtu, overhead })?;
    // Per lane: the carrier (its receiving socket) and, for lanes >= 1, a socket to send from.
    let mut carriers: Vec<(net::Carrier, Option<std::net::UdpSocket>)> = match (&c.transport, lanes)
    {
        (Transport::Udp { local, peer }, n) if n > 1 => lanes::open_udp(*local, n)
            .map_err(io_err(format!("carrier sockets (SO_REUSEPORT on {local})")))?
            .into_iter()
            .map(|l| (net::Carrier::udp(l.rx, *peer), l.tx))
            .collect(),
        _ => vec![(net::Carrier::open(&c.transport).map_err(io_err("carrier sockets"))?, None)],
    };
    if tuning.big_buffers {
        for (carrier, tx) in &carriers {
            carrier.force_buffers(tuning.socket_buffer);
            if let Some(tx) = tx {
                net::force_buffers(tx, tuning.socket_buffer);
            }
        }
    }
    // Bound before the TUN device is made: an address in use stops the node with nothing to undo.
    let metrics = c
        .metrics_listen
        .map(|a| metrics::MetricsServer::bind(a).map_err(io_err(format!("metrics listener {a}"))))
        .transpose()?;
    let control = match &c.control_socket {
        Some(p) => Some(
            control::ControlServer::bind(p)
                .map_err(io_err(format!("control socket {}", p.display())))?,
        ),
        None => None,
    };
    let txq = tuning.big_buffers.then_some(BIG_TX_QUEUE);
    let (queues, offload) = tun::open(&c.interface, mtu as u16, tuning.tun_offload, txq)
        .map_err(io_err(format!("tun device {}", c.interface.name)))?;
    let filter = match &c.filter {
        Some(f) => Some(Arc::new(std::sync::Mutex::new(
            filter_stage::FilterStage::load(f).map_err(NodeError::Filter)?,
        ))),
        None => None,
    };
    let mut workers = Vec::new();
    let (mut mmsg, mut gso, mut gro) = (false, false, false);
    let beet: Vec<(&'static str, String)> = c
        .sas
        .iter()
        .filter(|s| s.beet)
        .map(|s| {
            (if s.direction == Direction::Out { "out" } else { "in" }, s.params.spi.to_string())
        })
        .collect();
    for (lane, ((dev, (carrier, tx)), (out_engine, in_engine, in_addrs))) in
        queues.into_iter().zip(carriers.drain(..)).zip(engines).enumerate()
    {
        let tun_fd = dev.as_raw_fd();
        let dev = Arc::new(dev);
        let carrier_fds = carrier.fds();
        // Batched UDP (quinn-udp): sends wait while the socket buffer is full (backpressure
        // instead of loss); receives never block.
        let (udp_out, udp_in) = match carrier.udp_socket() {
            Some((sock, peer)) if tuning.mmsg => {
                let from = tx.as_ref().unwrap_or(sock);
                let s =
                    udp::UdpBatch::sender(from, tuning.gso).map_err(io_err("carrier socket"))?;
                let r =
                    udp::UdpBatch::receiver(sock, tuning.gro).map_err(io_err("carrier socket"))?;
                (Some((s, peer)), Some(r))
            }
            _ => (None, None),
        };
        mmsg = udp_out.is_some();
        (gso, gro) =
            (udp_out.as_ref().is_some_and(|u| u.0.gso), udp_in.as_ref().is_some_and(|u| u.gro));
        let carrier = Arc::new(carrier);
        let mut out = outbound::Outbound::new(
            out_engine,
            Arc::clone(&dev),
            Arc::clone(&carrier),
            udp_out,
            mtu,
        );
        let mut inb = inbound::Inbound::new(
            in_engine,
            Arc::clone(&dev),
            Arc::clone(&carrier),
            udp_in,
            in_addrs,
        );
        out.filter = filter.clone();
        out.clear = match &c.bypass_device {
            Some(d) => {
                Some(clear::ClearPath::open(d).map_err(io_err(format!("bypass-device {d}")))?)
            }
            None => None,
        };
        inb.filter = filter.clone();
        let slot = workers.len();
        if tuning.workers >= 2 {
            workers.push(worker::Worker::new(Some((out, tun_fd)), None, lane, slot, start));
            workers.push(worker::Worker::new(
                None,
                Some((inb, carrier_fds)),
                lane,
                slot + 1,
                start,
            ));
        } else {
            workers.push(worker::Worker::new(
                Some((out, tun_fd)),
                Some((inb, carrier_fds)),
                lane,
                slot,
                start,
            ));
        }
    }
    let scheduling = if tuning.realtime { c.scheduling } else { config::Scheduling::Other };
    for w in &mut workers {
        w.beet = beet.clone();
        w.scheduling = scheduling;
    }
    log_event!(
        Level::Info,
        "up",
        "interface" => c.interface.name,
        "mtu" => mtu,
        "link_mtu" => c.interface.link_mtu,
        "overhead" => overhead,
        "sas" => c.sas.len(),
        "policies" => c.policies.len(),
        "lanes" => lanes,
        "workers" => workers.len(),
        "scheduling" => scheduling.as_str(),
        "mmsg" => mmsg,
        "udp_gso" => gso,
        "udp_gro" => gro,
        "tun_offload" => offload,
        "metrics" => metrics
            .as_ref()
            .and_then(|m| m.local_addr().ok())
            .map_or_else(|| "off".to_string(), |a| a.to_string()),
    );
    let r =
        worker::run_all(workers, control.as_ref(), metrics.as_ref(), filter.as_ref(), stop, start)
            .map_err(io_err("data path"));
    drop(control);
    drop(metrics);
    log_event!(Level::Info, "stopped", "interface" => c.interface.name, "tun_removed" => true);
    r
}

/// Asks the node listening on `socket` for its status (JSON).
pub fn status(socket: &Path) -> Result<String, NodeError> {
    command(socket, "status")
}

/// Sends one control command (`status`, `reload-filter`) and returns the JSON answer.
pub fn command(socket: &Path, cmd: &str) -> Result<String, NodeError> {
    control::query(socket, cmd).map_err(io_err(format!("control socket {}", socket.display())))
}

#[cfg(test)]
mod spd_tests;
