//! The reference of `hipsec bench ike`, measured in the same run: the cryptographic
//! operations one IKE SA + CHILD SA setup with a PSK costs both ends together, run alone in a
//! loop on one core.
//! Per setup (RFC 7296 §1.2, §2.14, §2.15, §2.17), on each of the two sides: one DH key
//! generation and one DH computation (g^ir), SKEYSEED, prf+ for the seven IKE SA keys, prf+
//! for the CHILD SA keys, and two PSK AUTH values (its own, and the peer's to check it). The
//! IKE messages' AES-GCM (SK payload), nonces and parsing are not counted: they are not DH,
//! signature or PRF work, and they are small beside it.

use crypto::{DhGroup, EspSuite, KeyExchange};
use ike::IkeSuite;
use ike::auth::psk_auth;
use ike::keys::{ChildKeyMat, IkeSaKeys, skeyseed};
use serde::Serialize;
use std::time::{Duration, Instant};
use wire::ikev2::Id;

/// What one setup's crypto works on: the suites, the PSK, the identities and the sizes of the
/// two IKE_SA_INIT messages the AUTH values cover.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    pub(crate) suite: IkeSuite,
    pub(crate) esp: EspSuite,
    pub(crate) psk: Vec<u8>,
    pub(crate) id_i: Id,
    pub(crate) id_r: Id,
    /// IKE_SA_INIT request and response (their real sizes; the content does not matter).
    pub(crate) msg1: Vec<u8>,
    pub(crate) msg2: Vec<u8>,
}

/// What both ends derived, to check that they agree (and that nothing was optimised away).
#[derive(Debug)]
pub(crate) struct Derived {
    pub(crate) sk_d: [Vec<u8>; 2],
    pub(crate) child_encr_i: [Vec<u8>; 2],
    /// Each side's check of the other's AUTH.
    pub(crate) auth_ok: [bool; 2],
}

/// One setup's DH, PRF and AUTH work for both ends, in the order the exchanges do it.
pub(crate) fn one_setup(x: &Inputs, ni: &[u8], nr: &[u8]) -> Result<Derived, String> {
    let (spi_i, spi_r) = (0x0102_0304_0506_0708_u64, 0x1112_1314_1516_1718_u64);
    let e = |e: crypto::CryptoError| format!("DH: {e}");
    let ke_i = KeyExchange::generate(x.suite.dh).map_err(e)?;
    let ke_r = KeyExchange::generate(x.suite.dh).map_err(e)?;
    let pub_i = ke_i.public_key().to_vec();
    let pub_r = ke_r.public_key().to_vec();
    let prf = x.suite.prf;
    // Side 0 is the initiator, side 1 the responder: each computes g^ir and the key schedule.
    let mut sides = Vec::with_capacity(2);
    for (ke, peer_pub) in [(ke_i, &pub_r), (ke_r, &pub_i)] {
        let g_ir = ke.agree(peer_pub).map_err(e)?;
        let seed = skeyseed(prf, ni, nr, g_ir.as_bytes());
        let keys = IkeSaKeys::derive(&x.suite, &seed, ni, nr, spi_i, spi_r)
            .map_err(|e| format!("IKE SA keys: {e}"))?;
        let child = ChildKeyMat::derive(prf, &keys.sk_d, &x.esp, None, ni, nr)
            .map_err(|e| format!("CHILD SA keys: {e}"))?;
        sides.push((keys, child));
    }
    let [(ki, ci), (kr, cr)] = <[_; 2]>::try_from(sides).map_err(|_| "two sides")?;
    // AUTH covers the sender's IKE_SA_INIT message, the peer's nonce, the sender's SK_p and
    // identity (§2.15); the sender makes it, the receiver recomputes it to check it.
    let auth_i = psk_auth(prf, &x.psk, &x.msg1, nr, &ki.sk_pi, &x.id_i);
    let check_i = psk_auth(prf, &x.psk, &x.msg1, nr, &kr.sk_pi, &x.id_i);
    let auth_r = psk_auth(prf, &x.psk, &x.msg2, ni, &kr.sk_pr, &x.id_r);
    let check_r = psk_auth(prf, &x.psk, &x.msg2, ni, &ki.sk_pr, &x.id_r);
    let auth_ok = [auth_r == check_r, auth_i == check_i];
    let sk_d = [ki.sk_d.to_vec(), kr.sk_d.to_vec()];
    let child_encr_i = [ci.encr_i.to_vec(), cr.encr_i.to_vec()];
    Ok(Derived { sk_d, child_encr_i, auth_ok })
}

/// Timings of the reference.
#[derive(Debug, Clone, Serialize)]
pub struct CryptoOnly {
    /// Complete setups' worth of DH + PRF + AUTH per second on one core (median of trials).
    pub setups_per_s_per_core: f64,
    /// Every trial's figure (`hipsec bench ike`: two before the load, two after).
    pub trials: Vec<f64>,
    /// µs per setup (both ends) from the median.
    pub us_per_setup: f64,
    /// µs of one DH key generation.
    pub dh_keygen_us: f64,
    /// µs of one DH computation (g^ir from the peer's public value).
    pub dh_agree_us: f64,
    /// µs of one side's key schedule: SKEYSEED, prf+ for the IKE SA keys and the CHILD keys.
    pub key_schedule_us: f64,
    /// µs of one PSK AUTH value (a side computes two).
    pub psk_auth_us: f64,
}

/// Runs `f` for about `d`, returning calls per second.
fn rate(d: Duration, mut f: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    let t0 = Instant::now();
    let mut n = 0u64;
    while n < 16 || t0.elapsed() < d {
        f()?;
        n += 1;
    }
    Ok(n as f64 / t0.elapsed().as_secs_f64())
}

/// Median of `v` (NaN when empty).
pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 { s[m] } else { (s[m - 1] + s[m]) / 2.0 }
}

/// The measured rate as a share of what the crypto allows on `cores` cores.
pub(crate) fn ratio(measured_per_s: f64, crypto_per_s_per_core: f64, cores: usize) -> f64 {
    measured_per_s / (crypto_per_s_per_core * cores as f64)
}

/// Measures the reference: `trials` loops of whole setups (each `trial` long), then each
/// operation alone, on the calling thread.
pub(crate) fn measure(x: &Inputs, trials: u32, trial: Duration) -> Result<CryptoOnly, String> {
    let (ni, nr) = ([0x5a_u8; 32], [0xa5_u8; 32]);
    let check = one_setup(x, &ni, &nr)?;
    let same = check.sk_d[0] == check.sk_d[1] && check.child_encr_i[0] == check.child_encr_i[1];
    if !same || check.auth_ok != [true, true] {
        return Err("crypto-only: the two ends derived different keys".into());
    }
    let mut v = Vec::new();
    for _ in 0..trials.max(1) {
        v.push(rate(trial, || one_setup(x, &ni, &nr).map(|_| ()))?);
    }
    let per_core = median(&v);
    let part = trial / 4;
    let g = x.suite.dh;
    let keygen = rate(part, || KeyExchange::generate(g).map(|_| ()).map_err(|e| e.to_string()))?;
    let peer = KeyExchange::generate(g).map_err(|e| e.to_string())?.public_key().to_vec();
    // Each agree needs a fresh key pair: time pairs of generate + agree, subtract generate.
    let both = rate(part, || {
        let k = KeyExchange::generate(g).map_err(|e| e.to_string())?;
        k.agree(&peer).map(|_| ()).map_err(|e| e.to_string())
    })?;
    let g_ir = [0x33_u8; 32];
    let sched = rate(part, || {
        let seed = skeyseed(x.suite.prf, &ni, &nr, &g_ir);
        let keys = IkeSaKeys::derive(&x.suite, &seed, &ni, &nr, 1, 2).map_err(|e| e.to_string())?;
        ChildKeyMat::derive(x.suite.prf, &keys.sk_d, &x.esp, None, &ni, &nr)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })?;
    let skp = [0x44_u8; 32];
    let auth = rate(part, || {
        let a = psk_auth(x.suite.prf, &x.psk, &x.msg1, &nr, &skp, &x.id_i);
        if a.is_empty() { Err("empty AUTH".into()) } else { Ok(()) }
    })?;
    let us = |r: f64| 1e6 / r;
    Ok(CryptoOnly {
        setups_per_s_per_core: per_core,
        trials: v,
        us_per_setup: us(per_core),
        dh_keygen_us: us(keygen),
        dh_agree_us: us(both) - us(keygen),
        key_schedule_us: us(sched),
        psk_auth_us: us(auth),
    })
}

/// The DH group named by `--group`.
pub(crate) fn group(name: &str) -> Result<DhGroup, String> {
    match name {
        "x25519" | "curve25519" => Ok(DhGroup::Curve25519),
        "ecp256" => Ok(DhGroup::Ecp256),
        "ecp384" => Ok(DhGroup::Ecp384),
        other => Err(format!("--group {other:?}: use x25519, ecp256 or ecp384")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crypto::{AeadAlg, EncrAlg, IntegAlg, PrfAlg};

    fn inputs(dh: DhGroup) -> Inputs {
        Inputs {
            suite: IkeSuite {
                encr: EncrAlg::Aead(AeadAlg::Aes128Gcm),
                integ: IntegAlg::None,
                prf: PrfAlg::HmacSha256,
                dh,
            },
            esp: EspSuite::new(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None).unwrap(),
            psk: b"bench secret".to_vec(),
            id_i: Id::fqdn("bench.example"),
            id_r: Id::fqdn("responder.example"),
            msg1: vec![1; 300],
            msg2: vec![2; 300],
        }
    }

    #[test]
    fn both_ends_derive_the_same_keys_and_accept_each_others_auth() {
        for g in [DhGroup::Curve25519, DhGroup::Ecp256] {
            let d = one_setup(&inputs(g), &[1; 32], &[2; 32]).unwrap();
            assert_eq!(d.sk_d[0], d.sk_d[1]);
            assert_eq!(d.sk_d[0].len(), 32, "SK_d is one PRF output");
            assert_eq!(d.child_encr_i[0], d.child_encr_i[1]);
            assert_eq!(d.child_encr_i[0].len(), 20, "AES-128-GCM key + salt");
            assert_eq!(d.auth_ok, [true, true]);
        }
    }

    #[test]
    fn fresh_dh_per_setup_gives_fresh_keys() {
        let x = inputs(DhGroup::Curve25519);
        let a = one_setup(&x, &[1; 32], &[2; 32]).unwrap();
        let b = one_setup(&x, &[1; 32], &[2; 32]).unwrap();
        assert_ne!(a.sk_d[0], b.sk_d[0]);
    }

    #[test]
    fn median_and_ratio() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
        // 3,000/s measured where the crypto allows 5,000/s per core on 2 cores: 0.3.
        assert!((ratio(3000.0, 5000.0, 2) - 0.3).abs() < 1e-12);
    }

    #[test]
    fn measure_reports_every_part() {
        let c = measure(&inputs(DhGroup::Curve25519), 1, Duration::from_millis(40)).unwrap();
        assert!(c.setups_per_s_per_core > 0.0);
        for v in [c.dh_keygen_us, c.key_schedule_us, c.psk_auth_us, c.us_per_setup] {
            assert!(v > 0.0 && v.is_finite(), "{c:?}");
        }
        assert!(group("ecp521").unwrap_err().contains("--group"));
    }
}
