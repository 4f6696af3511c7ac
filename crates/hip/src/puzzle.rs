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

/// A puzzle search: given the puzzle, the HIT suite, both HITs and a seed, #J and the hashes
/// it took ([`Puzzle::solve`], or lanes of [`Puzzle::solve_lane`] run by the caller).
pub type Solver<'a> = &'a dyn Fn(
    &Puzzle,
    HitSuite,
    &HostIdentityTag,
    &HostIdentityTag,
    &[u8],
) -> Result<(Vec<u8>, u64), Error>;

/// Which share of a puzzle search a caller runs ([`Puzzle::solve_lane`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    /// This lane, `0..of`.
    pub index: u64,
    /// Lanes in all.
    pub of: u64,
}

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
        match self.solve_lane(suite, hit_i, hit_r, seed, Lane { index: 0, of: 1 }, &|| false)? {
            (Some(j), tries) => Ok((j, tries)),
            (None, _) => Err(Error::Config(format!("no solution for K = {}", self.k))),
        }
    }

    /// One lane of a search that `lane.of` lanes share: this one tries the counters `index`,
    /// `index + of`, `index + 2·of`, … from `seed` (so lanes never try the same #J), and gives
    /// up when `stop()` says another lane has found one (asked every 64 tries). Returns #J
    /// (`None` if stopped) and the hashes this lane made. No threads here: the caller runs lanes
    /// where it likes (the node, on several cores, to shorten T2).
    pub fn solve_lane(
        &self,
        suite: HitSuite,
        hit_i: &HostIdentityTag,
        hit_r: &HostIdentityTag,
        seed: &[u8],
        lane: Lane,
        stop: &dyn Fn() -> bool,
    ) -> Result<(Option<Vec<u8>>, u64), Error> {
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
        if lane.of == 0 || lane.index >= lane.of {
            return Err(Error::Config(format!("puzzle lane {} of {}", lane.index, lane.of)));
        }
        let mut tries = 0u64;
        let mut t = lane.index;
        while t < limit {
            if tries % 64 == 63 && stop() {
                return Ok((None, tries));
            }
            tries += 1;
            j[n - 8..].copy_from_slice(&start.wrapping_add(t).to_be_bytes());
            let mut h = prefix.clone();
            h.update(&j);
            if low_bits_zero(&h.finish(), self.k) {
                return Ok((Some(j), tries));
            }
            t += lane.of;
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

    /// Lanes split the sequential search exactly: the lane holding the sequential solution's
    /// counter finds the same #J after its share of the tries, and a stopped lane gives up.
    #[test]
    fn lanes_share_the_search() {
        let hi = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, b"initiator");
        let hr = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, b"responder");
        let p = Puzzle { k: 10, i: vec![5u8; 48] };
        let s = HitSuite::EcdsaSha384;
        let (j, tries) = p.solve(s, &hi, &hr, &[4u8; 48]).unwrap();
        let t = tries - 1;
        for of in [2u64, 3] {
            let lane = Lane { index: t % of, of };
            let (j2, n) = p.solve_lane(s, &hi, &hr, &[4u8; 48], lane, &|| false).unwrap();
            assert_eq!((j2, n), (Some(j.clone()), t / of + 1), "{of} lanes");
        }
        // A seed whose solution lies beyond the first stop check: stopped, the lane gives up.
        let far = (0u8..=255)
            .find(|&b| p.solve(s, &hi, &hr, &[b; 48]).is_ok_and(|(_, n)| n > 128))
            .unwrap();
        let stopped = p.solve_lane(s, &hi, &hr, &[far; 48], Lane { index: 0, of: 1 }, &|| true);
        assert_eq!(stopped.unwrap(), (None, 63));
        assert!(
            p.solve_lane(s, &hi, &hr, &[4u8; 48], Lane { index: 2, of: 2 }, &|| false).is_err()
        );
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
