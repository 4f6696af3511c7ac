//! Batched UDP I/O for ESP in UDP (RFC 3948 §2): sendmmsg(2) of UDP GSO groups (UDP_SEGMENT,
//! udp(7)), gathered straight from the sealed packet buffers with one iovec per ESP packet (no
//! copy), and recvmmsg(2) with UDP_GRO, which hands over up to 64 KB of same-size datagrams per
//! message. quinn-udp does GSO/GRO too, but its `Transmit` wants one contiguous buffer, which
//! would cost a copy of every packet here; this is the small part of it the node needs.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;

/// `UDP_SEGMENT` (linux/udp.h): the GSO segment size of a send.
const UDP_SEGMENT: libc::c_int = 103;
/// `UDP_GRO` (linux/udp.h): deliver coalesced datagrams with their segment size.
const UDP_GRO: libc::c_int = 104;
/// Most segments in one GSO send (the kernel's UDP_MAX_SEGMENTS on older kernels).
pub const MAX_GSO_SEGMENTS: usize = 64;
/// Most UDP payload bytes in one GSO send (an IP packet is at most 65535 bytes).
const MAX_GSO_BYTES: usize = 65535 - 40 - 8;
/// Payloads one `send` call gathers into one sendmmsg(2).
pub const SEND_BATCH: usize = 256;
/// Messages per recvmmsg(2).
pub const RECV_MSGS: usize = 16;
/// Bytes per received message (a GRO message holds up to 64 KB).
const RECV_BUF: usize = 65536;

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

/// Batched sending and receiving on one UDP socket.
#[derive(Debug)]
pub struct UdpBatch {
    fd: RawFd,
    /// UDP GSO in use (turned off for good if the kernel refuses it).
    pub gso: bool,
    /// UDP GRO enabled on the socket.
    pub gro: bool,
    bufs: Vec<Box<[u8]>>,
    meta: Vec<Received>,
}

impl UdpBatch {
    /// A sender on `fd` (a UDP socket the caller keeps open for as long as this lives);
    /// `want_gso` asks for UDP GSO, which stays off if the kernel lacks it.
    pub fn sender(fd: RawFd, want_gso: bool) -> UdpBatch {
        // Probing UDP_SEGMENT as a socket option tells whether the kernel knows it at all.
        let gso = want_gso && crate::sys::setsockopt_int(fd, libc::SOL_UDP, UDP_SEGMENT, 0);
        UdpBatch { fd, gso, gro: false, bufs: Vec::new(), meta: Vec::new() }
    }

    /// A receiver on `fd` with [`RECV_MSGS`] buffers of 64 KB; `want_gro` asks for UDP GRO,
    /// which stays off if the kernel lacks it.
    pub fn receiver(fd: RawFd, want_gro: bool) -> UdpBatch {
        let gro = want_gro && crate::sys::setsockopt_int(fd, libc::SOL_UDP, UDP_GRO, 1);
        let unspecified = SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0));
        UdpBatch {
            fd,
            gso: false,
            gro,
            bufs: (0..RECV_MSGS).map(|_| vec![0u8; RECV_BUF].into_boxed_slice()).collect(),
            meta: vec![Received { len: 0, seg: 0, from: unspecified }; RECV_MSGS],
        }
    }

    /// Sends every payload to `dst`. With GSO, runs of equal-size payloads (the last of a run
    /// may be shorter) go as one message; all messages of up to [`SEND_BATCH`] payloads go in
    /// one sendmmsg(2). Blocks while the socket buffer is full (backpressure, not loss).
    pub fn send<'a>(
        &mut self,
        dst: &socket2::SockAddr,
        payloads: impl Iterator<Item = &'a [u8]>,
    ) -> SendStats {
        let mut st = SendStats::default();
        let mut lens = [0usize; SEND_BATCH];
        let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; SEND_BATCH];
        let mut n = 0;
        for p in payloads {
            iov[n] = libc::iovec { iov_base: p.as_ptr() as *mut libc::c_void, iov_len: p.len() };
            lens[n] = p.len();
            n += 1;
            if n == SEND_BATCH {
                self.send_iov(dst, &mut iov[..n], &lens[..n], &mut st);
                n = 0;
            }
        }
        if n > 0 {
            self.send_iov(dst, &mut iov[..n], &lens[..n], &mut st);
        }
        st
    }

    /// Groups `iov` into GSO runs and sends them. A run the kernel refuses as GSO is resent
    /// singly (and GSO turned off for good if the device cannot do it at all).
    #[allow(unsafe_code)]
    fn send_iov(
        &mut self,
        dst: &socket2::SockAddr,
        iov: &mut [libc::iovec],
        lens: &[usize],
        st: &mut SendStats,
    ) {
        // Groups: (first index, count, segment size).
        let mut groups = [(0usize, 0usize, 0usize); SEND_BATCH];
        let mut ng = 0;
        let mut i = 0;
        while i < lens.len() {
            let seg = lens[i];
            let mut j = i + 1;
            let mut total = seg;
            if self.gso {
                while j < lens.len()
                    && j - i < MAX_GSO_SEGMENTS
                    && lens[j] <= seg
                    && total + lens[j] <= MAX_GSO_BYTES
                {
                    total += lens[j];
                    j += 1;
                    if lens[j - 1] < seg {
                        break;
                    }
                }
            }
            groups[ng] = (i, j - i, seg);
            ng += 1;
            i = j;
        }
        // Control buffers: one UDP_SEGMENT cmsg per message (8-byte aligned).
        let mut ctrl = [[0u64; 4]; SEND_BATCH];
        // SAFETY: an all-zero mmsghdr is a valid value (null pointers, zero lengths).
        let mut msgs: [libc::mmsghdr; SEND_BATCH] = unsafe { std::mem::zeroed() };
        for (g, &(first, count, seg)) in groups[..ng].iter().enumerate() {
            let h = &mut msgs[g].msg_hdr;
            h.msg_name = dst.as_ptr() as *mut libc::c_void;
            h.msg_namelen = dst.len();
            h.msg_iov = iov[first..].as_mut_ptr();
            h.msg_iovlen = count as _;
            if count > 1 {
                // SAFETY: `ctrl[g]` is 32 bytes, 8-byte aligned, and CMSG_SPACE(2) is 24, so the
                // header and its u16 fit; CMSG_FIRSTHDR of a msghdr whose control buffer and
                // length are set returns a pointer into that buffer.
                unsafe {
                    h.msg_control = ctrl[g].as_mut_ptr().cast();
                    h.msg_controllen = libc::CMSG_SPACE(2) as _;
                    let c = libc::CMSG_FIRSTHDR(h);
                    (*c).cmsg_level = libc::SOL_UDP;
                    (*c).cmsg_type = UDP_SEGMENT;
                    (*c).cmsg_len = libc::CMSG_LEN(2) as _;
                    std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg as u16);
                }
            }
        }
        let mut done = 0;
        while done < ng {
            // SAFETY: msgs[done..ng] are initialised message headers whose name, iovec and
            // control pointers refer to `dst`, `iov` (and through it the caller's payloads) and
            // `ctrl`, all alive and unmoved until this call returns; the kernel writes only
            // `msg_len` of each entry.
            let r = unsafe {
                libc::sendmmsg(self.fd, msgs[done..].as_mut_ptr(), (ng - done) as libc::c_uint, 0)
            };
            st.syscalls += 1;
            if r > 0 {
                for g in &groups[done..done + r as usize] {
                    st.sent += g.1 as u64;
                }
                done += r as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            let (first, count, _) = groups[done];
            let (iov_g, lens_g) = (&mut iov[first..first + count], &lens[first..first + count]);
            match e.raw_os_error() {
                // The egress device cannot do UDP GSO (EIO: no checksum offload): from now on
                // send singly.
                Some(libc::EIO) if count > 1 => {
                    self.gso = false;
                    self.send_iov(dst, iov_g, lens_g, st);
                }
                // This run does not suit GSO (say, a segment above the path MTU): send it
                // singly, so that each packet gets its own verdict.
                Some(libc::EINVAL | libc::EMSGSIZE) if count > 1 => {
                    let gso = std::mem::replace(&mut self.gso, false);
                    self.send_iov(dst, iov_g, lens_g, st);
                    self.gso = gso;
                }
                _ => st.errors += count as u64,
            }
            done += 1;
        }
    }

    /// Receives up to [`RECV_MSGS`] messages without waiting; returns how many. Read them with
    /// [`UdpBatch::message`]. A sender (no buffers) receives nothing.
    #[allow(unsafe_code)]
    pub fn recv(&mut self) -> io::Result<usize> {
        let k = self.bufs.len().min(RECV_MSGS);
        if k == 0 {
            return Ok(0);
        }
        let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; RECV_MSGS];
        // SAFETY: all-zero sockaddr_storage and mmsghdr values are valid.
        let mut names: [libc::sockaddr_storage; RECV_MSGS] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; RECV_MSGS] = unsafe { std::mem::zeroed() };
        let mut ctrl = [[0u64; 8]; RECV_MSGS];
        for i in 0..k {
            iov[i] = libc::iovec {
                iov_base: self.bufs[i].as_mut_ptr().cast(),
                iov_len: self.bufs[i].len(),
            };
            let h = &mut msgs[i].msg_hdr;
            h.msg_name = (&mut names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_iov = &mut iov[i];
            h.msg_iovlen = 1;
            h.msg_control = ctrl[i].as_mut_ptr().cast();
            h.msg_controllen = std::mem::size_of::<[u64; 8]>() as _;
        }
        // SAFETY: every header points at live, exclusively borrowed buffers of the stated
        // lengths (`self.bufs`, `names`, `ctrl`), which outlive the call; MSG_DONTWAIT makes it
        // return at once when nothing is queued.
        let r = unsafe {
            libc::recvmmsg(
                self.fd,
                msgs.as_mut_ptr(),
                k as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        let n = r as usize;
        for i in 0..n {
            let h = &msgs[i].msg_hdr;
            let len = msgs[i].msg_len as usize;
            let mut seg = len;
            // SAFETY: the kernel filled `h.msg_controllen` bytes of `ctrl[i]` with well-formed
            // cmsgs; CMSG_FIRSTHDR/NXTHDR stay within them and return null at the end.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(h);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                        let v = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                        if v > 0 {
                            seg = v as usize;
                        }
                    }
                    c = libc::CMSG_NXTHDR(h, c);
                }
            }
            let from = sockaddr_to_std(&names[i]);
            let truncated = h.msg_flags & libc::MSG_TRUNC != 0;
            self.meta[i] = Received { len: if truncated { 0 } else { len }, seg: seg.max(1), from };
        }
        Ok(n)
    }

    /// Message `i` of the last [`UdpBatch::recv`]: its bytes and metadata.
    pub fn message(&self, i: usize) -> (&[u8], Received) {
        let m = self.meta[i];
        (&self.bufs[i][..m.len], m)
    }
}

#[allow(unsafe_code)]
fn sockaddr_to_std(s: &libc::sockaddr_storage) -> SocketAddr {
    match s.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in, which it is large and
            // aligned enough for.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            SocketAddr::new(IpAddr::V4(ip), u16::from_be(a.sin_port))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            SocketAddr::new(IpAddr::V6(ip), u16::from_be(a.sin6_port))
        }
        _ => SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    /// Over loopback: runs of equal payloads are sent (with GSO where the kernel has it) and
    /// received back (with GRO where it has it) byte for byte, split by segment size.
    #[test]
    fn batch_round_trip_over_loopback() {
        let (Ok(rx), Ok(tx)) = (UdpSocket::bind("127.0.0.1:0"), UdpSocket::bind("127.0.0.1:0"))
        else {
            return;
        };
        let dst = socket2::SockAddr::from(rx.local_addr().unwrap_or_else(|_| unreachable!()));
        let mut s = UdpBatch::sender(tx.as_raw_fd(), true);
        let mut r = UdpBatch::receiver(rx.as_raw_fd(), true);
        assert_eq!(s.recv().ok(), Some(0));
        let payloads: Vec<Vec<u8>> = (0..10u8)
            .map(|i| {
                vec![
                    i;
                    if i == 4 {
                        700
                    } else if i == 9 {
                        300
                    } else {
                        1000
                    }
                ]
            })
            .collect();
        let st = s.send(&dst, payloads.iter().map(|p| p.as_slice()));
        assert_eq!((st.sent, st.errors), (10, 0));
        let mut got: Vec<Vec<u8>> = Vec::new();
        for _ in 0..100 {
            let n = r.recv().unwrap_or(0);
            for i in 0..n {
                let (bytes, m) = r.message(i);
                got.extend(bytes.chunks(m.seg).map(<[u8]>::to_vec));
                assert_eq!(m.from, tx.local_addr().unwrap_or_else(|_| unreachable!()));
            }
            if got.len() >= 10 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(got, payloads);
    }
}
