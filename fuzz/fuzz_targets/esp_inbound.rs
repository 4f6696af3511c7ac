//! Fuzz target: the whole inbound path with fixed SAs (ESP tunnel with the real AES-GCM, ESP
//! transport and AH with the null provider so that mutated packets get past the ICV check and
//! reach the trailer, next-header and inner-packet checks). Never panics; whatever is
//! decapsulated is a well-formed IP packet.
#![no_main]

use ipsec::{Engine, Lifetime, Mode, PacketBuf, SaParams, Spi, Time, sa::Protocol};
use libfuzzer_sys::fuzz_target;
use zeroize::Zeroizing;

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

fuzz_target!(|data: &[u8]| {
    let gcm = Protocol::Esp("aes128gcm".parse().unwrap());
    let null_cbc = Protocol::Esp("aes128cbc-sha256".parse().unwrap());
    let ah = Protocol::Ah(crypto::IntegAlg::from_name("sha256").unwrap());

    let mut real = Engine::new(crypto::default_provider());
    real.add_inbound(&params(0x1000, gcm, Mode::Tunnel, false), Time(0)).unwrap();
    let mut null = Engine::new(&crypto::NullProvider);
    null.add_inbound(&params(0x1000, null_cbc, Mode::Tunnel, false), Time(0)).unwrap();
    null.add_inbound(&params(0x1001, gcm, Mode::Transport, true), Time(0)).unwrap();
    null.add_inbound(&params(0x1002, ah, Mode::Transport, false), Time(0)).unwrap();
    null.add_inbound(&params(0x1003, ah, Mode::Tunnel, true), Time(0)).unwrap();

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
        // Whatever came out must be a well-formed IP packet.
        assert!(wire::IpLayout::parse(buf.as_slice()).is_ok());
    }
});
