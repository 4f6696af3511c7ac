//! The outbound tables follow `SetEndpoint` (a home agent's tunnel moving to a new care-of
//! address, RFC 6275 §10.3.1) without touching the SA: same handle, same sequence numbers.

use super::*;
use ipsec::{PacketBuf, Time};

const EXAMPLE: &str = include_str!("../../../../docs/node-example.toml");

fn out_sa() -> Box<SecurityAssociation> {
    let c = crate::config::parse("node.toml", EXAMPLE).unwrap();
    let s = c.sas.iter().find(|s| s.direction == crate::config::sa::Direction::Out).unwrap();
    Box::new(SecurityAssociation::new(&s.params, crypto::default_provider(), Time(0)).unwrap())
}

#[test]
fn set_endpoint_moves_one_sa_and_keeps_its_sequence_numbers() {
    let mut e = Engine::new(crypto::default_provider());
    let mut t = OutTables::from_engine(&e);
    let mut default_peer = None;
    let sa = out_sa();
    let key = out_key(&sa);
    t.apply(
        &mut e,
        Update::AddOutbound { key, sa, endpoint: None, raw_ip: false },
        &mut default_peer,
    )
    .unwrap();
    let h = t.handle(&key).unwrap();
    assert_eq!(t.endpoint(h), None);
    // One packet sealed: sequence number 1 used.
    let mut b = PacketBuf::with_max_packet();
    let p = [0x45, 0, 0, 20, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
    b.load(&p, ipsec::buf::DEFAULT_HEADROOM).unwrap();
    e.protect_with(&[h], &mut b, Time(1)).unwrap();
    let to: SocketAddr = "[2001:db8:3::100]:0".parse().unwrap();
    t.apply(&mut e, Update::SetEndpoint { key, endpoint: to }, &mut default_peer).unwrap();
    assert_eq!(t.handle(&key), Some(h), "the same SA");
    assert_eq!(t.endpoint(h), Some(to));
    assert_eq!(e.outbound_sas().next().map(|s| s.last_seq_out().0), Some(1));
    assert_eq!(default_peer, None, "the node's default peer is not moved");
    // An SA that is not there: refused, nothing changed.
    let other = OutKey { spi: key.spi + 1, ..key };
    assert!(
        t.apply(&mut e, Update::SetEndpoint { key: other, endpoint: to }, &mut default_peer)
            .is_err()
    );
}
