//! Batched UDP I/O for ESP in UDP (RFC 3948 §2) over quinn-udp: UDP GSO on send (one
//! sendmsg(2) carries a run of up to 64 equal-size ESP packets, `UDP_SEGMENT` in udp(7)) and
//! recvmmsg(2) with UDP GRO on receive (one message holds up to 64 KB of same-size datagrams).
//! quinn-udp probes what the kernel supports and falls back by itself (GSO off after EIO).
//!
//! quinn-udp sends one contiguous buffer per GSO run; the sealed packets of a run lie in
//! separate buffers, so GSO runs go out through our own gathering sendmsg(2)
//! (`UdpBatch::send_run`), and quinn-udp does the rest: socket setup, probing what the kernel
//! supports, single datagrams, the fallbacks, and GRO receives.

use quinn_udp::{RecvMeta, Transmit, UdpSockRef, UdpSocketState};
use socket2::SockAddr;
use std::io::{self, IoSlice, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// `UDP_GRO` (linux/udp.h), to turn GRO back off when tuning asks for that.
const UDP_GRO: libc::c_int = 104;
/// Most UDP payload bytes in one GSO send (an IP packet is at most 65535 bytes).
const MAX_GSO_BYTES: usize = 65535 - 40 - 8;
/// Messages per recvmmsg(2).
pub const RECV_MSGS: usize = 16;
/// Bytes per received message (a GRO message holds up to 64 KB).
const RECV_BUF: usize = 65536;
/// Most datagrams in one GSO send (quinn-udp's `BATCH_SIZE`; the kernel takes up to 64 or
/// 128, `UDP_MAX_SEGMENTS`, depending on its version).
const MAX_RUN: usize = 64;
/// Longest wait for room in the socket's send buffer before a run is counted as an error.
const SEND_WAIT_MS: i32 = 100;

/// Outcome of a batched send.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendStats {
    /// Payloads sent.
    pub sent: u64,
    /// Payloads the kernel refused.
    pub errors: u64,
    /// System calls made.
    pub syscalls: u64,
}

/// One received message: `len` bytes of datagrams each `seg` long (the last may be shorter).
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// Bytes in the message.
    pub len: usize,
    /// Datagram size (== `len` unless GRO coalesced several).
    pub seg: usize,
    /// Sender.
    pub from: SocketAddr,
}

/// Batched sending and receiving on one UDP socket (its own handle of it).
pub struct UdpBatch {
    sock: UdpSocket,
    state: UdpSocketState,
    /// UDP GSO in use (quinn-udp turns it off for good if the device refuses it).
    pub gso: bool,
    /// UDP GRO enabled on the socket.
    pub gro: bool,
    bufs: Vec<Box<[u8]>>,
    meta: Vec<RecvMeta>,
}

impl std::fmt::Debug for UdpBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpBatch").field("gso", &self.gso).field("gro", &self.gro).finish()
    }
}

impl UdpBatch {
    /// A sender on its own handle of `sock` (which quinn-udp makes non-blocking: sends wait in
    /// poll(2) for room instead); `want_gso` asks for UDP GSO, which stays off if the kernel
    /// lacks it.
    pub fn sender(sock: &UdpSocket, want_gso: bool) -> io::Result<UdpBatch> {
        let sock = sock.try_clone()?;
        let state = UdpSocketState::new(UdpSockRef::from(&sock))?;
        let gso = want_gso && state.max_gso_segments() > 1;
        Ok(UdpBatch { sock, state, gso, gro: false, bufs: Vec::new(), meta: Vec::new() })
    }

    /// A receiver on its own handle of `sock` with [`RECV_MSGS`] buffers of 64 KB; `want_gro`
    /// asks for UDP GRO, which stays off if the kernel lacks it.
    pub fn receiver(sock: &UdpSocket, want_gro: bool) -> io::Result<UdpBatch> {
        let sock = sock.try_clone()?;
        let state = UdpSocketState::new(UdpSockRef::from(&sock))?;
        let mut gro = state.gro_segments() > 1;
        if gro && !want_gro {
            // quinn-udp turns GRO on wherever it can; the tuning asked for it off.
            crate::sys::setsockopt_int(sock.as_raw_fd(), libc::SOL_UDP, UDP_GRO, 0);
            gro = false;
        }
        Ok(UdpBatch {
            sock,
            state,
            gso: false,
            gro,
            bufs: (0..RECV_MSGS).map(|_| vec![0u8; RECV_BUF].into_boxed_slice()).collect(),
            meta: vec![RecvMeta::default(); RECV_MSGS],
        })
    }

    /// Sends every payload to `dst`. With GSO, runs of equal-size payloads (the last of a run
    /// may be shorter) go as one send. Waits while the socket buffer is full (backpressure, not
    /// loss), up to 100 ms per run.
    pub fn send<'a>(
        &mut self,
        dst: SocketAddr,
        payloads: impl Iterator<Item = &'a [u8]>,
    ) -> SendStats {
        let mut st = SendStats::default();
        let max_segs = if self.gso { self.state.max_gso_segments().clamp(1, MAX_RUN) } else { 1 };
        let to = SockAddr::from(dst);
        // The run being gathered: its payloads and their bytes.
        let mut run: [&[u8]; MAX_RUN] = [&[]; MAX_RUN];
        let (mut count, mut used) = (0usize, 0usize);
        for p in payloads.filter(|p| !p.is_empty()) {
            let seg = run[0].len();
            let joins = count > 0
                && p.len() <= seg
                && count < max_segs
                && used + p.len() <= MAX_GSO_BYTES
                // A shorter segment ends a run, so only a run's last one may be short.
                && used == seg * count;
            if !joins && count > 0 {
                self.send_run(dst, &to, &run[..count], &mut st);
                (count, used) = (0, 0);
            }
            if max_segs == 1 || p.len() > MAX_GSO_BYTES {
                self.send_one(dst, p, None, 1, &mut st);
                continue;
            }
            run[count] = p;
            count += 1;
            used += p.len();
        }
        if count > 0 {
            self.send_run(dst, &to, &run[..count], &mut st);
        }
        st
    }

    /// Sends a run of payloads, all as long as the first but the last, as one GSO send that
    /// the kernel gathers from where they lie (`sys::send_gso_gather`: quinn-udp sends one
    /// contiguous buffer only, and copying every sealed packet into one cost about 6 % of the
    /// sending node's CPU in `hipsec bench tunnel`). A run the kernel refuses as GSO is resent
    /// one datagram at a time through quinn-udp, so that each gets its own verdict; EIO (the
    /// device cannot segment) turns GSO off for good, as quinn-udp does.
    fn send_run(&mut self, dst: SocketAddr, to: &SockAddr, run: &[&[u8]], st: &mut SendStats) {
        if let [one] = run {
            self.send_one(dst, one, None, 1, st);
            return;
        }
        let mut iov: [IoSlice<'_>; MAX_RUN] = std::array::from_fn(|_| IoSlice::new(&[]));
        for (v, p) in iov.iter_mut().zip(run) {
            *v = IoSlice::new(p);
        }
        let seg = run[0].len() as u16;
        let fd = self.sock.as_raw_fd();
        loop {
            st.syscalls += 1;
            match crate::sys::send_gso_gather(fd, to, &iov[..run.len()], seg) {
                Ok(_) => {
                    st.sent += run.len() as u64;
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if crate::sys::poll_writable(fd, SEND_WAIT_MS) {
                        continue;
                    }
                    // No room for 100 ms: the whole run is lost, not retried piece by piece.
                    st.errors += run.len() as u64;
                    return;
                }
                Err(e) => {
                    if e.raw_os_error() == Some(libc::EIO) {
                        self.gso = false;
                    }
                    break;
                }
            }
        }
        for p in run {
            self.send_one(dst, p, None, 1, st);
        }
    }

    /// One send of `count` datagrams; true if the kernel took them (else they are counted as
    /// errors).
    fn send_one(
        &mut self,
        dst: SocketAddr,
        contents: &[u8],
        segment_size: Option<usize>,
        count: usize,
        st: &mut SendStats,
    ) -> bool {
        let t = Transmit { destination: dst, ecn: None, contents, segment_size, src_ip: None };
        loop {
            st.syscalls += 1;
            match self.state.try_send(UdpSockRef::from(&self.sock), &t) {
                Ok(()) => {
                    st.sent += count as u64;
                    return true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if crate::sys::poll_writable(self.sock.as_raw_fd(), SEND_WAIT_MS) {
                        continue;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {}
            }
            st.errors += count as u64;
            return false;
        }
    }

    /// Receives up to [`RECV_MSGS`] messages without waiting; returns how many. Read them with
    /// [`UdpBatch::message`]. A sender (no buffers) receives nothing.
    pub fn recv(&mut self) -> io::Result<usize> {
        if self.bufs.is_empty() {
            return Ok(0);
        }
        let mut it = self.bufs.iter_mut();
        let mut slices: [IoSliceMut<'_>; RECV_MSGS] =
            std::array::from_fn(|_| IoSliceMut::new(it.next().map_or(&mut [][..], |b| &mut b[..])));
        match self.state.recv(UdpSockRef::from(&self.sock), &mut slices, &mut self.meta) {
            Ok(n) => Ok(n),
            Err(e)
                if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) =>
            {
                Ok(0)
            }
            Err(e) => Err(e),
        }
    }

    /// Message `i` of the last [`UdpBatch::recv`]: its bytes and metadata.
    pub fn message(&self, i: usize) -> (&[u8], Received) {
        let m = &self.meta[i];
        let len = m.len.min(self.bufs[i].len());
        (&self.bufs[i][..len], Received { len, seg: m.stride.max(1), from: m.addr })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over loopback: runs of equal payloads are sent (with GSO where the kernel has it) and
    /// received back (with GRO where it has it) byte for byte, split by segment size.
    #[test]
    fn batch_round_trip_over_loopback() {
        let (Ok(rx), Ok(tx)) = (UdpSocket::bind("127.0.0.1:0"), UdpSocket::bind("127.0.0.1:0"))
        else {
            return;
        };
        let dst = rx.local_addr().unwrap();
        let mut s = UdpBatch::sender(&tx, true).unwrap();
        let mut r = UdpBatch::receiver(&rx, true).unwrap();
        assert_eq!(s.recv().ok(), Some(0));
        let sizes = [1000, 1000, 1000, 1000, 700, 1000, 1000, 1000, 1000, 300];
        let payloads: Vec<Vec<u8>> =
            sizes.iter().enumerate().map(|(i, &n)| vec![i as u8; n]).collect();
        let st = s.send(dst, payloads.iter().map(|p| p.as_slice()));
        assert_eq!((st.sent, st.errors), (10, 0));
        if s.gso {
            // Two runs: four 1000s + the 700 that ends it, then four 1000s + the 300.
            assert_eq!(st.syscalls, 2);
        }
        let mut got: Vec<Vec<u8>> = Vec::new();
        for _ in 0..100 {
            let n = r.recv().unwrap_or(0);
            for i in 0..n {
                let (bytes, m) = r.message(i);
                got.extend(bytes.chunks(m.seg).map(<[u8]>::to_vec));
                assert_eq!(m.from, tx.local_addr().unwrap());
            }
            if got.len() >= 10 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(got, payloads);
    }

    /// With GSO off every payload is its own send, straight from its buffer.
    #[test]
    fn without_gso_each_payload_is_one_send() {
        let (Ok(rx), Ok(tx)) = (UdpSocket::bind("127.0.0.1:0"), UdpSocket::bind("127.0.0.1:0"))
        else {
            return;
        };
        let mut s = UdpBatch::sender(&tx, false).unwrap();
        assert!(!s.gso);
        let payloads = [vec![1u8; 500], vec![2u8; 500], vec![3u8; 20]];
        let st = s.send(rx.local_addr().unwrap(), payloads.iter().map(|p| p.as_slice()));
        assert_eq!(st, SendStats { sent: 3, errors: 0, syscalls: 3 });
        let mut b = [0u8; 600];
        for p in &payloads {
            let n = rx.recv(&mut b).unwrap();
            assert_eq!(&b[..n], &p[..]);
        }
    }
}
