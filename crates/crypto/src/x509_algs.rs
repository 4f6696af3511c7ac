//! Certificate signature algorithms for X.509 path validation (`rustls-webpki`), verified by
//! aws-lc-rs: ECDSA P-256/P-384/P-521, Ed25519 (RFC 8410), RSA PKCS#1 v1.5 and RSA-PSS
//! (RFC 4055) with SHA-2. webpki's own aws-lc-rs feature would also switch on aws-lc-sys's
//! `prebuilt-nasm` feature and rebuild AWS-LC for the whole workspace, so the same
//! verification algorithms are named here against the aws-lc-rs this crate already links.

use aws_lc_rs::signature;
use rustls_pki_types::alg_id;
use rustls_pki_types::{AlgorithmIdentifier, InvalidSignature, SignatureVerificationAlgorithm};

/// One (public key algorithm, signature algorithm) pair and the aws-lc-rs verifier for it.
#[derive(Debug)]
struct Alg {
    public_key_alg_id: AlgorithmIdentifier,
    signature_alg_id: AlgorithmIdentifier,
    verification_alg: &'static dyn signature::VerificationAlgorithm,
}

impl SignatureVerificationAlgorithm for Alg {
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        self.public_key_alg_id
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature_alg_id
    }

    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        // RFC 5480 §2.2: "The public key MUST be rejected if any other value [than 0x04, 0x02
        // or 0x03] is included in the first octet."
        let ec = [alg_id::ECDSA_P256, alg_id::ECDSA_P384, alg_id::ECDSA_P521];
        if ec.contains(&self.public_key_alg_id) && !matches!(public_key.first(), Some(0x02..=0x04))
        {
            return Err(InvalidSignature);
        }
        signature::UnparsedPublicKey::new(self.verification_alg, public_key)
            .verify(message, signature)
            .map_err(|_| InvalidSignature)
    }
}

macro_rules! alg {
    ($key:ident, $sig:ident, $v:ident) => {
        &Alg {
            public_key_alg_id: alg_id::$key,
            signature_alg_id: alg_id::$sig,
            verification_alg: &signature::$v,
        }
    };
}

/// Every certificate signature algorithm we accept in a chain.
pub static ALL: &[&dyn SignatureVerificationAlgorithm] = &[
    alg!(ECDSA_P256, ECDSA_SHA256, ECDSA_P256_SHA256_ASN1),
    alg!(ECDSA_P256, ECDSA_SHA384, ECDSA_P256_SHA384_ASN1),
    alg!(ECDSA_P384, ECDSA_SHA256, ECDSA_P384_SHA256_ASN1),
    alg!(ECDSA_P384, ECDSA_SHA384, ECDSA_P384_SHA384_ASN1),
    alg!(ECDSA_P521, ECDSA_SHA256, ECDSA_P521_SHA256_ASN1),
    alg!(ECDSA_P521, ECDSA_SHA384, ECDSA_P521_SHA384_ASN1),
    alg!(ECDSA_P521, ECDSA_SHA512, ECDSA_P521_SHA512_ASN1),
    alg!(ED25519, ED25519, ED25519),
    alg!(RSA_ENCRYPTION, RSA_PKCS1_SHA256, RSA_PKCS1_2048_8192_SHA256),
    alg!(RSA_ENCRYPTION, RSA_PKCS1_SHA384, RSA_PKCS1_2048_8192_SHA384),
    alg!(RSA_ENCRYPTION, RSA_PKCS1_SHA512, RSA_PKCS1_2048_8192_SHA512),
    alg!(RSA_ENCRYPTION, RSA_PSS_SHA256, RSA_PSS_2048_8192_SHA256),
    alg!(RSA_ENCRYPTION, RSA_PSS_SHA384, RSA_PSS_2048_8192_SHA384),
    alg!(RSA_ENCRYPTION, RSA_PSS_SHA512, RSA_PSS_2048_8192_SHA512),
];
