//! The base exchange's puzzle (RFC 7401 §4.1.2): the responder sends a random #I and a
//! difficulty K in R1; the initiator must find #J with
//!
//! ```text
//! Ltrunc( RHASH( I | HIT-I | HIT-R | J ), K ) == 0
//! ```
//!
//! where Ltrunc(x, K) is the lowest-order K bits of x (§2.2), so on average 2^K hashes. #I and
//! #J are RHASH_len bytes long (§5.2.4). Checking a solution costs the responder one hash,
//! which is why it comes before any Diffie-Hellman or signature work on an I2 (§6.9).

use crate::error::Error;
use crate::hit::HostIdentityTag;
use crate::suite::HitSuite;

/// The largest K we will try to solve (2^K hashes on average; K = 24 takes seconds). A peer
/// asking for more is refused rather than letting it burn our CPU (§4.1.2 lets the initiator
/// give up).
pub const MAX_SOLVABLE_K: u8 = 28;

/// A puzzle as R1 carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Puzzle {
    /// Difficulty: the number of low-order bits that must be zero.
    pub k: u8,
    /// The responder's random #I (RHASH_len bytes).
    pub i: Vec<u8>,
}

fn low_bits_zero(digest: &[u8], k: u8) -> bool {
    let whole = usize::from(k / 8);
    let rest = k % 8;
    let n = digest.len();
    if whole > n || (whole == n && rest > 0) {
        return false;
    }
    let tail = &digest[n - whole..];
    if tail.iter().any(|&b| b != 0) {
        return false;
    }
    rest == 0 || digest[n - whole - 1] & ((1u8 << rest) - 1) == 0
}

impl Puzzle {
    fn prefix(
        &self,
        suite: HitSuite,
        hit_i: &HostIdentityTag,
        hit_r: &HostIdentityTag,
    ) -> crypto::digest::Hasher {
        let mut h = suite.hasher();
        h.update(&self.i);
        h.update(&hit_i.0);
        h.update(&hit_r.0);
        h
    }

    /// Finds #J, starting from `seed` (RHASH_len random bytes, so that two initiators do not
    /// walk the same sequence) and counting up in its last 8 bytes. Returns #J and the number
    /// of hashes it took. Refuses K above [`MAX_SOLVABLE_K`] or an #I of the wrong length.
    pub fn solve(
        &self,
        suite: HitSuite,
        hit_i: &HostIdentityTag,
        hit_r: &HostIdentityTag,
        seed: &[u8],
    ) -> Result<(Vec<u8>, u64), Error> {
        let n = suite.rhash_len();
        if self.i.len() != n {
            return Err(Error::Peer(format!("PUZZLE: #I of {} bytes (want {n})", self.i.len())));
        }
        if self.k > MAX_SOLVABLE_K {
            return Err(Error::Peer(format!(
                "PUZZLE: K = {} (we solve up to {MAX_SOLVABLE_K})",
                self.k
            )));
        }
        if seed.len() != n {
            return Err(Error::Config(format!("puzzle seed of {} bytes (want {n})", seed.len())));
        }
        let prefix = self.prefix(suite, hit_i, hit_r);
        let mut j = seed.to_vec();
        let mut counter = [0u8; 8];
        counter.copy_from_slice(&seed[n - 8..]);
        let start = u64::from_be_bytes(counter);
        // 2^(K+8) tries fail with probability e^-256: treat it as a bug, not a loop forever.
        let limit = 1u64 << (u32::from(self.k) + 8);
        for t in 0..limit {
            j[n - 8..].copy_from_slice(&start.wrapping_add(t).to_be_bytes());
            let mut h = prefix.clone();
            h.update(&j);
            if low_bits_zero(&h.finish(), self.k) {
                return Ok((j, t + 1));
            }
        }
        Err(Error::Config(format!("no solution for K = {} in {limit} tries", self.k)))
    }

    /// Checks #J (one hash).
    pub fn verify(
        &self,
        suite: HitSuite,
        hit_i: &HostIdentityTag,
        hit_r: &HostIdentityTag,
        j: &[u8],
    ) -> Result<(), Error> {
        if j.len() != suite.rhash_len() {
            return Err(Error::Peer(format!("SOLUTION: #J of {} bytes", j.len())));
        }
        let mut h = self.prefix(suite, hit_i, hit_r);
        h.update(j);
        if low_bits_zero(&h.finish(), self.k) {
            Ok(())
        } else {
            Err(Error::Peer("SOLUTION: wrong puzzle solution".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_bits() {
        assert!(low_bits_zero(&[0xff, 0x00], 8));
        assert!(!low_bits_zero(&[0xff, 0x01], 8));
        assert!(low_bits_zero(&[0xf8], 3));
        assert!(!low_bits_zero(&[0xf4], 3));
        assert!(low_bits_zero(&[0x10, 0x00], 12));
        assert!(!low_bits_zero(&[0x18, 0x00], 12));
        assert!(low_bits_zero(&[0xff], 0));
        assert!(!low_bits_zero(&[0x00], 9));
    }

    /// Solve and verify for several K; the solution is checked by an independent hash of the
    /// concatenation (not the cloned prefix), and a changed #J, #I or HIT fails.
    #[test]
    fn solve_verify_and_tamper() {
        let hi = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, b"initiator");
        let hr = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, b"responder");
        for k in [0u8, 1, 5, 10, 12] {
            let p = Puzzle { k, i: vec![7u8; 48] };
            let (j, tries) = p.solve(HitSuite::EcdsaSha384, &hi, &hr, &[3u8; 48]).unwrap();
            assert!(tries >= 1);
            let d = crypto::digest::sha384(&[&p.i, &hi.0, &hr.0, &j]);
            assert!(low_bits_zero(&d, k), "K={k}");
            p.verify(HitSuite::EcdsaSha384, &hi, &hr, &j).unwrap();
            if k >= 8 {
                let mut bad = j.clone();
                bad[47] ^= 0x55;
                // Another J may solve it by chance with probability 2^-K.
                assert!(p.verify(HitSuite::EcdsaSha384, &hi, &hr, &bad).is_err());
                assert!(p.verify(HitSuite::EcdsaSha384, &hr, &hi, &j).is_err());
                let other = Puzzle { k, i: vec![8u8; 48] };
                assert!(other.verify(HitSuite::EcdsaSha384, &hi, &hr, &j).is_err());
            }
        }
    }

    #[test]
    fn refusals_name_the_field() {
        let h = HostIdentityTag([0; 16]);
        let p = Puzzle { k: 40, i: vec![0; 48] };
        assert!(
            p.solve(HitSuite::EcdsaSha384, &h, &h, &[0; 48])
                .unwrap_err()
                .to_string()
                .contains("K = 40")
        );
        let p = Puzzle { k: 1, i: vec![0; 5] };
        assert!(
            p.solve(HitSuite::EcdsaSha384, &h, &h, &[0; 48])
                .unwrap_err()
                .to_string()
                .contains("#I")
        );
        let p = Puzzle { k: 1, i: vec![0; 48] };
        assert!(
            p.verify(HitSuite::EcdsaSha384, &h, &h, &[0; 3])
                .unwrap_err()
                .to_string()
                .contains("#J")
        );
    }
}
