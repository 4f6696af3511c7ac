//! The carriers of protected packets: ESP in UDP (RFC 3948 §2, port 4500) or raw IP sockets for
//! ESP (protocol 50, RFC 4303) and AH (51, RFC 4302). Converts between the engine's whole IP
//! packets and what each socket sends and receives. Raw IP moves a batch per system call:
//! recvmmsg(2) straight into the engine's buffers and sendmmsg(2) of a sealed batch
//! ([`Carrier::recv_batch`], [`Carrier::send_batch`]); ESP in UDP batches in `super::udp`.

use super::encap::{self, UdpPayload};
use crate::config::Transport;
use ipsec::PacketBuf;
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, IoSlice};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use wire::proto;

/// Socket buffer size asked for (the kernel caps it at `net.core.[rw]mem_max`).
const SOCKET_BUFFER: usize = 4 << 20;

/// Sets a socket's buffers to `bytes` (SO_RCVBUFFORCE/SO_SNDBUFFORCE where allowed, so that
/// `net.core.[rw]mem_max` does not cap them). Best effort.
pub fn force_buffers(s: &UdpSocket, bytes: usize) {
    let fd = s.as_raw_fd();
    for (force, plain) in
        [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)]
    {
        crate::sys::force_buffer(fd, force, plain, bytes);
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
        /// which AH needs (its ICV covers the IPv4 identification and length). Batched, IPv4
        /// ESP goes on `esp` instead ([`Carrier::send_batch`]).
        hdrincl: Option<UdpSocket>,
        /// Local address.
        local: IpAddr,
        /// Peer address (where IPv6 packets go unless their SA names an endpoint; IPv4 ones go
        /// to their header's destination). None: only packets whose SA names one are sent.
        peer: Option<IpAddr>,
        /// Batched I/O: recvmmsg(2)/sendmmsg(2) (`HIPSEC_NODE_TUNING` word `no-mmsg` turns it
        /// off: then one recvfrom(2)/sendto(2) per packet).
        batch: bool,
    },
}

/// Longest wait for room in a raw socket's send buffer before the rest of a batch is counted
/// as send errors (as the UDP carrier waits, `super::udp`: backpressure rather than loss).
const SEND_WAIT_MS: i32 = 100;

/// What one [`Carrier::send_batch`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawSent {
    /// Packets the kernel took.
    pub sent: u64,
    /// Packets it refused (or no room for them within 100 ms).
    pub errors: u64,
    /// Packets not ESP/AH over IP, never sent (fail closed).
    pub unsendable: u64,
    /// System calls made.
    pub syscalls: u64,
}

/// What one [`Carrier::recv_batch`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawReceived {
    /// Datagrams the kernel handed over.
    pub received: usize,
    /// Of them, whole IP packets now at the front of the buffers, for the engine.
    pub packets: usize,
    /// Of them, dropped: too short, truncated, or their header could not be rebuilt.
    pub runts: usize,
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
                // The node checked the variable at start; a bad one here means the default.
                let batch = crate::datapath::tuning::Tuning::from_env().map_or(true, |t| t.mmsg);
                Ok(Carrier::Raw { esp, ah, hdrincl, local, peer, batch })
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
        }
        // IPv4 raw sockets deliver the IP header too; UDP and IPv6 raw ones the payload alone.
        let with_header = matches!(self, Carrier::Raw { .. }) && from.is_ipv4();
        Ok(frame(buf, protocol, with_header, from.ip(), local, sa_addrs))
    }

    /// Whether this is a raw-IP carrier that receives with recvmmsg(2) and sends with
    /// sendmmsg(2) ([`Carrier::recv_batch`], [`Carrier::send_batch`]).
    pub fn raw_batched(&self) -> bool {
        matches!(self, Carrier::Raw { batch: true, .. })
    }

    /// Raw IP: receives what socket `which` (0 ESP, 1 AH) has queued, up to `bufs.len()`
    /// packets, with one recvmmsg(2) straight into the buffers (no copy), and makes each a whole
    /// IP packet as [`Carrier::recv`] does. The packets ready for the engine end up in
    /// `bufs[..packets]`, in arrival order. A UDP carrier receives nothing here.
    pub fn recv_batch(
        &self,
        which: usize,
        bufs: &mut [PacketBuf],
        sa_addrs: SaAddrs<'_>,
    ) -> io::Result<RawReceived> {
        let Carrier::Raw { esp, ah, local, .. } = self else {
            return Ok(RawReceived::default());
        };
        let (sock, protocol) = if which == 0 { (esp, proto::ESP) } else { (ah, proto::AH) };
        let head = ipsec::buf::DEFAULT_HEADROOM;
        let n = bufs.len().min(crate::sys::MMSG_MAX);
        let mut got = [crate::sys::Datagram::default(); crate::sys::MMSG_MAX];
        let m = {
            let mut it = bufs[..n].iter_mut();
            let mut raws: [&mut [u8]; crate::sys::MMSG_MAX] = std::array::from_fn(|_| {
                it.next().map_or(Default::default(), |b| &mut b.raw_mut()[head..])
            });
            crate::sys::recv_mmsg(sock.as_raw_fd(), &mut raws[..n], &mut got[..n])?
        };
        let mut r = RawReceived { received: m, packets: 0, runts: 0 };
        // Any sender of the socket's family stands in when the kernel named none.
        let unknown = if local.is_ipv4() {
            IpAddr::from(std::net::Ipv4Addr::UNSPECIFIED)
        } else {
            IpAddr::from(std::net::Ipv6Addr::UNSPECIFIED)
        };
        for (i, d) in got[..m].iter().enumerate() {
            let from = d.from.map_or(unknown, |a| a.ip());
            let b = &mut bufs[i];
            let rx = if d.truncated || b.set_window(head, d.len).is_err() {
                Rx::Runt
            } else {
                frame(b, protocol, local.is_ipv4(), from, *local, sa_addrs)
            };
            if rx == Rx::Packet {
                bufs.swap(r.packets, i);
                r.packets += 1;
            } else {
                r.runts += 1;
            }
        }
        Ok(r)
    }

    /// Raw IP: sends the packets the engine protected, all to the peer, with one sendmmsg(2)
    /// per run of packets that go the same way: one call for a batch of ESP. IPv4 ESP goes on
    /// the protocol-50 socket, the kernel writing the outer header with the engine's TOS byte
    /// and source address (IP_TOS and IP_PKTINFO control messages): IP_HDRINCL would make the
    /// kernel route every packet afresh (raw_sendmsg gives those FLOWI_FLAG_KNOWN_NH, which
    /// leaves the route uncached: a route allocated and freed per packet; 4.3 against 3.7 Gbit/s
    /// in `hipsec bench tunnel --transport raw`, alternating the two sockets). IPv4 AH keeps the engine's header as it
    /// is on the IP_HDRINCL socket (its ICV covers the header); IPv6, and a BEET SA's inner
    /// addresses (RFC 7402 §5), go on their protocol's socket as [`Carrier::send`] sends them.
    /// When the socket buffer is full it waits for room (up to 100 ms, then the rest of the run
    /// counts as errors); a packet the kernel refuses is counted and the run goes on after it.
    /// An IPv6 packet whose SA names an endpoint of its own (`to`: a Mobile IPv6 home agent's
    /// tunnel to a care-of address, RFC 4877 §4) goes there instead of to the peer.
    /// A UDP carrier sends nothing here.
    pub fn send_batch<'a>(
        &self,
        packets: impl Iterator<Item = (&'a [u8], Option<IpAddr>)>,
    ) -> RawSent {
        let mut st = RawSent::default();
        let Carrier::Raw { esp, ah, hdrincl, peer, .. } = self else {
            st.unsendable = packets.count() as u64;
            return st;
        };
        // Only read once a run has a packet, which sets it.
        let mut to = IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED);
        let mut run: [IoSlice<'a>; crate::sys::MMSG_MAX] =
            std::array::from_fn(|_| IoSlice::new(&[]));
        // The IPv4 header fields of each packet of the run (None: none to give).
        let mut hdrs = [None; crate::sys::MMSG_MAX];
        let (mut count, mut fd) = (0usize, -1);
        for (p, sa_to) in packets {
            let Some((hdr_len, protocol, dst)) = encap::outer_info(p) else {
                st.unsendable += 1;
                continue;
            };
            let Some(dest) = destination(sa_to, *peer, hdrincl.is_some()) else {
                // Nowhere to send it: counted, never guessed.
                st.unsendable += 1;
                continue;
            };
            let ((f, h), bytes) = match hdrincl {
                // AH: the engine's header, as it is.
                Some(s) if dst == dest && protocol == proto::AH => ((s.as_raw_fd(), None), p),
                // ESP: the kernel writes a header like the engine's (`p` is IPv4: there is
                // an IP_HDRINCL socket).
                Some(_) if dst == dest => match v4_header(p) {
                    Some(h) => ((esp.as_raw_fd(), Some(h)), &p[hdr_len..]),
                    None => {
                        st.unsendable += 1;
                        continue;
                    }
                },
                // IPv6, or a BEET SA's inner addresses: the kernel writes the carrier's
                // header.
                _ => {
                    let s = if protocol == proto::AH { ah } else { esp };
                    ((s.as_raw_fd(), None), &p[hdr_len..])
                }
            };
            if count > 0 && (f != fd || dest != to || count == run.len()) {
                let sa = socket2::SockAddr::from(SocketAddr::new(to, 0));
                send_run(fd, &sa, &run[..count], &hdrs[..count], &mut st);
                count = 0;
            }
            fd = f;
            to = dest;
            run[count] = IoSlice::new(bytes);
            hdrs[count] = h;
            count += 1;
        }
        if count > 0 {
            let sa = socket2::SockAddr::from(SocketAddr::new(to, 0));
            send_run(fd, &sa, &run[..count], &hdrs[..count], &mut st);
        }
        st
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
            Carrier::Raw { esp, ah, hdrincl, peer, .. } => {
                let Some(dest) = destination(to.map(|t| t.ip()), *peer, hdrincl.is_some()) else {
                    return Ok(false);
                };
                match hdrincl {
                    // The engine's header, as it is: AH's ICV covers it.
                    Some(s) if dst == dest => s.send_to(p, SocketAddr::new(dst, 0)),
                    // IPv6, or a BEET SA's inner addresses (RFC 7402 §5): the kernel writes
                    // the carrier's header in front of the ESP packet.
                    _ => {
                        let s = if protocol == proto::AH { ah } else { esp };
                        s.send_to(&p[hdr_len..], SocketAddr::new(dest, 0))
                    }
                }
            }
        };
        r.map(|_| true)
    }
}

/// Where a raw-IP packet goes: its SA's endpoint (`sa_to`) if it has one, else the carrier's
/// peer. An IPv4 carrier (`v4`) with a fixed peer (`[network] peer`: a manual pair) sends
/// there whatever endpoint an SA names; with none (a node keyed by IKE or HIP, many peers)
/// each SA's endpoint decides.
fn destination(sa_to: Option<IpAddr>, peer: Option<IpAddr>, v4: bool) -> Option<IpAddr> {
    match (sa_to, peer) {
        (Some(a), Some(_)) if !v4 => Some(a),
        (_, Some(p)) => Some(p),
        (a, None) => a,
    }
}

/// Makes the datagram in `buf` (received on a socket for IP protocol `protocol`, from `from`
/// to `local`) a whole IP packet for the engine. `with_header`: it starts with the IPv4 header
/// (IPv4 raw sockets deliver it), kept unless the SA wants other addresses; otherwise it is
/// the ESP/AH packet alone (UDP payload, IPv6 raw payload) and a header is written in front.
/// `sa_addrs` gives the configured addresses of an inbound SA, used for the rebuilt header
/// (transport mode needs the SA's, not the datagram's, addresses); unknown SPIs get the
/// datagram's addresses and are then refused by the engine as `no_sa`.
fn frame(
    buf: &mut PacketBuf,
    protocol: u8,
    with_header: bool,
    from: IpAddr,
    local: IpAddr,
    sa_addrs: SaAddrs<'_>,
) -> Rx {
    // AH's SPI sits at offset 4 (RFC 4302 §2), ESP's at 0 (RFC 4303 §2).
    let spi_off = if protocol == proto::AH { 4 } else { 0 };
    if with_header {
        // A BEET SA (RFC 7402 §5) wants its inner addresses back in place of the carrier's:
        // the header is rebuilt.
        let p = buf.as_slice();
        if p.len() < 20 {
            return Rx::Runt;
        }
        let ihl = usize::from(p[0] & 0x0f) * 4;
        let Some(spi) = p.get(ihl + spi_off..).and_then(encap::esp_spi) else {
            return Rx::Runt;
        };
        let header = (
            IpAddr::from([p[12], p[13], p[14], p[15]]),
            IpAddr::from([p[16], p[17], p[18], p[19]]),
        );
        return match sa_addrs(spi, protocol) {
            Some((src, dst)) if (src, dst) != header && ihl >= 20 => {
                if buf.trim_front(ihl).is_err()
                    || !encap::prepend_ip_header(buf, src, dst, protocol)
                {
                    return Rx::Runt;
                }
                Rx::Packet
            }
            _ => Rx::Packet,
        };
    }
    let Some(spi) = buf.as_slice().get(spi_off..).and_then(encap::esp_spi) else {
        return Rx::Runt;
    };
    let (src, dst) = sa_addrs(spi, protocol).unwrap_or((from, local));
    if encap::prepend_ip_header(buf, src, dst, protocol) { Rx::Packet } else { Rx::Runt }
}

/// The TOS byte and source address of the IPv4 header at the front of `p`.
fn v4_header(p: &[u8]) -> Option<crate::sys::V4Header> {
    let h = p.get(..20).filter(|h| h[0] >> 4 == 4)?;
    Some(crate::sys::V4Header {
        tos: h[1],
        src: std::net::Ipv4Addr::new(h[12], h[13], h[14], h[15]),
    })
}

/// Sends `parts` on raw socket `fd` to `to`, part i with the IPv4 header fields `hdrs[i]`, with
/// as few sendmmsg(2) calls as the kernel allows.
fn send_run(
    fd: RawFd,
    to: &socket2::SockAddr,
    parts: &[IoSlice<'_>],
    hdrs: &[Option<crate::sys::V4Header>],
    st: &mut RawSent,
) {
    let mut i = 0;
    while i < parts.len() {
        st.syscalls += 1;
        match crate::sys::send_mmsg(fd, to, &parts[i..], hdrs.get(i..).unwrap_or_default()) {
            Ok(k) if k > 0 => {
                st.sent += k as u64;
                i += k;
            }
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if !crate::sys::poll_writable(fd, SEND_WAIT_MS) {
                    break;
                }
            }
            // This one packet is refused (too big, no route, ...): count it, send the rest.
            Err(_) => {
                st.errors += 1;
                i += 1;
            }
        }
    }
    st.errors += (parts.len() - i) as u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 packet of protocol `protocol` from `lo` to `lo` with TOS `tos`, SPI `spi` (at
    /// offset 4 for AH) and `len` more bytes of `fill`.
    fn packet(protocol: u8, tos: u8, spi: u32, len: usize, fill: u8) -> PacketBuf {
        let mut b = PacketBuf::with_max_packet();
        let mut p = Vec::new();
        if protocol == proto::AH {
            // Next header, payload length (in 4-byte words, minus 2), reserved.
            p.extend_from_slice(&[proto::ESP, 4, 0, 0]);
        }
        p.extend_from_slice(&spi.to_be_bytes());
        p.extend_from_slice(&1u32.to_be_bytes());
        p.resize(p.len() + len, fill);
        b.load(&p, ipsec::buf::DEFAULT_HEADROOM).unwrap();
        let lo = IpAddr::from([127, 0, 0, 1]);
        assert!(encap::prepend_ip_header(&mut b, lo, lo, protocol));
        b.as_mut_slice()[1] = tos;
        b
    }

    /// Over loopback (needs CAP_NET_RAW, else skipped): a batch of IPv4 ESP packets leaves in
    /// one sendmmsg(2), the kernel writing a header with the engine's TOS byte and source,
    /// and comes back through recvmmsg(2) with every byte after the header intact; AH leaves
    /// with the engine's header on the IP_HDRINCL socket (a second call); a packet that is
    /// not ESP/AH is never sent, and an ESP datagram too short for an SPI is dropped as a runt.
    #[test]
    fn raw_batch_round_trip_over_loopback() {
        let lo = IpAddr::from([127, 0, 0, 1]);
        let Ok(Carrier::Raw { esp, ah, hdrincl, local, peer, .. }) =
            Carrier::open(&Transport::Raw { local: lo, peer: Some(lo) })
        else {
            return;
        };
        let c = Carrier::Raw { esp, ah, hdrincl, local, peer, batch: true };
        assert!(c.raw_batched());
        // SPIs of this test's own (other raw ESP/AH on the host's loopback is ignored).
        let base = 0x7e57_0000 | (std::process::id() & 0xfff) << 4;
        let sent: Vec<PacketBuf> = (0..10)
            .map(|i| {
                packet(proto::ESP, 0xb8 | (i as u8 & 3), base + i, 100 + i as usize * 50, i as u8)
            })
            .collect();
        let ah_packet = packet(proto::AH, 0x20, base + 15, 64, 0xa5);
        let not_esp = [0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1];
        let packets = sent.iter().map(|b| b.as_slice()).chain([ah_packet.as_slice(), &not_esp[..]]);
        let st = c.send_batch(packets.map(|p| (p, None)));
        assert_eq!(st, RawSent { sent: 11, errors: 0, unsendable: 1, syscalls: 2 });
        // A runt: two bytes of ESP through the protocol-50 socket (the kernel adds the header).
        let Carrier::Raw { esp: esp_sock, .. } = &c else { unreachable!() };
        esp_sock.send_to(&[0x7e, 0x57], SocketAddr::new(lo, 0)).unwrap();
        let mut bufs: Vec<PacketBuf> = (0..16).map(|_| PacketBuf::with_max_packet()).collect();
        let (mut got, mut got_ah, mut runts) = (Vec::new(), Vec::new(), 0);
        let ours = |p: &[u8], at: usize| {
            p.get(20 + at..).and_then(encap::esp_spi).is_some_and(|s| s & !0xf == base)
        };
        for _ in 0..100 {
            let r = c.recv_batch(0, &mut bufs, &|_, _| None).unwrap();
            assert_eq!(r.received, r.packets + r.runts);
            runts += r.runts;
            got.extend(
                bufs[..r.packets].iter().map(|b| b.as_slice().to_vec()).filter(|p| ours(p, 0)),
            );
            let r = c.recv_batch(1, &mut bufs, &|_, _| None).unwrap();
            got_ah.extend(
                bufs[..r.packets].iter().map(|b| b.as_slice().to_vec()).filter(|p| ours(p, 4)),
            );
            if got.len() >= 10 && runts >= 1 && !got_ah.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(got.len(), 10);
        assert!(runts >= 1);
        for (g, s) in got.iter().chain(&got_ah).zip(sent.iter().chain([&ah_packet])) {
            let s = s.as_slice();
            assert_eq!(g.len(), s.len());
            // TOS, protocol and addresses as the engine wrote them; the kernel may have set
            // the identification and flags.
            assert_eq!((g[1], g[9], &g[12..20]), (s[1], s[9], &s[12..20]));
            assert_eq!(&g[20..], &s[20..]);
        }
        assert_eq!(got_ah.len(), 1);
    }
}
