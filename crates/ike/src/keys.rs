//! The IKEv2 key schedule: prf+ (RFC 7296 §2.13), SKEYSEED and the seven IKE SA keys (§2.14),
//! CHILD SA keying material with and without PFS (§2.17), and SKEYSEED for an IKE SA rekey
//! (§2.18). Every secret is zeroized on drop.

use crate::error::{ConfigError, Error};
use crate::suite::{IkeSuite, encr_key_len, integ_key_len};
use crypto::{EspSuite, Prf, PrfAlg};
use zeroize::Zeroizing;

/// A secret byte string, cleared on drop.
pub type Secret = Zeroizing<Vec<u8>>;

/// prf+ (§2.13): `T1 | T2 | ...` cut to `len` bytes, where `T1 = prf(K, S | 0x01)` and
/// `Tn = prf(K, Tn-1 | S | n)`. `seed` is `S` given in pieces. At most 255 blocks.
pub fn prf_plus(alg: PrfAlg, key: &[u8], seed: &[&[u8]], len: usize) -> Result<Secret, Error> {
    let block = alg.output_len();
    if len > 255 * block {
        return Err(
            ConfigError::KeyLength { what: "prf+ output", got: len, want: 255 * block }.into()
        );
    }
    let prf = Prf::new(alg, key);
    let mut out = Zeroizing::new(Vec::with_capacity(len + block));
    let mut prev: Secret = Zeroizing::new(Vec::new());
    let mut n: u8 = 1;
    while out.len() < len {
        let counter = [n];
        let mut parts: Vec<&[u8]> = Vec::with_capacity(seed.len() + 2);
        parts.push(&prev);
        parts.extend_from_slice(seed);
        parts.push(&counter);
        let t = prf.compute(&parts);
        out.extend_from_slice(&t);
        prev = t;
        n = n.wrapping_add(1);
    }
    out.truncate(len);
    Ok(out)
}

/// SKEYSEED = prf(Ni | Nr, g^ir) (§2.14).
pub fn skeyseed(alg: PrfAlg, ni: &[u8], nr: &[u8], g_ir: &[u8]) -> Secret {
    let mut key = Zeroizing::new(Vec::with_capacity(ni.len() + nr.len()));
    key.extend_from_slice(ni);
    key.extend_from_slice(nr);
    Prf::new(alg, &key).compute(&[g_ir])
}

/// SKEYSEED of the new IKE SA in a rekey (§2.18): prf(SK_d (old), g^ir (new) | Ni | Nr), with
/// the *old* IKE SA's PRF ("the rekeying exchange belongs to the old IKE SA").
pub fn rekey_skeyseed(
    old_prf: PrfAlg,
    old_sk_d: &[u8],
    g_ir_new: &[u8],
    ni: &[u8],
    nr: &[u8],
) -> Secret {
    Prf::new(old_prf, old_sk_d).compute(&[g_ir_new, ni, nr])
}

/// The seven keys of an IKE SA (§2.14).
pub struct IkeSaKeys {
    /// Derives CHILD SA keys and the next SKEYSEED.
    pub sk_d: Secret,
    /// Integrity key, initiator to responder (empty with an AEAD).
    pub sk_ai: Secret,
    /// Integrity key, responder to initiator.
    pub sk_ar: Secret,
    /// Encryption key (with salt for AEADs), initiator to responder.
    pub sk_ei: Secret,
    /// Encryption key, responder to initiator.
    pub sk_er: Secret,
    /// Used for the initiator's AUTH payload (§2.15).
    pub sk_pi: Secret,
    /// Used for the responder's AUTH payload.
    pub sk_pr: Secret,
}

impl std::fmt::Debug for IkeSaKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IkeSaKeys { .. }")
    }
}

fn split(buf: &[u8], lens: &[usize]) -> Vec<Secret> {
    let mut out = Vec::with_capacity(lens.len());
    let mut rest = buf;
    for &l in lens {
        let (a, b) = rest.split_at(l.min(rest.len()));
        out.push(Zeroizing::new(a.to_vec()));
        rest = b;
    }
    out
}

impl IkeSaKeys {
    /// `{SK_d | SK_ai | SK_ar | SK_ei | SK_er | SK_pi | SK_pr} = prf+(SKEYSEED, Ni | Nr | SPIi | SPIr)`.
    pub fn derive(
        suite: &IkeSuite,
        skeyseed: &[u8],
        ni: &[u8],
        nr: &[u8],
        spi_i: u64,
        spi_r: u64,
    ) -> Result<IkeSaKeys, Error> {
        let prf_len = suite.prf.output_len();
        let a = integ_key_len(suite.integ);
        let e = encr_key_len(suite.encr);
        let lens = [prf_len, a, a, e, e, prf_len, prf_len];
        let total = lens.iter().sum();
        let km = prf_plus(
            suite.prf,
            skeyseed,
            &[ni, nr, &spi_i.to_be_bytes(), &spi_r.to_be_bytes()],
            total,
        )?;
        let mut k = split(&km, &lens).into_iter();
        let mut next = || k.next().unwrap_or_default();
        Ok(IkeSaKeys {
            sk_d: next(),
            sk_ai: next(),
            sk_ar: next(),
            sk_ei: next(),
            sk_er: next(),
            sk_pi: next(),
            sk_pr: next(),
        })
    }
}

/// Keying material of one ESP CHILD SA pair (§2.17), each key as the data path takes it
/// (AEAD keys end in their 4-byte salt, RFC 4106 §8.1).
pub struct ChildKeyMat {
    /// Encryption key of the SA carrying initiator-to-responder traffic.
    pub encr_i: Secret,
    /// Integrity key of that SA (empty with an AEAD).
    pub integ_i: Secret,
    /// Encryption key of the SA carrying responder-to-initiator traffic.
    pub encr_r: Secret,
    /// Integrity key of that SA.
    pub integ_r: Secret,
}

impl std::fmt::Debug for ChildKeyMat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChildKeyMat { .. }")
    }
}

impl ChildKeyMat {
    /// `KEYMAT = prf+(SK_d, [g^ir (new) |] Ni | Nr)`, taken in the order encryption then
    /// integrity, initiator-to-responder SA first (§2.17).
    pub fn derive(
        prf: PrfAlg,
        sk_d: &[u8],
        suite: &EspSuite,
        g_ir_new: Option<&[u8]>,
        ni: &[u8],
        nr: &[u8],
    ) -> Result<ChildKeyMat, Error> {
        let e = encr_key_len(suite.encr);
        let a = integ_key_len(suite.integ);
        let lens = [e, a, e, a];
        let total = lens.iter().sum();
        let km = match g_ir_new {
            Some(g) => prf_plus(prf, sk_d, &[g, ni, nr], total)?,
            None => prf_plus(prf, sk_d, &[ni, nr], total)?,
        };
        let mut k = split(&km, &lens).into_iter();
        let mut next = || k.next().unwrap_or_default();
        Ok(ChildKeyMat { encr_i: next(), integ_i: next(), encr_r: next(), integ_r: next() })
    }
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
