//! The node as a whole: the bypass device, two lanes spread over TUN queues and sockets, and a
//! clean stop on SIGTERM and SIGINT.

use super::*;

/// BYPASS (RFC 4301 §4.4.1): with `bypass-device`, a packet the SPD bypasses leaves A in clear
/// by the veth and reaches B's kernel as it was sent; protected traffic still works beside it.
#[test]
fn bypass_goes_out_in_clear_by_the_bypass_device() {
    if !can_run() {
        return;
    }
    let mut lab = Lab::new();
    let ca = lab.config(0, Suite::Gcm, false, true);
    let t = std::fs::read_to_string(&ca).unwrap();
    let t = t
        .replacen("[control]", "bypass-device = \"hv-a\"\n\n[control]", 1)
        .replacen(
            "[[policy]]",
            "[[policy]]\nsrc = \"10.0.0.0/24\"\ndst = \"10.0.0.3/32\"\naction = \"bypass\"\n\n[[policy]]",
            1,
        );
    std::fs::write(&ca, t).unwrap();
    // B's SPD must bypass the reverse traffic too: its guard drops clear packets a protect
    // entry covers (RFC 4301 §5.2), whichever device they arrive on.
    let cb = lab.config(1, Suite::Gcm, false, true);
    let t = std::fs::read_to_string(&cb).unwrap().replacen(
        "[[policy]]",
        "[[policy]]\nsrc = \"10.0.0.3/32\"\ndst = \"10.0.0.0/24\"\naction = \"bypass\"\n\n[[policy]]",
        1,
    );
    std::fs::write(&cb, t).unwrap();
    lab.start(0, &ca);
    lab.start(1, &cb);
    // 10.0.0.3 is a plain address of B's veth: only the clear path reaches it.
    sh(&["ip", "-n", &lab.ns[1], "addr", "add", "10.0.0.3/32", "dev", "hv-b"]);
    let (tx, rx) = std::sync::mpsc::channel();
    let server = lab.in_ns(1, move || {
        let s = std::net::UdpSocket::bind("10.0.0.3:7777").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        tx.send(()).unwrap();
        let mut b = [0u8; 64];
        s.recv_from(&mut b).map(|(n, from)| (b[..n].to_vec(), from)).ok()
    });
    rx.recv().unwrap();
    lab.in_ns(0, || {
        let s = std::net::UdpSocket::bind("10.0.0.1:0").unwrap();
        for _ in 0..5 {
            s.send_to(b"bypassed-in-clear", "10.0.0.3:7777").unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .join()
    .unwrap();
    let got = server.join().unwrap();
    let st = lab.status(0);
    let (data, from) = got.unwrap_or_else(|| panic!("nothing reached 10.0.0.3: {st}"));
    assert_eq!(data, b"bypassed-in-clear");
    assert_eq!(from.ip(), Ipv4Addr::new(10, 0, 0, 1));
    assert!(st["node"]["bypass_forwarded"].as_u64().unwrap() >= 1, "{st}");
    assert_eq!(st["engine"]["protected"], 0, "{st}");
    // The protected path is unchanged beside it.
    assert!(lab.in_ns(0, || ping(Ipv4Addr::new(10, 0, 0, 2), 10)).join().unwrap(), "no ping reply");
}

/// Two lanes (`queues = 2`): a multi-queue TUN device, two UDP sockets in one SO_REUSEPORT group
/// steered by SPI, and per-lane SAs (RFC 9611). Sixteen TCP connections spread over both TUN
/// queues; every byte arrives, both lanes' inbound SAs carry traffic, and no packet reaches a
/// lane that lacks its SA (`no_sa` stays 0).
#[test]
fn two_lanes_spread_flows_over_queues_and_sockets() {
    if !can_run() {
        return;
    }
    let mut lab = Lab::new();
    let config = |side: usize| {
        let (me, peer) = if side == 0 { (1, 2) } else { (2, 1) };
        let mut t = format!(
            "[interface]\nname = \"hipsec0\"\nqueues = 2\naddresses = [\"10.0.0.{me}/24\"]\n\n\
             [network]\nlocal = \"192.0.2.{me}:4500\"\npeer = \"192.0.2.{peer}:4500\"\n\n\
             [control]\nsocket = \"{}\"\n\n",
            lab.sock(side).display()
        );
        // Inbound SPIs of lane k are k mod 2; A receives on 0x200k, B on 0x100k.
        let (out_base, in_base) = if side == 0 { (0x1000, 0x2000) } else { (0x2000, 0x1000) };
        for lane in 0..2u32 {
            for (dir, base, src, dst) in [("out", out_base, me, peer), ("in", in_base, peer, me)] {
                let spi = base + lane;
                let keys = sa_keys(Suite::Gcm, (spi % 251) as u8);
                t += &format!(
                    "[[sa]]\nname = \"{dir}\"\nlane = {lane}\ndirection = \"{dir}\"\n\
                     proto = \"esp\"\nmode = \"tunnel\"\nsrc = \"192.0.2.{src}\"\n\
                     dst = \"192.0.2.{dst}\"\nspi = {spi}\n{keys}\n"
                );
            }
        }
        t += "[[policy]]\nsrc = \"10.0.0.0/24\"\ndst = \"10.0.0.0/24\"\naction = \"protect\"\n\
              sas = [\"out\"]\n";
        let path = lab.dir.join(format!("lanes{side}.toml"));
        std::fs::write(&path, t).unwrap();
        path
    };
    let (ca, cb) = (config(0), config(1));
    lab.start(0, &ca);
    lab.start(1, &cb);
    const CONNS: u16 = 16;
    const EACH: usize = 256 << 10;
    let (tx, rx) = std::sync::mpsc::channel();
    let server = lab.in_ns(1, move || {
        let l = TcpListener::bind("10.0.0.2:5002").unwrap();
        tx.send(()).unwrap();
        let mut got = Vec::new();
        for _ in 0..CONNS {
            let (mut s, _) = l.accept().unwrap();
            got.push(std::thread::spawn(move || {
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let mut b = Vec::with_capacity(EACH);
                s.read_to_end(&mut b).unwrap();
                checksum(&b)
            }));
        }
        got.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    rx.recv().unwrap();
    let data = payload()[..EACH].to_vec();
    let want = checksum(&data);
    lab.in_ns(0, move || {
        let senders: Vec<_> = (0..CONNS)
            .map(|_| {
                let d = data.clone();
                std::thread::spawn(move || {
                    let to = "10.0.0.2:5002".parse().unwrap();
                    let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(10)).unwrap();
                    s.write_all(&d).unwrap();
                })
            })
            .collect();
        senders.into_iter().for_each(|h| h.join().unwrap());
    })
    .join()
    .unwrap();
    let sums = server.join().unwrap();
    assert_eq!(sums.len(), CONNS as usize);
    assert!(sums.iter().all(|s| *s == want), "a connection's data differs after the tunnel");
    for side in 0..2 {
        let st = lab.status(side);
        assert_eq!(st["drops"]["no_sa"], 0, "a packet reached a lane without its SA: {st}");
        let workers = st["workers"].as_array().unwrap();
        let lanes: Vec<u64> = workers.iter().map(|w| w["lane"].as_u64().unwrap()).collect();
        assert_eq!(lanes, [0, 1], "{st}");
        let sas = st["sas"].as_array().unwrap();
        for lane in 0..2u64 {
            let busy = sas.iter().any(|s| {
                s["direction"] == "in" && s["lane"] == lane && s["packets"].as_u64().unwrap() > 10
            });
            assert!(busy, "side {side}: lane {lane}'s inbound SA carried nothing: {st}");
        }
    }
}

/// SIGTERM and SIGINT each stop the node cleanly: exit status 0, the TUN device and the control
/// socket are gone, and the log's last event says so.
#[test]
fn sigterm_and_sigint_remove_the_tun_device() {
    if !can_run() {
        return;
    }
    for sig in ["-TERM", "-INT"] {
        let mut lab = Lab::new();
        let ca = lab.config(0, Suite::Gcm, false, true);
        lab.start(0, &ca);
        let has_tun = |ns: &str| {
            Command::new("ip")
                .args(["-n", ns, "link", "show", "hipsec0"])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        assert!(has_tun(&lab.ns[0]));
        let mut child = lab.nodes.pop().unwrap();
        sh(&["kill", sig, &child.id().to_string()]);
        let mut status = None;
        for _ in 0..50 {
            if let Ok(Some(s)) = child.try_wait() {
                status = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let status = status.unwrap_or_else(|| {
            let _ = child.kill();
            panic!("node did not stop on SIG{}", &sig[1..])
        });
        assert!(status.success(), "SIG{}: exit {status}", &sig[1..]);
        assert!(!has_tun(&lab.ns[0]), "hipsec0 still there after SIG{}", &sig[1..]);
        assert!(!lab.sock(0).exists(), "control socket left behind");
        let log = std::fs::read_to_string(lab.dir.join("node0.log")).unwrap();
        assert!(log.lines().last().is_some_and(|l| l.contains("stopped")), "{log}");
    }
}
