//! A paced UDP stream with sequence numbers, for the delivery gap of a mobile node that moves
//! under traffic (scenario mip6-binding): `paced-send` sends one datagram every `interval`
//! carrying its sequence number and send time, `paced-sink` notes when each arrived.
//!
//! Both ends stamp with the wall clock (microseconds since the Unix epoch): the lab's network
//! namespaces share one kernel and so one clock, which lets the lab set the sender's, the
//! receiver's and its own events (the address change) on one time line.

use crate::error::LabError;
use serde::{Deserialize, Serialize};
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Octets of a datagram's header: sequence number and send time, both u64 big-endian.
pub const HEADER: usize = 16;

/// Microseconds since the Unix epoch (0 before it).
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// What the sender did: `paced-send`'s JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendResult {
    /// Datagrams handed to the kernel.
    pub sent: u64,
    /// Sends the kernel refused (no route, no buffer space): the sequence number is used anyway.
    pub errors: u64,
    /// Send time of the first and the last datagram, µs since the epoch.
    pub first_us: u64,
    pub last_us: u64,
    pub interval_us: u64,
}

/// One datagram received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arrival {
    pub seq: u64,
    pub sent_us: u64,
    pub recv_us: u64,
}

/// What the receiver saw: `paced-sink`'s JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkResult {
    pub arrivals: Vec<Arrival>,
    /// Datagrams shorter than [`HEADER`] (not ours).
    pub malformed: u64,
}

/// Sends `count` datagrams of `size` octets (at least [`HEADER`]) to `to`, datagram `i` at
/// `i × interval` after the first. A sender that falls behind (descheduled) sends the late ones
/// at once: each carries its own send time, so the receiver's view stays right.
pub fn send(
    to: SocketAddr,
    interval: Duration,
    count: u64,
    size: usize,
) -> Result<SendResult, LabError> {
    if interval.is_zero() || count == 0 {
        return Err(LabError::InvalidOption {
            field: if count == 0 { "--count" } else { "--interval-us" }.into(),
            reason: "must be at least 1".into(),
        });
    }
    let local: SocketAddr =
        if to.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
    let s = UdpSocket::bind(local).map_err(|e| LabError::io("binding the paced sender", e))?;
    let mut buf = vec![0u8; size.max(HEADER)];
    let t0 = Instant::now();
    let mut r = SendResult {
        sent: 0,
        errors: 0,
        first_us: 0,
        last_us: 0,
        interval_us: interval.as_micros() as u64,
    };
    for seq in 0..count {
        let due = t0 + interval.saturating_mul(u32::try_from(seq).unwrap_or(u32::MAX));
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let at = now_us();
        buf[..8].copy_from_slice(&seq.to_be_bytes());
        buf[8..HEADER].copy_from_slice(&at.to_be_bytes());
        if seq == 0 {
            r.first_us = at;
        }
        r.last_us = at;
        // Not connected: a connected UDP socket would take an ICMPv6 error (e.g. while the
        // path moves) as a reason to fail later sends.
        match s.send_to(&buf, to) {
            Ok(_) => r.sent += 1,
            Err(_) => r.errors += 1,
        }
    }
    Ok(r)
}

/// Receives on `listen` for `duration` and notes every datagram's arrival.
pub fn sink(listen: SocketAddr, duration: Duration) -> Result<SinkResult, LabError> {
    let s = UdpSocket::bind(listen).map_err(|e| LabError::io(format!("binding {listen}"), e))?;
    s.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(|e| LabError::io("paced sink timeout", e))?;
    let end = Instant::now() + duration;
    let mut out = SinkResult { arrivals: Vec::new(), malformed: 0 };
    let mut buf = [0u8; 2048];
    while Instant::now() < end {
        match s.recv(&mut buf) {
            Ok(n) => {
                let recv_us = now_us();
                match parse(&buf[..n]) {
                    Some((seq, sent_us)) => out.arrivals.push(Arrival { seq, sent_us, recv_us }),
                    None => out.malformed += 1,
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(LabError::io("receiving the paced stream", e)),
        }
    }
    Ok(out)
}

/// Sequence number and send time of a datagram (None: too short to be ours).
pub fn parse(b: &[u8]) -> Option<(u64, u64)> {
    let seq = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
    let at = u64::from_be_bytes(b.get(8..HEADER)?.try_into().ok()?);
    Some((seq, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_datagrams_are_not_ours() {
        assert_eq!(parse(&[0; 15]), None);
        let mut b = [0u8; 20];
        b[7] = 3;
        b[15] = 9;
        assert_eq!(parse(&b), Some((3, 9)));
        assert!(
            send("[::1]:9".parse().unwrap_or_else(|e| panic!("{e}")), Duration::ZERO, 1, 16)
                .is_err()
        );
    }
}
