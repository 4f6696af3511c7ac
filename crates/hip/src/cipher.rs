//! HIP_CIPHER and the ENCRYPTED parameter (RFC 7401 §5.2.8, §5.2.18): the I2 carries the
//! Initiator's HOST_ID encrypted with the HIP encryption key of its direction.
//!
//! The plaintext is a parameter sequence. AES-CBC needs whole blocks: we pad as PKCS #7 does
//! (RFC 5652 §6.3, n bytes of value n, 1 ≤ n ≤ 16), which RFC 7401 leaves to "the encryption
//! algorithm"; the parameter TLVs inside say where they end either way. NULL_ENCRYPT carries the
//! plaintext as it is.

use crate::error::Error;
use crypto::{CbcAlg, Provider};
use wire::hip::CipherId;

/// Key length of a HIP cipher (0 for NULL), or None if we do not offer it.
pub fn key_len(c: CipherId) -> Option<usize> {
    match c {
        CipherId::NULL_ENCRYPT => Some(0),
        CipherId::AES_128_CBC => Some(16),
        CipherId::AES_256_CBC => Some(32),
        _ => None,
    }
}

fn cbc(c: CipherId) -> Option<CbcAlg> {
    match c {
        CipherId::AES_128_CBC => Some(CbcAlg::Aes128),
        CipherId::AES_256_CBC => Some(CbcAlg::Aes256),
        _ => None,
    }
}

/// IV length of a HIP cipher.
pub fn iv_len(c: CipherId) -> usize {
    if cbc(c).is_some() { 16 } else { 0 }
}

/// Encrypts `plain` (with `iv`, fresh random bytes of `iv_len`): IV || ciphertext.
pub fn encrypt(
    provider: &dyn Provider,
    c: CipherId,
    key: &[u8],
    iv: &[u8],
    plain: &[u8],
) -> Result<Vec<u8>, Error> {
    let Some(alg) = cbc(c) else {
        return if c == CipherId::NULL_ENCRYPT {
            Ok(plain.to_vec())
        } else {
            Err(Error::Config(format!("HIP_CIPHER {c} not offered")))
        };
    };
    let pad = 16 - plain.len() % 16;
    let mut out = iv.to_vec();
    out.extend_from_slice(plain);
    out.extend(std::iter::repeat_n(pad as u8, pad));
    let cipher = provider.cbc(alg, key)?;
    let (iv, body) = out.split_at_mut(16.min(iv.len()));
    cipher.encrypt_cbc(iv, body)?;
    Ok(out)
}

/// Decrypts IV || ciphertext; a wrong length or padding is the peer's error (ENCRYPTION_FAILED).
pub fn decrypt(
    provider: &dyn Provider,
    c: CipherId,
    key: &[u8],
    data: &[u8],
) -> Result<Vec<u8>, Error> {
    let Some(alg) = cbc(c) else {
        return if c == CipherId::NULL_ENCRYPT {
            Ok(data.to_vec())
        } else {
            Err(Error::Peer(format!("ENCRYPTED under HIP_CIPHER {c}, not one we offered")))
        };
    };
    let bad = || Error::Peer("ENCRYPTED: bad length or padding".into());
    if data.len() < 32 || data.len() % 16 != 0 {
        return Err(bad());
    }
    let (iv, body) = data.split_at(16);
    let mut body = body.to_vec();
    provider.cbc(alg, key)?.decrypt_cbc(iv, &mut body).map_err(|_| bad())?;
    let pad = usize::from(*body.last().ok_or_else(bad)?);
    if pad == 0 || pad > 16 || body[body.len() - pad..].iter().any(|&b| usize::from(b) != pad) {
        return Err(bad());
    }
    body.truncate(body.len() - pad);
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_length_and_bad_padding() {
        let p = crypto::default_provider();
        let key = [7u8; 16];
        for n in [0usize, 1, 15, 16, 17, 100] {
            let plain: Vec<u8> = (0..n as u8).collect();
            let ct = encrypt(p, CipherId::AES_128_CBC, &key, &[3u8; 16], &plain).unwrap();
            assert_eq!(ct.len() % 16, 0);
            if n > 0 {
                assert_ne!(&ct[16..16 + n.min(16)], &plain[..n.min(16)]);
            }
            assert_eq!(decrypt(p, CipherId::AES_128_CBC, &key, &ct).unwrap(), plain);
            // A wrong key fails the padding check, or (rarely) yields other bytes.
            let wrong = decrypt(p, CipherId::AES_128_CBC, &[8u8; 16], &ct);
            assert!(
                wrong.as_ref().is_err_and(|e| matches!(e, Error::Peer(_)))
                    || wrong != Ok(plain.clone())
            );
        }
        assert!(decrypt(p, CipherId::AES_128_CBC, &key, &[0u8; 20]).is_err());
        assert_eq!(encrypt(p, CipherId::NULL_ENCRYPT, &[], &[], b"abc").unwrap(), b"abc");
    }
}
