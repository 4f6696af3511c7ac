//! A node in a network namespace with `[metrics]` and `[log] format = "json"`: its Prometheus
//! endpoint answers from inside the namespace with live counters, a second node asking for the
//! same metrics address refuses to start and names it, and every stderr line is a JSON event.
//!
//! ```text
//!   ns hmet-PID-N
//!   hipsec0 (TUN) 10.0.0.1/24
//!   lo 127.0.0.1: ESP in UDP on :4500 (peer :4501, nobody), metrics on TCP :9469
//!   test thread (setns) --- GET /metrics ---> node;  --- UDP, unknown SPI ---> node (no_sa)
//! ```
//! Needs root, `ip netns` and /dev/net/tun; otherwise the test prints SKIPPED and passes.

#![allow(clippy::unwrap_used)] // test helpers: a failed setup step should panic with its error

mod common;
use common::{can_run, sh, stop};

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NODE: &str = env!("CARGO_BIN_EXE_hipsec-node");
const METRICS: &str = "127.0.0.1:9469";

/// The namespace, its files and the nodes started in it; all removed on drop, also when the
/// test panics.
struct Ns {
    name: String,
    dir: PathBuf,
    nodes: Vec<Child>,
}

impl Ns {
    fn new() -> Ns {
        let name = format!("hmet-{}-0", std::process::id());
        let dir = std::env::temp_dir().join(&name);
        // The guard exists before the first step that makes something, so a failure cleans up.
        let ns = Ns { name, dir, nodes: Vec::new() };
        std::fs::create_dir_all(&ns.dir).unwrap();
        sh(&["ip", "netns", "add", &ns.name]);
        sh(&["ip", "-n", &ns.name, "link", "set", "lo", "up"]);
        ns
    }

    /// Writes a node config (interface `ifname`, carrier port `port`) and starts the node with
    /// its stderr in `<tag>.log`.
    fn start(&mut self, tag: &str, ifname: &str, port: u16) -> PathBuf {
        let cfg = format!(
            "[interface]\nname = \"{ifname}\"\naddresses = [\"10.0.0.1/24\"]\n\n\
             [network]\ntransport = \"udp\"\nlocal = \"127.0.0.1:{port}\"\npeer = \"127.0.0.1:4501\"\n\n\
             [metrics]\nlisten = \"{METRICS}\"\n\n\
             [log]\nformat = \"json\"\n\n\
             [[sa]]\nname = \"in\"\ndirection = \"in\"\nproto = \"esp\"\nmode = \"tunnel\"\n\
             src = \"127.0.0.1\"\ndst = \"127.0.0.1\"\nspi = \"0x00002001\"\naead = \"aes128gcm\"\n\
             key = \"0x000102030405060708090a0b0c0d0e0f_a0a1a2a3\"\n"
        );
        let path = self.dir.join(format!("{tag}.toml"));
        std::fs::write(&path, cfg).unwrap();
        // It holds keys: readable by its owner only, as the node asks (else it warns).
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let log = self.dir.join(format!("{tag}.log"));
        let child = Command::new("ip")
            .args(["netns", "exec", &self.name, NODE, "-c"])
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .unwrap();
        self.nodes.push(child);
        log
    }

    /// Runs `f` on a thread inside the namespace.
    fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let ns = self.name.clone();
        std::thread::spawn(move || {
            node::netns::enter(&ns).unwrap();
            f()
        })
        .join()
        .unwrap()
    }

    /// One HTTP request to the metrics address inside the namespace; the whole response.
    fn http(&self, request: &'static str) -> std::io::Result<String> {
        self.run(move || {
            let mut s =
                TcpStream::connect_timeout(&METRICS.parse().unwrap(), Duration::from_secs(2))?;
            s.set_read_timeout(Some(Duration::from_secs(5)))?;
            s.write_all(request.as_bytes())?;
            let mut out = String::new();
            s.read_to_string(&mut out)?;
            Ok(out)
        })
    }

    fn scrape(&self) -> std::io::Result<String> {
        self.http("GET /metrics HTTP/1.1\r\nHost: hipsec\r\nAccept: text/plain\r\n\r\n")
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        for c in &mut self.nodes {
            stop(c);
        }
        let _ = Command::new("ip").args(["netns", "del", &self.name]).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The value of the sample line that starts with `series` (`name{labels}`).
fn value(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn metrics_endpoint_and_json_logs() {
    if !can_run() {
        return;
    }
    let mut ns = Ns::new();
    let log = ns.start("node", "hipsec0", 4500);

    // Up when the endpoint answers.
    let t0 = Instant::now();
    let first = loop {
        if let Ok(r) = ns.scrape() {
            break r;
        }
        if let Some(Ok(Some(st))) = ns.nodes.first_mut().map(|c| c.try_wait()) {
            panic!("node exited ({st}):\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        assert!(t0.elapsed() < Duration::from_secs(15), "no metrics endpoint after 15 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    let (head, body) = first.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("\r\nContent-Type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    assert!(body.lines().any(|l| l == "hipsec_up 1"), "{body}");
    assert_eq!(value(body, "hipsec_drops_total{reason=\"replayed\"}"), Some(0.0), "{body}");
    assert!(body.contains("# TYPE hipsec_drops counter\n") && body.ends_with("# EOF\n"), "{body}");
    let sa = "{spi=\"0x00002001\",direction=\"in\",proto=\"esp\"}";
    assert_eq!(value(body, &format!("hipsec_sa_packets_total{sa}")), Some(0.0), "{body}");
    assert!(body.contains("\nhipsec_worker_cpu_seconds_total{worker=\"0\""), "{body}");

    // Live counters: an ESP datagram with an SPI the node does not have is dropped as no_sa.
    ns.run(|| {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut esp = vec![0u8; 64];
        esp[..4].copy_from_slice(&0x0bad_cafe_u32.to_be_bytes());
        esp[7] = 1; // sequence number 1
        s.send_to(&esp, "127.0.0.1:4500").unwrap();
    });
    let t0 = Instant::now();
    loop {
        let r = ns.scrape().unwrap();
        if value(&r, "hipsec_drops_total{reason=\"no_sa\"}") == Some(1.0) {
            assert_eq!(value(&r, "hipsec_node_net_rx_total"), Some(1.0), "{r}");
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "no_sa never counted:\n{r}");
        std::thread::sleep(Duration::from_millis(100));
    }

    let r = ns.http("GET /nope HTTP/1.1\r\nHost: hipsec\r\n\r\n").unwrap();
    assert!(r.starts_with("HTTP/1.1 404 "), "{r}");
    let r = ns.http("GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    assert!(r.starts_with("HTTP/1.1 400 "), "no Host: {r}");
    let r = ns.http("\u{1}\u{2}garbage\n\n").unwrap();
    assert!(r.starts_with("HTTP/1.1 400 "), "{r}");

    // A second node wanting the same metrics address refuses to start and names the address.
    let log2 = ns.start("second", "hipsec1", 4600);
    let t0 = Instant::now();
    let status = loop {
        if let Some(Ok(Some(st))) = ns.nodes.last_mut().map(|c| c.try_wait()) {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "second node did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&log2).unwrap();
    assert!(!status.success(), "second node ran:\n{err}");
    assert!(err.contains(&format!("metrics listener {METRICS}")), "{err}");
    // The first node still answers.
    assert!(ns.scrape().unwrap().contains("\nhipsec_up 1\n"));

    // Clean stop; then every line of the first node's stderr is one JSON event.
    stop(&mut ns.nodes[0]);
    let text = std::fs::read_to_string(&log).unwrap();
    let mut events = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}\nwhole log:\n{text}"));
        // tracing-subscriber's JSON lines, with our millisecond RFC 3339 timestamps.
        let ts = v["timestamp"].as_str().unwrap_or_else(|| panic!("no timestamp: {line}"));
        assert!(ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{line}");
        assert!(["DEBUG", "INFO", "WARN"].contains(&v["level"].as_str().unwrap_or("")), "{line}");
        let event = v["message"].as_str().unwrap_or_else(|| panic!("no message: {line}"));
        events.push(event.to_string());
    }
    assert!(events.first().is_some_and(|e| e == "up" || e == "tun-offload-refused"), "{events:?}");
    assert!(events.iter().any(|e| e == "up"), "{events:?}");
    assert_eq!(events.last().map(String::as_str), Some("stopped"), "{events:?}");
    let up: serde_json::Value =
        serde_json::from_str(text.lines().find(|l| l.contains("\"message\":\"up\"")).unwrap())
            .unwrap();
    assert_eq!(up["interface"], "hipsec0");
    assert_eq!(up["metrics"], METRICS);
    assert!(up["mtu"].as_u64().is_some_and(|m| (576..1500).contains(&m)), "{up}");
}
