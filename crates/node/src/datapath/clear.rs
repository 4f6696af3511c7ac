//! The clear path: packets the SPD says to bypass (RFC 4301 §4.4.1, BYPASS) leave unprotected by
//! the configured device (`[network] bypass-device`), as the IP packets they are, through raw
//! sockets that send the packet's own header (IPPROTO_RAW implies IP_HDRINCL, raw(7), and
//! IPV6_HDRINCL for IPv6).
//!
//! The sockets are bound to that device (SO_BINDTODEVICE): a bypassed packet came out of the TUN
//! device because a route sent it there, and routed again it would go back in and round
//! forever. Bound, the kernel sends it out of the device, taking a destination it has no route
//! for as on-link.

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Raw sockets for IPv4 and IPv6 packets, bound to one device.
#[derive(Debug)]
pub struct ClearPath {
    v4: Socket,
    v6: Option<Socket>,
}

impl ClearPath {
    /// Opens the sockets on `device` (IPv6 is optional: a host without it still bypasses IPv4).
    pub fn open(device: &str) -> io::Result<ClearPath> {
        let open = |d: Domain| -> io::Result<Socket> {
            let s = Socket::new(d, Type::RAW, Some(Protocol::from(libc::IPPROTO_RAW)))?;
            s.bind_device(Some(device.as_bytes()))?;
            Ok(s)
        };
        let v4 = open(Domain::IPV4)?;
        let v6 = open(Domain::IPV6).ok();
        Ok(ClearPath { v4, v6 })
    }

    /// Sends one IP packet as it is, to its header's destination. Refuses (InvalidInput) what
    /// is not a whole IPv4 or IPv6 header.
    pub fn send(&self, packet: &[u8]) -> io::Result<()> {
        let bad = || io::Error::new(io::ErrorKind::InvalidInput, "not an IP packet");
        let (sock, dst) = match packet.first().map(|b| b >> 4) {
            Some(4) if packet.len() >= 20 => {
                let d = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
                (&self.v4, IpAddr::V4(d))
            }
            Some(6) if packet.len() >= 40 => {
                let mut d = [0u8; 16];
                d.copy_from_slice(&packet[24..40]);
                let s = self.v6.as_ref().ok_or_else(|| {
                    io::Error::new(io::ErrorKind::Unsupported, "no IPv6 raw socket")
                })?;
                (s, IpAddr::V6(Ipv6Addr::from(d)))
            }
            _ => return Err(bad()),
        };
        sock.send_to(packet, &SockAddr::from(SocketAddr::new(dst, 0))).map(|_| ())
    }
}
