//! Host Identity Tags: ORCHIDv2 (RFC 7343) over a host identity (RFC 7401 §3.1).
//!
//! ```text
//! ORCHID := Prefix (28 bits: 2001:20::/28) | OGA ID (4 bits) | Encode_96(Hash(Context ID | Input))
//! ```
//! with `Input` the host identity as the HOST_ID parameter carries it (§5.2.9: for ECDSA the
//! curve ID followed by the uncompressed point), `Hash` the HIT suite's RHASH, and
//! `Encode_96` the middle 96 bits of the digest (RFC 7343 §2; for SHA-256 bytes 10..22, for
//! SHA-384 bytes 18..30, for SHA-1 bytes 4..16).

use crate::suite::HitSuite;
use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

/// RFC 7401 §3.2 / RFC 7343 §2: the Context ID HIP registered for ORCHIDv2 HITs.
pub const HIT_CONTEXT_ID: [u8; 16] = [
    0xF0, 0xEF, 0xF0, 0x2F, 0xBF, 0xF4, 0x3D, 0x0F, 0xE7, 0x93, 0x0C, 0x3C, 0x6E, 0x61, 0x74, 0xEA,
];

/// The ORCHIDv2 prefix 2001:20::/28 (RFC 7343 §6): its first 28 bits.
const PREFIX: [u8; 4] = [0x20, 0x01, 0x00, 0x20];

/// A Host Identity Tag: 128 bits, written and routed as an IPv6 address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostIdentityTag(pub [u8; 16]);

impl HostIdentityTag {
    /// The HIT of a host identity (`host_id`: the HOST_ID parameter's Host Identity field)
    /// under `suite`.
    pub fn from_host_id(suite: HitSuite, host_id: &[u8]) -> HostIdentityTag {
        let digest = suite.rhash(&[&HIT_CONTEXT_ID, host_id]);
        // Encode_96: the middle 96 bits; every RHASH length here leaves a whole number of
        // bytes on each side.
        let start = (digest.len() - 12) / 2;
        let mut t = [0u8; 16];
        t[..4].copy_from_slice(&PREFIX);
        t[3] |= suite.id() & 0x0f;
        t[4..].copy_from_slice(&digest[start..start + 12]);
        HostIdentityTag(t)
    }

    /// Whether the tag lies in the ORCHIDv2 prefix.
    pub fn is_orchid(&self) -> bool {
        self.0[..3] == PREFIX[..3] && self.0[3] & 0xf0 == PREFIX[3]
    }

    /// The HIT suite its OGA ID names (None: not an ORCHID, or an unknown suite).
    pub fn suite(&self) -> Option<HitSuite> {
        if self.is_orchid() { HitSuite::from_id(self.0[3] & 0x0f) } else { None }
    }

    /// The tag as an IPv6 address.
    pub fn to_ipv6(self) -> Ipv6Addr {
        Ipv6Addr::from(self.0)
    }
}

impl From<Ipv6Addr> for HostIdentityTag {
    fn from(a: Ipv6Addr) -> HostIdentityTag {
        HostIdentityTag(a.octets())
    }
}

impl fmt::Display for HostIdentityTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_ipv6().fmt(f)
    }
}

impl fmt::Debug for HostIdentityTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HIT({self})")
    }
}

impl FromStr for HostIdentityTag {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let a: Ipv6Addr = s.parse().map_err(|_| format!("{s:?} is not an IPv6 address"))?;
        let t = HostIdentityTag::from(a);
        if t.is_orchid() {
            Ok(t)
        } else {
            Err(format!("{s} is not in the HIT prefix 2001:20::/28"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Independent computation in the test: SHA-384 of the context ID and input by
    /// aws-lc-rs's digest directly, bits 144..240 placed after 2001:002/28 and OGA 2.
    #[test]
    fn orchid_layout_for_sha384() {
        let input = b"\x00\x01\x04any host identity bytes";
        let t = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, input);
        let mut all = HIT_CONTEXT_ID.to_vec();
        all.extend_from_slice(input);
        let d = crypto::digest::sha384(&[&all]);
        assert_eq!(&t.0[..4], &[0x20, 0x01, 0x00, 0x22]);
        assert_eq!(&t.0[4..], &d[18..30]);
        assert!(t.is_orchid());
        assert_eq!(t.suite(), Some(HitSuite::EcdsaSha384));
        assert!(t.to_string().starts_with("2001:22:"), "{t}");
        assert_eq!(t.to_string().parse::<HostIdentityTag>(), Ok(t));
    }

    #[test]
    fn sha256_and_sha1_take_their_middle_bits() {
        let t = HostIdentityTag::from_host_id(HitSuite::RsaDsaSha256, b"x");
        let d = crypto::digest::sha256(&[&HIT_CONTEXT_ID, b"x"]);
        assert_eq!(&t.0[4..], &d[10..22]);
        assert_eq!(t.0[3], 0x21);
        let t = HostIdentityTag::from_host_id(HitSuite::EcdsaLowSha1, b"x");
        let d = crypto::digest::sha1(&[&HIT_CONTEXT_ID, b"x"]);
        assert_eq!(&t.0[4..], &d[4..16]);
        assert_eq!(t.0[3], 0x23);
    }

    #[test]
    fn non_orchids_are_refused() {
        assert!("2001:db8::1".parse::<HostIdentityTag>().is_err());
        assert!("2001:30::1".parse::<HostIdentityTag>().is_err());
        assert!("nonsense".parse::<HostIdentityTag>().is_err());
        let t = HostIdentityTag::from(Ipv6Addr::new(0x2001, 0x2f, 0, 0, 0, 0, 0, 1));
        assert_eq!(t.suite(), None, "OGA 15 is no suite");
    }
}
