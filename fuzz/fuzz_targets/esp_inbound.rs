//! Fuzz target: the whole inbound path with fixed SAs (ESP tunnel with the real AES-GCM, ESP
//! transport and AH with the null provider so that mutated packets get past the ICV check and
//! reach the trailer, next-header and inner-packet checks). Never panics; whatever is
//! decapsulated is a well-formed IP packet.
#![no_main]

#[path = "../../crates/ipsec/tests/fuzz_sas/mod.rs"]
mod fuzz_sas;

use fuzz_sas::{null_sas, params, real_sa};
use ipsec::{Engine, PacketBuf, Time};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut real = Engine::new(crypto::default_provider());
    let (spi, proto, mode, v6) = real_sa();
    real.add_inbound(&params(spi, proto, mode, v6), Time(0)).unwrap();
    let mut null = Engine::new(&crypto::NullProvider);
    for (spi, proto, mode, v6) in null_sas() {
        null.add_inbound(&params(spi, proto, mode, v6), Time(0)).unwrap();
    }

    let mut buf = PacketBuf::new(4096, 128);
    if buf.load(data, 128).is_err() {
        return;
    }
    // Real crypto: only the genuine seed packet (with any outer-header change ESP does not
    // cover) authenticates, and what comes out is a well-formed IP packet.
    if real.inbound(&mut buf, Time(1)).is_ok() {
        assert!(wire::IpLayout::parse(buf.as_slice()).is_ok());
    }
    buf.load(data, 128).unwrap();
    if null.inbound(&mut buf, Time(1)).is_ok() {
        assert!(wire::IpLayout::parse(buf.as_slice()).is_ok());
    }
});
