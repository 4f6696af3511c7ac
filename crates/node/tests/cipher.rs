//! The data path's AEADs (`node::datapath::cipher`, AWS-LC's `EVP_AEAD` held in our own
//! allocation) checked two ways: published known answers, and a property test against
//! `crypto::default_provider()` (aws-lc-rs), an independent binding of the cipher that the rest
//! of the stack and its own vector tests use.
//!
//! Sources: the GCM specification (McGrew & Viega, revised 2005), Appendix B, Test Cases 4 and
//! 16; RFC 8439 §2.8.2 (ChaCha20-Poly1305).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step should panic with its error"
)]
use crypto::{AeadAlg, CryptoError, Provider};
use proptest::prelude::*;

fn h(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    hex::decode(s).expect("test vector hex")
}

fn ours() -> &'static dyn Provider {
    node::datapath::cipher::provider()
}

/// Seals `pt`, compares ciphertext || tag with `expected`, opens it in place and out of place,
/// and checks that a flipped bit of ciphertext, tag, AAD or nonce is refused.
fn known_answer(alg: AeadAlg, key: &str, nonce: &str, aad: &str, pt: &[u8], expected: &str) {
    let (key, aad, expected) = (h(key), h(aad), h(expected));
    let nonce: [u8; 12] = h(nonce).try_into().expect("12-byte nonce");
    let aead = ours().aead(alg, &key).expect("key");
    aead.warm();
    let mut buf = pt.to_vec();
    let mut tag = vec![0u8; aead.tag_len()];
    aead.seal_in_place(&nonce, &aad, &mut buf, &mut tag).expect("seal");
    buf.extend_from_slice(&tag);
    assert_eq!(buf, expected, "{alg:?} seal");

    let mut opened = expected.clone();
    let n = aead.open_in_place(&nonce, &aad, &mut opened).expect("open");
    assert_eq!(&opened[..n], pt);
    let mut out = vec![0u8; pt.len()];
    aead.open_to(&nonce, &aad, &expected, &mut out).expect("open_to");
    assert_eq!(out, pt);

    for at in [0, expected.len() - 1] {
        let mut bad = expected.clone();
        bad[at] ^= 0x01;
        assert_eq!(aead.open_in_place(&nonce, &aad, &mut bad), Err(CryptoError::Integrity));
        assert_eq!(aead.open_to(&nonce, &aad, &bad, &mut out), Err(CryptoError::Integrity));
    }
    if !aad.is_empty() {
        let mut bad_aad = aad.clone();
        bad_aad[0] ^= 0x01;
        let mut ct = expected.clone();
        assert_eq!(aead.open_in_place(&nonce, &bad_aad, &mut ct), Err(CryptoError::Integrity));
    }
    let mut bad_nonce = nonce;
    bad_nonce[11] ^= 0x01;
    let mut ct = expected.clone();
    assert_eq!(aead.open_in_place(&bad_nonce, &aad, &mut ct), Err(CryptoError::Integrity));
    let mut short = vec![0u8; aead.tag_len() - 1];
    assert_eq!(aead.open_in_place(&nonce, &aad, &mut short), Err(CryptoError::Length));
    let mut wrong_len = vec![0u8; pt.len() + 1];
    assert_eq!(aead.open_to(&nonce, &aad, &expected, &mut wrong_len), Err(CryptoError::Length));
}

const GCM_PT: &str = "d9313225f88406e5a55909c5aff5269a 86a7a9531534f7da2e4c303d8a318a72
                      1c3c0c95956809532fcf0e2449a6b525 b16aedf5aa0de657ba637b39";

#[test]
fn aes128_gcm_spec_test_case_4() {
    known_answer(
        AeadAlg::Aes128Gcm,
        "feffe9928665731c6d6a8f9467308308",
        "cafebabefacedbaddecaf888",
        "feedfacedeadbeeffeedfacedeadbeef abaddad2",
        &h(GCM_PT),
        "42831ec2217774244b7221b784d0d49c e3aa212f2c02a4e035c17e2329aca12e
         21d514b25466931c7d8f6a5aac84aa05 1ba30b396a0aac973d58e091
         5bc94fbc3221a5db94fae95ae7121a47",
    );
}

#[test]
fn aes256_gcm_spec_test_case_16() {
    known_answer(
        AeadAlg::Aes256Gcm,
        "feffe9928665731c6d6a8f9467308308 feffe9928665731c6d6a8f9467308308",
        "cafebabefacedbaddecaf888",
        "feedfacedeadbeeffeedfacedeadbeef abaddad2",
        &h(GCM_PT),
        "522dc1f099567d07f47f37a32a84427d 643a8cdcbfe5c0c97598a2bd2555d1aa
         8cb08e48590dbb3da7b08b1056828838 c5f61e6393ba7a0abcc9f662
         76fc6ece0f4e1768cddf8853bb2d551b",
    );
}

#[test]
fn chacha20_poly1305_rfc8439_2_8_2() {
    known_answer(
        AeadAlg::ChaCha20Poly1305,
        "808182838485868788898a8b8c8d8e8f 909192939495969798999a9b9c9d9e9f",
        "07000000 4041424344454647",
        "50515253c0c1c2c3c4c5c6c7",
        b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for \
          the future, sunscreen would be it.",
        "d31a8d34648e60db7b86afbc53ef7ec2 a4aded51296e08fea9e2b5a736ee62d6
         3dbea45e8ca9671282fafb69da92728b 1a71de0a9e060b2905d6a5b67ecd3b36
         92ddbd7f2d778b8c9803aee328091b58 fab324e4fad675945585808b4831d7bc
         3ff4def08e4b7a9de576d26586cec64b 6116
         1ae10b594f09e26a7e902ecbd0600691",
    );
}

/// Wrong key lengths and tag buffers are refused, naming what was wanted.
#[test]
fn refuses_bad_lengths() {
    for alg in [AeadAlg::Aes128Gcm, AeadAlg::Aes256Gcm, AeadAlg::ChaCha20Poly1305] {
        let keymat = vec![0x42; alg.key_len() + 4];
        assert_eq!(
            ours().aead(alg, &keymat).map(|_| ()),
            Err(CryptoError::KeyLength { got: alg.key_len() + 4, want: alg.key_len() })
        );
        let aead = ours().aead(alg, &keymat[..alg.key_len()]).expect("key");
        let mut data = [0u8; 4];
        let mut tag = [0u8; 12];
        assert_eq!(
            aead.seal_in_place(&[0; 12], &[], &mut data, &mut tag),
            Err(CryptoError::Length)
        );
    }
}

/// The key never shows in `Debug` (logs and status print SAs through it).
#[test]
fn debug_hides_the_key() {
    let aead = ours().aead(AeadAlg::Aes128Gcm, &[0xab; 16]).expect("key");
    let s = format!("{aead:?}");
    assert!(!s.contains("ab, ab") && !s.contains("171"), "{s}");
    assert!(s.contains("Aes128Gcm"), "{s}");
}

fn alg() -> impl Strategy<Value = AeadAlg> {
    prop_oneof![Just(AeadAlg::Aes128Gcm), Just(AeadAlg::Aes256Gcm), Just(AeadAlg::ChaCha20Poly1305)]
}

proptest! {
    /// Any key, nonce, AAD and plaintext: ours and aws-lc-rs produce the same ciphertext and
    /// tag, and each opens what the other sealed.
    #[test]
    fn agrees_with_aws_lc_rs(
        alg in alg(),
        key in proptest::collection::vec(any::<u8>(), 32),
        nonce in any::<[u8; 12]>(),
        aad in proptest::collection::vec(any::<u8>(), 0..24),
        pt in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        let key = &key[..alg.key_len()];
        let (a, b) = (ours().aead(alg, key).unwrap(), crypto::default_provider().aead(alg, key).unwrap());
        let (mut ca, mut cb) = (pt.clone(), pt.clone());
        let (mut ta, mut tb) = (vec![0u8; a.tag_len()], vec![0u8; b.tag_len()]);
        a.seal_in_place(&nonce, &aad, &mut ca, &mut ta).unwrap();
        b.seal_in_place(&nonce, &aad, &mut cb, &mut tb).unwrap();
        prop_assert_eq!(&ca, &cb);
        prop_assert_eq!(&ta, &tb);
        ca.extend_from_slice(&ta);
        let mut other = ca.clone();
        let n = b.open_in_place(&nonce, &aad, &mut other).unwrap();
        prop_assert_eq!(&other[..n], &pt[..]);
        let n = a.open_in_place(&nonce, &aad, &mut ca).unwrap();
        prop_assert_eq!(&ca[..n], &pt[..]);
    }
}

/// Every data-path AEAD names its expanded key as one cache-aligned block of ten lines
/// (`Aead::state_span`), the count the engine's batch prefetches unrolled
/// (`ipsec::engine_batch::KEY_LINES`); a different AWS-LC context size fails here first.
#[test]
fn each_key_names_its_state_as_ten_aligned_lines() {
    for alg in [AeadAlg::Aes128Gcm, AeadAlg::Aes256Gcm, AeadAlg::ChaCha20Poly1305] {
        let a = ours().aead(alg, &vec![7u8; alg.key_len()]).expect("key");
        let b = ours().aead(alg, &vec![7u8; alg.key_len()]).expect("key");
        let ((at, len), (at_b, _)) = (a.state_span(), b.state_span());
        assert_eq!(at % 64, 0, "{alg:?}: state not line-aligned");
        assert_eq!(len.div_ceil(64), 10, "{alg:?}: {len} bytes");
        // Each key's own block, not a shared one.
        assert!(at.abs_diff(at_b) >= len, "{alg:?}: two keys' states overlap");
    }
}
