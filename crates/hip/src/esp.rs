//! ESP for HIP (RFC 7402): the ESP_TRANSFORM suites our engine has, and the ESP keys drawn from
//! KEYMAT (§7): at ESP_INFO's KEYMAT index, the SA-gl encryption and authentication keys, then
//! the SA-lg ones, where "gl" is the SA carrying traffic from the host with the greater HIT to
//! the one with the lesser.

use crate::error::Error;
use crate::hit::HostIdentityTag;
use crate::keymat::Keymat;
use crypto::EspSuite as Suite;
use wire::hip::EspSuite;
use zeroize::Zeroizing;

/// Our engine's suite for a HIP ESP_TRANSFORM suite ID (RFC 7402 §5.1.2 and its IANA
/// registry), or None. AES-GCM with an 8-octet ICV, CCM, CMAC and GMAC are not offered.
pub fn engine_suite(id: EspSuite) -> Option<Suite> {
    let name = match id {
        EspSuite::AES_128_CBC_HMAC_SHA1 => "aes128cbc-sha1",
        EspSuite::NULL_HMAC_SHA256 => "null-sha256",
        EspSuite::AES_128_CBC_HMAC_SHA256 => "aes128cbc-sha256",
        EspSuite::AES_256_CBC_HMAC_SHA256 => "aes256cbc-sha256",
        EspSuite::AES_GCM_16 => "aes128gcm",
        _ => return None,
    };
    name.parse().ok()
}

/// Parses a suite name of the config (`aes128gcm`, `aes128cbc-sha256`, ...) to its HIP ID.
pub fn suite_id(name: &str) -> Option<EspSuite> {
    [
        EspSuite::AES_GCM_16,
        EspSuite::AES_128_CBC_HMAC_SHA256,
        EspSuite::AES_256_CBC_HMAC_SHA256,
        EspSuite::NULL_HMAC_SHA256,
        EspSuite::AES_128_CBC_HMAC_SHA1,
    ]
    .into_iter()
    .find(|&id| {
        let want: Result<Suite, _> = name.parse();
        engine_suite(id).is_some_and(|s| want.as_ref().is_ok_and(|w| *w == s))
    })
}

/// The keys of one ESP SA pair between two HITs.
pub struct EspKeys {
    /// The suite.
    pub suite: Suite,
    /// SPI we receive on (our ESP_INFO's NEW SPI).
    pub spi_in: u32,
    /// SPI we send with (the peer's NEW SPI).
    pub spi_out: u32,
    /// Inbound encryption key (with the salt for AEADs).
    pub enc_in: Zeroizing<Vec<u8>>,
    /// Inbound integrity key.
    pub auth_in: Zeroizing<Vec<u8>>,
    /// Outbound encryption key.
    pub enc_out: Zeroizing<Vec<u8>>,
    /// Outbound integrity key.
    pub auth_out: Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for EspKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EspKeys")
            .field("suite", &self.suite)
            .field("spi_in", &format_args!("{:08x}", self.spi_in))
            .field("spi_out", &format_args!("{:08x}", self.spi_out))
            .finish_non_exhaustive()
    }
}

/// Octets of KEYMAT one ESP SA pair takes.
pub fn keymat_len(suite: &Suite) -> usize {
    2 * (suite.encr.key_len() + suite.integ.key_len())
}

/// Reads an SA pair's keys at `index` (RFC 7402 §7); the next set would start at
/// `index + keymat_len(&suite)`.
pub fn draw(
    km: &Keymat,
    index: usize,
    suite: Suite,
    me: &HostIdentityTag,
    peer: &HostIdentityTag,
    spi_in: u32,
    spi_out: u32,
) -> Result<EspKeys, Error> {
    let (e, a) = (suite.encr.key_len(), suite.integ.key_len());
    let (enc_gl, auth_gl) = (km.read(index, e)?, km.read(index + e, a)?);
    let (enc_lg, auth_lg) = (km.read(index + e + a, e)?, km.read(index + 2 * e + a, a)?);
    // We send on SA-gl when our HIT is the greater.
    let (enc_out, auth_out, enc_in, auth_in) = if me.0 > peer.0 {
        (enc_gl, auth_gl, enc_lg, auth_lg)
    } else {
        (enc_lg, auth_lg, enc_gl, auth_gl)
    };
    Ok(EspKeys { suite, spi_in, spi_out, enc_in, auth_in, enc_out, auth_out })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_map_both_ways() {
        for (id, name) in [
            (EspSuite::AES_GCM_16, "aes128gcm"),
            (EspSuite::AES_128_CBC_HMAC_SHA256, "aes128cbc-sha256"),
            (EspSuite::NULL_HMAC_SHA256, "null-sha256"),
            (EspSuite::AES_128_CBC_HMAC_SHA1, "aes128cbc-sha1"),
        ] {
            assert!(engine_suite(id).is_some(), "{id}");
            assert_eq!(suite_id(name), Some(id), "{name}");
        }
        assert_eq!(engine_suite(EspSuite::AES_GCM_8), None);
        assert_eq!(suite_id("chacha20poly1305"), None);
    }

    #[test]
    fn the_two_ends_get_mirrored_keys() {
        let a = HostIdentityTag([0x20, 1, 0, 0x22, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]);
        let b = HostIdentityTag([0x20, 1, 0, 0x22, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
        let suite = engine_suite(EspSuite::AES_128_CBC_HMAC_SHA256).unwrap();
        let km = || {
            Keymat::derive(crypto::PrfAlg::HmacSha384, b"k", &a, &b, &[1; 48], &[2; 48], 400)
                .unwrap()
        };
        let ka = draw(&km(), 128, suite, &a, &b, 1, 2).unwrap();
        let kb = draw(&km(), 128, suite, &b, &a, 2, 1).unwrap();
        assert!(draw(&km(), 390, suite, &a, &b, 1, 2).is_err());
        assert_eq!(*ka.enc_out, *kb.enc_in);
        assert_eq!(*ka.auth_out, *kb.auth_in);
        assert_eq!(*kb.enc_out, *ka.enc_in);
        assert_ne!(*ka.enc_out, *ka.enc_in);
        assert_eq!(ka.enc_out.len(), 16);
        assert_eq!(ka.auth_out.len(), 32);
        assert!(!format!("{ka:?}").contains(&hex::encode(&*ka.enc_out)));
    }
}
