//! Byte vectors for `wire::mip6`, each derived by hand from the RFC 6275 figures named beside
//! it (field by field, padding by the §6.2 alignment rules), plus property round trips.

use std::net::Ipv6Addr;

use proptest::prelude::*;

use super::*;
use crate::error::WireError;

fn addr(s: &str) -> Ipv6Addr {
    s.parse().unwrap_or(Ipv6Addr::UNSPECIFIED)
}

/// §6.1.7 figure: Payload Proto 59, Header Len 1 (16 octets), MH Type 5, Reserved, Checksum 0,
/// Sequence # 0x1234, A and H set (0xC000), Lifetime 150 (600 s); the 12 octets end 4 short of
/// 8n, so a PadN with 2 octets of data (§6.2.3) closes the header.
const BU: [u8; 16] = [
    0x3b, 0x01, 0x05, 0x00, 0x00, 0x00, 0x12, 0x34, 0xc0, 0x00, 0x00, 0x96, 0x01, 0x02, 0x00, 0x00,
];

fn bu_repr() -> BindingUpdate {
    BindingUpdate {
        sequence: 0x1234,
        acknowledge: true,
        home_registration: true,
        lifetime: 150,
        ..BindingUpdate::default()
    }
}

#[test]
fn binding_update_from_figure() {
    let p = MhPacket::new_checked(&BU[..]).unwrap();
    assert_eq!(
        (p.payload_proto(), p.header_len(), p.mh_type(), p.len()),
        (59, 1, MhType::BINDING_UPDATE, 16)
    );
    let m = Message::parse(&BU).unwrap();
    assert_eq!(m, Message::new(Body::BindingUpdate(bu_repr())));
    assert_eq!(m.to_vec().unwrap(), BU.to_vec());
}

/// §6.1.7 with an Alternate Care-of Address option (§6.2.5, alignment 8n+6): options start at
/// offset 12 (12 mod 8 = 4), so a PadN with no data (01 00) moves the option to offset 14; it
/// is 18 octets and ends at 32, a multiple of 8: Header Len 3. L and K set (0x3000).
#[test]
fn binding_update_with_alternate_care_of_address() {
    let coa = addr("2001:db8:2::7");
    let mut v = vec![0x3b, 0x03, 0x05, 0x00, 0x00, 0x00, 0x00, 0x01, 0x30, 0x00, 0xff, 0xff];
    v.extend_from_slice(&[0x01, 0x00, 0x03, 0x10]);
    v.extend_from_slice(&coa.octets());
    let want = BindingUpdate {
        sequence: 1,
        link_local_compatibility: true,
        key_management_mobility: true,
        lifetime: 0xffff,
        options: vec![MobilityOption::AlternateCareOfAddress(coa)],
        ..BindingUpdate::default()
    };
    let m = Message::new(Body::BindingUpdate(want));
    assert_eq!(Message::parse(&v).unwrap(), m);
    assert_eq!(m.to_vec().unwrap(), v);
}

/// §6.1.7 with Nonce Indices (§6.2.6, 2n) at 12 and Binding Authorization Data (§6.2.7, 8n+2)
/// at 18 (18 mod 8 = 2, no padding), 12 octets of authenticator: ends at 32, Header Len 3.
#[test]
fn binding_update_with_nonce_indices_and_authorization_data() {
    let mut v = vec![0x3b, 0x03, 0x05, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01];
    v.extend_from_slice(&[0x04, 0x04, 0x00, 0x0a, 0x00, 0x0b]);
    v.extend_from_slice(&[0x05, 0x0c]);
    v.extend_from_slice(&[0xaa; 12]);
    let m = Message::new(Body::BindingUpdate(BindingUpdate {
        sequence: 2,
        lifetime: 1,
        options: vec![
            MobilityOption::NonceIndices { home_nonce_index: 10, care_of_nonce_index: 11 },
            MobilityOption::BindingAuthorizationData(vec![0xaa; 12]),
        ],
        ..BindingUpdate::default()
    }));
    assert_eq!(Message::parse(&v).unwrap(), m);
    assert_eq!(m.to_vec().unwrap(), v);
}

/// §6.1.8 figure: Status 0, K clear, Sequence # 0x1234, Lifetime 150, then a Binding Refresh
/// Advice (§6.2.4, 2n, at offset 12) with Refresh Interval 75: 16 octets, Header Len 1.
const BA: [u8; 16] = [
    0x3b, 0x01, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x34, 0x00, 0x96, 0x02, 0x02, 0x00, 0x4b,
];

#[test]
fn binding_ack_from_figure() {
    let want = BindingAck {
        status: BaStatus::ACCEPTED,
        key_management_mobility: false,
        sequence: 0x1234,
        lifetime: 150,
        options: vec![MobilityOption::BindingRefreshAdvice { refresh_interval: 75 }],
    };
    let m = Message::new(Body::BindingAck(want));
    assert_eq!(Message::parse(&BA).unwrap(), m);
    assert_eq!(m.to_vec().unwrap(), BA.to_vec());
    // Status 135 with K set: octets 6 and 7 become 0x87 0x80.
    let mut v = BA;
    v[6] = 135;
    v[7] = 0x80;
    let Body::BindingAck(ba) = Message::parse(&v).unwrap().body else { panic!("not a BA") };
    assert_eq!(ba.status, BaStatus::SEQUENCE_NUMBER_OUT_OF_WINDOW);
    assert!(ba.key_management_mobility && !ba.status.is_accepted());
}

/// §6.1.9 figure: Status 2 (unrecognized MH Type), Reserved, Home Address: 6 + 18 = 24 octets,
/// Header Len 2, no padding.
#[test]
fn binding_error_from_figure() {
    let home = addr("2001:db8:1::100");
    let mut v = vec![0x3b, 0x02, 0x07, 0x00, 0x00, 0x00, 0x02, 0x00];
    v.extend_from_slice(&home.octets());
    let m = Message::new(Body::BindingError(BindingError {
        status: BeStatus::UNRECOGNIZED_MH_TYPE,
        home_address: home,
        options: vec![],
    }));
    assert_eq!(Message::parse(&v).unwrap(), m);
    assert_eq!(m.to_vec().unwrap(), v);
}

/// §6.1.2–§6.1.6 figures: BRR is 8 octets (Reserved only); HoTI/CoTI 16 (Reserved, cookie);
/// HoT/CoT 24 (nonce index, cookie, keygen token).
#[test]
fn return_routability_messages_from_figures() {
    let brr = [0x3b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00];
    assert_eq!(Message::parse(&brr).unwrap().body, Body::BindingRefreshRequest(vec![]));
    let mut hoti = vec![0x3b, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00];
    hoti.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let want = TestInit { cookie: [1, 2, 3, 4, 5, 6, 7, 8], options: vec![] };
    assert_eq!(Message::parse(&hoti).unwrap().body, Body::HomeTestInit(want.clone()));
    hoti[2] = 2;
    assert_eq!(Message::parse(&hoti).unwrap().body, Body::CareOfTestInit(want));
    let mut cot = vec![0x3b, 0x02, 0x04, 0x00, 0x00, 0x00, 0x01, 0x02];
    cot.extend_from_slice(&[9; 8]);
    cot.extend_from_slice(&[7; 8]);
    let m = Message::parse(&cot).unwrap();
    let want = Test { nonce_index: 0x0102, cookie: [9; 8], keygen_token: [7; 8], options: vec![] };
    assert_eq!(m.body, Body::CareOfTest(want));
    assert_eq!(m.to_vec().unwrap(), cot);
    // An MH Type this module does not know: its Message Data is kept.
    let unknown = [0x3b, 0x00, 0x30, 0x00, 0x00, 0x00, 0xde, 0xad];
    let m = Message::parse(&unknown).unwrap();
    assert_eq!(m.body, Body::Unknown { mh_type: MhType(0x30), data: vec![0xde, 0xad] });
    assert_eq!(m.to_vec().unwrap(), unknown.to_vec());
}

/// The checksum against a plain 16-bit word sum written out here (RFC 1071 arithmetic over the
/// §6.1.1 pseudo-header: source, destination, upper-layer length, three zero octets, 135).
#[test]
fn checksum_matches_word_sum() {
    let (src, dst) = (addr("2001:db8:1::100"), addr("2001:db8:1::1"));
    let mut buf = BU.to_vec();
    fill_checksum(src, dst, &mut buf).unwrap();
    let mut words = Vec::new();
    words.extend_from_slice(&src.octets());
    words.extend_from_slice(&dst.octets());
    words.extend_from_slice(&(BU.len() as u32).to_be_bytes());
    words.extend_from_slice(&[0, 0, 0, IPPROTO_MH]);
    words.extend_from_slice(&BU);
    let mut sum: u32 = words.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    assert_eq!(u16::from_be_bytes([buf[4], buf[5]]), !(sum as u16));
    assert!(verify_checksum(src, dst, &buf));
    // The care-of address in place of the home address gives another sum (§6.1.1).
    assert!(!verify_checksum(addr("2001:db8:2::7"), dst, &buf));
    buf[7] ^= 1;
    assert!(!MhPacket::new_checked(&buf[..]).unwrap().verify_checksum(src, dst));
}

/// §6.3 figure: a Destination Options header with Next Header 135, Hdr Ext Len 2 (24 octets);
/// the option must start at 8n+6, so a PadN with 2 octets of data fills offsets 2–5; then type
/// 201 (0xC9), length 16, the home address.
#[test]
fn home_address_option_from_figure() {
    let home = addr("2001:db8:1::100");
    let mut v = vec![IPPROTO_MH, 0x02, 0x01, 0x02, 0x00, 0x00, 0xc9, 0x10];
    v.extend_from_slice(&home.octets());
    let d = DestinationOptions::home_address(IPPROTO_MH, home);
    assert_eq!(d.to_vec().unwrap(), v);
    assert_eq!(DestinationOptions::parse(&v).unwrap(), (d.clone(), 24));
    assert_eq!(d.find_home_address(), Some(home));
    // Option Length 15 is refused by name.
    let mut bad = v.clone();
    bad[7] = 15;
    bad[5] = 0;
    assert!(matches!(
        DestinationOptions::parse(&bad),
        Err(WireError::BadLength { what: "home address option length", .. })
    ));
    // Two Home Address options are refused (§6.3: at most one).
    let two = DestinationOptions {
        next_header: IPPROTO_MH,
        options: vec![DestinationOption::HomeAddress(home), DestinationOption::HomeAddress(home)],
    };
    assert!(two.to_vec().is_err());
    let mut twice = vec![IPPROTO_MH, 0x05, 0x01, 0x02, 0x00, 0x00, 0xc9, 0x10];
    twice.extend_from_slice(&home.octets());
    twice.extend_from_slice(&[0x01, 0x04, 0, 0, 0, 0, 0xc9, 0x10]);
    twice.extend_from_slice(&home.octets());
    assert!(matches!(
        DestinationOptions::parse(&twice),
        Err(WireError::BadValue { what: "second home address option", .. })
    ));
}

/// §6.4 figure: Next Header, Hdr Ext Len 2, Routing Type 2, Segments Left 1, Reserved, Home
/// Address: 24 octets.
#[test]
fn routing_header_2_from_figure() {
    let home = addr("2001:db8:1::100");
    let mut v = vec![IPPROTO_MH, 0x02, 0x02, 0x01, 0, 0, 0, 0];
    v.extend_from_slice(&home.octets());
    let r = RoutingHeader2::new(IPPROTO_MH, home);
    assert_eq!(r.to_vec().unwrap().to_vec(), v);
    assert_eq!(RoutingHeader2::parse(&v).unwrap(), r);
    let err = |i: usize, b: u8| {
        let mut x = v.clone();
        x[i] = b;
        RoutingHeader2::parse(&x)
    };
    assert!(matches!(
        err(1, 4),
        Err(WireError::BadLength { what: "type 2 routing header hdr ext len", .. })
    ));
    assert!(matches!(err(2, 0), Err(WireError::BadValue { what: "routing type", .. })));
    assert!(matches!(
        err(3, 2),
        Err(WireError::BadValue { what: "type 2 routing header segments left", .. })
    ));
    assert!(matches!(RoutingHeader2::parse(&v[..20]), Err(WireError::Truncated { .. })));
}

#[test]
fn malformed_headers_name_the_field() {
    assert!(matches!(
        MhPacket::new_checked(&BU[..7]),
        Err(WireError::Truncated { what: "mobility header", .. })
    ));
    let mut long = BU;
    long[1] = 2;
    assert!(matches!(
        Message::parse(&long),
        Err(WireError::BadLength { what: "mobility header length", .. })
    ));
    // A BU whose Header Len leaves no room for its fixed fields.
    let short = [0x3b, 0x00, 0x05, 0x00, 0x00, 0x00, 0x12, 0x34];
    assert!(matches!(
        Message::parse(&short),
        Err(WireError::Truncated { what: "mobility message", .. })
    ));
    // An Alternate Care-of Address with Length 14.
    let mut v = vec![0x3b, 0x03, 0x05, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01];
    v.extend_from_slice(&[0x03, 0x0e]);
    v.extend_from_slice(&[0; 14]);
    v.extend_from_slice(&[0x01, 0x02, 0x00, 0x00]);
    assert!(matches!(
        Message::parse(&v),
        Err(WireError::BadLength { what: "alternate care-of address length", .. })
    ));
    // An option whose Length runs past the header.
    let mut v = BU;
    v[13] = 9;
    assert!(matches!(
        Message::parse(&v),
        Err(WireError::Truncated { what: "mobility option", .. })
    ));
    // Emit refuses an unknown option or message that claims a known number.
    let m = Message::new(Body::BindingRefreshRequest(vec![MobilityOption::Unknown {
        option_type: MobilityOptionType::PADN,
        data: vec![],
    }]));
    assert!(m.to_vec().is_err());
    let m = Message::new(Body::Unknown { mh_type: MhType::BINDING_UPDATE, data: vec![0, 0] });
    assert!(m.to_vec().is_err());
}

fn any_option() -> impl Strategy<Value = MobilityOption> {
    let v6 = any::<[u8; 16]>().prop_map(Ipv6Addr::from);
    prop_oneof![
        any::<u16>().prop_map(|r| MobilityOption::BindingRefreshAdvice { refresh_interval: r }),
        v6.prop_map(MobilityOption::AlternateCareOfAddress),
        (any::<u16>(), any::<u16>()).prop_map(|(h, c)| MobilityOption::NonceIndices {
            home_nonce_index: h,
            care_of_nonce_index: c
        }),
        prop::collection::vec(any::<u8>(), 0..40)
            .prop_map(MobilityOption::BindingAuthorizationData),
        (6u8.., prop::collection::vec(any::<u8>(), 0..20)).prop_map(|(t, data)| {
            MobilityOption::Unknown { option_type: MobilityOptionType(t), data }
        }),
    ]
}

fn any_body() -> impl Strategy<Value = Body> {
    let opts = || prop::collection::vec(any_option(), 0..5);
    let flags = any::<[bool; 4]>();
    prop_oneof![
        opts().prop_map(Body::BindingRefreshRequest),
        (any::<[u8; 8]>(), opts())
            .prop_map(|(cookie, options)| Body::HomeTestInit(TestInit { cookie, options })),
        (any::<u16>(), any::<[u8; 8]>(), any::<[u8; 8]>(), opts()).prop_map(|(n, c, k, o)| {
            Body::HomeTest(Test { nonce_index: n, cookie: c, keygen_token: k, options: o })
        }),
        (any::<u16>(), flags, any::<u16>(), opts()).prop_map(|(sequence, f, lifetime, options)| {
            Body::BindingUpdate(BindingUpdate {
                sequence,
                acknowledge: f[0],
                home_registration: f[1],
                link_local_compatibility: f[2],
                key_management_mobility: f[3],
                lifetime,
                options,
            })
        }),
        (any::<u8>(), any::<bool>(), any::<u16>(), any::<u16>(), opts()).prop_map(
            |(s, k, q, l, o)| {
                Body::BindingAck(BindingAck {
                    status: BaStatus(s),
                    key_management_mobility: k,
                    sequence: q,
                    lifetime: l,
                    options: o,
                })
            }
        ),
        (any::<u8>(), any::<[u8; 16]>(), opts()).prop_map(|(s, h, o)| {
            Body::BindingError(BindingError {
                status: BeStatus(s),
                home_address: h.into(),
                options: o,
            })
        }),
        (8u8.., (0usize..10))
            .prop_map(|(t, n)| Body::Unknown { mh_type: MhType(t), data: vec![t; 8 * n + 2] }),
    ]
}

proptest! {
    /// repr → emit → parse gives the repr back; every emitted header is a multiple of 8 octets
    /// and every option starts at its §6.2 alignment.
    #[test]
    fn message_round_trip(body in any_body(), proto in any::<u8>()) {
        let m = Message { payload_proto: proto, body };
        let v = m.to_vec().unwrap();
        prop_assert_eq!(v.len() % 8, 0);
        prop_assert_eq!(v.len(), m.buffer_len());
        prop_assert_eq!(Message::parse(&v).unwrap(), m.clone());
        let (s, d) = (Ipv6Addr::from([1; 16]), Ipv6Addr::from([2; 16]));
        let c = m.to_vec_with_checksum(s, d).unwrap();
        prop_assert!(verify_checksum(s, d, &c));
    }

    #[test]
    fn destination_options_round_trip(
        home in proptest::option::of(any::<[u8; 16]>()),
        unknown in prop::collection::vec((2u8..200, prop::collection::vec(any::<u8>(), 0..12)), 0..4),
        nh in any::<u8>(),
    ) {
        let mut options: Vec<DestinationOption> = unknown
            .into_iter()
            .map(|(option_type, data)| DestinationOption::Unknown { option_type, data })
            .collect();
        if let Some(h) = home {
            options.insert(options.len() / 2, DestinationOption::HomeAddress(h.into()));
        }
        let d = DestinationOptions { next_header: nh, options };
        let v = d.to_vec().unwrap();
        prop_assert_eq!(v.len() % 8, 0);
        prop_assert_eq!(DestinationOptions::parse(&v).unwrap(), (d, v.len()));
    }

    /// Any bytes: parsing never panics, and what parses re-emits to bytes that parse the same.
    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
        if let Ok(m) = Message::parse(&bytes) {
            if let Ok(v) = m.to_vec() {
                prop_assert_eq!(Message::parse(&v).unwrap(), m);
            }
        }
        if let Ok((d, _)) = DestinationOptions::parse(&bytes) {
            prop_assert_eq!(DestinationOptions::parse(&d.to_vec().unwrap()).unwrap().0, d);
        }
        let _ = RoutingHeader2::parse(&bytes);
    }
}
