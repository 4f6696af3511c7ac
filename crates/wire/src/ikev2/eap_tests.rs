//! Byte-vector tests for the EAP payload (RFC 7296 §3.16), the EAP packet (RFC 3748 §4) and
//! EAP-MSCHAPv2's type data (draft-kamath-pppext-eap-mschapv2 §2), assembled field by field.
//! The layouts are paraphrased from those documents (no copy of their text was at hand); the
//! Challenge vector's bytes are those strongSwan's eap-mschapv2 plugin sends (name
//! "strongSwan").

use super::*;

/// An EAP payload with Request/Identity (RFC 3748 §5.1: type 1, no data): generic header
/// (next 0, length 4 + 5), Code 1, Identifier 0x2a, Length 5, Type 1.
const EAP_IDENTITY_REQUEST: [u8; 9] = [0, 0, 0, 9, 1, 0x2a, 0, 5, 1];

/// EAP Success (RFC 3748 §4.2: Code 3, Identifier, Length 4, nothing else).
const EAP_SUCCESS: [u8; 8] = [0, 0, 0, 8, 3, 7, 0, 4];

/// Request, MSCHAPv2 Challenge: OpCode 1, MS-CHAPv2-ID 0x2b, MS-Length 27 (EAP Length 32 - 5),
/// Value-Size 16, the challenge 0x00..0x0f, Name "hipsec".
fn challenge_eap() -> Vec<u8> {
    let mut v = vec![1, 0x2b, 0, 32, 26, 1, 0x2b, 0, 27, 16];
    v.extend(0u8..16);
    v.extend_from_slice(b"hipsec");
    v
}

fn payloads(bytes: &[u8]) -> Vec<Payload> {
    match parse_chain(PayloadType::EAP, bytes) {
        Ok(p) => p,
        Err(e) => panic!("parse: {e}"),
    }
}

fn emitted(p: &Payload) -> Vec<u8> {
    let mut out = vec![0; p.buffer_len()];
    if let Err(e) = p.emit(PayloadType::NONE, &mut out) {
        panic!("emit: {e}");
    }
    out
}

#[test]
fn identity_request_and_success_round_trip() {
    let p = payloads(&EAP_IDENTITY_REQUEST);
    let want = Eap::request(0x2a, EapType::IDENTITY, Vec::new());
    assert_eq!(p, vec![Payload::Eap(want.clone())]);
    assert_eq!(emitted(&Payload::Eap(want)), EAP_IDENTITY_REQUEST);

    let p = payloads(&EAP_SUCCESS);
    assert_eq!(p, vec![Payload::Eap(Eap::result(7, true))]);
    assert_eq!(emitted(&p[0]), EAP_SUCCESS);
}

#[test]
fn mschapv2_challenge_parses_and_emits() {
    let bytes = challenge_eap();
    let eap = Eap::parse(&bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (eap.code, eap.identifier, eap.eap_type()),
        (EapCode::REQUEST, 0x2b, Some(EapType::MSCHAPV2))
    );
    let m = MsChapV2::parse(eap.code, eap.type_data()).unwrap_or_else(|e| panic!("{e}"));
    let mut challenge = [0u8; 16];
    challenge.iter_mut().zip(0u8..).for_each(|(c, i)| *c = i);
    assert_eq!(m, MsChapV2::Challenge { id: 0x2b, challenge, name: b"hipsec".to_vec() });
    let data = m.to_bytes().unwrap_or_else(|e| panic!("{e}"));
    let again = Eap::request(0x2b, EapType::MSCHAPV2, data).to_bytes();
    assert_eq!(again.unwrap_or_else(|e| panic!("{e}")), bytes);
}

#[test]
fn mschapv2_response_and_acks_round_trip() {
    let r = MsChapV2::Response {
        id: 9,
        peer_challenge: [0x21; 16],
        nt_response: [0x82; 24],
        flags: 0,
        name: b"carol".to_vec(),
    };
    let data = r.to_bytes().unwrap_or_else(|e| panic!("{e}"));
    // OpCode 2, ID 9, MS-Length 4 + 1 + 49 + 5 = 59, Value-Size 49, then the value.
    assert_eq!(&data[..5], &[2, 9, 0, 59, 49]);
    assert_eq!(&data[21..29], &[0; 8], "Reserved is zero");
    assert_eq!(MsChapV2::parse(EapCode::RESPONSE, &data), Ok(r));
    assert_eq!(MsChapV2::parse(EapCode::RESPONSE, &[3]), Ok(MsChapV2::SuccessResponse));
    assert_eq!(MsChapV2::parse(EapCode::RESPONSE, &[4]), Ok(MsChapV2::FailureResponse));
    let s = MsChapV2::SuccessRequest { id: 9, message: b"S=00 M=ok".to_vec() };
    let sb = s.to_bytes().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(&sb[..4], &[3, 9, 0, 13]);
    assert_eq!(MsChapV2::parse(EapCode::REQUEST, &sb), Ok(s));
}

#[test]
fn malformed_eap_names_the_field() {
    // Length shorter than the header.
    assert_eq!(
        Eap::parse(&[1, 0, 0, 3]),
        Err(IkeError::BadLength { what: "eap length", value: 3 })
    );
    // Length beyond the bytes.
    assert!(matches!(
        Eap::parse(&[1, 0, 0, 9, 1]),
        Err(IkeError::Truncated { what: "eap data", .. })
    ));
    // A Request without its Type.
    assert!(matches!(Eap::parse(&[1, 0, 0, 4]), Err(IkeError::Truncated { what: "eap type", .. })));
    // Success with data.
    assert_eq!(
        Eap::parse(&[3, 0, 0, 5, 1]),
        Err(IkeError::BadLength { what: "eap length", value: 1 })
    );
    assert_eq!(Eap::parse(&[5, 0, 0, 4]), Err(IkeError::BadValue { what: "eap code", value: 5 }));
    // Octets past Length are padding, ignored (RFC 3748 §4.1).
    assert_eq!(Eap::parse(&[3, 1, 0, 4, 0xff]), Ok(Eap::result(1, true)));

    let mut c = challenge_eap();
    c[8] = 26; // MS-Length off by one
    assert_eq!(
        MsChapV2::parse(EapCode::REQUEST, &c[5..]),
        Err(IkeError::BadLength { what: "mschapv2 ms-length", value: 26 })
    );
    let mut c = challenge_eap();
    c[9] = 8; // Value-Size not 16
    assert_eq!(
        MsChapV2::parse(EapCode::REQUEST, &c[5..]),
        Err(IkeError::BadValue { what: "mschapv2 value-size", value: 8 })
    );
    assert!(matches!(
        MsChapV2::parse(EapCode::RESPONSE, &[2, 1, 0, 6, 49, 0]),
        Err(IkeError::Truncated { what: "mschapv2 peer-challenge", .. })
    ));
    assert_eq!(
        MsChapV2::parse(EapCode::REQUEST, &[7]),
        Err(IkeError::BadValue { what: "mschapv2 opcode", value: 7 })
    );
    assert!(MsChapV2::parse(EapCode::REQUEST, &[]).is_err());
}

proptest::proptest! {
    #[test]
    fn parsers_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..80)) {
        if let Ok(e) = Eap::parse(&bytes) {
            let again = e.to_bytes().map(|b| Eap::parse(&b));
            proptest::prop_assert_eq!(again, Ok(Ok(e.clone())));
            if let Ok(m) = MsChapV2::parse(e.code, e.type_data()) {
                let b = m.to_bytes();
                proptest::prop_assert_eq!(b.map(|b| MsChapV2::parse(e.code, &b)), Ok(Ok(m)));
            }
        }
    }
}
