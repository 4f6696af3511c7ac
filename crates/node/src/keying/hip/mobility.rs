//! Host mobility (RFC 8046 §3.2.1) in the node: with a wildcard `[network] local` the node
//! follows its route's source address; when it changes (the host moved) the endpoint is told
//! (`update_locator`), which announces the new locator by UPDATE and resends it until
//! acknowledged. ESP in UDP from the new address is authenticated anyway, and the data path
//! follows it at once (NAT rebinding); the UPDATE keeps HIP itself, and a peer that only
//! receives, in step.

use super::{HipDriver, time};
use std::net::{IpAddr, SocketAddr, UdpSocket};

/// How often the route's source address is looked at.
const MOVE_CHECK_US: u64 = 100_000;

/// Our address towards `dst`: `local`, or with a wildcard `local` the source address the
/// routing table picks now (a connected UDP socket's local address; nothing is sent).
pub(super) fn route_source(local: IpAddr, dst: IpAddr) -> IpAddr {
    if !local.is_unspecified() {
        return local;
    }
    let any: SocketAddr = if dst.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    UdpSocket::bind(any)
        .and_then(|s| {
            s.connect(SocketAddr::new(dst, 9))?;
            s.local_addr()
        })
        .map_or(local, |a| a.ip())
}

impl HipDriver {
    /// Tells the endpoint when the route's source address towards the peers changed.
    pub(super) fn moves(&mut self, now_us: u64) {
        if !self.local.is_unspecified() || now_us < self.next_move_check_us {
            return;
        }
        self.next_move_check_us = now_us + MOVE_CHECK_US;
        let Some(to) = self.ep.views().first().map(|v| v.locator) else { return };
        let now_src = route_source(self.local, to);
        let was = self.ep.local();
        if now_src != was && !now_src.is_unspecified() {
            tracing::info!(from = %was, to = %now_src, "hip-moved");
            self.here = now_src;
            self.ep.update_locator(time(now_us), now_src);
            self.counters.moves += 1;
        }
    }
}
