//! The model: CPU seconds per second of each part of the work, added up.
//!
//! Assumptions, which the validation run in the lab checks (`hipsec lab validate`):
//! - Costs are linear: a packet costs a fixed part plus a part per byte (both in the suites'
//!   seal and open and in the carriers' I/O, where GSO/GRO make big packets' syscalls cost per
//!   byte rather than per packet) plus, in the carriers' I/O, what a packet costs beyond that
//!   at its tunnel's rate (`load`: a node at part load pays more per packet); a handshake
//!   costs the responder's CPU at the workload's rate of handshakes, and another event (rekey,
//!   binding update) its measured CPU time. Nothing contends (no lock, memory bandwidth or
//!   cache effects beyond those in the measured costs: the profile's per-packet figures come
//!   from the node's own data path with many SAs).
//! - Sealed traffic costs the clear side's receive (TUN), the filter, the seal and the carrier's
//!   send; opened traffic the carrier's receive, the open, the filter and the TUN send. One-way
//!   traffic is only sealed (the reverse direction's ACKs are not counted).
//! - Work spreads over cores perfectly, except that one SA's packets stay on one lane, so a
//!   single tunnel can use one core at most.
//! - The wire carries the inner packet plus the suite's and the carrier's overhead.

use crate::answer::{Answer, Component, LinkCheck};
use crate::error::SizingError;
use crate::profile::{IoCost, Profile, SuiteCost};
use crate::workload::Workload;

fn suite<'a>(p: &'a Profile, w: &Workload) -> Result<&'a SuiteCost, SizingError> {
    p.suites.get(&w.suite).ok_or_else(|| {
        let known: Vec<&str> = p.suites.keys().map(String::as_str).collect();
        SizingError::field(
            "workload.suite",
            format!("`{}` not in the profile ({known:?})", w.suite),
        )
    })
}

fn carrier<'a>(p: &'a Profile, name: &str, field: &str) -> Result<&'a IoCost, SizingError> {
    p.carriers.get(name).ok_or_else(|| {
        let known: Vec<&str> = p.carriers.keys().map(String::as_str).collect();
        SizingError::field(field, format!("`{name}` not in the profile ({known:?})"))
    })
}

/// The share of its saturated rate a tunnel of `suite` over `carrier` runs at when it carries
/// `gbps` of `bytes`-byte packets through `filter_ns` of filter rules (beyond the filter's
/// cost with none, which calibration's run paid too): calibration's saturated run
/// (aes128gcm, the carrier's `full` point) scaled by what a bit costs in each, the engine of both
/// ends, the carrier's I/O both ways and the filter in both nodes. 1 (saturated) when the
/// profile has no such run.
pub fn load_share(
    p: &Profile,
    suite: &SuiteCost,
    carrier: &IoCost,
    bytes: f64,
    filter_ns: f64,
    gbps: f64,
) -> f64 {
    let (Some(full), Some(reference)) = (carrier.by_rate.get("full"), p.suites.get("aes128gcm"))
    else {
        return 1.0;
    };
    let per_bit = |s: &SuiteCost, b: f64, filter: f64| {
        (s.seal.ns(b) + s.open.ns(b) + 2.0 * (carrier.rx_ns + carrier.per_byte_ns * b + filter))
            / (8.0 * b)
    };
    let full_bytes = full.gbps * 1e9 / (8.0 * full.packets_per_s.max(1.0));
    let (here, there) =
        (per_bit(suite, bytes.max(1.0), filter_ns), per_bit(reference, full_bytes, 0.0));
    if !(full.gbps > 0.0 && here > 0.0 && there > 0.0 && gbps.is_finite()) {
        return 1.0;
    }
    let saturated = full.gbps * there / here;
    (gbps / saturated).clamp(0.0, 1.0)
}

/// Sizes `w` on the machine `p` describes.
pub fn size(p: &Profile, w: &Workload) -> Result<Answer, SizingError> {
    p.validate()?;
    w.validate()?;
    let s = suite(p, w)?;
    let io = carrier(p, &w.carrier, "workload.carrier")?;
    let tun = carrier(p, "tun", "profile.carriers")?;
    let shares = w.packets.shares();
    let mean = w.packets.mean();
    // Packets per second in each direction that carries traffic.
    let pps = w.throughput_gbps * 1e9 / (8.0 * mean);
    let dirs = if w.bidirectional { 2.0 } else { 1.0 };
    let avg = |f: &dyn Fn(f64) -> f64| shares.iter().map(|&(b, sh)| sh * f(b)).sum::<f64>();
    let seal_ns = avg(&|b| s.seal.ns(b));
    let open_ns = avg(&|b| s.open.ns(b));
    let rules_ns = p.filter.per_rule_ns * w.filter_rules as f64;
    let filter_ns = p.filter.per_packet_ns + rules_ns;
    // I/O per packet: fixed part + per byte of the mix's mean packet + what part load
    // adds at one tunnel's rate (`load`).
    let per_tunnel_gbps = w.throughput_gbps / w.tunnels.max(1) as f64;
    let share = load_share(p, s, io, mean, rules_ns, per_tunnel_gbps);
    let (tun_b, io_b) =
        (tun.per_byte_ns * mean + tun.load_ns(share), io.per_byte_ns * mean + io.load_ns(share));
    let mut parts = vec![
        Component::new(format!("seal ({})", w.suite), pps * seal_ns / 1e9),
        Component::new("clear-side I/O (TUN)", pps * (tun.rx_ns + tun_b) / 1e9),
        Component::new(
            format!("protected-side I/O ({})", w.carrier),
            pps * (io.tx_ns + io_b) / 1e9,
        ),
        Component::new("filter", dirs * pps * filter_ns / 1e9),
    ];
    if w.bidirectional {
        parts.push(Component::new(format!("open ({})", w.suite), pps * open_ns / 1e9));
        parts[1].cores += pps * (tun.tx_ns + tun_b) / 1e9;
        parts[2].cores += pps * (io.rx_ns + io_b) / 1e9;
    }
    let per_s = |interval: Option<f64>| interval.map_or(0.0, |i| w.tunnels as f64 / i);
    parts.push(Component::new(
        "IKE handshakes",
        w.handshakes_per_s * p.ike.setup_us_at(w.handshakes_per_s) / 1e6,
    ));
    parts.push(Component::new(
        "CHILD_SA rekeys",
        per_s(w.child_rekey_s) * p.ike.child_rekey_us / 1e6,
    ));
    parts.push(Component::new("IKE_SA rekeys", per_s(w.ike_rekey_s) * p.ike.ike_rekey_us / 1e6));
    let puzzle_us = 2f64.powi(i32::from(w.hip_puzzle_k)) * p.hip.puzzle_try_ns / 1e3;
    parts.push(Component::new(
        "HIP base exchanges",
        (w.hip_bex_per_s * p.hip.responder_us
            + w.hip_initiated_per_s * (p.hip.initiator_us + puzzle_us))
            / 1e6,
    ));
    parts.push(Component::new(
        "binding updates",
        w.binding_updates_per_s * p.mip6.binding_update_us / 1e6,
    ));
    parts.retain(|c| c.cores > 0.0);
    let total: f64 = parts.iter().map(|c| c.cores).sum();
    for c in &mut parts {
        c.share = if total > 0.0 { c.cores / total } else { 0.0 };
    }
    parts.sort_by(|a, b| b.cores.total_cmp(&a.cores));

    // One tunnel's packets stay on one lane: what one core carries of this mix, one way,
    // as a saturated node pays.
    let saturated_io =
        tun.per_byte_ns * mean + tun.load_ns(1.0) + io.per_byte_ns * mean + io.load_ns(1.0);
    let per_packet_one_way = seal_ns + tun.rx_ns + io.tx_ns + saturated_io + filter_ns;
    let lane_gbps = if per_packet_one_way > 0.0 {
        Some(1e9 / per_packet_one_way * mean * 8.0 / 1e9)
    } else {
        None
    };
    let wire_bytes = mean + s.overhead_bytes + io.overhead_bytes;
    let wire_gbps = w.throughput_gbps * wire_bytes / mean;
    let link = w.link_gbps.map(|l| LinkCheck {
        link_gbps: l,
        wire_gbps,
        bound: wire_gbps > l,
        max_inner_gbps: l * mean / wire_bytes,
    });
    let memory_bytes =
        2.0 * w.tunnels as f64 * p.bytes_per_sa + w.bindings as f64 * p.mip6.bytes_per_binding;
    let cores_needed = (total / w.target_utilisation).ceil().max(1.0) as u32;
    let per_tunnel = w.throughput_gbps / (w.tunnels.max(1) as f64);
    Ok(Answer::new(
        w,
        p,
        parts,
        total,
        cores_needed,
        link,
        lane_gbps,
        per_tunnel,
        memory_bytes,
        pps,
    ))
}
