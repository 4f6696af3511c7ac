//! The node-backed mode hook on the seed-004 topology: ESP (AES-128-GCM) between h1 and h2 by two
//! hipsec node pairs, one TCP_STREAM (IPv4) and one UDP_RR (IPv6) through the tunnels, the nodes'
//! CPU charged, and nothing left behind (namespaces, processes, config directory).
//!
//! Needs root and the `hipsec` binary (target/<profile>/hipsec, or HIPSEC_BIN); says SKIPPED and
//! passes without them.

mod common;
use common::hipsec_bin;
use lab::scenario::{EspSuite, Mode, ModeHook, NodeHook};
use lab::topology::{Family, Topology, TopologySpec, list_namespaces};
use lab::traffic::runner::{CONTROL_PORT, RunParams, Target, TrafficServer, measure};
use lab::traffic::{Request, TestKind, TrafficBin};
use std::net::SocketAddr;

fn cpu_of(pids: &[u32]) -> u64 {
    pids.iter().map(|&p| lab::cpu::ProcCpu::read(p).map(|c| c.total_us()).unwrap_or(0)).sum()
}

fn node_dirs() -> Vec<String> {
    let prefix = format!("hlab-node-{}-", std::process::id());
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn esp_gcm_through_hipsec_nodes_on_seed004() {
    if !lab::sys::have_privileges() {
        println!("SKIPPED: needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN)");
        return;
    }
    let Some(hipsec) = hipsec_bin() else {
        // In CI the test command builds the binary first: a missing one is a failure there.
        assert!(std::env::var_os("CI").is_none(), "CI: no hipsec binary beside the test");
        println!("SKIPPED: needs the hipsec binary (cargo build -p hipsec, or set HIPSEC_BIN)");
        return;
    };
    let bin = TrafficBin::Path(env!("CARGO_BIN_EXE_hipsec-traffic").into());
    let topo = Topology::new(TopologySpec::seed004()).expect("seed004 topology");
    let names = topo.namespaces().to_vec();
    let hook = NodeHook::new(&hipsec);
    let guard = hook.setup(Mode::Esp(EspSuite::Aes128Gcm), &topo).expect("ESP mode up");
    let pids = guard.pids();
    assert_eq!(pids.len(), 4, "one node per host and family: {pids:?}");
    let t4 = guard.target(Family::V4).expect("IPv4 target");
    let t6 = guard.target(Family::V6).expect("IPv6 target");
    assert_eq!(t4.to_string(), "10.99.0.2");
    assert_eq!(t6.to_string(), "fd00:99::2");
    // The target is reached through the node's TUN device, not the veth.
    let route = topo.exec("h1", "ip", &["route", "get", "10.99.0.2"]).expect("ip route get");
    assert!(route.contains("dev hlab4"), "{route}");
    // Control on h2's link addresses (as the scenario does), data through the tunnels.
    let ctl: Vec<SocketAddr> = [Family::V4, Family::V6]
        .iter()
        .map(|&f| SocketAddr::new(topo.addr("h2", f).expect("h2 address"), CONTROL_PORT))
        .collect();
    let server = TrafficServer::start(&topo, "h2", &ctl, &bin).expect("traffic server");
    let to4 = Target { control: ctl[0], data: Some(t4) };
    let to6 = Target { control: ctl[1], data: Some(t6) };
    let params = RunParams { warmup_ms: 100, duration_ms: 400, repetitions: 1 };
    let before = cpu_of(&pids);
    let stream = Request { test: TestKind::TcpStream, msg_size: 16384, resp_size: 1 };
    let (s, _) = measure(&topo, "h1", to4, stream, &params, &bin, &pids, &mut |_| {})
        .expect("TCP_STREAM through ESP");
    let rr = Request { test: TestKind::UdpRr, msg_size: 1, resp_size: 1 };
    let (r, _) = measure(&topo, "h1", to6, rr, &params, &bin, &pids, &mut |_| {})
        .expect("UDP_RR through ESP over IPv6");
    guard.check().expect("nodes still alive");
    let after = cpu_of(&pids);
    assert!(s[0].value > 0.0 && s[0].result.server.bytes > 0, "TCP_STREAM: {:?}", s[0].result);
    assert!(r[0].value > 0.0 && r[0].result.transactions > 0, "UDP_RR: {:?}", r[0].result);
    assert!(after > before, "node CPU did not rise: {before} → {after} µs");
    assert!(s[0].watched_cpu_us > 0, "TCP_STREAM charged no node CPU");
    println!(
        "TCP_STREAM {:.0} Mbit/s, UDP_RR {:.0} trans/s, nodes {} µs CPU",
        s[0].value,
        r[0].value,
        after - before
    );
    drop(server);
    drop(guard);
    for p in &pids {
        assert!(!std::path::Path::new(&format!("/proc/{p}")).exists(), "node {p} still running");
    }
    assert!(node_dirs().is_empty(), "config directories left: {:?}", node_dirs());
    drop(topo);
    let left: Vec<String> =
        list_namespaces().unwrap_or_default().into_iter().filter(|n| names.contains(n)).collect();
    assert!(left.is_empty(), "namespaces left: {left:?}");
}
