//! Where the datagrams of a `hipsec bench rekey` UDP phase were lost: the path A's application
//! → A's kernel → node A → the kernels between the nodes → node B → B's kernel → B's socket,
//! counted at each hop (the bench's own counts, each node's TUN and carrier counters, the
//! kernels' drop counters and the receiving socket's SO_RXQ_OVFL count). A pure function of
//! the counters before and after the phase, so that a loss is told where it happened and the
//! rekeys are charged only with what the nodes lost.

use serde::Serialize;
use std::collections::BTreeMap;

/// A node's data-path counters (`hipsec status`, `node`), the ones the path accounting reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NodeCounts {
    /// Packets read from the TUN device.
    pub tun_rx: u64,
    /// Packets written to the TUN device.
    pub tun_tx: u64,
    /// Packets received on the carrier (ESP in UDP, keepalives, punted control packets).
    pub net_rx: u64,
    /// Protected packets sent on the carrier.
    pub net_tx: u64,
    /// NAT-keepalives received (not ESP: no datagram of the stream).
    pub keepalives: u64,
    /// Control packets handed to the control thread (not ESP either).
    pub punted: u64,
}

impl NodeCounts {
    /// Reads them from a `status` document.
    pub fn from_status(st: &serde_json::Value) -> NodeCounts {
        let n = |k: &str| st["node"][k].as_u64().unwrap_or(0);
        NodeCounts {
            tun_rx: n("tun_rx"),
            tun_tx: n("tun_tx"),
            net_rx: n("net_rx"),
            net_tx: n("net_tx"),
            keepalives: n("keepalives"),
            punted: n("punted"),
        }
    }

    fn since(&self, b: &NodeCounts) -> NodeCounts {
        NodeCounts {
            tun_rx: self.tun_rx.saturating_sub(b.tun_rx),
            tun_tx: self.tun_tx.saturating_sub(b.tun_tx),
            net_rx: self.net_rx.saturating_sub(b.net_rx),
            net_tx: self.net_tx.saturating_sub(b.net_tx),
            keepalives: self.keepalives.saturating_sub(b.keepalives),
            punted: self.punted.saturating_sub(b.punted),
        }
    }
}

/// The counters of both nodes and both namespaces' kernels at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Node A (the sender's side).
    pub node_a: NodeCounts,
    /// Node B (the receiver's side).
    pub node_b: NodeCounts,
    /// Kernel drop counters of A's namespace: `udp_InErrors`, `udp_RcvbufErrors`,
    /// `udp_SndbufErrors`, `DEV_rx_dropped`, `DEV_tx_dropped` (as `bench_rekey` reads them).
    pub kernel_a: BTreeMap<String, u64>,
    /// The same in B's namespace.
    pub kernel_b: BTreeMap<String, u64>,
}

/// What the bench itself counted of one stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StreamCounts {
    /// Datagrams the stream was to send.
    pub sent: u64,
    /// Distinct datagrams the receiving socket got.
    pub received: u64,
    /// Datagrams the sender gave up on (sendto failing until the sender's deadline) or sent
    /// short: never handed whole to the kernel.
    pub sender_lost: u64,
    /// sendto calls that failed and were retried (ENOBUFS, say): no loss, reported.
    pub send_retries: u64,
    /// The kernel's count of datagrams dropped at the receiving socket (SO_RXQ_OVFL, as the
    /// last datagram received carried it); None where the kernel gave none.
    pub socket_drops: Option<u64>,
}

/// Lost datagrams by where they were lost; the parts add up to the phase's loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LossBreakdown {
    /// Never handed to the kernel by the sender.
    pub sender: u64,
    /// In A's kernel: handed to it but never read by node A from the TUN device, or sent by
    /// node A and dropped by a device of A (its tx_dropped).
    pub sending_kernel: u64,
    /// In the nodes: read by node A and never sent, or received by node B and never written to
    /// its TUN device (the nodes' drop counters say why).
    pub node: u64,
    /// In B's kernel: dropped before node B read it (a device's rx_dropped, the carrier
    /// socket's buffer: UDP InErrors) or after node B wrote it, before the receiving socket.
    pub receiving_kernel: u64,
    /// At the receiving socket (its buffer full: SO_RXQ_OVFL).
    pub receiver_socket: u64,
    /// Lost with no counter to show where (between the nodes without a device or socket
    /// drop to show it, or counters that do not add up).
    pub unexplained: u64,
}

impl LossBreakdown {
    /// The sum of the parts.
    pub fn total(&self) -> u64 {
        self.sender
            + self.sending_kernel
            + self.node
            + self.receiving_kernel
            + self.receiver_socket
            + self.unexplained
    }

    /// Datagrams lost outside the nodes (everything but `node`).
    pub fn outside_node(&self) -> u64 {
        self.total() - self.node
    }
}

/// The datagrams of the stream at each hop of the path over the phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PathCounts {
    /// Handed to A's kernel by the sender.
    pub handed_to_kernel: u64,
    /// Read by node A from its TUN device.
    pub node_a_read: u64,
    /// Sent by node A on the carrier.
    pub node_a_sent: u64,
    /// ESP received by node B on the carrier.
    pub node_b_received: u64,
    /// Written by node B to its TUN device.
    pub node_b_wrote: u64,
    /// Received by the receiving socket.
    pub received: u64,
}

/// One UDP phase's account: what was sent and received, and where the rest went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UdpAccount {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams received.
    pub received: u64,
    /// sent − received.
    pub lost: u64,
    /// sendto calls retried (no loss).
    pub send_retries: u64,
    /// Where the lost ones were lost.
    pub breakdown: LossBreakdown,
    /// The stream's datagrams at each hop.
    pub path: PathCounts,
    /// The parts add up to `lost`; false when some hop counted more than the one before it
    /// (other traffic through a counter), so the parts overstate the loss.
    pub counters_add_up: bool,
}

fn delta(after: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>, key: &str) -> u64 {
    after.get(key).copied().unwrap_or(0).saturating_sub(before.get(key).copied().unwrap_or(0))
}

/// The sum of `DEV_suffix` over the devices of a namespace but `skip`.
fn devices(
    after: &BTreeMap<String, u64>,
    before: &BTreeMap<String, u64>,
    suffix: &str,
    skip: &str,
) -> u64 {
    after
        .keys()
        .filter(|k| k.ends_with(suffix) && k.strip_suffix(suffix) != Some(skip))
        .map(|k| delta(after, before, k))
        .sum()
}

/// Where the datagrams of a stream from A to B were lost between `before` and `after`; `tun`
/// is the nodes' TUN device. The UDP phase carries nothing else through the tunnel, so the
/// nodes' TUN and carrier counters count the stream's datagrams at each hop.
pub fn account(
    stream: &StreamCounts,
    before: &Snapshot,
    after: &Snapshot,
    tun: &str,
) -> UdpAccount {
    let a = after.node_a.since(&before.node_a);
    let b = after.node_b.since(&before.node_b);
    let (ka, ka0, kb, kb0) = (&after.kernel_a, &before.kernel_a, &after.kernel_b, &before.kernel_b);
    let lost = stream.sent.saturating_sub(stream.received);
    let path = PathCounts {
        handed_to_kernel: stream.sent.saturating_sub(stream.sender_lost),
        node_a_read: a.tun_rx,
        node_a_sent: a.net_tx,
        node_b_received: b.net_rx.saturating_sub(b.keepalives + b.punted),
        node_b_wrote: b.tun_tx,
        received: stream.received,
    };
    // Each hop's loss is what entered it and did not leave it.
    let in_a_kernel = path.handed_to_kernel.saturating_sub(path.node_a_read);
    let in_node_a = path.node_a_read.saturating_sub(path.node_a_sent);
    let between = path.node_a_sent.saturating_sub(path.node_b_received);
    let in_node_b = path.node_b_received.saturating_sub(path.node_b_wrote);
    let after_node_b = path.node_b_wrote.saturating_sub(path.received);
    let socket = stream.socket_drops.unwrap_or(0);
    let receiver_socket = after_node_b.min(socket);
    // Between the nodes: B's carrier socket (InErrors, less the receiving socket's own drops)
    // and B's devices' rx drops, then A's devices' tx drops (not the TUN device: that is the
    // sender's side of node A, counted by hop).
    let b_wire = delta(kb, kb0, "udp_InErrors").saturating_sub(socket)
        + devices(kb, kb0, "_rx_dropped", tun);
    let recv_between = between.min(b_wire);
    let send_between = (between - recv_between).min(devices(ka, ka0, "_tx_dropped", tun));
    let mut breakdown = LossBreakdown {
        sender: stream.sender_lost.min(lost),
        sending_kernel: in_a_kernel + send_between,
        node: in_node_a + in_node_b,
        receiving_kernel: recv_between + (after_node_b - receiver_socket),
        receiver_socket,
        unexplained: between - recv_between - send_between,
    };
    // Counters that do not add up (other traffic, a counter that moved late) leave a
    // remainder: unexplained, never charged to a hop.
    let counted = breakdown.total();
    breakdown.unexplained += lost.saturating_sub(counted);
    UdpAccount {
        sent: stream.sent,
        received: stream.received,
        lost,
        send_retries: stream.send_retries,
        breakdown,
        path,
        counters_add_up: breakdown.total() == lost,
    }
}

/// One phase as the verdict sees it.
#[derive(Debug, Clone, Copy)]
pub struct PhaseLoss<'a> {
    /// The pair was rekeyed during it.
    pub rekeying: bool,
    /// How far the nodes' drop counters moved (both nodes, every reason).
    pub node_drops: u64,
    /// The UDP account, for a UDP phase.
    pub udp: Option<&'a UdpAccount>,
}

/// The bench's verdict: of the rekeying phases only, and of the nodes only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verdict {
    /// No node-side loss while rekeying.
    pub zero_loss: bool,
    /// Rekeying phases: drop counter increments plus UDP datagrams lost in the nodes (a
    /// datagram can be in both; zero means none of either).
    pub rekeying_node_losses: u64,
    /// Rekeying phases: UDP datagrams lost outside the nodes.
    pub rekeying_outside_node: u64,
    /// The same two for the reference phases, without rekeys: reported, never the verdict's.
    pub reference_node_losses: u64,
    /// Reference phases: UDP datagrams lost outside the nodes.
    pub reference_outside_node: u64,
}

/// The verdict over the phases: zero loss when the nodes dropped and lost nothing while
/// rekeying. A loss in the kernels or at a socket is not the rekeys' doing, in either phase.
pub fn verdict<'a>(phases: impl IntoIterator<Item = PhaseLoss<'a>>) -> Verdict {
    let mut v = Verdict::default();
    for p in phases {
        let node = p.node_drops + p.udp.map_or(0, |u| u.breakdown.node);
        let outside = p.udp.map_or(0, |u| u.breakdown.outside_node());
        if p.rekeying {
            v.rekeying_node_losses += node;
            v.rekeying_outside_node += outside;
        } else {
            v.reference_node_losses += node;
            v.reference_outside_node += outside;
        }
    }
    v.zero_loss = v.rekeying_node_losses == 0;
    v
}

#[cfg(test)]
#[path = "bench_rekey_loss_tests.rs"]
mod tests;
