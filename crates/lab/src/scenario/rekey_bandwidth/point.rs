//! One measured point: a fresh topology, two IKEv2 gateways, the link between them shaped,
//! `clients` FTP-like clients behind gw1 sending to the sink behind gw2 for the point's
//! duration, and everything counted around that window.
//!
//! ```text
//!   c ──l0── gw1 ──l1── r ──l2── gw2 ──l3── s
//!   10.0.1.2  .1 192.0.2.1 .2 198.51.100.1 .2 10.0.2.1 .2
//! ```
//! `r` is the link between the gateways: `tc tbf` on both of its interfaces shapes each
//! direction, so the gateways' own sends leave at once and the capture on gw1's `l1` sees a
//! request when gw1 sends it and a response when it arrives (queueing on the link included).
//! A fresh topology per point: a cut session's socket cannot spill retransmissions into the
//! next point.

use super::capture::{Capture, IkeTiming, classify};
use crate::cap::CpuCap;
use crate::cpu::ProcCpu;
use crate::error::LabError;
use crate::node::ike::IKE_TUN;
use crate::node::{IkeGateway, ModeHook};
use crate::topology::{LinkSpec, NodeSpec, RouteSpec, Topology, TopologySpec, spawn_in};
use crate::traffic::TrafficBin;
use crate::traffic::sessions::{Session, SessionsResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

pub const GW1_OUTER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
pub const GW2_OUTER: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 2);
pub const SINK: &str = "10.0.2.2:5001";
/// Drop counters of the gateways that a rekey could move (all should stay 0).
const WATCHED: &[&str] =
    &["no_sa", "no_policy", "sa_expired", "replayed", "too_old", "integrity_failed"];

/// What one point asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointSpec {
    /// "hipsec" or "capped".
    pub series: String,
    pub link: String,
    pub rate_bps: Option<u64>,
    /// gw1's CPU cap, fraction of one core.
    pub cap: Option<f64>,
    pub clients: u32,
    pub size: u64,
    /// Sessions start during this...
    pub duration_ms: u64,
    /// ...and may finish within this after it.
    pub drain_ms: u64,
    pub ike_rekey_ms: u64,
    pub child_rekey_ms: u64,
    pub rand_ms: u64,
}

/// What one point measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    pub spec: PointSpec,
    pub window_s: f64,
    pub sessions: usize,
    pub cut: u64,
    pub failed: u64,
    pub session_errors: Vec<String>,
    /// Session size over the mean session delay, kbit/s (the seed's "Avg Thrput": its 10 MB
    /// over its average delay, to the digit).
    pub avg_kbit_s: Option<f64>,
    /// Mean session delay, s.
    pub avg_delay_s: Option<f64>,
    /// ESP bytes the link carried towards gw2, Mbit/s over the start window.
    pub wire_mbit_s: f64,
    /// TCP RetransSegs of the clients' and the server's namespaces.
    pub retransmissions: u64,
    pub ike_rekeys: usize,
    /// Medians, s: request to the end of the DELETE, and request to response.
    pub ike_rekey_delay_s: Option<f64>,
    pub ike_rekey_rtt_s: Option<f64>,
    pub child_rekeys: usize,
    pub child_rekeys_by_peer: usize,
    pub child_rekey_delay_s: Option<f64>,
    pub child_rekey_rtt_s: Option<f64>,
    /// The node's own median (request to new pair sending), s, over its life.
    pub node_child_rekey_delay_s: Option<f64>,
    /// Rekeys the gateway logged in the window (cross-check of the capture).
    pub logged_ike_rekeys: usize,
    pub logged_child_rekeys: usize,
    /// IKE requests the gateways retransmitted in the window (`ike.counters.resent`).
    pub ike_resent: u64,
    /// Packets dropped for lack of an SA, both gateways.
    pub no_sa: u64,
    /// Every watched drop counter that moved, both gateways.
    pub drops: BTreeMap<String, u64>,
    pub gw1_cpu_pct: f64,
    pub cap_pct: Option<f64>,
    pub cap_note: Option<String>,
    pub throttled_periods: Option<u64>,
    pub ike_setup_s: Option<f64>,
    pub ike_setup_messages: usize,
    pub timing: IkeTiming,
    pub session_list: Vec<Session>,
}

fn link(a: usize, b: usize, a4: [u8; 4], b4: [u8; 4], net6: u16) -> LinkSpec {
    let v6 = |h| Ipv6Addr::new(0x2001, 0xdb8, 0x30 + net6, 0, 0, 0, 0, h);
    LinkSpec {
        a,
        b,
        a_v4: a4.into(),
        b_v4: b4.into(),
        v4_prefix_len: 24,
        a_v6: v6(1),
        b_v6: v6(2),
        v6_prefix_len: 64,
    }
}

/// c — gw1 — r — gw2 — s.
pub fn topology_spec() -> TopologySpec {
    let n = |role: &str, forwarding| NodeSpec { role: role.into(), forwarding };
    let r = |node, dst: &str, via: [u8; 4]| RouteSpec {
        node,
        dst: dst.into(),
        via: IpAddr::V4(via.into()),
    };
    TopologySpec {
        name: "seed003".into(),
        nodes: vec![n("c", false), n("gw1", true), n("r", true), n("gw2", true), n("s", false)],
        links: vec![
            link(0, 1, [10, 0, 1, 2], [10, 0, 1, 1], 0),
            link(1, 2, GW1_OUTER.octets(), [192, 0, 2, 2], 1),
            link(2, 3, [198, 51, 100, 1], GW2_OUTER.octets(), 2),
            link(3, 4, [10, 0, 2, 1], [10, 0, 2, 2], 3),
        ],
        routes: vec![
            r(0, "default", [10, 0, 1, 1]),
            r(4, "default", [10, 0, 2, 1]),
            r(1, "198.51.100.0/24", [192, 0, 2, 2]),
            r(3, "192.0.2.0/24", [198, 51, 100, 1]),
        ],
    }
}

/// The two gateways of a point: gw2 (responder, never rekeys) first, then gw1.
pub fn gateways(p: &PointSpec) -> Vec<IkeGateway> {
    let ms = Duration::from_millis;
    let gw = |role: &str, tun, local: Ipv4Addr, remote: Ipv4Addr, ts: [&str; 2], init: bool| {
        IkeGateway {
            role: role.into(),
            tun_addr: tun,
            local: local.into(),
            remote: remote.into(),
            local_id: format!("{role}.lab"),
            remote_id: if role == "gw1" { "gw2.lab" } else { "gw1.lab" }.into(),
            local_ts: ts[0].into(),
            remote_ts: ts[1].into(),
            proposal: "aes128gcm16-prfsha256-x25519".into(),
            esp_proposal: "aes128gcm16".into(),
            // Only gw1 rekeys (the seed's "Initiator" columns); zero is "never".
            ike_rekey: if init { ms(p.ike_rekey_ms) } else { Duration::ZERO },
            child_rekey: if init { ms(p.child_rekey_ms) } else { Duration::ZERO },
            rand_time: if init { ms(p.rand_ms) } else { Duration::ZERO },
            life_time: Duration::from_secs(7200),
            initiator: init,
            ordinary_threads: init && p.cap.is_some(),
        }
    };
    vec![
        gw(
            "gw2",
            Ipv4Addr::new(10, 0, 2, 254),
            GW2_OUTER,
            GW1_OUTER,
            ["10.0.2.0/24", "10.0.1.0/24"],
            false,
        ),
        gw(
            "gw1",
            Ipv4Addr::new(10, 0, 1, 254),
            GW1_OUTER,
            GW2_OUTER,
            ["10.0.1.0/24", "10.0.2.0/24"],
            true,
        ),
    ]
}

/// tbf burst: 5 ms at the rate, at least two full-size frames, at most 64 KiB.
fn shape(topo: &Topology, rate: u64) -> Result<(), LabError> {
    let burst = (rate / 8 / 200).clamp(3200, 65_536).to_string();
    let rate = format!("{rate}bit");
    for dev in ["l1", "l2"] {
        let args = [
            "qdisc", "add", "dev", dev, "root", "tbf", "rate", &rate, "burst", &burst, "latency",
            "50ms",
        ];
        topo.exec("r", "tc", &args)?;
    }
    Ok(())
}

fn counter(topo: &Topology, role: &str, path: &str) -> Result<u64, LabError> {
    let t = topo.exec(role, "cat", &[path])?;
    t.trim().parse().map_err(|_| LabError::parse(format!("{path} in {role}"), t.trim().to_string()))
}

/// TCP RetransSegs of `role`'s namespace.
fn retrans(topo: &Topology, role: &str) -> Result<u64, LabError> {
    let snmp = topo.exec(role, "cat", &["/proc/net/snmp"])?;
    let tcp: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Tcp:")).collect();
    if let [names, values] = tcp.as_slice() {
        for (n, v) in names.split_whitespace().zip(values.split_whitespace()) {
            if n == "RetransSegs" {
                return v.parse().map_err(|_| LabError::parse("Tcp RetransSegs", v.to_string()));
            }
        }
    }
    Err(LabError::parse(format!("/proc/net/snmp in {role}"), "no Tcp RetransSegs"))
}

fn drops(st: &serde_json::Value) -> BTreeMap<String, u64> {
    WATCHED.iter().map(|k| (k.to_string(), st["drops"][k].as_u64().unwrap_or(0))).collect()
}

pub use crate::traffic::stats::median as median_of;

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn now_unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1e3)
        .unwrap_or(0.0)
}

/// Measures one point.
pub fn measure(
    p: &PointSpec,
    hook: &dyn ModeHook,
    bin: &TrafficBin,
) -> Result<PointResult, LabError> {
    let topo = Topology::new(topology_spec())?;
    for ns in topo.namespaces() {
        // No IPv6: a TUN device's router solicitations would be counted as no_policy drops.
        for k in ["all", "default"] {
            crate::sys::run_in(
                ns,
                "sysctl",
                &["-qw", &format!("net.ipv6.conf.{k}.disable_ipv6=1")],
            )?;
        }
    }
    if let Some(rate) = p.rate_bps {
        shape(&topo, rate)?;
    }
    let work = std::env::temp_dir().join(format!("hlab-rekey-{}", std::process::id()));
    std::fs::create_dir_all(&work)
        .map_err(|e| LabError::io(format!("creating {}", work.display()), e))?;
    let capture = Capture::start(topo.ns("gw1")?, "l1", &work.join("ike.pcap"))?;
    let (prog, mut args) = bin.command();
    args.extend(["sink".into(), "--listen".into(), SINK.into()]);
    let _sink = spawn_in(topo.ns("s")?, &prog, &args)?;
    let nodes = hook.start_ike(&topo, &gateways(p))?;
    let gw1 = nodes.pid("gw1")?;
    let cap = p.cap.map(|f| CpuCap::apply(gw1, f)).transpose()?;
    nodes.wait_event("gw1", "child-sa-up", Duration::from_secs(15))?;
    topo.exec("gw1", "ip", &["route", "add", "10.0.2.0/24", "dev", IKE_TUN])?;
    topo.exec("gw2", "ip", &["route", "add", "10.0.1.0/24", "dev", IKE_TUN])?;
    // The hosts' links get the tunnel's MTU: no packet needs a path-MTU round (a retransmission).
    let mtu = topo.exec("gw1", "cat", &[&format!("/sys/class/net/{IKE_TUN}/mtu")])?;
    let mtu = mtu.trim();
    topo.exec("c", "ip", &["link", "set", "l0", "mtu", mtu])?;
    topo.exec("s", "ip", &["link", "set", "l3", "mtu", mtu])?;
    let (prog, mut probe) = bin.command();
    probe.extend(
        ["probe", "--server", SINK, "--tries", "40", "--timeout-ms", "250"].map(String::from),
    );
    spawn_in(topo.ns("c")?, &prog, &probe)?.wait_output().map_err(|e| LabError::Node {
        mode: "IKEv2 gateways".into(),
        node: "gw1↔gw2 tunnel".into(),
        detail: format!(
            "no TCP connection through it: {e}; gw1 stderr:\n{}",
            nodes.log_tail("gw1", 8)
        ),
    })?;
    let st = [nodes.status("gw1")?, nodes.status("gw2")?];
    let retrans0 = retrans(&topo, "c")? + retrans(&topo, "s")?;
    let wire0 = counter(&topo, "r", "/sys/class/net/l2/statistics/tx_bytes")?;
    let cpu0 = ProcCpu::read(gw1)?.total_us();
    let throttled0 = cap.as_ref().and_then(CpuCap::throttled_periods);
    let t_start = now_unix_ms();
    let (prog, mut args) = bin.command();
    args.extend([
        "sessions".into(),
        "--server".into(),
        SINK.into(),
        "--clients".into(),
        p.clients.to_string(),
        "--size".into(),
        p.size.to_string(),
        "--duration-ms".into(),
        p.duration_ms.to_string(),
        "--drain-ms".into(),
        p.drain_ms.to_string(),
    ]);
    let clients = spawn_in(topo.ns("c")?, &prog, &args)?;
    // The link's load and gw1's CPU over the start window, while all clients are busy (the
    // drain that follows has fewer).
    std::thread::sleep(Duration::from_millis(p.duration_ms));
    let cpu1 = ProcCpu::read(gw1)?.total_us();
    let wire1 = counter(&topo, "r", "/sys/class/net/l2/statistics/tx_bytes")?;
    let busy_s = (now_unix_ms() - t_start) / 1e3;
    let out = clients.wait_output();
    let t_end = now_unix_ms();
    let retrans1 = retrans(&topo, "c")? + retrans(&topo, "s")?;
    let st1 = [nodes.status("gw1")?, nodes.status("gw2")?];
    let throttled1 = cap.as_ref().and_then(CpuCap::throttled_periods);
    nodes.check()?;
    let res: SessionsResult = serde_json::from_str(out?.trim())
        .map_err(|e| LabError::parse("sessions result", e.to_string()))?;
    let events = nodes.events("gw1")?;
    let in_window = |t: f64| t >= t_start && t <= t_end;
    let count =
        |name: &str| events.iter().filter(|e| e.event == name && in_window(e.unix_ms)).count();
    let logged_child = events
        .iter()
        .filter(|e| e.event == "child-sa-rekeyed" && in_window(e.unix_ms) && e.fields["by"] == "us")
        .count();
    // The IKE SAs the log says were replaced: every SA of the chain but the last.
    let chain: Vec<u64> = events
        .iter()
        .filter(|e| e.event == "ike-sa-up" || e.event == "ike-sa-rekeyed")
        .filter_map(|e| u64::from_str_radix(e.fields["spi_i"].as_str()?, 16).ok())
        .collect();
    let replaced = &chain[..chain.len().saturating_sub(1)];
    let node_median =
        st1[0]["ike"]["ike_sas"][0]["our_rekey_delay_median_us"].as_f64().map(|u| u / 1e6);
    let cap_note = cap.as_ref().map(CpuCap::describe);
    let cap_pct = cap.as_ref().map(CpuCap::pct);
    drop(nodes);
    drop(cap);
    let msgs = capture.stop(GW1_OUTER)?;
    let _ = std::fs::remove_dir_all(&work);
    drop(topo);
    let all = classify(&msgs, replaced);
    let win = |r: &&super::capture::Rekey| in_window(r.request_us / 1e3);
    let ike: Vec<_> = all.ike_rekeys.iter().filter(win).copied().collect();
    let child: Vec<_> = all.child_rekeys.iter().filter(win).copied().collect();
    let mut dropped = BTreeMap::new();
    for (before, after) in st.iter().zip(&st1) {
        let b = drops(before);
        for (k, v) in drops(after) {
            *dropped.entry(k.clone()).or_insert(0) +=
                v.saturating_sub(b.get(&k).copied().unwrap_or(0));
        }
    }
    let resent = |v: &[serde_json::Value; 2]| {
        v.iter().map(|s| s["ike"]["counters"]["resent"].as_u64().unwrap_or(0)).sum::<u64>()
    };
    let ike_resent = resent(&st1).saturating_sub(resent(&st));
    let window_s = (t_end - t_start) / 1e3;
    let delay: Vec<f64> = res.sessions.iter().map(|s| s.delay_ms / 1e3).collect();
    Ok(PointResult {
        spec: p.clone(),
        window_s,
        sessions: res.sessions.len(),
        cut: res.cut,
        failed: res.failed,
        session_errors: res.errors.clone(),
        // The seed's relation: 10 MB at 141.894 kbit/s is its 563.802 s average delay.
        avg_kbit_s: mean(&delay).map(|d| p.size as f64 * 8.0 / d / 1e3),
        avg_delay_s: mean(&delay),
        wire_mbit_s: wire1.saturating_sub(wire0) as f64 * 8.0 / busy_s.max(1e-3) / 1e6,
        retransmissions: retrans1.saturating_sub(retrans0),
        ike_rekeys: ike.len(),
        ike_rekey_delay_s: median_of(&ike.iter().filter_map(|r| r.delay_s()).collect::<Vec<_>>()),
        ike_rekey_rtt_s: median_of(&ike.iter().filter_map(|r| r.rtt_s()).collect::<Vec<_>>()),
        child_rekeys: child.len(),
        child_rekeys_by_peer: child.iter().filter(|r| !r.by_us).count(),
        child_rekey_delay_s: median_of(
            &child.iter().filter_map(|r| r.delay_s()).collect::<Vec<_>>(),
        ),
        child_rekey_rtt_s: median_of(&child.iter().filter_map(|r| r.rtt_s()).collect::<Vec<_>>()),
        node_child_rekey_delay_s: node_median,
        logged_ike_rekeys: count("ike-sa-rekeyed"),
        logged_child_rekeys: logged_child,
        ike_resent,
        no_sa: dropped.get("no_sa").copied().unwrap_or(0),
        drops: dropped.into_iter().filter(|(_, v)| *v > 0).collect(),
        gw1_cpu_pct: cpu1.saturating_sub(cpu0) as f64 / (busy_s.max(1e-3) * 1e6) * 100.0,
        cap_pct,
        cap_note,
        throttled_periods: throttled0.zip(throttled1).map(|(a, b)| b.saturating_sub(a)),
        ike_setup_s: all.setup_s,
        ike_setup_messages: all.setup_messages,
        timing: IkeTiming { ike_rekeys: ike, child_rekeys: child, ..all },
        session_list: res.sessions,
    })
}
