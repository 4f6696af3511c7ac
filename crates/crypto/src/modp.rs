//! Finite-field Diffie-Hellman for IKEv2 groups 14 and 15 (2048- and 3072-bit MODP, RFC 3526
//! §3 and §4). Read RFC 7296 §3.4 (the public value is as long as the prime) and §2.14 (g^ir is
//! padded to the length of the modulus), and RFC 6989 (which checks a peer's value needs).
//!
//! aws-lc-rs has no finite-field DH: its `agreement` module offers ECDH and X25519 only, and
//! AWS-LC's `DH_*` functions are reachable only through `aws-lc-sys`, an unsafe FFI this crate
//! forbids. The exponentiation therefore comes from RustCrypto's `crypto-bigint` (0.5, already
//! in the tree under `p256`/`p384`): its Montgomery-form `pow_bounded_exp` runs in time that
//! depends on the exponent's bound, not on its value (fixed windows, table lookups by
//! constant-time selection), which is what a secret exponent needs. General-purpose big-integer
//! crates (`num-bigint`, `num-bigint-dig`) branch on the exponent's bits and are not used.

use std::sync::OnceLock;

use crypto_bigint::modular::runtime_mod::{DynResidue, DynResidueParams};
use crypto_bigint::{Limb, U2048, U3072, Uint};
use zeroize::{Zeroize, Zeroizing};

use crate::provider::CryptoError;

/// RFC 3526 §3, the 2048-bit MODP group (IKE group 14): "This prime is: 2^2048 - 2^1984 - 1 +
/// 2^64 * { [2^1918 pi] + 124476 }" and "The generator is: 2." The digits below are the
/// RFC's hexadecimal value; a unit test compares them with OpenSSL's copy of the group.
const MODP_2048_P: U2048 = U2048::from_be_hex(concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
    "3995497CEA956AE515D2261898FA051015728E5A8AACAA68FFFFFFFFFFFFFFFF",
));

/// RFC 3526 §4, the 3072-bit MODP group (IKE group 15): "This prime is: 2^3072 - 2^3008 - 1 +
/// 2^64 * { [2^2942 pi] + 1690314 }" and "The generator is: 2."
const MODP_3072_P: U3072 = U3072::from_be_hex(concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
    "3995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D04507A33",
    "A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7",
    "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864",
    "D87602733EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E2",
    "08E24FA074E5AB3143DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF",
));

/// Bits of a generated private exponent. NIST SP 800-56A Rev. 3 §5.6.1.1.4 draws the private
/// key from [1, 2^N − 1] with N at least twice the group's security strength (112 bits for
/// the 2048-bit group, 128 for the 3072-bit one, SP 800-57 Part 1 Table 2); 512 bits exceeds
/// both, and costs a quarter of a full-length exponent.
const EXPONENT_BITS: usize = 512;

/// The two MODP groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Modp {
    /// Group 14.
    P2048,
    /// Group 15.
    P3072,
}

impl Modp {
    /// Length of the prime, and so of a public value and of the shared secret.
    pub(crate) fn len(self) -> usize {
        match self {
            Modp::P2048 => 256,
            Modp::P3072 => 384,
        }
    }
}

/// A private exponent with the number of its low bits that the exponentiation walks: the
/// bound is public (512 for generated keys, the prime's length for known-answer keys), the
/// value is not.
pub(crate) struct Exponent<const L: usize> {
    x: Uint<L>,
    bits: usize,
}

impl<const L: usize> Drop for Exponent<L> {
    fn drop(&mut self) {
        self.x.zeroize();
    }
}

/// One side's MODP private exponent; wiped on drop.
pub(crate) enum ModpPrivate {
    P2048(Exponent<{ U2048::LIMBS }>),
    P3072(Exponent<{ U3072::LIMBS }>),
}

fn params_2048() -> DynResidueParams<{ U2048::LIMBS }> {
    static P: OnceLock<DynResidueParams<{ U2048::LIMBS }>> = OnceLock::new();
    *P.get_or_init(|| DynResidueParams::new(&MODP_2048_P))
}

fn params_3072() -> DynResidueParams<{ U3072::LIMBS }> {
    static P: OnceLock<DynResidueParams<{ U3072::LIMBS }>> = OnceLock::new();
    *P.get_or_init(|| DynResidueParams::new(&MODP_3072_P))
}

/// Big-endian bytes of `v`, exactly `L * 8` of them (RFC 7296 §3.4 and §2.14: padded with
/// zeros to the prime's length).
fn to_be<const L: usize>(v: &Uint<L>) -> Vec<u8> {
    let mut out = Vec::with_capacity(L * Limb::BYTES);
    for w in v.as_words().iter().rev() {
        out.extend_from_slice(&w.to_be_bytes());
    }
    out
}

/// `bytes` (at most `L * 8` of them, big-endian) as an integer; `None` if too long.
fn from_be<const L: usize>(bytes: &[u8]) -> Option<Uint<L>> {
    let n = L * Limb::BYTES;
    if bytes.len() > n {
        return None;
    }
    let mut padded = Zeroizing::new(vec![0u8; n]);
    padded[n - bytes.len()..].copy_from_slice(bytes);
    // `from_be_slice` asserts the length, which is exactly `n` here.
    Some(Uint::from_be_slice(&padded))
}

/// RFC 6989's check on a MODP public value from a peer, on a value of the right length.
/// Its abstract: "No change is required to IKE implementations that use modular exponential
/// groups, other than a few rarely used so-called Digital Signature Algorithm (DSA) groups":
/// for the RFC 3526 safe primes (p = 2q + 1) the only elements of small order are 1 and
/// p − 1, which the range check of NIST SP 800-56A Rev. 3 §5.6.2.3.1 (FFC partial public-key
/// validation, 2 ≤ y ≤ p − 2) excludes; every other y has order q or 2q, and the full test
/// y^q = 1 (§5.6.2.3.2) would cost one more exponentiation with a 2047-bit exponent to reject
/// values that leak at most the low bit of an ephemeral exponent used once.
fn check_range<const L: usize>(y: &Uint<L>, p: &Uint<L>) -> Result<(), CryptoError> {
    let two = Uint::<L>::from_u8(2);
    let p_minus_2 = p.wrapping_sub(&two);
    if y < &two || y > &p_minus_2 {
        return Err(CryptoError::Integrity);
    }
    Ok(())
}

/// Parses and checks a peer's KE payload data for `group`: exactly the prime's length
/// (RFC 7296 §3.4: "The length of the Diffie-Hellman public value for MODP groups MUST be
/// equal to the length of the prime modulus over which the exponentiation was performed,
/// prepending zero bits to the value if necessary"), and 2 ≤ y ≤ p − 2.
pub(crate) fn check_public(group: Modp, peer: &[u8]) -> Result<(), CryptoError> {
    if peer.len() != group.len() {
        return Err(CryptoError::Length);
    }
    match group {
        Modp::P2048 => {
            let y = from_be::<{ U2048::LIMBS }>(peer).ok_or(CryptoError::Length)?;
            check_range(&y, &MODP_2048_P)
        }
        Modp::P3072 => {
            let y = from_be::<{ U3072::LIMBS }>(peer).ok_or(CryptoError::Length)?;
            check_range(&y, &MODP_3072_P)
        }
    }
}

/// g^x mod p with g = 2, as the prime's length of big-endian bytes.
fn public_of<const L: usize>(e: &Exponent<L>, params: DynResidueParams<L>) -> Vec<u8> {
    let g = DynResidue::new(&Uint::<L>::from_u8(2), params);
    to_be(&g.pow_bounded_exp(&e.x, e.bits).retrieve())
}

/// y^x mod p for a checked peer value y; the result is wiped after encoding.
fn shared_of<const L: usize>(
    e: &Exponent<L>,
    peer: &[u8],
    params: DynResidueParams<L>,
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    let y = from_be::<L>(peer).ok_or(CryptoError::Length)?;
    check_range(&y, params.modulus())?;
    let mut z = DynResidue::new(&y, params).pow_bounded_exp(&e.x, e.bits).retrieve();
    // Cannot happen for a y of order q or 2q and 0 < x < 2^512 < q; checked anyway, as the
    // ECDH path checks for an all-zero secret.
    let trivial = z <= Uint::<L>::ONE;
    let out = Zeroizing::new(to_be(&z));
    z.zeroize();
    if trivial {
        return Err(CryptoError::Integrity);
    }
    Ok(out)
}

impl ModpPrivate {
    /// A fresh exponent of [`EXPONENT_BITS`] random bits (never zero) and its public value.
    pub(crate) fn generate(group: Modp) -> Result<(ModpPrivate, Vec<u8>), CryptoError> {
        let mut bytes = Zeroizing::new([0u8; EXPONENT_BITS / 8]);
        loop {
            aws_lc_rs::rand::fill(&mut bytes[..]).map_err(|_| CryptoError::Library)?;
            if bytes.iter().any(|&b| b != 0) {
                break;
            }
        }
        Self::build(group, &bytes[..], EXPONENT_BITS)
    }

    /// A known exponent (big-endian, at most the prime's length, not zero): for known-answer
    /// tests against other implementations.
    pub(crate) fn from_bytes(group: Modp, x: &[u8]) -> Result<(ModpPrivate, Vec<u8>), CryptoError> {
        if x.is_empty() || x.len() > group.len() || x.iter().all(|&b| b == 0) {
            return Err(CryptoError::KeyLength { got: x.len(), want: group.len() });
        }
        Self::build(group, x, group.len() * 8)
    }

    fn build(group: Modp, x: &[u8], bits: usize) -> Result<(ModpPrivate, Vec<u8>), CryptoError> {
        Ok(match group {
            Modp::P2048 => {
                let e = Exponent { x: from_be(x).ok_or(CryptoError::BadKey)?, bits };
                let public = public_of(&e, params_2048());
                (ModpPrivate::P2048(e), public)
            }
            Modp::P3072 => {
                let e = Exponent { x: from_be(x).ok_or(CryptoError::BadKey)?, bits };
                let public = public_of(&e, params_3072());
                (ModpPrivate::P3072(e), public)
            }
        })
    }

    /// The group.
    pub(crate) fn group(&self) -> Modp {
        match self {
            ModpPrivate::P2048(_) => Modp::P2048,
            ModpPrivate::P3072(_) => Modp::P3072,
        }
    }

    /// g^ir from the peer's public value: `Length` if it is not exactly the prime's length,
    /// `Integrity` if it is outside [2, p − 2].
    pub(crate) fn agree(&self, peer: &[u8]) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        if peer.len() != self.group().len() {
            return Err(CryptoError::Length);
        }
        match self {
            ModpPrivate::P2048(e) => shared_of(e, peer, params_2048()),
            ModpPrivate::P3072(e) => shared_of(e, peer, params_3072()),
        }
    }
}

#[cfg(test)]
#[path = "modp_tests.rs"]
mod tests;
