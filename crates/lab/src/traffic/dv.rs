//! DV video over RTP, as DVTS sent it in seed 004's §4: `dv-send` reads a DV file (made by
//! ffmpeg's `dvvideo` encoder), sends every K-th frame at the frame clock, each frame as RTP
//! packets of whole 80-octet DIF blocks (the layout of RFC 6469, which obsoletes RFC 3189:
//! a 90 kHz timestamp shared by a frame's packets, the marker bit on its last one), and
//! `dv-recv` reassembles the frames that arrived whole, writes them to a DV file for a real
//! decoder to read, and reports frames, bytes and jitter.
//!
//! Both ends stamp with the wall clock: the lab's namespaces share one kernel and so one clock.

use super::paced::now_us;
use crate::error::LabError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

/// Octets of a DIF block, the unit a DV packet carries a whole number of.
pub const DIF_BLOCK: usize = 80;
/// Octets of a 625/50 (PAL) DV frame: 12 DIF sequences of 150 blocks.
pub const PAL_FRAME: usize = 12 * 150 * DIF_BLOCK;
/// The RTP clock of DV (RFC 6469: 90 kHz).
pub const RTP_CLOCK_HZ: u64 = 90_000;
/// Octets of the fixed RTP header (RFC 3550 §5.1), no CSRC.
pub const RTP_HEADER: usize = 12;
/// A dynamic RTP payload type (DV has no static one).
pub const PAYLOAD_TYPE: u8 = 96;

/// How a stream is cut: the frame size, the frame rate and the DIF blocks per packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DvFormat {
    pub frame_bytes: usize,
    pub fps: u32,
    pub blocks_per_packet: usize,
}

impl Default for DvFormat {
    /// PAL at 25 frames/s; 15 blocks (1,200 octets) a packet, so a packet with its RTP, UDP,
    /// IPv6 and the heaviest IPsec mode's headers (AH+ESP tunnel) stays within a 1,500-octet MTU.
    fn default() -> DvFormat {
        DvFormat { frame_bytes: PAL_FRAME, fps: 25, blocks_per_packet: 15 }
    }
}

impl DvFormat {
    /// Octets of DV data in a full packet.
    pub fn payload(&self) -> usize {
        self.blocks_per_packet.max(1) * DIF_BLOCK
    }

    /// Packets a frame takes (the last one may be short).
    pub fn packets_per_frame(&self) -> usize {
        self.frame_bytes.div_ceil(self.payload())
    }

    /// The stream's rate at the full frame rate, RTP payload only.
    pub fn full_rate_bps(&self) -> u64 {
        (self.frame_bytes as u64) * 8 * u64::from(self.fps)
    }

    fn check(&self) -> Result<(), LabError> {
        let bad = |field: &str, reason: &str| {
            Err(LabError::InvalidOption { field: field.into(), reason: reason.into() })
        };
        if self.frame_bytes == 0 || self.frame_bytes % DIF_BLOCK != 0 {
            return bad("--frame-bytes", "must be a positive multiple of 80 (whole DIF blocks)");
        }
        if self.fps == 0 {
            return bad("--fps", "must be at least 1");
        }
        if self.blocks_per_packet == 0 || self.payload() + RTP_HEADER > 65_000 {
            return bad("--blocks-per-packet", "must be 1 to 800");
        }
        Ok(())
    }
}

/// One RTP packet's header fields that matter here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtpHeader {
    pub marker: bool,
    pub seq: u16,
    pub timestamp: u32,
    pub ssrc: u32,
}

impl RtpHeader {
    /// Writes the header into `b[..12]`.
    pub fn emit(&self, b: &mut [u8]) {
        b[0] = 0x80; // version 2, no padding, no extension, no CSRC
        b[1] = (u8::from(self.marker) << 7) | PAYLOAD_TYPE;
        b[2..4].copy_from_slice(&self.seq.to_be_bytes());
        b[4..8].copy_from_slice(&self.timestamp.to_be_bytes());
        b[8..12].copy_from_slice(&self.ssrc.to_be_bytes());
    }

    /// The header and the payload of `b`, or None if it is not one of our RTP packets.
    pub fn parse(b: &[u8]) -> Option<(RtpHeader, &[u8])> {
        let h = b.get(..RTP_HEADER)?;
        if h[0] != 0x80 || h[1] & 0x7f != PAYLOAD_TYPE {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let r = RtpHeader {
            marker: h[1] & 0x80 != 0,
            seq: u16::from_be_bytes([h[2], h[3]]),
            timestamp: u32_at(4),
            ssrc: u32_at(8),
        };
        Some((r, &b[RTP_HEADER..]))
    }
}

/// `dv-send`'s JSON.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DvSendResult {
    /// Frames of the clock that passed, and of those the ones sent (every `every`-th).
    pub frames_clock: u64,
    pub frames_sent: u64,
    pub packets_sent: u64,
    /// Sends the kernel refused (no buffer space, no route).
    pub send_errors: u64,
    pub every: u32,
    pub seconds: f64,
    /// How long the sending took: more than `seconds` when the kernel held the sender back (a
    /// full queue on its own shaped link blocks its sends).
    #[serde(default)]
    pub elapsed_s: f64,
}

/// Sends `seconds` of the DV file `file` to `to`: every `every`-th frame of the clock, its
/// packets spread over the frame's period.
pub fn send(
    file: &Path,
    to: SocketAddr,
    every: u32,
    seconds: f64,
    fmt: DvFormat,
) -> Result<DvSendResult, LabError> {
    fmt.check()?;
    if every == 0 {
        return Err(LabError::InvalidOption {
            field: "--every".into(),
            reason: "must be at least 1 (1 = every frame)".into(),
        });
    }
    let data =
        std::fs::read(file).map_err(|e| LabError::io(format!("reading {}", file.display()), e))?;
    let frames = data.len() / fmt.frame_bytes;
    if frames == 0 {
        return Err(LabError::parse(
            "DV file",
            format!("{}: shorter than one frame of {} octets", file.display(), fmt.frame_bytes),
        ));
    }
    let local: SocketAddr =
        if to.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
    let s = UdpSocket::bind(local).map_err(|e| LabError::io("binding the DV sender", e))?;
    let period = Duration::from_secs(1) / fmt.fps;
    let ppf = fmt.packets_per_frame();
    let gap = period / u32::try_from(ppf).unwrap_or(u32::MAX);
    let clock = (seconds * f64::from(fmt.fps)).round().max(1.0) as u64;
    let mut buf = vec![0u8; RTP_HEADER + fmt.payload()];
    let mut r = DvSendResult {
        frames_clock: clock,
        frames_sent: 0,
        packets_sent: 0,
        send_errors: 0,
        every,
        seconds,
        elapsed_s: 0.0,
    };
    let mut seq: u16 = 0;
    let t0 = Instant::now();
    for n in (0..clock).step_by(every as usize) {
        let frame = &data[(n as usize % frames) * fmt.frame_bytes..][..fmt.frame_bytes];
        let timestamp = (n * RTP_CLOCK_HZ / u64::from(fmt.fps)) as u32;
        let start = t0 + period.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
        for (i, chunk) in frame.chunks(fmt.payload()).enumerate() {
            let due = start + gap.saturating_mul(i as u32);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let h = RtpHeader { marker: i + 1 == ppf, seq, timestamp, ssrc: 0x0004_0004 };
            h.emit(&mut buf);
            buf[RTP_HEADER..RTP_HEADER + chunk.len()].copy_from_slice(chunk);
            match s.send_to(&buf[..RTP_HEADER + chunk.len()], to) {
                Ok(_) => r.packets_sent += 1,
                Err(_) => r.send_errors += 1,
            }
            seq = seq.wrapping_add(1);
        }
        r.frames_sent += 1;
    }
    r.elapsed_s = t0.elapsed().as_secs_f64();
    Ok(r)
}

/// `dv-recv`'s JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DvRecvResult {
    pub packets: u64,
    pub payload_bytes: u64,
    /// Frames every packet of which arrived (written to the output file, in order).
    pub frames_complete: u64,
    /// Frames with some packets missing.
    pub frames_partial: u64,
    /// Datagrams that were not our RTP.
    pub malformed: u64,
    /// RFC 3550 §6.4.1's interarrival jitter estimator, taken over each whole frame's last
    /// packet (a frame's packets share one timestamp), in ms.
    pub frame_jitter_ms: f64,
    /// From the first packet to the last.
    pub active_s: f64,
}

struct Frame {
    data: Vec<u8>,
    got: Vec<bool>,
    last_us: u64,
}

/// Receives on `listen` for `seconds` and writes the whole frames to `out`.
pub fn recv(
    listen: SocketAddr,
    seconds: f64,
    out: &Path,
    fmt: DvFormat,
) -> Result<DvRecvResult, LabError> {
    fmt.check()?;
    let s = UdpSocket::bind(listen).map_err(|e| LabError::io(format!("binding {listen}"), e))?;
    s.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(|e| LabError::io("DV receiver timeout", e))?;
    let ppf = fmt.packets_per_frame();
    let end = Instant::now() + Duration::from_secs_f64(seconds.max(0.0));
    let mut frames: BTreeMap<u32, Frame> = BTreeMap::new();
    let mut r = DvRecvResult {
        packets: 0,
        payload_bytes: 0,
        frames_complete: 0,
        frames_partial: 0,
        malformed: 0,
        frame_jitter_ms: 0.0,
        active_s: 0.0,
    };
    let (mut first_us, mut last_us) = (0u64, 0u64);
    // The extended sequence number (RFC 3550 §A.1): the sender starts at 0 and cuts every frame
    // into `ppf` packets, so a packet's place in its frame is its extended number modulo `ppf`.
    let mut highest: Option<u64> = None;
    let mut buf = vec![0u8; 65_536];
    while Instant::now() < end {
        let n = match s.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => return Err(LabError::io("receiving the DV stream", e)),
        };
        let at = now_us();
        let Some((h, payload)) = RtpHeader::parse(&buf[..n]) else {
            r.malformed += 1;
            continue;
        };
        // Nearest to the highest number seen: a 16-bit step forward or back.
        let ext = highest.map_or(u64::from(h.seq), |hi| {
            let back = i64::from(h.seq.wrapping_sub(hi as u16) as i16);
            (hi as i64 + back).max(0) as u64
        });
        highest = Some(highest.map_or(ext, |hi| hi.max(ext)));
        let place = (ext % ppf as u64) as usize;
        let off = place * fmt.payload();
        if off + payload.len() > fmt.frame_bytes {
            r.malformed += 1;
            continue;
        }
        r.packets += 1;
        r.payload_bytes += payload.len() as u64;
        if first_us == 0 {
            first_us = at;
        }
        last_us = at;
        let f = frames.entry(h.timestamp).or_insert_with(|| Frame {
            data: vec![0; fmt.frame_bytes],
            got: vec![false; ppf],
            last_us: 0,
        });
        f.data[off..off + payload.len()].copy_from_slice(payload);
        f.got[place] = true;
        f.last_us = f.last_us.max(at);
    }
    r.active_s = last_us.saturating_sub(first_us) as f64 / 1e6;
    let mut file = std::fs::File::create(out)
        .map_err(|e| LabError::io(format!("creating {}", out.display()), e))?;
    let mut jitter = 0.0f64;
    let mut prev: Option<(u32, u64)> = None;
    for (ts, f) in &frames {
        if !f.got.iter().all(|&g| g) {
            r.frames_partial += 1;
            continue;
        }
        r.frames_complete += 1;
        file.write_all(&f.data)
            .map_err(|e| LabError::io(format!("writing {}", out.display()), e))?;
        if let Some((pts, pus)) = prev {
            // D(i,j) = (Rj - Ri) - (Sj - Si), both in µs here; J += (|D| - J) / 16.
            let sent = f64::from(ts.wrapping_sub(pts)) * 1e6 / RTP_CLOCK_HZ as f64;
            let d = (f.last_us as f64 - pus as f64) - sent;
            jitter += (d.abs() - jitter) / 16.0;
        }
        prev = Some((*ts, f.last_us));
    }
    r.frame_jitter_ms = jitter / 1e3;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtp_header_round_trips_and_refuses_others() {
        let h = RtpHeader { marker: true, seq: 0xfffe, timestamp: 3600, ssrc: 7 };
        let mut b = [0u8; 20];
        h.emit(&mut b);
        assert_eq!(b[1], 0x80 | PAYLOAD_TYPE);
        assert_eq!(RtpHeader::parse(&b).map(|(h, p)| (h, p.len())), Some((h, 8)));
        b[0] = 0x90; // an extension header: not what we send
        assert_eq!(RtpHeader::parse(&b), None);
        assert_eq!(RtpHeader::parse(&b[..11]), None);
    }

    #[test]
    fn a_pal_frame_is_120_packets_of_15_blocks() {
        let f = DvFormat::default();
        assert_eq!(f.frame_bytes, 144_000);
        assert_eq!(f.packets_per_frame(), 120);
        // 28.8 Mbit/s of DIF blocks: DV's 25 Mbit/s of video plus audio, subcode and headers.
        assert_eq!(f.full_rate_bps(), 28_800_000);
        assert!(DvFormat { frame_bytes: 100, ..f }.check().is_err());
        assert!(DvFormat { blocks_per_packet: 0, ..f }.check().is_err());
    }

    #[test]
    fn frames_sent_over_loopback_come_back_whole() {
        let dir = std::env::temp_dir().join(format!("hlab-dv-unit-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let fmt = DvFormat { frame_bytes: 800 * 10, fps: 50, blocks_per_packet: 10 };
        let clip: Vec<u8> = (0..fmt.frame_bytes * 3).map(|i| (i / 7) as u8).collect();
        let src = dir.join("in.dv");
        let dst = dir.join("out.dv");
        std::fs::write(&src, &clip).unwrap_or_else(|e| panic!("{e}"));
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let to = sock.local_addr().unwrap_or_else(|e| panic!("{e}"));
        drop(sock);
        let d2 = dst.clone();
        let rx = std::thread::spawn(move || recv(to, 0.6, &d2, fmt));
        std::thread::sleep(Duration::from_millis(50));
        let sent = send(&src, to, 1, 0.06, fmt).unwrap_or_else(|e| panic!("{e}"));
        let got = rx.join().unwrap_or_else(|_| panic!("receiver panicked"));
        let got = got.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sent.frames_sent, 3);
        assert_eq!(sent.packets_sent, 30);
        assert_eq!((got.frames_complete, got.frames_partial, got.packets), (3, 0, 30));
        let back = std::fs::read(&dst).unwrap_or_default();
        assert_eq!(back, clip, "the frames came back changed or out of order");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
