//! The seed corpus of the `esp_inbound` fuzz target: real packets for the SAs that target
//! installs, so the fuzzer starts past the SPI lookup. This test regenerates the seeds and checks
//! that fuzz/seeds/esp_inbound holds exactly them (`HIPSEC_WRITE_SEEDS=1` rewrites the folder).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod fuzz_sas;

use fuzz_sas::{null_sas, params, real_sa};
use ipsec::{Engine, PacketBuf, Time};
use std::path::PathBuf;

fn inner(v6: bool) -> Vec<u8> {
    let b = if v6 {
        let a = |x| [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, x];
        etherparse::PacketBuilder::ipv6(a(1), a(2), 64)
    } else {
        etherparse::PacketBuilder::ipv4([192, 0, 2, 1], [192, 0, 2, 2], 64)
    };
    let mut out = Vec::new();
    b.udp(1000, 2000).write(&mut out, b"seed payload").unwrap();
    out
}

/// One sealed packet per fuzz-target SA, named after it.
fn seeds() -> Vec<(String, Vec<u8>)> {
    let names = [
        "null-cbc-tunnel-v4",
        "null-gcm-transport-v6",
        "null-ah-transport-v4",
        "null-ah-tunnel-v6",
    ];
    let mut cases: Vec<(&str, &'static dyn crypto::Provider, _)> =
        vec![("real-gcm-tunnel-v4", crypto::default_provider(), real_sa())];
    for (name, sa) in names.into_iter().zip(null_sas()) {
        cases.push((name, &crypto::NullProvider, sa));
    }
    cases
        .into_iter()
        .map(|(name, prov, (spi, proto, mode, v6))| {
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
        let sas = if real { vec![real_sa()] } else { null_sas().to_vec() };
        for (spi, proto, mode, v6) in sas {
            rx.add_inbound(&params(spi, proto, mode, v6), Time(0)).unwrap();
        }
        let mut buf = PacketBuf::with_max_packet();
        buf.load(b, 128).unwrap();
        assert!(rx.inbound(&mut buf, Time(1)).is_ok(), "{n}");
    }
}
