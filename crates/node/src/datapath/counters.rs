//! The data path's own counters (the engine counts its drops by `ipsec::DropReason`).

use serde_json::Value;

macro_rules! counters {
    ($($(#[doc = $doc:literal])* $f:ident,)*) => {
        /// Counters of the node (the engine counts its own drops).
        #[derive(Debug, Clone, Default)]
        pub struct NodeCounters { $($(#[doc = $doc])* pub $f: u64,)* }

        impl NodeCounters {
            /// `(field, doc comment)` of every counter: the metrics' help text (`crate::metrics`).
            pub const HELP: &'static [(&'static str, &'static str)] =
                &[$((stringify!($f), concat!($($doc),*)),)*];
            /// As JSON.
            pub fn to_json(&self) -> Value {
                // A map built field by field: `json!` over this many fields exceeds the
                // macro recursion limit.
                let mut m = serde_json::Map::new();
                $(m.insert(stringify!($f).into(), self.$f.into());)*
                Value::Object(m)
            }
            /// Adds `o` to these counters.
            pub fn add(&mut self, o: &NodeCounters) {
                $(self.$f += o.$f;)*
            }
        }
    };
}

counters! {
    /// Packets read from the TUN device (segments, after splitting super-packets).
    tun_rx,
    /// Packets written to the TUN device (before coalescing).
    tun_tx,
    /// Datagrams/packets received on the carrier.
    net_rx,
    /// Protected packets sent on the carrier.
    net_tx,
    /// Control packets (IKE after the RFC 3948 non-ESP marker) handed to the control thread.
    punted,
    /// IKE messages dropped: the queue to the control thread was full, or the carrier
    /// (unbatched receive) cannot punt.
    ike_dropped,
    /// Inbound SAs whose peer endpoint moved after an authenticated packet came from a new
    /// address or port (NAT rebinding, RFC 3948 §3.1).
    nat_rebinds,
    /// NAT-keepalives received and ignored (RFC 3948 §2.3).
    keepalives,
    /// Datagrams too short to hold an SPI.
    runts,
    /// Packets the packet filter blocked (both directions; per-rule hits in `filter`).
    filter_blocked,
    /// Oversize DF/IPv6 packets dropped before sealing, answered with ICMP "too big" (`icmp`).
    icmp_too_big,
    /// Packets the SPD said to bypass, sent in clear by `[network] bypass-device`.
    bypass_forwarded,
    /// Packets the SPD said to bypass, dropped: no `bypass-device`, or it refused them.
    bypass_unforwarded,
    /// Packets without their SA kept for when it comes (`held`; each is also an engine
    /// `no_sa` drop).
    held,
    /// Held packets sealed and sent once their SA was installed.
    held_sent,
    /// Held packets forgotten: no SA within a second, or pushed out by newer ones.
    held_expired,
    /// Protected packets the carrier cannot send (AH over UDP).
    unsendable,
    /// Send errors (unreachable, refused).
    send_errors,
    /// TUN write errors (per write, which may carry a coalesced super-packet).
    tun_write_errors,
    /// TUN reads that returned a packet the offload code refused (counted, skipped).
    tun_read_errors,
    /// Batches handed to the engine.
    batches,
    /// read(2) calls on the TUN device.
    tun_reads,
    /// Write batches to the TUN device.
    tun_write_batches,
    /// write(2)/writev(2) calls on the TUN device: a super-packet coalesced from several
    /// decrypted segments (`gro`) is one.
    tun_writes,
    /// send system calls on the carrier.
    send_syscalls,
    /// receive system calls on the carrier.
    recv_syscalls,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add() {
        let mut a = NodeCounters { tun_rx: 2, ..Default::default() };
        a.add(&NodeCounters { tun_rx: 3, net_tx: 1, ..Default::default() });
        assert_eq!((a.tun_rx, a.net_tx), (5, 1));
        assert_eq!(a.to_json()["tun_rx"], 5);
    }
}
