//! Ephemeral (EC)DH for IKEv2 key exchange: groups 19 and 20 (RFC 5903) and 31 (Curve25519,
//! RFC 8031), from aws-lc-rs `agreement`. Read RFC 5903 §7 (the KE payload carries x || y, no
//! 0x04 prefix) and §9 (the shared secret is x only), RFC 8031 §2 (all-zero output rejected).
//!
//! Group 14 (2048-bit MODP, RFC 3526) is deliberately absent: aws-lc-rs exposes no
//! finite-field DH, and no maintained Rust crate offers a constant-time FFDH for it; building one
//! from a big-integer library would be hand-rolling a primitive (and the general-purpose ones,
//! such as num-bigint, are not constant time). Peers that insist on group 14 get
//! INVALID_KE_PAYLOAD naming one of ours.

use crate::provider::CryptoError;
use aws_lc_rs::agreement;
use zeroize::Zeroizing;

/// An IKEv2 Diffie-Hellman group this crate implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DhGroup {
    /// 256-bit random ECP group (P-256), IKE number 19.
    Ecp256,
    /// 384-bit random ECP group (P-384), IKE number 20.
    Ecp384,
    /// Curve25519, IKE number 31.
    Curve25519,
}

impl DhGroup {
    /// Every group, in our order of preference.
    pub const ALL: [DhGroup; 3] = [DhGroup::Curve25519, DhGroup::Ecp256, DhGroup::Ecp384];

    /// The IKEv2 transform ID (IANA "Transform Type 4").
    pub fn ike_id(self) -> u16 {
        match self {
            DhGroup::Ecp256 => 19,
            DhGroup::Ecp384 => 20,
            DhGroup::Curve25519 => 31,
        }
    }

    /// The group with this IKEv2 transform ID, if implemented.
    pub fn from_ike_id(id: u16) -> Option<DhGroup> {
        DhGroup::ALL.into_iter().find(|g| g.ike_id() == id)
    }

    /// Length of the KE payload's public value.
    pub fn public_len(self) -> usize {
        match self {
            DhGroup::Ecp256 => 64,
            DhGroup::Ecp384 => 96,
            DhGroup::Curve25519 => 32,
        }
    }

    /// Length of the shared secret g^ir.
    pub fn shared_len(self) -> usize {
        match self {
            DhGroup::Ecp256 | DhGroup::Curve25519 => 32,
            DhGroup::Ecp384 => 48,
        }
    }

    fn algorithm(self) -> &'static agreement::Algorithm {
        match self {
            DhGroup::Ecp256 => &agreement::ECDH_P256,
            DhGroup::Ecp384 => &agreement::ECDH_P384,
            DhGroup::Curve25519 => &agreement::X25519,
        }
    }

    fn is_ecp(self) -> bool {
        !matches!(self, DhGroup::Curve25519)
    }
}

/// The shared secret g^ir; zeroized on drop.
pub struct SharedSecret(Zeroizing<Vec<u8>>);

impl SharedSecret {
    /// The secret's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for SharedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedSecret({} bytes)", self.0.len())
    }
}

/// One side's ephemeral key pair. `agree` consumes it: a key exchange is used once. The
/// private key lives inside AWS-LC, which clears it when freed.
pub struct KeyExchange {
    group: DhGroup,
    private: agreement::PrivateKey,
    public: Vec<u8>,
}

impl std::fmt::Debug for KeyExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyExchange").field("group", &self.group).finish_non_exhaustive()
    }
}

impl KeyExchange {
    /// A fresh ephemeral key pair.
    pub fn generate(group: DhGroup) -> Result<KeyExchange, CryptoError> {
        let private =
            agreement::PrivateKey::generate(group.algorithm()).map_err(|_| CryptoError::Library)?;
        Self::from_private(group, private)
    }

    /// A key pair from a known private value (big-endian scalar for ECP, RFC 7748 bytes for
    /// X25519): for known-answer tests only.
    pub fn from_private_bytes(group: DhGroup, private: &[u8]) -> Result<KeyExchange, CryptoError> {
        let private = agreement::PrivateKey::from_private_key(group.algorithm(), private)
            .map_err(|_| CryptoError::KeyLength { got: private.len(), want: group.shared_len() })?;
        Self::from_private(group, private)
    }

    fn from_private(group: DhGroup, private: agreement::PrivateKey) -> Result<Self, CryptoError> {
        let public = private.compute_public_key().map_err(|_| CryptoError::Library)?;
        let public = public.as_ref();
        let public = if group.is_ecp() { public.get(1..).unwrap_or_default() } else { public };
        if public.len() != group.public_len() {
            return Err(CryptoError::Library);
        }
        Ok(KeyExchange { group, private, public: public.to_vec() })
    }

    /// The group.
    pub fn group(&self) -> DhGroup {
        self.group
    }

    /// The public value as the KE payload carries it (x || y for ECP groups).
    pub fn public_key(&self) -> &[u8] {
        &self.public
    }

    /// Computes g^ir from the peer's KE payload data. Fails (`Integrity`) if the peer's value
    /// has the wrong length, is not on the curve, or gives an all-zero X25519 result.
    pub fn agree(self, peer_public: &[u8]) -> Result<SharedSecret, CryptoError> {
        self.agree_reused(peer_public)
    }

    /// As [`KeyExchange::agree`], keeping the key pair: for a HIP Responder, whose R1s are
    /// computed ahead and carry one Diffie-Hellman value per R1 generation (RFC 7401 §4.1.4,
    /// §6.1), so one private value meets many Initiators until the generation changes.
    pub fn agree_reused(&self, peer_public: &[u8]) -> Result<SharedSecret, CryptoError> {
        if peer_public.len() != self.group.public_len() {
            return Err(CryptoError::Length);
        }
        let mut encoded = Vec::with_capacity(peer_public.len() + 1);
        if self.group.is_ecp() {
            encoded.push(0x04);
        }
        encoded.extend_from_slice(peer_public);
        let peer = agreement::UnparsedPublicKey::new(self.group.algorithm(), &encoded);
        let secret = agreement::agree(&self.private, peer, CryptoError::Integrity, |k| {
            Ok(Zeroizing::new(k.to_vec()))
        })?;
        if secret.iter().all(|&b| b == 0) {
            return Err(CryptoError::Integrity);
        }
        Ok(SharedSecret(secret))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s.replace(' ', "")).unwrap()
    }

    fn known_answer(group: DhGroup, i: &str, gi: &str, r: &str, gr: &str, gir_x: &str) {
        let ki = KeyExchange::from_private_bytes(group, &h(i)).unwrap();
        let kr = KeyExchange::from_private_bytes(group, &h(r)).unwrap();
        assert_eq!(ki.public_key(), h(gi));
        assert_eq!(kr.public_key(), h(gr));
        assert_eq!(ki.agree(&h(gr)).unwrap().as_bytes(), h(gir_x));
        assert_eq!(kr.agree(&h(gi)).unwrap().as_bytes(), h(gir_x));
    }

    /// RFC 5903 §8.1 (256-bit random ECP group): i, g^i = x||y, r, g^r, and the x of g^ir
    /// (§9: the shared secret is x only).
    #[test]
    fn rfc5903_section_8_1_group_19() {
        known_answer(
            DhGroup::Ecp256,
            "C88F01F5 10D9AC3F 70A292DA A2316DE5 44E9AAB8 AFE84049 C62A9C57 862D1433",
            "DAD0B653 94221CF9 B051E1FE CA5787D0 98DFE637 FC90B9EF 945D0C37 72581180 \
             5271A046 1CDB8252 D61F1C45 6FA3E59A B1F45B33 ACCF5F58 389E0577 B8990BB3",
            "C6EF9C5D 78AE012A 011164AC B397CE20 88685D8F 06BF9BE0 B283AB46 476BEE53",
            "D12DFB52 89C8D4F8 1208B702 70398C34 2296970A 0BCCB74C 736FC755 4494BF63 \
             56FBF3CA 366CC23E 8157854C 13C58D6A AC23F046 ADA30F83 53E74F33 039872AB",
            "D6840F6B 42F6EDAF D13116E0 E1256520 2FEF8E9E CE7DCE03 812464D0 4B9442DE",
        );
    }

    /// RFC 5903 §8.2 (384-bit random ECP group).
    #[test]
    fn rfc5903_section_8_2_group_20() {
        known_answer(
            DhGroup::Ecp384,
            "099F3C70 34D4A2C6 99884D73 A375A67F 7624EF7C 6B3C0F16 0647B674 14DCE655 \
             E35B5380 41E649EE 3FAEF896 783AB194",
            "667842D7 D180AC2C DE6F74F3 7551F557 55C7645C 20EF73E3 1634FE72 B4C55EE6 \
             DE3AC808 ACB4BDB4 C88732AE E95F41AA 9482ED1F C0EEB9CA FC498462 5CCFC23F \
             65032149 E0E144AD A0241815 35A0F38E EB9FCFF3 C2C947DA E69B4C63 4573A81C",
            "41CB0779 B4BDB85D 47846725 FBEC3C94 30FAB46C C8DC5060 855CC9BD A0AA2942 \
             E0308312 916B8ED2 960E4BD5 5A7448FC",
            "E558DBEF 53EECDE3 D3FCCFC1 AEA08A89 A987475D 12FD950D 83CFA417 32BC509D \
             0D1AC43A 0336DEF9 6FDA41D0 774A3571 DCFBEC7A ACF31964 72169E83 8430367F \
             66EEBE3C 6E70C416 DD5F0C68 759DD1FF F83FA401 42209DFF 5EAAD96D B9E6386C",
            "11187331 C279962D 93D60424 3FD592CB 9D0A926F 422E4718 7521287E 7156C5C4 \
             D6031355 69B9E9D0 9CF5D4A2 70F59746",
        );
    }

    /// RFC 7748 §6.1 (X25519): Alice's and Bob's private keys, public keys and shared secret.
    #[test]
    fn rfc7748_section_6_1_group_31() {
        known_answer(
            DhGroup::Curve25519,
            "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
            "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
            "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
            "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
            "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
        );
    }

    #[test]
    fn fresh_pairs_agree_and_bad_peers_fail() {
        for g in DhGroup::ALL {
            assert_eq!(DhGroup::from_ike_id(g.ike_id()), Some(g));
            let a = KeyExchange::generate(g).unwrap();
            let b = KeyExchange::generate(g).unwrap();
            let (pa, pb) = (a.public_key().to_vec(), b.public_key().to_vec());
            assert_eq!(a.agree(&pb).unwrap().as_bytes(), b.agree(&pa).unwrap().as_bytes());
            let short = KeyExchange::generate(g).unwrap();
            assert_eq!(short.agree(&pb[1..]).unwrap_err(), CryptoError::Length);
        }
        // A point not on P-256, and X25519's all-zero (small-order) point.
        let k = KeyExchange::generate(DhGroup::Ecp256).unwrap();
        assert!(k.agree(&[1u8; 64]).is_err());
        let k = KeyExchange::generate(DhGroup::Curve25519).unwrap();
        assert!(k.agree(&[0u8; 32]).is_err());
        assert_eq!(DhGroup::from_ike_id(14), None);
    }
}
