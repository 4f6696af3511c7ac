//! The few system calls the standard library and the socket crates do not wrap: poll(2) and
//! integer setsockopt(2).
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
