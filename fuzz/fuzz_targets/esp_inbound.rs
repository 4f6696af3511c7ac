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
    let copied = null.inbound(&mut buf, Time(1));
    if copied.is_ok() {
        assert!(wire::IpLayout::parse(buf.as_slice()).is_ok());
    }

    // The receive path's variant (IP header copied, the rest read where it lies) must reach
    // the same verdict, on fresh engines so that replay state matches.
    let Ok(l) = wire::IpLayout::parse(data) else { return };
    let h = l.header_len.min(data.len());
    let mut fresh = Engine::new(&crypto::NullProvider);
    for (spi, proto, mode, v6) in null_sas() {
        fresh.add_inbound(&params(spi, proto, mode, v6), Time(0)).unwrap();
    }
    let mut again = Engine::new(&crypto::NullProvider);
    for (spi, proto, mode, v6) in null_sas() {
        again.add_inbound(&params(spi, proto, mode, v6), Time(0)).unwrap();
    }
    let mut a = PacketBuf::new(4096, 128);
    a.load(data, 128).unwrap();
    let ra = fresh.inbound(&mut a, Time(1));
    let mut b = PacketBuf::new(4096, 128);
    b.load(&data[..h], 128).unwrap();
    if b.append(data.len() - h).is_err() {
        return;
    }
    let rb = again.inbound_from(&mut b, &data[h..], Time(1));
    assert_eq!(ra, rb);
    if ra.is_ok() {
        assert_eq!(a.as_slice(), b.as_slice());
    }
});
