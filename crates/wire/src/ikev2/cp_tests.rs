//! Byte-vector tests for the CP payload (RFC 7296 §3.15, Figure 23, and §3.15.1, Figure 24),
//! assembled field by field.

use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A CFG_REQUEST as a road warrior sends it: generic header (next 0, length 4 + 4 + 4 + 4 + 4),
/// CFG Type 1 and RESERVED, then INTERNAL_IP4_ADDRESS and INTERNAL_IP4_DNS with length zero, and
/// INTERNAL_IP6_ADDRESS with length zero.
const CFG_REQUEST: [u8; 20] = [
    0, 0, 0, 20, // generic payload header
    1, 0, 0, 0, // CFG Type CFG_REQUEST, RESERVED
    0, 1, 0, 0, // R=0, INTERNAL_IP4_ADDRESS, Length 0
    0, 3, 0, 0, // INTERNAL_IP4_DNS, Length 0
    0, 8, 0, 0, // INTERNAL_IP6_ADDRESS, Length 0
];

/// The CFG_REPLY: 10.3.0.1, DNS 10.3.0.53, 2001:db8::5/64.
const CFG_REPLY: [u8; 45] = [
    0, 0, 0, 45, // generic payload header
    2, 0, 0, 0, // CFG Type CFG_REPLY
    0, 1, 0, 4, 10, 3, 0, 1, // INTERNAL_IP4_ADDRESS 10.3.0.1
    0, 3, 0, 4, 10, 3, 0, 53, // INTERNAL_IP4_DNS 10.3.0.53
    0, 8, 0, 17, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5,
    64, // IP6 address
];

fn one(bytes: &[u8]) -> Result<Vec<Payload>, IkeError> {
    parse_chain(PayloadType::CP, bytes)
}

#[test]
fn cfg_request_with_empty_attributes() {
    // §3.15.1: "If an attribute in the CFG_REQUEST Configuration payload is not zero-length,
    // it is taken as a suggestion for that attribute." These are zero-length: Length 0, the
    // attribute table's "0 or 4 octets" being the value's length.
    let p = one(&CFG_REQUEST).unwrap();
    let Payload::Cp(cp) = &p[0] else { panic!("{p:?}") };
    assert_eq!(cp.cfg_type, CfgType::CFG_REQUEST);
    assert_eq!(
        cp.known().unwrap(),
        vec![
            KnownAttribute::Ip4Address(None),
            KnownAttribute::Ip4Dns(None),
            KnownAttribute::Ip6Address(None)
        ]
    );
    let mut out = vec![0; p[0].buffer_len()];
    emit_chain(&p, &mut out).unwrap();
    assert_eq!(out, CFG_REQUEST);
}

#[test]
fn cfg_reply_round_trip_from_typed_attributes() {
    let cp = Cp {
        cfg_type: CfgType::CFG_REPLY,
        attributes: [
            KnownAttribute::Ip4Address(Some(Ipv4Addr::new(10, 3, 0, 1))),
            KnownAttribute::Ip4Dns(Some(Ipv4Addr::new(10, 3, 0, 53))),
            KnownAttribute::Ip6Address(Some(("2001:db8::5".parse::<Ipv6Addr>().unwrap(), 64))),
        ]
        .into_iter()
        .map(CfgAttribute::from_known)
        .collect(),
    };
    let p = vec![Payload::Cp(cp.clone())];
    let mut out = vec![0; p[0].buffer_len()];
    emit_chain(&p, &mut out).unwrap();
    assert_eq!(out, CFG_REPLY);
    assert_eq!(one(&CFG_REPLY).unwrap(), p);
}

#[test]
fn unknown_attribute_kept_and_r_bit_ignored() {
    // §3.15.1: "Reserved (1 bit) - This bit MUST be set to zero and MUST be ignored on
    // receipt." An attribute type we do not know is kept as it came and skipped by `known`.
    let mut b = CFG_REQUEST.to_vec();
    b[3] = 28;
    b[8] = 0x80; // R bit on INTERNAL_IP4_ADDRESS
    b.extend_from_slice(&[0x5b, 0xa0, 0, 4, 192, 0, 2, 1]); // private-use type 0x5ba0
    let p = one(&b).unwrap();
    let Payload::Cp(cp) = &p[0] else { panic!("{p:?}") };
    assert_eq!(cp.attributes[0].attr_type, CfgAttrType::INTERNAL_IP4_ADDRESS);
    assert_eq!(cp.attributes[3].attr_type, CfgAttrType(0x5ba0));
    assert_eq!(cp.attributes[3].value, [192, 0, 2, 1]);
    assert_eq!(cp.known().unwrap().len(), 3);
}

#[test]
fn malformed_attributes_name_the_field() {
    // A value running past the payload.
    let mut b = CFG_REQUEST.to_vec();
    b[19] = 4;
    let e = one(&b).unwrap_err();
    assert!(matches!(e, IkeError::Truncated { what: "cp attribute value", .. }), "{e:?}");
    // An IPv4 address of 3 octets (§3.15.1: "0 or 4 octets").
    let cp = Cp {
        cfg_type: CfgType::CFG_REPLY,
        attributes: vec![CfgAttribute {
            attr_type: CfgAttrType::INTERNAL_IP4_ADDRESS,
            value: vec![10, 3, 0],
        }],
    };
    assert_eq!(cp.known().unwrap_err(), IkeError::BadLength { what: "cp ip4 address", value: 3 });
    // A prefix length above 128.
    let mut v = vec![0; 16];
    v.push(129);
    let a = CfgAttribute { attr_type: CfgAttrType::INTERNAL_IP6_ADDRESS, value: v };
    assert_eq!(
        a.known().unwrap_err(),
        IkeError::BadValue { what: "cp ip6 prefix length", value: 129 }
    );
    // A truncated CFG Type header.
    assert!(Cp::parse(&[1, 0]).is_err());
    // An attribute type that does not fit in 15 bits cannot be written.
    let cp = Cp {
        cfg_type: CfgType::CFG_REQUEST,
        attributes: vec![CfgAttribute::request(CfgAttrType(0x8001))],
    };
    let mut out = vec![0; cp.buffer_len()];
    assert!(cp.emit(&mut out).is_err());
}

proptest::proptest! {
    /// The fuzz target's property on well-framed bodies (random CFG type, attribute types with
    /// the R bit either way, values of any length): each parses, re-emits to the same bytes
    /// with the R bits cleared, and a typed attribute re-encodes to its value.
    #[test]
    fn parse_emit_round_trip(
        cfg_type in proptest::prelude::any::<u8>(),
        attrs in proptest::collection::vec(
            (0u16..=0xffff, proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20)),
            0..6,
        ),
    ) {
        let mut body = vec![cfg_type, 0, 0, 0];
        let mut cleared = body.clone();
        for (t, v) in &attrs {
            for (out, t) in [(&mut body, *t), (&mut cleared, *t & 0x7fff)] {
                out.extend_from_slice(&t.to_be_bytes());
                out.extend_from_slice(&(v.len() as u16).to_be_bytes());
                out.extend_from_slice(v);
            }
        }
        let cp = Cp::parse(&body).unwrap();
        proptest::prop_assert_eq!(cp.attributes.len(), attrs.len());
        let mut out = vec![0; cp.buffer_len()];
        cp.emit(&mut out).unwrap();
        proptest::prop_assert_eq!(&out, &cleared);
        for a in &cp.attributes {
            if let Ok(Some(k)) = a.known() {
                proptest::prop_assert_eq!(&CfgAttribute::from_known(k), a);
            }
        }
    }
}
