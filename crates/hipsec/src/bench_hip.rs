//! `hipsec bench hip`: the HIP base exchange in process.
//!
//! 1. Phases: the Responder's I1 → R1 (T1 of seed 001), the Initiator's R1 → I2 (T2: puzzle,
//!    Diffie-Hellman, signature), the Responder's I2 → R2 (T3) and the Initiator's R2 (T4),
//!    median of `--rounds` exchanges per puzzle difficulty K, on one core, no network.
//! 2. The Responder under an I1 flood: R1s per second for I1s from distinct (spoofed) HITs,
//!    and the resident memory before and after (a stateless Responder keeps none), beside the
//!    floor measured in the same run: the HMAC for #I and the checksum alone on the same bytes.

use hip::bex::Config;
use hip::bex::initiator::I1Sent;
use hip::bex::responder::Responder;
use hip::identity::HiKind;
use hip::{HitSuite, HostIdentityTag, LocalHost};
use serde::Serialize;
use std::net::{IpAddr, Ipv6Addr};
use std::time::{Duration, Instant};

/// Arguments of `hipsec bench hip`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchHipArgs {
    /// Puzzle difficulties to measure.
    #[arg(long, value_delimiter = ',', default_value = "0,10,16")]
    pub k: Vec<u8>,
    /// Exchanges per K (medians are reported).
    #[arg(long, default_value_t = 50)]
    pub rounds: usize,
    /// Host identities: ECDSA p256 or p384, or rsa2048 (HIT suite RSA,DSA/SHA-256).
    #[arg(long, default_value = "p256", value_parser = ["p256", "p384", "rsa2048"])]
    pub curve: String,
    /// Seconds of I1 flood.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// One K's phase medians, microseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Phases {
    /// Puzzle difficulty.
    pub k: u8,
    /// Responder, I1 → R1.
    pub t1_us: f64,
    /// Initiator, R1 → I2.
    pub t2_us: f64,
    /// Of T2, the puzzle alone (median hashes × the hash cost).
    pub puzzle_tries: f64,
    /// Responder, I2 → R2.
    pub t3_us: f64,
    /// Initiator, R2 → established.
    pub t4_us: f64,
    /// T1 + T2 + T3 + T4 (the base exchange without the network).
    pub total_us: f64,
}

/// The flood's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Flood {
    /// R1s per second from one core.
    pub r1_per_s: f64,
    /// The floor: HMAC-SHA-384 for #I plus the R1 checksum, per second.
    pub floor_per_s: f64,
    /// r1_per_s / floor_per_s.
    pub ratio: f64,
    /// I1s answered.
    pub i1s: u64,
    /// Resident memory growth over the flood, bytes.
    pub rss_growth: i64,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Per K.
    pub phases: Vec<Phases>,
    /// The flood.
    pub flood: Flood,
}

const A: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
const B: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get((v.len().max(1) - 1) / 2).copied().unwrap_or(f64::NAN)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn rss() -> i64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|x| x.parse::<i64>().ok()))
        .unwrap_or(0)
        * 4096
}

pub(crate) fn phases(k: u8, rounds: usize, kind: HiKind) -> Result<Phases, String> {
    let e = |x: hip::Error| x.to_string();
    let p = crypto::default_provider();
    let hi = LocalHost::generate_kind(kind).map_err(e)?;
    let hr = LocalHost::generate_kind(kind).map_err(e)?;
    let config = Config { puzzle_k: k, ..Config::default() };
    let resp = Responder::new(&hr, config.clone(), p).map_err(e)?;
    let (mut t1, mut t2, mut t3, mut t4, mut tries, mut total) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..rounds.max(1) {
        let s = I1Sent::start(&hi, hr.hit(), config.clone(), A, B).map_err(e)?;
        let t = Instant::now();
        let r1 = resp.on_i1(&hr.hit(), s.i1(), A, B).map_err(e)?;
        let a = t.elapsed();
        let t = Instant::now();
        let (s, work) = s.on_r1(&hi, p, &r1, B, A).map_err(|r| e(r.error))?;
        let b = t.elapsed();
        let t = Instant::now();
        let (r2, _) = resp.on_i2(&hr, s.i2(), A, B).map_err(e)?;
        let c = t.elapsed();
        let t = Instant::now();
        s.on_r2(&r2, B, A).map_err(|r| e(r.error))?;
        let d = t.elapsed();
        t1.push(us(a));
        t2.push(us(b));
        t3.push(us(c));
        t4.push(us(d));
        tries.push(work.puzzle_tries as f64);
        total.push(us(a + b + c + d));
    }
    Ok(Phases {
        k,
        t1_us: median(&mut t1),
        t2_us: median(&mut t2),
        puzzle_tries: median(&mut tries),
        t3_us: median(&mut t3),
        t4_us: median(&mut t4),
        total_us: median(&mut total),
    })
}

fn flood(seconds: f64, kind: HiKind) -> Result<Flood, String> {
    let e = |x: hip::Error| x.to_string();
    let p = crypto::default_provider();
    let hr = LocalHost::generate_kind(kind).map_err(e)?;
    let resp = Responder::new(&hr, Config::default(), p).map_err(e)?;
    let me = hr.hit();
    // Spoofed Initiators: a fresh HIT per I1, I1s made ahead.
    let i1s: Vec<Vec<u8>> = (0..4096u32)
        .map(|n| {
            let hit = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, &n.to_be_bytes());
            let m = wire::hip::Message::new(wire::hip::Header::new(
                wire::hip::PacketType::I1,
                hit.0,
                me.0,
            ))
            .with(wire::hip::DhGroupList { groups: vec![wire::hip::DhGroupId::NIST_P256] });
            let mut v = m.to_vec().map_err(|x| x.to_string())?;
            wire::hip::fill_checksum(A, B, &mut v).map_err(|x| x.to_string())?;
            Ok(v)
        })
        .collect::<Result<_, String>>()?;
    let r1_len = resp.on_i1(&me, &i1s[0], A, B).map_err(e)?.len();
    let before = rss();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let t = Instant::now();
    let mut n = 0u64;
    while Instant::now() < deadline {
        for i1 in &i1s {
            std::hint::black_box(resp.on_i1(&me, i1, A, B).map_err(e)?);
        }
        n += i1s.len() as u64;
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    let growth = rss() - before;
    // The floor, same run: #I's HMAC and the checksum over an R1's bytes.
    let key = [7u8; 48];
    let prf = crypto::Prf::new(crypto::PrfAlg::HmacSha384, &key);
    let mut buf = vec![0u8; r1_len];
    let deadline = Instant::now() + Duration::from_secs_f64(seconds.min(1.0));
    let t = Instant::now();
    let mut m = 0u64;
    while Instant::now() < deadline {
        for k in 0..4096u32 {
            let i = prf.compute(&[&k.to_be_bytes(), &me.0]);
            buf[8..8 + 16].copy_from_slice(&i[..16]);
            std::hint::black_box(wire::hip::compute_checksum(B, A, &buf));
        }
        m += 4096;
    }
    let floor = m as f64 / t.elapsed().as_secs_f64();
    Ok(Flood {
        r1_per_s: rate,
        floor_per_s: floor,
        ratio: rate / floor,
        i1s: n,
        rss_growth: growth,
    })
}

/// Runs the benchmark.
pub fn measure(args: &BenchHipArgs) -> Result<Report, String> {
    let curve = match args.curve.as_str() {
        "p384" => HiKind::Ecdsa(crypto::EcCurve::P384),
        "rsa2048" => HiKind::Rsa(2048),
        _ => HiKind::Ecdsa(crypto::EcCurve::P256),
    };
    if let Some(k) = args.k.iter().find(|&&k| k > hip::puzzle::MAX_SOLVABLE_K) {
        return Err(format!("--k {k}: at most {}", hip::puzzle::MAX_SOLVABLE_K));
    }
    let mut out = Vec::new();
    for &k in &args.k {
        eprintln!("bench hip: K = {k}, {} exchanges", args.rounds);
        out.push(phases(k, args.rounds, curve)?);
    }
    eprintln!("bench hip: I1 flood, {} s", args.seconds);
    Ok(Report { phases: out, flood: flood(args.seconds, curve)? })
}

/// Runs and prints.
pub fn run(args: &BenchHipArgs) -> Result<(), String> {
    let r = measure(args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!(
        "bench hip: base exchange in process, {} host identities, medians of {} exchanges",
        args.curve, args.rounds
    );
    println!(
        "{:>3} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "K", "T1 us", "T2 us", "T3 us", "T4 us", "total us", "hashes"
    );
    for p in &r.phases {
        println!(
            "{:>3} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.0}",
            p.k, p.t1_us, p.t2_us, p.t3_us, p.t4_us, p.total_us, p.puzzle_tries
        );
    }
    let f = &r.flood;
    println!(
        "I1 flood: {:.0} R1/s on one core ({} I1s from distinct HITs), floor (HMAC + checksum) {:.0}/s, ratio {:.2}; resident memory {:+} bytes",
        f.r1_per_s, f.i1s, f.floor_per_s, f.ratio, f.rss_growth
    );
    Ok(())
}
