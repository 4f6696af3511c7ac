//! Fuzz target: any bytes as a HIPv2 packet (RFC 7401 §5). The header view, the parameter walk
//! and every known parameter's repr must not panic; every parameter that parses must re-emit to
//! a TLV that parses to the same repr; a whole message that parses must round-trip; the
//! signed-portion helpers must keep the Header Length consistent. The same bytes are also read
//! as a bare parameter sequence (the plaintext of an ENCRYPTED parameter). Every HOST_ID that
//! parses is read as a host identity (ECDSA or RSA, RFC 7401 §5.2.9): it must not panic, and one
//! that is accepted keeps the Host Identity field's octets (the HIT is over them).
#![no_main]

use std::net::{IpAddr, Ipv6Addr};

use libfuzzer_sys::fuzz_target;
use wire::hip::{
    Message, Packet, Param, ParamType, Params, compute_checksum, emit_params, parse_params,
    verify_checksum,
};

fn params_round_trip(bytes: &[u8]) {
    for raw in Params::new(bytes) {
        let Ok(raw) = raw else { break };
        assert!(raw.offset + raw.padded_len() <= bytes.len());
        assert_eq!(raw.is_critical(), raw.param_type.0 & 1 == 1);
        if let Ok(p) = Param::from_raw(&raw) {
            assert_eq!(p.param_type(), raw.param_type);
            if let Param::HostId(h) = &p
                && let Ok(id) = hip::HostIdentity::parse(h.algorithm.0, &h.host_identity)
            {
                assert_eq!(id.encoded(), &h.host_identity[..]);
                assert_eq!(id.algorithm(), h.algorithm.0);
                assert_eq!(id.hit().suite(), Some(id.suite()));
            }
            let mut out = vec![0u8; p.buffer_len()];
            p.emit(&mut out).expect("a parsed parameter re-emits");
            assert_eq!(out.len() % 8, 0);
            let again = Params::new(&out).next().expect("one TLV").expect("re-emitted TLV walks");
            assert_eq!(Param::from_raw(&again).expect("re-emitted TLV parses"), p);
        }
    }
    if let Ok(ps) = parse_params(bytes) {
        let out = emit_params(&ps).expect("parsed parameters re-emit");
        assert_eq!(parse_params(&out).expect("re-emitted parameters parse"), ps);
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Packet::new_checked(data) {
        let _ = (p.next_header(), p.packet_type(), p.controls(), p.sender_hit(), p.receiver_hit());
        assert_eq!(p.len(), (usize::from(p.header_length()) + 1) * 8);
        params_round_trip(p.param_bytes());
        let _ = p.find(ParamType::HOST_ID);
        for ty in [ParamType::HIP_MAC, ParamType::HIP_SIGNATURE_2, ParamType::HIP_SIGNATURE] {
            if let Ok(part) = p.to_vec_before(ty) {
                let q = Packet::new_checked(&part[..]).expect("the signed portion is a packet");
                assert_eq!(q.len(), part.len());
                assert_eq!(q.checksum(), 0);
            }
        }
        let (a, b) = (IpAddr::V6(Ipv6Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::UNSPECIFIED));
        let mut fixed = p.as_bytes().to_vec();
        let c = compute_checksum(a, b, &fixed);
        fixed[4..6].copy_from_slice(&c.to_be_bytes());
        assert!(verify_checksum(a, b, &fixed));
    }
    if let Ok(m) = Message::parse(data) {
        let bytes = m.to_vec().expect("a parsed message re-emits");
        assert_eq!(bytes.len(), m.buffer_len());
        assert_eq!(Message::parse(&bytes).expect("re-emitted bytes parse"), m);
    }
    params_round_trip(data);
});
