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

/// The usage at which the next lifetime check is due, folded from the soft and hard limits
/// not yet reached, so that a packet compares its counters with two numbers and the clock
/// with one, rather than walking both `Lifetime`s (RFC 4301 §4.4.2.1 limits; the SA's hot
/// state stays in its first cache lines). Recomputed whenever an evaluation may have changed
/// what is left (`Usage::due`); `Usage::evaluate` itself is unchanged, so events fire at the
/// same packet and byte counts as evaluating after every packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    /// Evaluate once `Usage::bytes` reaches this (`u64::MAX`: no byte limit left).
    pub(crate) bytes: u64,
    /// Evaluate once `Usage::packets` reaches this.
    pub(crate) packets: u64,
    /// Evaluate before a packet at or after this time (`Time(u64::MAX)`: never).
    pub(crate) time: Time,
}

impl Due {
    /// True if a packet's counters call for an evaluation.
    #[inline]
    pub(crate) fn counted(&self, u: &Usage) -> bool {
        u.bytes >= self.bytes || u.packets >= self.packets
    }
}

impl Usage {
    /// When the limits not yet reached must next be evaluated. Byte and packet limits are
    /// evaluated after the packet that reaches them; time limits before a packet, at `now`.
    /// Evaluating also checks the counters, so when a time limit exists and a counter limit is
    /// already reached (a limit of 0), the time check is due at once: it would find it.
    pub(crate) fn due(&self, soft: &Lifetime, hard: &Lifetime) -> Due {
        let mut d = Due { bytes: u64::MAX, packets: u64::MAX, time: Time(u64::MAX) };
        let left = [(!self.hard_done).then_some(hard), (!self.soft_done).then_some(soft)];
        for l in left.into_iter().flatten() {
            if let Some(b) = l.bytes {
                d.bytes = d.bytes.min(b);
            }
            if let Some(p) = l.packets {
                d.packets = d.packets.min(p);
            }
            if let Some(s) = l.seconds {
                d.time = d.time.min(self.installed.plus_secs(s));
            }
        }
        if d.time != Time(u64::MAX) && d.counted(self) {
            d.time = Time(0);
        }
        d
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

    /// The reference: what the SA did before the fold, evaluating after every packet when a
    /// counter limit exists and before every packet when a time limit exists.
    fn reference(
        u: &mut Usage,
        soft: &Lifetime,
        hard: &Lifetime,
        packets: &[(usize, Time)],
    ) -> Vec<(usize, Option<SaEvent>)> {
        let spi = Spi(0x1000);
        let timed = soft.seconds.is_some() || hard.seconds.is_some();
        let counted = soft.bytes.is_some()
            || soft.packets.is_some()
            || hard.bytes.is_some()
            || hard.packets.is_some();
        let mut out = Vec::new();
        for (i, &(len, now)) in packets.iter().enumerate() {
            if u.is_hard_expired() {
                break;
            }
            if timed {
                let e = u.evaluate(spi, soft, hard, now);
                if e.is_some() {
                    out.push((i, e));
                }
                if u.is_hard_expired() {
                    break;
                }
            }
            u.add(len);
            if counted {
                let e = u.evaluate(spi, soft, hard, now);
                if e.is_some() {
                    out.push((i, e));
                }
            }
        }
        out
    }

    /// The same packets through the fold, as `SecurityAssociation` runs them.
    fn folded(
        u: &mut Usage,
        soft: &Lifetime,
        hard: &Lifetime,
        packets: &[(usize, Time)],
    ) -> Vec<(usize, Option<SaEvent>)> {
        let spi = Spi(0x1000);
        let mut due = u.due(soft, hard);
        let mut out = Vec::new();
        for (i, &(len, now)) in packets.iter().enumerate() {
            if u.is_hard_expired() {
                break;
            }
            if now >= due.time {
                let e = u.evaluate(spi, soft, hard, now);
                due = u.due(soft, hard);
                if e.is_some() {
                    out.push((i, e));
                }
                if u.is_hard_expired() {
                    break;
                }
            }
            u.add(len);
            if due.counted(u) {
                let e = u.evaluate(spi, soft, hard, now);
                due = u.due(soft, hard);
                if e.is_some() {
                    out.push((i, e));
                }
            }
        }
        out
    }

    #[test]
    fn fold_fires_exactly_at_the_limits() {
        let soft = Lifetime { bytes: Some(1000), packets: Some(7), seconds: None };
        let hard = Lifetime { bytes: Some(1500), packets: Some(20), seconds: None };
        let pkts: Vec<(usize, Time)> = (0..30).map(|_| (100, Time(1))).collect();
        let mut u = Usage::default();
        let spi = Spi(0x1000);
        // Soft at the 7th packet (index 6: 7 packets, 700 bytes), hard at the 15th (1500 bytes).
        assert_eq!(
            folded(&mut u, &soft, &hard, &pkts),
            vec![
                (6, Some(SaEvent::SoftExpired { spi, limit: "packets" })),
                (14, Some(SaEvent::HardExpired { spi, limit: "bytes" })),
            ]
        );
        let timed = Lifetime { seconds: Some(2), ..Default::default() };
        let pkts: Vec<(usize, Time)> = (0..5).map(|s| (10, Time::from_secs(s))).collect();
        let mut u = Usage::default();
        // Hard at 2 s exactly: before the third packet, which is then refused.
        assert_eq!(
            folded(&mut u, &Lifetime::default(), &timed, &pkts),
            vec![(2, Some(SaEvent::HardExpired { spi, limit: "seconds" }))]
        );
        assert_eq!(u.packets, 2);
    }

    fn lifetime() -> impl proptest::strategy::Strategy<Value = Lifetime> {
        use proptest::prelude::*;
        (
            proptest::option::of(0u64..3000),
            proptest::option::of(0u64..40),
            proptest::option::of(0u64..6),
        )
            .prop_map(|(bytes, packets, seconds)| Lifetime { bytes, packets, seconds })
    }

    proptest::proptest! {
        #[test]
        fn fold_agrees_with_evaluating_every_packet(
            soft in lifetime(),
            hard in lifetime(),
            lens in proptest::collection::vec(0usize..300, 0..60),
            step in 0u64..400_000,
        ) {
            let pkts: Vec<(usize, Time)> =
                lens.iter().enumerate().map(|(i, &l)| (l, Time(i as u64 * step))).collect();
            let (mut a, mut b) = (Usage::default(), Usage::default());
            let want = reference(&mut a, &soft, &hard, &pkts);
            let got = folded(&mut b, &soft, &hard, &pkts);
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert_eq!((a.bytes, a.packets), (b.bytes, b.packets));
            proptest::prop_assert_eq!((a.soft_done, a.hard_done), (b.soft_done, b.hard_done));
        }
    }
}
