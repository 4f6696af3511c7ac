//! The timers' arithmetic: a CHILD or IKE SA's lifetimes as swanctl.conf names them
//! (`rekey_time`, `rand_time`, `life_time`, `over_time`), exponential back-off for retries, and
//! the caller-seeded generator that spreads rekeys over `rand_time` (so two peers with the same
//! configuration rarely rekey at the same instant, RFC 7296 §2.8.1).

use crate::time::Time;
use std::time::Duration;

/// When an SA is rekeyed and when it dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifetimes {
    /// Rekey this long after the SA came up (zero: never rekey).
    pub rekey_time: Duration,
    /// Up to this much is taken off `rekey_time`, drawn anew for each SA.
    pub rand_time: Duration,
    /// The hard lifetime: the SA is removed this long after it came up (zero: `rekey_time +
    /// over_time`, or no hard lifetime when `over_time` is zero too).
    pub life_time: Duration,
    /// With `life_time` zero, how long after `rekey_time` the hard lifetime falls.
    pub over_time: Duration,
}

impl Lifetimes {
    /// No rekey and no hard lifetime.
    pub const NEVER: Lifetimes = Lifetimes {
        rekey_time: Duration::ZERO,
        rand_time: Duration::ZERO,
        life_time: Duration::ZERO,
        over_time: Duration::ZERO,
    };

    /// The hard lifetime, or `None` for an SA that lives until deleted.
    pub fn hard(&self) -> Option<Duration> {
        if !self.life_time.is_zero() {
            return Some(self.life_time);
        }
        let d = self.rekey_time.saturating_add(self.over_time);
        (!self.over_time.is_zero()).then_some(d)
    }

    /// When an SA that came up at `up` is rekeyed, taking a random part of `rand_time` off.
    pub(crate) fn rekey_at(&self, up: Time, rng: &mut Jitter) -> Option<Time> {
        if self.rekey_time.is_zero() {
            return None;
        }
        let rand_us = u64::try_from(self.rand_time.as_micros()).unwrap_or(u64::MAX);
        let off = if rand_us == 0 { 0 } else { rng.next_u64() % rand_us };
        Some(up + self.rekey_time.saturating_sub(Duration::from_micros(off)))
    }
}

/// Exponential back-off: `first`, doubling after each further failure, at most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure.
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Backoff {
    /// The wait after `failures` failures in a row (at least one).
    pub fn wait(&self, failures: u32) -> Duration {
        let shift = failures.saturating_sub(1).min(20);
        self.first.saturating_mul(1u32 << shift).min(self.max)
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a small generator for timer jitter only, seeded by the
/// caller so a run can be replayed. Nothing secret comes from it.
#[derive(Debug, Clone)]
pub(crate) struct Jitter(u64);

impl Jitter {
    pub(crate) fn new(seed: u64) -> Jitter {
        Jitter(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_max() {
        let b = Backoff { first: Duration::from_secs(2), max: Duration::from_secs(30) };
        let w: Vec<u64> = (1..=6).map(|n| b.wait(n).as_secs()).collect();
        assert_eq!(w, vec![2, 4, 8, 16, 30, 30]);
        assert_eq!(b.wait(u32::MAX), Duration::from_secs(30));
    }

    #[test]
    fn rekey_falls_within_rand_time_and_hard_lifetime_defaults() {
        let l = Lifetimes {
            rekey_time: Duration::from_secs(60),
            rand_time: Duration::from_secs(10),
            life_time: Duration::ZERO,
            over_time: Duration::from_secs(6),
        };
        assert_eq!(l.hard(), Some(Duration::from_secs(66)));
        let mut rng = Jitter::new(7);
        let up = Time::from_millis(1_000);
        for _ in 0..100 {
            let at = l.rekey_at(up, &mut rng).unwrap();
            assert!(at <= up + Duration::from_secs(60) && at > up + Duration::from_secs(50));
        }
        assert_eq!(Lifetimes::NEVER.rekey_at(up, &mut rng), None);
        assert_eq!(Lifetimes::NEVER.hard(), None);
    }
}
