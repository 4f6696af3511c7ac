//! SA lifetimes (RFC 4301 §4.4.2.1): soft and hard limits in bytes, packets and seconds. Soft
//! expiry is reported once, as an event, so that a key manager can rekey; hard expiry stops the SA.

use crate::types::{Spi, Time};

/// Limits; `None` means no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Lifetime {
    /// Bytes of IP packets processed (before protection, after unprotection).
    pub bytes: Option<u64>,
    /// Packets processed.
    pub packets: Option<u64>,
    /// Seconds since the SA was installed.
    pub seconds: Option<u64>,
}

/// Something the engine tells its owner about an SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaEvent {
    /// A soft limit was reached: time to rekey.
    SoftExpired {
        /// Which SA.
        spi: Spi,
        /// Which limit: "bytes", "packets", "seconds".
        limit: &'static str,
    },
    /// A hard limit was reached (or the sequence number ran out): the SA no longer passes traffic.
    HardExpired {
        /// Which SA.
        spi: Spi,
        /// Which limit: "bytes", "packets", "seconds", "sequence".
        limit: &'static str,
    },
    /// A packet matched a protect policy whose SA is missing (RFC 4301 §4.4.1.1): the packet
    /// was dropped; the key manager should negotiate the SA. Rate-limited per policy.
    Acquire {
        /// The policy's id.
        policy: crate::spd_table::PolicyId,
        /// The packet's source address.
        src: std::net::IpAddr,
        /// Its destination.
        dst: std::net::IpAddr,
        /// Its upper-layer protocol.
        proto: u8,
    },
}

/// Usage counters and expiry state of one SA.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// Bytes processed.
    pub bytes: u64,
    /// Packets processed.
    pub packets: u64,
    /// When the SA was installed.
    pub installed: Time,
    pub(crate) soft_done: bool,
    pub(crate) hard_done: bool,
}

fn exceeded(l: &Lifetime, u: &Usage, now: Time) -> Option<&'static str> {
    if l.bytes.is_some_and(|b| u.bytes >= b) {
        Some("bytes")
    } else if l.packets.is_some_and(|p| u.packets >= p) {
        Some("packets")
    } else if l.seconds.is_some_and(|s| now >= u.installed.plus_secs(s)) {
        Some("seconds")
    } else {
        None
    }
}

impl Usage {
    /// Counts one packet of `len` bytes.
    pub fn add(&mut self, len: usize) {
        self.bytes = self.bytes.saturating_add(len as u64);
        self.packets += 1;
    }

    /// True once a hard limit was hit.
    pub fn is_hard_expired(&self) -> bool {
        self.hard_done
    }

    /// Compares usage with the limits at `now`; returns the event that became due, if any.
    pub fn evaluate(
        &mut self,
        spi: Spi,
        soft: &Lifetime,
        hard: &Lifetime,
        now: Time,
    ) -> Option<SaEvent> {
        if !self.hard_done {
            if let Some(limit) = exceeded(hard, self, now) {
                self.hard_done = true;
                self.soft_done = true;
                return Some(SaEvent::HardExpired { spi, limit });
            }
        }
        if !self.soft_done {
            if let Some(limit) = exceeded(soft, self, now) {
                self.soft_done = true;
                return Some(SaEvent::SoftExpired { spi, limit });
            }
        }
        None
    }

    /// Marks the SA expired for a reason other than the limits (sequence exhaustion).
    pub fn expire(&mut self, spi: Spi, limit: &'static str) -> Option<SaEvent> {
        if self.hard_done {
            return None;
        }
        self.hard_done = true;
        self.soft_done = true;
        Some(SaEvent::HardExpired { spi, limit })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soft_then_hard_once_each() {
        let soft = Lifetime { packets: Some(2), ..Default::default() };
        let hard = Lifetime { packets: Some(4), seconds: Some(10), ..Default::default() };
        let mut u = Usage::default();
        let spi = Spi(0x1000);
        let t = Time::from_secs(1);
        u.add(100);
        assert_eq!(u.evaluate(spi, &soft, &hard, t), None);
        u.add(100);
        assert_eq!(
            u.evaluate(spi, &soft, &hard, t),
            Some(SaEvent::SoftExpired { spi, limit: "packets" })
        );
        u.add(100);
        assert_eq!(u.evaluate(spi, &soft, &hard, t), None);
        assert_eq!(
            u.evaluate(spi, &soft, &hard, Time::from_secs(10)),
            Some(SaEvent::HardExpired { spi, limit: "seconds" })
        );
        assert!(u.is_hard_expired());
        assert_eq!(u.evaluate(spi, &soft, &hard, Time::from_secs(20)), None);
    }
}
