//! The aws-lc-rs provider: AES-GCM, ChaCha20-Poly1305, AES-CBC and HMAC-SHA1/2 from AWS-LC.
//! 3DES comes from RustCrypto (see `legacy`), since aws-lc-rs does not expose it.

use crate::alg::{AeadAlg, CbcAlg, HmacAlg};
use crate::legacy::TripleDesCbc;
use crate::provider::{Aead, BlockCipher, CryptoError, Mac, Provider, check_key_len};
use aws_lc_rs::{aead, cipher, hmac, iv::FixedLength, rand};

/// The aws-lc-rs provider.
#[derive(Debug, Clone, Copy, Default)]
pub struct AwsLcProvider;

impl Provider for AwsLcProvider {
    fn name(&self) -> &'static str {
        "aws-lc-rs"
    }

    fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn Aead>, CryptoError> {
        check_key_len(key.len(), alg.key_len())?;
        let algorithm = match alg {
            AeadAlg::Aes128Gcm => &aead::AES_128_GCM,
            AeadAlg::Aes256Gcm => &aead::AES_256_GCM,
            AeadAlg::ChaCha20Poly1305 => &aead::CHACHA20_POLY1305,
        };
        let unbound = aead::UnboundKey::new(algorithm, key).map_err(|_| CryptoError::Library)?;
        Ok(Box::new(AwsAead(aead::LessSafeKey::new(unbound))))
    }

    fn cbc(&self, alg: CbcAlg, key: &[u8]) -> Result<Box<dyn BlockCipher>, CryptoError> {
        check_key_len(key.len(), alg.key_len())?;
        let algorithm = match alg {
            CbcAlg::Aes128 => &cipher::AES_128,
            CbcAlg::Aes256 => &cipher::AES_256,
            CbcAlg::TripleDes => return Ok(Box::new(TripleDesCbc::new(key)?)),
        };
        let enc = cipher::EncryptingKey::cbc(
            cipher::UnboundCipherKey::new(algorithm, key).map_err(|_| CryptoError::Library)?,
        )
        .map_err(|_| CryptoError::Library)?;
        let dec = cipher::DecryptingKey::cbc(
            cipher::UnboundCipherKey::new(algorithm, key).map_err(|_| CryptoError::Library)?,
        )
        .map_err(|_| CryptoError::Library)?;
        Ok(Box::new(AwsAesCbc { enc, dec }))
    }

    fn hmac(&self, alg: HmacAlg, key: &[u8]) -> Result<Box<dyn Mac>, CryptoError> {
        check_key_len(key.len(), alg.key_len())?;
        let (algorithm, out_len) = match alg {
            HmacAlg::Sha1_96 => (hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, 20),
            HmacAlg::Sha256_128 => (hmac::HMAC_SHA256, 32),
            HmacAlg::Sha384_192 => (hmac::HMAC_SHA384, 48),
            HmacAlg::Sha512_256 => (hmac::HMAC_SHA512, 64),
        };
        Ok(Box::new(AwsHmac { key: hmac::Key::new(algorithm, key), out_len }))
    }

    fn fill_random(&self, out: &mut [u8]) -> Result<(), CryptoError> {
        // Per-packet IVs come from a per-thread pool: one generator call per 4 KiB.
        crate::rng_pool::fill(out, |b| rand::fill(b).map_err(|_| CryptoError::Library))
    }
}

struct AwsAead(aead::LessSafeKey);

impl std::fmt::Debug for AwsAead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AwsAead").field(self.0.algorithm()).finish()
    }
}

impl Aead for AwsAead {
    fn tag_len(&self) -> usize {
        self.0.algorithm().tag_len()
    }

    fn seal_in_place(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &mut [u8],
    ) -> Result<(), CryptoError> {
        let t = self
            .0
            .seal_in_place_separate_tag(
                aead::Nonce::assume_unique_for_key(*nonce),
                aead::Aad::from(aad),
                in_out,
            )
            .map_err(|_| CryptoError::Library)?;
        let t = t.as_ref();
        if tag.len() != t.len() {
            return Err(CryptoError::Length);
        }
        tag.copy_from_slice(t);
        Ok(())
    }

    fn open_in_place(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<usize, CryptoError> {
        if in_out.len() < self.tag_len() {
            return Err(CryptoError::Length);
        }
        self.0
            .open_in_place(aead::Nonce::assume_unique_for_key(*nonce), aead::Aad::from(aad), in_out)
            .map(|p| p.len())
            .map_err(|_| CryptoError::Integrity)
    }

    fn open_to(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        input: &[u8],
        out: &mut [u8],
    ) -> Result<(), CryptoError> {
        let (ct, tag) = crate::provider::split_tag(input, self.tag_len(), out.len())?;
        self.0
            .open_separate_gather(
                aead::Nonce::assume_unique_for_key(*nonce),
                aead::Aad::from(aad),
                ct,
                tag,
                out,
            )
            .map_err(|_| CryptoError::Integrity)
    }
}

#[derive(Debug)]
struct AwsAesCbc {
    enc: cipher::EncryptingKey,
    dec: cipher::DecryptingKey,
}

fn iv16(iv: &[u8]) -> Result<FixedLength<16>, CryptoError> {
    FixedLength::<16>::try_from(iv).map_err(|_| CryptoError::Length)
}

impl BlockCipher for AwsAesCbc {
    fn block_len(&self) -> usize {
        16
    }

    fn encrypt_cbc(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError> {
        if data.len() % 16 != 0 {
            return Err(CryptoError::Length);
        }
        self.enc
            .less_safe_encrypt(data, cipher::EncryptionContext::Iv128(iv16(iv)?))
            .map(|_| ())
            .map_err(|_| CryptoError::Library)
    }

    fn decrypt_cbc(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError> {
        if data.len() % 16 != 0 {
            return Err(CryptoError::Length);
        }
        self.dec
            .decrypt(data, cipher::DecryptionContext::Iv128(iv16(iv)?))
            .map(|_| ())
            .map_err(|_| CryptoError::Library)
    }
}

struct AwsHmac {
    key: hmac::Key,
    out_len: usize,
}

impl std::fmt::Debug for AwsHmac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsHmac").field("out_len", &self.out_len).finish_non_exhaustive()
    }
}

impl Mac for AwsHmac {
    fn output_len(&self) -> usize {
        self.out_len
    }

    fn compute(&self, parts: &[&[u8]], out: &mut [u8]) -> Result<(), CryptoError> {
        if out.len() > self.out_len {
            return Err(CryptoError::Length);
        }
        let mut ctx = hmac::Context::with_key(&self.key);
        for p in parts {
            ctx.update(p);
        }
        let tag = ctx.sign();
        let n = out.len();
        out.copy_from_slice(&tag.as_ref()[..n]);
        Ok(())
    }
}
