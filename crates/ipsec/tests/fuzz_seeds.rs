//! The seed corpus of the `esp_inbound` fuzz target: real packets for the SAs that target
//! installs, so the fuzzer starts past the SPI lookup. This test regenerates the seeds and checks
//! that fuzz/seeds/esp_inbound holds exactly them (`HIPSEC_WRITE_SEEDS=1` rewrites the folder).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use ipsec::{Engine, Lifetime, Mode, PacketBuf, SaParams, Spi, Time, sa::Protocol};
use std::path::PathBuf;
use zeroize::Zeroizing;

/// Must match fuzz/fuzz_targets/esp_inbound.rs.
fn params(spi: u32, protocol: Protocol, mode: Mode, v6: bool) -> SaParams {
    let (enc, auth) = match protocol {
        Protocol::Esp(s) => (s.encr.key_len(), s.integ.key_len()),
        Protocol::Ah(i) => (0, i.key_len()),
    };
    let (src, dst) = if v6 {
        ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap())
    } else {
        ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap())
    };
    SaParams {
        spi: Spi(spi),
        protocol,
        mode,
        src,
        dst,
        enc_key: Zeroizing::new(vec![7; enc]),
        auth_key: Zeroizing::new(vec![9; auth]),
        esn: spi % 2 == 0,
        replay_window: 64,
        soft: Lifetime::default(),
        hard: Lifetime { packets: Some(1000), ..Lifetime::default() },
    }
}

fn inner(v6: bool) -> Vec<u8> {
    let b = if v6 {
        etherparse::PacketBuilder::ipv6(
            [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
            64,
        )
    } else {
        etherparse::PacketBuilder::ipv4([192, 0, 2, 1], [192, 0, 2, 2], 64)
    };
    let mut out = Vec::new();
    b.udp(1000, 2000).write(&mut out, b"seed payload").unwrap();
    out
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let gcm = Protocol::Esp("aes128gcm".parse().unwrap());
    let cbc = Protocol::Esp("aes128cbc-sha256".parse().unwrap());
    let ah = Protocol::Ah(crypto::IntegAlg::from_name("sha256").unwrap());
    let cases: [(&str, &'static dyn crypto::Provider, u32, Protocol, Mode, bool); 5] = [
        ("real-gcm-tunnel-v4", crypto::default_provider(), 0x1000, gcm, Mode::Tunnel, false),
        ("null-cbc-tunnel-v4", &crypto::NullProvider, 0x1000, cbc, Mode::Tunnel, false),
        ("null-gcm-transport-v6", &crypto::NullProvider, 0x1001, gcm, Mode::Transport, true),
        ("null-ah-transport-v4", &crypto::NullProvider, 0x1002, ah, Mode::Transport, false),
        ("null-ah-tunnel-v6", &crypto::NullProvider, 0x1003, ah, Mode::Tunnel, true),
    ];
    cases
        .into_iter()
        .map(|(name, prov, spi, proto, mode, v6)| {
            let mut e = Engine::new(prov);
            let h = e.add_outbound(&params(spi, proto, mode, v6), Time(0)).unwrap();
            let mut b = PacketBuf::with_max_packet();
            b.load(&inner(v6), 128).unwrap();
            e.protect_with(&[h], &mut b, Time(0)).unwrap();
            (format!("{name}.bin"), b.as_slice().to_vec())
        })
        .collect()
}

#[test]
fn fuzz_seeds_are_current() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/esp_inbound");
    let seeds = seeds();
    if std::env::var_os("HIPSEC_WRITE_SEEDS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (n, b) in &seeds {
            std::fs::write(dir.join(n), b).unwrap();
        }
    }
    for (n, b) in &seeds {
        let on_disk = std::fs::read(dir.join(n)).unwrap_or_default();
        assert_eq!(&on_disk, b, "{n} is stale: rerun with HIPSEC_WRITE_SEEDS=1");
    }
    // And each seed really opens with the fuzz target's (null or real) inbound SAs.
    for (n, b) in &seeds {
        let real = n.starts_with("real");
        let mut rx =
            Engine::new(if real { crypto::default_provider() } else { &crypto::NullProvider });
        let gcm = Protocol::Esp("aes128gcm".parse().unwrap());
        let cbc = Protocol::Esp("aes128cbc-sha256".parse().unwrap());
        let ah = Protocol::Ah(crypto::IntegAlg::from_name("sha256").unwrap());
        if real {
            rx.add_inbound(&params(0x1000, gcm, Mode::Tunnel, false), Time(0)).unwrap();
        } else {
            rx.add_inbound(&params(0x1000, cbc, Mode::Tunnel, false), Time(0)).unwrap();
            rx.add_inbound(&params(0x1001, gcm, Mode::Transport, true), Time(0)).unwrap();
            rx.add_inbound(&params(0x1002, ah, Mode::Transport, false), Time(0)).unwrap();
            rx.add_inbound(&params(0x1003, ah, Mode::Tunnel, true), Time(0)).unwrap();
        }
        let mut buf = PacketBuf::with_max_packet();
        buf.load(b, 128).unwrap();
        assert!(rx.inbound(&mut buf, Time(1)).is_ok(), "{n}");
    }
}
