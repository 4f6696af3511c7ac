//! The front thread's sockets: a client connection of either listener, read and written
//! alike, and poll(2) over any number of descriptors (`crate::sys::poll_readable` takes 8).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

/// A client connection of either listener.
#[derive(Debug)]
pub enum Stream {
    /// From the control socket.
    Unix(UnixStream),
    /// From the metrics listener.
    Tcp(TcpStream),
}

impl Stream {
    /// Its descriptor, for poll(2).
    pub fn fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }

    /// Reads what is there (non-blocking: `WouldBlock` when nothing is).
    pub fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(b),
            Stream::Tcp(s) => s.read(b),
        }
    }

    /// Shuts our sending side: the client reads the end of the answer.
    pub fn shutdown_write(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Write),
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
        };
    }

    /// Writes what the socket takes now.
    pub fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(b),
            Stream::Tcp(s) => s.write(b),
        }
    }
}

/// poll(2) over `fds` (entries with fd -1 are skipped by the kernel); EINTR is no error.
#[allow(unsafe_code)]
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<()> {
    // SAFETY: `fds` is a live, exclusively borrowed slice of initialised pollfd structs;
    // poll(2) reads and writes exactly `fds.len()` of them and keeps no pointer after returning.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
        fds.iter_mut().for_each(|p| p.revents = 0);
    }
    Ok(())
}
