//! The few system calls the standard library and the socket crates do not wrap: poll(2),
//! integer setsockopt(2), the gathering UDP GSO sendmsg(2), and recvmmsg(2)/sendmmsg(2) for
//! the raw-IP carrier.
//! Each unsafe block states why it is sound.

use std::io;
use std::os::fd::RawFd;

/// Waits until one of `fds` is readable or `timeout_ms` passes; sets `ready[i]` for readable
/// (or failed/hung-up) descriptors. An interrupted wait (a signal) returns with nothing ready.
#[allow(unsafe_code)]
pub fn poll_readable(fds: &[RawFd], ready: &mut [bool], timeout_ms: i32) -> io::Result<()> {
    const MAX: usize = 8;
    let mut pfd = [libc::pollfd { fd: -1, events: 0, revents: 0 }; MAX];
    let n = fds.len().min(MAX);
    for (p, &fd) in pfd.iter_mut().zip(fds) {
        *p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    }
    // SAFETY: `pfd` is a live, exclusively borrowed array of `MAX >= n` initialised pollfd
    // structs; poll(2) reads and writes only the first `n` of them and keeps no pointer after
    // returning.
    let r = unsafe { libc::poll(pfd.as_mut_ptr(), n as libc::nfds_t, timeout_ms) };
    ready.iter_mut().for_each(|r| *r = false);
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err(e) };
    }
    for (r, p) in ready.iter_mut().zip(&pfd[..n]) {
        *r = p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0;
    }
    Ok(())
}

/// Waits until `fd` can be written to (or failed) or `timeout_ms` passes; true if it can.
#[allow(unsafe_code)]
pub fn poll_writable(fd: RawFd, timeout_ms: i32) -> bool {
    let mut pfd = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
    // SAFETY: one live, exclusively borrowed pollfd; poll(2) keeps no pointer after returning.
    let r = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    r > 0 && pfd.revents & (libc::POLLOUT | libc::POLLERR) != 0
}

/// Makes the reuseport group of `fd` pick the receiving socket by SPI (the first four bytes of
/// the UDP payload, RFC 3948 §2.2) mod `lanes`: a classic BPF program (SO_ATTACH_REUSEPORT_CBPF,
/// socket(7)) runs on the datagram's payload and returns the socket's index in the group; a
/// datagram shorter than four bytes (a NAT-keepalive) aborts the program, which returns 0.
#[allow(unsafe_code)]
pub fn attach_reuseport_spi_mod(fd: RawFd, lanes: u32) -> io::Result<()> {
    let op = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let mut prog = [
        // A = ntohl(*(u32 *)payload): the SPI.
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        // A %= lanes.
        op(libc::BPF_ALU | libc::BPF_MOD | libc::BPF_K, lanes.max(1)),
        // Socket index A.
        op(libc::BPF_RET | libc::BPF_A, 0),
    ];
    let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_mut_ptr() };
    // SAFETY: setsockopt(2) reads the sock_fprog and the three instructions it points at, all
    // live locals, and copies them into the kernel before returning.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_CBPF,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Sets an integer socket option; true on success.
#[allow(unsafe_code)]
pub fn setsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> bool {
    // SAFETY: setsockopt(2) reads `size_of::<c_int>()` bytes from a live local integer and keeps
    // no pointer after returning.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// Sets a socket buffer to `bytes` with the `force` option (SO_RCVBUFFORCE/SO_SNDBUFFORCE:
/// not capped by `net.core.[rw]mem_max`, needs CAP_NET_ADMIN), else with `plain`; true if one
/// of them took.
pub fn force_buffer(fd: RawFd, force: libc::c_int, plain: libc::c_int, bytes: usize) -> bool {
    let v = i32::try_from(bytes).unwrap_or(i32::MAX);
    setsockopt_int(fd, libc::SOL_SOCKET, force, v) || setsockopt_int(fd, libc::SOL_SOCKET, plain, v)
}

/// Binds netlink socket `fd` to the multicast `groups` (a bit mask, netlink(7) `nl_groups`);
/// the kernel picks the port id. A netlink socket hears its groups only once bound.
#[allow(unsafe_code)]
pub fn bind_netlink(fd: RawFd, groups: u32) -> std::io::Result<()> {
    // SAFETY: sockaddr_nl is plain data for which all-zero bytes are a valid value.
    let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    sa.nl_groups = groups;
    // SAFETY: bind(2) reads `size_of::<sockaddr_nl>()` bytes from a live local and keeps no
    // pointer after returning.
    let r = unsafe {
        libc::bind(
            fd,
            (&sa as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// `UDP_SEGMENT` (linux/udp.h): the GSO segment size of one send, as a control message.
const UDP_SEGMENT: libc::c_int = 103;

/// One sendmsg(2) on UDP socket `fd` of the concatenation of `parts` to `dst`, cut by the
/// kernel into datagrams of `segment` bytes (UDP GSO, udp(7) `UDP_SEGMENT`; the last may be
/// shorter). The kernel gathers the parts itself, so they need not be copied into one buffer
/// first. Returns the bytes sent.
#[allow(unsafe_code)]
pub fn send_gso_gather(
    fd: RawFd,
    dst: &socket2::SockAddr,
    parts: &[io::IoSlice<'_>],
    segment: u16,
) -> io::Result<usize> {
    /// Room for one cmsghdr with a u16, aligned as cmsghdr wants.
    #[repr(C, align(8))]
    struct Control([u8; 32]);
    let mut control = Control([0; 32]);
    // SAFETY (all of the block): CMSG_SPACE/CMSG_LEN only compute sizes. msghdr is zeroed and
    // then pointed at live locals: the destination address (`dst`, read-only), the iovec array
    // (`parts`: IoSlice is ABI-compatible with iovec, and sendmsg only reads through it) and
    // `control`, which is 8-aligned and at least CMSG_SPACE(2) = 24 bytes long, so
    // CMSG_FIRSTHDR is non-null and the header and its 2-byte payload fit. sendmsg(2) reads
    // these and keeps no pointer after returning.
    let r = unsafe {
        let space = libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize;
        debug_assert!(space <= control.0.len());
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = dst.as_ptr() as *mut libc::c_void;
        msg.msg_namelen = dst.len();
        msg.msg_iov = parts.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = parts.len();
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = space;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_UDP;
        (*c).cmsg_type = UDP_SEGMENT;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), segment);
        libc::sendmsg(fd, &msg, 0)
    };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r as usize) }
}

/// Makes the calling thread SCHED_FIFO at `priority` (sched(7)); needs CAP_SYS_NICE.
#[allow(unsafe_code)]
pub fn set_thread_fifo(priority: i32) -> io::Result<()> {
    let p = libc::sched_param { sched_priority: priority };
    // SAFETY: sched_setscheduler(2) with pid 0 acts on the calling thread and only reads the
    // live local sched_param.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The user id of the process at the other end of a Unix stream socket (SO_PEERCRED, unix(7)):
/// the kernel's record, which the peer cannot forge.
#[allow(unsafe_code)]
pub fn peer_uid(fd: RawFd) -> io::Result<u32> {
    let mut cred = libc::ucred { pid: 0, uid: u32::MAX, gid: u32::MAX };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt(2) writes at most `len` bytes into `cred`, a live, exclusively
    // borrowed ucred, and the length back into `len`; it keeps no pointer after returning.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// Hands the heap's free pages back to the system (glibc's `malloc_trim`). glibc returns
/// freed memory by itself only from the top of a heap; after a bulk command (the text of
/// 10,000 SAs, its parse, the envelopes to the lanes) the freed megabytes sit below the SAs'
/// own allocations and stay resident until trimmed (62.4 MB → 55.4 MB RSS after a
/// 10,000-SA `sa add`, checked by calling this from gdb). A no-op off glibc.
#[allow(unsafe_code)]
pub fn trim_heap() {
    // SAFETY: malloc_trim(3) takes no pointer of ours; it locks each arena while it walks
    // that arena's free lists, so it is safe to call while other threads allocate.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The effective user id of this process.
#[allow(unsafe_code)]
pub fn euid() -> u32 {
    // SAFETY: geteuid(2) takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

/// Most messages one [`recv_mmsg`] or [`send_mmsg`] call takes (the rest of a longer slice is
/// left for the next call).
pub const MMSG_MAX: usize = 256;

/// One datagram of a [`recv_mmsg`]: its length, sender, and whether it was longer than its
/// buffer (MSG_TRUNC: then only `len` = the buffer's length was kept).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Datagram {
    /// Bytes received.
    pub len: usize,
    /// Sender (None if the kernel gave an address family other than IPv4/IPv6).
    pub from: Option<std::net::SocketAddr>,
    /// The datagram did not fit its buffer.
    pub truncated: bool,
}

/// Receives up to `bufs.len()` (at most [`MMSG_MAX`]) datagrams from `fd` in one
/// recvmmsg(2) without waiting, datagram i into `bufs[i]`, and describes them in `got[i]`.
/// Returns how many arrived (0 when nothing is queued or the call was interrupted).
#[allow(unsafe_code)]
pub fn recv_mmsg(fd: RawFd, bufs: &mut [&mut [u8]], got: &mut [Datagram]) -> io::Result<usize> {
    let n = bufs.len().min(got.len()).min(MMSG_MAX);
    if n == 0 {
        return Ok(0);
    }
    // A sockaddr_in6 holds either family's address (sockaddr_in is smaller and no more
    // aligned); the kernel writes at most `msg_namelen` bytes into it.
    // SAFETY: the C structs below are plain data for which all-zero bytes are valid values.
    let mut names: [libc::sockaddr_in6; MMSG_MAX] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut iov: [libc::iovec; MMSG_MAX] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MMSG_MAX] = unsafe { std::mem::zeroed() };
    for i in 0..n {
        iov[i] = libc::iovec { iov_base: bufs[i].as_mut_ptr().cast(), iov_len: bufs[i].len() };
        let h = &mut msgs[i].msg_hdr;
        h.msg_name = (&mut names[i] as *mut libc::sockaddr_in6).cast();
        h.msg_namelen = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
        h.msg_iov = &mut iov[i];
        h.msg_iovlen = 1;
    }
    // SAFETY: the first `n` mmsghdrs point at live, exclusively borrowed locals (`names[i]`,
    // `iov[i]`) and through `iov[i]` at `bufs[i]`, which is borrowed mutably for the call and
    // whose length the iovec states; recvmmsg(2) writes only within those bounds and keeps no
    // pointer after returning. MSG_DONTWAIT: no timeout pointer is needed.
    let r = unsafe {
        libc::recvmmsg(
            fd,
            msgs.as_mut_ptr(),
            n as libc::c_uint,
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
    let r = (r as usize).min(n);
    for i in 0..r {
        let m = &msgs[i];
        got[i] = Datagram {
            len: (m.msg_len as usize).min(bufs[i].len()),
            from: sockaddr_ip(&names[i], m.msg_hdr.msg_namelen as usize),
            truncated: m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
        };
    }
    Ok(r)
}

/// The address in `name` (of `len` bytes, as the kernel filled it), if IPv4 or IPv6.
#[allow(unsafe_code)]
fn sockaddr_ip(name: &libc::sockaddr_in6, len: usize) -> Option<std::net::SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
    match i32::from(name.sin6_family) {
        libc::AF_INET6 if len >= std::mem::size_of::<libc::sockaddr_in6>() => {
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(name.sin6_addr.s6_addr),
                u16::from_be(name.sin6_port),
                name.sin6_flowinfo,
                name.sin6_scope_id,
            )))
        }
        libc::AF_INET if len >= std::mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: `name` is a live sockaddr_in6 (28 bytes, 4-aligned) whose first
            // size_of::<sockaddr_in>() = 16 bytes the kernel wrote as a sockaddr_in (family
            // AF_INET, `len` says so); read_unaligned copies them out without alignment demands.
            let v4: libc::sockaddr_in = unsafe {
                std::ptr::read_unaligned(
                    (name as *const libc::sockaddr_in6).cast::<libc::sockaddr_in>(),
                )
            };
            let ip = Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(v4.sin_port))))
        }
        _ => None,
    }
}

/// IPv4 header fields a raw socket without IP_HDRINCL takes per message as control messages
/// (ip(7)): the TOS byte (IP_TOS: DSCP and ECN) and the source address (IP_PKTINFO's
/// `ipi_spec_dst`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V4Header {
    /// TOS byte.
    pub tos: u8,
    /// Source address.
    pub src: std::net::Ipv4Addr,
}

/// Room for an IP_TOS (int) and an IP_PKTINFO (in_pktinfo) control message, aligned as
/// cmsghdr wants.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct V4Control([u8; 64]);

/// Writes `h` into `control` as IP_TOS and IP_PKTINFO control messages; returns their length.
#[allow(unsafe_code)]
fn v4_control(control: &mut V4Control, h: V4Header) -> usize {
    // SAFETY (all of the block): CMSG_SPACE/CMSG_LEN only compute sizes. `msg` is a zeroed
    // local pointed at `control`, 8-aligned and 64 bytes, which holds CMSG_SPACE(4) +
    // CMSG_SPACE(12) = 56 bytes, so CMSG_FIRSTHDR and CMSG_NXTHDR return headers inside it
    // (checked non-null) with room for their payloads, which are written unaligned.
    unsafe {
        let tos_space = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
        let info_space = libc::CMSG_SPACE(std::mem::size_of::<libc::in_pktinfo>() as u32) as usize;
        let space = tos_space + info_space;
        if space > control.0.len() {
            return 0;
        }
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = space;
        let c = libc::CMSG_FIRSTHDR(&msg);
        if c.is_null() {
            return 0;
        }
        (*c).cmsg_level = libc::IPPROTO_IP;
        (*c).cmsg_type = libc::IP_TOS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), h.tos.into());
        let c = libc::CMSG_NXTHDR(&msg, c);
        if c.is_null() {
            return 0;
        }
        (*c).cmsg_level = libc::IPPROTO_IP;
        (*c).cmsg_type = libc::IP_PKTINFO;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::in_pktinfo>() as u32) as usize;
        let info = libc::in_pktinfo {
            ipi_ifindex: 0,
            ipi_spec_dst: libc::in_addr { s_addr: u32::from(h.src).to_be() },
            ipi_addr: libc::in_addr { s_addr: 0 },
        };
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::in_pktinfo>(), info);
        space
    }
}

/// Sends `parts` (up to [`MMSG_MAX`] of them) to `dst` as one datagram each in one
/// sendmmsg(2), datagram i with the IPv4 header fields `v4[i]` where given. Returns how many
/// the kernel took: fewer than asked when the socket buffer filled or the next one failed (an
/// error is returned only when the first one fails: the caller then sees which one).
#[allow(unsafe_code)]
pub fn send_mmsg(
    fd: RawFd,
    dst: &socket2::SockAddr,
    parts: &[io::IoSlice<'_>],
    v4: &[Option<V4Header>],
) -> io::Result<usize> {
    let n = parts.len().min(MMSG_MAX);
    if n == 0 {
        return Ok(0);
    }
    let mut control = [V4Control([0; 64]); MMSG_MAX];
    // SAFETY: mmsghdr is plain data for which all-zero bytes are a valid value.
    let mut msgs: [libc::mmsghdr; MMSG_MAX] = unsafe { std::mem::zeroed() };
    for (i, (m, p)) in msgs.iter_mut().zip(&parts[..n]).enumerate() {
        m.msg_hdr.msg_name = dst.as_ptr() as *mut libc::c_void;
        m.msg_hdr.msg_namelen = dst.len();
        // IoSlice is ABI-compatible with iovec; sendmmsg(2) only reads through it.
        m.msg_hdr.msg_iov = (p as *const io::IoSlice<'_>).cast_mut().cast();
        m.msg_hdr.msg_iovlen = 1;
        if let Some(h) = v4.get(i).copied().flatten() {
            let len = v4_control(&mut control[i], h);
            if len > 0 {
                m.msg_hdr.msg_control = control[i].0.as_mut_ptr().cast();
                m.msg_hdr.msg_controllen = len;
            }
        }
    }
    // SAFETY: the first `n` mmsghdrs point at the destination address (`dst`, read only), at
    // one live IoSlice each, which points at a live borrowed buffer of the length it states,
    // and where they have control messages at their own `control[i]`, whose first
    // `msg_controllen` bytes `v4_control` wrote; sendmmsg(2) only reads these and keeps no
    // pointer after returning.
    let r = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, 0) };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r as usize) }
}

/// Sends datagram i, `parts[i]`, to `dsts[i]` (up to [`MMSG_MAX`] of them) in one
/// sendmmsg(2): [`send_mmsg`] with a destination per datagram (the home agent's Binding
/// Acknowledgements go to as many care-of addresses). Returns how many the kernel took (an
/// error only when the first one fails).
#[allow(unsafe_code)]
pub fn send_mmsg_to(
    fd: RawFd,
    dsts: &[socket2::SockAddr],
    parts: &[io::IoSlice<'_>],
) -> io::Result<usize> {
    let n = parts.len().min(dsts.len()).min(MMSG_MAX);
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: mmsghdr is plain data for which all-zero bytes are a valid value.
    let mut msgs: [libc::mmsghdr; MMSG_MAX] = unsafe { std::mem::zeroed() };
    for ((m, p), d) in msgs.iter_mut().zip(&parts[..n]).zip(&dsts[..n]) {
        m.msg_hdr.msg_name = d.as_ptr() as *mut libc::c_void;
        m.msg_hdr.msg_namelen = d.len();
        // IoSlice is ABI-compatible with iovec; sendmmsg(2) only reads through it.
        m.msg_hdr.msg_iov = (p as *const io::IoSlice<'_>).cast_mut().cast();
        m.msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: the first `n` mmsghdrs point at their destination address (`dsts[i]`, read
    // only) and at one live IoSlice each, which points at a live borrowed buffer of the length
    // it states; sendmmsg(2) only reads these and keeps no pointer after returning.
    let r = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, 0) };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r as usize) }
}

/// Starts bringing the cache line holding `p` towards the core and returns without waiting
/// (the `ipsec` engine's batch calls, `Engine::outbound_batch`, and the data path's AEAD keys).
/// Elsewhere than x86-64 it does nothing.
///
/// PREFETCHT1, into the second-level cache, not T0 into the first: with thousands of SAs a
/// packet asks for some fifteen lines (its SA's, its key's ten, the index slot) two packets
/// ahead, more misses than the first-level cache can have outstanding, and T1's wait in the
/// second level's larger queue instead. `hipsec bench sas --sas 1,10000`, one binary choosing
/// the hint per process, 14 alternating pairs in both orders on a 2-vCPU Zen 4 VM:
/// at 10,000 SAs T1 was faster in 13 pairs for sealing and 13 for opening (medians seal 212
/// against 249 ns, open 198 against 222, noisy minutes), at one SA the same within noise.
#[allow(unsafe_code)]
#[inline]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT1 never faults, whatever the address, and changes no memory or
    // architectural state; it only hints the cache.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
