//! Authentication and anti-DoS values of the initial exchanges: the PSK AUTH payload (RFC 7296
//! §2.15), NAT detection hashes (§2.23), stateless cookies (§2.6), and traffic-selector
//! narrowing (§2.9).

use crate::keys::Secret;
use crypto::{Prf, PrfAlg, digest::sha1};
use std::net::{IpAddr, SocketAddr};
use wire::ikev2::{Id, TrafficSelector};
use zeroize::Zeroizing;

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
