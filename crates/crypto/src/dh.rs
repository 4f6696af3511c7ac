//! Ephemeral Diffie-Hellman for IKEv2 key exchange: groups 19, 20 and 21 (RFC 5903) and 31
//! (Curve25519, RFC 8031) from aws-lc-rs `agreement`; groups 14 and 15 (MODP, RFC 3526) from
//! the `modp` module. Read RFC 5903 §7 (the KE payload carries x || y, no 0x04 prefix) and §9
//! (the shared secret is x only), RFC 8031 §2 (all-zero output rejected), RFC 7296 §3.4 (a
//! MODP public value is as long as the prime).

use crate::modp::{Modp, ModpPrivate};
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
    /// 521-bit random ECP group (P-521), IKE number 21.
    Ecp521,
    /// Curve25519, IKE number 31.
    Curve25519,
    /// 2048-bit MODP group (RFC 3526 §3), IKE number 14.
    Modp2048,
    /// 3072-bit MODP group (RFC 3526 §4), IKE number 15.
    Modp3072,
}

impl DhGroup {
    /// Every group, in our order of preference: the elliptic curves first (faster and shorter
    /// for the same strength), then the MODP groups that older peers and Windows clients offer.
    pub const ALL: [DhGroup; 6] = [
        DhGroup::Curve25519,
        DhGroup::Ecp256,
        DhGroup::Ecp384,
        DhGroup::Ecp521,
        DhGroup::Modp3072,
        DhGroup::Modp2048,
    ];

    /// The IKEv2 transform ID (IANA "Transform Type 4").
    pub fn ike_id(self) -> u16 {
        match self {
            DhGroup::Ecp256 => 19,
            DhGroup::Ecp384 => 20,
            DhGroup::Ecp521 => 21,
            DhGroup::Curve25519 => 31,
            DhGroup::Modp2048 => 14,
            DhGroup::Modp3072 => 15,
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
            DhGroup::Ecp521 => 132,
            DhGroup::Curve25519 => 32,
            DhGroup::Modp2048 => 256,
            DhGroup::Modp3072 => 384,
        }
    }

    /// Length of the shared secret g^ir.
    pub fn shared_len(self) -> usize {
        match self {
            DhGroup::Ecp256 | DhGroup::Curve25519 => 32,
            DhGroup::Ecp384 => 48,
            DhGroup::Ecp521 => 66,
            DhGroup::Modp2048 => 256,
            DhGroup::Modp3072 => 384,
        }
    }

    /// The aws-lc-rs algorithm of an elliptic-curve group; `None` for MODP.
    fn algorithm(self) -> Option<&'static agreement::Algorithm> {
        match self {
            DhGroup::Ecp256 => Some(&agreement::ECDH_P256),
            DhGroup::Ecp384 => Some(&agreement::ECDH_P384),
            DhGroup::Ecp521 => Some(&agreement::ECDH_P521),
            DhGroup::Curve25519 => Some(&agreement::X25519),
            DhGroup::Modp2048 | DhGroup::Modp3072 => None,
        }
    }

    /// Checks a peer's KE payload data without a key pair: its length (RFC 7296 §3.4, RFC 5903
    /// §7) and, for MODP, that 2 ≤ y ≤ p − 2 (RFC 6989, NIST SP 800-56A §5.6.2.3.1). A curve
    /// point's membership is checked by [`KeyExchange::agree`], inside AWS-LC.
    pub fn check_public(self, peer_public: &[u8]) -> Result<(), CryptoError> {
        if peer_public.len() != self.public_len() {
            return Err(CryptoError::Length);
        }
        match self.modp() {
            Some(m) => crate::modp::check_public(m, peer_public),
            None => Ok(()),
        }
    }

    fn modp(self) -> Option<Modp> {
        match self {
            DhGroup::Modp2048 => Some(Modp::P2048),
            DhGroup::Modp3072 => Some(Modp::P3072),
            _ => None,
        }
    }

    fn is_ecp(self) -> bool {
        matches!(self, DhGroup::Ecp256 | DhGroup::Ecp384 | DhGroup::Ecp521)
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

/// One side's ephemeral key pair. `agree` consumes it: a key exchange is used once. An
/// elliptic-curve private key lives inside AWS-LC, which clears it when freed; a MODP exponent
/// is wiped on drop.
pub struct KeyExchange {
    group: DhGroup,
    private: Private,
    public: Vec<u8>,
}

enum Private {
    Ec(agreement::PrivateKey),
    // Boxed: a 3072-bit exponent is 400 octets, an EC key a pointer.
    Modp(Box<ModpPrivate>),
}

impl std::fmt::Debug for KeyExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyExchange").field("group", &self.group).finish_non_exhaustive()
    }
}

impl KeyExchange {
    /// A fresh ephemeral key pair.
    pub fn generate(group: DhGroup) -> Result<KeyExchange, CryptoError> {
        if let Some(modp) = group.modp() {
            let (private, public) = ModpPrivate::generate(modp)?;
            return Ok(KeyExchange { group, private: Private::Modp(Box::new(private)), public });
        }
        let alg = group.algorithm().ok_or(CryptoError::Unsupported)?;
        let private = agreement::PrivateKey::generate(alg).map_err(|_| CryptoError::Library)?;
        Self::from_private(group, private)
    }

    /// A key pair from a known private value (big-endian scalar for ECP, RFC 7748 bytes for
    /// X25519, a big-endian exponent for MODP): for known-answer tests only.
    pub fn from_private_bytes(group: DhGroup, private: &[u8]) -> Result<KeyExchange, CryptoError> {
        if let Some(modp) = group.modp() {
            let (private, public) = ModpPrivate::from_bytes(modp, private)?;
            return Ok(KeyExchange { group, private: Private::Modp(Box::new(private)), public });
        }
        let alg = group.algorithm().ok_or(CryptoError::Unsupported)?;
        let private = agreement::PrivateKey::from_private_key(alg, private)
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
        Ok(KeyExchange { group, private: Private::Ec(private), public: public.to_vec() })
    }

    /// The group.
    pub fn group(&self) -> DhGroup {
        self.group
    }

    /// The public value as the KE payload carries it (x || y for ECP groups).
    pub fn public_key(&self) -> &[u8] {
        &self.public
    }

    /// Computes g^ir from the peer's KE payload data. Fails with `Length` if the peer's value
    /// has the wrong length, and with `Integrity` if it is not on the curve, gives an all-zero
    /// X25519 result, or (MODP) lies outside [2, p − 2].
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
        let private = match &self.private {
            Private::Ec(k) => k,
            Private::Modp(k) => return k.agree(peer_public).map(SharedSecret),
        };
        let alg = self.group.algorithm().ok_or(CryptoError::Unsupported)?;
        let mut encoded = Vec::with_capacity(peer_public.len() + 1);
        if self.group.is_ecp() {
            encoded.push(0x04);
        }
        encoded.extend_from_slice(peer_public);
        let peer = agreement::UnparsedPublicKey::new(alg, &encoded);
        let secret = agreement::agree(private, peer, CryptoError::Integrity, |k| {
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

    /// ECP-521 (group 21): a pair drawn by pyca/cryptography 48.0.0 (`ec.generate_private_key(
    /// ec.SECP521R1())`), its public values as the KE payload carries them (x || y, 66 octets
    /// each, RFC 5903 §7) and `exchange(ec.ECDH(), ..)`, the x coordinate of g^ir (§9).
    #[test]
    fn group_21_known_answer_from_pyca_cryptography() {
        known_answer(
            DhGroup::Ecp521,
            "009928f3d2f9ef30c29d053e7ed1d3f51cbfe6451b8c6ffd1f28e5015c9dbd65 \
             995efbd5a26d07e9d0f02f7eec34843a5ab87144a844b1883906bfd5630fcfcb \
             161e",
            "01477ef49aa958fb4f6bb713c13f0737631edb68b2c2bdcfb71559690f640cf9 \
             b8086ebb354d6e42f73c5f13258634657348e655f6f1a3c0d21bd0ffc64d1806 \
             755600cf6a5d874afa6942f4eb21168f6d726a1e84a5e5f497451bc2747b05fa \
             fb6dee499782d0892f2a959f0caf12a7834838fb81e2fff42e39446d450b185d \
             67606885",
            "001df1306b67960c2d97b6655d35784a52cfe23a5aaff9f29210bdae99668f5b \
             344add4da9479065778c0830e927212c2079ef64399f84ea1e2c45ddbd11372f \
             8a41",
            "00fccae342f361b471045b5fb8baf9e7d46302bfbb5a1c3d8e4294e847eb9b87 \
             0d773cc58309756fe541266832f066339fcf87dc5f090ce82d810736a4ac3c99 \
             26c901734f3d87002d92ae86aa7b1eebb4d79a05aae47a104c9bd8542261ecf7 \
             7950ff9221981dd905daf43a39c4d75982b3509805515f8f159164e8923c264b \
             1a2f6cd9",
            "01eeda11f999f6a3938b28327ea8b432e70985cc78b09ce1ae9d1f084d5f62d5 \
             33444d60e03a3f2f01432db1882f4ee1aad0168fe7a929349b7a50f361afd1d3 \
             2daa",
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
        // A MODP value of 1 (RFC 6989's range check), through the group-generic entry points.
        let mut one = vec![0u8; 256];
        one[255] = 1;
        assert_eq!(DhGroup::Modp2048.check_public(&one), Err(CryptoError::Integrity));
        let k = KeyExchange::generate(DhGroup::Modp2048).unwrap();
        assert_eq!(k.agree(&one).unwrap_err(), CryptoError::Integrity);
        assert_eq!(DhGroup::from_ike_id(14), Some(DhGroup::Modp2048));
        assert_eq!(DhGroup::from_ike_id(2), None);
    }
}
