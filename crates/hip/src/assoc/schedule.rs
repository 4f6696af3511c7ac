//! Retransmission (RFC 7401 §4.4.3, §6.11 for UPDATE, §6.14 for CLOSE): a packet that wants an
//! answer is sent again on a timer that doubles after each send, up to a number of sends; and
//! the same back-off for retrying a wanted association that failed.

use std::time::Duration;
use wire::Time;

/// Exponential back-off: `first`, doubling after each further failure, at most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first send (or failure).
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Backoff {
    /// The wait after `n` sends or failures in a row (at least one).
    pub fn wait(&self, n: u32) -> Duration {
        let shift = n.saturating_sub(1).min(20);
        self.first.saturating_mul(1u32 << shift).min(self.max)
    }
}

/// A packet sent and waiting for its answer.
#[derive(Debug, Clone)]
pub(crate) struct Resend {
    /// The packet as last sent (its checksum is refilled if the locators change).
    pub(crate) bytes: Vec<u8>,
    /// Sends so far.
    pub(crate) sends: u32,
    /// When to send it again, or give up.
    pub(crate) at: Time,
}

impl Resend {
    /// A packet just sent at `now`.
    pub(crate) fn new(now: Time, bytes: Vec<u8>, b: &Backoff) -> Resend {
        Resend { bytes, sends: 1, at: now + b.wait(1) }
    }

    /// At its deadline: the packet to send again, or `None` when `tries` sends are used up.
    pub(crate) fn fire(&mut self, now: Time, b: &Backoff, tries: u32) -> Option<&[u8]> {
        if self.sends >= tries {
            return None;
        }
        self.sends += 1;
        self.at = now + b.wait(self.sends);
        Some(&self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resends_double_then_give_up() {
        let b = Backoff { first: Duration::from_secs(1), max: Duration::from_secs(4) };
        let mut r = Resend::new(Time::ZERO, vec![1], &b);
        let mut at = Vec::new();
        while r.fire(r.at, &b, 5).is_some() {
            at.push(r.at.as_millis());
        }
        assert_eq!(at, vec![3_000, 7_000, 11_000, 15_000]);
        assert_eq!(r.sends, 5);
    }
}
