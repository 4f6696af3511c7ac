//! `hipsec pcap wireshark-keys`: the SA file as Wireshark's `esp_sa` UAT table, so that Wireshark
//! and tshark decrypt what `hipsec pcap seal` wrote. Column names and algorithm strings are those of
//! Wireshark 4.0's epan/dissectors/packet-ipsec.c (8 columns; no ESN, no ChaCha20).

use crate::safile::SaEntry;
use crypto::{AeadAlg, CbcAlg, EncrAlg, HmacAlg, IntegAlg};
use ipsec::sa::Protocol;

/// One line of the table, or the reason an SA cannot be described to Wireshark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLine {
    /// A UAT record: `"IPv4","SRC","DST","0xSPI","ENC","0xKEY","AUTH","0xKEY"`.
    Record(String),
    /// A `#` comment: why this SA is left out or will not fully decode.
    Comment(String),
}

fn encryption_name(e: EncrAlg) -> Option<&'static str> {
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

fn auth_name(i: IntegAlg) -> Option<&'static str> {
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
    if k.is_empty() { String::new() } else { format!("0x{}", hex::encode(k)) }
}

/// The `esp_sa` lines for every SA of the file.
pub fn esp_sa_lines(entries: &[SaEntry]) -> Vec<KeyLine> {
    let mut out = Vec::new();
    for e in entries {
        let p = &e.params;
        let suite = match p.protocol {
            Protocol::Esp(s) => s,
            Protocol::Ah(_) => {
                out.push(KeyLine::Comment(format!(
                    "spi {} (line {}): AH needs no keys to dissect; Wireshark has no AH key table",
                    p.spi, e.line
                )));
                continue;
            }
        };
        let (Some(enc), Some(auth)) = (encryption_name(suite.encr), auth_name(suite.integ)) else {
            out.push(KeyLine::Comment(format!(
                "spi {} (line {}): {suite} is not in Wireshark 4.0's esp_sa algorithm list",
                p.spi, e.line
            )));
            continue;
        };
        if p.esn {
            let what =
                if matches!(suite.encr, EncrAlg::Aead(_)) { "decryption" } else { "the ICV check" };
            out.push(KeyLine::Comment(format!(
                "spi {} (line {}): ESN is on; Wireshark 4.0 ignores ESN, so {what} will fail",
                p.spi, e.line
            )));
        }
        let family = if p.src.is_ipv4() { "IPv4" } else { "IPv6" };
        out.push(KeyLine::Record(format!(
            "\"{family}\",\"{}\",\"{}\",\"0x{:08x}\",\"{enc}\",\"{}\",\"{auth}\",\"{}\"",
            p.src,
            p.dst,
            p.spi.0,
            key_hex(&p.enc_key),
            key_hex(&p.auth_key)
        )));
    }
    out
}

/// The table as the text of an `esp_sa` file (comments first, so the file stays loadable).
pub fn esp_sa_file(entries: &[SaEntry]) -> String {
    let lines = esp_sa_lines(entries);
    let mut s = String::from(
        "# esp_sa UAT for Wireshark/tshark, written by `hipsec pcap wireshark-keys`\n",
    );
    for l in &lines {
        if let KeyLine::Comment(c) = l {
            s.push_str("# ");
            s.push_str(c);
            s.push('\n');
        }
    }
    for l in &lines {
        if let KeyLine::Record(r) = l {
            s.push_str(r);
            s.push('\n');
        }
    }
    s
}
