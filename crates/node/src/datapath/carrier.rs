//! The carriers of protected packets: ESP in UDP (RFC 3948 §2, port 4500) or raw IP sockets for
//! ESP (protocol 50, RFC 4303) and AH (51, RFC 4302). Converts between the engine's whole IP
//! packets and what each socket sends and receives.

use super::encap::{self, UdpPayload};
use crate::config::Transport;
use ipsec::PacketBuf;
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use wire::proto;

/// Socket buffer size asked for (the kernel caps it at `net.core.[rw]mem_max`).
const SOCKET_BUFFER: usize = 4 << 20;

/// Sets a socket's buffers to `bytes` (SO_RCVBUFFORCE/SO_SNDBUFFORCE where allowed, so that
/// `net.core.[rw]mem_max` does not cap them). Best effort.
pub fn force_buffers(s: &UdpSocket, bytes: usize) {
    let v = i32::try_from(bytes).unwrap_or(i32::MAX);
    let fd = s.as_raw_fd();
    for (force, plain) in
        [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)]
    {
        if !crate::sys::setsockopt_int(fd, libc::SOL_SOCKET, force, v) {
            crate::sys::setsockopt_int(fd, libc::SOL_SOCKET, plain, v);
        }
    }
}

/// What one receive produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rx {
    /// An IP packet carrying ESP/AH is in the buffer, ready for `Engine::inbound`.
    Packet,
    /// An IKE message (after the non-ESP marker, RFC 3948 §2.2) from this sender is in the
    /// buffer, marker included: the caller punts it to the control thread.
    Ike(std::net::SocketAddr),
    /// A NAT-keepalive: ignored and counted.
    Keepalive,
    /// Too short to be anything, or the header could not be rebuilt: dropped and counted.
    Runt,
    /// Nothing to read now.
    Empty,
}

/// Looks up the addresses an inbound SA was configured with, by (SPI, protocol).
pub type SaAddrs<'a> = &'a dyn Fn(u32, u8) -> Option<(IpAddr, IpAddr)>;

/// Sockets for one transport.
#[derive(Debug)]
pub enum Carrier {
    /// ESP in UDP.
    Udp {
        /// Bound to the local endpoint.
        sock: UdpSocket,
        /// Where protected packets go when their SA names no endpoint.
        peer: Option<SocketAddr>,
        /// Local address (destination of rebuilt headers).
        local: IpAddr,
    },
    /// Raw IP.
    Raw {
        /// Protocol 50 socket (receive; sends IPv6 ESP).
        esp: UdpSocket,
        /// Protocol 51 socket (receive; sends IPv6 AH).
        ah: UdpSocket,
        /// IPPROTO_RAW socket (IP_HDRINCL) for IPv4: sends the engine's outer header unchanged,
        /// which AH needs (its ICV covers the IPv4 identification and length).
        hdrincl: Option<UdpSocket>,
        /// Local address.
        local: IpAddr,
        /// Peer address (where IPv6 packets go; IPv4 ones go to their header's destination).
        peer: IpAddr,
    },
}

fn tune(s: &Socket) -> io::Result<()> {
    // Best effort: a smaller buffer than asked for still works.
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    s.set_nonblocking(true)
}

fn raw(v6: bool, protocol: i32) -> io::Result<UdpSocket> {
    let d = if v6 { Domain::IPV6 } else { Domain::IPV4 };
    let s = Socket::new(d, Type::RAW, Some(Protocol::from(protocol)))?;
    tune(&s)?;
    // A raw socket is a datagram socket: std's UdpSocket gives it safe recv_from/send_to.
    Ok(UdpSocket::from(s))
}

impl Carrier {
    /// Opens the sockets for `t`.
    pub fn open(t: &Transport) -> io::Result<Carrier> {
        match *t {
            Transport::Udp { local, peer } => {
                let s = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
                tune(&s)?;
                s.bind(&local.into())?;
                Ok(Carrier::Udp { sock: UdpSocket::from(s), peer, local: local.ip() })
            }
            Transport::Raw { local, peer } => {
                let v6 = local.is_ipv6();
                let esp = raw(v6, proto::ESP as i32)?;
                let ah = raw(v6, proto::AH as i32)?;
                let hdrincl = if v6 { None } else { Some(raw(false, libc::IPPROTO_RAW)?) };
                Ok(Carrier::Raw { esp, ah, hdrincl, local, peer })
            }
        }
    }

    /// ESP in UDP on an already bound socket (a lane's, `crate::datapath::lanes`).
    pub fn udp(sock: UdpSocket, peer: Option<SocketAddr>) -> io::Result<Carrier> {
        let local = sock.local_addr()?.ip();
        Ok(Carrier::Udp { sock, peer, local })
    }

    /// Whether this carrier can send a packet of IP protocol `protocol` (UDP carries ESP only).
    pub fn can_send(&self, protocol: u8) -> bool {
        match self {
            Carrier::Udp { .. } => protocol == proto::ESP,
            Carrier::Raw { .. } => matches!(protocol, proto::ESP | proto::AH),
        }
    }

    /// The local address.
    pub fn local(&self) -> IpAddr {
        match self {
            Carrier::Udp { local, .. } | Carrier::Raw { local, .. } => *local,
        }
    }

    /// The UDP socket and peer, for batched I/O (None for raw IP).
    pub fn udp_socket(&self) -> Option<(&UdpSocket, Option<SocketAddr>)> {
        match self {
            Carrier::Udp { sock, peer, .. } => Some((sock, *peer)),
            Carrier::Raw { .. } => None,
        }
    }

    /// Sets the socket buffers (SO_RCVBUFFORCE/SO_SNDBUFFORCE where allowed, so that
    /// `net.core.[rw]mem_max` does not cap them). Best effort.
    pub fn force_buffers(&self, bytes: usize) {
        let socks: Vec<&UdpSocket> = match self {
            Carrier::Udp { sock, .. } => vec![sock],
            Carrier::Raw { esp, ah, hdrincl, .. } => {
                let mut v = vec![esp, ah];
                v.extend(hdrincl.as_ref());
                v
            }
        };
        for s in socks {
            force_buffers(s, bytes);
        }
    }

    /// Descriptors to poll for reading; `recv`'s `which` indexes this list.
    pub fn fds(&self) -> Vec<RawFd> {
        match self {
            Carrier::Udp { sock, .. } => vec![sock.as_raw_fd()],
            Carrier::Raw { esp, ah, .. } => vec![esp.as_raw_fd(), ah.as_raw_fd()],
        }
    }

    /// Receives one packet from socket `which` into `buf` and makes it a whole IP packet.
    /// `sa_addrs` gives the configured addresses of an inbound SA, used for the rebuilt header
    /// (transport mode needs the SA's, not the datagram's, addresses); unknown SPIs get the
    /// datagram's addresses and are then refused by the engine as `no_sa`.
    pub fn recv(&self, which: usize, buf: &mut PacketBuf, sa_addrs: SaAddrs<'_>) -> io::Result<Rx> {
        let head = ipsec::buf::DEFAULT_HEADROOM;
        let (sock, local, protocol) = match self {
            Carrier::Udp { sock, local, .. } => (sock, *local, proto::ESP),
            Carrier::Raw { esp, ah, local, .. } => {
                if which == 0 {
                    (esp, *local, proto::ESP)
                } else {
                    (ah, *local, proto::AH)
                }
            }
        };
        let (n, from) = match sock.recv_from(&mut buf.raw_mut()[head..]) {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Rx::Empty),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(Rx::Empty),
            Err(e) => return Err(e),
        };
        if buf.set_window(head, n).is_err() {
            return Ok(Rx::Runt);
        }
        if let Carrier::Udp { .. } = self {
            match encap::classify(buf.as_slice()) {
                UdpPayload::Esp => {}
                UdpPayload::Ike => return Ok(Rx::Ike(from)),
                UdpPayload::Keepalive => return Ok(Rx::Keepalive),
                UdpPayload::Runt => return Ok(Rx::Runt),
            }
        } else if from.is_ipv4() {
            // IPv4 raw sockets deliver the IP header too. A BEET SA (RFC 7402 §5) wants its
            // inner addresses back in place of the carrier's: the header is rebuilt below.
            let p = buf.as_slice();
            if p.len() < 20 {
                return Ok(Rx::Runt);
            }
            let ihl = usize::from(p[0] & 0x0f) * 4;
            let spi_at = ihl + if protocol == proto::AH { 4 } else { 0 };
            let Some(spi) = p.get(spi_at..).and_then(encap::esp_spi) else {
                return Ok(Rx::Runt);
            };
            let header = (
                IpAddr::from([p[12], p[13], p[14], p[15]]),
                IpAddr::from([p[16], p[17], p[18], p[19]]),
            );
            match sa_addrs(spi, protocol) {
                Some((src, dst)) if (src, dst) != header && ihl >= 20 => {
                    if buf.trim_front(ihl).is_err()
                        || !encap::prepend_ip_header(buf, src, dst, protocol)
                    {
                        return Ok(Rx::Runt);
                    }
                    return Ok(Rx::Packet);
                }
                _ => return Ok(Rx::Packet),
            }
        }
        // UDP payload or IPv6 raw payload: the ESP/AH packet alone. AH's SPI sits at offset 4.
        let spi_at = if protocol == proto::AH { 4 } else { 0 };
        let spi = buf.as_slice().get(spi_at..).and_then(encap::esp_spi);
        let Some(spi) = spi else { return Ok(Rx::Runt) };
        let (src, dst) = sa_addrs(spi, protocol).unwrap_or((from.ip(), local));
        if encap::prepend_ip_header(buf, src, dst, protocol) {
            Ok(Rx::Packet)
        } else {
            Ok(Rx::Runt)
        }
    }

    /// Sends a packet the engine protected (outer IP header + ESP/AH, or a transport-mode packet);
    /// over UDP to `to` (its SA's endpoint) or else the default peer. Returns false if the packet
    /// is not ESP/AH (never sent: fail closed), UDP carries AH, or there is nowhere to send it.
    pub fn send(&self, buf: &PacketBuf, to: Option<SocketAddr>) -> io::Result<bool> {
        let p = buf.as_slice();
        let Some((hdr_len, protocol, dst)) = encap::outer_info(p) else { return Ok(false) };
        let r = match self {
            Carrier::Udp { sock, peer, .. } => {
                let Some(to) = to.or(*peer) else { return Ok(false) };
                if protocol != proto::ESP {
                    return Ok(false);
                }
                sock.send_to(&p[hdr_len..], to)
            }
            Carrier::Raw { esp, ah, hdrincl, peer, .. } => match hdrincl {
                // The engine's header, as it is: AH's ICV covers it.
                Some(s) if dst == *peer => s.send_to(p, SocketAddr::new(dst, 0)),
                // IPv6, or a BEET SA's inner addresses (RFC 7402 §5): the kernel writes the
                // carrier's header in front of the ESP packet.
                _ => {
                    let s = if protocol == proto::AH { ah } else { esp };
                    s.send_to(&p[hdr_len..], SocketAddr::new(*peer, 0))
                }
            },
        };
        r.map(|_| true)
    }
}
