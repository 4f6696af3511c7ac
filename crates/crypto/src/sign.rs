//! Signatures for IKEv2 public-key authentication (RFC 7427 "Digital Signature" auth method):
//! Ed25519 (RFC 8032, RFC 8420 for its use in IKEv2), ECDSA P-256 with SHA-256 and P-384 with
//! SHA-384 (DER `ECDSA-Sig-Value`, as RFC 7427 §3 carries it), and RSA with SHA-256 as
//! PKCS#1 v1.5 or PSS (RFC 7427 Appendix A.2, RFC 4055), from aws-lc-rs. The RFC 7427
//! AlgorithmIdentifier byte strings live in the `ike` crate beside the AUTH computation.

use crate::provider::CryptoError;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, KeyPair};

/// A signature algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignatureAlg {
    /// Ed25519 (pure, RFC 8032 §5.1). Public key: 32 bytes.
    Ed25519,
    /// ECDSA on P-256 with SHA-256; DER signature. Public key: 65-byte uncompressed point.
    EcdsaP256Sha256,
    /// ECDSA on P-384 with SHA-384; DER signature. Public key: 97-byte uncompressed point.
    EcdsaP384Sha384,
    /// RSA PKCS#1 v1.5 with SHA-256 (`sha256WithRSAEncryption`). Public key: PKCS#1
    /// `RSAPublicKey` DER.
    RsaPkcs1Sha256,
    /// RSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt (RFC 4055 §3.1). Public key as
    /// for PKCS#1 v1.5.
    RsaPssSha256,
}

impl SignatureAlg {
    fn verification(self) -> &'static dyn signature::VerificationAlgorithm {
        match self {
            SignatureAlg::Ed25519 => &signature::ED25519,
            SignatureAlg::EcdsaP256Sha256 => &signature::ECDSA_P256_SHA256_ASN1,
            SignatureAlg::EcdsaP384Sha384 => &signature::ECDSA_P384_SHA384_ASN1,
            SignatureAlg::RsaPkcs1Sha256 => &signature::RSA_PKCS1_2048_8192_SHA256,
            SignatureAlg::RsaPssSha256 => &signature::RSA_PSS_2048_8192_SHA256,
        }
    }

    fn ecdsa_signing(self) -> Option<&'static signature::EcdsaSigningAlgorithm> {
        match self {
            SignatureAlg::EcdsaP256Sha256 => Some(&signature::ECDSA_P256_SHA256_ASN1_SIGNING),
            SignatureAlg::EcdsaP384Sha384 => Some(&signature::ECDSA_P384_SHA384_ASN1_SIGNING),
            _ => None,
        }
    }
}

enum Inner {
    Ed25519(signature::Ed25519KeyPair),
    Ecdsa(signature::EcdsaKeyPair),
    Rsa(signature::RsaKeyPair),
}

/// A private signing key (held inside AWS-LC, which clears it when freed).
pub struct SigningKey {
    alg: SignatureAlg,
    inner: Inner,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("alg", &self.alg).finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A fresh key.
    pub fn generate(alg: SignatureAlg) -> Result<SigningKey, CryptoError> {
        let inner = match alg {
            SignatureAlg::Ed25519 => Inner::Ed25519(
                signature::Ed25519KeyPair::generate().map_err(|_| CryptoError::Library)?,
            ),
            SignatureAlg::EcdsaP256Sha256 | SignatureAlg::EcdsaP384Sha384 => {
                let a = alg.ecdsa_signing().ok_or(CryptoError::Library)?;
                Inner::Ecdsa(
                    signature::EcdsaKeyPair::generate(a).map_err(|_| CryptoError::Library)?,
                )
            }
            SignatureAlg::RsaPkcs1Sha256 | SignatureAlg::RsaPssSha256 => Inner::Rsa(
                signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048)
                    .map_err(|_| CryptoError::Library)?,
            ),
        };
        Ok(SigningKey { alg, inner })
    }

    /// A key from a PKCS#8 document (what `openssl genpkey` writes, DER), or for ECDSA and
    /// RSA from the key type's own DER (RFC 5915 `ECPrivateKey`, PKCS#1 `RSAPrivateKey`: what
    /// strongSwan's `pki --gen` writes).
    pub fn from_pkcs8(alg: SignatureAlg, der: &[u8]) -> Result<SigningKey, CryptoError> {
        let bad = |_| CryptoError::KeyLength { got: der.len(), want: 0 };
        let inner = match alg {
            SignatureAlg::Ed25519 => Inner::Ed25519(
                signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(der).map_err(bad)?,
            ),
            SignatureAlg::EcdsaP256Sha256 | SignatureAlg::EcdsaP384Sha384 => {
                let a = alg.ecdsa_signing().ok_or(CryptoError::Library)?;
                Inner::Ecdsa(signature::EcdsaKeyPair::from_private_key_der(a, der).map_err(bad)?)
            }
            SignatureAlg::RsaPkcs1Sha256 | SignatureAlg::RsaPssSha256 => Inner::Rsa(
                signature::RsaKeyPair::from_pkcs8(der)
                    .or_else(|_| signature::RsaKeyPair::from_der(der))
                    .map_err(bad)?,
            ),
        };
        Ok(SigningKey { alg, inner })
    }

    /// An Ed25519 key from its 32-byte seed (RFC 8032 §5.1.5): for known-answer tests and
    /// raw-key configuration.
    pub fn ed25519_from_seed(seed: &[u8]) -> Result<SigningKey, CryptoError> {
        let kp = signature::Ed25519KeyPair::from_seed_unchecked(seed)
            .map_err(|_| CryptoError::KeyLength { got: seed.len(), want: 32 })?;
        Ok(SigningKey { alg: SignatureAlg::Ed25519, inner: Inner::Ed25519(kp) })
    }

    /// The algorithm.
    pub fn alg(&self) -> SignatureAlg {
        self.alg
    }

    /// The public key in the form [`verify`] takes.
    pub fn public_key(&self) -> Vec<u8> {
        match &self.inner {
            Inner::Ed25519(k) => k.public_key().as_ref().to_vec(),
            Inner::Ecdsa(k) => k.public_key().as_ref().to_vec(),
            Inner::Rsa(k) => k.public_key().as_ref().to_vec(),
        }
    }

    /// Signs `message` (Ed25519 signs it whole; ECDSA and RSA hash it with their SHA-2).
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, CryptoError> {
        match &self.inner {
            Inner::Rsa(k) => {
                let pad: &'static dyn signature::RsaEncoding = match self.alg {
                    SignatureAlg::RsaPssSha256 => &signature::RSA_PSS_SHA256,
                    _ => &signature::RSA_PKCS1_SHA256,
                };
                let mut sig = vec![0u8; k.public_modulus_len()];
                k.sign(pad, &SystemRandom::new(), message, &mut sig)
                    .map_err(|_| CryptoError::Library)?;
                Ok(sig)
            }
            Inner::Ed25519(k) => Ok(k.sign(message).as_ref().to_vec()),
            Inner::Ecdsa(k) => k
                .sign(&SystemRandom::new(), message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| CryptoError::Library),
        }
    }
}

/// Verifies `sig` over `message` with `public_key` (raw: 32 bytes for Ed25519, the
/// uncompressed point for ECDSA). Any failure is `Integrity`.
pub fn verify(
    alg: SignatureAlg,
    public_key: &[u8],
    message: &[u8],
    sig: &[u8],
) -> Result<(), CryptoError> {
    signature::UnparsedPublicKey::new(alg.verification(), public_key)
        .verify(message, sig)
        .map_err(|_| CryptoError::Integrity)
}

/// The signatures of IKEv2's original AUTH methods (RFC 7296 §3.8, RFC 4754 §7), which a peer
/// uses when it does not speak RFC 7427: method 1 (RSA PKCS#1 v1.5 with SHA-1) and methods 9,
/// 10, 11 (ECDSA with SHA-256 on P-256, SHA-384 on P-384, SHA-512 on P-521, signature `r | s`
/// of fixed length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassicAuth {
    /// AUTH method 1. Public key: PKCS#1 `RSAPublicKey` DER.
    RsaSha1,
    /// AUTH method 9. Public key: the uncompressed point.
    EcdsaP256Sha256,
    /// AUTH method 10.
    EcdsaP384Sha384,
    /// AUTH method 11.
    EcdsaP521Sha512,
}

/// Verifies a classic AUTH method's `sig` over `message` with `public_key` (the key inside a
/// certificate's SubjectPublicKeyInfo BIT STRING). Any failure is `Integrity`.
pub fn verify_classic(
    alg: ClassicAuth,
    public_key: &[u8],
    message: &[u8],
    sig: &[u8],
) -> Result<(), CryptoError> {
    let v: &'static dyn signature::VerificationAlgorithm = match alg {
        ClassicAuth::RsaSha1 => &signature::RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY,
        ClassicAuth::EcdsaP256Sha256 => &signature::ECDSA_P256_SHA256_FIXED,
        ClassicAuth::EcdsaP384Sha384 => &signature::ECDSA_P384_SHA384_FIXED,
        ClassicAuth::EcdsaP521Sha512 => &signature::ECDSA_P521_SHA512_FIXED,
    };
    signature::UnparsedPublicKey::new(v, public_key)
        .verify(message, sig)
        .map_err(|_| CryptoError::Integrity)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8032 §7.1 TEST 1 (empty message) and TEST 2 (one byte).
    #[test]
    fn rfc8032_section_7_1_ed25519() {
        let cases = [
            (
                "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
                "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
                "",
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
            ),
            (
                "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
                "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
                "72",
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
            ),
        ];
        for (seed, public, msg, sig) in cases {
            let k = SigningKey::ed25519_from_seed(&hex::decode(seed).unwrap()).unwrap();
            assert_eq!(hex::encode(k.public_key()), public);
            let msg = hex::decode(msg).unwrap();
            assert_eq!(hex::encode(k.sign(&msg).unwrap()), sig);
            verify(SignatureAlg::Ed25519, &k.public_key(), &msg, &hex::decode(sig).unwrap())
                .unwrap();
        }
    }

    #[test]
    fn sign_verify_and_tamper() {
        for alg in [
            SignatureAlg::Ed25519,
            SignatureAlg::EcdsaP256Sha256,
            SignatureAlg::EcdsaP384Sha384,
            SignatureAlg::RsaPkcs1Sha256,
            SignatureAlg::RsaPssSha256,
        ] {
            let k = SigningKey::generate(alg).unwrap();
            let pk = k.public_key();
            let sig = k.sign(b"IKE_SA_INIT bytes | Nr | prf(SK_pi, IDi')").unwrap();
            verify(alg, &pk, b"IKE_SA_INIT bytes | Nr | prf(SK_pi, IDi')", &sig).unwrap();
            assert_eq!(verify(alg, &pk, b"other", &sig), Err(CryptoError::Integrity));
            let mut bad = sig.clone();
            if let Some(b) = bad.last_mut() {
                *b ^= 1;
            }
            assert_eq!(
                verify(alg, &pk, b"IKE_SA_INIT bytes | Nr | prf(SK_pi, IDi')", &bad),
                Err(CryptoError::Integrity)
            );
            assert!(verify(alg, &pk[1..], b"x", &sig).is_err());
        }
        let ec = SigningKey::generate(SignatureAlg::EcdsaP256Sha256).unwrap();
        assert_eq!(ec.public_key().len(), 65);
        // A signature under one algorithm does not verify under the other.
        let ed = SigningKey::generate(SignatureAlg::Ed25519).unwrap();
        let sig = ed.sign(b"m").unwrap();
        assert!(verify(SignatureAlg::EcdsaP256Sha256, &ed.public_key(), b"m", &sig).is_err());
    }
}
