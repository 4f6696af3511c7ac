//! HIP's own socket: raw IP protocol 139 (RFC 7401 §5.1), bound to our locator. The kernel
//! adds the IP header on send; on receive an IPv4 raw socket hands us the IP header too, which
//! we strip (an IPv6 one does not).

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

/// IP protocol number of HIP.
pub const IPPROTO_HIP: i32 = 139;

/// The raw socket.
#[derive(Debug)]
pub struct HipSocket {
    sock: UdpSocket,
    v4: bool,
}

impl HipSocket {
    /// Opens and binds it on `local`.
    pub fn open(local: IpAddr) -> io::Result<HipSocket> {
        let v4 = local.is_ipv4();
        let d = if v4 { Domain::IPV4 } else { Domain::IPV6 };
        let s = Socket::new(d, Type::RAW, Some(Protocol::from(IPPROTO_HIP)))?;
        s.bind(&SocketAddr::new(local, 0).into())?;
        s.set_nonblocking(true)?;
        // A raw socket is a datagram socket: std's UdpSocket gives it safe recv_from/send_to.
        Ok(HipSocket { sock: UdpSocket::from(s), v4 })
    }

    /// Its descriptor, for poll(2).
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// The next HIP packet waiting: its bytes (IP header removed) in `buf[range]` and the
    /// sender's address.
    pub fn recv(&self, buf: &mut [u8]) -> Option<(std::ops::Range<usize>, IpAddr)> {
        let (n, from) = self.sock.recv_from(buf).ok()?;
        let start = if self.v4 {
            // IHL, in 32-bit words (RFC 791).
            usize::from(buf.first()? & 0x0f) * 4
        } else {
            0
        };
        (start <= n).then_some((start..n, from.ip()))
    }

    /// Sends a HIP packet to `to`.
    pub fn send(&self, to: IpAddr, bytes: &[u8]) -> io::Result<()> {
        self.sock.send_to(bytes, SocketAddr::new(to, 0)).map(|_| ())
    }
}
