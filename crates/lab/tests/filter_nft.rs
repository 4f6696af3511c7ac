//! Cross-check of the nft translation against hipsec's `LinearFilter`: two small rule sets are
//! translated (linear chain and sets), loaded into a throwaway namespace pair's h2 (filtering its
//! veth, input and output), and real TCP/UDP packets are sent from h1. Whatever arrives (UDP) or
//! connects (TCP: SYN in, SYN-ACK out, ACK in) must be what `LinearFilter` says.
//!
//! The senders and receivers are this test binary run again inside the namespaces
//! (`HLAB_SOCK_HELPER`). Needs root and nft; says SKIPPED without them (fails under CI without nft).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use filter::{Action, Direction, LinearFilter, PacketKey, parse_rules};
use lab::scenario::filter_rules::{nft, nft_clear, nft_load};
use lab::topology::{Family, Topology, TopologySpec};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

const HELPER_ENV: &str = "HLAB_SOCK_HELPER";
/// TCP client ports are the kernel's choice: no rule below constrains them.
const TCP_CLIENT_PORT: u16 = 45_000;

/// Rules over h1 = 192.0.2.1 / 2001:db8:1::1 → h2 = .2 / ::2: quick, last match, prefixes, ranges,
/// directions, IPv6, keep state; default pass.
const RULES_A: &str = "\
block in proto udp from any to any port 7000:7099
pass in proto udp from 192.0.2.0/24 port 5001 to any port 7050
pass in quick proto udp from any to 192.0.2.2 port 7090
block in proto tcp from 192.0.2.1 to any port 8001
block out proto tcp from any port 8002 to 192.0.2.0/28
block in quick proto udp from 2001:db8:1::/64 to any port 7200
pass in proto udp from 2001:db8:1::1 port 5002 to 2001:db8:1::2 port 7200
block in proto tcp from 2001:db8:1::/48 to 2001:db8:1::2 port 8100:8199
pass in proto tcp from any to any port 8150
";

/// Default block; state carries the return traffic of what `keep state` lets in.
const RULES_B: &str = "\
default block
pass in quick proto tcp from 192.0.2.0/24 to any port 8000:8009 keep state
pass in proto udp from 192.0.2.1 to any port 7000
block in proto tcp from any to any port 8005
pass in proto tcp from any to any port 8020
pass out proto tcp from any port 8020 to any
pass in proto tcp from 2001:db8:1::1 to any port 8030 keep state
pass in proto udp from any port 5003 to 2001:db8:1::2
";

#[derive(Debug, Clone, Copy, PartialEq)]
struct Probe {
    tcp: bool,
    v6: bool,
    sport: u16,
    dport: u16,
}

fn probes() -> Vec<Probe> {
    let mut v = Vec::new();
    for v6 in [false, true] {
        for (sport, dport) in [
            (5001, 7050),
            (5002, 7050),
            (5001, 7090),
            (5000, 7000),
            (5003, 7100),
            (5002, 7200),
            (5003, 7200),
            (5004, 7300),
        ] {
            v.push(Probe { tcp: false, v6, sport, dport });
        }
        for dport in [8000, 8001, 8002, 8005, 8020, 8030, 8150, 8160, 8300] {
            v.push(Probe { tcp: true, v6, sport: TCP_CLIENT_PORT, dport });
        }
    }
    v
}

fn addrs(v6: bool) -> (IpAddr, IpAddr) {
    if v6 {
        ("2001:db8:1::1".parse().unwrap(), "2001:db8:1::2".parse().unwrap())
    } else {
        ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap())
    }
}

/// What hipsec's reference evaluator says about a probe.
fn predict(rules: &str, p: Probe) -> bool {
    let mut lin = LinearFilter::new(&parse_rules(rules).unwrap());
    let (h1, h2) = addrs(p.v6);
    let proto = if p.tcp { 6 } else { 17 };
    let syn = PacketKey::new(Direction::In, h1, h2, proto, p.sport, p.dport);
    let pass = |v: filter::Verdict| v.action == Action::Pass;
    if !p.tcp {
        return pass(lin.classify(&syn));
    }
    pass(lin.classify(&syn)) && pass(lin.classify(&syn.reversed())) && pass(lin.classify(&syn))
}

/// The helper: `recv` listens on h2 (until killed, at most 20 s), printing arrivals; `send`
/// fires the probes.
#[test]
fn sock_helper() {
    let Ok(spec) = std::env::var(HELPER_ENV) else { return };
    let ps = probes();
    if spec.starts_with("recv") {
        let mut tcp = Vec::new();
        let mut udp = Vec::new();
        for v6 in [false, true] {
            let (_, h2) = addrs(v6);
            for p in ps.iter().filter(|p| p.v6 == v6) {
                if p.tcp {
                    let l = TcpListener::bind(SocketAddr::new(h2, p.dport)).unwrap();
                    l.set_nonblocking(true).unwrap();
                    tcp.push(l);
                } else if !udp.iter().any(|(_, port, f)| *port == p.dport && *f == v6) {
                    let s = UdpSocket::bind(SocketAddr::new(h2, p.dport)).unwrap();
                    s.set_nonblocking(true).unwrap();
                    udp.push((s, p.dport, v6));
                }
            }
        }
        println!("HLAB ready");
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut buf = [0u8; 64];
        while Instant::now() < deadline {
            for l in &tcp {
                if let Ok((mut c, peer)) = l.accept() {
                    let local = l.local_addr().unwrap();
                    println!("HLAB tcp {} {}", local.is_ipv6(), local.port());
                    let _ = c.write_all(b"x");
                    let _ = peer;
                }
            }
            for (s, port, v6) in &udp {
                while let Ok((n, from)) = s.recv_from(&mut buf) {
                    let _ = n;
                    println!("HLAB udp {v6} {} {port}", from.port());
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        return;
    }
    // send: UDP probes one after another (several share a source port, and two sockets
    // cannot bind it at once); TCP probes in parallel, each waiting for its connect.
    for p in ps.iter().filter(|p| !p.tcp) {
        let (h1, h2) = addrs(p.v6);
        let s = UdpSocket::bind(SocketAddr::new(h1, p.sport)).unwrap();
        for _ in 0..3 {
            let _ = s.send_to(b"probe", SocketAddr::new(h2, p.dport));
        }
    }
    let mut threads = Vec::new();
    for p in ps.into_iter().filter(|p| p.tcp) {
        threads.push(std::thread::spawn(move || {
            let (_, h2) = addrs(p.v6);
            {
                let ok = TcpStream::connect_timeout(
                    &SocketAddr::new(h2, p.dport),
                    Duration::from_millis(800),
                )
                .map(|mut c| {
                    let _ = c.set_read_timeout(Some(Duration::from_millis(800)));
                    let mut b = [0u8; 1];
                    c.read_exact(&mut b).is_ok()
                })
                .unwrap_or(false);
                println!("HLAB sent tcp {} {} {ok}", p.v6, p.dport);
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
}

fn helper(ns: &str, spec: &str) -> std::process::Child {
    let exe = std::env::current_exe().unwrap();
    Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(exe)
        .args(["sock_helper", "--exact", "--nocapture", "--test-threads=1"])
        .env(HELPER_ENV, spec)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Runs receiver and sender once; returns which probes got through.
fn observe(topo: &Topology) -> Vec<(Probe, bool)> {
    let mut recv = helper(topo.ns("h2").unwrap(), "recv");
    let mut out = std::io::BufReader::new(recv.stdout.take().unwrap());
    let mut got = String::new();
    while !got.contains("HLAB ready") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut out, &mut line).unwrap() == 0 {
            break;
        }
        got.push_str(&line);
    }
    let send = helper(topo.ns("h1").unwrap(), "send").wait_with_output().unwrap();
    // Everything sent has arrived or been dropped by now; the receiver prints as it goes.
    std::thread::sleep(Duration::from_millis(300));
    let _ = recv.kill();
    out.read_to_string(&mut got).unwrap();
    let _ = recv.wait();
    let sent = String::from_utf8_lossy(&send.stdout).to_string();
    assert!(got.contains("HLAB ready"), "receiver did not start: {got}");
    probes()
        .into_iter()
        .map(|p| {
            let arrived = if p.tcp {
                // Both ends must agree: accepted on h2, and the byte back reached h1.
                let accepted = got.contains(&format!("HLAB tcp {} {}", p.v6, p.dport));
                let done = sent.contains(&format!("HLAB sent tcp {} {} true", p.v6, p.dport));
                assert!(accepted || !done, "{p:?}: client saw data but no accept");
                accepted && done
            } else {
                got.contains(&format!("HLAB udp {} {} {}", p.v6, p.sport, p.dport))
            };
            (p, arrived)
        })
        .collect()
}

fn neighbours(topo: &Topology) {
    // Permanent neighbours: a default-block chain on the veth would drop IPv6 ND otherwise (a TUN
    // device carries none), and unresolved neighbours queue only a few packets of a burst.
    let mac = |role: &str| {
        let out = topo.exec(role, "ip", &["link", "show", "l0"]).unwrap();
        out.split_whitespace().skip_while(|w| *w != "link/ether").nth(1).unwrap().to_string()
    };
    let (m1, m2) = (mac("h1"), mac("h2"));
    for (role, peer, m) in [
        ("h1", "2001:db8:1::2", &m2),
        ("h2", "2001:db8:1::1", &m1),
        ("h1", "192.0.2.2", &m2),
        ("h2", "192.0.2.1", &m1),
    ] {
        topo.exec(
            role,
            "ip",
            &["neigh", "replace", peer, "lladdr", m, "dev", "l0", "nud", "permanent"],
        )
        .unwrap();
    }
}

#[test]
fn nft_translation_filters_like_linear_filter() {
    if std::env::var_os(HELPER_ENV).is_some() {
        return;
    }
    if !lab::sys::have_privileges() {
        println!("SKIPPED: needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN)");
        return;
    }
    if let Err(e) = nft::available() {
        assert!(std::env::var_os("CI").is_none(), "CI: {e}");
        println!("SKIPPED: {e}");
        return;
    }
    let topo = Topology::new(TopologySpec::two_hosts()).unwrap();
    assert_eq!(topo.addr("h2", Family::V4).unwrap().to_string(), "192.0.2.2");
    neighbours(&topo);
    let h2 = topo.ns("h2").unwrap().to_string();
    let dir = std::env::temp_dir().join(format!("hlab-nftcheck-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut checked = 0;
    for (name, rules) in [("A", RULES_A), ("B", RULES_B)] {
        let set = parse_rules(rules).unwrap();
        for layout in [nft::Layout::Linear, nft::Layout::Sets] {
            let t = nft::translate(&set, &["l0"], layout);
            let file = dir.join(format!("{name}-{layout:?}.nft"));
            nft_load(&h2, &t, &file, Duration::from_secs(20))
                .unwrap_or_else(|e| panic!("{name} {layout:?}: {e}\n{}", t.text));
            let seen = observe(&topo);
            println!("rules {name} {layout:?}: {} set conflicts", t.exact.conflicts);
            nft_clear(&h2);
            let mut wrong = Vec::new();
            for (p, arrived) in &seen {
                let want = predict(rules, *p);
                if *arrived != want {
                    wrong.push(format!("{p:?}: LinearFilter says {want}, nft {arrived}"));
                }
            }
            // The set layout is only claimed exact when the translation found no conflicts.
            if layout == nft::Layout::Linear || t.exact.conflicts == 0 {
                assert!(
                    wrong.is_empty(),
                    "rules {name}, {layout:?}:\n{}\n{}",
                    wrong.join("\n"),
                    t.text
                );
            }
            // Both outcomes occur: the check is not vacuous.
            assert!(seen.iter().any(|(_, a)| *a) && seen.iter().any(|(_, a)| !*a), "{seen:?}");
            checked += seen.len();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{checked} probe outcomes agree with LinearFilter");
}
