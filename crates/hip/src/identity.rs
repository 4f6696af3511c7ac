//! Host identities (RFC 7401 §3, §5.2.9): the public key a HIT names, in the encoding the
//! HOST_ID parameter carries, and our own identity with its private key.
//!
//! Only ECDSA identities (HI algorithm 7, HIT suite ECDSA/SHA-384) are made here, on NIST
//! P-256 (ECC curve 1) or P-384 (curve 2). Their Host Identity field is the curve ID (16 bits)
//! followed by the uncompressed point `0x04 || x || y` (RFC 7401 §5.2.9 with SEC 1 §2.3.3).

use crate::error::Error;
use crate::hit::HostIdentityTag;
use crate::suite::HitSuite;
use crypto::ecdsa::{EcCurve, EcdsaKey, check_point, verify_sha384};
use zeroize::Zeroizing;

/// HI algorithm ECDSA (RFC 7401 §5.2.9).
pub const HI_ECDSA: u16 = 7;

fn curve_id(c: EcCurve) -> u16 {
    match c {
        EcCurve::P256 => 1,
        EcCurve::P384 => 2,
    }
}

/// A peer's (or our) public host identity.
#[derive(Clone, PartialEq, Eq)]
pub struct HostIdentity {
    curve: EcCurve,
    /// The HOST_ID parameter's Host Identity field: curve ID || uncompressed point.
    encoded: Vec<u8>,
    hit: HostIdentityTag,
}

impl std::fmt::Debug for HostIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostIdentity").field("curve", &self.curve).field("hit", &self.hit).finish()
    }
}

impl HostIdentity {
    /// Parses a HOST_ID's algorithm and Host Identity field. A peer's identity that is not
    /// ECDSA on P-256 or P-384, or not a point on its curve, is refused naming what is wrong.
    pub fn parse(algorithm: u16, host_id: &[u8]) -> Result<HostIdentity, Error> {
        if algorithm != HI_ECDSA {
            return Err(Error::Peer(format!("HOST_ID algorithm {algorithm} (we take ECDSA, 7)")));
        }
        let (id, point) = match host_id {
            [a, b, rest @ ..] => (u16::from_be_bytes([*a, *b]), rest),
            _ => return Err(Error::Peer("HOST_ID: no ECC curve".into())),
        };
        let curve = match id {
            1 => EcCurve::P256,
            2 => EcCurve::P384,
            other => return Err(Error::Peer(format!("HOST_ID: ECC curve {other} (we take 1, 2)"))),
        };
        if point.len() != curve.point_len() || point.first() != Some(&0x04) {
            return Err(Error::Peer(format!(
                "HOST_ID: public key of {} bytes is not an uncompressed {curve:?} point",
                point.len()
            )));
        }
        // A point off the curve verifies nothing; find out now rather than at the signature.
        if check_point(curve, point).is_err() {
            return Err(Error::Peer("HOST_ID: public key is not on its curve".into()));
        }
        Ok(HostIdentity::of(curve, point))
    }

    fn of(curve: EcCurve, point: &[u8]) -> HostIdentity {
        let mut encoded = curve_id(curve).to_be_bytes().to_vec();
        encoded.extend_from_slice(point);
        let hit = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, &encoded);
        HostIdentity { curve, encoded, hit }
    }

    /// Its HIT.
    pub fn hit(&self) -> HostIdentityTag {
        self.hit
    }

    /// Its HIT suite.
    pub fn suite(&self) -> HitSuite {
        HitSuite::EcdsaSha384
    }

    /// HI algorithm number for the HOST_ID parameter.
    pub fn algorithm(&self) -> u16 {
        HI_ECDSA
    }

    /// The HOST_ID parameter's Host Identity field.
    pub fn encoded(&self) -> &[u8] {
        &self.encoded
    }

    /// Its curve.
    pub fn curve(&self) -> EcCurve {
        self.curve
    }

    /// Verifies a HIP_SIGNATURE / HIP_SIGNATURE_2 value over `message` (§5.2.14: ECDSA with
    /// the suite's SHA-384, `r || s`).
    pub fn verify(&self, message: &[u8], sig: &[u8]) -> Result<(), Error> {
        let point = self.encoded.get(2..).unwrap_or_default();
        verify_sha384(self.curve, point, message, sig)
            .map_err(|_| Error::Peer("HIP_SIGNATURE does not verify".into()))
    }
}

/// Our host identity: the private key and what it makes public.
#[derive(Debug)]
pub struct LocalHost {
    key: EcdsaKey,
    public: HostIdentity,
}

impl LocalHost {
    /// A fresh identity on `curve`.
    pub fn generate(curve: EcCurve) -> Result<LocalHost, Error> {
        Ok(LocalHost::from_key(EcdsaKey::generate(curve)?))
    }

    /// An identity from a known private scalar (big-endian): for tests and fuzzing, where a
    /// fixed identity keeps runs reproducible.
    pub fn from_scalar(curve: EcCurve, scalar: &[u8]) -> Result<LocalHost, Error> {
        Ok(LocalHost::from_key(EcdsaKey::from_scalar(curve, scalar)?))
    }

    /// An identity from a PKCS#8 private key document (DER).
    pub fn from_pkcs8(der: &[u8]) -> Result<LocalHost, Error> {
        let key = EcdsaKey::from_pkcs8(der).map_err(|_| {
            Error::Config("host identity: not an ECDSA P-256 or P-384 PKCS#8 private key".into())
        })?;
        Ok(LocalHost::from_key(key))
    }

    fn from_key(key: EcdsaKey) -> LocalHost {
        let public = HostIdentity::of(key.curve(), &key.public_point());
        LocalHost { key, public }
    }

    /// The private key as PKCS#8 (DER), for the host identity file.
    pub fn to_pkcs8(&self) -> Result<Zeroizing<Vec<u8>>, Error> {
        Ok(self.key.to_pkcs8()?)
    }

    /// The public identity.
    pub fn identity(&self) -> &HostIdentity {
        &self.public
    }

    /// Our HIT.
    pub fn hit(&self) -> HostIdentityTag {
        self.public.hit
    }

    /// Signs `message` for HIP_SIGNATURE / HIP_SIGNATURE_2.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        Ok(self.key.sign_sha384(message)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_round_trip_signature_and_hit() {
        for curve in [EcCurve::P256, EcCurve::P384] {
            let me = LocalHost::generate(curve).unwrap();
            let id = me.identity();
            assert_eq!(id.encoded().len(), 2 + curve.point_len());
            let parsed = HostIdentity::parse(id.algorithm(), id.encoded()).unwrap();
            assert_eq!(&parsed, id);
            assert_eq!(parsed.hit(), me.hit());
            assert_eq!(parsed.hit().suite(), Some(HitSuite::EcdsaSha384));
            let sig = me.sign(b"I2").unwrap();
            parsed.verify(b"I2", &sig).unwrap();
            assert!(parsed.verify(b"R2", &sig).is_err());
            let again = LocalHost::from_pkcs8(&me.to_pkcs8().unwrap()).unwrap();
            assert_eq!(again.hit(), me.hit());
        }
    }

    #[test]
    fn bad_host_ids_are_named() {
        let me = LocalHost::generate(EcCurve::P256).unwrap();
        let enc = me.identity().encoded().to_vec();
        let err = |alg, b: &[u8]| HostIdentity::parse(alg, b).unwrap_err().to_string();
        assert!(err(5, &enc).contains("algorithm 5"));
        assert!(err(7, &enc[..1]).contains("no ECC curve"));
        let mut c = enc.clone();
        c[1] = 9;
        assert!(err(7, &c).contains("curve 9"));
        assert!(err(7, &enc[..40]).contains("not an uncompressed"));
        let mut off = enc.clone();
        off[20] ^= 1;
        assert!(err(7, &off).contains("not on its curve"));
    }
}
