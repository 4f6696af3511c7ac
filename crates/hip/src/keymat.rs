//! KEYMAT (RFC 7401 §6.5): the key material both hosts draw their HIP and ESP keys from,
//!
//! ```text
//! KEYMAT = KDF(info = sort(HIT-I | HIT-R), salt = #I | #J, IKM = Kij, L)
//! ```
//!
//! with KDF the HKDF of RFC 5869 over the HIT suite's HMAC, Kij the Diffie-Hellman secret and
//! sort() putting the numerically smaller HIT first. Keys are drawn in order (§6.5): HIP-gl
//! encryption, HIP-gl integrity, HIP-lg encryption, HIP-lg integrity ("gl": from the host with
//! the greater HIT to the lesser), then at ESP_INFO's KEYMAT index the ESP keys (RFC 7402 §7).

use crate::error::Error;
use crate::hit::HostIdentityTag;
use crypto::{Prf, PrfAlg};
use zeroize::Zeroizing;

/// HKDF (RFC 5869 §2): extract then expand to `len` bytes.
pub fn hkdf(
    alg: PrfAlg,
    salt: &[u8],
    ikm: &[u8],
    info: &[u8],
    len: usize,
) -> Result<Zeroizing<Vec<u8>>, Error> {
    let hash_len = alg.output_len();
    if len > 255 * hash_len {
        return Err(Error::Config(format!("KEYMAT of {len} bytes exceeds HKDF's 255 blocks")));
    }
    // §2.2: an empty salt is HashLen zeros.
    let zeros = vec![0u8; hash_len];
    let salt = if salt.is_empty() { &zeros[..] } else { salt };
    let prk = Prf::new(alg, salt).compute(&[ikm]);
    let prf = Prf::new(alg, &prk);
    let mut okm = Zeroizing::new(Vec::with_capacity(len + hash_len));
    let mut t: Zeroizing<Vec<u8>> = Zeroizing::new(Vec::new());
    let mut counter = 1u8;
    while okm.len() < len {
        t = prf.compute(&[&t, info, &[counter]]);
        okm.extend_from_slice(&t);
        counter = counter.wrapping_add(1);
    }
    okm.truncate(len);
    Ok(okm)
}

/// The keying material of one association, drawn from in order.
pub struct Keymat {
    bytes: Zeroizing<Vec<u8>>,
    next: usize,
}

impl std::fmt::Debug for Keymat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keymat").field("len", &self.bytes.len()).field("next", &self.next).finish()
    }
}

/// `sort(HIT-I | HIT-R)`: the smaller HIT first.
pub fn sorted_hits(a: &HostIdentityTag, b: &HostIdentityTag) -> [u8; 32] {
    let (lo, hi) = if a.0 <= b.0 { (a, b) } else { (b, a) };
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(&lo.0);
    out[16..].copy_from_slice(&hi.0);
    out
}

impl Keymat {
    /// Derives `len` bytes of KEYMAT.
    pub fn derive(
        alg: PrfAlg,
        kij: &[u8],
        hit_i: &HostIdentityTag,
        hit_r: &HostIdentityTag,
        i: &[u8],
        j: &[u8],
        len: usize,
    ) -> Result<Keymat, Error> {
        let mut salt = i.to_vec();
        salt.extend_from_slice(j);
        let bytes = hkdf(alg, &salt, kij, &sorted_hits(hit_i, hit_r), len)?;
        Ok(Keymat { bytes, next: 0 })
    }

    /// The next `len` bytes.
    pub fn draw(&mut self, len: usize) -> Result<Zeroizing<Vec<u8>>, Error> {
        let end =
            self.next.checked_add(len).filter(|&e| e <= self.bytes.len()).ok_or_else(|| {
                Error::Config(format!("KEYMAT exhausted: {len} bytes wanted at {}", self.next))
            })?;
        let out = Zeroizing::new(self.bytes[self.next..end].to_vec());
        self.next = end;
        Ok(out)
    }

    /// `len` bytes at `at`, leaving the draw position alone (ESP keys at ESP_INFO's index).
    pub fn read(&self, at: usize, len: usize) -> Result<Zeroizing<Vec<u8>>, Error> {
        at.checked_add(len)
            .and_then(|end| self.bytes.get(at..end))
            .map(|b| Zeroizing::new(b.to_vec()))
            .ok_or_else(|| Error::Peer(format!("KEYMAT index {at}: {len} bytes past the end")))
    }

    /// Moves to `index` (ESP_INFO's KEYMAT index, RFC 7402 §5.1.1), never backwards.
    pub fn seek(&mut self, index: usize) -> Result<(), Error> {
        if index < self.next || index > self.bytes.len() {
            return Err(Error::Peer(format!(
                "ESP_INFO: KEYMAT index {index} (drawn to {})",
                self.next
            )));
        }
        self.next = index;
        Ok(())
    }

    /// Where the next draw starts.
    pub fn index(&self) -> usize {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 5869 Appendix A.1 (SHA-256, basic case).
    #[test]
    fn rfc5869_a1() {
        let ikm = [0x0bu8; 22];
        let salt: Vec<u8> = (0u8..=0x0c).collect();
        let info: Vec<u8> = (0xf0u8..=0xf9).collect();
        let okm = hkdf(PrfAlg::HmacSha256, &salt, &ikm, &info, 42).unwrap();
        assert_eq!(
            hex::encode(&okm[..]),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
        );
    }

    /// RFC 5869 Appendix A.3 (SHA-256, empty salt and info).
    #[test]
    fn rfc5869_a3() {
        let okm = hkdf(PrfAlg::HmacSha256, &[], &[0x0bu8; 22], &[], 42).unwrap();
        assert_eq!(
            hex::encode(&okm[..]),
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
        );
    }

    #[test]
    fn both_ends_draw_the_same_and_sorting_is_symmetric() {
        let a = HostIdentityTag([0x20, 1, 0, 0x22, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]);
        let b = HostIdentityTag([0x20, 1, 0, 0x22, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(sorted_hits(&a, &b), sorted_hits(&b, &a));
        assert_eq!(&sorted_hits(&a, &b)[..16], &b.0);
        let mut x =
            Keymat::derive(PrfAlg::HmacSha384, b"kij", &a, &b, &[1; 48], &[2; 48], 200).unwrap();
        let mut y =
            Keymat::derive(PrfAlg::HmacSha384, b"kij", &b, &a, &[1; 48], &[2; 48], 200).unwrap();
        assert_eq!(x.draw(16).unwrap(), y.draw(16).unwrap());
        x.seek(100).unwrap();
        y.seek(100).unwrap();
        assert_eq!(x.draw(100).unwrap(), y.draw(100).unwrap());
        assert!(x.draw(1).is_err());
        assert!(x.seek(10).is_err());
        let z =
            Keymat::derive(PrfAlg::HmacSha384, b"kij", &a, &b, &[1; 48], &[3; 48], 200).unwrap();
        assert_ne!(z.bytes[..16], y.bytes[..16]);
    }
}
