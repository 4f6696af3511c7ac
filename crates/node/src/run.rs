//! Starting and stopping a node: the config becomes lanes of workers (the data path), the
//! control thread serves the control socket and `/metrics`, and SIGINT/SIGTERM stop both.

use crate::config::sa::Direction;
use crate::config::{self, NodeConfig, Transport};
use crate::control::metrics::MetricsServer;
use crate::control::server::ControlThread;
use crate::control::socket::ControlServer;
use crate::datapath::board::Board;
use crate::datapath::mailbox;
use crate::datapath::tuning::Tuning;
use crate::datapath::worker::Worker;
use crate::datapath::{carrier, clear, filter_stage, inbound, lanes, outbound, tun, udp};
use crate::error::{NodeError, io_err};
use crate::keying::hip::HipDriver;
use crate::keying::hip::runtime::HipRuntime;
use crate::keying::hip::socket::HipSocket;
use crate::keying::ike::IkeDriver;
use crate::keying::ike::runtime::IkeRuntime;
use crate::keying::ike::sockets::IkeSockets;
use crate::keying::manual;
use crate::keying::manual::build_engine_for;
use crate::keying::manual::wire_overhead;
use crate::keying::mip6::HomeAgentRuntime;
use crate::keying::mip6::mobile::MobileNodeRuntime;
use crate::keying::plane::{ControlPlane, EndpointDefaults, WorkerPort};
use crate::keying::sequence::Checkpointer;
use crate::log;
use ipsec::Time;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// IKE's port (RFC 7296 §2); NAT traversal moves to the ESP-in-UDP port.
const IKE_PORT: u16 = 500;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Runs a node from the config file until SIGINT or SIGTERM; removes the TUN device and the
/// control socket on the way out. Refuses to start on any config error.
pub fn run(config_path: &Path) -> Result<(), NodeError> {
    run_with(config_path, RunOptions::default())
}

/// What `hipsec run` may say beside the config file (never set from the file itself).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Keep the IKE SAs' keys for `hipsec ike wireshark-keys` (a debugging switch: tshark
    /// can then decrypt the exchanges).
    pub export_ike_keys: bool,
    /// Keep the HIP associations' ESP keys for `hipsec hip wireshark-keys`.
    pub export_hip_keys: bool,
    /// `--reset-sequence`: manual SAs without a usable checkpoint in the `[state] file` start
    /// at sequence number 1 (`crate::keying::sequence`).
    pub reset_sequence: bool,
    /// `--log FILTER`: which events to write, overriding `RUST_LOG` and `[log]`.
    pub log: Option<String>,
}

/// [`run`] with the command line's options.
pub fn run_with(config_path: &Path, o: RunOptions) -> Result<(), NodeError> {
    let mut c = config::load(config_path)?;
    c.export_ike_keys = o.export_ike_keys;
    c.export_hip_keys = o.export_hip_keys;
    c.reset_sequence = o.reset_sequence;
    if let Some(f) = o.log {
        log::check_filter(&f).map_err(|e| NodeError::Log(format!("--log {e}")))?;
        c.log.command_line = Some(f);
    }
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
    let tuning = Tuning::from_env()
        .map_err(|e| io_err("tuning")(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
    run_tuned(c, stop, tuning)
}

/// Runs a node with the given speed-ups until `stop` is set.
pub fn run_tuned(c: &NodeConfig, stop: &AtomicBool, tuning: Tuning) -> Result<(), NodeError> {
    let start = Instant::now();
    // Set once per process: the first node's `[log]` counts (a process runs one node).
    log::init(&c.log).map_err(NodeError::Log)?;
    // Weak settings the node accepts: readable key files, legacy algorithms, weak keys.
    config::warnings::log_all(&config::warnings::check_config(c));
    // Before the TUN device and the sockets: a restart never leaves a moment without it.
    guard(c)?;
    let checkpointer = sequence_state(c)?;
    let lanes = c.interface.queues;
    let mut engines = Vec::with_capacity(lanes);
    for lane in 0..lanes {
        let (mut out_engine, _) = build_engine_for(c, Time(0), true, false, lane)?;
        if let Some(cp) = &checkpointer {
            cp.apply(c, lane, &mut out_engine);
        }
        let (in_engine, in_addrs) = build_engine_for(c, Time(0), false, true, lane)?;
        engines.push((out_engine, in_engine, in_addrs));
    }
    let overhead = wire_overhead(c);
    let mtu = (c.interface.link_mtu as usize)
        .checked_sub(overhead)
        .filter(|&m| m >= 576)
        .ok_or(NodeError::MtuTooSmall { link: c.interface.link_mtu, overhead })?;
    // Per lane: the carrier (its receiving socket) and, for lanes >= 1, a socket to send from
    // (none with IKE: every lane sends from the group's port, `lanes`).
    let own_ports = c.connections.is_empty();
    let mut carriers: Vec<(carrier::Carrier, Option<std::net::UdpSocket>)> =
        match (&c.transport, lanes) {
            (Transport::Udp { local, peer }, n) if n > 1 => lanes::open_udp(*local, n, own_ports)
                .map_err(io_err(format!("carrier sockets (SO_REUSEPORT on {local})")))?
                .into_iter()
                .map(|l| Ok((carrier::Carrier::udp(l.rx, *peer)?, l.tx)))
                .collect::<io::Result<_>>()
                .map_err(io_err("carrier sockets"))?,
            _ => vec![(
                carrier::Carrier::open(&c.transport).map_err(io_err("carrier sockets"))?,
                None,
            )],
        };
    // ESP as IP protocol 50 beside ESP in UDP, for the SAs not in UDP (RFC 7296 §2.23: an
    // IKE CHILD SA goes in UDP only when a NAT was found or `encap` is set). Lane 0 only: a
    // node with several lanes needs `encap` on every connection and runs no HIP (raw sockets on
    // several lanes would each get every packet).
    let raw_beside = match &c.transport {
        Transport::Udp { local, .. } if needs_raw_esp(c) => {
            let t = Transport::Raw { local: local.ip(), peer: None };
            let r = carrier::Carrier::open(&t).map_err(io_err(
                "raw ESP sockets (protocol 50, needs CAP_NET_RAW; with `encap = true` on every \
                 connection ESP goes in UDP only)",
            ))?;
            Some(Arc::new(r))
        }
        _ => None,
    };
    // IKE shares the ESP-in-UDP port (RFC 3948): the control thread sends on a clone of the
    // first lane's socket; port 500 is a socket of its own, bound before anything is set up.
    let ike = if c.connections.is_empty() {
        None
    } else {
        let natt = carriers
            .first()
            .and_then(|(c, _)| c.udp_socket())
            .map(|(s, _)| s.try_clone())
            .transpose()
            .map_err(io_err("ESP-in-UDP socket for IKE"))?;
        let local = c.transport.local_ip();
        let natt_port = match c.transport {
            Transport::Udp { local, .. } => local.port(),
            Transport::Raw { .. } => crate::config::DEFAULT_UDP_PORT,
        };
        let sockets = IkeSockets::open(local, IKE_PORT, natt)
            .map_err(io_err(format!("IKE socket (UDP {IKE_PORT} on {local})")))?;
        let mut driver = IkeDriver::new(
            c.export_ike_keys,
            c.ike,
            &c.connections,
            crypto::default_provider(),
            local,
            IKE_PORT,
            natt_port,
        )
        .map_err(|e| NodeError::Io {
            what: "IKE connections".into(),
            source: io::Error::other(e),
        })?;
        driver.set_tun(&c.interface.name);
        driver.set_pools(c.pools.clone());
        Some(IkeRuntime::new(driver, sockets))
    };
    // HIP: our identity, its HIT on the TUN device (in 2001:20::/28, so the kernel routes every
    // HIT there), and the driver with its protocol-139 socket.
    let mut interface = c.interface.clone();
    let hip = match &c.hip {
        None => None,
        Some(h) => {
            let host = crate::config::host_identity::load(&h.identity).map_err(|e| {
                NodeError::Io { what: "[hip] identity".into(), source: io::Error::other(e) }
            })?;
            interface
                .addresses
                .push(ipsec::spd::Prefix { addr: host.hit().to_ipv6().into(), len: 28 });
            let local = c.transport.local_ip();
            let esp_port = match c.transport {
                Transport::Udp { local, .. } => local.port(),
                Transport::Raw { .. } => crate::config::DEFAULT_UDP_PORT,
            };
            let socket = HipSocket::open(local)
                .map_err(io_err(format!("HIP socket (IP protocol 139 on {local})")))?;
            tracing::info!(hit = %host.hit(), locator = %local, "hip-identity");
            let driver = HipDriver::new(host, h.clone(), local, esp_port, c.export_hip_keys)
                .map_err(|e| NodeError::Io { what: "[hip]".into(), source: io::Error::other(e) })?;
            Some(HipRuntime::new(driver, socket))
        }
    };
    // The Mobile IPv6 home agent: its link socket, raw sender and nftables table (docs/mip6.md).
    let home_agent = match &c.home_agent {
        None => None,
        Some(h) => {
            let rt = HomeAgentRuntime::open(h, &c.interface.name).map_err(|e| NodeError::Io {
                what: "[home-agent]".into(),
                source: io::Error::other(e),
            })?;
            tracing::info!(address = %h.address, interface = %h.interface, mobile_nodes = %h.mobile_nodes.len(), "home-agent");
            Some(rt)
        }
    };
    // The Mobile IPv6 mobile node: its link socket, raw sender and nftables table.
    let mobile_node = match &c.mobile_node {
        None => None,
        Some(m) => {
            let rt = MobileNodeRuntime::open(m).map_err(|e| NodeError::Io {
                what: "[mobile-node]".into(),
                source: io::Error::other(e),
            })?;
            tracing::info!(home_address = %m.home_address, home_agent = %m.home_agent, interface = %m.interface, "mobile-node");
            Some(rt)
        }
    };
    if tuning.big_buffers {
        for (carrier, tx) in &carriers {
            carrier.force_buffers(tuning.socket_buffer);
            if let Some(tx) = tx {
                carrier::force_buffers(tx, tuning.socket_buffer);
            }
        }
        if let Some(r) = &raw_beside {
            r.force_buffers(tuning.socket_buffer);
        }
    }
    // Bound before the TUN device is made: an address in use stops the node with nothing to undo.
    let metrics = c
        .metrics_listen
        .map(|a| MetricsServer::bind(a).map_err(io_err(format!("metrics listener {a}"))))
        .transpose()?;
    let control = match &c.control_socket {
        Some(p) => Some(
            ControlServer::bind(p).map_err(io_err(format!("control socket {}", p.display())))?,
        ),
        None => None,
    };
    let txq = tuning.big_buffers.then_some(BIG_TX_QUEUE);
    let (queues, offload) = tun::open(&interface, mtu as u16, tuning.tun_offload, txq)
        .map_err(io_err(format!("tun device {}", c.interface.name)))?;
    // Held until the node stops, when dropping it removes the routes.
    let routes =
        crate::routes::install(c).map_err(|e| io_err("routes")(std::io::Error::other(e)))?;
    if let Some(r) = &routes {
        let list: Vec<String> = r.prefixes().iter().map(|p| p.to_string()).collect();
        tracing::info!(interface = %c.interface.name, prefixes = %list.join(","), "routes");
    }
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
        let default_peer = carrier.udp_socket().and_then(|(_, peer)| peer);
        let (udp_out, udp_in) = match carrier.udp_socket() {
            Some((sock, _)) if tuning.mmsg => {
                let from = tx.as_ref().unwrap_or(sock);
                let s =
                    udp::UdpBatch::sender(from, tuning.gso).map_err(io_err("carrier socket"))?;
                let r =
                    udp::UdpBatch::receiver(sock, tuning.gro).map_err(io_err("carrier socket"))?;
                (Some(s), Some(r))
            }
            _ => (None, None),
        };
        mmsg = udp_out.is_some();
        (gso, gro) =
            (udp_out.as_ref().is_some_and(|u| u.gso), udp_in.as_ref().is_some_and(|u| u.gro));
        let carrier = Arc::new(carrier);
        let mut out = outbound::Outbound::new(
            out_engine,
            Arc::clone(&dev),
            Arc::clone(&carrier),
            udp_out,
            default_peer,
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
        inb.lane = lane;
        let carrier_fds = match raw_beside.as_ref().filter(|_| lane == 0) {
            Some(r) => {
                out.raw = Some(Arc::clone(r));
                inb.with_raw(Arc::clone(r))
            }
            None => carrier_fds,
        };
        let slot = workers.len();
        if tuning.workers >= 2 {
            workers.push(Worker::new(Some((out, tun_fd)), None, lane, slot, start));
            workers.push(Worker::new(None, Some((inb, carrier_fds)), lane, slot + 1, start));
        } else {
            workers.push(Worker::new(
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
    tracing::info!(interface = %c.interface.name, mtu = mtu, link_mtu = %c.interface.link_mtu, overhead = %overhead, sas = %c.sas.len(), policies = c.policies.len(), lanes = lanes, workers = workers.len(), scheduling = %scheduling.as_str(), huge_pages = %crate::huge_pages::current().name(), mmsg = %mmsg, udp_gso = %gso, udp_gro = %gro, raw_esp_beside_udp = %raw_beside.is_some(), tun_offload = %offload, metrics = %metrics
            .as_ref()
            .and_then(|m| m.local_addr().ok())
            .map_or_else(|| "off".to_string(), |a| a.to_string()), "up");
    // The control plane: a mailbox per worker, one event queue back.
    let (events_tx, events_rx) = std::sync::mpsc::channel();
    let mut ports = Vec::with_capacity(workers.len());
    let (wake_rx, wake_tx) =
        std::os::unix::net::UnixDatagram::pair().map_err(io_err("control wake-up socket"))?;
    wake_rx.set_nonblocking(true).map_err(io_err("control wake-up socket"))?;
    for (i, w) in workers.iter_mut().enumerate() {
        let (mailbox, port) =
            mailbox::mailbox(i, events_tx.clone()).map_err(io_err("control mailbox"))?;
        let wake = wake_tx.try_clone().map_err(io_err("control wake-up socket"))?;
        w.mailbox = Some(mailbox.with_control_wake(wake));
        ports.push(WorkerPort { lane: w.lane, out: w.out.is_some(), inb: w.inb.is_some(), port });
    }
    drop(events_tx);
    let defaults = match c.transport {
        Transport::Udp { local, peer } => EndpointDefaults { udp_port: Some(local.port()), peer },
        Transport::Raw { .. } => EndpointDefaults::default(),
    };
    let mut plane = ControlPlane::new(ports, events_rx, start, defaults).with_wake(wake_rx);
    manual::adopt(c, &mut plane);
    let board = Board::new(workers.len());
    let mut thread = ControlThread::new(
        plane,
        control.as_ref(),
        metrics.as_ref(),
        filter.as_ref(),
        &board,
        start,
    );
    if let Some(ike) = ike {
        thread = thread.with_ike(ike);
    }
    if let Some(hip) = hip {
        thread = thread.with_hip(hip);
    }
    if let Some(ha) = home_agent {
        thread = thread.with_home_agent(ha);
    }
    if let Some(mn) = mobile_node {
        thread = thread.with_mobile_node(mn);
    }
    let r = run_all(workers, thread, checkpointer, stop).map_err(io_err("data path"));
    drop(routes);
    drop(control);
    drop(metrics);
    tracing::info!(interface = %c.interface.name, tun_removed = true, "stopped");
    r
}

/// Runs `workers` on threads of their own (named `hipsec-out`, `hipsec-in` or `hipsec-io`, as
/// `top -H` shows them) and the control thread on this one until `stop` is set; a worker that
/// fails sets `stop` for all. Returns the first worker error.
pub fn run_all(
    workers: Vec<Worker>,
    mut control: ControlThread<'_>,
    checkpointer: Option<Checkpointer>,
    stop: &AtomicBool,
) -> io::Result<()> {
    let board = control.board;
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        // Its writes (and their fsync) never hold the control thread's timers.
        let checkpoints = match checkpointer {
            Some(cp) => Some(
                std::thread::Builder::new()
                    .name("hipsec-seq".into())
                    .spawn_scoped(s, move || cp.run(board, stop))?,
            ),
            None => None,
        };
        for mut w in workers {
            let role = match (&w.out, &w.inb) {
                (Some(_), None) => "hipsec-out",
                (None, Some(_)) => "hipsec-in",
                _ => "hipsec-io",
            };
            // Lanes after the first get their number (`top -H` shows "hipsec-io1").
            let name = if w.lane == 0 { role.to_string() } else { format!("{role}{}", w.lane) };
            let h = std::thread::Builder::new().name(name).spawn_scoped(s, move || {
                w.apply_scheduling();
                let r = w.run(stop, board);
                if r.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                r
            });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The scope waits for the workers already started: stop them first.
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        control.run(stop);
        if let Some(h) = checkpoints {
            let _ = h.join();
        }
        let mut first_err = Ok(());
        for h in handles {
            let r = h.join().unwrap_or_else(|_| Err(io::Error::other("worker panicked")));
            if first_err.is_ok() {
                first_err = r;
            }
        }
        first_err
    })
}

/// Where the manual SAs' outbound sequence numbers resume (`[state] file`), or a warning that
/// a restart will start them at 1.
fn sequence_state(c: &NodeConfig) -> Result<Option<Checkpointer>, NodeError> {
    let cp = Checkpointer::start(c, c.reset_sequence)
        .map_err(|e| NodeError::Io { what: "[state] file".into(), source: io::Error::other(e) })?;
    let manual_out = c.sas.iter().filter(|s| s.direction == Direction::Out).count();
    if cp.is_none() && manual_out > 0 {
        tracing::warn!(sas = %manual_out, action = "without [state] file a restart starts the manual outbound SAs at sequence number 1 and the peer drops their packets as replays: set [state] file", "no-sequence-state");
    }
    Ok(cp)
}

/// Installs the guard the config asks for (`crate::guard`), or removes this interface's
/// leftover one when `[guard] enabled = false`.
fn guard(c: &NodeConfig) -> Result<(), NodeError> {
    let fail = |e: crate::guard::GuardError| NodeError::Io {
        what: "[guard] (set enabled = false to run without it)".into(),
        source: io::Error::other(e),
    };
    if !c.guard.enabled() {
        if crate::guard::remove(Some(&c.interface.name)).unwrap_or(false) {
            tracing::warn!(interface = %c.interface.name, why = "[guard] enabled = false", "guard-removed");
        }
        return Ok(());
    }
    let Some(g) = crate::guard::Guard::for_config(c) else {
        // A previous config's chains would keep guarding prefixes this one no longer protects.
        if crate::guard::remove(Some(&c.interface.name)).unwrap_or(false) {
            tracing::info!(interface = %c.interface.name, why = "nothing to guard", "guard-removed");
        }
        return Ok(());
    };
    g.install().map_err(fail)?;
    tracing::info!(table = %format!("inet {}", crate::guard::TABLE), interface = %g.interface, rules = %g.rules.len(), "guard");
    Ok(())
}

/// Whether some SA of this node may carry ESP as IP protocol 50 beside a UDP carrier: an IKE
/// connection without `encap` (its CHILD SAs go in UDP only behind a NAT), or HIP without
/// `encap` (RFC 7402 runs plain ESP between HIP hosts).
fn needs_raw_esp(c: &NodeConfig) -> bool {
    c.connections.iter().any(|k| !k.encap) || c.hip.as_ref().is_some_and(|h| !h.encap)
}
