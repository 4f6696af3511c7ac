//! An IKE_SA_INIT flood against a responder node (RFC 7296 §2.6): spoofed requests from a
//! namespace at ≥ 50,000/s; cookies switch on, half-open state stays bounded, the node's RSS
//! stays flat, and a legitimate peer — a second hipsec node — still connects, with a ping
//! through the tunnel. On 2 vCPUs a debug node answered 55,000/s with every sampled reply a
//! COOKIE, 64 half-open SAs at most, RSS +0.9 to +1.2 MB, the peer up in 143–1,265 ms
//! (`cargo test -p hipsec --test ike_flood -- --nocapture`; `HIPSEC_FLOOD_NODE=<release
//! binary>` runs release nodes, `HIPSEC_FLOOD_SECS=65` a longer flood).
//!
//! ```text
//!   ns flood                       ns victim                          ns peer
//!   raw socket, IP_HDRINCL         hipsec run (responder "site")      hipsec run (initiator)
//!   src 198.18.0.0/15 (spoofed)    hipsec0 10.0.1.1/24                hipsec0 10.0.2.1/24
//!   f0 198.51.100.2/24 ════════ v0 198.51.100.1/24  v1 192.0.2.1/24 ════ p0 192.0.2.2/24
//!   (replies to 198.18/15 come     rp_filter off,
//!    back here and are dropped;    198.18.0.0/15 via 198.51.100.2
//!    tcpdump samples them)
//! ```
//! Needs root, `ip netns`, /dev/net/tun and tcpdump; otherwise it prints SKIPPED and passes.
//! The generator is `flood/mod.rs`, run in the flood namespace as this test binary's
//! `flood_generator` (a raw socket sends in the namespace it was opened in).
//! `HIPSEC_FLOOD_NODE=target/release/hipsec` runs optimised nodes instead of the debug build.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod flood;
use common::BIN;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The default `[ike] cookie_threshold` (crates/node/src/config/ike_limits.rs): at this many half-open
/// IKE SAs the responder answers IKE_SA_INIT with a COOKIE instead of keeping state.
const COOKIE_THRESHOLD: usize = 64;
/// Half-open SAs we allow over the threshold: the check is `len >= threshold` before each new
/// half-open SA, so only requests that return a valid cookie (the legitimate peer, at most a
/// retransmission or two of it) can add more. Spoofed sources never see their cookie.
const HALF_OPEN_MARGIN: usize = 4;
/// The rate asked of the generator.
const TARGET_PPS: u64 = 55_000;
/// The rate the test insists on (≥ 50,000/s, the flood a responder must survive). The paced
/// generator costs about a fifth of a core here (one sendto per request, the veth delivery
/// included) and held 55,000/s in every run on a 2-core machine, also at a load average of
/// 4.8 while others compiled; a run that cannot reach it fails rather than claim a smaller flood.
const FLOOR_PPS: f64 = 50_000.0;
/// The flood lasts at least this long, and on until the legitimate peer is up and has pinged
/// through its tunnel, but no more than `FLOOD_MAX_EXTRA_SECS` longer (the node drops what
/// its socket buffer cannot hold, the peer's messages among them, and the peer's
/// retransmissions back off 1, 2, 4, 8 s: RFC 7296 §2.1).
/// `HIPSEC_FLOOD_SECS=N` floods for N s instead (the peer still connects at t = 7 s), e.g. to
/// see RSS across the 30 s half-open expiry.
const FLOOD_SECS: u64 = 12;
const FLOOD_MAX_EXTRA_SECS: u64 = 16;
/// RSS may grow by at most this much over the flood.
const RSS_MARGIN_KB: u64 = 10 * 1024;

/// The three namespaces and the two nodes; removed on drop, also when the test panics.
struct Net {
    base: String,
    dir: PathBuf,
    nodes: Vec<Child>,
    /// The generator and tcpdump, stopped first (also when the test panics mid-flood).
    extra: Vec<Child>,
}

impl Drop for Net {
    fn drop(&mut self) {
        for c in self.extra.iter_mut().chain(self.nodes.iter_mut()) {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in ["flood", "victim", "peer"] {
            let _ = Command::new("ip").args(["netns", "del", &self.ns(ns)]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Net {
    fn ns(&self, which: &str) -> String {
        format!("{}-{which}", self.base)
    }

    fn sock(&self, which: &str) -> PathBuf {
        self.dir.join(format!("{which}.sock"))
    }

    fn new() -> Net {
        let base = format!("hfl-{}", std::process::id());
        let dir = std::env::temp_dir().join(&base);
        std::fs::create_dir_all(&dir).unwrap();
        let net = Net { base, dir, nodes: Vec::new(), extra: Vec::new() };
        let (f, v, p) = (net.ns("flood"), net.ns("victim"), net.ns("peer"));
        for ns in [&f, &v, &p] {
            common::sh(&["ip", "netns", "add", ns]);
            common::sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        common::sh(&[
            "ip", "link", "add", "f0", "netns", &f, "type", "veth", "peer", "name", "v0", "netns",
            &v,
        ]);
        common::sh(&[
            "ip", "link", "add", "v1", "netns", &v, "type", "veth", "peer", "name", "p0", "netns",
            &p,
        ]);
        for (ns, dev, addr) in [
            (&f, "f0", "198.51.100.2/24"),
            (&v, "v0", "198.51.100.1/24"),
            (&v, "v1", "192.0.2.1/24"),
            (&p, "p0", "192.0.2.2/24"),
        ] {
            common::sh(&["ip", "-n", ns, "addr", "add", addr, "dev", dev]);
            common::sh(&["ip", "-n", ns, "link", "set", dev, "up"]);
        }
        common::sh(&["ip", "-n", &f, "route", "add", "192.0.2.0/24", "via", "198.51.100.1"]);
        // The victim answers the spoofed sources towards the flood namespace, which drops the
        // replies (not its addresses, no forwarding); rp_filter would drop the requests.
        common::sh(&["ip", "-n", &v, "route", "add", "198.18.0.0/15", "via", "198.51.100.2"]);
        for k in ["all", "default", "v0"] {
            common::sh(&[
                "ip",
                "netns",
                "exec",
                &v,
                "sysctl",
                "-qw",
                &format!("net.ipv4.conf.{k}.rp_filter=0"),
            ]);
        }
        net
    }

    /// Victim: responder for "site" (peer 192.0.2.2). Peer: initiator on demand.
    fn config(&self, victim: bool) -> PathBuf {
        let (me, them, addr, lts, rts, lid, rid) = if victim {
            (
                "192.0.2.1",
                "192.0.2.2",
                "10.0.1.1/24",
                "10.0.1.0/24",
                "10.0.2.0/24",
                "node1",
                "node2",
            )
        } else {
            (
                "192.0.2.2",
                "192.0.2.1",
                "10.0.2.1/24",
                "10.0.2.0/24",
                "10.0.1.0/24",
                "node2",
                "node1",
            )
        };
        let which = if victim { "victim" } else { "peer" };
        let t = format!(
            "[interface]\nname = \"hipsec0\"\naddresses = [\"{addr}\"]\n\
             [network]\nlocal = \"{me}:4500\"\n[control]\nsocket = \"{sock}\"\n\
             [[connection]]\nname = \"site\"\nremote_addrs = \"{them}\"\n\
             proposals = [\"aes128gcm16-prfsha256-x25519\"]\n[connection.local]\nauth = \"psk\"\n\
             id = \"{lid}.example\"\n[connection.remote]\nauth = \"psk\"\nid = \"{rid}.example\"\n\
             [connection.children.net]\nlocal_ts = [\"{lts}\"]\nremote_ts = [\"{rts}\"]\n\
             esp_proposals = [\"aes128gcm16\"]\nstart_action = \"none\"\n[secrets.ike-1]\n\
             id = [\"node1.example\", \"node2.example\"]\nsecret = \"flood-proof shared secret\"\n",
            sock = self.sock(which).display(),
        );
        let path = self.dir.join(format!("{which}.toml"));
        std::fs::write(&path, t).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        path
    }

    fn start(&mut self, which: &str) -> u32 {
        let config = self.config(which == "victim");
        let bin = std::env::var("HIPSEC_FLOOD_NODE").unwrap_or_else(|_| BIN.to_string());
        let log = std::fs::File::create(self.dir.join(format!("{which}.log"))).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns(which), &bin, "run", "-c"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        // `ip netns exec` execs the command: the child's pid is the node's.
        let pid = child.id();
        self.nodes.push(child);
        for _ in 0..200 {
            if query(&self.sock(which), "status", Duration::from_secs(2)).is_some() {
                return pid;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("{which} node did not come up: {}", self.log(which));
    }

    fn log(&self, which: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{which}.log"))).unwrap_or_default()
    }
}

/// One control-socket command with a deadline (the node's own client waits 30 s, too long to
/// sample every 100 ms); None if the node did not answer in time.
fn query(sock: &Path, cmd: &str, timeout: Duration) -> Option<serde_json::Value> {
    let mut s = UnixStream::connect(sock).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    s.write_all(format!("{cmd}\n").as_bytes()).ok()?;
    s.shutdown(std::net::Shutdown::Write).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    serde_json::from_str(&out).ok()
}

fn rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU time of a process, in clock ticks (/proc/PID/stat fields 14 and 15; the
/// kernel's USER_HZ is 100 on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the ")" closing the command name: state is field 3, utime 14, stime 15.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> =
        rest.split_whitespace().skip(11).take(2).filter_map(|v| v.parse().ok()).collect();
    f.iter().sum()
}

fn half_open(st: &serde_json::Value) -> usize {
    st["ike"]["ike_sas"]
        .as_array()
        .map_or(0, |v| v.iter().filter(|s| s["state"] == "half-open").count())
}

fn up_with_child(st: &serde_json::Value) -> bool {
    st["ike"]["ike_sas"].as_array().is_some_and(|v| {
        v.iter().any(|s| {
            s["state"] == "established" && s["children"].as_array().is_some_and(|c| !c.is_empty())
        })
    })
}

/// The victim namespace's UDP receive-buffer overflows (/proc/net/snmp `Udp: RcvbufErrors`):
/// datagrams the kernel dropped because the node did not read its sockets fast enough.
fn udp_rcvbuf_errors(ns: &str) -> u64 {
    let out =
        Command::new("ip").args(["netns", "exec", ns, "cat", "/proc/net/snmp"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut udp = text.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else { return 0 };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "RcvbufErrors")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

fn rx_packets(ns: &str, dev: &str) -> u64 {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat", &format!("/sys/class/net/{dev}/statistics/rx_packets")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

/// Not a test by itself: the flood generator, run by `ike_flood_*` inside the flood namespace
/// with `HIPSEC_FLOOD` set (see flood/mod.rs). Without the variable it does nothing.
#[test]
fn flood_generator() {
    let Ok(spec) = std::env::var("HIPSEC_FLOOD") else { return };
    let c = flood::FloodConfig::parse(&spec);
    let r = flood::run(&c);
    println!("{}", r.line());
}

/// What the sampler saw every 100 ms.
#[derive(Debug, Default)]
struct Samples {
    n: usize,
    half_open_max: usize,
    /// Status queries the node did not answer within 2 s.
    unanswered: usize,
    status_ms_max: u128,
    rss_max_kb: u64,
}

/// The victim's counters at one moment, to difference over a phase.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: Instant,
    replies: u64,
    overflows: u64,
    cpu_ticks: u64,
}

impl Mark {
    fn now(net: &Net, victim: u32) -> Mark {
        Mark {
            at: Instant::now(),
            replies: rx_packets(&net.ns("flood"), "f0"),
            overflows: udp_rcvbuf_errors(&net.ns("victim")),
            cpu_ticks: cpu_ticks(victim),
        }
    }

    /// One line about the phase from `self` to `end`: replies/s, kernel drops, node CPU.
    fn phase(&self, end: &Mark, what: &str) -> (f64, f64) {
        let secs = end.at.duration_since(self.at).as_secs_f64().max(1e-3);
        let replies = end.replies - self.replies;
        let lost = end.overflows - self.overflows;
        let cpu = (end.cpu_ticks - self.cpu_ticks) as f64 / 100.0;
        let lost_pct = lost as f64 * 100.0 / (replies + lost).max(1) as f64;
        println!(
            "{what}: {:.1} s, node answered {:.0}/s, kernel dropped {:.0}/s for a full receive \
             buffer ({lost_pct:.0}% of what reached it), node CPU {:.0}% ({:.1} µs per reply)",
            secs,
            replies as f64 / secs,
            lost as f64 / secs,
            cpu * 100.0 / secs,
            cpu * 1e6 / replies.max(1) as f64
        );
        (replies as f64 / secs, lost_pct)
    }
}

/// Phase 1 (flood t = 0–7 s): `status` every 100 ms — half-open count, RSS, status latency —
/// and a tcpdump sample of the replies. Phase 2 (t = 7 s until the peer has pinged, at least
/// to t = 12 s): nobody asks for `status` (see KNOWN PROBLEM below) and the legitimate peer
/// initiates, gets its IKE SA and CHILD SA, and pings through the tunnel.
///
/// KNOWN PROBLEM (crates/node):
/// `status` holds the control thread for up to 100 ms — `Board::collect` sleeps until every
/// worker has published a snapshot, and an idle worker only looks between its 100 ms polls
/// (`worker::POLL_MS`). The port-500 socket is not read meanwhile; at 55k/s its receive buffer
/// overflows within a few ms, so a 10 Hz `status` poll turns most of the flood — and the
/// legitimate peer's IKE messages with it — into kernel drops (release node: 69% dropped, node
/// CPU 7%; without the poll: 2% dropped, CPU 21%). A peer that initiated under the 10 Hz poll
/// took 1.3 s, 2.3 s, 7.5 s and once > 20 s to connect. Phase 2 therefore runs unobserved;
/// phase 1 prints the answer rate it gets while observed.
#[test]
fn ike_sa_init_flood_cookies_bounded_state_flat_rss_peer_connects() {
    if !common::netns_ready(&["tcpdump"]) {
        return;
    }
    let mut net = Net::new();
    let victim = net.start("victim");
    net.start("peer");
    let (vsock, psock) = (net.sock("victim"), net.sock("peer"));
    common::sh(&[
        "ip",
        "-n",
        &net.ns("victim"),
        "route",
        "replace",
        "10.0.2.0/24",
        "dev",
        "hipsec0",
    ]);
    common::sh(&["ip", "-n", &net.ns("peer"), "route", "replace", "10.0.1.0/24", "dev", "hipsec0"]);
    std::thread::sleep(Duration::from_millis(500));
    let rss_before = rss_kb(victim);

    // The sampler: half-open count, status latency and RSS every 100 ms while `observe`.
    let (observe, stop) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(false)));
    let samples = Arc::new(Mutex::new(Samples::default()));
    let every = Duration::from_millis(
        std::env::var("HIPSEC_FLOOD_SAMPLE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(100),
    );
    let sampler = {
        let (observe, stop, samples, vsock) =
            (observe.clone(), stop.clone(), samples.clone(), vsock.clone());
        std::thread::spawn(move || {
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                if !observe.load(Ordering::Relaxed) || Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                next = Instant::now() + every;
                let t = Instant::now();
                let st = query(&vsock, "status", Duration::from_secs(2));
                let ms = t.elapsed().as_millis();
                let mut s = samples.lock().unwrap();
                s.n += 1;
                s.status_ms_max = s.status_ms_max.max(ms);
                s.rss_max_kb = s.rss_max_kb.max(rss_kb(victim));
                match st {
                    Some(st) => s.half_open_max = s.half_open_max.max(half_open(&st)),
                    None => s.unanswered += 1,
                }
            }
        })
    };

    // The flood, from its namespace: this test binary again, as `flood_generator`.
    let exe = std::env::current_exe().unwrap();
    let min_secs: u64 =
        std::env::var("HIPSEC_FLOOD_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(FLOOD_SECS);
    let stop_file = net.dir.join("stop-flood");
    let gen_out = net.dir.join("flood.out");
    let gen_ = Command::new("ip")
        .args(["netns", "exec", &net.ns("flood")])
        .arg(&exe)
        .args(["flood_generator", "--exact", "--nocapture", "--test-threads=1"])
        .env(
            "HIPSEC_FLOOD",
            format!(
                "dst=192.0.2.1:500 rate={TARGET_PPS} min_secs={min_secs} secs={} stop={}",
                min_secs + FLOOD_MAX_EXTRA_SECS,
                stop_file.display()
            ),
        )
        .stdout(std::fs::File::create(&gen_out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let flood_start = Instant::now();
    net.extra.push(gen_);
    let max_secs = min_secs + FLOOD_MAX_EXTRA_SECS;

    // A sample of the replies, once the flood is under way: how many carry a COOKIE.
    std::thread::sleep(Duration::from_secs(2));
    let pcap = net.dir.join("replies.pcap");
    let dump = Command::new("ip")
        .args(["netns", "exec", &net.ns("flood"), "tcpdump", "-i", "f0", "-nn", "-s", "256"])
        .args(["-c", "2000", "-w"])
        .arg(&pcap)
        .args(["udp", "and", "src", "port", "500"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    net.extra.push(dump);
    let m1 = Mark::now(&net, victim);
    std::thread::sleep(Duration::from_secs(5));
    observe.store(false, Ordering::Relaxed);
    let m2 = Mark::now(&net, victim);
    let _ = Command::new("kill").args(["-INT", &net.extra[1].id().to_string()]).status();
    let _ = net.extra[1].wait();

    // Phase 2: the legitimate peer, in the middle of the flood.
    std::thread::sleep(Duration::from_millis(300));
    let m3 = Mark::now(&net, victim);
    let t0 = Instant::now();
    let out = Command::new(BIN).args(["initiate"]).arg(&psock).arg("site").output().unwrap();
    let initiate_err = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut connect = None;
    while flood_start.elapsed() < Duration::from_secs(max_secs - 2) {
        if query(&psock, "status", Duration::from_secs(2)).is_some_and(|s| up_with_child(&s)) {
            connect = Some(t0.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pings = if connect.is_some() { ping(&net.ns("peer"), 5) } else { 0 };
    let pinged_at = flood_start.elapsed();
    let m4 = Mark::now(&net, victim);
    std::fs::write(&stop_file, b"").unwrap();

    let _ = net.extra[0].wait();
    let gen_out = std::fs::read_to_string(&gen_out).unwrap_or_default();
    let flood = flood::FloodReport::from_line(&gen_out)
        .unwrap_or_else(|| panic!("no report from the generator: {gen_out}"));
    let during_flood = pinged_at.as_secs_f64() < flood.secs;
    // Half-open state right after the flood (its SAs live 30 s: all still there), then let the
    // node drain its queue and measure RSS once more.
    let st_end = query(&vsock, "status", Duration::from_secs(5));
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let rss_after = rss_kb(victim);
    let (cookies, sampled) = flood::count_cookies(&pcap);
    let alive = net.nodes[0].try_wait().unwrap().is_none();
    let s = samples.lock().unwrap();
    let half_open_end = st_end.as_ref().map_or(0, half_open);

    println!(
        "flood: {} spoofed IKE_SA_INIT in {:.2} s = {:.0}/s (target {TARGET_PPS}/s, floor \
         {FLOOR_PPS}/s), {} send errors",
        flood.sent,
        flood.secs,
        flood.rate_pps(),
        flood.errors
    );
    let (observed_pps, observed_lost) = m1.phase(&m2, "phase 1, status every 100 ms");
    let (quiet_pps, quiet_lost) = m3.phase(&m4, "phase 2, no status, peer connecting");
    println!("tcpdump sample of {sampled} replies: {cookies} carry a COOKIE");
    println!(
        "half-open max {} over {} samples, {half_open_end} after the flood (bound {} + \
         {HALF_OPEN_MARGIN}); status unanswered within 2 s: {}, slowest answer {} ms",
        s.half_open_max, s.n, COOKIE_THRESHOLD, s.unanswered, s.status_ms_max
    );
    println!(
        "RSS before {rss_before} kB, after {rss_after} kB (max seen {} kB, margin \
         {RSS_MARGIN_KB} kB)",
        s.rss_max_kb
    );
    println!(
        "legitimate peer: {}, ping {pings}/5, done {:.1} s into the flood (during it: \
         {during_flood})",
        connect.map_or_else(
            || format!("did not connect: {initiate_err}"),
            |d| format!("IKE + CHILD SA up {} ms after `hipsec initiate`", d.as_millis())
        ),
        pinged_at.as_secs_f64()
    );
    if observed_lost > 2.0 * quiet_lost.max(5.0) {
        println!(
            "KNOWN PROBLEM: polling status every 100 ms cut the node's answers from \
             {quiet_pps:.0}/s to {observed_pps:.0}/s ({observed_lost:.0}% vs {quiet_lost:.0}% \
             dropped): status blocks the control thread (see the comment on this test)"
        );
    }
    if let Some(st) = &st_end {
        println!("victim ike counters: {}", st["ike"]["counters"]);
    }

    assert!(alive, "the victim node died\n{}", net.log("victim"));
    assert!(st_end.is_some(), "the victim node does not answer status after the flood");
    assert!(flood.rate_pps() >= FLOOR_PPS, "flood too slow: {}", flood.line());
    let bound = COOKIE_THRESHOLD + HALF_OPEN_MARGIN;
    assert!(s.half_open_max <= bound, "half-open IKE SAs grew to {}", s.half_open_max);
    assert!(half_open_end <= bound, "half-open IKE SAs grew to {half_open_end} by the end");
    // 7 s of sampling: at least one sample per 350 ms even when each status call waits its
    // full 100 ms and the machine is busy.
    assert!(s.n as u128 >= 2000 / every.as_millis().max(1), "only {} status samples in 7 s", s.n);
    assert!(sampled >= 100, "tcpdump caught only {sampled} replies");
    assert!(cookies * 100 >= sampled * 95, "only {cookies}/{sampled} replies carry a COOKIE");
    assert!(
        rss_after <= rss_before + RSS_MARGIN_KB,
        "RSS grew from {rss_before} kB to {rss_after} kB"
    );
    assert!(
        connect.is_some(),
        "the legitimate peer did not connect during the flood\n{}",
        net.log("peer")
    );
    assert_eq!(pings, 5, "pings lost through the tunnel");
    assert!(during_flood, "the legitimate peer was up and pinged only after the flood");
}

/// `ping -c N` from the peer's inner address to the victim's; returns how many answers came.
fn ping(ns: &str, count: u32) -> u32 {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "ping", "-q", "-c", &count.to_string(), "-i", "0.2"])
        .args(["-W", "1", "-I", "10.0.2.1", "10.0.1.1"])
        .output()
        .unwrap();
    common::ping_received(&out.stdout) as _
}
