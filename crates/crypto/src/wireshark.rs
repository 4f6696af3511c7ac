//! Wireshark's words for our ESP algorithms, as its `esp_sa` UAT table takes them (Wireshark
//! 4.0, epan/dissectors/packet-ipsec.c: 8 columns, no ESN, no ChaCha20-Poly1305, no GMAC), so
//! that every key export (`hipsec pcap wireshark-keys`, a HIP node's debug export) writes the
//! same lines.

use crate::alg::{AeadAlg, CbcAlg, EncrAlg, EspSuite, HmacAlg, IntegAlg};
use std::net::IpAddr;

/// The encryption column, or None if Wireshark 4.0 has no such algorithm.
pub fn encryption_name(e: EncrAlg) -> Option<&'static str> {
    Some(match e {
        EncrAlg::Null => "NULL",
        EncrAlg::Cbc(CbcAlg::Aes128 | CbcAlg::Aes256) => "AES-CBC [RFC3602]",
        EncrAlg::Cbc(CbcAlg::TripleDes) => "TripleDES-CBC [RFC2451]",
        EncrAlg::Aead(AeadAlg::Aes128Gcm | AeadAlg::Aes256Gcm) => {
            "AES-GCM with 16 octet ICV [RFC4106]"
        }
        EncrAlg::Aead(AeadAlg::ChaCha20Poly1305) => return None,
    })
}

/// The authentication column, or None if Wireshark 4.0 has no such algorithm.
pub fn auth_name(i: IntegAlg) -> Option<&'static str> {
    Some(match i {
        IntegAlg::None => "NULL",
        IntegAlg::Hmac(HmacAlg::Sha1_96) => "HMAC-SHA-1-96 [RFC2404]",
        IntegAlg::Hmac(HmacAlg::Sha256_128) => "HMAC-SHA-256-128 [RFC4868]",
        IntegAlg::Hmac(HmacAlg::Sha384_192) => "HMAC-SHA-384-192 [RFC4868]",
        IntegAlg::Hmac(HmacAlg::Sha512_256) => "HMAC-SHA-512-256 [RFC4868]",
        IntegAlg::Aes128Gmac | IntegAlg::Aes256Gmac => return None,
    })
}

fn key_hex(k: &[u8]) -> String {
    if k.is_empty() {
        String::new()
    } else {
        let mut s = String::from("0x");
        for b in k {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }
}

/// One `esp_sa` record: `"IPv4","SRC","DST","0xSPI","ENC","0xKEY","AUTH","0xKEY"`, or None if
/// Wireshark cannot decrypt this suite. `src`/`dst` are the addresses on the wire.
pub fn esp_sa_record(
    src: IpAddr,
    dst: IpAddr,
    spi: u32,
    suite: EspSuite,
    enc_key: &[u8],
    auth_key: &[u8],
) -> Option<String> {
    let (enc, auth) = (encryption_name(suite.encr)?, auth_name(suite.integ)?);
    let family = if src.is_ipv4() { "IPv4" } else { "IPv6" };
    Some(format!(
        "\"{family}\",\"{src}\",\"{dst}\",\"0x{spi:08x}\",\"{enc}\",\"{}\",\"{auth}\",\"{}\"",
        key_hex(enc_key),
        key_hex(auth_key)
    ))
}
