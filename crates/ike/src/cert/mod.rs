//! X.509 certificates for IKEv2 authentication (RFC 7296 §3.6–3.8, RFC 4945 §3 and §5): trust
//! anchors and CRLs, the CERTREQ hashes that name our anchors, and validation of a peer's chain
//! to one of them, with its identity matched against the end-entity certificate.
//!
//! Path building, validity times, basic constraints, name constraints, extended key usage and
//! CRL checks are `rustls-webpki`'s (the validator rustls uses); its certificate signature
//! algorithms come from [`crypto::x509_algs`]. Sans-IO: certificates and CRLs arrive as DER
//! bytes, the time as an argument.

mod san;

use rustls_pki_types::{CertificateDer, ServerName, TrustAnchor, UnixTime};
use webpki::{
    CertRevocationList, EndEntityCert, KeyUsage, OwnedCertRevocationList, RevocationCheckDepth,
    RevocationOptionsBuilder, UnknownStatusPolicy,
};
use wire::ikev2::{CA_HASH_LEN, Id, IdType};

/// Why a trust store could not be built or a peer's certificate was refused. `Display` names
/// the certificate or field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertError {
    /// A trust anchor is not a certificate webpki accepts as one.
    #[error("trust anchor {index}: {reason}")]
    BadAnchor {
        /// Its position in the list given.
        index: usize,
        /// webpki's reason.
        reason: String,
    },
    /// A CRL does not parse.
    #[error("crl {index}: {reason}")]
    BadCrl {
        /// Its position in the list given.
        index: usize,
        /// webpki's reason.
        reason: String,
    },
    /// The peer sent no certificate.
    #[error("no certificate from the peer")]
    NoCertificate,
    /// The peer's chain does not validate to one of our trust anchors.
    #[error("peer certificate: {reason}")]
    Invalid {
        /// webpki's reason (expired, unknown issuer, bad signature, not a CA, ...).
        reason: String,
    },
    /// A CRL lists the peer's certificate (or one of its issuers).
    #[error("peer certificate serial {serial} is revoked")]
    Revoked {
        /// The end-entity certificate's serial number, hex.
        serial: String,
    },
    /// The certificate does not name the peer's IKE identity.
    #[error("peer certificate does not match identity {id}")]
    IdentityMismatch {
        /// The identity, as text.
        id: String,
    },
    /// An identity type we cannot match against a certificate.
    #[error("identity type {id_type} cannot be matched against a certificate")]
    IdentityType {
        /// The ID payload's type number.
        id_type: u8,
    },
}

/// What a validated chain gives the AUTH check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The end-entity certificate's SubjectPublicKeyInfo (DER, with its SEQUENCE), whose key
    /// checks the AUTH payload (RFC 7427 §3).
    pub spki: Vec<u8>,
    /// Its serial number (big-endian, as encoded).
    pub serial: Vec<u8>,
}

/// Our trust anchors (swanctl's `x509ca/`) and CRLs (`x509crl/`).
#[derive(Debug)]
pub struct TrustStore {
    anchors: Vec<TrustAnchor<'static>>,
    hashes: Vec<[u8; CA_HASH_LEN]>,
    crls: Vec<CertRevocationList<'static>>,
}

/// id-kp-ipsecIKE (RFC 4945 §5.1.3.12), id-kp-serverAuth, id-kp-clientAuth: DER contents of
/// the OIDs 1.3.6.1.5.5.7.3.17, .3.1 and .3.2.
const EKU_IPSEC_IKE: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x11];
const EKU_SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
const EKU_CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];

impl TrustStore {
    /// A store of the CA certificates `anchors` and the CRLs `crls`, all DER.
    pub fn new(anchors: &[Vec<u8>], crls: &[Vec<u8>]) -> Result<TrustStore, CertError> {
        let mut store = TrustStore { anchors: Vec::new(), hashes: Vec::new(), crls: Vec::new() };
        for (index, der) in anchors.iter().enumerate() {
            let cert = CertificateDer::from(der.as_slice());
            let anchor = webpki::anchor_from_trusted_cert(&cert)
                .map_err(|e| CertError::BadAnchor { index, reason: e.to_string() })?
                .to_owned();
            // RFC 7296 §3.7: "Each is encoded as the SHA-1 hash of the Subject Public Key Info
            // element (see section 4.1.2.7 of [PKIX]) from each Trust Anchor certificate."
            let spki = webpki::spki_for_anchor(&anchor);
            store.hashes.push(crypto::digest::sha1(&[spki.as_ref()]));
            store.anchors.push(anchor);
        }
        for (index, der) in crls.iter().enumerate() {
            let crl = OwnedCertRevocationList::from_der(der)
                .map_err(|e| CertError::BadCrl { index, reason: e.to_string() })?;
            store.crls.push(crl.into());
        }
        Ok(store)
    }

    /// The CERTREQ payload's Certification Authority hashes for our anchors (§3.7).
    pub fn certreq_hashes(&self) -> &[[u8; CA_HASH_LEN]] {
        &self.hashes
    }

    /// Whether a peer's CERTREQ names one of our anchors (so a chain to it is what to send).
    pub fn requested(&self, hashes: &[[u8; CA_HASH_LEN]]) -> bool {
        hashes.iter().any(|h| self.hashes.contains(h))
    }

    /// Validates `chain` (the peer's CERT payloads in order: end entity first, then
    /// intermediates, RFC 7296 §3.6) at `now_unix` seconds, checks it against the CRLs and
    /// matches `id` against the end entity: FQDN, RFC 822 and IP identities against its
    /// subjectAltName (RFC 4945 §3.1), a DER_ASN1_DN identity against its subject.
    pub fn verify(&self, chain: &[&[u8]], now_unix: u64, id: &Id) -> Result<Verified, CertError> {
        let (ee_der, rest) = chain.split_first().ok_or(CertError::NoCertificate)?;
        let ee_der = CertificateDer::from(*ee_der);
        let invalid = |e: webpki::Error| CertError::Invalid { reason: e.to_string() };
        let ee = EndEntityCert::try_from(&ee_der).map_err(invalid)?;
        let intermediates: Vec<CertificateDer<'_>> =
            rest.iter().map(|c| CertificateDer::from(*c)).collect();
        let crl_refs: Vec<&CertRevocationList<'_>> = self.crls.iter().collect();
        // A certificate whose issuer published no CRL here is taken (strongSwan's default);
        // a CRL that lists it is final.
        let revocation = RevocationOptionsBuilder::new(&crl_refs).ok().map(|b| {
            b.with_depth(RevocationCheckDepth::Chain)
                .with_status_policy(UnknownStatusPolicy::Allow)
                .build()
        });
        let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(now_unix));
        // RFC 4945 §5.1.3.12: an extended key usage, when present, must allow the use; IKE
        // peers' certificates carry ipsecIKE, or the TLS server/client purposes.
        let mut last = None;
        for eku in [EKU_IPSEC_IKE, EKU_SERVER_AUTH, EKU_CLIENT_AUTH] {
            match ee.verify_for_usage(
                crypto::x509_algs::ALL,
                &self.anchors,
                &intermediates,
                time,
                KeyUsage::required_if_present(eku),
                revocation,
                None,
            ) {
                Ok(_) => {
                    last = None;
                    break;
                }
                Err(webpki::Error::CertRevoked) => {
                    return Err(CertError::Revoked { serial: hex_string(ee.serial()) });
                }
                Err(e) => last = Some(e),
            }
        }
        if let Some(e) = last {
            return Err(invalid(e));
        }
        match_identity(&ee, ee_der.as_ref(), id)?;
        Ok(Verified {
            spki: ee.subject_public_key_info().as_ref().to_vec(),
            serial: ee.serial().to_vec(),
        })
    }
}

/// Checks an AUTH signature (RFC 7427 §3) made by the key of the certificate `ee_der`:
/// `alg_id` is the AlgorithmIdentifier SEQUENCE from the AUTH payload, whose contents must
/// name one of [`crypto::x509_algs::ALL`] for the certificate's key type.
pub fn verify_signature(
    ee_der: &[u8],
    alg_id: &[u8],
    message: &[u8],
    signature: &[u8],
) -> Result<(), CertError> {
    let invalid = |e: webpki::Error| CertError::Invalid { reason: e.to_string() };
    let der = CertificateDer::from(ee_der);
    let ee = EndEntityCert::try_from(&der).map_err(invalid)?;
    let contents = der_contents(alg_id).ok_or(CertError::Invalid {
        reason: "AUTH AlgorithmIdentifier is not one DER SEQUENCE".into(),
    })?;
    let mut last = None;
    for alg in crypto::x509_algs::ALL {
        if alg.signature_alg_id().as_ref() != contents {
            continue;
        }
        match ee.verify_signature(*alg, message, signature) {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(last.map_or_else(
        || CertError::Invalid { reason: "AUTH signature algorithm not supported".into() },
        invalid,
    ))
}

/// Checks an AUTH payload of a classic method (RFC 7296 §3.8: 1, RSA PKCS#1 v1.5 with SHA-1;
/// RFC 4754: 9, 10, 11, ECDSA on P-256/P-384/P-521) with the key of the certificate `ee_der`.
/// `None` for another method.
pub fn verify_classic_signature(
    ee_der: &[u8],
    method: u8,
    message: &[u8],
    signature: &[u8],
) -> Option<Result<(), CertError>> {
    use crypto::sign::ClassicAuth;
    let alg = match method {
        1 => ClassicAuth::RsaSha1,
        9 => ClassicAuth::EcdsaP256Sha256,
        10 => ClassicAuth::EcdsaP384Sha384,
        11 => ClassicAuth::EcdsaP521Sha512,
        _ => return None,
    };
    let bad = |reason: &str| CertError::Invalid { reason: reason.into() };
    let der = CertificateDer::from(ee_der);
    let Ok(ee) = EndEntityCert::try_from(&der) else { return Some(Err(bad("not a certificate"))) };
    let spki = ee.subject_public_key_info();
    let Some(key) = san::spki_key(spki.as_ref()) else {
        return Some(Err(bad("SubjectPublicKeyInfo without a key")));
    };
    Some(
        crypto::sign::verify_classic(alg, key, message, signature)
            .map_err(|_| bad("AUTH signature does not verify")),
    )
}

fn match_identity(ee: &EndEntityCert<'_>, der: &[u8], id: &Id) -> Result<(), CertError> {
    let mismatch = || CertError::IdentityMismatch { id: id_text(id) };
    let name = match id.id_type {
        IdType::ID_RFC822_ADDR => {
            let found = san::rfc822_names(der).iter().any(|n| san::rfc822_matches(n, &id.data));
            return if found { Ok(()) } else { Err(mismatch()) };
        }
        IdType::ID_FQDN => {
            let s = std::str::from_utf8(&id.data).map_err(|_| mismatch())?;
            ServerName::try_from(s.to_string()).map_err(|_| mismatch())?
        }
        IdType::ID_IPV4_ADDR => {
            let a: [u8; 4] = id.data.as_slice().try_into().map_err(|_| mismatch())?;
            ServerName::IpAddress(std::net::IpAddr::from(a).into())
        }
        IdType::ID_IPV6_ADDR => {
            let a: [u8; 16] = id.data.as_slice().try_into().map_err(|_| mismatch())?;
            ServerName::IpAddress(std::net::IpAddr::from(a).into())
        }
        IdType::ID_DER_ASN1_DN => {
            // The ID carries the whole Name SEQUENCE; webpki gives the subject's contents.
            let inner = der_contents(&id.data).ok_or_else(mismatch)?;
            return if inner == ee.subject() { Ok(()) } else { Err(mismatch()) };
        }
        other => return Err(CertError::IdentityType { id_type: other.0 }),
    };
    ee.verify_is_valid_for_subject_name(&name).map_err(|_| mismatch())
}

/// The contents of the DER SEQUENCE that is all of `der`.
fn der_contents(der: &[u8]) -> Option<&[u8]> {
    let (&tag, rest) = der.split_first()?;
    if tag != 0x30 {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let octets = rest.get(..n)?;
        (octets.iter().fold(0usize, |a, &b| (a << 8) | usize::from(b)), rest.get(n..)?)
    };
    (rest.len() == len).then_some(rest)
}

/// An identity as text for a log line: the name, the address, or hex.
fn id_text(id: &Id) -> String {
    match id.id_type {
        IdType::ID_FQDN | IdType::ID_RFC822_ADDR => String::from_utf8_lossy(&id.data).into_owned(),
        _ => id.ip_addr().map_or_else(|| hex_string(&id.data), |a| a.to_string()),
    }
}

fn hex_string(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
