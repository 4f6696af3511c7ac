//! The provider trait: what the ESP/AH transforms need from a crypto library, shaped for in-place
//! work on packet buffers (no allocation per call). Keys are built once per SA.

use crate::alg::{AeadAlg, CbcAlg, HmacAlg};
use std::fmt::Debug;

/// Why a crypto operation failed. Deliberately coarse: a peer learns nothing from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// The key has the wrong length for the algorithm.
    #[error("key length {got} does not fit the algorithm (want {want})")]
    KeyLength {
        /// Length supplied.
        got: usize,
        /// Length required.
        want: usize,
    },
    /// The ICV did not verify.
    #[error("integrity check failed")]
    Integrity,
    /// A length the algorithm needs (block multiple, IV size, tag room) was not met.
    #[error("bad length for the operation")]
    Length,
    /// The provider does not implement this algorithm.
    #[error("algorithm not supported by this provider")]
    Unsupported,
    /// A key (a private scalar or a key file's document) is not a valid key for the algorithm.
    #[error("not a valid key for the algorithm")]
    BadKey,
    /// The library reported an internal failure.
    #[error("crypto library failure")]
    Library,
}

/// A keyed AEAD. The nonce is the full 12 bytes (salt || explicit IV, RFC 4106 §4, RFC 7634 §2).
pub trait Aead: Send + Sync + Debug {
    /// Tag length in bytes.
    fn tag_len(&self) -> usize;
    /// A hint that this key is about to be used: bring its expanded state (round keys, GHASH
    /// table) towards the core without waiting for it, so that a batch of packets to thousands
    /// of SAs can overlap those cache misses instead of meeting them one by one inside the
    /// cipher. Changes nothing observable; providers that cannot do it do nothing.
    fn warm(&self) {}
    /// Where this key's expanded state lives: its address and length in bytes, `(0, 0)` if
    /// the provider does not say. Only for prefetching (an engine that already knows which
    /// SA the next packets need starts these misses together with the SA's own, without first
    /// reading the SA to find the cipher); never dereferenced, and no key byte is revealed.
    fn state_span(&self) -> (usize, usize) {
        (0, 0)
    }
    /// Encrypts `in_out` in place and writes the tag into `tag` (`tag.len() == tag_len()`).
    fn seal_in_place(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &mut [u8],
    ) -> Result<(), CryptoError>;
    /// Verifies and decrypts `ciphertext || tag` in place; returns the plaintext length.
    fn open_in_place(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<usize, CryptoError>;
    /// Verifies `input` (`ciphertext || tag`) and decrypts it into `out`, exactly as long as the
    /// ciphertext: the copy into a packet buffer and the decryption in one pass, for packets
    /// that arrive in a buffer of their own (a UDP GRO message). `out` holds garbage when it
    /// fails. Providers without it answer `Unsupported`; the caller then copies and opens in
    /// place.
    fn open_to(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        input: &[u8],
        out: &mut [u8],
    ) -> Result<(), CryptoError> {
        let _ = (nonce, aad, input, out);
        Err(CryptoError::Unsupported)
    }
}

/// Splits `input` (`ciphertext || tag`) for [`Aead::open_to`] into ciphertext and tag, checking
/// that there is a whole tag and that `out_len` (the output buffer) is exactly the ciphertext's
/// length: the checks every provider's `open_to` makes before it calls its library.
pub fn split_tag(
    input: &[u8],
    tag_len: usize,
    out_len: usize,
) -> Result<(&[u8], &[u8]), CryptoError> {
    let ct_len = input.len().checked_sub(tag_len).ok_or(CryptoError::Length)?;
    if out_len != ct_len {
        return Err(CryptoError::Length);
    }
    Ok(input.split_at(ct_len))
}

/// A keyed block cipher in CBC mode.
pub trait BlockCipher: Send + Sync + Debug {
    /// Block (and IV) length.
    fn block_len(&self) -> usize;
    /// Encrypts whole blocks in place.
    fn encrypt_cbc(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError>;
    /// Decrypts whole blocks in place.
    fn decrypt_cbc(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError>;
}

/// A keyed MAC computed over a list of byte runs (so that ESN high bits can be appended without
/// copying, RFC 4303 §3.3.2.1).
pub trait Mac: Send + Sync + Debug {
    /// Full (untruncated) output length.
    fn output_len(&self) -> usize;
    /// Computes the MAC over the concatenation of `parts` and writes its first `out.len()` bytes.
    fn compute(&self, parts: &[&[u8]], out: &mut [u8]) -> Result<(), CryptoError>;
    /// Recomputes and compares with `expected` (truncated) in constant time.
    fn verify(&self, parts: &[&[u8]], expected: &[u8]) -> Result<(), CryptoError> {
        let mut buf = [0u8; 64];
        let n = expected.len();
        if n == 0 || n > buf.len() || n > self.output_len() {
            return Err(CryptoError::Length);
        }
        self.compute(parts, &mut buf[..n])?;
        if constant_time_eq(&buf[..n], expected) { Ok(()) } else { Err(CryptoError::Integrity) }
    }
}

/// A crypto library, seen through the operations IPsec needs.
pub trait Provider: Send + Sync + Debug {
    /// Short name for reports.
    fn name(&self) -> &'static str;
    /// Builds an AEAD key (the key without salt).
    fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn Aead>, CryptoError>;
    /// Builds a CBC key.
    fn cbc(&self, alg: CbcAlg, key: &[u8]) -> Result<Box<dyn BlockCipher>, CryptoError>;
    /// Builds an HMAC key.
    fn hmac(&self, alg: HmacAlg, key: &[u8]) -> Result<Box<dyn Mac>, CryptoError>;
    /// Fills `out` with cryptographically secure random bytes.
    fn fill_random(&self, out: &mut [u8]) -> Result<(), CryptoError>;
}

/// A random IPsec SPI outside the reserved 0..=255 (RFC 4303 §2.1: 0 names no SA, 1–255 are
/// IANA's), as a receiver picks an inbound SPI (IKEv2's Child SAs, HIP's ESP, `bench sas`).
pub fn random_spi(p: &dyn Provider) -> Result<u32, CryptoError> {
    loop {
        let mut b = [0u8; 4];
        p.fill_random(&mut b)?;
        let spi = u32::from_be_bytes(b);
        if spi > 255 {
            return Ok(spi);
        }
    }
}

/// Compares two byte strings without an early exit.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}

/// Refuses a key of the wrong length, naming both lengths (every provider's constructors).
pub fn check_key_len(got: usize, want: usize) -> Result<(), CryptoError> {
    if got == want { Ok(()) } else { Err(CryptoError::KeyLength { got, want }) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alg::{AeadAlg, CbcAlg, HmacAlg};
    use std::sync::Mutex;

    /// A provider whose random bytes are scripted: each call takes the next value.
    #[derive(Debug)]
    struct Scripted(Mutex<Vec<u32>>);

    impl Provider for Scripted {
        fn name(&self) -> &'static str {
            "scripted"
        }
        fn aead(&self, _: AeadAlg, _: &[u8]) -> Result<Box<dyn Aead>, CryptoError> {
            Err(CryptoError::Unsupported)
        }
        fn cbc(&self, _: CbcAlg, _: &[u8]) -> Result<Box<dyn BlockCipher>, CryptoError> {
            Err(CryptoError::Unsupported)
        }
        fn hmac(&self, _: HmacAlg, _: &[u8]) -> Result<Box<dyn Mac>, CryptoError> {
            Err(CryptoError::Unsupported)
        }
        fn fill_random(&self, out: &mut [u8]) -> Result<(), CryptoError> {
            let mut v = self.0.lock().map_err(|_| CryptoError::Library)?;
            let next = if v.is_empty() { return Err(CryptoError::Library) } else { v.remove(0) };
            out.copy_from_slice(&next.to_be_bytes());
            Ok(())
        }
    }

    /// The reserved SPIs 0..=255 are drawn again; the first one above is taken as drawn, and
    /// the generator's failure is passed on.
    #[test]
    fn random_spi_skips_the_reserved_range() {
        let p = Scripted(Mutex::new(vec![0, 1, 255, 256, 7]));
        assert_eq!(random_spi(&p), Ok(256));
        let p = Scripted(Mutex::new(vec![0xdead_beef]));
        assert_eq!(random_spi(&p), Ok(0xdead_beef));
        assert!(random_spi(&Scripted(Mutex::new(vec![3]))).is_err());
    }
}
