//! 3DES-EDE-CBC (RFC 2451) from RustCrypto: a legacy suite kept only so that the seeds'
//! 3DES-vs-AES comparisons can be rerun. The key schedule is built once; each packet clones it.

use crate::provider::{BlockCipher, CryptoError};
use cbc::cipher::{
    BlockDecryptMut, BlockEncryptMut, InnerIvInit, KeyInit, block_padding::NoPadding,
};
use des::TdesEde3;

/// A 3DES key in CBC mode.
#[derive(Clone)]
pub(crate) struct TripleDesCbc(TdesEde3);

impl std::fmt::Debug for TripleDesCbc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TripleDesCbc")
    }
}

impl TripleDesCbc {
    pub(crate) fn new(key: &[u8]) -> Result<Self, CryptoError> {
        TdesEde3::new_from_slice(key)
            .map(TripleDesCbc)
            .map_err(|_| CryptoError::KeyLength { got: key.len(), want: 24 })
    }
}

impl BlockCipher for TripleDesCbc {
    fn block_len(&self) -> usize {
        8
    }

    fn encrypt_cbc(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError> {
        let iv: &[u8; 8] = iv.try_into().map_err(|_| CryptoError::Length)?;
        let len = data.len();
        if len % 8 != 0 {
            return Err(CryptoError::Length);
        }
        cbc::Encryptor::<TdesEde3>::inner_iv_init(self.0.clone(), iv.into())
            .encrypt_padded_mut::<NoPadding>(data, len)
            .map(|_| ())
            .map_err(|_| CryptoError::Length)
    }

    fn decrypt_cbc(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError> {
        let iv: &[u8; 8] = iv.try_into().map_err(|_| CryptoError::Length)?;
        if data.len() % 8 != 0 {
            return Err(CryptoError::Length);
        }
        cbc::Decryptor::<TdesEde3>::inner_iv_init(self.0.clone(), iv.into())
            .decrypt_padded_mut::<NoPadding>(data)
            .map(|_| ())
            .map_err(|_| CryptoError::Length)
    }
}
