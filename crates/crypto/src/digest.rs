//! Hashes IKEv2 needs outside a PRF: SHA-1 for NAT detection (RFC 7296 §2.23 fixes SHA-1 for the
//! NAT_DETECTION_*_IP notifies, where it serves as a fingerprint, not for security), from
//! aws-lc-rs.

use aws_lc_rs::digest;

/// SHA-1 over the concatenation of `parts` (20 bytes).
pub fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, parts)
}

fn digest<const N: usize>(alg: &'static digest::Algorithm, parts: &[&[u8]]) -> [u8; N] {
    let mut ctx = digest::Context::new(alg);
    for p in parts {
        ctx.update(p);
    }
    let mut out = [0u8; N];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

/// SHA-256 over the concatenation of `parts` (HIP's RHASH for the RSA/DSA HIT suite, ORCHID
/// OGA 1; RFC 7401 §5.2.10, RFC 7343).
pub fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    digest(&digest::SHA256, parts)
}

/// SHA-384 over the concatenation of `parts` (HIP's RHASH for the ECDSA HIT suite, OGA 2).
pub fn sha384(parts: &[&[u8]]) -> [u8; 48] {
    digest(&digest::SHA384, parts)
}

/// An incremental hash (SHA-1, SHA-256 or SHA-384). Cloning one that has taken a common prefix
/// saves rehashing it: the HIP puzzle hashes I | HIT-I | HIT-R | J for many J.
#[derive(Clone)]
pub struct Hasher(digest::Context);

impl std::fmt::Debug for Hasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Hasher").field(&self.0.algorithm()).finish()
    }
}

impl Hasher {
    /// SHA-1.
    pub fn sha1() -> Hasher {
        Hasher(digest::Context::new(&digest::SHA1_FOR_LEGACY_USE_ONLY))
    }
    /// SHA-256.
    pub fn sha256() -> Hasher {
        Hasher(digest::Context::new(&digest::SHA256))
    }
    /// SHA-384.
    pub fn sha384() -> Hasher {
        Hasher(digest::Context::new(&digest::SHA384))
    }
    /// Adds bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }
    /// The digest's length.
    pub fn output_len(&self) -> usize {
        self.0.algorithm().output_len()
    }
    /// The digest.
    pub fn finish(self) -> Vec<u8> {
        self.0.finish().as_ref().to_vec()
    }
}

#[cfg(test)]
mod tests {
    /// FIPS 180-2 Appendix A.1 ("abc"), split across parts.
    #[test]
    fn fips_180_2_appendix_a1() {
        assert_eq!(
            hex::encode(super::sha1(&[b"a", b"bc"])),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
    }

    /// FIPS 180-2 Appendix B.1 (SHA-256 "abc") and D.1 (SHA-384 "abc").
    #[test]
    fn fips_180_2_sha256_sha384_abc() {
        assert_eq!(
            hex::encode(super::sha256(&[b"ab", b"c"])),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex::encode(super::sha384(&[b"abc"])),
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"
        );
        let mut h = super::Hasher::sha384();
        h.update(b"a");
        let mut h2 = h.clone();
        h.update(b"bc");
        h2.update(b"bd");
        assert_eq!(h.finish(), super::sha384(&[b"abc"]).to_vec());
        assert_eq!(h2.finish(), super::sha384(&[b"abd"]).to_vec());
    }
}
