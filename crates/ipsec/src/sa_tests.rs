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

/// Copies of one outbound SA that share a counter hand out every number once, in order across
/// the copies, and stop at the limit with the counter held there (RFC 4303 §3.3.3: "the sender
/// MUST NOT send a packet on an SA if doing so would cause the sequence number to cycle"); an
/// SA that shares nothing counts on its own.
#[test]
fn shared_sequence_numbers_are_unique_across_copies() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;
    let p = SaParams {
        spi: Spi(0x1234),
        protocol: Protocol::Esp("aes128gcm".parse().unwrap_or_else(|e| panic!("{e}"))),
        mode: Mode::Tunnel,
        src: "192.0.2.1".parse().unwrap_or_else(|e| panic!("{e}")),
        dst: "192.0.2.2".parse().unwrap_or_else(|e| panic!("{e}")),
        enc_key: Zeroizing::new(vec![7u8; 20]),
        auth_key: Zeroizing::new(Vec::new()),
        esn: false,
        replay_window: 64,
        soft: Lifetime::default(),
        hard: Lifetime::default(),
    };
    let new = || {
        SecurityAssociation::new(&p, default_provider(), Time(0)).unwrap_or_else(|e| panic!("{e}"))
    };
    let counter = Arc::new(AtomicU64::new(0));
    let (mut a, mut b, mut alone) = (new(), new(), new());
    a.share_sequence(counter.clone());
    b.share_sequence(counter.clone());
    let mut got = Vec::new();
    for i in 0..10 {
        let sa = if i % 3 == 0 { &mut b } else { &mut a };
        got.push(sa.next_seq().map(|s| s.0).unwrap_or_else(|e| panic!("{e:?}")));
    }
    assert_eq!(got, (1..=10).collect::<Vec<u64>>());
    assert_eq!((a.last_seq_out(), b.last_seq_out()), (SeqNum(10), SeqNum(10)));
    assert_eq!(alone.next_seq().map(|s| s.0), Ok(1));
    // At the 32-bit limit (no ESN): the last number once, then exhausted on every copy.
    a.set_last_seq_out(SeqNum(u64::from(u32::MAX) - 1));
    assert_eq!(b.next_seq().map(|s| s.0), Ok(u64::from(u32::MAX)));
    assert_eq!(a.next_seq(), Err(DropReason::SeqExhausted));
    assert_eq!(b.next_seq(), Err(DropReason::SeqExhausted));
    assert_eq!(b.last_seq_out(), SeqNum(u64::from(u32::MAX)));
    assert!(a.take_event().is_some(), "the copy that ran out reports it");
}
