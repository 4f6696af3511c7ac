//! CERT and CERTREQ bodies read by their encoding (RFC 7296 §3.6, §3.7): the certificate
//! encodings' numbers, an X.509 certificate's DER, and CERTREQ's list of trust-anchor hashes.
//! The payloads themselves stay the opaque [`Cert`] of the chain parser, so that an encoding we
//! do not read passes through unchanged.

use super::error::IkeError;
use super::payload::Cert;

/// Certificate Encoding (RFC 7296 §3.6, IANA "IKEv2 Certificate Encodings").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CertEncoding(pub u8);

impl CertEncoding {
    /// PKCS #7 wrapped X.509 certificate.
    pub const PKCS7_WRAPPED_X509: CertEncoding = CertEncoding(1);
    /// X.509 Certificate - Signature: a DER-encoded certificate (§3.6).
    pub const X509_SIGNATURE: CertEncoding = CertEncoding(4);
    /// Certificate Revocation List (CRL).
    pub const CRL: CertEncoding = CertEncoding(7);
    /// Hash and URL of X.509 certificate.
    pub const HASH_AND_URL_X509: CertEncoding = CertEncoding(12);
    /// Hash and URL of X.509 bundle.
    pub const HASH_AND_URL_X509_BUNDLE: CertEncoding = CertEncoding(13);
    /// Raw Public Key (RFC 7670).
    pub const RAW_PUBLIC_KEY: CertEncoding = CertEncoding(15);
}

/// Length of one Certification Authority entry in a CERTREQ: a SHA-1 hash (§3.7).
pub const CA_HASH_LEN: usize = 20;

impl Cert {
    /// A CERT payload carrying one DER-encoded X.509 certificate (encoding 4).
    pub fn x509(der: &[u8]) -> Cert {
        Cert { encoding: CertEncoding::X509_SIGNATURE.0, data: der.to_vec() }
    }

    /// A CERTREQ for X.509 certificates naming the trust anchors whose SubjectPublicKeyInfo
    /// SHA-1 hashes are `authorities` (§3.7).
    pub fn x509_request(authorities: &[[u8; CA_HASH_LEN]]) -> Cert {
        Cert {
            encoding: CertEncoding::X509_SIGNATURE.0,
            data: authorities.iter().flatten().copied().collect(),
        }
    }

    /// The encoding, as its newtype.
    pub fn cert_encoding(&self) -> CertEncoding {
        CertEncoding(self.encoding)
    }

    /// The DER of an X.509 certificate (encoding 4), checked only for being one DER SEQUENCE
    /// that fills the payload (§3.6: "Certificate Data: Actual encoding of certificate data");
    /// `None` for another encoding. The certificate's contents are for a certificate parser.
    pub fn x509_der(&self) -> Result<Option<&[u8]>, IkeError> {
        if self.cert_encoding() != CertEncoding::X509_SIGNATURE {
            return Ok(None);
        }
        let len = der_sequence_len(&self.data)?;
        if len != self.data.len() {
            return Err(IkeError::BadLength { what: "cert x509 der", value: len });
        }
        Ok(Some(&self.data))
    }

    /// A CERTREQ's trust-anchor hashes, for encoding 4 (§3.7: "The Certification Authority
    /// value is a concatenated list of SHA-1 hashes of the public keys of trusted
    /// Certification Authorities (CAs)." ... "The 20-octet hashes are concatenated and included
    /// with no other formatting."). An empty list is allowed: it asks for any certificate.
    /// `None` for another encoding.
    pub fn ca_hashes(&self) -> Result<Option<Vec<[u8; CA_HASH_LEN]>>, IkeError> {
        if self.cert_encoding() != CertEncoding::X509_SIGNATURE {
            return Ok(None);
        }
        if self.data.len() % CA_HASH_LEN != 0 {
            return Err(IkeError::BadLength { what: "certreq authority", value: self.data.len() });
        }
        let mut out = Vec::with_capacity(self.data.len() / CA_HASH_LEN);
        for c in self.data.chunks_exact(CA_HASH_LEN) {
            let mut h = [0u8; CA_HASH_LEN];
            h.copy_from_slice(c);
            out.push(h);
        }
        Ok(Some(out))
    }
}

/// The total length (header and contents) of the DER SEQUENCE at the start of `der`, in
/// definite form (X.690 §8.1.3, DER §10.1: definite and minimal length only).
fn der_sequence_len(der: &[u8]) -> Result<usize, IkeError> {
    let truncated = |need| IkeError::Truncated { what: "cert x509 der", len: der.len(), need };
    let (&tag, rest) = der.split_first().ok_or(truncated(2))?;
    if tag != 0x30 {
        return Err(IkeError::BadValue { what: "cert x509 der tag", value: u64::from(tag) });
    }
    let (&first, rest) = rest.split_first().ok_or(truncated(2))?;
    if first < 0x80 {
        return Ok(2 + usize::from(first));
    }
    let n = usize::from(first & 0x7f);
    // 0x80 is the indefinite form (not DER); more than 4 length octets is not a certificate
    // that fits an IKE message.
    if n == 0 || n > 4 {
        return Err(IkeError::BadValue { what: "cert x509 der length", value: u64::from(first) });
    }
    let octets = rest.get(..n).ok_or(truncated(2 + n))?;
    if octets[0] == 0 || (n == 1 && octets[0] < 0x80) {
        return Err(IkeError::BadValue { what: "cert x509 der length", value: u64::from(first) });
    }
    let len = octets.iter().fold(0usize, |a, &b| (a << 8) | usize::from(b));
    Ok(2 + n + len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ikev2::{Payload, PayloadType, emit_chain, parse_chain};

    /// A CERTREQ with two hashes round-trips through the chain and reads back as them.
    #[test]
    fn certreq_hashes_round_trip() {
        let hashes = [[0x11; 20], [0x22; 20]];
        let chain = vec![Payload::CertReq(Cert::x509_request(&hashes))];
        let mut out = vec![0u8; chain[0].buffer_len()];
        let first = emit_chain(&chain, &mut out).unwrap();
        assert_eq!(first, PayloadType::CERTREQ);
        // Generic header (4), encoding 4, then the 40 octets with no other formatting.
        assert_eq!(out.len(), 4 + 1 + 40);
        assert_eq!(out[4], 4);
        let back = parse_chain(first, &out).unwrap();
        let Payload::CertReq(c) = &back[0] else { panic!("{back:?}") };
        assert_eq!(c.ca_hashes().unwrap().unwrap(), hashes);
        assert_eq!(Cert::x509_request(&[]).ca_hashes().unwrap().unwrap(), Vec::<[u8; 20]>::new());
    }

    #[test]
    fn certreq_of_a_partial_hash_is_refused() {
        let c = Cert { encoding: 4, data: vec![0; 30] };
        assert_eq!(
            c.ca_hashes(),
            Err(IkeError::BadLength { what: "certreq authority", value: 30 })
        );
        let raw = Cert { encoding: 15, data: vec![0; 30] };
        assert_eq!(raw.ca_hashes(), Ok(None));
    }

    #[test]
    fn x509_der_must_be_one_sequence_filling_the_payload() {
        let short = [0x30, 0x03, 1, 2, 3];
        assert_eq!(Cert::x509(&short).x509_der(), Ok(Some(&short[..])));
        let mut long = vec![0x30, 0x82, 0x01, 0x00];
        long.extend(std::iter::repeat_n(7u8, 256));
        assert_eq!(Cert::x509(&long).x509_der().unwrap().map(<[u8]>::len), Some(260));
        // Trailing bytes, a missing byte, not a SEQUENCE, indefinite and non-minimal lengths.
        assert!(Cert::x509(&[0x30, 0x01, 0, 0]).x509_der().is_err());
        assert!(Cert::x509(&[0x30, 0x02, 0]).x509_der().is_err());
        assert!(Cert::x509(&[0x31, 0x00]).x509_der().is_err());
        assert!(Cert::x509(&[0x30, 0x80, 0, 0]).x509_der().is_err());
        assert!(Cert::x509(&[0x30, 0x81, 0x05, 1, 2, 3, 4, 5]).x509_der().is_err());
        assert!(Cert::x509(&[0x30]).x509_der().is_err());
        assert!(Cert::x509(&[]).x509_der().is_err());
        assert_eq!(Cert { encoding: 15, data: vec![1] }.x509_der(), Ok(None));
    }

    /// A certificate made by OpenSSL reads as one DER SEQUENCE.
    #[test]
    fn an_openssl_certificate_is_accepted() {
        let out = std::process::Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])
            .args(["-nodes", "-keyout", "/dev/null", "-subj", "/CN=gw.example", "-outform", "DER"])
            .output();
        let Some(out) = out.ok().filter(|o| o.status.success()) else {
            println!("SKIPPED: openssl cannot make a certificate");
            return;
        };
        let c = Cert::x509(&out.stdout);
        assert_eq!(c.x509_der().unwrap(), Some(&out.stdout[..]));
        assert!(Cert::x509(&out.stdout[..out.stdout.len() - 1]).x509_der().is_err());
    }
}
