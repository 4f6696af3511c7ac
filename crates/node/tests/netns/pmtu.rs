//! Path MTU: the node answers a packet too big for the tunnel with ICMP, and the sender learns.

use super::*;

/// The tunnel MTU node `side` reported at start (its `up` log line: "... mtu=N ...").
fn node_mtu(lab: &Lab, side: usize) -> usize {
    let log = std::fs::read_to_string(lab.dir.join(format!("node{side}.log"))).unwrap();
    let at = log.find(" mtu=").unwrap() + " mtu=".len();
    log[at..].split(' ').next().unwrap().parse().unwrap()
}

/// Sends datagrams of `len` bytes on `s` (connected, PMTU discovery "do") until the kernel
/// refuses one with EMSGSIZE (it learned a smaller path MTU from an ICMP "too big"); false if
/// that does not happen within 5 s.
fn until_emsgsize(s: &std::net::UdpSocket, len: usize) -> bool {
    for _ in 0..100 {
        match s.send(&vec![0x5a; len]) {
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => return true,
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

/// Path MTU (RFC 1191, RFC 8201): with A's TUN MTU raised by hand to 1500, above what the tunnel
/// carries, a 1500-byte UDP packet with DF (and a 1500-byte IPv6 packet) is refused by the node
/// with an ICMP "fragmentation needed" / ICMPv6 "packet too big" written back to the TUN; A's
/// kernel learns the tunnel's MTU from it (route cache, EMSGSIZE on the next send).
#[test]
fn pmtu_too_big_reaches_the_sender() {
    if !can_run() {
        return;
    }
    let lab = Lab::gcm_pair();
    let mtu = node_mtu(&lab, 0);
    assert!(mtu < 1500 - 28, "tunnel mtu {mtu}");
    let a = lab.ns[0].clone();
    sh(&["ip", "-n", &a, "link", "set", "hipsec0", "mtu", "1500"]);
    sh(&["ip", "-n", &a, "addr", "add", "fd00::1/64", "dev", "hipsec0", "nodad"]);
    let (v4, v6) = lab
        .in_ns(0, || {
            let s4 = std::net::UdpSocket::bind("10.0.0.1:0").unwrap();
            s4.connect("10.0.0.2:9").unwrap();
            set_pmtudisc_do(&s4, false);
            s4.send(&[0x5a; 1500 - 28]).unwrap();
            let s6 = std::net::UdpSocket::bind("[fd00::1]:0").unwrap();
            s6.connect("[fd00::2]:9").unwrap();
            set_pmtudisc_do(&s6, true);
            s6.send(&[0x5a; 1500 - 48]).unwrap();
            (until_emsgsize(&s4, 1500 - 28), until_emsgsize(&s6, 1500 - 48))
        })
        .join()
        .unwrap();
    let st = lab.status(0);
    assert!(st["node"]["icmp_too_big"].as_u64().unwrap() >= 2, "{st}");
    assert!(v4, "A's kernel did not learn the IPv4 path MTU: {st}");
    assert!(v6, "A's kernel did not learn the IPv6 path MTU: {st}");
    let route = |dst: &str| {
        let o = Command::new("ip").args(["-n", &a, "route", "get", dst]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let want = format!("mtu {mtu}");
    for dst in ["10.0.0.2", "fd00::2"] {
        let r = route(dst);
        assert!(r.contains(&want), "route to {dst} lacks {want}: {r}");
    }
    // Nothing oversize was sealed: B saw no datagram of the probes.
    assert_eq!(lab.status(1)["node"]["net_rx"], 0);
}

/// Sets IP_MTU_DISCOVER / IPV6_MTU_DISCOVER to "do": DF set, never fragment locally, and a send
/// larger than the path MTU the kernel knows fails with EMSGSIZE.
#[allow(unsafe_code)]
fn set_pmtudisc_do(s: &std::net::UdpSocket, v6: bool) {
    use std::os::fd::AsRawFd;
    let (level, name, val) = if v6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER, libc::IPV6_PMTUDISC_DO)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, libc::IP_PMTUDISC_DO)
    };
    // SAFETY: `s` is an open socket for the call; the option value is a c_int that outlives it,
    // and the length passed is its size.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&val as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "setsockopt: {}", std::io::Error::last_os_error());
}
