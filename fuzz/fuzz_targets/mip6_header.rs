//! Fuzz target: any bytes as Mobile IPv6 headers (RFC 6275 §6): the Mobility Header view and
//! message repr, the mobility options on their own, the Destination Options header with the
//! Home Address option and the type 2 routing header. Nothing may panic; whatever parses must
//! re-emit (unless the repr's padding pushes it past the 2048-octet limit) to bytes that parse
//! to the same repr, padded to 8 octets; a filled checksum must verify.
#![no_main]

use std::net::Ipv6Addr;

use libfuzzer_sys::fuzz_target;
use wire::WireError;
use wire::mip6::{
    DestinationOptions, MAX_LEN, Message, MhPacket, RoutingHeader2, compute_checksum, emit_options,
    options_len, parse_options, verify_checksum,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = MhPacket::new_checked(data) {
        let _ = (p.payload_proto(), p.mh_type(), p.reserved(), p.checksum(), p.message_data());
        assert_eq!(p.len(), (usize::from(p.header_len()) + 1) * 8);
        assert!(p.len() <= data.len());
        let (s, d) = (Ipv6Addr::LOCALHOST, Ipv6Addr::from([0x20; 16]));
        let mut fixed = p.as_bytes().to_vec();
        let c = compute_checksum(s, d, &fixed);
        fixed[4..6].copy_from_slice(&c.to_be_bytes());
        assert!(verify_checksum(s, d, &fixed));
        if let Ok(m) = Message::from_packet(&p) {
            match m.to_vec() {
                Ok(v) => {
                    assert_eq!(v.len() % 8, 0);
                    assert_eq!(v.len(), m.buffer_len());
                    assert_eq!(Message::parse(&v).expect("re-emitted header parses"), m);
                }
                Err(WireError::BadLength { .. }) => assert!(m.buffer_len() > MAX_LEN),
                Err(e) => panic!("a parsed message must re-emit: {e}"),
            }
        }
    }
    if let Ok(opts) = parse_options(data) {
        let start = data.len() % 8;
        let mut area = vec![0u8; options_len(start, &opts)];
        if emit_options(start, &opts, &mut area).is_ok() {
            assert_eq!((start + area.len()) % 8, 0);
            assert_eq!(parse_options(&area).expect("re-emitted options parse"), opts);
        }
    }
    if let Ok((d, len)) = DestinationOptions::parse(data) {
        assert!(len <= data.len() && len % 8 == 0);
        if let Ok(v) = d.to_vec() {
            assert_eq!(
                DestinationOptions::parse(&v).expect("re-emitted options parse"),
                (d, v.len())
            );
        }
    }
    if let Ok(r) = RoutingHeader2::parse(data) {
        let v = r.to_vec().expect("a parsed type 2 routing header re-emits");
        assert_eq!(RoutingHeader2::parse(&v).expect("re-emitted header parses"), r);
    }
});
