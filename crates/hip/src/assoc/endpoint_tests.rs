//! An UPDATE that carries SEQ alone (cutehip sends such UPDATEs) is acknowledged.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use super::*;
use crypto::EcCurve;
use std::net::Ipv4Addr;
use wire::hip::{Ack, Header, Message, Param, Seq};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));

fn endpoint(local: IpAddr) -> Endpoint {
    let host = Arc::new(LocalHost::generate(EcCurve::P256).unwrap());
    let provider = crypto::default_provider();
    Endpoint::new(Time::ZERO, host, Config::default(), Timers::default(), provider, local).unwrap()
}

/// Hands every queued packet to the other side until both are quiet.
fn shuttle(now: Time, a: &mut Endpoint, b: &mut Endpoint) {
    for _ in 0..20 {
        let mut quiet = true;
        while let Some(t) = a.poll_transmit() {
            quiet = false;
            let _ = b.handle(now, t.from, &t.payload);
        }
        while let Some(t) = b.poll_transmit() {
            quiet = false;
            let _ = a.handle(now, t.from, &t.payload);
        }
        if quiet {
            return;
        }
    }
}

#[test]
fn an_update_with_seq_alone_is_acknowledged() {
    let (mut a, mut b) = (endpoint(A), endpoint(B));
    let now = Time::from_millis(1);
    a.initiate(now, b.hit(), B);
    shuttle(now, &mut a, &mut b);
    assert_eq!(a.state(&b.hit()), "ESTABLISHED");
    // B's UPDATE with SEQ 7 and nothing else, under B's HIP_MAC and signature.
    let up = match &b.assocs.get(&a.hit()).unwrap().state {
        State::Established(up) | State::R2Sent { up, .. } => up,
        _ => panic!("B holds no association"),
    };
    let est = &up.est;
    let m = Message::new(Header::new(PacketType::UPDATE, est.local_hit.0, est.peer.hit().0))
        .with(Seq { update_id: 7 });
    let m = crate::signed::protect(&b.host, est, m).unwrap();
    let update = crate::bex::seal(&m, B, A).unwrap();
    for _ in 0..2 {
        a.handle(now, B, &update).unwrap();
        let t = a.poll_transmit().expect("an answer to the UPDATE");
        assert_eq!(t.to, B);
        let ack = Message::parse(&t.payload).unwrap();
        assert_eq!(ack.header.packet_type, PacketType::UPDATE);
        let acked = ack.params.iter().find_map(|p| match p {
            Param::Ack(Ack { update_ids }) => Some(update_ids.clone()),
            _ => None,
        });
        assert_eq!(acked, Some(vec![7]));
        assert!(!ack.params.iter().any(|p| matches!(p, Param::Seq(_))), "a bare ACK");
        // B reads it as genuine (A's HIP_MAC and signature).
        b.handle(now, A, &t.payload).unwrap();
        assert!(a.poll_transmit().is_none());
    }
}
