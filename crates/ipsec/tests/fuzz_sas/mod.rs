//! The SAs of the `esp_inbound` fuzz target, shared by the target (through `#[path]`) and by the
//! test that keeps its seed corpus current, so the two cannot drift apart.

use ipsec::{Lifetime, Mode, SaParams, Spi, sa::Protocol};
use zeroize::Zeroizing;

/// Parameters of the fuzz target's SAs: keys are constant, ESN on for even SPIs.
pub fn params(spi: u32, protocol: Protocol, mode: Mode, v6: bool) -> SaParams {
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

/// The inbound SAs of the fuzz target with the null provider: (spi, protocol, mode, ipv6).
pub fn null_sas() -> [(u32, Protocol, Mode, bool); 4] {
    let gcm = Protocol::Esp("aes128gcm".parse().unwrap());
    let cbc = Protocol::Esp("aes128cbc-sha256".parse().unwrap());
    let ah = Protocol::Ah(crypto::IntegAlg::from_name("sha256").unwrap());
    [
        (0x1000, cbc, Mode::Tunnel, false),
        (0x1001, gcm, Mode::Transport, true),
        (0x1002, ah, Mode::Transport, false),
        (0x1003, ah, Mode::Tunnel, true),
    ]
}

/// The one SA of the fuzz target with real crypto: AES-128-GCM, tunnel, IPv4.
pub fn real_sa() -> (u32, Protocol, Mode, bool) {
    (0x1000, Protocol::Esp("aes128gcm".parse().unwrap()), Mode::Tunnel, false)
}
