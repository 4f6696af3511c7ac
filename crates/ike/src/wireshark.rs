//! Key-table lines that let Wireshark/tshark decrypt a capture: `ikev2_decryption_table` for the
//! IKE SA's SK payloads (RFC 7296 §3.14) and `esp_sa` for a CHILD SA pair. The algorithm names and
//! the line layout are those strongSwan's save-keys plugin writes (src/libcharon/plugins/
//! save_keys/save_keys_listener.c), which are Wireshark's UAT names. Secrets: the node prints
//! them only behind an explicit debug switch. Wireshark has no name for ChaCha20-Poly1305 here:
//! those SAs give `None`.

use crate::config::ChildSaKeys;
use crate::sa::IkeSa;
use crypto::{AeadAlg, CbcAlg, EncrAlg, HmacAlg, IntegAlg};
use std::net::IpAddr;

fn ike_encr_name(e: EncrAlg) -> Option<&'static str> {
    Some(match e {
        EncrAlg::Cbc(CbcAlg::Aes128) => "AES-CBC-128 [RFC3602]",
        EncrAlg::Cbc(CbcAlg::Aes256) => "AES-CBC-256 [RFC3602]",
        EncrAlg::Aead(AeadAlg::Aes128Gcm) => "AES-GCM-128 with 16 octet ICV [RFC5282]",
        EncrAlg::Aead(AeadAlg::Aes256Gcm) => "AES-GCM-256 with 16 octet ICV [RFC5282]",
        _ => return None,
    })
}

fn ike_integ_name(i: IntegAlg) -> Option<&'static str> {
    Some(match i {
        IntegAlg::None => "NONE [RFC4306]",
        IntegAlg::Hmac(HmacAlg::Sha256_128) => "HMAC_SHA2_256_128 [RFC4868]",
        IntegAlg::Hmac(HmacAlg::Sha384_192) => "HMAC_SHA2_384_192 [RFC4868]",
        IntegAlg::Hmac(HmacAlg::Sha512_256) => "HMAC_SHA2_512_256 [RFC4868]",
        _ => return None,
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The IKE SA's `ikev2_decryption_table` line:
/// `SPIi,SPIr,SK_ei,SK_er,"encryption",SK_ai,SK_ar,"integrity"`.
pub fn ikev2_decryption_line(ike: &IkeSa) -> Option<String> {
    let enc = ike_encr_name(ike.suite.encr)?;
    let integ = ike_integ_name(ike.suite.integ)?;
    let k = &ike.keys;
    Some(format!(
        "{:016x},{:016x},{},{},\"{enc}\",{},{},\"{integ}\"",
        ike.spi_i,
        ike.spi_r,
        hex(&k.sk_ei),
        hex(&k.sk_er),
        hex(&k.sk_ai),
        hex(&k.sk_ar)
    ))
}

/// The two `esp_sa` lines of a CHILD SA pair, inbound SA first, in the words
/// `crypto::wireshark` gives every key export of ours (Wireshark 4.0's column values); `local`
/// and `remote` are the outer addresses. None for a suite Wireshark cannot decrypt.
pub fn esp_sa_lines(child: &ChildSaKeys, local: IpAddr, remote: IpAddr) -> Option<[String; 2]> {
    let rec = crypto::wireshark::esp_sa_record;
    let esp = child.suite.esp;
    Some([
        rec(remote, local, child.spi_in, esp, &child.enc_key_in, &child.auth_key_in)?,
        rec(local, remote, child.spi_out, esp, &child.enc_key_out, &child.auth_key_out)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;
    use crate::suite::ChildSuite;
    use crypto::EspSuite;
    use zeroize::Zeroizing;

    #[test]
    fn esp_lines_name_algorithms_as_wireshark_does() {
        let esp = EspSuite::new(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None).unwrap();
        let child = ChildSaKeys {
            suite: ChildSuite { esp, esn: false, pfs: None },
            mode: Mode::Tunnel,
            spi_in: 0xc0ffee01,
            spi_out: 0x0000abcd,
            enc_key_in: Zeroizing::new(vec![1; 20]),
            auth_key_in: Zeroizing::new(Vec::new()),
            enc_key_out: Zeroizing::new(vec![2; 20]),
            auth_key_out: Zeroizing::new(Vec::new()),
            local_ts: Vec::new(),
            remote_ts: Vec::new(),
        };
        let [inb, outb] =
            esp_sa_lines(&child, "192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap())
                .unwrap();
        assert_eq!(
            inb,
            format!(
                "\"IPv4\",\"192.0.2.2\",\"192.0.2.1\",\"0xc0ffee01\",\"AES-GCM with 16 octet ICV [RFC4106]\",\"0x{}\",\"NULL\",\"\"",
                "01".repeat(20)
            )
        );
        assert!(outb.starts_with("\"IPv4\",\"192.0.2.1\",\"192.0.2.2\",\"0x0000abcd\""));
        assert_eq!(ike_encr_name(EncrAlg::Aead(AeadAlg::ChaCha20Poly1305)), None);
    }
}
