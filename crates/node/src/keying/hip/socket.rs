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

    /// The next HIP packet waiting: its bytes (IP header removed) in `buf[range]`, the
    /// sender's address and, over IPv4 (whose raw sockets hand us the header), the address it
    /// was sent to — which a socket bound to the wildcard address needs for the checksum.
    pub fn recv(&self, buf: &mut [u8]) -> Option<(std::ops::Range<usize>, IpAddr, Option<IpAddr>)> {
        let (n, from) = self.sock.recv_from(buf).ok()?;
        if !self.v4 {
            return Some((0..n, from.ip(), None));
        }
        // IHL, in 32-bit words (RFC 791); the destination at octets 16..20.
        let start = usize::from(buf.first()? & 0x0f) * 4;
        let d: [u8; 4] = buf.get(16..20)?.try_into().ok()?;
        (start <= n).then_some((start..n, from.ip(), Some(IpAddr::from(d))))
    }

    /// Sends a HIP packet to `to`.
    pub fn send(&self, to: IpAddr, bytes: &[u8]) -> io::Result<()> {
        self.sock.send_to(bytes, SocketAddr::new(to, 0)).map(|_| ())
    }
}
