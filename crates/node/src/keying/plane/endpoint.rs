//! Where SAs send: an outbound SA pointed at a new endpoint (a Mobile IPv6 home agent following
//! a care-of address), and every SA of a peer that moved (a NAT rebinding the lanes saw
//! authenticated, RFC 3948 §2.2's spirit; HIP's verified locator update, RFC 8046 §5.4).

use super::{ControlPlane, PlaneError};
use crate::datapath::mailbox::{OutKey, Update};
use ipsec::Spi;
use std::net::SocketAddr;

impl ControlPlane {
    /// Points outbound SA `key` at `endpoint`, its keys, sequence numbers and policies kept: a
    /// Mobile IPv6 home agent moves its tunnel to a new care-of address at once (RFC 6275
    /// §10.3.1), without a new SA the mobile node's replay window would refuse.
    pub fn set_endpoint(&mut self, key: OutKey, endpoint: SocketAddr) -> Result<(), PlaneError> {
        let r = self.outbound.get(&key).ok_or_else(|| {
            PlaneError::field("spi", format!("no outbound SA {} to {}", Spi(key.spi), key.dst))
        })?;
        let mut per = self.empty();
        for w in self.out_workers(r.lane)? {
            per[w].push(Update::SetEndpoint { key, endpoint });
        }
        self.send(per)?;
        if let Some(r) = self.outbound.get_mut(&key) {
            r.endpoint = Some(endpoint);
        }
        Ok(())
    }

    /// Moves every SA whose peer endpoint is `from` to `to` (a key manager that verified the
    /// peer's new locator, e.g. HIP's UPDATE, RFC 8046 §5.4).
    pub fn move_endpoint(&mut self, from: SocketAddr, to: SocketAddr) {
        self.follow(Spi(0), from, to);
    }

    pub(super) fn follow(&mut self, spi: Spi, from: SocketAddr, to: SocketAddr) {
        for r in self.inbound.values_mut().chain(self.outbound.values_mut()) {
            if r.endpoint == Some(from) {
                r.endpoint = Some(to);
            }
        }
        if self.defaults.peer == Some(from) {
            self.defaults.peer = Some(to);
        }
        let per = self.workers.iter().map(|_| vec![Update::MoveEndpoint { from, to }]).collect();
        match self.send(per) {
            Ok(()) => self.stats.rebinds += 1,
            Err(e) => tracing::warn!(spi = %spi, error = e.to_string(), "rebind-failed"),
        }
    }
}
