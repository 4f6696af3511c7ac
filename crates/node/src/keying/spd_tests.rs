//! The inbound SPD the node builds from its policies (RFC 4301 §5.2): what a peer may send
//! through an SA is what the mirrored policy covers.

use super::*;
use crate::config;
use ipsec::{DropReason, PacketBuf, Processed};

const EXAMPLE: &str = include_str!("../../../../docs/node-example.toml");

/// An IPv4/UDP packet from `src` to `dst` with a short payload (checksums are not checked by
/// the engine: the inner header is the peer's business).
fn udp4(src: [u8; 4], dst: [u8; 4]) -> PacketBuf {
    let mut p = vec![0x45, 0, 0, 36, 0, 1, 0x40, 0, 64, 17, 0, 0];
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 16, 0, 0]);
    p.extend_from_slice(b"hipsec-p");
    let mut b = PacketBuf::with_max_packet();
    b.load(&p, ipsec::buf::DEFAULT_HEADROOM).unwrap();
    b
}

/// The peer (B of the example): it seals with the SA that A has inbound, under a policy wider
/// than A's, so that it can send what A's policy does not cover.
fn peer_engine(c: &NodeConfig) -> Engine {
    let mut e = Engine::new(crypto::default_provider());
    let in_sa = c.sas.iter().find(|s| s.direction == Direction::In).unwrap();
    let h = e.add_outbound(&in_sa.params, Time(0)).unwrap();
    let any: ipsec::spd::Prefix = "0.0.0.0/0".parse().unwrap();
    let selector = Selector { src: any, dst: any, proto: None, src_ports: None, dst_ports: None };
    e.add_policy(SpdEntry { selector, action: Action::Protect(vec![h.0]) }).unwrap();
    e
}

fn through(c: &NodeConfig, src: [u8; 4], dst: [u8; 4]) -> Result<Processed, DropReason> {
    let mut peer = peer_engine(c);
    let (mut a, _) = build_engine_for(c, Time(0), false, true, 0).unwrap();
    let mut b = udp4(src, dst);
    assert!(matches!(peer.outbound(&mut b, Time(0)), Ok(Processed::Protected { .. })));
    a.inbound(&mut b, Time(0))
}

#[test]
fn inner_addresses_inside_the_policy_pass() {
    let c = config::parse("example.toml", EXAMPLE).unwrap();
    assert!(matches!(
        through(&c, [10, 0, 0, 2], [10, 0, 0, 1]),
        Ok(Processed::Decapsulated { .. })
    ));
}

#[test]
fn inner_addresses_outside_the_policy_are_dropped() {
    let c = config::parse("example.toml", EXAMPLE).unwrap();
    // A valid SA, a valid ICV, but an inner source the policy does not name.
    assert_eq!(through(&c, [10, 9, 9, 9], [10, 0, 0, 1]), Err(DropReason::InboundPolicyMismatch));
    assert_eq!(through(&c, [10, 0, 0, 2], [172, 16, 0, 1]), Err(DropReason::InboundPolicyMismatch));
}

#[test]
fn in_sas_restricts_which_sa_may_carry_the_traffic() {
    // A second inbound SA, and the policy naming only that one: traffic on the first is refused.
    let extra = "[[sa]]\nname = \"b-to-a-2\"\ndirection = \"in\"\nproto = \"esp\"\n\
                 mode = \"tunnel\"\nsrc = \"192.0.2.2\"\ndst = \"192.0.2.1\"\n\
                 spi = \"0x00002002\"\naead = \"aes128gcm\"\n\
                 key = \"0x202122232425262728292a2b2c2d2e2f_c0c1c2c3\"\n\n";
    let t = EXAMPLE.replacen("[[policy]]", &format!("{extra}[[policy]]"), 1).replacen(
        "sas = [\"a-to-b\"]",
        "sas = [\"a-to-b\"]\nin-sas = [\"b-to-a-2\"]",
        1,
    );
    let c = config::parse("t.toml", &t).unwrap();
    let p = c.policies.iter().find(|p| !p.in_sas.is_empty()).unwrap();
    assert_eq!(c.sas[p.in_sas[0]].name.as_deref(), Some("b-to-a-2"));
    assert_eq!(through(&c, [10, 0, 0, 2], [10, 0, 0, 1]), Err(DropReason::InboundPolicyMismatch));
}

#[test]
fn in_sas_errors_name_the_field() {
    let t = EXAMPLE.replacen("sas = [\"a-to-b\"]", "sas = [\"a-to-b\"]\nin-sas = [\"a-to-b\"]", 1);
    let e = config::parse("t.toml", &t).unwrap_err().to_string();
    assert!(e.contains("\"in-sas\"") && e.contains("inbound SAs only"), "{e}");
    let t = EXAMPLE.replacen("sas = [\"a-to-b\"]", "sas = [\"a-to-b\"]\nin-sas = [\"nope\"]", 1);
    let e = config::parse("t.toml", &t).unwrap_err().to_string();
    assert!(e.contains("\"in-sas\"") && e.contains("no SA named"), "{e}");
    let t = EXAMPLE.replacen("dst-ports = 9 ", "dst-ports = 9\nin-sas = [\"b-to-a\"] ", 1);
    let e = config::parse("t.toml", &t).unwrap_err().to_string();
    assert!(e.contains("\"in-sas\"") && e.contains("discard takes no SAs"), "{e}");
}
