//! Packets held while the key manager makes their SA (RFC 4301 §4.4.1.1: a packet that
//! matches a protect policy whose SA is missing triggers an acquire; what happens to the packet
//! meanwhile is the implementation's choice). A dropped first packet costs the application a
//! retransmission timer (a TCP SYN waits a second); Linux's larval states and HIPL's BEX both
//! keep it and send it once the SA is there. So does this lane: a few packets, copied into
//! buffers made when the lane starts (no allocation per packet), sent through the normal
//! outbound path after the next update the lane applies, and forgotten after
//! [`HOLD_US`]. A held packet is never sent in clear: it goes through the SPD again, and
//! without an SA it is dropped (and counted) again.

use ipsec::{PacketBuf, Time};

/// Packets a lane holds at most; a newer one replaces the oldest.
pub const HELD_PACKETS: usize = 8;
/// How long a packet is held, microseconds: a base exchange or IKE_SA_INIT + IKE_AUTH
/// completes in milliseconds; past a second the application has retransmitted anyway.
pub const HOLD_US: u64 = 1_000_000;

/// The held packets of one outbound half.
#[derive(Debug)]
pub struct Held {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    at: Vec<Time>,
    /// The hold times of the packets the last [`Held::release`] moved, in its order.
    released: Vec<Time>,
    /// Packets pushed out by newer ones since the last release.
    pushed_out: u64,
    /// Slots in use, oldest first from `first`.
    used: usize,
    first: usize,
}

impl Held {
    /// Slots for packets of up to `mtu` bytes.
    pub fn new(mtu: usize) -> Held {
        Held {
            bufs: vec![vec![0u8; mtu]; HELD_PACKETS],
            lens: vec![0; HELD_PACKETS],
            at: vec![Time(0); HELD_PACKETS],
            released: vec![Time(0); HELD_PACKETS],
            pushed_out: 0,
            used: 0,
            first: 0,
        }
    }

    /// Nothing held.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Keeps a copy of `packet` (false: longer than a slot, not kept). When every slot is in
    /// use the oldest packet makes room.
    pub fn hold(&mut self, packet: &[u8], now: Time) -> bool {
        let Some(slot_len) = self.bufs.first().map(Vec::len) else { return false };
        if packet.len() > slot_len || packet.is_empty() {
            return false;
        }
        let slot = if self.used == HELD_PACKETS {
            let s = self.first;
            self.pushed_out += 1;
            self.first = (self.first + 1) % HELD_PACKETS;
            s
        } else {
            self.used += 1;
            (self.first + self.used - 1) % HELD_PACKETS
        };
        self.bufs[slot][..packet.len()].copy_from_slice(packet);
        self.lens[slot] = packet.len();
        self.at[slot] = now;
        true
    }

    /// Moves the packets held for less than [`HOLD_US`] into `out` (oldest first, each as the
    /// window of a buffer at `headroom`), forgets the rest; returns (moved, expired), where
    /// expired counts the packets pushed out since the last release too.
    pub fn release(&mut self, out: &mut [PacketBuf], headroom: usize, now: Time) -> (usize, u64) {
        let (mut moved, mut expired) = (0, std::mem::take(&mut self.pushed_out));
        for k in 0..self.used {
            let slot = (self.first + k) % HELD_PACKETS;
            let len = self.lens[slot];
            let fresh = now.0.saturating_sub(self.at[slot].0) < HOLD_US;
            let Some(buf) = out.get_mut(moved).filter(|_| fresh) else {
                expired += 1;
                continue;
            };
            let fits = buf.raw_mut().get_mut(headroom..headroom + len).map(|dst| {
                dst.copy_from_slice(&self.bufs[slot][..len]);
            });
            if fits.is_some() && buf.set_window(headroom, len).is_ok() {
                self.released[moved] = self.at[slot];
                moved += 1;
            } else {
                expired += 1;
            }
        }
        self.used = 0;
        self.first = 0;
        (moved, expired)
    }

    /// When the `i`-th packet of the last release was first held.
    pub fn released_at(&self, i: usize) -> Time {
        self.released.get(i).copied().unwrap_or(Time(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bufs(n: usize) -> Vec<PacketBuf> {
        (0..n).map(|_| PacketBuf::new(64 + 1500, 64)).collect()
    }

    #[test]
    fn holds_and_releases_in_order() {
        let mut h = Held::new(1500);
        assert!(h.is_empty());
        assert!(h.hold(&[1, 2, 3], Time(10)));
        assert!(h.hold(&[4, 5], Time(20)));
        let mut out = bufs(4);
        assert_eq!(h.release(&mut out, 64, Time(30)), (2, 0));
        assert_eq!(out[0].as_slice(), &[1, 2, 3]);
        assert_eq!(out[1].as_slice(), &[4, 5]);
        assert!(h.is_empty());
        assert_eq!(h.release(&mut out, 64, Time(40)), (0, 0));
    }

    #[test]
    fn the_oldest_makes_room_and_old_ones_expire() {
        let mut h = Held::new(1500);
        for i in 0..(HELD_PACKETS as u8 + 2) {
            assert!(h.hold(&[i], Time(u64::from(i))));
        }
        let mut out = bufs(HELD_PACKETS);
        assert_eq!(h.release(&mut out, 64, Time(5)), (HELD_PACKETS, 2));
        assert_eq!(h.released_at(0), Time(2));
        // The two oldest (0 and 1) were replaced; 2 is now first.
        assert_eq!(out[0].as_slice(), &[2]);
        assert_eq!(out[HELD_PACKETS - 1].as_slice(), &[HELD_PACKETS as u8 + 1]);
        assert!(h.hold(&[7], Time(0)));
        assert!(h.hold(&[8], Time(HOLD_US)));
        assert_eq!(h.release(&mut out, 64, Time(HOLD_US + 1)), (1, 1));
        assert_eq!(out[0].as_slice(), &[8]);
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let mut h = Held::new(4);
        assert!(!h.hold(&[0; 5], Time(0)));
        assert!(!h.hold(&[], Time(0)));
        assert!(h.is_empty());
    }
}
