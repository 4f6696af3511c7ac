//! What must not get through: no SA (fail closed), a bad config, IKE markers and keepalives
//! (punted, counted), the filter after decapsulation, a replayed capture.

use super::*;

/// Fail closed: without an outbound SA (and so without a policy) nothing leaves A.
#[test]
fn missing_outbound_sa_sends_nothing() {
    if !can_run() {
        return;
    }
    let mut lab = Lab::new();
    let (ca, cb) =
        (lab.config(0, Suite::Gcm, false, false), lab.config(1, Suite::Gcm, false, true));
    lab.start(0, &ca);
    lab.start(1, &cb);
    assert!(
        !lab.in_ns(0, || ping(Ipv4Addr::new(10, 0, 0, 2), 3)).join().unwrap(),
        "ping got through"
    );
    let sa = lab.status(0);
    assert!(sa["node"]["tun_rx"].as_u64().unwrap() >= 3, "{sa}");
    let refused =
        sa["drops"]["no_policy"].as_u64().unwrap() + sa["drops"]["no_sa"].as_u64().unwrap();
    assert!(refused >= 3, "{sa}");
    assert_eq!(sa["node"]["net_tx"], 0, "{sa}");
    let sb = lab.status(1);
    assert_eq!(sb["node"]["net_rx"], 0, "peer received something: {sb}");
}

/// A bad config stops the node before it makes a device; the error names file, line, field.
#[test]
fn bad_config_refuses_to_start() {
    let dir = std::env::temp_dir().join(format!("hipsec-t-{}-badcfg", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    let text = include_str!("../../../../docs/node-example.toml")
        .replace("mode = \"tunnel\"", "mode = \"tunel\"");
    std::fs::write(&path, text).unwrap();
    let out = Command::new(NODE).arg("-c").arg(&path).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("bad.toml:") && err.contains("\"mode\""), "{err}");
}

/// RFC 3948: a datagram opening with the 4-byte non-ESP marker is IKE (punted to the control thread),
/// a lone 0xff byte is a NAT-keepalive (ignored and counted); neither reaches the engine.
#[test]
fn ike_marker_and_keepalive_are_counted() {
    if !can_run() {
        return;
    }
    let lab = Lab::gcm_pair();
    lab.in_ns(0, || {
        let s = std::net::UdpSocket::bind("192.0.2.1:0").unwrap();
        s.send_to(&[0, 0, 0, 0, 0x21, 0x20, 0x22, 0x08], "192.0.2.2:4500").unwrap();
        s.send_to(&[0xff], "192.0.2.2:4500").unwrap();
        // A ping after them: once it is answered, B has read both datagrams before it.
        assert!(ping(Ipv4Addr::new(10, 0, 0, 2), 10), "no ping reply");
    })
    .join()
    .unwrap();
    let sb = lab.status(1);
    // The IKE message goes to the control thread, which has no IKE daemon yet.
    assert_eq!(sb["node"]["punted"], 1, "{sb}");
    assert_eq!(sb["node"]["ike_dropped"], 0, "{sb}");
    assert_eq!(sb["node"]["keepalives"], 1, "{sb}");
    assert_eq!(sb["drops"]["malformed"], 0, "{sb}");
}

/// B's filter blocks TCP to port 5002 after decapsulation and passes 5001; the block is
/// counted per rule in `hipsec status`; a bad rule file given to `reload-filter` keeps the rules.
#[test]
fn filter_blocks_after_decapsulation_and_reloads() {
    if !can_run() {
        return;
    }
    let mut lab = Lab::new();
    let rules = lab.dir.join("rules.txt");
    std::fs::write(&rules, "# test rules\nblock in quick proto tcp from any to any port 5002\n")
        .unwrap();
    let ca = lab.config(0, Suite::Gcm, false, true);
    let cb = lab.config(1, Suite::Gcm, false, true);
    let mut text = std::fs::read_to_string(&cb).unwrap();
    text += &format!("\n[filter]\nrules = \"{}\"\nengine = \"classifier\"\n", rules.display());
    std::fs::write(&cb, text).unwrap();
    lab.start(0, &ca);
    lab.start(1, &cb);
    let listeners = lab.in_ns(1, || {
        let a = TcpListener::bind("10.0.0.2:5001").unwrap();
        let b = TcpListener::bind("10.0.0.2:5002").unwrap();
        (a, b)
    });
    let (_a, _b) = listeners.join().unwrap();
    let tries = lab
        .in_ns(0, || {
            let t = |port: u16| {
                let addr = std::net::SocketAddr::from(([10, 0, 0, 2], port));
                TcpStream::connect_timeout(&addr, Duration::from_millis(700)).is_ok()
            };
            (t(5001), t(5002))
        })
        .join()
        .unwrap();
    assert_eq!(tries, (true, false), "port 5001 should pass, 5002 be blocked");
    let sb = lab.status(1);
    assert!(sb["filter"]["blocked"].as_u64().unwrap() >= 1, "{sb}");
    assert!(sb["filter"]["rule_hits"][0].as_u64().unwrap() >= 1, "{sb}");
    assert!(sb["node"]["filter_blocked"].as_u64().unwrap() >= 1, "{sb}");

    std::fs::write(&rules, "block in proto tcp from any to any port http\n").unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&node::command(&lab.sock(1), "reload-filter").unwrap()).unwrap();
    assert_eq!(r["reloaded"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("line 1"), "{r}");
    std::fs::write(&rules, "pass all\n").unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&node::command(&lab.sock(1), "reload-filter").unwrap()).unwrap();
    assert_eq!(r["reloaded"], true, "{r}");
    let ok = lab
        .in_ns(0, || {
            let addr = std::net::SocketAddr::from(([10, 0, 0, 2], 5002));
            TcpStream::connect_timeout(&addr, Duration::from_millis(700)).is_ok()
        })
        .join()
        .unwrap();
    assert!(ok, "after reload to 'pass all', port 5002 passes");
}

/// Opens an AF_PACKET socket in the calling thread's namespace that sees every packet of
/// every interface, in both directions, from its IP header on (SOCK_DGRAM).
fn sniffer() -> std::net::UdpSocket {
    use socket2::{Domain, Protocol, Socket, Type};
    // ETH_P_ALL: ETH_P_IP sockets see only received packets, not the ones sent.
    let eth_p_all = (libc::ETH_P_ALL as u16).to_be() as i32;
    let s = Socket::new(Domain::PACKET, Type::DGRAM, Some(Protocol::from(eth_p_all))).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    std::net::UdpSocket::from(s)
}

/// The UDP payload of the first ESP-in-UDP datagram (RFC 3948: non-zero SPI, longer than a
/// keepalive) from 192.0.2.1 to 192.0.2.2:4500 that `s` sees within `tries` read timeouts.
fn sniff_esp(s: &std::net::UdpSocket, tries: usize) -> Option<Vec<u8>> {
    let mut buf = [0u8; 2048];
    for _ in 0..tries {
        let Ok(n) = s.recv(&mut buf) else { continue };
        let p = &buf[..n];
        let ihl = (p[0] & 0x0f) as usize * 4;
        if n < ihl + 8 + 16 || p[0] >> 4 != 4 || p[9] != 17 {
            continue;
        }
        let (src, dst, udp) = (&p[12..16], &p[16..20], &p[ihl..]);
        if src == [192, 0, 2, 1] && dst == [192, 0, 2, 2] && udp[2..4] == 4500u16.to_be_bytes() {
            let esp = &udp[8..];
            if esp[..4] != [0, 0, 0, 0] {
                return Some(esp.to_vec());
            }
        }
    }
    None
}

/// Reads B's status until `f` holds (up to 5 s); returns the last status.
fn wait_status(
    lab: &Lab,
    side: usize,
    f: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let mut st = lab.status(side);
    for _ in 0..100 {
        if f(&st) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        st = lab.status(side);
    }
    st
}

fn replay_drops(st: &serde_json::Value) -> u64 {
    st["drops"]["replayed"].as_u64().unwrap() + st["drops"]["too_old"].as_u64().unwrap()
}

/// Replay (RFC 4303 §3.4.3): an ESP-in-UDP datagram captured on the veth and sent again from
/// A's namespace with a plain UDP socket is dropped by B and counted; nothing reaches B's TUN.
#[test]
fn captured_esp_reinjected_is_dropped_as_replay() {
    if !can_run() {
        return;
    }
    let lab = Lab::gcm_pair();
    let esp = lab
        .in_ns(0, || {
            let s = sniffer();
            assert!(ping(Ipv4Addr::new(10, 0, 0, 2), 10), "no ping reply");
            sniff_esp(&s, 50)
        })
        .join()
        .unwrap()
        .expect("no ESP-in-UDP datagram seen on A's veth");
    let before = lab.status(1);
    assert!(before["node"]["tun_tx"].as_u64().unwrap() >= 1, "{before}");
    lab.in_ns(0, move || {
        let s = std::net::UdpSocket::bind("192.0.2.1:0").unwrap();
        s.send_to(&esp, "192.0.2.2:4500").unwrap();
    })
    .join()
    .unwrap();
    let after = wait_status(&lab, 1, |st| replay_drops(st) > replay_drops(&before));
    assert_eq!(replay_drops(&after), replay_drops(&before) + 1, "{after}");
    assert_eq!(after["node"]["tun_tx"], before["node"]["tun_tx"], "replay delivered: {after}");
    assert_eq!(after["drops"]["integrity_failed"], 0, "{after}");
}
