//! The time type of every protocol crate (IKEv2, HIP, Mobile IPv6): microseconds since an
//! epoch the caller owns (the driver's start, or zero on a test's virtual clock). Sans-IO code never reads a clock; it is
//! handed a [`Time`] and answers with the [`Time`] it next wants to run at.

use std::ops::{Add, AddAssign};
use std::time::Duration;

/// An instant, as microseconds since the caller's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(u64);

impl Time {
    /// The epoch itself.
    pub const ZERO: Time = Time(0);
    /// The latest representable instant ("never" for a deadline).
    pub const MAX: Time = Time(u64::MAX);

    /// `us` microseconds after the epoch.
    pub const fn from_micros(us: u64) -> Time {
        Time(us)
    }

    /// `ms` milliseconds after the epoch (saturating).
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms.saturating_mul(1_000))
    }

    /// Microseconds since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Whole milliseconds since the epoch (the unit of the exchange-level types).
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000
    }

    /// How long after `earlier` this is; zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Time) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, or `None` past [`Time::MAX`].
    pub fn checked_add(self, d: Duration) -> Option<Time> {
        let us = u64::try_from(d.as_micros()).ok()?;
        self.0.checked_add(us).map(Time)
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    /// Saturates at [`Time::MAX`]: a deadline that far away is "never".
    fn add(self, d: Duration) -> Time {
        self.checked_add(d).unwrap_or(Time::MAX)
    }
}

impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_and_orders() {
        let t = Time::from_micros(1_500);
        assert_eq!(t.as_millis(), 1);
        assert_eq!(t + Duration::from_millis(2), Time::from_micros(3_500));
        assert_eq!(Time::from_millis(2).saturating_duration_since(t), Duration::from_micros(500));
        assert_eq!(t.saturating_duration_since(Time::from_millis(2)), Duration::ZERO);
        assert_eq!(Time::MAX + Duration::from_secs(1), Time::MAX);
        assert_eq!(Time::ZERO + Duration::MAX, Time::MAX);
        assert!(Time::from_millis(1) < t);
    }
}
