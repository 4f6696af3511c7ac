//! The path accounting over made-up counter snapshots: each kind of loss lands in its part.

use super::*;

const TUN: &str = "hbtun0";
const N: u64 = 50_000;

/// Counters before a phase: nothing much, but not zero (a node that ran before).
fn before() -> Snapshot {
    let node = NodeCounts { tun_rx: 7, tun_tx: 9, net_rx: 11, net_tx: 13, ..Default::default() };
    let k = |pairs: &[(&str, u64)]| pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    Snapshot {
        node_a: node,
        node_b: node,
        kernel_a: k(&[("udp_SndbufErrors", 1), ("hb-a_tx_dropped", 2), ("hbtun0_tx_dropped", 3)]),
        kernel_b: k(&[("udp_InErrors", 4), ("hb-b_rx_dropped", 5), ("hbtun0_rx_dropped", 6)]),
    }
}

/// `before` after a phase in which every hop passed `n` datagrams on (each hop's count
/// given by `hops`: A read, A sent, B received, B wrote).
fn after(hops: [u64; 4]) -> Snapshot {
    let mut s = before();
    s.node_a.tun_rx += hops[0];
    s.node_a.net_tx += hops[1];
    s.node_b.net_rx += hops[2];
    s.node_b.tun_tx += hops[3];
    s
}

fn bump(m: &mut BTreeMap<String, u64>, k: &str, by: u64) {
    *m.entry(k.to_string()).or_insert(0) += by;
}

fn stream(received: u64) -> StreamCounts {
    StreamCounts { sent: N, received, socket_drops: Some(0), ..Default::default() }
}

#[test]
fn nothing_lost() {
    let a = account(&stream(N), &before(), &after([N; 4]), TUN);
    assert_eq!(a.lost, 0);
    assert_eq!(a.breakdown, LossBreakdown::default());
    assert!(a.counters_add_up);
    assert_eq!(a.path.node_b_wrote, N);
}

/// 496 of 50,000 lost with no rekey: node B wrote every one to its TUN device and the
/// receiving socket's buffer dropped them (SO_RXQ_OVFL). Not the node's loss.
#[test]
fn receiver_socket_overflow_is_not_the_nodes() {
    let mut s = stream(N - 496);
    s.socket_drops = Some(496);
    let mut after = after([N; 4]);
    bump(&mut after.kernel_b, "udp_InErrors", 496);
    bump(&mut after.kernel_b, "udp_RcvbufErrors", 496);
    let a = account(&s, &before(), &after, TUN);
    assert_eq!(a.lost, 496);
    assert_eq!(a.breakdown, LossBreakdown { receiver_socket: 496, ..Default::default() });
    assert_eq!(a.breakdown.outside_node(), 496);
    // Without SO_RXQ_OVFL the same loss is B's kernel's (after node B), still not the node's.
    s.socket_drops = None;
    let a = account(&s, &before(), &after, TUN);
    assert_eq!(a.breakdown, LossBreakdown { receiving_kernel: 496, ..Default::default() });
}

#[test]
fn the_nodes_losses() {
    // Node A read 50,000 and sent 49,990 (no SA for ten, say); node B lost 3 more.
    let a = account(&stream(N - 13), &before(), &after([N, N - 10, N - 10, N - 13]), TUN);
    assert_eq!(a.breakdown, LossBreakdown { node: 13, ..Default::default() });
    assert_eq!(a.breakdown.outside_node(), 0);
}

#[test]
fn between_the_nodes_by_the_kernels_counters() {
    // Ten sent by A never reached node B: B's carrier socket dropped 5 (InErrors), A's veth 3
    // (tx_dropped), and 2 have no counter.
    let mut after = after([N, N, N - 10, N - 10]);
    bump(&mut after.kernel_b, "udp_InErrors", 5);
    bump(&mut after.kernel_a, "hb-a_tx_dropped", 3);
    let a = account(&stream(N - 10), &before(), &after, TUN);
    let want = LossBreakdown {
        receiving_kernel: 5,
        sending_kernel: 3,
        unexplained: 2,
        ..Default::default()
    };
    assert_eq!(a.breakdown, want);
    assert!(a.counters_add_up);
    // B's device rx drops count as B's kernel's too.
    let mut after = self::after([N, N, N - 4, N - 4]);
    bump(&mut after.kernel_b, "hb-b_rx_dropped", 4);
    let a = account(&stream(N - 4), &before(), &after, TUN);
    assert_eq!(a.breakdown, LossBreakdown { receiving_kernel: 4, ..Default::default() });
}

#[test]
fn in_the_sending_kernel_and_at_the_sender() {
    // The sender gave up on 2; A's kernel dropped 6 before node A read them (TUN queue full).
    let mut s = stream(N - 8);
    s.sender_lost = 2;
    s.send_retries = 40;
    let mut after = after([N - 8, N - 8, N - 8, N - 8]);
    bump(&mut after.kernel_a, "hbtun0_tx_dropped", 6);
    let a = account(&s, &before(), &after, TUN);
    assert_eq!(a.breakdown, LossBreakdown { sender: 2, sending_kernel: 6, ..Default::default() });
    assert_eq!(a.send_retries, 40);
    assert_eq!(a.path.handed_to_kernel, N - 2);
}

#[test]
fn keepalives_and_punted_packets_are_not_the_streams() {
    let mut after = after([N, N, N + 5, N]);
    after.node_b.keepalives += 3;
    after.node_b.punted += 2;
    let a = account(&stream(N), &before(), &after, TUN);
    assert_eq!(a.breakdown, LossBreakdown::default());
    // Had they been counted as the stream's, node B would seem to have lost 5.
    let a = account(&stream(N), &before(), &self::after([N, N, N + 5, N]), TUN);
    assert_eq!(a.breakdown.node, 5);
    assert!(!a.counters_add_up, "{a:?}");
}

#[test]
fn after_node_b_it_is_the_receiving_kernels_counted_or_not() {
    // Node B wrote all 50,000 to its TUN device, 7 never reached the socket and no counter
    // moved: B's kernel lost them, whatever it counted.
    let a = account(&stream(N - 7), &before(), &after([N; 4]), TUN);
    assert_eq!(a.breakdown, LossBreakdown { receiving_kernel: 7, ..Default::default() });
    assert!(a.counters_add_up);
}

#[test]
fn between_the_nodes_without_a_counter_is_unexplained() {
    let a = account(&stream(N - 7), &before(), &after([N, N, N - 7, N - 7]), TUN);
    assert_eq!(a.breakdown, LossBreakdown { unexplained: 7, ..Default::default() });
    assert!(a.counters_add_up);
}

/// The reported run: 496 datagrams lost at the receiving socket in the phase without
/// rekeys, none while rekeying. Zero loss; the 496 are reported beside the reference.
#[test]
fn the_verdict_speaks_of_the_rekeying_phase_only() {
    let mut s = stream(N - 496);
    s.socket_drops = Some(496);
    let reference = account(&s, &before(), &after([N; 4]), TUN);
    let rekeying = account(&stream(N), &before(), &after([N; 4]), TUN);
    let phase = |rekeying, node_drops, udp| PhaseLoss { rekeying, node_drops, udp };
    let v = verdict([phase(false, 0, Some(&reference)), phase(true, 0, Some(&rekeying))]);
    assert!(v.zero_loss, "{v:?}");
    assert_eq!((v.reference_outside_node, v.rekeying_outside_node), (496, 0));
    // Loss outside the nodes while rekeying does not fail it either.
    let v = verdict([phase(true, 0, Some(&reference))]);
    assert!(v.zero_loss && v.rekeying_outside_node == 496, "{v:?}");
    // A node drop while rekeying (TCP phase: counters only) fails it.
    let v = verdict([phase(true, 2, None), phase(true, 0, Some(&rekeying))]);
    assert!(!v.zero_loss);
    assert_eq!(v.rekeying_node_losses, 2);
    // So does a datagram lost in a node while rekeying; the same in the reference does not.
    let in_node = account(&stream(N - 1), &before(), &after([N, N - 1, N - 1, N - 1]), TUN);
    assert!(!verdict([phase(true, 0, Some(&in_node))]).zero_loss);
    let v = verdict([phase(false, 1, Some(&in_node)), phase(true, 0, Some(&rekeying))]);
    assert!(v.zero_loss);
    assert_eq!(v.reference_node_losses, 2);
}
