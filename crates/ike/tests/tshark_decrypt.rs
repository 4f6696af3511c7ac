//! Cross-check against Wireshark's own IKEv2 decryption: the four messages of the initial
//! exchanges and a CHILD SA rekey go into a pcap (UDP 500 over IPv4), our
//! `ikev2_decryption_table` line goes to tshark, and tshark must decrypt every SK payload and
//! find the payloads we put inside. Skips, saying so, without tshark.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use crypto::{AeadAlg, CbcAlg, DhGroup, EncrAlg, EspSuite, HmacAlg, IntegAlg, PrfAlg};
use ike::auth::CookieSecret;
use ike::{
    AuthConfig, AuthOutcome, ChildSuite, Config, Endpoints, IkeSuite, InitOutcome, Mode, Request,
    Responder, SaInitNext, Session, initiator,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use wire::ikev2::{Id, TrafficSelector};
use zeroize::Zeroizing;

fn config(local: &str, remote: &str, suite: IkeSuite) -> Config {
    Config {
        local_id: Id::fqdn(local),
        remote_id: Some(Id::fqdn(remote)),
        auth: AuthConfig::Psk(Zeroizing::new(b"tshark".to_vec())),
        ike_suites: vec![suite],
        more_children: Vec::new(),
        peer_eap: None,
        child_suites: vec![ChildSuite {
            esp: EspSuite::new(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None).unwrap(),
            esn: false,
            pfs: Some(DhGroup::Curve25519),
        }],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    }
}

/// A classic pcap of IPv4/UDP datagrams (`from_a` says the direction), Ethernet-less (LINKTYPE_RAW).
fn pcap(datagrams: &[(bool, Vec<u8>)]) -> Vec<u8> {
    let mut f = Vec::new();
    for v in [
        0xa1b2c3d4u32.to_le_bytes(),
        [2, 0, 4, 0],
        [0; 4],
        [0; 4],
        65535u32.to_le_bytes(),
        101u32.to_le_bytes(),
    ] {
        f.extend_from_slice(&v);
    }
    for (n, (from_a, d)) in datagrams.iter().enumerate() {
        let (src, dst) = if *from_a {
            ([192, 0, 2, 1], [192, 0, 2, 2])
        } else {
            ([192, 0, 2, 2], [192, 0, 2, 1])
        };
        let total = 20 + 8 + d.len();
        let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let mut sum: u32 = ip.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        let mut udp = vec![0x01, 0xf4, 0x01, 0xf4];
        udp.extend_from_slice(&((8 + d.len()) as u16).to_be_bytes());
        udp.extend_from_slice(&[0, 0]);
        for v in [
            (n as u32).to_le_bytes(),
            [0; 4],
            (total as u32).to_le_bytes(),
            (total as u32).to_le_bytes(),
        ] {
            f.extend_from_slice(&v);
        }
        f.extend_from_slice(&ip);
        f.extend_from_slice(&udp);
        f.extend_from_slice(d);
    }
    f
}

fn check(suite: IkeSuite, name: &str) {
    let p = crypto::default_provider();
    let a = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 500);
    let b = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)), 500);
    let (st, m1) = initiator::start(
        config("a.example", "b.example", suite),
        p,
        Endpoints { local: a, remote: b },
        0,
    )
    .unwrap();
    let r = Responder::new(
        config("b.example", "a.example", suite),
        p,
        CookieSecret { version: 1, key: Zeroizing::new([4; 32]) },
    )
    .unwrap();
    let InitOutcome::HalfOpen(half, m2) =
        r.handle_init(0, Endpoints { local: b, remote: a }, &m1, false)
    else {
        panic!()
    };
    let SaInitNext::Auth(auth, m3) = st.handle(0, &m2).unwrap() else { panic!() };
    let AuthOutcome::Established(eb, m4) = half.handle(&m3).unwrap() else { panic!() };
    let ea = auth.handle(&m4).unwrap();
    let line = ike::wireshark::ikev2_decryption_line(&ea.ike).unwrap();
    let (mut sa, _) = Session::new(config("a.example", "b.example", suite), p, ea);
    let (mut sb, _) = Session::new(config("b.example", "a.example", suite), p, *eb);
    let m5 = sa.request(0, Request::RekeyChild(sa.children()[0].spi_in)).unwrap().send.remove(0);
    let m6 = sb.handle(0, &m5).unwrap().send.remove(0);

    let dir = std::env::temp_dir().join(format!("hipsec-ike-tshark-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ike.pcap");
    std::fs::write(dir.join("line"), &line).unwrap();
    std::fs::write(
        &file,
        pcap(&[(true, m1), (false, m2), (true, m3), (false, m4), (true, m5), (false, m6)]),
    )
    .unwrap();
    let out = Command::new("tshark")
        .arg("-r")
        .arg(&file)
        .args(["-o", &format!("uat:ikev2_decryption_table:{line}"), "-V"])
        .output()
        .unwrap();
    if std::env::var_os("HIPSEC_KEEP_PCAP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    let count = |s: &str| text.matches(s).count();
    // Inside the SK payloads: IDi/IDr and AUTH (IKE_AUTH), REKEY_SA and Nonce (CREATE_CHILD_SA),
    // and Wireshark's own ICV check of each of the four SK payloads.
    assert_eq!(count("Payload: Identification - Initiator (35)"), 1, "{name}:\n{text}");
    assert_eq!(
        count("Payload: Identification - Responder (36)"),
        2,
        "{name}: IDr in both IKE_AUTH messages"
    );
    assert_eq!(count("Payload: Authentication (39)"), 2, "{name}");
    assert_eq!(count("Notify Message Type: REKEY_SA (16393)"), 1, "{name}");
    assert_eq!(
        count("Payload: Nonce (40)"),
        4,
        "{name}: two in IKE_SA_INIT, two in CREATE_CHILD_SA"
    );
    assert_eq!(count("Integrity Checksum Data: "), 4, "{name}");
    assert_eq!(count("[correct]"), 4, "{name}");
    assert_eq!(count("[incorrect]"), 0, "{name}");
}

#[test]
fn tshark_decrypts_every_sk_payload() {
    if Command::new("tshark").arg("--version").output().is_err() {
        println!("SKIPPED: no tshark (apt-get install tshark)");
        return;
    }
    let gcm = IkeSuite {
        encr: EncrAlg::Aead(AeadAlg::Aes256Gcm),
        integ: IntegAlg::None,
        prf: PrfAlg::HmacSha256,
        dh: DhGroup::Curve25519,
    };
    check(gcm, "aes256gcm");
    let cbc = IkeSuite {
        encr: EncrAlg::Cbc(CbcAlg::Aes128),
        integ: IntegAlg::Hmac(HmacAlg::Sha256_128),
        prf: PrfAlg::HmacSha256,
        dh: DhGroup::Ecp256,
    };
    check(cbc, "aes128cbc-sha256");
}
