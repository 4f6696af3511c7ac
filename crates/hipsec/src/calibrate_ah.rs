//! AH's costs for the profile (every ESP and AH suite gets its own figures): the engine's protect and
//! inbound with one AH SA in tunnel mode (RFC 4302), at two packet sizes, fitted per packet +
//! per byte like the ESP suites. AH has no cipher to set beside it, so there is no raw figure.
//! Profile keys are `ah-<integrity>`: `ah-sha256`, `ah-gmac128`, …

use crate::bench_esp::{inner_packet, median};
use crypto::{HmacAlg, IntegAlg};
use ipsec::{Engine, Lifetime, Mode, PacketBuf, Protocol, SaParams, Spi, Time};
use sizing::profile::{LinearCost, SuiteCost};
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

const HEADROOM: usize = 128;

/// The AH integrity algorithms a node offers (docs/sa-file.md), legacy SHA-1 included.
pub(crate) const ALGS: [IntegAlg; 6] = [
    IntegAlg::Hmac(HmacAlg::Sha1_96),
    IntegAlg::Hmac(HmacAlg::Sha256_128),
    IntegAlg::Hmac(HmacAlg::Sha384_192),
    IntegAlg::Hmac(HmacAlg::Sha512_256),
    IntegAlg::Aes128Gmac,
    IntegAlg::Aes256Gmac,
];

/// The profile's name for AH with `alg`.
pub(crate) fn profile_name(alg: IntegAlg) -> String {
    format!("ah-{}", alg.name())
}

fn params(alg: IntegAlg) -> SaParams {
    SaParams {
        spi: Spi(0x2000),
        protocol: Protocol::Ah(alg),
        mode: Mode::Tunnel,
        src: std::net::Ipv4Addr::new(192, 0, 2, 1).into(),
        dst: std::net::Ipv4Addr::new(192, 0, 2, 2).into(),
        enc_key: Zeroizing::new(Vec::new()),
        auth_key: Zeroizing::new((0..alg.key_len()).map(|i| (i as u8) ^ 0x33).collect()),
        esn: false,
        replay_window: 0,
        soft: Lifetime::default(),
        hard: Lifetime::default(),
    }
}

/// (seal ns, open ns) per packet of `size` bytes: medians of timed rounds within `budget`.
fn measure(alg: IntegAlg, size: usize, budget: Duration) -> Result<(f64, f64), String> {
    let prov = crypto::default_provider();
    let p = params(alg);
    let name = profile_name(alg);
    let mut tx = Engine::new(prov);
    let h = tx.add_outbound(&p, Time(0)).map_err(|e| format!("{name}: {e}"))?;
    let pkt = inner_packet(size);
    // Packets sealed once for the open rounds (each sequence number once; no replay window).
    let n = 1024;
    let mut sealed = Vec::with_capacity(n);
    let mut b = PacketBuf::new(HEADROOM + size + 128, HEADROOM);
    for _ in 0..n {
        b.load(&pkt, HEADROOM).map_err(|e| e.to_string())?;
        tx.protect_with(&[h], &mut b, Time(0)).map_err(|d| format!("{name} seal: {d}"))?;
        sealed.push(b.as_slice().to_vec());
    }
    let mut bufs: Vec<PacketBuf> =
        (0..n).map(|_| PacketBuf::new(HEADROOM + size + 128, HEADROOM)).collect();
    let mut rx = Engine::new(prov);
    rx.add_inbound(&p, Time(0)).map_err(|e| format!("{name}: {e}"))?;
    let (mut seal, mut open) = (Vec::new(), Vec::new());
    let start = Instant::now();
    while start.elapsed() < budget || seal.len() < 3 {
        let t = Instant::now();
        for _ in 0..n {
            b.load(&pkt, HEADROOM).map_err(|e| e.to_string())?;
            tx.protect_with(&[h], &mut b, Time(0)).map_err(|d| format!("{name} seal: {d}"))?;
        }
        seal.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
        for (dst, src) in bufs.iter_mut().zip(&sealed) {
            dst.load(src, HEADROOM).map_err(|e| e.to_string())?;
        }
        let t = Instant::now();
        for b in bufs.iter_mut() {
            rx.inbound(b, Time(0)).map_err(|d| format!("{name} open: {d}"))?;
        }
        open.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
    }
    Ok((median(&mut seal), median(&mut open)))
}

/// Every AH algorithm's costs, fitted through `small` and `large` bytes.
pub(crate) fn suites(
    small: usize,
    large: usize,
    budget: Duration,
) -> Result<Vec<(String, SuiteCost)>, String> {
    let mut out = Vec::new();
    for alg in ALGS {
        eprintln!("calibrate: AH {} …", alg.name());
        let (s0, o0) = measure(alg, small, budget)?;
        let (s1, o1) = measure(alg, large, budget)?;
        let fit = |a: f64, b: f64| {
            let per_byte = ((b - a) / (large - small) as f64).max(0.0);
            LinearCost {
                per_packet_ns: (a - per_byte * small as f64).max(0.0),
                per_byte_ns: per_byte,
            }
        };
        // Tunnel mode: outer IPv4 header (20) + AH header (12) + ICV, padded to 4 octets
        // (RFC 4302 §2.6: the ICV field is a multiple of 32 bits for IPv4).
        let overhead = 20.0 + 12.0 + alg.icv_len().next_multiple_of(4) as f64;
        out.push((
            profile_name(alg),
            SuiteCost { seal: fit(s0, s1), open: fit(o0, o1), overhead_bytes: overhead },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_seals_and_opens_in_the_engine() {
        for alg in ALGS {
            let (s, o) = measure(alg, 64, Duration::from_millis(1)).expect("measure");
            assert!(s > 0.0 && o > 0.0, "{alg:?}: {s} {o}");
        }
        assert_eq!(profile_name(IntegAlg::Aes128Gmac), "ah-gmac128");
    }
}
