//! NOTIFY in the node (RFC 7401 §5.3.6, §6.13): a peer whose I2 policy refuses is told so
//! (BLOCKED_BY_POLICY), at most [`PER_SECOND`] NOTIFYs a second — each costs a signature,
//! and refusals are what an attacker can make us do for free; NOTIFYs received are counted,
//! logged and shown in `status`, and change nothing (they are informational).

use super::{HipDriver, Transmit};
use hip::HostIdentityTag;
use serde_json::{Value, json};

use std::net::IpAddr;
use wire::hip::NotifyType;

/// NOTIFYs sent a second at most.
pub const PER_SECOND: u32 = 10;

impl HipDriver {
    /// A NOTIFY of `kind` to `peer` at `to`, unless the rate limit is reached.
    pub(super) fn notify(
        &mut self,
        peer: HostIdentityTag,
        to: IpAddr,
        kind: NotifyType,
        now_us: u64,
    ) -> Vec<Transmit> {
        if !self.notify.admit(now_us, PER_SECOND) {
            return Vec::new();
        }
        match hip::notify::notify(&self.host, &peer, kind, &[], self.here, to) {
            Ok(bytes) => {
                self.counters.notify_sent += 1;
                vec![Transmit { to, bytes }]
            }
            Err(e) => {
                tracing::warn!(peer = %peer, why = e.to_string(), "hip-notify-failed");
                Vec::new()
            }
        }
    }

    /// A NOTIFY arrived: counted and shown, nothing else.
    pub(super) fn on_notify(&mut self, from: IpAddr, bytes: &[u8]) {
        let me = self.host.hit();
        match hip::notify::read(bytes, from, self.here, &me) {
            Ok(n) => {
                self.counters.notify_received += 1;
                let kinds: Vec<String> = n.kinds.iter().map(ToString::to_string).collect();
                tracing::info!(peer = %n.from, from = %from, kinds = %kinds.join(","), verified = n.verified, "hip-notify");
                self.notify.last = Some(json!({
                    "peer_hit": n.from.to_string(), "kinds": kinds, "verified": n.verified,
                }));
            }
            Err(e) => self.refuse("NOTIFY", from, e),
        }
    }

    /// The last NOTIFY received, for `status`.
    pub(super) fn last_notify(&self) -> Value {
        self.notify.last.clone().unwrap_or(Value::Null)
    }
}
