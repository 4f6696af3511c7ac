//! Host identities (RFC 7401 §3, §5.2.9): the public key a HIT names, in the encoding the
//! HOST_ID parameter carries, and our own identity with its private key.
//!
//! Two HI algorithms (§5.2.9): ECDSA (7) on NIST P-256 (ECC curve 1) or P-384 (curve 2), HIT
//! suite ECDSA/SHA-384, whose Host Identity field is the curve ID (16 bits) followed by the
//! uncompressed point `0x04 || x || y` (SEC 1 §2.3.3); and RSA (5), HIT suite RSA,DSA/SHA-256,
//! whose field is the RFC 3110 §2 public key: exponent length (one octet, or a zero octet and
//! two more when the exponent is longer than 255 octets), exponent, modulus. RSA signatures
//! are RSASSA-PKCS1-v1_5 with SHA-256 (see `crypto::rsa`).

use crate::error::Error;
use crate::hit::HostIdentityTag;
use crate::suite::HitSuite;
use crypto::ecdsa::{EcCurve, EcdsaKey, check_point, verify_sha384};
use crypto::rsa::RsaKey;
use zeroize::Zeroizing;

/// HI algorithm RSA (RFC 7401 §5.2.9).
pub const HI_RSA: u16 = 5;
/// HI algorithm ECDSA (RFC 7401 §5.2.9).
pub const HI_ECDSA: u16 = 7;

/// Which kind of key an identity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HiKind {
    /// RSA; the modulus length in bits.
    Rsa(usize),
    /// ECDSA on this curve.
    Ecdsa(EcCurve),
}

fn curve_id(c: EcCurve) -> u16 {
    match c {
        EcCurve::P256 => 1,
        EcCurve::P384 => 2,
    }
}

/// Splits an RFC 3110 §2 RSA public key into (exponent, modulus).
///
/// RFC 3110 §2: "The public key exponent is a variable length unsigned integer. Its length in
/// octets is represented as one octet if it is in the range of 1 to 255 and by a zero octet
/// followed by a two octet unsigned length if it is longer than 255 bytes. The public key
/// modulus field is a multiprecision unsigned integer." and "Leading zero octets are
/// prohibited in the exponent and modulus."
fn rfc3110_split(host_id: &[u8]) -> Result<(&[u8], &[u8]), Error> {
    let (elen, rest) = match host_id {
        [0, a, b, rest @ ..] => (usize::from(u16::from_be_bytes([*a, *b])), rest),
        [0, ..] | [] => return Err(Error::Peer("HOST_ID: RSA exponent length cut short".into())),
        [n, rest @ ..] => (usize::from(*n), rest),
    };
    if elen == 0 || rest.len() <= elen {
        return Err(Error::Peer(format!(
            "HOST_ID: RSA exponent of {elen} octets leaves no modulus in {} octets",
            rest.len()
        )));
    }
    let (e, n) = rest.split_at(elen);
    if e.first() == Some(&0) || n.first() == Some(&0) {
        return Err(Error::Peer("HOST_ID: RSA exponent or modulus has a leading zero".into()));
    }
    Ok((e, n))
}

fn rfc3110_encode(e: &[u8], n: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(3 + e.len() + n.len());
    match u8::try_from(e.len()) {
        Ok(len) => v.push(len),
        Err(_) => {
            v.push(0);
            // An exponent longer than 65535 octets is not a key aws-lc-rs makes or takes.
            v.extend_from_slice(&u16::try_from(e.len()).unwrap_or(u16::MAX).to_be_bytes());
        }
    }
    v.extend_from_slice(e);
    v.extend_from_slice(n);
    v
}

/// A peer's (or our) public host identity.
#[derive(Clone, PartialEq, Eq)]
pub struct HostIdentity {
    kind: HiKind,
    /// The HOST_ID parameter's Host Identity field.
    encoded: Vec<u8>,
    hit: HostIdentityTag,
}

impl std::fmt::Debug for HostIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostIdentity").field("kind", &self.kind).field("hit", &self.hit).finish()
    }
}

impl HostIdentity {
    /// Parses a HOST_ID's algorithm and Host Identity field. A peer's identity that is not
    /// ECDSA on P-256 or P-384 or RSA of 2048 to 8192 bits, or not a valid key, is refused
    /// naming what is wrong.
    pub fn parse(algorithm: u16, host_id: &[u8]) -> Result<HostIdentity, Error> {
        match algorithm {
            HI_ECDSA => HostIdentity::parse_ecdsa(host_id),
            HI_RSA => HostIdentity::parse_rsa(host_id),
            other => {
                Err(Error::Peer(format!("HOST_ID algorithm {other} (we take RSA, 5 and ECDSA, 7)")))
            }
        }
    }

    fn parse_ecdsa(host_id: &[u8]) -> Result<HostIdentity, Error> {
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
        Ok(HostIdentity::of_ecdsa(curve, point))
    }

    fn parse_rsa(host_id: &[u8]) -> Result<HostIdentity, Error> {
        let (e, n) = rfc3110_split(host_id)?;
        if crypto::rsa::check_public(n, e).is_err() {
            return Err(Error::Peer(format!(
                "HOST_ID: RSA modulus of {} bits is not a key we take (2048 to 8192 bits)",
                n.len() * 8
            )));
        }
        // The HIT is over the Host Identity field as the peer sent it (§3.2), so keep those
        // octets rather than an encoding of our own.
        Ok(HostIdentity::of(HiKind::Rsa(n.len() * 8), host_id.to_vec()))
    }

    fn of_ecdsa(curve: EcCurve, point: &[u8]) -> HostIdentity {
        let mut encoded = curve_id(curve).to_be_bytes().to_vec();
        encoded.extend_from_slice(point);
        HostIdentity::of(HiKind::Ecdsa(curve), encoded)
    }

    fn of_rsa(e: &[u8], n: &[u8]) -> HostIdentity {
        HostIdentity::of(HiKind::Rsa(n.len() * 8), rfc3110_encode(e, n))
    }

    fn of(kind: HiKind, encoded: Vec<u8>) -> HostIdentity {
        let suite = match kind {
            HiKind::Rsa(_) => HitSuite::RsaDsaSha256,
            HiKind::Ecdsa(_) => HitSuite::EcdsaSha384,
        };
        let hit = HostIdentityTag::from_host_id(suite, &encoded);
        HostIdentity { kind, encoded, hit }
    }

    /// Its HIT.
    pub fn hit(&self) -> HostIdentityTag {
        self.hit
    }

    /// Its HIT suite (§5.2.10): RSA,DSA/SHA-256 for RSA, ECDSA/SHA-384 for ECDSA.
    pub fn suite(&self) -> HitSuite {
        match self.kind {
            HiKind::Rsa(_) => HitSuite::RsaDsaSha256,
            HiKind::Ecdsa(_) => HitSuite::EcdsaSha384,
        }
    }

    /// HI algorithm number for the HOST_ID parameter, also HIP_SIGNATURE's SIG alg.
    pub fn algorithm(&self) -> u16 {
        match self.kind {
            HiKind::Rsa(_) => HI_RSA,
            HiKind::Ecdsa(_) => HI_ECDSA,
        }
    }

    /// The HOST_ID parameter's Host Identity field.
    pub fn encoded(&self) -> &[u8] {
        &self.encoded
    }

    /// Its key kind.
    pub fn kind(&self) -> HiKind {
        self.kind
    }

    /// Verifies a HIP_SIGNATURE / HIP_SIGNATURE_2 value over `message` (§5.2.14): ECDSA with
    /// the suite's SHA-384, `r || s`; RSA as RSASSA-PKCS1-v1_5 with SHA-256.
    pub fn verify(&self, message: &[u8], sig: &[u8]) -> Result<(), Error> {
        let bad = |_| Error::Peer("HIP_SIGNATURE does not verify".into());
        match self.kind {
            HiKind::Ecdsa(curve) => {
                let point = self.encoded.get(2..).unwrap_or_default();
                verify_sha384(curve, point, message, sig).map_err(bad)
            }
            HiKind::Rsa(_) => {
                let (e, n) = rfc3110_split(&self.encoded)?;
                crypto::rsa::verify_sha256(n, e, message, sig).map_err(bad)
            }
        }
    }
}

#[derive(Debug)]
enum Key {
    Ecdsa(EcdsaKey),
    Rsa(RsaKey),
}

/// Our host identity: the private key and what it makes public.
#[derive(Debug)]
pub struct LocalHost {
    key: Key,
    public: HostIdentity,
}

impl LocalHost {
    /// A fresh ECDSA identity on `curve`.
    pub fn generate(curve: EcCurve) -> Result<LocalHost, Error> {
        Ok(LocalHost::from_ecdsa(EcdsaKey::generate(curve)?))
    }

    /// A fresh RSA identity with a modulus of `bits` (2048, 3072, 4096 or 8192).
    pub fn generate_rsa(bits: usize) -> Result<LocalHost, Error> {
        Ok(LocalHost::from_rsa(RsaKey::generate(bits)?))
    }

    /// A fresh identity of `kind`.
    pub fn generate_kind(kind: HiKind) -> Result<LocalHost, Error> {
        match kind {
            HiKind::Rsa(bits) => LocalHost::generate_rsa(bits),
            HiKind::Ecdsa(curve) => LocalHost::generate(curve),
        }
    }

    /// An identity from a known private scalar (big-endian): for tests and fuzzing, where a
    /// fixed identity keeps runs reproducible.
    pub fn from_scalar(curve: EcCurve, scalar: &[u8]) -> Result<LocalHost, Error> {
        Ok(LocalHost::from_ecdsa(EcdsaKey::from_scalar(curve, scalar)?))
    }

    /// An identity from a PKCS#8 private key document (DER): ECDSA P-256 or P-384, or RSA.
    pub fn from_pkcs8(der: &[u8]) -> Result<LocalHost, Error> {
        if let Ok(key) = EcdsaKey::from_pkcs8(der) {
            return Ok(LocalHost::from_ecdsa(key));
        }
        let key = RsaKey::from_pkcs8(der).map_err(|_| {
            Error::Config(
                "host identity: not an ECDSA P-256/P-384 or RSA PKCS#8 private key".into(),
            )
        })?;
        if crypto::rsa::check_public(&key.modulus(), &key.exponent()).is_err() {
            return Err(Error::Config(format!(
                "host identity: an RSA key of {} bits (we take 2048 to 8192)",
                key.bits()
            )));
        }
        Ok(LocalHost::from_rsa(key))
    }

    fn from_ecdsa(key: EcdsaKey) -> LocalHost {
        let public = HostIdentity::of_ecdsa(key.curve(), &key.public_point());
        LocalHost { key: Key::Ecdsa(key), public }
    }

    fn from_rsa(key: RsaKey) -> LocalHost {
        let public = HostIdentity::of_rsa(&key.exponent(), &key.modulus());
        LocalHost { key: Key::Rsa(key), public }
    }

    /// The private key as PKCS#8 (DER), for the host identity file.
    pub fn to_pkcs8(&self) -> Result<Zeroizing<Vec<u8>>, Error> {
        Ok(match &self.key {
            Key::Ecdsa(k) => k.to_pkcs8()?,
            Key::Rsa(k) => k.to_pkcs8()?,
        })
    }

    /// The public identity.
    pub fn identity(&self) -> &HostIdentity {
        &self.public
    }

    /// Our HIT.
    pub fn hit(&self) -> HostIdentityTag {
        self.public.hit
    }

    /// Signs `message` for HIP_SIGNATURE / HIP_SIGNATURE_2, with the scheme of our HI
    /// algorithm (see [`HostIdentity::verify`]).
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        Ok(match &self.key {
            Key::Ecdsa(k) => k.sign_sha384(message)?,
            Key::Rsa(k) => k.sign_sha256(message)?,
        })
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
        assert!(err(3, &enc).contains("algorithm 3"));
        assert!(err(7, &enc[..1]).contains("no ECC curve"));
        let mut c = enc.clone();
        c[1] = 9;
        assert!(err(7, &c).contains("curve 9"));
        assert!(err(7, &enc[..40]).contains("not an uncompressed"));
        let mut off = enc.clone();
        off[20] ^= 1;
        assert!(err(7, &off).contains("not on its curve"));
    }

    #[test]
    fn rsa_identity_round_trip_signature_and_hit() {
        let me = LocalHost::generate_rsa(2048).unwrap();
        let id = me.identity();
        assert_eq!(id.algorithm(), HI_RSA);
        assert_eq!(id.kind(), HiKind::Rsa(2048));
        // RFC 3110 §2: one octet of exponent length (3 for 65537), the exponent, the modulus.
        assert_eq!(&id.encoded()[..4], &[3, 1, 0, 1]);
        assert_eq!(id.encoded().len(), 4 + 256);
        let parsed = HostIdentity::parse(HI_RSA, id.encoded()).unwrap();
        assert_eq!(&parsed, id);
        assert_eq!(parsed.hit().suite(), Some(HitSuite::RsaDsaSha256));
        assert_eq!(parsed.suite(), HitSuite::RsaDsaSha256);
        let sig = me.sign(b"I2").unwrap();
        assert_eq!(sig.len(), 256);
        parsed.verify(b"I2", &sig).unwrap();
        assert!(parsed.verify(b"R2", &sig).is_err());
        let again = LocalHost::from_pkcs8(&me.to_pkcs8().unwrap()).unwrap();
        assert_eq!(again.hit(), me.hit());
    }

    #[test]
    fn rfc3110_long_exponent_form() {
        let (e, n) = (vec![7u8; 300], vec![9u8; 256]);
        let enc = rfc3110_encode(&e, &n);
        assert_eq!(&enc[..3], &[0, 1, 44]);
        assert_eq!(rfc3110_split(&enc).unwrap(), (&e[..], &n[..]));
        // A key sent with the three-octet length form although its exponent is short keeps
        // its octets: the HIT is over what the peer sent.
        let me = LocalHost::generate_rsa(2048).unwrap();
        let short = me.identity().encoded();
        let long = [&[0u8, 0, 3][..], &short[1..]].concat();
        let id = HostIdentity::parse(HI_RSA, &long).unwrap();
        assert_eq!(id.encoded(), &long[..]);
        assert_ne!(id.hit(), me.hit());
    }

    #[test]
    fn bad_rsa_host_ids_are_named() {
        let me = LocalHost::generate_rsa(2048).unwrap();
        let enc = me.identity().encoded().to_vec();
        let err = |b: &[u8]| HostIdentity::parse(HI_RSA, b).unwrap_err().to_string();
        assert!(err(&[]).contains("cut short"), "{}", err(&[]));
        assert!(err(&[0, 1]).contains("cut short"));
        assert!(err(&enc[..4]).contains("no modulus"));
        assert!(err(&[200, 1, 2]).contains("no modulus"));
        let mut lead = enc.clone();
        lead[4] = 0;
        assert!(err(&lead).contains("leading zero"));
        assert!(err(&enc[..4 + 128]).contains("1024 bits"), "{}", err(&enc[..132]));
        // A changed modulus is another key: the signature no longer verifies.
        let mut other = enc.clone();
        other[100] ^= 1;
        let sig = me.sign(b"m").unwrap();
        let id = HostIdentity::parse(HI_RSA, &other).unwrap();
        assert!(id.verify(b"m", &sig).is_err());
    }
}
