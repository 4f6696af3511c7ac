//! Algorithm suites for the IKE SA and for CHILD SAs: mapping between SA-payload transforms
//! (RFC 7296 §3.3.2) and `crypto` algorithms, the key-length table (§2.13/§2.14, RFC 5282 §7.1
//! for AES-GCM's 4-byte salt, RFC 7634 §3 for ChaCha20-Poly1305, RFC 4868 §2 for HMAC-SHA2), and
//! proposal selection (§2.7: the responder picks one transform of each type).

use crate::error::{ConfigError, PeerMisbehaved};
use crypto::{AeadAlg, CbcAlg, DhGroup, EncrAlg, EspSuite, HmacAlg, IntegAlg, PrfAlg};
use wire::ikev2::{Proposal, ProtocolId, Transform, TransformType, encr, esn, integ};

/// The transforms of an IKE SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IkeSuite {
    /// Encryption of the SK payload.
    pub encr: EncrAlg,
    /// Integrity ([`IntegAlg::None`] with an AEAD).
    pub integ: IntegAlg,
    /// The PRF.
    pub prf: PrfAlg,
    /// The key-exchange group.
    pub dh: DhGroup,
}

/// The transforms of an ESP CHILD SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChildSuite {
    /// ESP encryption and integrity, as the data path takes them.
    pub esp: EspSuite,
    /// Extended sequence numbers.
    pub esn: bool,
    /// A key-exchange group for PFS (CREATE_CHILD_SA only; never in IKE_AUTH, §1.2).
    pub pfs: Option<DhGroup>,
}

/// Encryption key length in bytes, including the 4-byte salt of AEADs (RFC 5282 §7.1,
/// RFC 7634 §3): the length taken from prf+ for SK_e and for CHILD SA keys.
pub fn encr_key_len(encr: EncrAlg) -> usize {
    encr.key_len()
}

/// Integrity key length in bytes (RFC 4868 §2.1.1: the output length of the hash).
pub fn integ_key_len(integ: IntegAlg) -> usize {
    integ.key_len()
}

fn encr_transform(e: EncrAlg) -> Result<Transform, ConfigError> {
    let t = TransformType::ENCR;
    Ok(match e {
        EncrAlg::Aead(AeadAlg::Aes128Gcm) => Transform::with_key_length(t, encr::AES_GCM_16, 128),
        EncrAlg::Aead(AeadAlg::Aes256Gcm) => Transform::with_key_length(t, encr::AES_GCM_16, 256),
        EncrAlg::Aead(AeadAlg::ChaCha20Poly1305) => Transform::new(t, encr::CHACHA20_POLY1305),
        EncrAlg::Cbc(CbcAlg::Aes128) => Transform::with_key_length(t, encr::AES_CBC, 128),
        EncrAlg::Cbc(CbcAlg::Aes256) => Transform::with_key_length(t, encr::AES_CBC, 256),
        _ => {
            return Err(ConfigError::UnsupportedAlgorithm(
                "encryption (IKEv2 here: AES-GCM-16, ChaCha20-Poly1305, AES-CBC)",
            ));
        }
    })
}

fn encr_from(t: &Transform) -> Option<EncrAlg> {
    if t.has_unknown_attributes() {
        return None;
    }
    Some(match (t.transform_id, t.key_length()) {
        (encr::AES_GCM_16, Some(128)) => EncrAlg::Aead(AeadAlg::Aes128Gcm),
        (encr::AES_GCM_16, Some(256)) => EncrAlg::Aead(AeadAlg::Aes256Gcm),
        (encr::CHACHA20_POLY1305, None) => EncrAlg::Aead(AeadAlg::ChaCha20Poly1305),
        (encr::AES_CBC, Some(128)) => EncrAlg::Cbc(CbcAlg::Aes128),
        (encr::AES_CBC, Some(256)) => EncrAlg::Cbc(CbcAlg::Aes256),
        _ => return None,
    })
}

fn integ_id(i: IntegAlg) -> Result<u16, ConfigError> {
    Ok(match i {
        IntegAlg::None => integ::NONE,
        IntegAlg::Hmac(HmacAlg::Sha256_128) => integ::HMAC_SHA2_256_128,
        IntegAlg::Hmac(HmacAlg::Sha384_192) => integ::HMAC_SHA2_384_192,
        IntegAlg::Hmac(HmacAlg::Sha512_256) => integ::HMAC_SHA2_512_256,
        _ => return Err(ConfigError::UnsupportedAlgorithm("integrity (IKEv2 here: HMAC-SHA2)")),
    })
}

fn integ_from(t: &Transform) -> Option<IntegAlg> {
    if !t.attributes.is_empty() {
        return None;
    }
    Some(match t.transform_id {
        integ::HMAC_SHA2_256_128 => IntegAlg::Hmac(HmacAlg::Sha256_128),
        integ::HMAC_SHA2_384_192 => IntegAlg::Hmac(HmacAlg::Sha384_192),
        integ::HMAC_SHA2_512_256 => IntegAlg::Hmac(HmacAlg::Sha512_256),
        _ => return None,
    })
}

fn check_pair(encr: EncrAlg, integ: IntegAlg) -> Result<(), ConfigError> {
    match (encr, integ) {
        (EncrAlg::Aead(_), IntegAlg::None) | (EncrAlg::Cbc(_), IntegAlg::Hmac(_)) => Ok(()),
        _ => Err(ConfigError::UnsupportedAlgorithm("an AEAD alone, or AES-CBC with an HMAC")),
    }
}

impl IkeSuite {
    /// Checks that every algorithm is one IKEv2 here implements.
    pub fn validate(&self) -> Result<(), ConfigError> {
        encr_transform(self.encr)?;
        integ_id(self.integ)?;
        check_pair(self.encr, self.integ)
    }

    /// The proposal offering exactly this suite (SPI empty for IKE_SA_INIT, 8 bytes to rekey).
    pub fn to_proposal(&self, num: u8, spi: Vec<u8>) -> Result<Proposal, ConfigError> {
        self.validate()?;
        let mut transforms = vec![encr_transform(self.encr)?];
        transforms.push(Transform::new(TransformType::PRF, self.prf.ike_id()));
        if self.integ != IntegAlg::None {
            transforms.push(Transform::new(TransformType::INTEG, integ_id(self.integ)?));
        }
        transforms.push(Transform::new(TransformType::DH, self.dh.ike_id()));
        Ok(Proposal { num, protocol_id: ProtocolId::IKE, spi, transforms })
    }

    /// Reads a proposal with exactly one transform of each type (the responder's answer).
    pub fn from_chosen(p: &Proposal) -> Result<IkeSuite, PeerMisbehaved> {
        let one = |ty: TransformType| {
            let mut it = p.transforms.iter().filter(|t| t.transform_type == ty);
            let first = it.next();
            if it.next().is_some() { None } else { first }
        };
        let bad = PeerMisbehaved::ProposalNotOffered;
        let encr = one(TransformType::ENCR).and_then(encr_from).ok_or(bad("encr"))?;
        let prf = one(TransformType::PRF).and_then(|t| PrfAlg::from_ike_id(t.transform_id));
        let prf = prf.ok_or(bad("prf"))?;
        let dh = one(TransformType::DH).and_then(|t| DhGroup::from_ike_id(t.transform_id));
        let dh = dh.ok_or(bad("dh"))?;
        let integ = match one(TransformType::INTEG) {
            None if matches!(encr, EncrAlg::Aead(_)) => IntegAlg::None,
            Some(t) if t.transform_id == integ::NONE && matches!(encr, EncrAlg::Aead(_)) => {
                IntegAlg::None
            }
            Some(t) => integ_from(t).ok_or(bad("integ"))?,
            None => return Err(bad("integ")),
        };
        check_pair(encr, integ).map_err(|_| bad("encr/integ pair"))?;
        if p.protocol_id != ProtocolId::IKE {
            return Err(bad("protocol"));
        }
        Ok(IkeSuite { encr, integ, prf, dh })
    }

    /// Responder side (§2.7): the first of the peer's proposals from which one of our suites
    /// can be made, our suites tried in our order. Returns the peer's proposal number and suite.
    pub fn select(offered: &[Proposal], ours: &[IkeSuite]) -> Option<(u8, IkeSuite)> {
        offered.iter().filter(|p| p.protocol_id == ProtocolId::IKE).find_map(|p| {
            ours.iter()
                .find(|s| offers(p, s.encr, s.integ, Some(s.prf), Some(s.dh)))
                .map(|s| (p.num, *s))
        })
    }
}

/// Whether proposal `p` contains each of these transforms.
fn offers(p: &Proposal, e: EncrAlg, i: IntegAlg, prf: Option<PrfAlg>, dh: Option<DhGroup>) -> bool {
    let has = |ty: TransformType, pred: &dyn Fn(&Transform) -> bool| {
        p.transforms.iter().any(|t| t.transform_type == ty && pred(t))
    };
    let integ_ok = match i {
        IntegAlg::None => !p
            .transforms
            .iter()
            .any(|t| t.transform_type == TransformType::INTEG && t.transform_id != integ::NONE),
        _ => has(TransformType::INTEG, &|t| integ_from(t) == Some(i)),
    };
    has(TransformType::ENCR, &|t| encr_from(t) == Some(e))
        && integ_ok
        && prf.is_none_or(|prf| has(TransformType::PRF, &|t| t.transform_id == prf.ike_id()))
        && match dh {
            Some(g) => has(TransformType::DH, &|t| t.transform_id == g.ike_id()),
            None => p
                .transforms
                .iter()
                .all(|t| t.transform_type != TransformType::DH || t.transform_id == 0),
        }
}

impl ChildSuite {
    /// The ESP proposal offering this suite with our inbound SPI.
    pub fn to_proposal(&self, num: u8, spi: u32) -> Result<Proposal, ConfigError> {
        check_pair(self.esp.encr, self.esp.integ)?;
        let mut transforms = vec![encr_transform(self.esp.encr)?];
        if self.esp.integ != IntegAlg::None {
            transforms.push(Transform::new(TransformType::INTEG, integ_id(self.esp.integ)?));
        }
        if let Some(g) = self.pfs {
            transforms.push(Transform::new(TransformType::DH, g.ike_id()));
        }
        let esn_id = if self.esn { esn::ESN } else { esn::NO_ESN };
        transforms.push(Transform::new(TransformType::ESN, esn_id));
        Ok(Proposal {
            num,
            protocol_id: ProtocolId::ESP,
            spi: spi.to_be_bytes().to_vec(),
            transforms,
        })
    }

    /// Reads the responder's chosen ESP proposal: one transform per type; returns its SPI.
    pub fn from_chosen(p: &Proposal) -> Result<(ChildSuite, u32), PeerMisbehaved> {
        let bad = PeerMisbehaved::ProposalNotOffered;
        let spi = <[u8; 4]>::try_from(p.spi.as_slice()).map_err(|_| bad("esp spi"))?;
        if p.protocol_id != ProtocolId::ESP {
            return Err(bad("protocol"));
        }
        let one = |ty: TransformType| {
            let mut it = p.transforms.iter().filter(|t| t.transform_type == ty);
            let first = it.next();
            if it.next().is_some() { Err(bad("two transforms of one type")) } else { Ok(first) }
        };
        let encr = one(TransformType::ENCR)?.and_then(encr_from).ok_or(bad("encr"))?;
        let integ = match one(TransformType::INTEG)? {
            None => IntegAlg::None,
            Some(t) if t.transform_id == integ::NONE => IntegAlg::None,
            Some(t) => integ_from(t).ok_or(bad("integ"))?,
        };
        let esp = EspSuite::new(encr, integ).map_err(|_| bad("encr/integ pair"))?;
        let esn = match one(TransformType::ESN)?.map(|t| t.transform_id) {
            Some(esn::ESN) => true,
            Some(esn::NO_ESN) | None => false,
            Some(_) => return Err(bad("esn")),
        };
        let pfs = match one(TransformType::DH)?.map(|t| t.transform_id) {
            None | Some(0) => None,
            Some(id) => Some(DhGroup::from_ike_id(id).ok_or(bad("dh"))?),
        };
        Ok((ChildSuite { esp, esn, pfs }, u32::from_be_bytes(spi)))
    }

    /// [`ChildSuite::select`], preferring our suites whose PFS group is the one of the peer's
    /// KE payload (`ke_group`), so that a KE of any group we accept is taken as it is.
    pub fn select_for_ke(
        offered: &[Proposal],
        ours: &[ChildSuite],
        ke_group: Option<u16>,
    ) -> Option<(u8, ChildSuite, u32)> {
        if let Some(id) = ke_group {
            let same: Vec<ChildSuite> =
                ours.iter().filter(|s| s.pfs.is_some_and(|g| g.ike_id() == id)).copied().collect();
            if let Some(hit) = Self::select(offered, &same) {
                return Some(hit);
            }
        }
        Self::select(offered, ours)
    }

    /// Responder side: the first ESP proposal of the peer that offers one of our suites; returns
    /// its number, the suite, and the peer's SPI.
    pub fn select(offered: &[Proposal], ours: &[ChildSuite]) -> Option<(u8, ChildSuite, u32)> {
        offered.iter().filter(|p| p.protocol_id == ProtocolId::ESP).find_map(|p| {
            let spi = u32::from_be_bytes(<[u8; 4]>::try_from(p.spi.as_slice()).ok()?);
            let esn_ok = |s: &ChildSuite| {
                let want = if s.esn { esn::ESN } else { esn::NO_ESN };
                let esns: Vec<u16> = p
                    .transforms
                    .iter()
                    .filter(|t| t.transform_type == TransformType::ESN)
                    .map(|t| t.transform_id)
                    .collect();
                esns.contains(&want) || (esns.is_empty() && !s.esn)
            };
            ours.iter()
                .find(|s| offers(p, s.esp.encr, s.esp.integ, None, s.pfs) && esn_ok(s))
                .map(|s| (p.num, *s, spi))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::ikev2::Attribute;

    const GCM128: EncrAlg = EncrAlg::Aead(AeadAlg::Aes128Gcm);
    const CBC256: EncrAlg = EncrAlg::Cbc(CbcAlg::Aes256);
    const SHA256: IntegAlg = IntegAlg::Hmac(HmacAlg::Sha256_128);

    /// The key-length table: RFC 5282 §7.1 (GCM: key + 4-byte salt), RFC 7634 §3 (ChaCha20:
    /// 32 + 4), RFC 3602 (CBC), RFC 4868 §2.1.1 (HMAC key = hash output).
    #[test]
    fn key_length_table() {
        let e = |a| encr_key_len(a);
        assert_eq!(e(GCM128), 20);
        assert_eq!(e(EncrAlg::Aead(AeadAlg::Aes256Gcm)), 36);
        assert_eq!(e(EncrAlg::Aead(AeadAlg::ChaCha20Poly1305)), 36);
        assert_eq!(e(EncrAlg::Cbc(CbcAlg::Aes128)), 16);
        assert_eq!(e(CBC256), 32);
        assert_eq!(integ_key_len(SHA256), 32);
        assert_eq!(integ_key_len(IntegAlg::Hmac(HmacAlg::Sha384_192)), 48);
        assert_eq!(integ_key_len(IntegAlg::Hmac(HmacAlg::Sha512_256)), 64);
        assert_eq!(integ_key_len(IntegAlg::None), 0);
    }

    #[test]
    fn ike_proposal_round_trip_and_selection() {
        let a = IkeSuite {
            encr: GCM128,
            integ: IntegAlg::None,
            prf: PrfAlg::HmacSha256,
            dh: DhGroup::Curve25519,
        };
        let b =
            IkeSuite { encr: CBC256, integ: SHA256, prf: PrfAlg::HmacSha384, dh: DhGroup::Ecp256 };
        for s in [a, b] {
            assert_eq!(IkeSuite::from_chosen(&s.to_proposal(1, vec![]).unwrap()), Ok(s));
        }
        let offered = vec![b.to_proposal(1, vec![]).unwrap(), a.to_proposal(2, vec![]).unwrap()];
        // The peer's order wins; among ours, our order.
        assert_eq!(IkeSuite::select(&offered, &[a, b]), Some((1, b)));
        assert_eq!(IkeSuite::select(&offered, &[a]), Some((2, a)));
        let c = IkeSuite { dh: DhGroup::Ecp384, ..a };
        assert_eq!(IkeSuite::select(&offered, &[c]), None);
        // A transform with an unknown attribute is not acceptable (§3.3.6).
        let mut odd = a.to_proposal(1, vec![]).unwrap();
        odd.transforms[0].attributes.push(Attribute::key_length(1));
        odd.transforms[0].attributes[1].attr_type = 99;
        assert_eq!(IkeSuite::select(&[odd], &[a]), None);
        // An answer with two DH transforms is not a choice.
        let mut two = a.to_proposal(1, vec![]).unwrap();
        two.transforms.push(Transform::new(TransformType::DH, 19));
        assert_eq!(IkeSuite::from_chosen(&two), Err(PeerMisbehaved::ProposalNotOffered("dh")));
    }

    /// Groups 14, 15 and 21 travel as IANA Transform Type 4 IDs 14, 15 and 21 (RFC 7296
    /// §3.3.2, "Transform Type 4 - Diffie-Hellman Group Transform IDs"), for IKE and for PFS.
    #[test]
    fn modp_and_ecp521_transform_ids() {
        for (g, id) in [(DhGroup::Modp2048, 14), (DhGroup::Modp3072, 15), (DhGroup::Ecp521, 21)] {
            let s = IkeSuite { encr: CBC256, integ: SHA256, prf: PrfAlg::HmacSha256, dh: g };
            let p = s.to_proposal(1, vec![]).unwrap();
            let dh: Vec<u16> = p
                .transforms
                .iter()
                .filter(|t| t.transform_type == TransformType::DH)
                .map(|t| t.transform_id)
                .collect();
            assert_eq!(dh, [id]);
            assert_eq!(IkeSuite::from_chosen(&p), Ok(s));
            let esp = EspSuite::new(GCM128, IntegAlg::None).unwrap();
            let c = ChildSuite { esp, esn: false, pfs: Some(g) };
            assert_eq!(ChildSuite::from_chosen(&c.to_proposal(1, 9).unwrap()), Ok((c, 9)));
        }
    }

    #[test]
    fn child_proposal_round_trip_and_selection() {
        let esp = EspSuite::new(CBC256, SHA256).unwrap();
        let s = ChildSuite { esp, esn: true, pfs: Some(DhGroup::Curve25519) };
        let p = s.to_proposal(1, 0xc0ffee01).unwrap();
        assert_eq!(ChildSuite::from_chosen(&p), Ok((s, 0xc0ffee01)));
        assert_eq!(ChildSuite::select(std::slice::from_ref(&p), &[s]), Some((1, s, 0xc0ffee01)));
        let no_esn = ChildSuite { esn: false, ..s };
        assert_eq!(ChildSuite::select(&[p], &[no_esn]), None);
        let gcm = ChildSuite {
            esp: EspSuite::new(GCM128, IntegAlg::None).unwrap(),
            esn: false,
            pfs: None,
        };
        let p = gcm.to_proposal(3, 7).unwrap();
        assert_eq!(ChildSuite::select(std::slice::from_ref(&p), &[s, gcm]), Some((3, gcm, 7)));
        assert_eq!(ChildSuite::from_chosen(&p), Ok((gcm, 7)));
        assert!(
            ChildSuite {
                esp: EspSuite::new(EncrAlg::Cbc(CbcAlg::TripleDes), SHA256).unwrap(),
                ..s
            }
            .to_proposal(1, 1)
            .is_err()
        );
    }
}
