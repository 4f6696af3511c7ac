//! `hipsec bench esp`: single-core ESP seal/open throughput beside the raw cipher on the same
//! bytes, measured in the same run and reported as a ratio.
//!
//! Method: for each suite and size, rounds of the raw reference and of ESP alternate (so drift on
//! the machine hits both alike) and each reports packets/s; the medians are compared. "Size" is
//! the IP packet that ESP protects (tunnel mode, IPv4 outer); the raw reference seals or opens
//! exactly that many bytes with the provider's AEAD (or CBC + HMAC) call and an 8-byte AAD.

use crypto::{EncrAlg, EspSuite, IntegAlg, Provider};
use ipsec::{Engine, Lifetime, Mode, PacketBuf, SaParams, Spi, Time, sa::Protocol};
use serde::Serialize;
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// Arguments of `hipsec bench esp`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchEspArgs {
    /// Suite to measure (default: every suite). Legacy suites (3des-sha1, aes128cbc-sha1) are marked.
    #[arg(long)]
    pub suite: Option<String>,
    /// IP packet size in bytes (default: 64, 512, 1420 and 8192).
    #[arg(long)]
    pub size: Option<usize>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Seconds of measurement per cell and operation (split into rounds; medians are reported).
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
}

const SIZES: [usize; 4] = [64, 512, 1420, 8192];
const HEADROOM: usize = 128;

/// One measured cell.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Suite name.
    pub suite: String,
    /// True for 3DES / HMAC-SHA1 suites.
    pub legacy: bool,
    /// IP packet size in bytes.
    pub size: usize,
    /// "seal" or "open".
    pub op: &'static str,
    /// ESP packets per second (median of rounds).
    pub esp_pps: f64,
    /// ESP throughput of protected IP bytes, Gbit/s.
    pub esp_gbps: f64,
    /// Raw cipher operations per second (median of rounds).
    pub raw_pps: f64,
    /// Raw cipher throughput, Gbit/s.
    pub raw_gbps: f64,
    /// esp_pps / raw_pps.
    pub ratio: f64,
    /// Rounds measured of each.
    pub rounds: usize,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Crypto provider.
    pub provider: &'static str,
    /// Machine description.
    pub machine: Machine,
    /// Cells.
    pub cells: Vec<Cell>,
}

/// Where the numbers were taken.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// CPU model from /proc/cpuinfo.
    pub cpu: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// Kernel release.
    pub kernel: String,
}

impl Machine {
    /// Reads the description from /proc.
    pub fn probe() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        Machine { cpu, cpus: std::thread::available_parallelism().map_or(1, |n| n.get()), kernel }
    }
}

fn params(suite: EspSuite) -> SaParams {
    let key = |n: usize, s: u8| Zeroizing::new((0..n).map(|i| (i as u8) ^ s).collect::<Vec<u8>>());
    SaParams {
        spi: Spi(0x1000),
        protocol: Protocol::Esp(suite),
        mode: Mode::Tunnel,
        src: std::net::Ipv4Addr::new(192, 0, 2, 1).into(),
        dst: std::net::Ipv4Addr::new(192, 0, 2, 2).into(),
        enc_key: key(suite.encr.key_len(), 0x11),
        auth_key: key(suite.integ.key_len(), 0x22),
        esn: false,
        replay_window: 4096,
        soft: Lifetime::default(),
        hard: Lifetime::default(),
    }
}

/// An IPv4/UDP packet of exactly `size` bytes (at least 28).
pub(crate) fn inner_packet(size: usize) -> Vec<u8> {
    let size = size.max(28);
    let mut p = vec![0u8; size];
    p[0] = 0x45;
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[10, 1, 0, 1]);
    p[16..20].copy_from_slice(&[10, 2, 0, 1]);
    for (i, b) in p[28..].iter_mut().enumerate() {
        *b = i as u8;
    }
    // Length and checksum; `size` fits in u16 for every size we offer.
    let _ = wire::ip::set_total_len(&mut p, wire::IpVersion::V4);
    p
}

/// The raw reference: the provider's primitive on the same bytes, no ESP.
enum Raw {
    Aead(Box<dyn crypto::Aead>),
    Cbc(Box<dyn crypto::BlockCipher>, Option<Box<dyn crypto::Mac>>, usize),
    Null(Box<dyn crypto::Mac>),
}

impl Raw {
    fn new(suite: EspSuite, p: &SaParams, prov: &dyn Provider) -> Result<Raw, String> {
        let e = |e: crypto::CryptoError| e.to_string();
        let mac = match suite.integ {
            IntegAlg::Hmac(h) => Some(prov.hmac(h, &p.auth_key).map_err(e)?),
            _ => None,
        };
        Ok(match (suite.encr, mac) {
            (EncrAlg::Aead(a), _) => Raw::Aead(prov.aead(a, &p.enc_key[..a.key_len()]).map_err(e)?),
            (EncrAlg::Cbc(c), mac) => {
                Raw::Cbc(prov.cbc(c, &p.enc_key).map_err(e)?, mac, suite.icv_len())
            }
            (EncrAlg::Null, Some(mac)) => Raw::Null(mac),
            (EncrAlg::Null, None) => return Err("null suite without integrity".into()),
        })
    }

    /// Bytes the raw operation works on for an IP packet of `size` (CBC rounds up to blocks).
    fn len(&self, size: usize) -> usize {
        match self {
            Raw::Cbc(c, _, _) => size.div_ceil(c.block_len()) * c.block_len(),
            _ => size,
        }
    }

    fn seal(&self, n: u64, data: &mut [u8], tag: &mut [u8]) -> Result<(), crypto::CryptoError> {
        let mut nonce = [0u8; 12];
        nonce[4..].copy_from_slice(&n.to_be_bytes());
        match self {
            Raw::Aead(a) => a.seal_in_place(&nonce, &nonce[..8], data, &mut tag[..16]),
            Raw::Cbc(c, mac, icv) => {
                c.encrypt_cbc(&[7u8; 16][..c.block_len()], data)?;
                match mac {
                    Some(m) => m.compute(&[&nonce[..8], data], &mut tag[..*icv]),
                    None => Ok(()),
                }
            }
            Raw::Null(m) => m.compute(&[&nonce[..8], data], &mut tag[..16]),
        }
    }

    fn open(&self, n: u64, data_tag: &mut [u8], len: usize) -> Result<(), crypto::CryptoError> {
        let mut nonce = [0u8; 12];
        nonce[4..].copy_from_slice(&n.to_be_bytes());
        match self {
            Raw::Aead(a) => a.open_in_place(&nonce, &nonce[..8], data_tag).map(|_| ()),
            Raw::Cbc(c, mac, icv) => {
                let (data, tag) = data_tag.split_at_mut(len);
                if let Some(m) = mac {
                    m.verify(&[&nonce[..8], data], &tag[..*icv])?;
                }
                c.decrypt_cbc(&[7u8; 16][..c.block_len()], data)
            }
            Raw::Null(m) => {
                let (data, tag) = data_tag.split_at_mut(len);
                m.verify(&[&nonce[..8], data], &tag[..16])
            }
        }
    }
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Packets per round: enough to take about a millisecond or more, bounded in memory.
fn batch_len(size: usize) -> usize {
    (8 << 20) / (size + HEADROOM + 64)
}

pub(crate) fn measure_seal(suite: EspSuite, size: usize, budget: Duration) -> Result<Cell, String> {
    let prov = crypto::default_provider();
    let p = params(suite);
    let raw = Raw::new(suite, &p, prov)?;
    let mut engine = Engine::new(prov);
    let h = engine.add_outbound(&p, Time(0)).map_err(|e| e.to_string())?;
    let pkt = inner_packet(size);
    let mut buf = PacketBuf::new(HEADROOM + size + 128, HEADROOM);
    let mut raw_buf = vec![0u8; raw.len(size) + 64];
    let n = batch_len(size).max(256);
    let (mut esp_rates, mut raw_rates) = (Vec::new(), Vec::new());
    let start = Instant::now();
    let mut seq = 0u64;
    while start.elapsed() < budget || esp_rates.len() < 3 {
        let t = Instant::now();
        let rl = raw.len(size);
        for _ in 0..n {
            seq += 1;
            let (d, tag) = raw_buf.split_at_mut(rl);
            raw.seal(seq, d, tag).map_err(|e| e.to_string())?;
        }
        raw_rates.push(n as f64 / t.elapsed().as_secs_f64());

        buf.load(&pkt, HEADROOM).map_err(|e| e.to_string())?;
        let t = Instant::now();
        for _ in 0..n {
            // The packet "arrives": its IP header is fresh, its body is whatever the last
            // encryption left (the cost does not depend on the bytes).
            buf.set_window(HEADROOM, size).map_err(|e| e.to_string())?;
            buf.as_mut_slice()[..20].copy_from_slice(&pkt[..20]);
            engine.protect_with(&[h], &mut buf, Time(0)).map_err(|d| d.to_string())?;
        }
        esp_rates.push(n as f64 / t.elapsed().as_secs_f64());
    }
    Ok(cell(suite, size, "seal", &mut esp_rates, &mut raw_rates))
}

/// Bytes the suite adds to an inner packet in tunnel mode (outer IPv4 header, ESP header, IV,
/// padding, trailer and ICV), averaged over inner sizes 1000..1015 (padding varies).
pub(crate) fn overhead_bytes(suite: EspSuite) -> Result<f64, String> {
    let p = params(suite);
    let mut engine = Engine::new(crypto::default_provider());
    let h = engine.add_outbound(&p, Time(0)).map_err(|e| e.to_string())?;
    let mut added = 0usize;
    for size in 1000..1016 {
        let mut buf = PacketBuf::new(HEADROOM + size + 128, HEADROOM);
        buf.load(&inner_packet(size), HEADROOM).map_err(|e| e.to_string())?;
        engine.protect_with(&[h], &mut buf, Time(0)).map_err(|d| d.to_string())?;
        added += buf.len().saturating_sub(size);
    }
    Ok(added as f64 / 16.0)
}

fn cell(suite: EspSuite, size: usize, op: &'static str, esp: &mut [f64], raw: &mut [f64]) -> Cell {
    let rounds = esp.len();
    let (e, r) = (median(esp), median(raw));
    let gbps = |pps: f64| pps * size as f64 * 8.0 / 1e9;
    Cell {
        suite: suite.to_string(),
        legacy: suite.is_legacy(),
        size,
        op,
        esp_pps: e,
        esp_gbps: gbps(e),
        raw_pps: r,
        raw_gbps: gbps(r),
        ratio: if r > 0.0 { e / r } else { 0.0 },
        rounds,
    }
}

pub(crate) fn measure_open(suite: EspSuite, size: usize, budget: Duration) -> Result<Cell, String> {
    let prov = crypto::default_provider();
    let p = params(suite);
    let raw = Raw::new(suite, &p, prov)?;
    let rl = raw.len(size);
    let n = batch_len(size).clamp(256, 4096);
    // Distinct sealed packets (each sequence number once), and distinct raw ciphertexts.
    let mut tx = Engine::new(prov);
    let h = tx.add_outbound(&p, Time(0)).map_err(|e| e.to_string())?;
    let pkt = inner_packet(size);
    let mut sealed = Vec::with_capacity(n);
    let mut raw_sealed = Vec::with_capacity(n);
    let mut b = PacketBuf::new(HEADROOM + size + 128, HEADROOM);
    for i in 0..n {
        b.load(&pkt, HEADROOM).map_err(|e| e.to_string())?;
        tx.protect_with(&[h], &mut b, Time(0)).map_err(|d| d.to_string())?;
        sealed.push(b.as_slice().to_vec());
        let mut r = vec![0u8; rl + 64];
        r[..size].copy_from_slice(&pkt);
        let (d, tag) = r.split_at_mut(rl);
        raw.seal(i as u64, d, tag).map_err(|e| e.to_string())?;
        r.truncate(rl + suite.icv_len());
        raw_sealed.push(r);
    }
    let mut bufs: Vec<PacketBuf> =
        (0..n).map(|_| PacketBuf::new(HEADROOM + size + 128, HEADROOM)).collect();
    let mut raw_bufs = raw_sealed.clone();
    let (mut esp_rates, mut raw_rates) = (Vec::new(), Vec::new());
    let start = Instant::now();
    while start.elapsed() < budget || esp_rates.len() < 3 {
        for (dst, src) in raw_bufs.iter_mut().zip(&raw_sealed) {
            dst.copy_from_slice(src);
        }
        let t = Instant::now();
        for (i, r) in raw_bufs.iter_mut().enumerate() {
            raw.open(i as u64, r, rl).map_err(|e| format!("raw open: {e}"))?;
        }
        raw_rates.push(n as f64 / t.elapsed().as_secs_f64());

        let mut rx = Engine::new(prov);
        rx.add_inbound(&p, Time(0)).map_err(|e| e.to_string())?;
        for (dst, src) in bufs.iter_mut().zip(&sealed) {
            dst.load(src, HEADROOM).map_err(|e| e.to_string())?;
        }
        let t = Instant::now();
        for b in bufs.iter_mut() {
            rx.inbound(b, Time(0)).map_err(|d| format!("esp open: {d}"))?;
        }
        esp_rates.push(n as f64 / t.elapsed().as_secs_f64());
    }
    Ok(cell(suite, size, "open", &mut esp_rates, &mut raw_rates))
}

/// Measures the requested cells.
pub fn measure(args: &BenchEspArgs, progress: bool) -> Result<Report, String> {
    let suites: Vec<EspSuite> = match &args.suite {
        Some(s) => vec![s.parse().map_err(|e: crypto::SuiteError| e.to_string())?],
        None => EspSuite::all(),
    };
    let sizes: Vec<usize> = match args.size {
        Some(s) if (28..=65000).contains(&s) => vec![s],
        Some(s) => {
            return Err(format!("--size {s}: must be 28..=65000 bytes (an IPv4/UDP packet)"));
        }
        None => SIZES.to_vec(),
    };
    if !(args.seconds > 0.0 && args.seconds <= 600.0) {
        return Err(format!("--seconds {}: must be in (0, 600]", args.seconds));
    }
    let budget = Duration::from_secs_f64(args.seconds);
    let mut cells = Vec::new();
    let total = suites.len() * sizes.len() * 2;
    for suite in &suites {
        for &size in &sizes {
            for op in ["seal", "open"] {
                if progress {
                    eprint!("\r[{}/{}] {suite} {size} B {op}          ", cells.len() + 1, total);
                }
                cells.push(match op {
                    "seal" => measure_seal(*suite, size, budget)?,
                    _ => measure_open(*suite, size, budget)?,
                });
            }
        }
    }
    if progress {
        eprintln!();
    }
    Ok(Report { provider: crypto::default_provider().name(), machine: Machine::probe(), cells })
}

/// Runs the benchmark and prints the table or JSON.
pub fn run(args: &BenchEspArgs) -> Result<(), String> {
    let report = measure(args, !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr()))?;
    if args.json {
        let s = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        println!("{s}");
        return Ok(());
    }
    println!(
        "ESP single-core throughput vs the raw cipher ({}; {}, {} CPUs, Linux {})",
        report.provider, report.machine.cpu, report.machine.cpus, report.machine.kernel
    );
    println!(
        "{:<22} {:>6} {:<5} {:>10} {:>9} {:>10} {:>9} {:>7}",
        "suite", "bytes", "op", "ESP Mpps", "ESP Gb/s", "raw Mpps", "raw Gb/s", "ratio"
    );
    for c in &report.cells {
        let name = if c.legacy { format!("{} (legacy)", c.suite) } else { c.suite.clone() };
        println!(
            "{:<22} {:>6} {:<5} {:>10.3} {:>9.2} {:>10.3} {:>9.2} {:>7.3}",
            name,
            c.size,
            c.op,
            c.esp_pps / 1e6,
            c.esp_gbps,
            c.raw_pps / 1e6,
            c.raw_gbps,
            c.ratio
        );
    }
    println!(
        "medians of alternating rounds; ratio = ESP packets/s ÷ raw cipher calls/s on the same bytes"
    );
    Ok(())
}
