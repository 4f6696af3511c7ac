//! RSA as HIP signs with it (RFC 7401 §5.2.9 HI algorithm RSA = 5, §5.2.14 HIP_SIGNATURE):
//! RSASSA-PKCS1-v1_5 with SHA-256, the scheme RFC 5702 §3 defines for "RSA/SHA-256", which
//! RFC 7401 §5.2.14 names for RSA signatures under the HIT suite RSA,DSA/SHA-256 (§5.2.10).
//! The public key travels as its modulus and exponent (RFC 3110 §2; the encoding itself is
//! the `hip` crate's). Keys, signing and verification are aws-lc-rs; moduli of 2048 to 8192
//! bits are taken (aws-lc-rs's range for SHA-256 verification).

use crate::provider::CryptoError;
use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rsa::{KeyPair, KeySize, PublicKeyComponents};
use aws_lc_rs::signature::{KeyPair as _, RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_SHA256};
use zeroize::Zeroizing;

/// Moduli this module makes, in bits.
pub const RSA_BITS: [usize; 4] = [2048, 3072, 4096, 8192];

/// A private RSA key (held inside AWS-LC, which clears it when freed).
pub struct RsaKey {
    kp: KeyPair,
}

impl std::fmt::Debug for RsaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RsaKey").field("bits", &self.bits()).finish_non_exhaustive()
    }
}

impl RsaKey {
    /// A fresh key with a modulus of `bits` (one of [`RSA_BITS`]) and exponent 65537.
    pub fn generate(bits: usize) -> Result<RsaKey, CryptoError> {
        let size = match bits {
            2048 => KeySize::Rsa2048,
            3072 => KeySize::Rsa3072,
            4096 => KeySize::Rsa4096,
            8192 => KeySize::Rsa8192,
            _ => return Err(CryptoError::KeyLength { got: bits, want: 2048 }),
        };
        Ok(RsaKey { kp: KeyPair::generate(size).map_err(|_| CryptoError::Library)? })
    }

    /// A key from a PKCS#8 document (DER) or a PKCS#1 `RSAPrivateKey` (DER).
    pub fn from_pkcs8(der: &[u8]) -> Result<RsaKey, CryptoError> {
        let kp = KeyPair::from_pkcs8(der)
            .or_else(|_| KeyPair::from_der(der))
            .map_err(|_| CryptoError::KeyLength { got: der.len(), want: 0 })?;
        Ok(RsaKey { kp })
    }

    /// The key as PKCS#8 v1 (DER).
    pub fn to_pkcs8(&self) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        let doc = self.kp.as_der().map_err(|_| CryptoError::Library)?;
        Ok(Zeroizing::new(doc.as_ref().to_vec()))
    }

    /// Modulus length in bits.
    pub fn bits(&self) -> usize {
        self.kp.public_modulus_len() * 8
    }

    /// The public modulus n, big-endian without leading zeros.
    pub fn modulus(&self) -> Vec<u8> {
        self.kp.public_key().modulus().big_endian_without_leading_zero().to_vec()
    }

    /// The public exponent e, big-endian without leading zeros.
    pub fn exponent(&self) -> Vec<u8> {
        self.kp.public_key().exponent().big_endian_without_leading_zero().to_vec()
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 over `message` (RFC 8017 §8.2.1); as long as the modulus.
    pub fn sign_sha256(&self, message: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let mut sig = vec![0u8; self.kp.public_modulus_len()];
        let rng = aws_lc_rs::rand::SystemRandom::new();
        self.kp
            .sign(&RSA_PKCS1_SHA256, &rng, message, &mut sig)
            .map_err(|_| CryptoError::Library)?;
        Ok(sig)
    }
}

/// Checks that `(n, e)` is an RSA public key this module verifies with (2048 to 8192 bits,
/// no leading zero octets). Any failure is `KeyLength` with the modulus length in bits.
pub fn check_public(n: &[u8], e: &[u8]) -> Result<(), CryptoError> {
    let bits = n.len() * 8;
    let bad = CryptoError::KeyLength { got: bits, want: 2048 };
    if !(2048..=8192).contains(&bits) {
        return Err(bad);
    }
    PublicKeyComponents { n, e }
        .to_parsed_public_key(&RSA_PKCS1_2048_8192_SHA256)
        .map_err(|_| bad)?;
    Ok(())
}

/// Verifies an RSASSA-PKCS1-v1_5 SHA-256 signature with the public key `(n, e)`. Any failure
/// is `Integrity`.
pub fn verify_sha256(n: &[u8], e: &[u8], message: &[u8], sig: &[u8]) -> Result<(), CryptoError> {
    PublicKeyComponents { n, e }
        .verify(&RSA_PKCS1_2048_8192_SHA256, message, sig)
        .map_err(|_| CryptoError::Integrity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_verify_round_trip_and_pkcs8() {
        let k = RsaKey::generate(2048).unwrap();
        assert_eq!(k.bits(), 2048);
        assert_eq!(k.exponent(), vec![1, 0, 1]);
        let (n, e) = (k.modulus(), k.exponent());
        check_public(&n, &e).unwrap();
        let sig = k.sign_sha256(b"I2").unwrap();
        assert_eq!(sig.len(), 256);
        // PKCS#1 v1.5 is deterministic: the same key signs the same message alike.
        assert_eq!(sig, k.sign_sha256(b"I2").unwrap());
        verify_sha256(&n, &e, b"I2", &sig).unwrap();
        assert!(verify_sha256(&n, &e, b"R2", &sig).is_err());
        let again = RsaKey::from_pkcs8(&k.to_pkcs8().unwrap()).unwrap();
        assert_eq!(again.modulus(), n);
        assert!(check_public(&n[..100], &e).is_err());
        assert!(RsaKey::generate(1000).is_err());
    }
}
