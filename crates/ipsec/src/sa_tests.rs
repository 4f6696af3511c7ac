//! SA tests: what the per-packet layout keeps equal to the parameters.
use super::*;
use crypto::default_provider;

/// The IPv4 outer header sealing builds from line 1 is the template line 4 keeps.
#[test]
fn ipv4_outer_header_is_the_template() {
    for (esp, proto) in [(true, proto::ESP), (false, proto::AH)] {
        let protocol = if esp {
            Protocol::Esp("aes128gcm".parse().unwrap_or_else(|e| panic!("{e}")))
        } else {
            Protocol::Ah(IntegAlg::Hmac(crypto::HmacAlg::Sha256_128))
        };
        let key = |n: usize| vec![7u8; n];
        let p = SaParams {
            spi: Spi(0x1234),
            protocol,
            mode: Mode::Tunnel,
            src: "192.0.2.1".parse().unwrap_or_else(|e| panic!("{e}")),
            dst: "198.51.100.200".parse().unwrap_or_else(|e| panic!("{e}")),
            enc_key: Zeroizing::new(key(if esp { 20 } else { 0 })),
            auth_key: Zeroizing::new(key(if esp { 0 } else { 32 })),
            esn: false,
            replay_window: 64,
            soft: Lifetime::default(),
            hard: Lifetime::default(),
        };
        let sa = SecurityAssociation::new(&p, default_provider(), Time(0))
            .unwrap_or_else(|e| panic!("{e}"));
        let (template, len) = outer_template(p.src, p.dst, proto);
        assert_eq!(len, 20);
        assert_eq!(sa.outer_v4_header()[..], template[..20]);
        assert!(!sa.reads_outer_tail());
    }
}
