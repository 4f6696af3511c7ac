//! The Encrypted and Authenticated payload, SK (RFC 7296 §3.14): sealing a chain of inner
//! payloads into a whole message and opening one. AEADs follow RFC 5282 §3 (AES-GCM: 8-byte IV,
//! nonce = 4-byte salt | IV, AAD = IKE header through the SK generic header) and RFC 7634 §3
//! (ChaCha20-Poly1305, the same layout); AES-CBC with HMAC-SHA2 follows §3.14 (random IV, ICV
//! over the whole message up to the ICV, checked before decrypting).

use crate::error::{ConfigError, Error, PeerMisbehaved};
use crate::keys::IkeSaKeys;
use crate::suite::IkeSuite;
use crypto::{Aead, BlockCipher, EncrAlg, IntegAlg, Mac, Provider};
use wire::ikev2::{
    GENERIC_HEADER_LEN, HEADER_LEN, Header, Packet, Payload, PayloadType, RawPayloads, parse_chain,
};

/// Which end of the IKE SA we are (decides which of SK_ei/SK_er we send with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The original initiator of the IKE SA.
    Initiator,
    /// The original responder.
    Responder,
}

enum Cipher {
    /// Combined mode: the key object, the salt, and the next IV (a counter: unique per key,
    /// which is all RFC 5282 §3.1 asks).
    Aead { aead: Box<dyn Aead>, salt: [u8; 4], next_iv: u64 },
    /// AES-CBC with a separate HMAC.
    Cbc { cipher: Box<dyn BlockCipher>, mac: Box<dyn Mac>, icv_len: usize },
}

impl Cipher {
    fn new(
        provider: &dyn Provider,
        suite: &IkeSuite,
        sk_e: &[u8],
        sk_a: &[u8],
    ) -> Result<Cipher, Error> {
        match (suite.encr, suite.integ) {
            (EncrAlg::Aead(alg), IntegAlg::None) => {
                let key_len = alg.key_len();
                let (key, salt) = (sk_e.get(..key_len), sk_e.get(key_len..));
                let salt = salt.and_then(|s| <[u8; 4]>::try_from(s).ok());
                let (Some(key), Some(salt)) = (key, salt) else {
                    let want = key_len + 4;
                    return Err(
                        ConfigError::KeyLength { what: "SK_e", got: sk_e.len(), want }.into()
                    );
                };
                Ok(Cipher::Aead { aead: provider.aead(alg, key)?, salt, next_iv: 0 })
            }
            (EncrAlg::Cbc(alg), IntegAlg::Hmac(h)) => Ok(Cipher::Cbc {
                cipher: provider.cbc(alg, sk_e)?,
                mac: provider.hmac(h, sk_a)?,
                icv_len: h.icv_len(),
            }),
            _ => {
                Err(ConfigError::UnsupportedAlgorithm("SK payload: AEAD, or AES-CBC with HMAC")
                    .into())
            }
        }
    }

    fn iv_len(&self) -> usize {
        match self {
            Cipher::Aead { .. } => 8,
            Cipher::Cbc { cipher, .. } => cipher.block_len(),
        }
    }

    fn icv_len(&self) -> usize {
        match self {
            Cipher::Aead { aead, .. } => aead.tag_len(),
            Cipher::Cbc { icv_len, .. } => *icv_len,
        }
    }

    fn block_len(&self) -> usize {
        match self {
            Cipher::Aead { .. } => 1,
            Cipher::Cbc { cipher, .. } => cipher.block_len(),
        }
    }
}

/// The SK payload keys of one IKE SA, both directions.
pub struct SkKeys {
    outbound: Cipher,
    inbound: Cipher,
}

impl std::fmt::Debug for SkKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SkKeys { .. }")
    }
}

fn nonce(salt: &[u8; 4], iv: &[u8]) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..4].copy_from_slice(salt);
    for (d, s) in n[4..].iter_mut().zip(iv) {
        *d = *s;
    }
    n
}

impl SkKeys {
    /// Keys the SK payload from the IKE SA's keys: we send with SK_ei/SK_ai as initiator.
    pub fn new(
        provider: &dyn Provider,
        suite: &IkeSuite,
        keys: &IkeSaKeys,
        role: Role,
    ) -> Result<SkKeys, Error> {
        let i = Cipher::new(provider, suite, &keys.sk_ei, &keys.sk_ai)?;
        let r = Cipher::new(provider, suite, &keys.sk_er, &keys.sk_ar)?;
        Ok(match role {
            Role::Initiator => SkKeys { outbound: i, inbound: r },
            Role::Responder => SkKeys { outbound: r, inbound: i },
        })
    }

    /// Builds a whole message: `header`, then one SK payload holding `inner` (§3.14). The
    /// header's next payload and length are filled in.
    pub fn seal(
        &mut self,
        provider: &dyn Provider,
        header: &Header,
        inner: &[Payload],
    ) -> Result<Vec<u8>, Error> {
        let first = inner.first().map_or(PayloadType::NONE, Payload::payload_type);
        let chain_len: usize = inner.iter().map(Payload::buffer_len).sum();
        let mut chain = vec![0u8; chain_len];
        wire::ikev2::emit_chain(inner, &mut chain).map_err(Error::Emit)?;
        self.seal_chain(provider, header, first, &chain)
    }

    /// [`SkKeys::seal`] over an inner chain already encoded, whose first payload is of type
    /// `first`: for payloads [`Payload`] does not model (a test of a peer's answer to an
    /// unknown critical payload, §2.5).
    pub fn seal_chain(
        &mut self,
        provider: &dyn Provider,
        header: &Header,
        first: PayloadType,
        chain: &[u8],
    ) -> Result<Vec<u8>, Error> {
        let chain_len = chain.len();
        let (iv_len, icv_len, block) =
            (self.outbound.iv_len(), self.outbound.icv_len(), self.outbound.block_len());
        let pad_len = (block - (chain_len + 1) % block) % block;
        let pt_len = chain_len + pad_len + 1;
        let sk_len = GENERIC_HEADER_LEN + iv_len + pt_len + icv_len;
        let total = HEADER_LEN + sk_len;
        let emit = Error::Emit;
        let total32 = u32::try_from(total).map_err(|_| {
            emit(wire::ikev2::IkeError::BadLength { what: "header length", value: total })
        })?;
        let sk_len16 = u16::try_from(sk_len).map_err(|_| {
            emit(wire::ikev2::IkeError::BadLength { what: "payload length", value: sk_len })
        })?;

        let mut msg = vec![0u8; total];
        let (hdr, rest) = msg.split_at_mut(HEADER_LEN);
        header.emit(PayloadType::SK, total32, hdr).map_err(emit)?;
        let (gen_hdr, rest) = rest.split_at_mut(GENERIC_HEADER_LEN);
        gen_hdr[0] = first.0;
        gen_hdr[2..4].copy_from_slice(&sk_len16.to_be_bytes());
        let (iv, rest) = rest.split_at_mut(iv_len);
        let (pt, _icv) = rest.split_at_mut(pt_len);
        pt[..chain_len].copy_from_slice(chain);
        // Padding stays zero (§3.14: any content); the last byte is the pad length.
        pt[pt_len - 1] = pad_len as u8;

        match &mut self.outbound {
            Cipher::Aead { aead, salt, next_iv } => {
                iv.copy_from_slice(&next_iv.to_be_bytes());
                *next_iv = next_iv.wrapping_add(1);
                let n = nonce(salt, iv);
                let aad_len = HEADER_LEN + GENERIC_HEADER_LEN;
                let (aad, body) = msg.split_at_mut(aad_len);
                let (ct, tag) = body[iv_len..].split_at_mut(pt_len);
                aead.seal_in_place(&n, aad, ct, tag)?;
            }
            Cipher::Cbc { cipher, mac, .. } => {
                provider.fill_random(iv)?;
                let iv = iv.to_vec();
                let ct_start = HEADER_LEN + GENERIC_HEADER_LEN + iv_len;
                cipher.encrypt_cbc(&iv, &mut msg[ct_start..ct_start + pt_len])?;
                let (signed, icv) = msg.split_at_mut(total - icv_len);
                mac.compute(&[signed], icv)?;
            }
        }
        Ok(msg)
    }

    /// Opens a message whose last payload is SK: checks integrity, decrypts, strips padding and
    /// parses the inner chain. Payloads before SK are not authenticated and are not returned.
    pub fn open(&self, msg: &[u8]) -> Result<(Header, Vec<Payload>), Error> {
        let p = Packet::new_checked(msg).map_err(Error::InvalidMessage)?;
        let header = Header::parse(&p);
        let msg = p.as_bytes();
        let mut sk = None;
        for raw in RawPayloads::new(p.next_payload(), p.payload_bytes()) {
            let raw = raw.map_err(Error::InvalidMessage)?;
            if raw.payload_type == PayloadType::SK {
                sk = Some((HEADER_LEN + raw.offset, raw.next, raw.body.len()));
            }
        }
        let exchange = header.exchange_type.to_string();
        let (sk_at, first, body_len) = sk.ok_or(PeerMisbehaved::SkMissing { exchange })?;
        let c = &self.inbound;
        let (iv_len, icv_len, block) = (c.iv_len(), c.icv_len(), c.block_len());
        let bad_len = PeerMisbehaved::BadSkLength(body_len);
        let ct_len = body_len.checked_sub(iv_len + icv_len).filter(|&n| n > 0 && n % block == 0);
        let ct_len = ct_len.ok_or(bad_len.clone())?;
        let aad_end = sk_at + GENERIC_HEADER_LEN;
        let iv = msg.get(aad_end..aad_end + iv_len).ok_or(bad_len.clone())?;
        let ct_start = aad_end + iv_len;
        let mut pt = match c {
            Cipher::Aead { aead, salt, .. } => {
                let mut buf =
                    msg.get(ct_start..ct_start + ct_len + icv_len).unwrap_or_default().to_vec();
                let aad = msg.get(..aad_end).unwrap_or_default();
                let n = aead
                    .open_in_place(&nonce(salt, iv), aad, &mut buf)
                    .map_err(|_| PeerMisbehaved::IntegrityCheckFailed)?;
                buf.truncate(n);
                buf
            }
            Cipher::Cbc { cipher, mac, .. } => {
                let signed_len = msg.len().checked_sub(icv_len).ok_or(bad_len)?;
                let (signed, icv) = msg.split_at(signed_len);
                mac.verify(&[signed], icv).map_err(|_| PeerMisbehaved::IntegrityCheckFailed)?;
                let mut buf = msg.get(ct_start..ct_start + ct_len).unwrap_or_default().to_vec();
                cipher.decrypt_cbc(iv, &mut buf)?;
                buf
            }
        };
        let pad = usize::from(pt.last().copied().unwrap_or(0));
        let inner_len = pt.len().checked_sub(pad + 1).ok_or(PeerMisbehaved::BadPadLength(pad))?;
        pt.truncate(inner_len);
        let payloads = parse_chain(first, &pt).map_err(Error::InvalidMessage)?;
        Ok((header, payloads))
    }
}

#[cfg(test)]
#[path = "sk_tests.rs"]
mod tests;
