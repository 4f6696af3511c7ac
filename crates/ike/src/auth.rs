//! Authentication and anti-DoS values of the initial exchanges: the AUTH payload with a PSK
//! (RFC 7296 §2.15) or a digital signature (RFC 7427 §3, RFC 8420 for Ed25519) by a raw key or
//! an X.509 certificate's key (§3.6–3.8, [`crate::cert`]), NAT detection
//! hashes (§2.23), stateless cookies (§2.6), and traffic-selector narrowing (§2.9).

use crate::config::AuthConfig;
use crate::error::{Error, PeerMisbehaved};
use crate::keys::Secret;
use crypto::{Prf, PrfAlg, SignatureAlg, digest::sha1};
use rustls_pki_types::alg_id;
use std::net::{IpAddr, SocketAddr};
use wire::ikev2::{Auth, AuthMethod, Cert, Id, TrafficSelector};
use zeroize::Zeroizing;

/// AlgorithmIdentifier of Ed25519 (RFC 8420 §3, OID 1.3.101.112 without parameters).
pub const ALG_ID_ED25519: &[u8] = &[0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70];
/// AlgorithmIdentifier of ecdsa-with-SHA256 (RFC 7427 Appendix A.3.1, OID 1.2.840.10045.4.3.2).
pub const ALG_ID_ECDSA_SHA256: &[u8] =
    &[0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
/// SIGNATURE_HASH_ALGORITHMS data we send (RFC 7427 §4): SHA2-256 (2), SHA2-384 (3),
/// SHA2-512 (4) and Identity (5, RFC 8420).
pub const SIGNATURE_HASH_ALGORITHMS: &[u8] = &[0, 2, 0, 3, 0, 4, 0, 5];

/// The AlgorithmIdentifier SEQUENCE (RFC 7427 §3, Appendix A) naming `alg`.
fn alg_id(alg: SignatureAlg) -> Vec<u8> {
    let contents = match alg {
        SignatureAlg::Ed25519 => return ALG_ID_ED25519.to_vec(),
        SignatureAlg::EcdsaP256Sha256 => return ALG_ID_ECDSA_SHA256.to_vec(),
        SignatureAlg::EcdsaP384Sha384 => alg_id::ECDSA_SHA384,
        SignatureAlg::RsaPkcs1Sha256 => alg_id::RSA_PKCS1_SHA256,
        SignatureAlg::RsaPssSha256 => alg_id::RSA_PSS_SHA256,
    };
    let c = contents.as_ref();
    // Every AlgorithmIdentifier above is shorter than 128 octets: one length octet.
    let mut v = Vec::with_capacity(2 + c.len());
    v.push(0x30);
    v.push(c.len() as u8);
    v.extend_from_slice(c);
    v
}

/// Splits RFC 7427 §3's AUTH data, `ASN.1 Length (1 octet) | AlgorithmIdentifier | Signature
/// Value`, into the AlgorithmIdentifier and the signature.
fn split_signature(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&len, rest) = data.split_first()?;
    rest.split_at_checked(usize::from(len))
}

/// Whom the peer's AUTH must come from, when it is more than the configuration: the CERT
/// payloads it sent and the time to validate them at.
#[derive(Debug, Clone, Copy)]
pub struct PeerCredentials<'a> {
    /// The peer's CERT payloads, in the order sent (end entity first, §3.6).
    pub certs: &'a [&'a Cert],
    /// When the exchange ran, in the driver's milliseconds (its epoch is
    /// `AuthConfig::Certificate::epoch_unix_s` in Unix seconds).
    pub now_ms: u64,
}

/// `SignedOctets = RealMessage | Nonce of the peer | prf(SK_p, RestOfIDPayload)` (§2.15).
fn signed_octets(
    prf: PrfAlg,
    real_message: &[u8],
    peer_nonce: &[u8],
    sk_p: &[u8],
    id: &Id,
) -> Vec<u8> {
    let maced_id = Prf::new(prf, sk_p).compute(&[&id.to_body()]);
    let mut v = Vec::with_capacity(real_message.len() + peer_nonce.len() + maced_id.len());
    v.extend_from_slice(real_message);
    v.extend_from_slice(peer_nonce);
    v.extend_from_slice(&maced_id);
    v
}

/// Our AUTH payload. `real_message` is our IKE_SA_INIT message, `peer_nonce` the peer's nonce
/// data, `sk_p` our SK_pi or SK_pr, `id` our identity.
pub fn make_auth(
    auth: &AuthConfig,
    prf: PrfAlg,
    real_message: &[u8],
    peer_nonce: &[u8],
    sk_p: &[u8],
    id: &Id,
) -> Result<Auth, Error> {
    Ok(match auth {
        AuthConfig::Psk(psk) => Auth {
            method: AuthMethod::SHARED_KEY_MIC,
            data: psk_auth(prf, psk, real_message, peer_nonce, sk_p, id).to_vec(),
        },
        AuthConfig::Signature { key, .. } | AuthConfig::Certificate { key, .. } => {
            let sig = key.sign(&signed_octets(prf, real_message, peer_nonce, sk_p, id))?;
            // RFC 7427 §3: ASN.1 Length (1 octet) | AlgorithmIdentifier | Signature Value.
            let a = alg_id(key.alg());
            let mut data = Vec::with_capacity(1 + a.len() + sig.len());
            data.push(a.len() as u8);
            data.extend_from_slice(&a);
            data.extend_from_slice(&sig);
            Auth { method: AuthMethod::DIGITAL_SIGNATURE, data }
        }
    })
}

/// Checks the peer's AUTH payload (arguments as for [`make_auth`], from the peer's side; with
/// certificates, `peer` holds the peer's CERT payloads, validated before the signature).
#[allow(clippy::too_many_arguments)]
pub fn verify_auth(
    auth: &AuthConfig,
    prf: PrfAlg,
    real_message: &[u8],
    peer_nonce: &[u8],
    sk_p: &[u8],
    id: &Id,
    got: &Auth,
    peer: PeerCredentials<'_>,
) -> Result<(), Error> {
    let fail = || Error::from(PeerMisbehaved::AuthenticationFailed(got.method.0));
    match auth {
        AuthConfig::Psk(psk) => {
            let want = psk_auth(prf, psk, real_message, peer_nonce, sk_p, id);
            let ok = got.method == AuthMethod::SHARED_KEY_MIC
                && crypto::provider::constant_time_eq(&want, &got.data);
            if ok { Ok(()) } else { Err(fail()) }
        }
        AuthConfig::Signature { peer_public_key, peer_alg, .. } => {
            if got.method != AuthMethod::DIGITAL_SIGNATURE {
                return Err(fail());
            }
            let (a, sig) = split_signature(&got.data).ok_or_else(fail)?;
            if a != alg_id(*peer_alg) {
                return Err(fail());
            }
            let octets = signed_octets(prf, real_message, peer_nonce, sk_p, id);
            crypto::sign::verify(*peer_alg, peer_public_key, &octets, sig).map_err(|_| fail())
        }
        AuthConfig::Certificate { trust, epoch_unix_s, .. } => {
            // RFC 7296 §3.8: the AUTH is checked with "the public key associated with the
            // certificate" — so the chain first, then the signature with its end entity's key.
            let mut chain = Vec::with_capacity(peer.certs.len());
            for c in peer.certs {
                if let Ok(Some(der)) = c.x509_der() {
                    chain.push(der);
                }
            }
            let now_unix = epoch_unix_s.saturating_add(peer.now_ms / 1000);
            trust.verify(&chain, now_unix, id).map_err(PeerMisbehaved::Certificate)?;
            let octets = signed_octets(prf, real_message, peer_nonce, sk_p, id);
            let ee = chain.first().ok_or_else(fail)?;
            if got.method != AuthMethod::DIGITAL_SIGNATURE {
                // A peer that did not see our SIGNATURE_HASH_ALGORITHMS signs as §3.8 did
                // before RFC 7427; the certificate's key type must fit the method.
                return match crate::cert::verify_classic_signature(
                    ee,
                    got.method.0,
                    &octets,
                    &got.data,
                ) {
                    Some(Ok(())) => Ok(()),
                    _ => Err(fail()),
                };
            }
            let (a, sig) = split_signature(&got.data).ok_or_else(fail)?;
            crate::cert::verify_signature(ee, a, &octets, sig).map_err(|_| fail())
        }
    }
}

/// Our CERT payloads (§3.6: one per certificate of our chain, end entity first) and, if we
/// validate certificates, the CERTREQ naming our trust anchors (§3.7), for IKE_AUTH.
pub fn cert_payloads(auth: &AuthConfig) -> Vec<wire::ikev2::Payload> {
    let AuthConfig::Certificate { chain, trust, .. } = auth else { return Vec::new() };
    let mut v: Vec<_> = chain.iter().map(|c| wire::ikev2::Payload::Cert(Cert::x509(c))).collect();
    v.push(certreq(trust));
    v
}

/// A CERTREQ for X.509 certificates naming `trust`'s anchors (§3.7).
pub fn certreq(trust: &crate::cert::TrustStore) -> wire::ikev2::Payload {
    wire::ikev2::Payload::CertReq(Cert::x509_request(trust.certreq_hashes()))
}

/// The peer's CERT payloads in `payloads`, in order.
pub fn peer_certs(payloads: &[wire::ikev2::Payload]) -> Vec<&Cert> {
    payloads
        .iter()
        .filter_map(|p| match p {
            wire::ikev2::Payload::Cert(c) => Some(c),
            _ => None,
        })
        .collect()
}

/// The constant §2.15 mixes into the pre-shared key.
pub const KEY_PAD: &[u8] = b"Key Pad for IKEv2";

/// `AUTH = prf( prf(Shared Secret, "Key Pad for IKEv2"), <SignedOctets>)`, where
/// `SignedOctets = RealMessage | Nonce of the peer | prf(SK_p, RestOfIDPayload)` (§2.15).
/// `real_message` is the sender's IKE_SA_INIT message, `peer_nonce` the other side's nonce
/// data, `sk_p` the sender's SK_pi or SK_pr, `id` the sender's identity.
pub fn psk_auth(
    prf: PrfAlg,
    psk: &[u8],
    real_message: &[u8],
    peer_nonce: &[u8],
    sk_p: &[u8],
    id: &Id,
) -> Secret {
    let maced_id = Prf::new(prf, sk_p).compute(&[&id.to_body()]);
    let key = Prf::new(prf, psk).compute(&[KEY_PAD]);
    Prf::new(prf, &key).compute(&[real_message, peer_nonce, &maced_id])
}

fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// A NAT_DETECTION_*_IP value: `SHA-1(SPIi | SPIr | IP address | port)` (§2.23).
pub fn nat_hash(spi_i: u64, spi_r: u64, addr: SocketAddr) -> [u8; 20] {
    sha1(&[
        &spi_i.to_be_bytes(),
        &spi_r.to_be_bytes(),
        &ip_bytes(addr.ip()),
        &addr.port().to_be_bytes(),
    ])
}

/// The responder's cookie secret (§2.6). The driver rotates it; the previous one stays valid
/// for a while so cookies in flight still count.
#[derive(Clone)]
pub struct CookieSecret {
    /// Its version, the cookie's first byte.
    pub version: u8,
    /// 32 random bytes.
    pub key: Zeroizing<[u8; 32]>,
}

impl std::fmt::Debug for CookieSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CookieSecret").field("version", &self.version).finish_non_exhaustive()
    }
}

impl CookieSecret {
    /// `Cookie = <VersionIDofSecret> | Hash(Ni | IPi | SPIi | <secret>)` (§2.6), with
    /// HMAC-SHA-256 keyed by the secret as the hash: 33 bytes.
    pub fn cookie(&self, ni: &[u8], ip_i: IpAddr, spi_i: u64) -> Vec<u8> {
        let mac = Prf::new(PrfAlg::HmacSha256, &self.key[..]).compute(&[
            ni,
            &ip_bytes(ip_i),
            &spi_i.to_be_bytes(),
        ]);
        let mut c = Vec::with_capacity(1 + mac.len());
        c.push(self.version);
        c.extend_from_slice(&mac);
        c
    }

    /// Whether `cookie` is ours for these values (constant-time compare).
    pub fn verify(&self, cookie: &[u8], ni: &[u8], ip_i: IpAddr, spi_i: u64) -> bool {
        crypto::provider::constant_time_eq(&self.cookie(ni, ip_i, spi_i), cookie)
    }
}

fn range_intersect<T: Ord + Copy>(a: (T, T), b: (T, T)) -> Option<(T, T)> {
    let lo = a.0.max(b.0);
    let hi = a.1.min(b.1);
    (lo <= hi).then_some((lo, hi))
}

/// The intersection of two selectors, if any (same family, overlapping addresses and ports,
/// compatible protocol where 0 means any).
pub fn ts_intersect(a: &TrafficSelector, b: &TrafficSelector) -> Option<TrafficSelector> {
    let ip_protocol = match (a.ip_protocol, b.ip_protocol) {
        (0, p) | (p, 0) => p,
        (p, q) if p == q => p,
        _ => return None,
    };
    let (start_addr, end_addr) = match (a.start_addr, a.end_addr, b.start_addr, b.end_addr) {
        (IpAddr::V4(_), IpAddr::V4(_), IpAddr::V4(_), IpAddr::V4(_))
        | (IpAddr::V6(_), IpAddr::V6(_), IpAddr::V6(_), IpAddr::V6(_)) => {
            range_intersect((a.start_addr, a.end_addr), (b.start_addr, b.end_addr))?
        }
        _ => return None,
    };
    let (start_port, end_port) =
        range_intersect((a.start_port, a.end_port), (b.start_port, b.end_port))?;
    Some(TrafficSelector { ip_protocol, start_port, end_port, start_addr, end_addr })
}

/// Responder narrowing (§2.9): every non-empty intersection of a proposed selector with a
/// configured one. Empty means TS_UNACCEPTABLE.
pub fn ts_narrow(proposed: &[TrafficSelector], ours: &[TrafficSelector]) -> Vec<TrafficSelector> {
    let mut out: Vec<TrafficSelector> = Vec::new();
    for p in proposed {
        for o in ours {
            if let Some(t) = ts_intersect(p, o).filter(|t| !out.contains(t)) {
                out.push(t);
            }
        }
    }
    out
}

/// Initiator check: each selector the responder chose lies within one we proposed.
pub fn ts_within(chosen: &[TrafficSelector], proposed: &[TrafficSelector]) -> bool {
    !chosen.is_empty()
        && chosen.iter().all(|c| proposed.iter().any(|p| ts_intersect(c, p).as_ref() == Some(c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ts(proto: u8, ports: (u16, u16), a: [u8; 4], b: [u8; 4]) -> TrafficSelector {
        TrafficSelector {
            ip_protocol: proto,
            start_port: ports.0,
            end_port: ports.1,
            start_addr: IpAddr::V4(Ipv4Addr::from(a)),
            end_addr: IpAddr::V4(Ipv4Addr::from(b)),
        }
    }

    #[test]
    fn narrowing_intersects_ranges_ports_and_protocols() {
        let any = TrafficSelector::any(false);
        let net = ts(0, (0, 65535), [10, 0, 0, 0], [10, 0, 0, 255]);
        let tcp_web = ts(6, (80, 443), [10, 0, 0, 16], [10, 0, 1, 0]);
        assert_eq!(ts_narrow(&[any], &[net]), vec![net]);
        assert_eq!(
            ts_narrow(&[tcp_web], &[net]),
            vec![ts(6, (80, 443), [10, 0, 0, 16], [10, 0, 0, 255])]
        );
        assert!(
            ts_narrow(
                &[ts(17, (0, 65535), [10, 0, 0, 0], [10, 0, 0, 9])],
                &[ts(6, (0, 65535), [10, 0, 0, 0], [10, 0, 0, 9])]
            )
            .is_empty()
        );
        assert!(ts_narrow(&[TrafficSelector::any(true)], &[net]).is_empty());
        assert!(ts_within(&[net], &[any]));
        assert!(!ts_within(&[any], &[net]));
        assert!(!ts_within(&[], &[net]));
    }

    #[test]
    fn cookies_bind_nonce_address_and_spi() {
        let s = CookieSecret { version: 3, key: Zeroizing::new([9; 32]) };
        let ip = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let c = s.cookie(b"nonce-of-sixteen", ip, 7);
        assert_eq!((c.len(), c[0]), (33, 3));
        assert!(s.verify(&c, b"nonce-of-sixteen", ip, 7));
        assert!(!s.verify(&c, b"nonce-of-sixteen", ip, 8));
        assert!(!s.verify(&c, b"nonce-of-sixteen", IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)), 7));
        let other = CookieSecret { version: 4, key: Zeroizing::new([1; 32]) };
        assert!(!other.verify(&c, b"nonce-of-sixteen", ip, 7));
    }

    /// §2.15's formula recomputed step by step with the PRF alone.
    #[test]
    fn psk_auth_is_section_2_15() {
        let p = PrfAlg::HmacSha256;
        let id = Id::fqdn("alice.example");
        let got = psk_auth(p, b"secret", b"msg1", b"nonce-r", b"sk_pi", &id);
        let inner = Prf::new(p, b"secret").compute(&[b"Key Pad for IKEv2"]);
        let maced = Prf::new(p, b"sk_pi").compute(&[&[2, 0, 0, 0], b"alice.example"]);
        let want = Prf::new(p, &inner).compute(&[b"msg1nonce-r", &maced]);
        assert_eq!(got, want);
    }
}
