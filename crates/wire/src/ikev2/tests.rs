//! Byte-vector tests for `wire::ikev2`. The vectors are assembled by hand, field by field, from
//! the figures of RFC 7296 §3 (each test names its figure); scapy_tests.rs checks the same codec
//! against an independent implementation.

use super::*;
use proptest::prelude::*;

/// RFC 7296 §3.1 Figure 4: SPIi 0x0102..08, SPIr 0, Next Payload 41 (Notify), version 2.0,
/// IKE_SA_INIT, flags I, message ID 0, length 28 + 8; then one §3.10 Figure 16 Notify payload:
/// protocol 0, SPI size 0, COOKIE (16390), no notification data.
const SA_INIT_COOKIE_REQ: [u8; 36] = [
    1, 2, 3, 4, 5, 6, 7, 8, // IKE SA Initiator's SPI
    0, 0, 0, 0, 0, 0, 0, 0, // IKE SA Responder's SPI
    41, 0x20, 34, 0x08, // Next Payload, MjVer|MnVer, Exchange Type, Flags
    0, 0, 0, 0, // Message ID
    0, 0, 0, 36, // Length
    0, 0, 0, 8, // generic payload header: next 0, not critical, length 8
    0, 0, 0x40, 0x06, // Protocol ID 0, SPI Size 0, Notify Message Type COOKIE
];

#[test]
fn header_fields_from_figure_4() {
    let p = Packet::new_checked(&SA_INIT_COOKIE_REQ[..]).unwrap();
    assert_eq!(p.spi_i(), 0x0102030405060708);
    assert_eq!(p.spi_r(), 0);
    assert_eq!(p.next_payload(), PayloadType::NOTIFY);
    assert_eq!(p.exchange_type(), ExchangeType::IKE_SA_INIT);
    assert_eq!(p.flags(), Flags { initiator: true, version: false, response: false });
    assert_eq!(p.message_id(), 0);
    assert_eq!(p.len(), 36);
    let m = Message::parse(&SA_INIT_COOKIE_REQ).unwrap();
    assert_eq!(m.payloads, vec![Payload::Notify(Notify::new(NotifyType::COOKIE, vec![]))]);
    assert_eq!(m.to_vec().unwrap(), SA_INIT_COOKIE_REQ);
}

#[test]
fn header_errors_name_the_field() {
    let e = Packet::new_checked(&SA_INIT_COOKIE_REQ[..27]).unwrap_err();
    assert_eq!(e, IkeError::Truncated { what: "header", len: 27, need: 28 });
    let mut b = SA_INIT_COOKIE_REQ;
    b[17] = 0x30;
    assert_eq!(Packet::new_checked(&b[..]).unwrap_err(), IkeError::MajorVersion { major: 3 });
    let mut b = SA_INIT_COOKIE_REQ;
    b[27] = 37;
    let e = Packet::new_checked(&b[..]).unwrap_err();
    assert_eq!(e, IkeError::BadLength { what: "header length", value: 37 });
    assert_eq!(e.to_string(), "ikev2 header length: bad length 37");
    // Bytes past the length field are not part of the message.
    let mut long = SA_INIT_COOKIE_REQ.to_vec();
    long.extend_from_slice(&[0xff; 5]);
    assert_eq!(Packet::new_checked(&long[..]).unwrap().as_bytes(), SA_INIT_COOKIE_REQ);
}

/// §3.2 Figure 5 generic header with an unassigned type (200), then a Nonce (§3.9 Figure 15).
fn with_unknown(critical: bool) -> Vec<u8> {
    let mut m = SA_INIT_COOKIE_REQ[..28].to_vec();
    m[16] = 200;
    m.extend_from_slice(&[40, if critical { 0x80 } else { 0 }, 0, 6, 0xaa, 0xbb]);
    m.extend_from_slice(&[0, 0, 0, 20]);
    m.extend_from_slice(&[0x5a; 16]);
    let len = m.len() as u32;
    m[24..28].copy_from_slice(&len.to_be_bytes());
    m
}

#[test]
fn unknown_payload_skipped_unless_critical() {
    let m = Message::parse(&with_unknown(false)).unwrap();
    assert_eq!(m.payloads, vec![Payload::Nonce(vec![0x5a; 16])]);
    let e = Message::parse(&with_unknown(true)).unwrap_err();
    assert_eq!(e, IkeError::UnsupportedCriticalPayload { payload_type: 200 });
    assert_eq!(e.to_string(), "ikev2 payload type 200: unknown and marked critical");
}

#[test]
fn nonce_length_bounds_of_section_3_9() {
    let mut m = with_unknown(false);
    let short = m.len() - 1;
    m.truncate(short);
    m[24..28].copy_from_slice(&(short as u32).to_be_bytes());
    m[28 + 6 + 3] = 19; // the Nonce's payload length: 15 bytes of data
    assert_eq!(
        Message::parse(&m).unwrap_err(),
        IkeError::BadLength { what: "nonce data", value: 15 }
    );
    let big = Message { payloads: vec![Payload::Nonce(vec![0; 257])], ..sample() };
    assert!(matches!(big.to_vec(), Err(IkeError::BadLength { what: "nonce data", value: 257 })));
}

fn sample() -> Message {
    Message::parse(&SA_INIT_COOKIE_REQ).unwrap()
}

#[test]
fn payload_length_errors() {
    // Generic header says 3 bytes: shorter than itself.
    let mut b = SA_INIT_COOKIE_REQ;
    b[31] = 3;
    assert_eq!(
        Message::parse(&b).unwrap_err(),
        IkeError::BadLength { what: "payload length", value: 3 }
    );
    // Generic header says 12 bytes: past the message.
    b[31] = 12;
    assert_eq!(
        Message::parse(&b).unwrap_err(),
        IkeError::Truncated { what: "payload body", len: 4, need: 8 }
    );
    // Next Payload 0 but bytes remain.
    let mut v = SA_INIT_COOKIE_REQ.to_vec();
    v.extend_from_slice(&[0; 4]);
    v[27] = 40;
    assert_eq!(
        Message::parse(&v).unwrap_err(),
        IkeError::BadLength { what: "bytes after last payload", value: 4 }
    );
}

#[test]
fn sk_must_be_last() {
    // §3.14 Figure 21: SK (next = first inner payload IDi), then another payload after it.
    let mut m = SA_INIT_COOKIE_REQ[..28].to_vec();
    m[16] = 46;
    m.extend_from_slice(&[35, 0, 0, 8, 1, 2, 3, 4]);
    m.extend_from_slice(&[0, 0, 0, 4]);
    let len = m.len() as u32;
    m[24..28].copy_from_slice(&len.to_be_bytes());
    assert_eq!(Message::parse(&m).unwrap_err(), IkeError::SkNotLast);
    let ok_len = (m.len() - 4) as u32;
    m[24..28].copy_from_slice(&ok_len.to_be_bytes());
    let parsed = Message::parse(&m[..m.len() - 4]).unwrap();
    assert_eq!(
        parsed.payloads,
        vec![Payload::Sk(Sk { first_inner: PayloadType::IDI, body: vec![1, 2, 3, 4] })]
    );
    let mut bad = parsed.clone();
    bad.payloads.push(Payload::Nonce(vec![0; 16]));
    assert_eq!(bad.to_vec().unwrap_err(), IkeError::SkNotLast);
}

/// §3.3 Figures 7–9: one ESP proposal, SPI 0x11223344, ENCR_AES_CBC with Key Length 128
/// (attribute 0x800e 0x0080), AUTH_HMAC_SHA2_256_128, ESN none.
const SA_BODY: [u8; 40] = [
    0, 0, 0, 40, 1, 3, 4, 3, 0x11, 0x22, 0x33, 0x44, // proposal header, SPI
    3, 0, 0, 12, 1, 0, 0, 12, 0x80, 0x0e, 0, 128, // ENCR AES-CBC, Key Length 128
    3, 0, 0, 8, 3, 0, 0, 12, // INTEG HMAC-SHA2-256-128
    0, 0, 0, 8, 5, 0, 0, 0, // ESN none (last)
];

#[test]
fn sa_body_from_figures_7_to_9() {
    let sa = Sa::parse(&SA_BODY).unwrap();
    let p = &sa.proposals[0];
    assert_eq!(
        (p.num, p.protocol_id, p.spi.as_slice()),
        (1, ProtocolId::ESP, &[0x11, 0x22, 0x33, 0x44][..])
    );
    let e = p.transform(TransformType::ENCR).unwrap();
    assert_eq!((e.transform_id, e.key_length()), (encr::AES_CBC, Some(128)));
    assert_eq!(p.transform(TransformType::INTEG).unwrap().transform_id, integ::HMAC_SHA2_256_128);
    assert_eq!(p.transform(TransformType::ESN).unwrap().transform_id, esn::NO_ESN);
    let mut out = [0u8; 40];
    sa.emit(&mut out).unwrap();
    assert_eq!(out, SA_BODY);
}

#[test]
fn sa_errors_name_the_field() {
    let mut b = SA_BODY;
    b[7] = 4; // Num Transforms 4, but the third says it is the last
    assert_eq!(
        Sa::parse(&b).unwrap_err(),
        IkeError::BadValue { what: "transform last substruc", value: 0 }
    );
    let mut b = SA_BODY;
    b[12] = 0; // first transform says "last"
    assert_eq!(
        Sa::parse(&b).unwrap_err(),
        IkeError::BadValue { what: "transform last substruc", value: 0 }
    );
    let mut b = SA_BODY;
    b[6] = 3; // SPI size 3
    assert_eq!(
        Sa::parse(&b).unwrap_err(),
        IkeError::BadLength { what: "proposal spi size", value: 3 }
    );
    let mut b = SA_BODY;
    b[0] = 2; // "more proposals" but none follow
    assert!(matches!(
        Sa::parse(&b).unwrap_err(),
        IkeError::Truncated { what: "proposal last substruc", .. }
    ));
}

#[test]
fn ts_and_delete_errors() {
    // §3.13.1 Figure 20 with TS Type 9 (unassigned).
    let mut ts = vec![1, 0, 0, 0, 9, 0, 0, 16, 0, 0, 0xff, 0xff];
    ts.extend_from_slice(&[0; 8]);
    assert_eq!(Ts::parse(&ts).unwrap_err(), IkeError::BadValue { what: "ts type", value: 9 });
    ts[4] = 7;
    ts[7] = 40;
    assert_eq!(
        Ts::parse(&ts).unwrap_err(),
        IkeError::BadLength { what: "ts selector length", value: 40 }
    );
    let mixed = TrafficSelector {
        end_addr: std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ..TrafficSelector::any(false)
    };
    let t = Ts { selectors: vec![mixed] };
    assert!(t.emit(&mut vec![0; t.buffer_len()]).is_err());
    // §3.11 Figure 17: Delete of the IKE SA with SPI size 4 is malformed.
    let raw = RawPayload {
        payload_type: PayloadType::DELETE,
        next: PayloadType::NONE,
        critical: false,
        offset: 0,
        body: &[1, 4, 0, 0],
    };
    assert_eq!(
        Payload::parse(&raw).unwrap_err(),
        IkeError::BadLength { what: "delete spi size", value: 4 }
    );
}

proptest! {
    /// Any bytes behind a valid header: parsing never panics, and whatever parses re-emits to
    /// bytes that parse to the same repr (what the ike_message fuzz target checks at scale).
    #[test]
    fn parse_emit_parse(first in prop::sample::select(vec![33u8, 34, 35, 39, 40, 41, 42, 43, 44, 46, 200]),
                        body in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut m = SA_INIT_COOKIE_REQ[..28].to_vec();
        m[16] = first;
        m.extend_from_slice(&body);
        let len = m.len() as u32;
        m[24..28].copy_from_slice(&len.to_be_bytes());
        if let Ok(msg) = Message::parse(&m) {
            let again = Message::parse(&msg.to_vec().unwrap()).unwrap();
            prop_assert_eq!(again, msg);
        }
    }
}
