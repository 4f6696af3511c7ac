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
