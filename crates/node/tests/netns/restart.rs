//! A node restarted under traffic, with a default route in both namespaces (a gateway's normal
//! table): while its TUN device is gone, the guard (`node::guard`) must keep the protected
//! traffic off that route. RFC 4301 §4.4.1: "the SPD must be consulted during the processing of
//! all traffic" — with the process gone, the kernel's table stands in for it.

use super::*;
use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Datagrams a second of the stream through the tunnel.
const RATE: u32 = 2000;
const PORT: u16 = 5002;

/// What B's two receivers saw: through its TUN device, and in clear on its veth.
struct Received {
    /// Sequence numbers of the stream, and when each came.
    tunnel: Vec<(u32, Instant)>,
    clear: u64,
}

/// A numbered UDP stream A → 10.0.0.2 at [`RATE`], each datagram carrying [`MARKER`], until
/// `stop`; returns how many sends failed (the guard refuses them with EPERM).
fn stream(lab: &Lab, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<(u32, u32)> {
    lab.in_ns(0, move || {
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        let started = Instant::now();
        let (mut seq, mut failed) = (0u32, 0u32);
        let mut msg = [0u8; 64];
        msg[4..4 + MARKER.len()].copy_from_slice(MARKER);
        while !stop.load(Ordering::Relaxed) {
            let due = (started.elapsed().as_micros() as u64 * RATE as u64 / 1_000_000) as u32;
            while seq < due {
                seq += 1;
                msg[..4].copy_from_slice(&seq.to_be_bytes());
                if s.send_to(&msg, (Ipv4Addr::new(10, 0, 0, 2), PORT)).is_err() {
                    failed += 1;
                }
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        (seq, failed)
    })
}

/// B's receivers: one bound to its TUN device, one to its veth (what arrives there in clear
/// would reach the application).
fn receivers(lab: &Lab, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Received> {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = lab.in_ns(1, move || {
        let bound = |dev: &str| {
            use socket2::{Domain, Socket, Type};
            let s = Socket::new(Domain::IPV4, Type::DGRAM, None).unwrap();
            s.bind_device(Some(dev.as_bytes())).unwrap();
            s.set_reuse_address(true).unwrap();
            s.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, PORT)).into()).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            UdpSocket::from(s)
        };
        let (tun, veth) = (bound("hipsec0"), bound("hv-b"));
        tx.send(()).unwrap();
        let mut got = Received { tunnel: Vec::new(), clear: 0 };
        let mut buf = [0u8; 256];
        while !stop.load(Ordering::Relaxed) {
            while let Ok(n) = tun.recv(&mut buf) {
                if n >= 4 {
                    let seq = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
                    got.tunnel.push((seq, Instant::now()));
                }
            }
            while veth.recv(&mut buf).is_ok() {
                got.clear += 1;
            }
        }
        got
    });
    rx.recv().unwrap();
    h
}

/// How a restart ends the old process.
#[derive(Clone, Copy)]
enum Kill {
    Term,
    Kill,
}

/// Both nodes with a default route via each other's veth address; `extra` is appended to A's
/// config. Returns the lab and A's config.
fn routed_pair(extra: &str) -> (Lab, PathBuf) {
    routed_pair_with(extra, &[])
}

/// [`routed_pair`], A started the first time with `args`.
fn routed_pair_with(extra: &str, args: &[&str]) -> (Lab, PathBuf) {
    let mut lab = Lab::new();
    let (ca, cb) = (lab.config(0, Suite::Gcm, false, true), lab.config(1, Suite::Gcm, false, true));
    if !extra.is_empty() {
        let t = std::fs::read_to_string(&ca).unwrap() + extra;
        std::fs::write(&ca, t).unwrap();
    }
    sh(&["ip", "-n", &lab.ns[0], "route", "add", "default", "via", "192.0.2.2"]);
    sh(&["ip", "-n", &lab.ns[1], "route", "add", "default", "via", "192.0.2.1"]);
    lab.start_with(0, &ca, args);
    lab.start(1, &cb);
    (lab, ca)
}

/// Ends A's node with `how`, waits 300 ms with its TUN device gone, starts it again; returns
/// when the new node answered its control socket.
fn restart_a(lab: &mut Lab, config: &Path, how: Kill) -> Instant {
    let mut old = lab.nodes.remove(0);
    match how {
        Kill::Term => stop(&mut old),
        Kill::Kill => {
            let _ = old.kill();
            let _ = old.wait();
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    lab.start(0, config);
    let up = Instant::now();
    // `start` pushed the new A last; keep A first for the next restart.
    let a = lab.nodes.pop().unwrap();
    lab.nodes.insert(0, a);
    up
}

/// What a stream across a restart showed.
struct Run {
    /// Cleartext markers in the capture of the outer link (None without tcpdump).
    leaks: Option<usize>,
    got: Received,
    /// Datagrams sent, and sends refused.
    sent: (u32, u32),
    /// When the new node answered.
    up: Instant,
}

/// Runs the stream for 1 s, restarts A, runs it 1.5 s more.
fn stream_across_restart(lab: &mut Lab, config: &Path, how: Kill) -> Run {
    let pcap = lab.dir.join("restart.pcap");
    let mut tcpdump = capture(lab, &pcap);
    let stop_flag = Arc::new(AtomicBool::new(false));
    let rx = receivers(lab, Arc::clone(&stop_flag));
    let tx = stream(lab, Arc::clone(&stop_flag));
    std::thread::sleep(Duration::from_secs(1));
    let up = restart_a(lab, config, how);
    std::thread::sleep(Duration::from_millis(1500));
    stop_flag.store(true, Ordering::Relaxed);
    let sent = tx.join().unwrap();
    let got = rx.join().unwrap();
    let leaks = tcpdump.as_mut().map(|c| {
        stop(c);
        let cap = std::fs::read(&pcap).unwrap();
        cap.windows(MARKER.len()).filter(|w| *w == MARKER).count()
    });
    Run { leaks, got, sent, up }
}

fn restart_sends_nothing_in_clear(how: Kill) {
    if !can_run() {
        return;
    }
    let (mut lab, ca) = routed_pair("");
    let Run { leaks, got, sent: (sent, failed), .. } = stream_across_restart(&mut lab, &ca, how);
    println!(
        "sent {sent} ({failed} refused), through the tunnel {}, in clear at B {}, cleartext frames {leaks:?}",
        got.tunnel.len(),
        got.clear
    );
    let log = std::fs::read_to_string(lab.dir.join("node0.log")).unwrap_or_default();
    assert!(log.contains("guard"), "the node did not say it installed the guard:\n{log}");
    assert!(got.tunnel.len() > 1000, "the tunnel carried {} of {sent}", got.tunnel.len());
    assert_eq!(got.clear, 0, "B received {} datagrams in clear on its veth", got.clear);
    match leaks {
        Some(n) => {
            assert_eq!(n, 0, "{n} cleartext frames on the outer link ({failed} sends refused)")
        }
        None => println!("SKIPPED capture check: no tcpdump"),
    }
}

/// SIGTERM: a clean stop removes the TUN device; the guard stays.
#[test]
fn restart_after_sigterm_sends_nothing_in_clear() {
    restart_sends_nothing_in_clear(Kill::Term);
}

/// SIGKILL: the process has no say; the TUN device goes with its file descriptor.
#[test]
fn restart_after_sigkill_sends_nothing_in_clear() {
    restart_sends_nothing_in_clear(Kill::Kill);
}

/// The negative control: the same restart without the guard lets the stream out in clear by
/// the default route, and B's kernel delivers it. A capture that could not see this could
/// not show the guard's effect either.
#[test]
fn restart_without_the_guard_leaks() {
    if !can_run() {
        return;
    }
    let (mut lab, ca) = routed_pair("\n[guard]\nenabled = false\n");
    let Run { leaks, got, sent: (sent, _), .. } = stream_across_restart(&mut lab, &ca, Kill::Term);
    println!(
        "without the guard: sent {sent}, in clear at B {}, cleartext frames {leaks:?}",
        got.clear
    );
    assert!(got.clear > 50, "B received only {} datagrams in clear", got.clear);
    if let Some(n) = leaks {
        assert!(n > 50, "only {n} cleartext frames without the guard");
    }
}

/// The table is there after a clean stop, and `nft delete table inet hipsec_guard` (the
/// way by hand that docs/guard.md gives) leaves nothing.
#[test]
fn guard_outlives_the_node_until_removed() {
    if !can_run() {
        return;
    }
    let (mut lab, _) = routed_pair("");
    let mut a = lab.nodes.remove(0);
    stop(&mut a);
    let list = |ns: &str| {
        Command::new("ip")
            .args(["netns", "exec", ns, "nft", "list", "table", "inet", "hipsec_guard"])
            .output()
            .unwrap()
    };
    let out = list(&lab.ns[0]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("chain out_hipsec0") && text.contains("ip daddr 10.0.0.0/24"), "{text}");
    sh(&["ip", "netns", "exec", &lab.ns[0], "nft", "delete", "table", "inet", "hipsec_guard"]);
    assert!(!list(&lab.ns[0]).status.success(), "the table is still there");
}

/// How the stream through the tunnel came back after A's restart, read at B.
fn resumed(lab: &Lab, r: &Run) -> (Option<Duration>, usize, u64) {
    let after: Vec<&(u32, Instant)> = r.got.tunnel.iter().filter(|(_, t)| *t > r.up).collect();
    let first = after.first().map(|(_, t)| t.duration_since(r.up));
    let too_old = lab.status(1)["drops"]["too_old"].as_u64().unwrap();
    (first, after.len(), too_old)
}

/// Manual SAs with `[state] file`: the restarted node sends past its checkpoint, the peer's
/// replay window takes the packets at once. RFC 4303 §3.3.3: "If a previously transmitted
/// packet were discarded, the sender would then be vulnerable ... the counter ... must not be
/// allowed to cycle"; §3.4.3: the receiver drops numbers left of its window.
fn manual_sas_resume(how: Kill) {
    if !can_run() {
        return;
    }
    let state = "\n[state]\nfile = \"node0.state\"\n";
    let (mut lab, ca) = routed_pair_with(state, &["--reset-sequence"]);
    let r = stream_across_restart(&mut lab, &ca, how);
    let (first, after, too_old) = resumed(&lab, &r);
    println!(
        "first datagram {first:?} after the new node was up, {after} after it, too_old at B {too_old}"
    );
    let log = std::fs::read_to_string(lab.dir.join("node0.log")).unwrap_or_default();
    assert!(log.contains("sequence-resumed"), "{log}");
    let Some(first) = first else { panic!("nothing came through the tunnel after the restart") };
    assert!(first < Duration::from_secs(1), "delivery resumed {first:?} after the node was up");
    assert!(after > 1500, "only {after} datagrams in the 1.5 s after the restart");
    assert_eq!(too_old, 0, "B dropped {too_old} as too old");
}

#[test]
fn manual_sas_resume_after_sigterm() {
    manual_sas_resume(Kill::Term);
}

#[test]
fn manual_sas_resume_after_sigkill() {
    manual_sas_resume(Kill::Kill);
}

/// The control: without a state file the restarted node starts again at 1 and B drops the
/// stream as too old for as long as A had been sending.
#[test]
fn without_state_a_restart_is_dropped_as_too_old() {
    if !can_run() {
        return;
    }
    let (mut lab, ca) = routed_pair("");
    let r = stream_across_restart(&mut lab, &ca, Kill::Term);
    let (_, _, too_old) = resumed(&lab, &r);
    println!("without [state]: too_old at B {too_old}");
    assert!(too_old > 1000, "only {too_old} dropped as too old");
}

/// A state file without a checkpoint for the SA: the node does not start and says which SA
/// and which file.
#[test]
fn a_state_file_without_the_sa_refuses_to_start() {
    if !can_run() {
        return;
    }
    let lab = Lab::new();
    let ca = lab.config(0, Suite::Gcm, false, true);
    let t = std::fs::read_to_string(&ca).unwrap() + "\n[state]\nfile = \"node0.state\"\n";
    std::fs::write(&ca, t).unwrap();
    let salt = "00112233445566778899aabbccddeeff";
    std::fs::write(
        lab.dir.join("node0.state"),
        format!("{{\"version\":1,\"salt\":\"{salt}\",\"sas\":[]}}"),
    )
    .unwrap();
    let out = Command::new("ip")
        .args(["netns", "exec", &lab.ns[0], NODE, "-c"])
        .arg(&ca)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the node started: {err}");
    assert!(
        err.contains("no checkpoint for outbound SA \"out\"") && err.contains("node0.state"),
        "{err}"
    );
}
