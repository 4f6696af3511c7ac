//! What the node keeps about NOTIFY (RFC 7401 §5.3.6): the window of the rate limit on those
//! it sends, and the last one received. Apart from the steps that send and read them
//! (`notify.rs`), so that the driver (`mod.rs`) holds it without depending on those steps.

use serde_json::Value;

/// The rate limit's window and the last NOTIFY received.
#[derive(Debug, Default)]
pub(super) struct NotifyState {
    window_start_us: u64,
    sent_in_window: u32,
    /// The last NOTIFY received, as `status` shows it.
    pub(super) last: Option<Value>,
}

impl NotifyState {
    /// True if one more NOTIFY may go at `now_us`, at most `per_second` a second (a window
    /// that starts with the first NOTIFY after the last one closed); counts it.
    pub(super) fn admit(&mut self, now_us: u64, per_second: u32) -> bool {
        if now_us.saturating_sub(self.window_start_us) >= 1_000_000 {
            self.window_start_us = now_us;
            self.sent_in_window = 0;
        }
        if self.sent_in_window >= per_second {
            return false;
        }
        self.sent_in_window += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At most `per_second` in one window, and a fresh allowance once a second has passed.
    #[test]
    fn admits_per_second_then_refuses_until_the_window_closes() {
        let mut s = NotifyState::default();
        let t0 = 5_000_000;
        assert!((0..3).all(|i| s.admit(t0 + i, 3)));
        assert!(!s.admit(t0 + 10, 3));
        assert!(!s.admit(t0 + 999_999, 3));
        assert!(s.admit(t0 + 1_000_000, 3));
    }
}
