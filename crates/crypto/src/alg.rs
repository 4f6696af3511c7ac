//! The algorithm catalogue: ESP encryption and integrity transforms, their key sizes, ICV lengths,
//! and the short suite names used on the command line (`aes128gcm`, `aes256cbc-sha256`, `3des-sha1`).
//!
//! Read first: RFC 8221 §5–6 (status of each algorithm), RFC 4303 §3.2 (combined vs separate modes).

use std::fmt;

/// An AEAD (combined-mode) algorithm. ICV is 16 bytes for all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AeadAlg {
    /// AES-GCM with a 16-byte ICV (RFC 4106), 128-bit key.
    Aes128Gcm,
    /// AES-GCM with a 16-byte ICV (RFC 4106), 256-bit key.
    Aes256Gcm,
    /// ChaCha20-Poly1305 (RFC 7634).
    ChaCha20Poly1305,
}

impl AeadAlg {
    /// Length of the cipher key, without the 4-byte salt.
    pub fn key_len(self) -> usize {
        match self {
            AeadAlg::Aes128Gcm => 16,
            AeadAlg::Aes256Gcm | AeadAlg::ChaCha20Poly1305 => 32,
        }
    }
    /// ICV (tag) length in bytes.
    pub fn tag_len(self) -> usize {
        16
    }
}

/// A block cipher used in CBC mode with an explicit per-packet IV (RFC 3602, RFC 2451).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CbcAlg {
    /// AES-128-CBC (RFC 3602).
    Aes128,
    /// AES-256-CBC (RFC 3602).
    Aes256,
    /// 3DES-EDE-CBC (RFC 2451). Legacy: kept to rerun the seeds' comparisons.
    TripleDes,
}

impl CbcAlg {
    /// Key length in bytes.
    pub fn key_len(self) -> usize {
        match self {
            CbcAlg::Aes128 => 16,
            CbcAlg::Aes256 => 32,
            CbcAlg::TripleDes => 24,
        }
    }
    /// Block length in bytes, which is also the IV length.
    pub fn block_len(self) -> usize {
        match self {
            CbcAlg::Aes128 | CbcAlg::Aes256 => 16,
            CbcAlg::TripleDes => 8,
        }
    }
}

/// An HMAC with truncation as used by ESP and AH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HmacAlg {
    /// HMAC-SHA1-96 (RFC 2404). Legacy.
    Sha1_96,
    /// HMAC-SHA-256-128 (RFC 4868).
    Sha256_128,
    /// HMAC-SHA-384-192 (RFC 4868).
    Sha384_192,
    /// HMAC-SHA-512-256 (RFC 4868).
    Sha512_256,
}

impl HmacAlg {
    /// Key length in bytes (RFC 4868 §2.1.1: the block-size-free key equals the output size).
    pub fn key_len(self) -> usize {
        match self {
            HmacAlg::Sha1_96 => 20,
            HmacAlg::Sha256_128 => 32,
            HmacAlg::Sha384_192 => 48,
            HmacAlg::Sha512_256 => 64,
        }
    }
    /// Truncated ICV length in bytes.
    pub fn icv_len(self) -> usize {
        match self {
            HmacAlg::Sha1_96 => 12,
            HmacAlg::Sha256_128 => 16,
            HmacAlg::Sha384_192 => 24,
            HmacAlg::Sha512_256 => 32,
        }
    }
}

/// ESP encryption transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EncrAlg {
    /// ENCR_NULL (RFC 2410): integrity only.
    Null,
    /// A CBC cipher, used with a separate integrity algorithm.
    Cbc(CbcAlg),
    /// A combined-mode cipher; no separate integrity algorithm.
    Aead(AeadAlg),
}

/// Integrity transform (ESP's separate ICV, or AH's ICV).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntegAlg {
    /// No separate integrity: with an AEAD, or (RFC 4303 §3.2, insecure) confidentiality-only.
    None,
    /// An HMAC.
    Hmac(HmacAlg),
    /// AES-GMAC (RFC 4543), for AH; 128-bit key + 4-byte salt.
    Aes128Gmac,
    /// AES-GMAC (RFC 4543), for AH; 256-bit key + 4-byte salt.
    Aes256Gmac,
}

impl IntegAlg {
    /// ICV length in bytes.
    pub fn icv_len(self) -> usize {
        match self {
            IntegAlg::None => 0,
            IntegAlg::Hmac(h) => h.icv_len(),
            IntegAlg::Aes128Gmac | IntegAlg::Aes256Gmac => 16,
        }
    }
    /// Key length in bytes, including the 4-byte salt for GMAC.
    pub fn key_len(self) -> usize {
        match self {
            IntegAlg::None => 0,
            IntegAlg::Hmac(h) => h.key_len(),
            IntegAlg::Aes128Gmac => 16 + 4,
            IntegAlg::Aes256Gmac => 32 + 4,
        }
    }
    /// True for algorithms RFC 8221 keeps only for interoperability with old peers.
    pub fn is_legacy(self) -> bool {
        matches!(self, IntegAlg::Hmac(HmacAlg::Sha1_96))
    }
    /// Short name, as in suite names: `sha256`, `sha1`, `gmac128`.
    pub fn name(self) -> &'static str {
        match self {
            IntegAlg::None => "none",
            IntegAlg::Hmac(HmacAlg::Sha1_96) => "sha1",
            IntegAlg::Hmac(HmacAlg::Sha256_128) => "sha256",
            IntegAlg::Hmac(HmacAlg::Sha384_192) => "sha384",
            IntegAlg::Hmac(HmacAlg::Sha512_256) => "sha512",
            IntegAlg::Aes128Gmac => "gmac128",
            IntegAlg::Aes256Gmac => "gmac256",
        }
    }
    /// Parses a short name (see [`IntegAlg::name`]).
    pub fn from_name(s: &str) -> Option<IntegAlg> {
        Some(match s {
            "none" => IntegAlg::None,
            "sha1" | "hmac-sha1-96" => IntegAlg::Hmac(HmacAlg::Sha1_96),
            "sha256" | "hmac-sha256-128" => IntegAlg::Hmac(HmacAlg::Sha256_128),
            "sha384" | "hmac-sha384-192" => IntegAlg::Hmac(HmacAlg::Sha384_192),
            "sha512" | "hmac-sha512-256" => IntegAlg::Hmac(HmacAlg::Sha512_256),
            "gmac128" | "aes128gmac" => IntegAlg::Aes128Gmac,
            "gmac256" | "aes256gmac" => IntegAlg::Aes256Gmac,
            _ => return None,
        })
    }
}

impl EncrAlg {
    /// Key length in bytes, including the 4-byte salt for AEADs (RFC 4106 §8.1, RFC 7634 §4).
    pub fn key_len(self) -> usize {
        match self {
            EncrAlg::Null => 0,
            EncrAlg::Cbc(c) => c.key_len(),
            EncrAlg::Aead(a) => a.key_len() + 4,
        }
    }
    /// Length of the explicit IV carried in each ESP packet.
    pub fn iv_len(self) -> usize {
        match self {
            EncrAlg::Null => 0,
            EncrAlg::Cbc(c) => c.block_len(),
            EncrAlg::Aead(_) => 8,
        }
    }
    /// Alignment the padded plaintext must reach (RFC 4303 §2.4: at least 4).
    pub fn pad_align(self) -> usize {
        match self {
            EncrAlg::Cbc(c) => c.block_len(),
            EncrAlg::Null | EncrAlg::Aead(_) => 4,
        }
    }
    /// True for algorithms RFC 8221 keeps only for interoperability with old peers.
    pub fn is_legacy(self) -> bool {
        matches!(self, EncrAlg::Cbc(CbcAlg::TripleDes))
    }
    /// Short name, as in suite names.
    pub fn name(self) -> &'static str {
        match self {
            EncrAlg::Null => "null",
            EncrAlg::Cbc(CbcAlg::Aes128) => "aes128cbc",
            EncrAlg::Cbc(CbcAlg::Aes256) => "aes256cbc",
            EncrAlg::Cbc(CbcAlg::TripleDes) => "3des",
            EncrAlg::Aead(AeadAlg::Aes128Gcm) => "aes128gcm",
            EncrAlg::Aead(AeadAlg::Aes256Gcm) => "aes256gcm",
            EncrAlg::Aead(AeadAlg::ChaCha20Poly1305) => "chacha20poly1305",
        }
    }
    /// Parses a short name (see [`EncrAlg::name`]).
    pub fn from_name(s: &str) -> Option<EncrAlg> {
        Some(match s {
            "null" => EncrAlg::Null,
            "aes128cbc" | "aes-cbc-128" => EncrAlg::Cbc(CbcAlg::Aes128),
            "aes256cbc" | "aes-cbc-256" => EncrAlg::Cbc(CbcAlg::Aes256),
            "3des" | "3des-cbc" | "des3_ede" => EncrAlg::Cbc(CbcAlg::TripleDes),
            "aes128gcm" | "aes-gcm-128" => EncrAlg::Aead(AeadAlg::Aes128Gcm),
            "aes256gcm" | "aes-gcm-256" => EncrAlg::Aead(AeadAlg::Aes256Gcm),
            "chacha20poly1305" | "chacha20-poly1305" => EncrAlg::Aead(AeadAlg::ChaCha20Poly1305),
            _ => return None,
        })
    }
}

/// Why a suite name or combination was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SuiteError {
    /// The name is not one we know.
    #[error(
        "unknown suite {0:?} (try `aes128gcm`, `chacha20poly1305`, `aes128cbc-sha256`, `3des-sha1`)"
    )]
    UnknownName(String),
    /// An AEAD was combined with a separate integrity algorithm.
    #[error("{0} is a combined-mode cipher and takes no separate integrity algorithm")]
    AeadWithInteg(&'static str),
    /// NULL encryption without integrity protects nothing (RFC 4303 §3.2).
    #[error("null encryption needs an integrity algorithm")]
    NullWithoutInteg,
    /// GMAC is an AH algorithm here.
    #[error("{0} is supported for AH only")]
    AhOnly(&'static str),
}

/// An ESP transform: encryption plus (unless combined-mode) integrity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EspSuite {
    /// Encryption transform.
    pub encr: EncrAlg,
    /// Integrity transform ([`IntegAlg::None`] for AEADs).
    pub integ: IntegAlg,
}

impl EspSuite {
    /// Checks the combination (RFC 4303 §3.2) and builds the suite.
    pub fn new(encr: EncrAlg, integ: IntegAlg) -> Result<Self, SuiteError> {
        match (encr, integ) {
            (EncrAlg::Aead(_), IntegAlg::None) => {}
            (EncrAlg::Aead(_), _) => return Err(SuiteError::AeadWithInteg(encr.name())),
            (EncrAlg::Null, IntegAlg::None) => return Err(SuiteError::NullWithoutInteg),
            (_, IntegAlg::Aes128Gmac | IntegAlg::Aes256Gmac) => {
                return Err(SuiteError::AhOnly(integ.name()));
            }
            _ => {}
        }
        Ok(EspSuite { encr, integ })
    }

    /// ICV length in bytes.
    pub fn icv_len(&self) -> usize {
        match self.encr {
            EncrAlg::Aead(a) => a.tag_len(),
            _ => self.integ.icv_len(),
        }
    }

    /// True if the suite uses an algorithm kept only for legacy comparisons (3DES, HMAC-SHA1).
    pub fn is_legacy(&self) -> bool {
        self.encr.is_legacy() || self.integ.is_legacy()
    }

    /// True for confidentiality-only ESP (no ICV), which RFC 4303 §3.2 permits but we flag insecure.
    pub fn is_insecure(&self) -> bool {
        self.icv_len() == 0
    }

    /// The suites `hipsec bench` and the tests iterate over.
    pub fn all() -> Vec<EspSuite> {
        let names = [
            "aes128gcm",
            "aes256gcm",
            "chacha20poly1305",
            "aes128cbc-sha256",
            "aes256cbc-sha256",
            "aes256cbc-sha384",
            "aes256cbc-sha512",
            "null-sha256",
            "aes128cbc-sha1",
            "3des-sha1",
        ];
        names.iter().filter_map(|n| n.parse().ok()).collect()
    }
}

impl fmt::Display for EspSuite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.integ {
            IntegAlg::None => write!(f, "{}", self.encr.name()),
            i => write!(f, "{}-{}", self.encr.name(), i.name()),
        }
    }
}

impl std::str::FromStr for EspSuite {
    type Err = SuiteError;
    fn from_str(s: &str) -> Result<Self, SuiteError> {
        let unknown = || SuiteError::UnknownName(s.to_string());
        if let Some(e) = EncrAlg::from_name(s) {
            return EspSuite::new(e, IntegAlg::None);
        }
        let (e, i) = s.rsplit_once('-').ok_or_else(unknown)?;
        let e = EncrAlg::from_name(e).ok_or_else(unknown)?;
        let i = IntegAlg::from_name(i).ok_or_else(unknown)?;
        EspSuite::new(e, i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in EspSuite::all() {
            assert_eq!(s.to_string().parse::<EspSuite>(), Ok(s));
        }
        assert_eq!(EspSuite::all().len(), 10);
    }

    #[test]
    fn refuses_bad_combinations() {
        assert_eq!(
            "aes128gcm-sha256".parse::<EspSuite>(),
            Err(SuiteError::AeadWithInteg("aes128gcm"))
        );
        assert_eq!("null".parse::<EspSuite>(), Err(SuiteError::NullWithoutInteg));
        assert!(matches!("rot13".parse::<EspSuite>(), Err(SuiteError::UnknownName(_))));
        assert_eq!("aes128cbc-gmac128".parse::<EspSuite>(), Err(SuiteError::AhOnly("gmac128")));
    }

    #[test]
    fn legacy_flags() {
        assert!("3des-sha1".parse::<EspSuite>().map(|s| s.is_legacy()) == Ok(true));
        assert!("aes128cbc-sha1".parse::<EspSuite>().map(|s| s.is_legacy()) == Ok(true));
        assert!("aes128gcm".parse::<EspSuite>().map(|s| s.is_legacy()) == Ok(false));
    }
}
