//! A generator of spoofed IKE_SA_INIT requests (RFC 7296 §1.2, §2.6) for the flood test
//! (`ike_flood.rs`): one well-formed request (SA for aes128gcm16-prfsha256-x25519, KE with 32 random
//! bytes, Nonce, the two NAT_DETECTION notifies of §2.23) is built once with the `wire::ikev2`
//! reprs behind an IPv4 + UDP header; per packet only the source address (from a spoofed
//! prefix, 198.18.0.0/15 by default), the source port and SPIi change. It goes out on a raw
//! socket with IP_HDRINCL (socket2's safe API; the kernel fills in the IP checksum and ID, the
//! UDP checksum is 0, allowed over IPv4), paced to a target rate.
//!
//! A raw socket sends in the namespace it was opened in, so the test runs the generator as a
//! child process inside the flooding namespace: its own test binary, re-executed with
//! `HIPSEC_FLOOD` set (see `ike_flood.rs`, test `flood_generator`). A person can do the same:
//!
//! ```text
//! ip netns exec NS env HIPSEC_FLOOD="dst=192.0.2.1:500 rate=60000 secs=10" \
//!     target/debug/deps/ike_flood-HASH flood_generator --exact --nocapture
//! ```
//! It prints one line `FLOOD sent=N secs=S rate=R errors=E` at the end.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};
use wire::ikev2::{
    ExchangeType, Flags, Header, Ke, Message, Notify, NotifyType, Payload, Proposal, ProtocolId,
    Sa, Transform, TransformType, dh, encr, prf,
};

/// Where the IKE message starts in the datagram (IPv4 header without options + UDP header).
const IKE_AT: usize = 28;

/// What to flood, how fast and for how long.
#[derive(Debug, Clone)]
pub struct FloodConfig {
    /// The responder's IKE address (port 500).
    pub dst: SocketAddrV4,
    /// Spoofed sources come from `src_net/src_prefix`.
    pub src_net: Ipv4Addr,
    pub src_prefix: u8,
    /// Requests per second to aim for (0: as fast as the socket takes them).
    pub rate_pps: u64,
    pub duration: Duration,
    /// Seed of the per-packet randomness (SPIs, addresses, ports).
    pub seed: u64,
    /// Once `min_duration` has passed, the flood stops early when this file exists.
    pub stop_file: Option<std::path::PathBuf>,
    pub min_duration: Duration,
}

impl FloodConfig {
    /// From `HIPSEC_FLOOD`'s `key=value` words: dst, src (a.b.c.d/n), rate, secs, seed, and
    /// stop (a file whose appearance ends the flood once min_secs have passed).
    pub fn parse(s: &str) -> FloodConfig {
        let mut c = FloodConfig {
            dst: "192.0.2.1:500".parse().unwrap(),
            src_net: Ipv4Addr::new(198, 18, 0, 0),
            src_prefix: 15,
            rate_pps: 60_000,
            duration: Duration::from_secs(10),
            seed: 0x1ce_f100d,
            stop_file: None,
            min_duration: Duration::ZERO,
        };
        for w in s.split_whitespace() {
            let (k, v) = w.split_once('=').unwrap_or_else(|| panic!("HIPSEC_FLOOD: {w:?}"));
            match k {
                "dst" => c.dst = v.parse().unwrap(),
                "src" => {
                    let (a, n) = v.split_once('/').unwrap();
                    c.src_net = a.parse().unwrap();
                    c.src_prefix = n.parse().unwrap();
                }
                "rate" => c.rate_pps = v.parse().unwrap(),
                "secs" => c.duration = Duration::from_secs_f64(v.parse().unwrap()),
                "seed" => c.seed = v.parse().unwrap(),
                "stop" => c.stop_file = Some(v.into()),
                "min_secs" => c.min_duration = Duration::from_secs_f64(v.parse().unwrap()),
                _ => panic!("HIPSEC_FLOOD: unknown key {k:?}"),
            }
        }
        c
    }
}

/// What the generator did.
#[derive(Debug, Clone, Copy)]
pub struct FloodReport {
    pub sent: u64,
    pub errors: u64,
    pub secs: f64,
}

impl FloodReport {
    pub fn rate_pps(&self) -> f64 {
        self.sent as f64 / self.secs.max(1e-9)
    }

    /// The generator's last line, read back by the test.
    pub fn line(&self) -> String {
        format!(
            "FLOOD sent={} secs={:.3} rate={:.0} errors={}",
            self.sent,
            self.secs,
            self.rate_pps(),
            self.errors
        )
    }

    pub fn from_line(out: &str) -> Option<FloodReport> {
        // The test harness may print "test flood_generator ... " on the same line.
        let l = out.lines().rev().find_map(|l| l.find("FLOOD ").map(|i| &l[i..]))?;
        let get = |k: &str| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
                .map(str::to_owned)
        };
        Some(FloodReport {
            sent: get("sent")?.parse().ok()?,
            secs: get("secs")?.parse().ok()?,
            errors: get("errors")?.parse().ok()?,
        })
    }
}

/// xorshift64*: cheap and reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The IKE_SA_INIT request every spoofed packet carries (SPIi patched per packet).
pub fn ike_sa_init(rng_seed: u64) -> Vec<u8> {
    let mut rng = Rng(rng_seed | 1);
    let proposal = Proposal {
        num: 1,
        protocol_id: ProtocolId::IKE,
        spi: Vec::new(),
        transforms: vec![
            Transform::with_key_length(TransformType::ENCR, encr::AES_GCM_16, 128),
            Transform::new(TransformType::PRF, prf::HMAC_SHA2_256),
            Transform::new(TransformType::DH, dh::CURVE25519),
        ],
    };
    let m = Message {
        header: Header {
            spi_i: 1,
            spi_r: 0,
            exchange_type: ExchangeType::IKE_SA_INIT,
            flags: Flags { initiator: true, version: false, response: false },
            message_id: 0,
        },
        payloads: vec![
            Payload::Sa(Sa { proposals: vec![proposal] }),
            Payload::Ke(Ke { dh_group: dh::CURVE25519, data: rng.bytes(32) }),
            Payload::Nonce(rng.bytes(32)),
            Payload::Notify(Notify::new(NotifyType::NAT_DETECTION_SOURCE_IP, rng.bytes(20))),
            Payload::Notify(Notify::new(NotifyType::NAT_DETECTION_DESTINATION_IP, rng.bytes(20))),
        ],
    };
    m.to_vec().unwrap()
}

/// IPv4 + UDP + `ike`, source to be patched; the kernel fills the IP checksum and ID.
fn datagram(dst: SocketAddrV4, ike: &[u8]) -> Vec<u8> {
    let total = IKE_AT + ike.len();
    let udp_len = 8 + ike.len();
    let mut p = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 17, 0, 0];
    p.extend_from_slice(&[0, 0, 0, 0]);
    p.extend_from_slice(&dst.ip().octets());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(&dst.port().to_be_bytes());
    p.extend_from_slice(&(udp_len as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(ike);
    p
}

/// Floods until `c.duration` has passed (or the stop file appears after `c.min_duration`);
/// paced in bursts of 32 to `c.rate_pps`.
pub fn run(c: &FloodConfig) -> FloodReport {
    let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::UDP)).unwrap();
    sock.set_header_included_v4(true).unwrap();
    let _ = sock.set_send_buffer_size(4 << 20);
    let to = SockAddr::from(SocketAddrV4::new(*c.dst.ip(), 0));
    let mut pkt = datagram(c.dst, &ike_sa_init(c.seed));
    let mut rng = Rng(c.seed | 1);
    let net = u32::from(c.src_net);
    let host_mask = if c.src_prefix >= 32 { 0 } else { u32::MAX >> c.src_prefix };
    let (mut sent, mut errors, mut bursts) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    loop {
        let t = start.elapsed();
        if t >= c.duration {
            break;
        }
        if t >= c.min_duration
            && bursts % 256 == 0
            && c.stop_file.as_ref().is_some_and(|f| f.exists())
        {
            break;
        }
        if c.rate_pps > 0 {
            let due = (t.as_secs_f64() * c.rate_pps as f64) as u64;
            if sent >= due {
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
        }
        bursts += 1;
        for _ in 0..32 {
            let r = rng.next();
            let src = (net & !host_mask) | ((r as u32) & host_mask);
            pkt[12..16].copy_from_slice(&src.to_be_bytes());
            let port = 1024 + ((r >> 32) as u16 % 64_000);
            pkt[20..22].copy_from_slice(&port.to_be_bytes());
            let spi = rng.next() | 1;
            pkt[IKE_AT..IKE_AT + 8].copy_from_slice(&spi.to_be_bytes());
            match sock.send_to(&pkt, &to) {
                Ok(_) => sent += 1,
                Err(_) => errors += 1,
            }
        }
    }
    FloodReport { sent, errors, secs: start.elapsed().as_secs_f64() }
}

/// How many of the IKE messages in a pcap file (Ethernet, IPv4, UDP from port 500) are
/// IKE_SA_INIT responses carrying a COOKIE notify; returns (cookies, all IKE messages).
pub fn count_cookies(pcap: &std::path::Path) -> (u64, u64) {
    let f = std::fs::File::open(pcap).unwrap();
    let mut r = pcap_file::pcap::PcapReader::new(f).unwrap();
    let (mut cookies, mut all) = (0, 0);
    while let Some(Ok(p)) = r.next_packet() {
        let d = &p.data[..];
        // Ethernet II, IPv4 only.
        if d.len() < 14 + 20 + 8 || d[12..14] != [0x08, 0x00] {
            continue;
        }
        let ihl = usize::from(d[14] & 0x0f) * 4;
        if d[14 + 9] != 17 || d.len() < 14 + ihl + 8 {
            continue;
        }
        let ike = &d[14 + ihl + 8..];
        let Ok(m) = Message::parse(ike) else { continue };
        all += 1;
        if m.header.exchange_type == ExchangeType::IKE_SA_INIT
            && m.header.flags.response
            && m.notify(NotifyType::COOKIE).is_some()
        {
            cookies += 1;
        }
    }
    (cookies, all)
}
