//! Round-trip and tamper tests of the SK payload for every IKE suite, plus the layout rules of
//! RFC 5282 §3 (AEAD: 8-byte IV, ICV 16, no padding needed) and RFC 7296 §3.14 (CBC: whole
//! blocks, ICV over the whole message).

use super::*;
use crate::keys::IkeSaKeys;
use crypto::{AeadAlg, CbcAlg, DhGroup, HmacAlg, PrfAlg};
use wire::ikev2::{ExchangeType, Flags, Id, IkeError, Notify, NotifyType};

fn suites() -> Vec<IkeSuite> {
    let s =
        |encr, integ| IkeSuite { encr, integ, prf: PrfAlg::HmacSha256, dh: DhGroup::Curve25519 };
    vec![
        s(EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None),
        s(EncrAlg::Aead(AeadAlg::Aes256Gcm), IntegAlg::None),
        s(EncrAlg::Aead(AeadAlg::ChaCha20Poly1305), IntegAlg::None),
        s(EncrAlg::Cbc(CbcAlg::Aes128), IntegAlg::Hmac(HmacAlg::Sha256_128)),
        s(EncrAlg::Cbc(CbcAlg::Aes256), IntegAlg::Hmac(HmacAlg::Sha384_192)),
        s(EncrAlg::Cbc(CbcAlg::Aes256), IntegAlg::Hmac(HmacAlg::Sha512_256)),
    ]
}

fn pair(suite: &IkeSuite) -> (SkKeys, SkKeys) {
    let p = crypto::default_provider();
    let keys = IkeSaKeys::derive(suite, &[7; 32], &[1; 32], &[2; 32], 11, 22).unwrap();
    (
        SkKeys::new(p, suite, &keys, Role::Initiator).unwrap(),
        SkKeys::new(p, suite, &keys, Role::Responder).unwrap(),
    )
}

fn header() -> Header {
    Header {
        spi_i: 11,
        spi_r: 22,
        exchange_type: ExchangeType::IKE_AUTH,
        flags: Flags { initiator: true, ..Flags::default() },
        message_id: 1,
    }
}

fn inner(n: usize) -> Vec<Payload> {
    vec![
        Payload::IdI(Id::fqdn(&"a".repeat(n))),
        Payload::Notify(Notify::new(NotifyType::INITIAL_CONTACT, vec![])),
    ]
}

#[test]
fn round_trip_every_suite_and_length() {
    let p = crypto::default_provider();
    for suite in suites() {
        let (mut i, mut r) = pair(&suite);
        for n in 1..40 {
            let msg = i.seal(p, &header(), &inner(n)).unwrap();
            let (h, payloads) = r.open(&msg).unwrap();
            assert_eq!((h, payloads), (header(), inner(n)), "{suite:?} n={n}");
            // The other direction, and a message with no inner payload at all.
            let back = r.seal(p, &header(), &[]).unwrap();
            assert_eq!(i.open(&back).unwrap().1, vec![]);
        }
    }
}

#[test]
fn layout_follows_rfc5282_and_section_3_14() {
    let p = crypto::default_provider();
    for suite in suites() {
        let (mut i, _) = pair(&suite);
        let chain: usize = inner(5).iter().map(Payload::buffer_len).sum();
        let msg = i.seal(p, &header(), &inner(5)).unwrap();
        let pkt = Packet::new_checked(&msg[..]).unwrap();
        assert_eq!(pkt.next_payload(), PayloadType::SK);
        assert_eq!(msg[HEADER_LEN], PayloadType::IDI.0, "SK's next payload is the first inner one");
        let body = msg.len() - HEADER_LEN - GENERIC_HEADER_LEN;
        match suite.encr {
            EncrAlg::Aead(_) => assert_eq!(body, 8 + chain + 1 + 16),
            _ => {
                let icv = suite.integ.icv_len();
                assert_eq!((body - 16 - icv) % 16, 0);
                assert!(body - 16 - icv > chain);
            }
        }
    }
}

#[test]
fn tampering_anywhere_fails_integrity() {
    let p = crypto::default_provider();
    for suite in suites() {
        let (mut i, r) = pair(&suite);
        let msg = i.seal(p, &header(), &inner(3)).unwrap();
        // Header (AAD / MAC-covered), SK header, IV, ciphertext, ICV.
        for at in [5, 20, HEADER_LEN + 1, HEADER_LEN + 5, msg.len() / 2 + 10, msg.len() - 1] {
            let mut bad = msg.clone();
            bad[at] ^= 0x40;
            let e = r.open(&bad).unwrap_err();
            assert!(e.is_peer_fault(), "{suite:?} at {at}: {e}");
        }
        let mut bad = msg.clone();
        bad[msg.len() - 1] ^= 1;
        assert_eq!(
            r.open(&bad).unwrap_err(),
            Error::PeerMisbehaved(PeerMisbehaved::IntegrityCheckFailed)
        );
        // Our own message does not open with our inbound (the peer's) keys.
        assert!(matches!(
            i.open(&msg),
            Err(Error::PeerMisbehaved(PeerMisbehaved::IntegrityCheckFailed))
        ));
    }
}

#[test]
fn malformed_sk_is_the_peers_fault() {
    let p = crypto::default_provider();
    let suite = suites()[0];
    let (mut i, r) = pair(&suite);
    let msg = i.seal(p, &header(), &inner(3)).unwrap();
    // Truncated: header length no longer matches.
    assert!(matches!(
        r.open(&msg[..msg.len() - 1]),
        Err(Error::InvalidMessage(IkeError::BadLength { .. }))
    ));
    // An SK payload holding less than IV + ICV.
    let mut short = msg[..HEADER_LEN + GENERIC_HEADER_LEN + 20].to_vec();
    let len = short.len() as u32;
    short[24..28].copy_from_slice(&len.to_be_bytes());
    short[HEADER_LEN + 2..HEADER_LEN + 4].copy_from_slice(&24u16.to_be_bytes());
    assert_eq!(r.open(&short).unwrap_err(), Error::PeerMisbehaved(PeerMisbehaved::BadSkLength(20)));
    // No SK at all.
    let plain = wire::ikev2::Message { header: header(), payloads: inner(2) }.to_vec().unwrap();
    assert!(matches!(r.open(&plain), Err(Error::PeerMisbehaved(PeerMisbehaved::SkMissing { .. }))));
}

#[test]
fn wrong_key_length_is_a_config_error() {
    let suite = suites()[0];
    let mut keys = IkeSaKeys::derive(&suite, &[7; 32], &[1; 32], &[2; 32], 1, 2).unwrap();
    keys.sk_ei.truncate(10);
    let e = SkKeys::new(crypto::default_provider(), &suite, &keys, Role::Initiator).unwrap_err();
    assert_eq!(e, Error::Config(ConfigError::KeyLength { what: "SK_e", got: 10, want: 20 }));
    assert!(!e.is_peer_fault());
}
