//! Algorithm proposals written the way swanctl.conf writes them (`aes128gcm16-prfsha256-x25519`,
//! `aes256-sha256-ecp256`, ESP `aes128gcm16-esn`): keywords joined by `-`, several of a kind
//! allowed, each combination one suite (RFC 7296 §3.3: a proposal offers one transform of each
//! type; we send one proposal per combination, in the written order).

use crypto::{AeadAlg, CbcAlg, DhGroup, EncrAlg, EspSuite, HmacAlg, IntegAlg, PrfAlg};
use ike::suite::{ChildSuite, IkeSuite};

/// Parses one IKE proposal string into suites (every combination, in order).
pub fn ike_suites(s: &str) -> Result<Vec<IkeSuite>, String> {
    let k = keywords(s, false)?;
    if k.dh.is_empty() {
        return Err(format!(
            "{s:?}: no key exchange group (x25519, ecp256, ecp384, ecp521, modp2048, modp3072)"
        ));
    }
    let aead = k.encr.iter().all(|e| matches!(e, EncrAlg::Aead(_)));
    let integ: Vec<IntegAlg> = if aead {
        if !k.integ.is_empty() {
            return Err(format!("{s:?}: an AEAD takes no integrity algorithm"));
        }
        vec![IntegAlg::None]
    } else if k.integ.is_empty() {
        return Err(format!("{s:?}: a CBC cipher needs an integrity algorithm (sha256, …)"));
    } else {
        k.integ.clone()
    };
    // strongSwan's rule: without a PRF keyword, the PRFs matching the integrity algorithms
    // (HMAC-SHA2-256 for an AEAD).
    let prfs: Vec<PrfAlg> = if k.prf.is_empty() {
        let mut v: Vec<PrfAlg> = integ.iter().filter_map(|i| prf_of(*i)).collect();
        if v.is_empty() {
            v.push(PrfAlg::HmacSha256);
        }
        v.dedup();
        v
    } else {
        k.prf.clone()
    };
    let mut out = Vec::new();
    for &encr in &k.encr {
        for &integ in &integ {
            for &prf in &prfs {
                for &dh in &k.dh {
                    out.push(IkeSuite { encr, integ, prf, dh });
                }
            }
        }
    }
    Ok(out)
}

/// Parses one ESP proposal string into CHILD suites; a group keyword asks for PFS on rekeys.
pub fn esp_suites(s: &str) -> Result<Vec<ChildSuite>, String> {
    let k = keywords(s, true)?;
    if !k.prf.is_empty() {
        return Err(format!("{s:?}: ESP takes no PRF"));
    }
    let integ: Vec<IntegAlg> = if k.integ.is_empty() { vec![IntegAlg::None] } else { k.integ };
    let pfs: Vec<Option<DhGroup>> =
        if k.dh.is_empty() { vec![None] } else { k.dh.into_iter().map(Some).collect() };
    let mut out = Vec::new();
    for &encr in &k.encr {
        for &integ in &integ {
            let esp = EspSuite::new(encr, integ).map_err(|e| format!("{s:?}: {e}"))?;
            for &pfs in &pfs {
                out.push(ChildSuite { esp, esn: k.esn, pfs });
            }
        }
    }
    Ok(out)
}

/// An IKE suite in the swanctl words it is configured with (`aes128gcm16-prfsha256-x25519`),
/// for status.
pub fn ike_suite_name(s: &IkeSuite) -> String {
    let mut w = vec![encr_word(s.encr)];
    if let Some(i) = integ_word(s.integ) {
        w.push(i);
    }
    w.push(match s.prf {
        PrfAlg::HmacSha256 => "prfsha256",
        PrfAlg::HmacSha384 => "prfsha384",
        PrfAlg::HmacSha512 => "prfsha512",
    });
    w.push(dh_word(s.dh));
    w.join("-")
}

/// An ESP suite in swanctl words (`aes128gcm16`, `aes128-sha256-x25519-esn`), for status.
pub fn esp_suite_name(s: &ChildSuite) -> String {
    let mut w = vec![encr_word(s.esp.encr)];
    if let Some(i) = integ_word(s.esp.integ) {
        w.push(i);
    }
    if let Some(g) = s.pfs {
        w.push(dh_word(g));
    }
    if s.esn {
        w.push("esn");
    }
    w.join("-")
}

fn encr_word(e: EncrAlg) -> &'static str {
    match e {
        EncrAlg::Aead(AeadAlg::Aes128Gcm) => "aes128gcm16",
        EncrAlg::Aead(AeadAlg::Aes256Gcm) => "aes256gcm16",
        EncrAlg::Aead(AeadAlg::ChaCha20Poly1305) => "chacha20poly1305",
        EncrAlg::Cbc(CbcAlg::Aes128) => "aes128",
        EncrAlg::Cbc(CbcAlg::Aes256) => "aes256",
        EncrAlg::Cbc(CbcAlg::TripleDes) => "3des",
        EncrAlg::Null => "null",
    }
}

fn integ_word(i: IntegAlg) -> Option<&'static str> {
    match i {
        IntegAlg::None => None,
        IntegAlg::Hmac(HmacAlg::Sha256_128) => Some("sha256"),
        IntegAlg::Hmac(HmacAlg::Sha384_192) => Some("sha384"),
        IntegAlg::Hmac(HmacAlg::Sha512_256) => Some("sha512"),
        IntegAlg::Hmac(HmacAlg::Sha1_96) => Some("sha1"),
        IntegAlg::Aes128Gmac => Some("aes128gmac"),
        IntegAlg::Aes256Gmac => Some("aes256gmac"),
    }
}

fn dh_word(g: DhGroup) -> &'static str {
    match g {
        DhGroup::Curve25519 => "x25519",
        DhGroup::Ecp256 => "ecp256",
        DhGroup::Ecp384 => "ecp384",
        DhGroup::Ecp521 => "ecp521",
        DhGroup::Modp2048 => "modp2048",
        DhGroup::Modp3072 => "modp3072",
    }
}

#[derive(Default)]
struct Keywords {
    encr: Vec<EncrAlg>,
    integ: Vec<IntegAlg>,
    prf: Vec<PrfAlg>,
    dh: Vec<DhGroup>,
    esn: bool,
}

fn keywords(s: &str, esp: bool) -> Result<Keywords, String> {
    let mut k = Keywords::default();
    for w in s.split('-').map(str::trim) {
        match w {
            "aes128gcm16" | "aes128gcm" => k.encr.push(EncrAlg::Aead(AeadAlg::Aes128Gcm)),
            "aes256gcm16" | "aes256gcm" => k.encr.push(EncrAlg::Aead(AeadAlg::Aes256Gcm)),
            "chacha20poly1305" => k.encr.push(EncrAlg::Aead(AeadAlg::ChaCha20Poly1305)),
            "aes128" | "aes128cbc" => k.encr.push(EncrAlg::Cbc(CbcAlg::Aes128)),
            "aes256" | "aes256cbc" => k.encr.push(EncrAlg::Cbc(CbcAlg::Aes256)),
            "sha256" | "sha2_256" => k.integ.push(IntegAlg::Hmac(HmacAlg::Sha256_128)),
            "sha384" | "sha2_384" => k.integ.push(IntegAlg::Hmac(HmacAlg::Sha384_192)),
            "sha512" | "sha2_512" => k.integ.push(IntegAlg::Hmac(HmacAlg::Sha512_256)),
            "prfsha256" => k.prf.push(PrfAlg::HmacSha256),
            "prfsha384" => k.prf.push(PrfAlg::HmacSha384),
            "prfsha512" => k.prf.push(PrfAlg::HmacSha512),
            "x25519" | "curve25519" => k.dh.push(DhGroup::Curve25519),
            "ecp256" => k.dh.push(DhGroup::Ecp256),
            "ecp384" => k.dh.push(DhGroup::Ecp384),
            "ecp521" => k.dh.push(DhGroup::Ecp521),
            "modp2048" => k.dh.push(DhGroup::Modp2048),
            "modp3072" => k.dh.push(DhGroup::Modp3072),
            "esn" if esp => k.esn = true,
            "noesn" if esp => {}
            "modp768" | "modp1024" | "modp1536" | "modp4096" | "modp6144" | "modp8192" => {
                return Err(format!(
                    "{w:?}: this MODP group is not implemented; use modp2048 or modp3072 (or \
                     x25519, ecp256, ecp384, ecp521)"
                ));
            }
            "" => return Err(format!("{s:?}: empty keyword")),
            other => {
                return Err(format!(
                    "{other:?} in {s:?} is not a known algorithm (encryption: aes128gcm16, \
                     aes256gcm16, chacha20poly1305, aes128, aes256; integrity: sha256, sha384, \
                     sha512; prf: prfsha256, prfsha384, prfsha512; group: x25519, ecp256, \
                     ecp384, ecp521, modp2048, modp3072{})",
                    if esp { "; esn, noesn" } else { "" }
                ));
            }
        }
    }
    if k.encr.is_empty() {
        return Err(format!("{s:?}: no encryption algorithm"));
    }
    Ok(k)
}

fn prf_of(i: IntegAlg) -> Option<PrfAlg> {
    match i {
        IntegAlg::Hmac(HmacAlg::Sha256_128) => Some(PrfAlg::HmacSha256),
        IntegAlg::Hmac(HmacAlg::Sha384_192) => Some(PrfAlg::HmacSha384),
        IntegAlg::Hmac(HmacAlg::Sha512_256) => Some(PrfAlg::HmacSha512),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swanctl_examples() {
        let s = ike_suites("aes128gcm16-prfsha256-x25519").unwrap();
        assert_eq!(
            s,
            vec![IkeSuite {
                encr: EncrAlg::Aead(AeadAlg::Aes128Gcm),
                integ: IntegAlg::None,
                prf: PrfAlg::HmacSha256,
                dh: DhGroup::Curve25519
            }]
        );
        // CBC: the PRF follows the integrity algorithm; two groups give two suites.
        let s = ike_suites("aes256-sha384-ecp256-ecp384").unwrap();
        assert_eq!(s.len(), 2);
        assert!(s.iter().all(|x| x.prf == PrfAlg::HmacSha384));
        assert_eq!(s[1].dh, DhGroup::Ecp384);
        let e = esp_suites("aes128gcm16-x25519-esn").unwrap();
        assert_eq!(e.len(), 1);
        assert!(e[0].esn);
        assert_eq!(e[0].pfs, Some(DhGroup::Curve25519));
        assert_eq!(esp_suites("aes128-sha256").unwrap()[0].pfs, None);
    }

    /// strongSwan's names for groups 14, 15 and 21 (swanctl.conf "Key Exchange Methods"), for
    /// IKE and for PFS on CHILD rekeys.
    #[test]
    fn modp_and_ecp521_names() {
        let s = ike_suites("aes256-sha256-modp2048-modp3072-ecp521").unwrap();
        let groups: Vec<DhGroup> = s.iter().map(|x| x.dh).collect();
        assert_eq!(groups, [DhGroup::Modp2048, DhGroup::Modp3072, DhGroup::Ecp521]);
        assert_eq!(s[0].dh.ike_id(), 14);
        let e = esp_suites("aes128gcm16-modp2048").unwrap();
        assert_eq!(e[0].pfs, Some(DhGroup::Modp2048));
    }

    /// The names status prints read back as the same suites.
    #[test]
    fn names_round_trip() {
        for p in [
            "aes128gcm16-prfsha256-x25519",
            "aes256-sha384-prfsha384-ecp384",
            "aes256-sha256-prfsha256-modp2048",
            "aes256gcm16-prfsha384-modp3072",
            "aes256gcm16-prfsha512-ecp521",
        ] {
            let s = ike_suites(p).unwrap();
            assert_eq!(ike_suite_name(&s[0]), p);
        }
        for p in ["aes128gcm16", "aes128-sha256-x25519-esn", "aes128gcm16-modp2048"] {
            let s = esp_suites(p).unwrap();
            assert_eq!(esp_suite_name(&s[0]), p);
        }
    }

    #[test]
    fn errors_name_the_word() {
        assert!(ike_suites("aes128gcm16").unwrap_err().contains("no key exchange group"));
        assert!(ike_suites("aes128-x25519").unwrap_err().contains("needs an integrity"));
        assert!(ike_suites("aes128-sha256-modp1024").unwrap_err().contains("\"modp1024\""));
        assert!(ike_suites("blowfish-sha256-x25519").unwrap_err().contains("\"blowfish\""));
        assert!(esp_suites("aes128gcm16-prfsha256").unwrap_err().contains("no PRF"));
        assert!(ike_suites("aes128gcm16-sha256-x25519").unwrap_err().contains("AEAD"));
    }
}
