//! Fuzz target: any bytes as an IKEv2 message (RFC 7296 §3) and as a decrypted SK payload chain
//! (first byte = first payload type). Nothing may panic; whatever parses must re-emit to bytes
//! that parse to the same repr.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::ikev2::{Message, Packet, PayloadType, RawPayloads, emit_chain, parse_chain};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Packet::new_checked(data) {
        let _ = (p.spi_i(), p.spi_r(), p.exchange_type(), p.flags(), p.message_id(), p.len());
        for raw in RawPayloads::new(p.next_payload(), p.payload_bytes()) {
            if let Ok(raw) = raw {
                assert!(raw.offset + 4 + raw.body.len() <= p.payload_bytes().len());
            }
        }
    }
    if let Ok(m) = Message::parse(data) {
        let bytes = m.to_vec().expect("a parsed message re-emits");
        assert_eq!(bytes.len(), m.buffer_len());
        let again = Message::parse(&bytes).expect("re-emitted bytes parse");
        assert_eq!(again, m);
    }
    if let Some((&first, rest)) = data.split_first() {
        if let Ok(chain) = parse_chain(PayloadType(first), rest) {
            let len = chain.iter().map(|p| p.buffer_len()).sum();
            let mut out = vec![0u8; len];
            let first = emit_chain(&chain, &mut out).expect("a parsed chain re-emits");
            assert_eq!(parse_chain(first, &out).expect("re-emitted chain parses"), chain);
        }
    }
});
