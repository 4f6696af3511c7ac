//! Test helpers: build IP packets and pcap/pcapng files byte by byte, run the `hipsec` binary.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod markdown;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_hipsec");

/// The answers `ping -q`'s summary reports ("5 packets transmitted, 5 received, ..."); 0 if
/// there is no summary.
pub fn ping_received(stdout: &[u8]) -> u64 {
    String::from_utf8_lossy(stdout)
        .split(',')
        .find_map(|f| f.trim().strip_suffix(" received").and_then(|n| n.trim().parse().ok()))
        .unwrap_or(0)
}

/// A fresh directory under target/tmp for one test.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hipsec-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// IPv4 packet with a valid header checksum carrying `proto` and `payload`.
pub fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
    let total = 20 + payload.len();
    let mut p =
        vec![0x45, 0, (total >> 8) as u8, total as u8, 0x12, 0x34, 0x40, 0, 64, proto, 0, 0];
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    let c = checksum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// IPv6 packet.
pub fn ipv6(src: [u8; 16], dst: [u8; 16], proto: u8, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut p = vec![0x60, 0, 0, 0, (n >> 8) as u8, n as u8, proto, 64];
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(payload);
    p
}

/// UDP header + payload (checksum 0, which IPv4 allows; fine for the tools, which never check it).
pub fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = 8 + payload.len();
    let mut u = Vec::with_capacity(len);
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&(len as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

pub const A4: [u8; 4] = [192, 0, 2, 1];
pub const B4: [u8; 4] = [192, 0, 2, 2];
pub const A6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
pub const B6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// A classic little-endian microsecond pcap.
pub fn pcap(link: u32, frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&link.to_le_bytes());
    for (ts_us, data) in frames {
        f.extend_from_slice(&((ts_us / 1_000_000) as u32).to_le_bytes());
        f.extend_from_slice(&((ts_us % 1_000_000) as u32).to_le_bytes());
        f.extend_from_slice(&(data.len() as u32).to_le_bytes());
        f.extend_from_slice(&(data.len() as u32).to_le_bytes());
        f.extend_from_slice(data);
    }
    f
}

fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    while body.len() % 4 != 0 {
        body.push(0);
    }
    let len = (12 + body.len()) as u32;
    let mut b = Vec::new();
    b.extend_from_slice(&kind.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

/// A pcapng with one interface of `link` and default (microsecond) timestamps.
pub fn pcapng(link: u16, frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    pcapng_with_resol(link, None, frames)
}

/// A pcapng whose interface has the `if_tsresol` option `resol` (timestamps in those units).
pub fn pcapng_with_resol(link: u16, resol: Option<u8>, frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    let mut f = block(0x0a0d_0d0a, &shb);
    let mut idb = Vec::new();
    idb.extend_from_slice(&link.to_le_bytes());
    idb.extend_from_slice(&0u16.to_le_bytes());
    idb.extend_from_slice(&0u32.to_le_bytes());
    if let Some(r) = resol {
        idb.extend_from_slice(&[9, 0, 1, 0, r, 0, 0, 0, 0, 0, 0, 0]);
    }
    f.extend(block(1, &idb));
    for (ts, data) in frames {
        let mut epb = Vec::new();
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(*ts as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(data);
        f.extend(block(6, &epb));
    }
    f
}

/// The frames of a pcap the tool wrote (timestamp in µs, bytes).
pub fn read_frames(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let bytes = std::fs::read(path).unwrap();
    let cap = hipsec::capture::read(&bytes).unwrap();
    cap.frames.into_iter().map(|f| (f.ts.as_micros() as u64, f.data)).collect()
}

pub fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `hipsec pcap <cmd> --json` and returns (exit ok?, summary JSON, stderr).
pub fn tool_json(
    cmd: &str,
    sa: &Path,
    input: &Path,
    output: &Path,
    extra: &[&str],
) -> (Output, serde_json::Value) {
    let mut args = vec!["pcap", cmd, "--json", "--sa", sa.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push(input.to_str().unwrap());
    args.push(output.to_str().unwrap());
    let o = run(&args);
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o, v)
}

pub const GCM_TUNNEL: &str = r#"
[[sa]]
src = "198.51.100.1"
dst = "198.51.100.2"
proto = "esp"
spi = "0x00001000"
mode = "tunnel"
aead = "aes128gcm"
key = "0x2ff0aab31e8889bbcbd4b3020ed34eae6d6d70eb"
"#;

/// Whether the netns tests can run here: root, `ip netns`, /dev/net/tun and every tool of
/// `tools` on the PATH; otherwise prints what is missing as SKIPPED.
pub fn netns_ready(tools: &[&str]) -> bool {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let ip = Command::new("ip").args(["netns", "list"]).output().is_ok_and(|o| o.status.success());
    let have = |t: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !(root && ip && Path::new("/dev/net/tun").exists() && tools.iter().all(|t| have(t))) {
        let extra: String = tools.iter().map(|t| format!(", {t}")).collect();
        println!("SKIPPED: needs root, ip netns, /dev/net/tun{extra}");
        return false;
    }
    true
}

/// Runs a setup command; fails the test with its stderr if it fails.
pub fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Two namespaces `{base}-a` and `{base}-b` joined by the veth pair va (192.0.2.1/24) — vb
/// (192.0.2.2/24), both up, loopback too.
pub fn two_namespaces(base: &str) -> [String; 2] {
    let ns = [format!("{base}-a"), format!("{base}-b")];
    sh(&["ip", "netns", "add", &ns[0]]);
    sh(&["ip", "netns", "add", &ns[1]]);
    sh(&[
        "ip", "link", "add", "va", "netns", &ns[0], "type", "veth", "peer", "name", "vb", "netns",
        &ns[1],
    ]);
    for (i, dev) in [(0usize, "va"), (1, "vb")] {
        sh(&["ip", "-n", &ns[i], "link", "set", "lo", "up"]);
        sh(&["ip", "-n", &ns[i], "addr", "add", &format!("192.0.2.{}/24", i + 1), "dev", dev]);
        sh(&["ip", "-n", &ns[i], "link", "set", dev, "up"]);
    }
    ns
}

/// Starts `hipsec run -c DIR/I.toml EXTRA...` in namespace `ns`, output to DIR/I.log, and waits
/// (up to 10 s) until its control socket DIR/I.sock exists; the test fails with the log if not.
pub fn start_node(ns: &str, dir: &Path, i: usize, extra: &[&str]) -> std::process::Child {
    let log = std::fs::File::create(dir.join(format!("{i}.log"))).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", ns, BIN, "run", "-c"])
        .arg(dir.join(format!("{i}.toml")))
        .args(extra)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !dir.join(format!("{i}.sock")).exists() {
        let log = std::fs::read_to_string(dir.join(format!("{i}.log"))).unwrap_or_default();
        assert!(std::time::Instant::now() < deadline, "node {i} did not start: {log}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child
}
