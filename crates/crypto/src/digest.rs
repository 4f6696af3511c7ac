//! Hashes IKEv2 needs outside a PRF: SHA-1 for NAT detection (RFC 7296 §2.23 fixes SHA-1 for the
//! NAT_DETECTION_*_IP notifies, where it serves as a fingerprint, not for security), from
//! aws-lc-rs.

use aws_lc_rs::digest;

/// SHA-1 over the concatenation of `parts` (20 bytes).
pub fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut ctx = digest::Context::new(&digest::SHA1_FOR_LEGACY_USE_ONLY);
    for p in parts {
        ctx.update(p);
    }
    let mut out = [0u8; 20];
    out.copy_from_slice(ctx.finish().as_ref());
    out
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
}
