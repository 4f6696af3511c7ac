//! Topology set-up and teardown: nothing is left in `ip netns list` after drop, after a panic in
//! the guard's scope, and stale namespaces of a dead run are removed.

use lab::topology::{Family, Topology, TopologySpec, list_namespaces};

fn skip() -> bool {
    if !lab::sys::have_privileges() {
        println!("SKIPPED: needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN)");
        return true;
    }
    false
}

fn ours(names: &[String]) -> Vec<String> {
    let all = list_namespaces().unwrap_or_default();
    names.iter().filter(|n| all.contains(n)).cloned().collect()
}

#[test]
fn seed004_builds_and_leaves_nothing_behind() {
    if skip() {
        return;
    }
    let topo = Topology::new(TopologySpec::seed004()).expect("build seed004");
    let names = topo.namespaces().to_vec();
    assert_eq!(names.len(), 4);
    assert_eq!(ours(&names), names, "all four namespaces exist");
    assert_eq!(topo.addr("h2", Family::V4).expect("h2 v4").to_string(), "203.0.113.2");
    assert_eq!(topo.addr("h1", Family::V6).expect("h1 v6").to_string(), "2001:db8:1::1");
    let routes = topo.exec("r1", "ip", &["-6", "route"]).expect("routes");
    assert!(routes.contains("2001:db8:3::/64 via 2001:db8:2::2"), "{routes}");
    let fwd = topo.exec("r2", "sysctl", &["-n", "net.ipv4.ip_forward"]).expect("sysctl");
    assert_eq!(fwd.trim(), "1");
    let links = topo.exec("r1", "ip", &["-o", "link"]).expect("links");
    assert!(links.contains("l0@") && links.contains("l1@"), "{links}");
    drop(topo);
    assert!(ours(&names).is_empty(), "namespaces left: {:?}", ours(&names));
}

#[test]
fn rate_limit_installs_and_removes_tbf() {
    if skip() {
        return;
    }
    let mut topo = Topology::new(TopologySpec::two_hosts()).expect("build two hosts");
    topo.set_rate(Some(lab::topology::parse_rate("100mbit").expect("rate"))).expect("tbf");
    let q = topo.exec("h1", "tc", &["qdisc", "show", "dev", "l0"]).expect("tc");
    assert!(q.contains("tbf") && q.contains("100Mbit"), "{q}");
    topo.set_rate(None).expect("remove tbf");
    let q = topo.exec("h2", "tc", &["qdisc", "show", "dev", "l0"]).expect("tc");
    assert!(!q.contains("tbf"), "{q}");
}

#[test]
fn panic_inside_scope_still_tears_down() {
    if skip() {
        return;
    }
    let names = std::sync::Mutex::new(Vec::new());
    let result = std::panic::catch_unwind(|| {
        let topo = Topology::new(TopologySpec::two_hosts()).expect("build two hosts");
        if let Ok(mut n) = names.lock() {
            *n = topo.namespaces().to_vec();
        }
        panic!("boom inside the topology's scope");
    });
    assert!(result.is_err());
    let names = names.into_inner().unwrap_or_default();
    assert_eq!(names.len(), 2);
    assert!(ours(&names).is_empty(), "namespaces left after panic: {:?}", ours(&names));
}

#[test]
fn stale_namespace_of_dead_run_is_removed() {
    if skip() {
        return;
    }
    // pid 4_000_000_000 exceeds pid_max, so its owner is certainly gone.
    let stale = "hlab-4000000000-0-h1".to_string();
    let _ = std::process::Command::new("ip").args(["netns", "add", &stale]).status();
    assert_eq!(ours(std::slice::from_ref(&stale)).len(), 1);
    lab::topology::cleanup_stale().expect("cleanup");
    assert!(ours(std::slice::from_ref(&stale)).is_empty());
}

#[test]
fn rate_parser_names_the_option() {
    assert_eq!(lab::topology::parse_rate("100mbit").ok(), Some(100_000_000));
    assert_eq!(lab::topology::parse_rate("1Gbit").ok(), Some(1_000_000_000));
    let err = lab::topology::parse_rate("fast").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("--link"), "{err}");
    assert!(lab::topology::parse_rate("10furlongs").is_err());
    assert!(lab::topology::parse_rate("0mbit").is_err());
}
