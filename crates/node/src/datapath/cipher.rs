//! The data path's AEAD keys: AWS-LC's own `EVP_AEAD_CTX`, held inside an allocation of ours so
//! that the batch's warm pass can prefetch it.
//!
//! Why not `crypto::AwsLcProvider` (aws-lc-rs) here: aws-lc-rs keeps each key's expanded state
//! (AES round keys and the GHASH table, ten cache lines) behind a pointer it does not show. With
//! thousands of SAs to peers that send in no particular order, every packet's key is cold, and
//! that miss is met inside the cipher, one packet after another: `hipsec bench sas` measured
//! AES-GCM alone at 1.4× its one-key cost over 5,000 keys. Holding the context ourselves lets
//! [`Aead::warm`] issue the ten prefetches while earlier packets are sealed, which brings that to
//! about 1.05×. The cipher is the same library and the same code (AWS-LC's `EVP_AEAD`
//! interface, which aws-lc-rs calls too); everything but the AEADs is delegated to
//! [`crypto::default_provider`].
//!
//! Besides the OS calls (`sys`), this is the one place that needs `unsafe`: the FFI calls.
//! Each block says why it is sound.

use aws_lc_sys as sys;
use crypto::{Aead, AeadAlg, BlockCipher, CryptoError, Mac, Provider};

/// The provider the node keys its SAs with: AEADs as described above, the rest from
/// [`crypto::default_provider`].
pub fn provider() -> &'static dyn Provider {
    static PROVIDER: DataPathProvider = DataPathProvider;
    &PROVIDER
}

/// See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct DataPathProvider;

impl Provider for DataPathProvider {
    fn name(&self) -> &'static str {
        "aws-lc (EVP_AEAD, prefetched) + aws-lc-rs"
    }

    fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn Aead>, CryptoError> {
        crypto::provider::check_key_len(key.len(), alg.key_len())?;
        Ok(InlineAead::new(alg, key)?)
    }

    fn cbc(&self, alg: crypto::CbcAlg, key: &[u8]) -> Result<Box<dyn BlockCipher>, CryptoError> {
        crypto::default_provider().cbc(alg, key)
    }

    fn hmac(&self, alg: crypto::HmacAlg, key: &[u8]) -> Result<Box<dyn Mac>, CryptoError> {
        crypto::default_provider().hmac(alg, key)
    }

    fn fill_random(&self, out: &mut [u8]) -> Result<(), CryptoError> {
        crypto::default_provider().fill_random(out)
    }
}

/// One keyed AEAD. Aligned to a cache line, so its context spans exactly
/// `size_of::<EVP_AEAD_CTX>().div_ceil(64)` lines, the ones `warm` prefetches.
#[repr(C, align(64))]
struct InlineAead {
    ctx: sys::EVP_AEAD_CTX,
    alg: AeadAlg,
}

// SAFETY: the context is written only by `EVP_AEAD_CTX_init` (in `new`, before the value is
// shared) and `EVP_AEAD_CTX_cleanup` (in `drop`, with `&mut self`). Seal and open take a const
// context and AWS-LC documents them as safe to call concurrently on one context; its only
// pointer (`aead`) refers to a static method table.
#[allow(unsafe_code)]
unsafe impl Send for InlineAead {}
// SAFETY: as for `Send`: shared access only ever reads the context.
#[allow(unsafe_code)]
unsafe impl Sync for InlineAead {}

impl std::fmt::Debug for InlineAead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the context: it holds the key.
        f.debug_tuple("InlineAead").field(&self.alg).finish()
    }
}

impl InlineAead {
    /// Keys a context in its final place (AWS-LC aligns the state inside the context by its
    /// address, so it is never moved after `EVP_AEAD_CTX_init`).
    #[allow(unsafe_code)]
    fn new(alg: AeadAlg, key: &[u8]) -> Result<Box<Self>, CryptoError> {
        // SAFETY: the EVP_AEAD_* constructors return pointers to static method tables.
        let aead = unsafe {
            match alg {
                AeadAlg::Aes128Gcm => sys::EVP_aead_aes_128_gcm(),
                AeadAlg::Aes256Gcm => sys::EVP_aead_aes_256_gcm(),
                AeadAlg::ChaCha20Poly1305 => sys::EVP_aead_chacha20_poly1305(),
            }
        };
        // SAFETY: EVP_AEAD_CTX is a plain C struct for which all-zero is the documented
        // "zeroed" state (EVP_AEAD_CTX_zero), safe to clean up.
        let mut me = Box::new(InlineAead { ctx: unsafe { std::mem::zeroed() }, alg });
        // SAFETY: `me.ctx` is a live, exclusively borrowed context; `key` is valid for
        // `key.len()` bytes and AWS-LC copies what it needs (it keeps no pointer to it).
        let ok = unsafe {
            sys::EVP_AEAD_CTX_init(
                &mut me.ctx,
                aead,
                key.as_ptr(),
                key.len(),
                alg.tag_len(),
                std::ptr::null_mut(),
            )
        };
        if ok == 1 { Ok(me) } else { Err(CryptoError::Library) }
    }
}

impl Drop for InlineAead {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the context was initialised in `new` (or is all-zero if that failed, which
        // cleanup accepts); after cleanup, the whole struct is overwritten with zeros so that
        // no key schedule stays in freed memory (the "keys are zeroized").
        unsafe {
            sys::EVP_AEAD_CTX_cleanup(&mut self.ctx);
            sys::OPENSSL_cleanse(
                (&mut self.ctx as *mut sys::EVP_AEAD_CTX).cast(),
                std::mem::size_of::<sys::EVP_AEAD_CTX>(),
            );
        }
    }
}

impl Aead for InlineAead {
    fn tag_len(&self) -> usize {
        self.alg.tag_len()
    }

    fn warm(&self) {
        let base = (&self.ctx as *const sys::EVP_AEAD_CTX).cast::<u8>();
        for off in (0..std::mem::size_of::<sys::EVP_AEAD_CTX>()).step_by(64) {
            crate::sys::prefetch(base.wrapping_add(off));
        }
    }

    fn state_span(&self) -> (usize, usize) {
        let base = &self.ctx as *const sys::EVP_AEAD_CTX as usize;
        (base, std::mem::size_of::<sys::EVP_AEAD_CTX>())
    }

    #[allow(unsafe_code)]
    fn seal_in_place(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &mut [u8],
    ) -> Result<(), CryptoError> {
        if tag.len() != self.tag_len() {
            return Err(CryptoError::Length);
        }
        let mut tag_len = 0usize;
        // SAFETY: every pointer comes from a live slice with its own length; `out` equals `in`,
        // which EVP_AEAD_CTX_seal_scatter allows (in place); the tag buffer holds `tag.len()`
        // bytes, passed as its maximum.
        let ok = unsafe {
            sys::EVP_AEAD_CTX_seal_scatter(
                &self.ctx,
                in_out.as_mut_ptr(),
                tag.as_mut_ptr(),
                &mut tag_len,
                tag.len(),
                nonce.as_ptr(),
                nonce.len(),
                in_out.as_ptr(),
                in_out.len(),
                std::ptr::null(),
                0,
                aad.as_ptr(),
                aad.len(),
            )
        };
        if ok == 1 && tag_len == tag.len() { Ok(()) } else { Err(CryptoError::Library) }
    }

    fn open_in_place(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<usize, CryptoError> {
        let ct_len = in_out.len().checked_sub(self.tag_len()).ok_or(CryptoError::Length)?;
        let (ct, tag) = in_out.split_at_mut(ct_len);
        let at = ct.as_mut_ptr();
        self.open_gather(nonce, aad, at, at, ct_len, tag)?;
        Ok(ct_len)
    }

    fn open_to(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        input: &[u8],
        out: &mut [u8],
    ) -> Result<(), CryptoError> {
        let (ct, tag) = crypto::provider::split_tag(input, self.tag_len(), out.len())?;
        self.open_gather(nonce, aad, ct.as_ptr(), out.as_mut_ptr(), ct.len(), tag)
    }
}

impl InlineAead {
    /// Verifies `tag` over `len` bytes at `ct` and decrypts them into `out` (which is `ct`
    /// itself or `len` bytes that do not overlap it).
    #[allow(unsafe_code)]
    fn open_gather(
        &self,
        nonce: &[u8; 12],
        aad: &[u8],
        ct: *const u8,
        out: *mut u8,
        len: usize,
        tag: &[u8],
    ) -> Result<(), CryptoError> {
        // SAFETY: both callers derive `ct` and `out` from live slices of `len` bytes (one
        // slice for in-place opening, which EVP_AEAD_CTX_open_gather allows, or two disjoint
        // ones); `tag`, `nonce` and `aad` are live slices with their own lengths.
        let ok = unsafe {
            sys::EVP_AEAD_CTX_open_gather(
                &self.ctx,
                out,
                nonce.as_ptr(),
                nonce.len(),
                ct,
                len,
                tag.as_ptr(),
                tag.len(),
                aad.as_ptr(),
                aad.len(),
            )
        };
        if ok == 1 { Ok(()) } else { Err(CryptoError::Integrity) }
    }
}
