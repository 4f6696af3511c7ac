//! Install rate through the in-process control interface, and resident memory per SA.

use super::peers::{INNER_LOCAL, LOCAL, host, inner_addr, params, peer_addr};
use ipsec::spd::Selector;
use ipsec::{Engine, PolicyId, SaParams};
use node::datapath::mailbox::{self, Event, OutKey, PolicyAction, PolicySpec, Update};
use node::datapath::tables::{InTables, OutTables};
use node::keying::plane::{ControlPlane, EndpointDefaults, SaSpec, WorkerPort};
use std::net::IpAddr;
use std::time::{Duration, Instant};

fn rss_bytes() -> f64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|x| x.parse::<f64>().ok()))
        .unwrap_or(f64::NAN);
    pages * 4096.0
}

/// A lane without I/O: serves its mailbox as a worker does between batches.
fn lane(mb: mailbox::Mailbox, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let provider = node::datapath::cipher::provider();
    let (mut out_e, mut in_e) = (Engine::new(provider), Engine::new(provider));
    let (mut out_t, mut in_t) = (OutTables::default(), InTables::default());
    let mut peer = None;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let Some(env) = mb.next() else {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        };
        let mut errors = Vec::new();
        for (k, u) in env.updates.into_iter().enumerate() {
            let r = match u {
                Update::AddInbound { .. } | Update::DelInbound { .. } => in_t.apply(&mut in_e, u),
                Update::SetPolicy { id, spec } => out_t
                    .apply(&mut out_e, Update::SetPolicy { id, spec: spec.clone() }, &mut peer)
                    .and_then(|_| in_t.apply(&mut in_e, Update::SetPolicy { id, spec })),
                other => out_t.apply(&mut out_e, other, &mut peer),
            };
            if let Err(e) = r {
                errors.push((k, e));
            }
        }
        mb.emit(Event::Applied { ticket: env.ticket, worker: mb.worker, errors });
    }
    // Keeps the engines alive until here, so the resident set counts them.
    drop((out_e, in_e, out_t, in_t));
}

/// SAs per second through the control interface, and bytes of memory per SA.
pub(crate) fn install(sas: usize) -> Result<(f64, f64), String> {
    let peers = (sas / 2).max(1);
    let (ev_tx, ev_rx) = std::sync::mpsc::channel();
    let (mb, port) = mailbox::mailbox(0, ev_tx).map_err(|e| e.to_string())?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = std::sync::Arc::clone(&stop);
    let th = std::thread::spawn(move || lane(mb, s2));
    let mut plane = ControlPlane::new(
        vec![WorkerPort { lane: 0, out: true, inb: true, port }],
        ev_rx,
        Instant::now(),
        EndpointDefaults { udp_port: Some(4500), peer: None },
    );
    let spec = |p: SaParams| SaSpec {
        params: p,
        lane: 0,
        endpoint: None,
        beet: false,
        raw_ip: false,
        name: None,
    };
    let ins: Vec<SaSpec> = (0..peers)
        .map(|p| {
            spec(params(0x2000_0000 + p as u32, peer_addr(p), LOCAL, crypto::AeadAlg::Aes128Gcm))
        })
        .collect();
    let outs: Vec<SaSpec> = (0..peers)
        .map(|p| {
            spec(params(0x1000_0000 + p as u32, LOCAL, peer_addr(p), crypto::AeadAlg::Aes128Gcm))
        })
        .collect();
    let policies: Vec<(PolicyId, PolicySpec)> = (0..peers)
        .map(|p| {
            let key =
                OutKey { spi: 0x1000_0000 + p as u32, proto: 50, dst: IpAddr::V4(peer_addr(p)) };
            let selector = Selector {
                src: host(INNER_LOCAL),
                dst: host(inner_addr(p)),
                proto: None,
                src_ports: None,
                dst_ports: None,
            };
            let spec = PolicySpec {
                selector,
                action: PolicyAction::Protect(vec![key]),
                in_sas: vec![(0x2000_0000 + p as u32, 50)],
                priority: 1000,
            };
            (p as PolicyId + 1, spec)
        })
        .collect();
    let rss0 = rss_bytes();
    let t = Instant::now();
    plane.install(ins, outs, false).map_err(|e| e.to_string())?;
    plane.set_policies(policies).map_err(|e| e.to_string())?;
    let secs = t.elapsed().as_secs_f64();
    let rss1 = rss_bytes();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = th.join();
    let n = (2 * peers) as f64;
    Ok((n / secs, (rss1 - rss0) / n))
}
