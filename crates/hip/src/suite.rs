//! HIT suites (RFC 7401 §5.2.10): which host identity algorithm signs, which hash is RHASH
//! (puzzle, KEYMAT, HIT) and which HMAC protects HIP_MAC. The ORCHID Generation Algorithm ID
//! in a HIT's fourth nibble is the suite's ID (RFC 7401 §5.2.10, RFC 7343 §2).

/// A HIT suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HitSuite {
    /// Suite 1, RSA,DSA/SHA-256: RHASH SHA-256, HMAC-SHA-256. (Recognised in HITs; we do
    /// not generate RSA or DSA identities.)
    RsaDsaSha256,
    /// Suite 2, ECDSA/SHA-384 (P-256, P-384): RHASH SHA-384, HMAC-SHA-384.
    EcdsaSha384,
    /// Suite 3, ECDSA_LOW/SHA-1 (SECP160R1): RHASH SHA-1, HMAC-SHA-1. (Recognised only.)
    EcdsaLowSha1,
}

impl HitSuite {
    /// The suite's ID, also its ORCHID OGA ID.
    pub fn id(self) -> u8 {
        match self {
            HitSuite::RsaDsaSha256 => 1,
            HitSuite::EcdsaSha384 => 2,
            HitSuite::EcdsaLowSha1 => 3,
        }
    }

    /// The suite with this ID.
    pub fn from_id(id: u8) -> Option<HitSuite> {
        match id {
            1 => Some(HitSuite::RsaDsaSha256),
            2 => Some(HitSuite::EcdsaSha384),
            3 => Some(HitSuite::EcdsaLowSha1),
            _ => None,
        }
    }

    /// RHASH output length in bytes (also the length of the puzzle's #I and #J, §5.2.4).
    pub fn rhash_len(self) -> usize {
        match self {
            HitSuite::RsaDsaSha256 => 32,
            HitSuite::EcdsaSha384 => 48,
            HitSuite::EcdsaLowSha1 => 20,
        }
    }

    /// RHASH over the concatenation of `parts`.
    pub fn rhash(self, parts: &[&[u8]]) -> Vec<u8> {
        match self {
            HitSuite::RsaDsaSha256 => crypto::digest::sha256(parts).to_vec(),
            HitSuite::EcdsaSha384 => crypto::digest::sha384(parts).to_vec(),
            HitSuite::EcdsaLowSha1 => crypto::digest::sha1(parts).to_vec(),
        }
    }

    /// An incremental RHASH.
    pub fn hasher(self) -> crypto::digest::Hasher {
        match self {
            HitSuite::RsaDsaSha256 => crypto::digest::Hasher::sha256(),
            HitSuite::EcdsaSha384 => crypto::digest::Hasher::sha384(),
            HitSuite::EcdsaLowSha1 => crypto::digest::Hasher::sha1(),
        }
    }

    /// The HMAC of RHASH (HIP_MAC, HIP_MAC_2 and the KEYMAT's HKDF), if this build has it.
    pub fn hmac(self) -> Option<crypto::PrfAlg> {
        match self {
            HitSuite::RsaDsaSha256 => Some(crypto::PrfAlg::HmacSha256),
            HitSuite::EcdsaSha384 => Some(crypto::PrfAlg::HmacSha384),
            HitSuite::EcdsaLowSha1 => None,
        }
    }
}
