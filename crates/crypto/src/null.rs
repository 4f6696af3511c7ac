//! The null provider: every operation is the identity and every tag is zeros. It lets fuzzers reach
//! past the ICV check and lets benchmarks separate the stack's own cost from the cipher's.
//! Never for real traffic: `hipsec` marks it as such wherever it is selected.

use crate::alg::{AeadAlg, CbcAlg, HmacAlg};
use crate::provider::{Aead, BlockCipher, CryptoError, Mac, Provider, check_key_len};

/// Identity "crypto". Keys are still length-checked so that configuration errors show up.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullProvider;

#[derive(Debug)]
struct NullAead;
#[derive(Debug)]
struct NullCbc(usize);
#[derive(Debug)]
struct NullMac(usize);

impl Provider for NullProvider {
    fn name(&self) -> &'static str {
        "null (no protection)"
    }
    fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn Aead>, CryptoError> {
        check_key_len(key.len(), alg.key_len())?;
        Ok(Box::new(NullAead))
    }
    fn cbc(&self, alg: CbcAlg, key: &[u8]) -> Result<Box<dyn BlockCipher>, CryptoError> {
        check_key_len(key.len(), alg.key_len())?;
        Ok(Box::new(NullCbc(alg.block_len())))
    }
    fn hmac(&self, alg: HmacAlg, key: &[u8]) -> Result<Box<dyn Mac>, CryptoError> {
        check_key_len(key.len(), alg.key_len())?;
        Ok(Box::new(NullMac(alg.icv_len())))
    }
    fn fill_random(&self, out: &mut [u8]) -> Result<(), CryptoError> {
        out.fill(0);
        Ok(())
    }
}

impl Aead for NullAead {
    fn tag_len(&self) -> usize {
        16
    }
    fn seal_in_place(
        &self,
        _: &[u8; 12],
        _: &[u8],
        _: &mut [u8],
        tag: &mut [u8],
    ) -> Result<(), CryptoError> {
        tag.fill(0);
        Ok(())
    }
    fn open_in_place(
        &self,
        _: &[u8; 12],
        _: &[u8],
        in_out: &mut [u8],
    ) -> Result<usize, CryptoError> {
        let n = in_out.len().checked_sub(16).ok_or(CryptoError::Length)?;
        if in_out[n..].iter().all(|&b| b == 0) { Ok(n) } else { Err(CryptoError::Integrity) }
    }
}

impl BlockCipher for NullCbc {
    fn block_len(&self) -> usize {
        self.0
    }
    fn encrypt_cbc(&self, _: &[u8], data: &mut [u8]) -> Result<(), CryptoError> {
        if data.len() % self.0 == 0 { Ok(()) } else { Err(CryptoError::Length) }
    }
    fn decrypt_cbc(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError> {
        self.encrypt_cbc(iv, data)
    }
}

impl Mac for NullMac {
    fn output_len(&self) -> usize {
        self.0
    }
    fn compute(&self, _: &[&[u8]], out: &mut [u8]) -> Result<(), CryptoError> {
        out.fill(0);
        Ok(())
    }
}
