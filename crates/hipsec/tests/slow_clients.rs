//! Slow, silent and surplus clients of the control socket and `/metrics` delay nothing but
//! themselves: two hipsec nodes rekey their CHILD SA every 2 s (hard lifetime 4 s) for 30 s
//! while 200 idle and 64 trickling (one byte a second) connections are held open on node A's
//! control socket and on its metrics listener, and a numbered UDP stream runs through the
//! tunnel. Every rekey comes in time (no SA reaches its hard lifetime), no datagram is lost,
//! `status` is answered in under 100 ms throughout, and the surplus is refused or timed out
//! and counted.
//!
//! ```text
//!   ns A: hipsec0 10.0.1.1/24 ── va 192.0.2.1 ══ vb 192.0.2.2 ── hipsec0 10.0.2.1/24 :ns B
//!         metrics 192.0.2.1:9469, control socket A.sock      ◄── 2×264 held connections
//!         UDP 10.0.1.1 ──────────── numbered datagrams ─────────► 10.0.2.1:5300
//! ```
//! Needs root, netns and TUN; otherwise SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const SOAK: Duration = Duration::from_secs(30);
const IDLE: usize = 200;
const SLOW: usize = 64;
const METRICS: &str = "192.0.2.1:9469";
const RATE_PPS: u64 = 200;

struct Nodes {
    ns: [String; 2],
    dir: PathBuf,
    nodes: Vec<Child>,
}

impl Nodes {
    fn start() -> Nodes {
        let base = format!("hisc-{}", std::process::id());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(&base);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ns = common::two_namespaces(&base);
        let mut n = Nodes { ns: ns.clone(), dir, nodes: Vec::new() };
        for (i, nsi) in ns.iter().enumerate() {
            let (me, peer) = (i + 1, 2 - i);
            // A rekeys every 2 s; B never starts one, so A's timers are the ones on trial.
            let (start, rekey, life, metrics) = if i == 0 {
                ("trap", "2s", "4s", format!("[metrics]\nlisten = \"{METRICS}\"\n"))
            } else {
                ("none", "1h", "2h", String::new())
            };
            let conf = format!(
                "[interface]\nname = \"hipsec0\"\naddresses = [\"10.0.{me}.1/24\"]\n[network]\nlocal = \"192.0.2.{me}:4500\"\n[control]\nsocket = \"{sock}\"\n{metrics}[[connection]]\nname = \"site\"\nremote_addrs = \"192.0.2.{peer}\"\nproposals = [\"aes128gcm16-prfsha256-x25519\"]\nrekey_time = \"1h\"\n[connection.local]\nid = \"node{me}.example\"\n[connection.remote]\nid = \"node{peer}.example\"\n[connection.children.net]\nlocal_ts = [\"10.0.{me}.0/24\"]\nremote_ts = [\"10.0.{peer}.0/24\"]\nesp_proposals = [\"aes128gcm16\"]\nrekey_time = \"{rekey}\"\nlife_time = \"{life}\"\nrand_time = \"0s\"\nstart_action = \"{start}\"\n[secrets.ike-1]\nid = [\"node1.example\", \"node2.example\"]\nsecret = \"two hipsec nodes\"\n",
                sock = n.sock(i).display(),
            );
            let path = n.dir.join(format!("{i}.toml"));
            std::fs::write(&path, conf).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            n.nodes.push(common::start_node(nsi, &n.dir, i, &[]));
            let other = format!("10.0.{peer}.0/24");
            common::sh(&["ip", "-n", nsi, "route", "replace", &other, "dev", "hipsec0"]);
        }
        n
    }

    fn sock(&self, i: usize) -> PathBuf {
        self.dir.join(format!("{i}.sock"))
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dir.join(format!("{i}.log"))).unwrap_or_default()
    }

    /// `status` over the control socket and how long the answer took.
    fn status_timed(&self, i: usize) -> (serde_json::Value, Duration) {
        let t = Instant::now();
        let r = node::control::socket::query(&self.sock(i), "status").unwrap_or_default();
        (serde_json::from_str(&r).unwrap_or(serde_json::Value::Null), t.elapsed())
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for c in &mut self.nodes {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let _ = c.wait();
        }
        for ns in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A held connection of the load: idle ones say nothing, slow ones send `request` a byte a
/// second. One the node closes is opened again 100 ms later, so the pressure stays.
enum Held {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Held {
    fn open(to: &Target) -> Option<Held> {
        let h = match to {
            Target::Unix(p) => Held::Unix(UnixStream::connect(p).ok()?),
            Target::Tcp(a) => {
                Held::Tcp(TcpStream::connect_timeout(a, Duration::from_millis(300)).ok()?)
            }
        };
        match &h {
            Held::Unix(s) => s.set_nonblocking(true).ok()?,
            Held::Tcp(s) => s.set_nonblocking(true).ok()?,
        }
        Some(h)
    }

    /// False once the node has closed it.
    fn alive(&mut self) -> bool {
        let mut b = [0u8; 512];
        let r = match self {
            Held::Unix(s) => s.read(&mut b),
            Held::Tcp(s) => s.read(&mut b),
        };
        match r {
            Ok(0) => false,
            Ok(_) => false, // an answer (refusal, error) comes just before the close
            Err(e) => e.kind() == ErrorKind::WouldBlock,
        }
    }

    fn send(&mut self, b: u8) -> bool {
        let r = match self {
            Held::Unix(s) => s.write(&[b]),
            Held::Tcp(s) => s.write(&[b]),
        };
        r.is_ok() || r.is_err_and(|e| e.kind() == ErrorKind::WouldBlock)
    }
}

#[derive(Clone)]
enum Target {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

/// Holds IDLE + SLOW connections to `to` until `stop`; returns how often it had to reopen one.
fn hold(to: Target, request: &[u8], stop: &AtomicBool) -> u64 {
    let n = IDLE + SLOW;
    let mut conns: Vec<(Option<Held>, Instant, usize)> =
        (0..n).map(|_| (None, Instant::now(), 0)).collect();
    let mut reopened = 0;
    let mut next_byte = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        let tick = now >= next_byte;
        if tick {
            next_byte = now + Duration::from_secs(1);
        }
        for (i, (c, retry, sent)) in conns.iter_mut().enumerate() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let gone = match c {
                Some(h) => {
                    !h.alive() || (i >= IDLE && tick && !h.send(request[*sent % request.len()]))
                }
                None => true,
            };
            if gone {
                if c.take().is_some() {
                    reopened += 1;
                    *retry = now + Duration::from_millis(100);
                }
                if now >= *retry {
                    *c = Held::open(&to);
                    *sent = 0;
                    *retry = now + Duration::from_millis(100);
                }
            } else if i >= IDLE && tick {
                *sent += 1;
            }
        }
        // Looking at 264 sockets costs the machine the node runs on: 10 times a second will do.
        std::thread::sleep(Duration::from_millis(100));
    }
    reopened
}

fn in_ns<T>(ns: &str, f: impl FnOnce() -> T) -> T {
    node::netns::enter(ns).unwrap();
    f()
}

#[test]
fn slow_clients_delay_no_rekey() {
    if !common::netns_ready(&[]) {
        return;
    }
    let n = Nodes::start();
    let (a, b) = (n.ns[0].clone(), n.ns[1].clone());
    // The trap's first packet starts IKE; then the tunnel carries the stream.
    let up = Instant::now();
    let probe = |port: u16| {
        std::thread::scope(|s| {
            let rx = s.spawn(|| {
                in_ns(&b, || {
                    let r = UdpSocket::bind(("10.0.2.1", port)).unwrap();
                    r.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
                    let mut buf = [0u8; 16];
                    r.recv(&mut buf).is_ok()
                })
            });
            std::thread::sleep(Duration::from_millis(50));
            s.spawn(|| {
                in_ns(&a, || {
                    let t = UdpSocket::bind("10.0.1.1:0").unwrap();
                    let _ = t.send_to(b"probe", ("10.0.2.1", port));
                })
            });
            rx.join().unwrap()
        })
    };
    while !probe(5299) {
        assert!(up.elapsed() < Duration::from_secs(10), "no tunnel\n{}", n.log(0));
    }
    let (before, _) = n.status_timed(0);
    let rekeys =
        |st: &serde_json::Value| st["ike"]["ike_sas"][0]["child_rekeys"].as_u64().unwrap_or(0);
    let rekeys_before = rekeys(&before);

    let stop = AtomicBool::new(false);
    let total = SOAK.as_secs() * RATE_PPS;
    let (worst, polls, received, reopened) = std::thread::scope(|s| {
        // Stops the load also when an assertion fails (else the scope would wait for ever).
        struct Stop<'s>(&'s AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop = Stop(&stop);
        let sock = n.sock(0);
        let ctl = s.spawn(|| hold(Target::Unix(sock), b"status\n", &stop));
        let http = s.spawn(|| {
            in_ns(&a, || {
                hold(
                    Target::Tcp(METRICS.parse().unwrap()),
                    b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n",
                    &stop,
                )
            })
        });
        // Let the crowd gather before the stream starts.
        std::thread::sleep(Duration::from_secs(2));
        let rx = s.spawn(|| {
            in_ns(&b, || {
                let r = UdpSocket::bind("10.0.2.1:5300").unwrap();
                r.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
                let mut seen = vec![false; total as usize];
                let mut buf = [0u8; 64];
                while let Ok(len) = r.recv(&mut buf) {
                    if len >= 8 {
                        let k = u64::from_be_bytes(buf[..8].try_into().unwrap()) as usize;
                        if let Some(x) = seen.get_mut(k) {
                            *x = true;
                        }
                    }
                }
                seen.iter().filter(|&&x| x).count() as u64
            })
        });
        std::thread::sleep(Duration::from_millis(300)); // the receiver is bound
        let tx = s.spawn(|| {
            in_ns(&a, || {
                let t = UdpSocket::bind("10.0.1.1:0").unwrap();
                let t0 = Instant::now();
                for k in 0..total {
                    let at = t0 + Duration::from_micros(k * 1_000_000 / RATE_PPS);
                    if let Some(d) = at.checked_duration_since(Instant::now()) {
                        std::thread::sleep(d);
                    }
                    let mut d = [0u8; 32];
                    d[..8].copy_from_slice(&k.to_be_bytes());
                    let _ = t.send_to(&d, ("10.0.2.1", 5300));
                }
            })
        });
        let mut worst = Duration::ZERO;
        let mut polls = 0;
        let t0 = Instant::now();
        while !tx.is_finished() {
            let (st, took) = n.status_timed(0);
            assert!(st["ike"].is_object(), "status unanswered after {took:?}: {st}");
            if took >= Duration::from_millis(50) {
                println!("status at {:?} took {took:?}", t0.elapsed());
            }
            worst = worst.max(took);
            polls += 1;
            std::thread::sleep(Duration::from_millis(500));
        }
        tx.join().unwrap();
        let received = rx.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        (worst, polls, received, [ctl.join().unwrap(), http.join().unwrap()])
    });
    let (st, _) = n.status_timed(0);
    let clients = &st["control"]["clients"];
    let hard = |i: usize| n.log(i).matches("sa-hard-expired").count();
    let closed = |l: &serde_json::Value| {
        ["refused", "evicted", "deadline_expired", "idle_closed"]
            .iter()
            .map(|k| l[*k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let rekeyed = rekeys(&st) - rekeys_before;
    println!(
        "{} s: {received}/{total} datagrams, CHILD rekeys {rekeyed} (median delay {} µs), hard \
         expiries A {} B {}, status worst {worst:?} over {polls} polls, reopened {reopened:?}, \
         clients {clients}",
        SOAK.as_secs(),
        st["ike"]["ike_sas"][0]["our_rekey_delay_median_us"],
        hard(0),
        hard(1),
    );
    assert_eq!(received, total, "datagrams lost\n{}", n.log(0));
    assert_eq!((hard(0), hard(1)), (0, 0), "an SA reached its hard lifetime\n{}", n.log(0));
    assert!(rekeyed >= SOAK.as_secs() / 2 - 1, "rekeys late: {rekeyed} in {SOAK:?}");
    assert!(worst < Duration::from_millis(100), "status took {worst:?}");
    assert!(polls >= SOAK.as_secs(), "status polled {polls} times");
    assert!(closed(&clients["control_socket"]) > 0, "{clients}");
    assert!(closed(&clients["metrics"]) > 0, "{clients}");
    // The trickle (a byte a second) keeps the idle timeout off; the whole-request deadline
    // closes it.
    for l in ["control_socket", "metrics"] {
        assert!(clients[l]["deadline_expired"].as_u64() > Some(0), "{clients}");
    }
    for r in ["no_sa", "sa_expired", "replayed"] {
        assert_eq!(st["drops"][r].as_u64(), before["drops"][r].as_u64(), "{r}: {st}");
    }
    // The counters are in /metrics too.
    let page = in_ns_thread(&a, || {
        let mut s = TcpStream::connect(METRICS).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    });
    assert!(
        page.contains("\nhipsec_clients_deadline_expired_total{listener=\"metrics\"} "),
        "{page}"
    );
}

fn in_ns_thread<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(|| in_ns(ns, f)).join().unwrap())
}
