//! `hipsec pcap wireshark-keys`: the SA file as Wireshark's `esp_sa` UAT table, so that Wireshark
//! and tshark decrypt what `hipsec pcap seal` wrote. Column names and algorithm strings are those of
//! Wireshark 4.0's epan/dissectors/packet-ipsec.c (8 columns; no ESN, no ChaCha20).

use crate::safile::SaEntry;
use crypto::EncrAlg;
use crypto::wireshark::esp_sa_record;
use ipsec::sa::Protocol;

/// One line of the table, or the reason an SA cannot be described to Wireshark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLine {
    /// A UAT record: `"IPv4","SRC","DST","0xSPI","ENC","0xKEY","AUTH","0xKEY"`.
    Record(String),
    /// A `#` comment: why this SA is left out or will not fully decode.
    Comment(String),
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
        let Some(record) = esp_sa_record(p.src, p.dst, p.spi.0, suite, &p.enc_key, &p.auth_key)
        else {
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
        out.push(KeyLine::Record(record));
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
