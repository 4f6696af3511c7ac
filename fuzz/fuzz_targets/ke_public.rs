//! Fuzz target: any bytes as a peer's KE payload data (RFC 7296 §3.4) for every group we
//! implement (first byte picks the group): the public-value checks (length; RFC 6989 / NIST
//! SP 800-56A range for MODP; curve membership inside AWS-LC) and the agreement must not
//! panic, a wrong length is always `Length`, the MODP range check and the agreement agree, and
//! a secret that comes out has the group's length.
#![no_main]

use std::sync::OnceLock;

use crypto::{CryptoError, DhGroup, KeyExchange};
use libfuzzer_sys::fuzz_target;

fn keys() -> &'static [KeyExchange] {
    static KEYS: OnceLock<Vec<KeyExchange>> = OnceLock::new();
    KEYS.get_or_init(|| {
        DhGroup::ALL.iter().map(|&g| KeyExchange::generate(g).expect("a key pair")).collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let group = DhGroup::ALL[pick as usize % DhGroup::ALL.len()];
    let key = &keys()[pick as usize % DhGroup::ALL.len()];
    // Short inputs stand for a value of the group's length: the fuzzer's bytes, then the
    // tail of our own public value (so that curve points near a valid one are reached too).
    let mut value = rest.to_vec();
    if pick & 0x80 != 0 && value.len() < group.public_len() {
        value.extend_from_slice(&key.public_key()[value.len()..]);
    }
    let checked = group.check_public(&value);
    let agreed = key.agree_reused(&value);
    if value.len() != group.public_len() {
        assert_eq!(checked, Err(CryptoError::Length));
        assert!(matches!(agreed, Err(CryptoError::Length)));
        return;
    }
    if matches!(group, DhGroup::Modp2048 | DhGroup::Modp3072) {
        assert_eq!(checked.is_ok(), agreed.is_ok(), "range check and agreement differ");
    }
    if let Ok(secret) = agreed {
        assert_eq!(secret.as_bytes().len(), group.shared_len());
    }
});
