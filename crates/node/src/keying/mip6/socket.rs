//! The home agent's sockets. A Binding Update carries a Home Address option (RFC 6275 §6.3),
//! which a kernel without `CONFIG_IPV6_MIP6` answers with ICMPv6 Parameter Problem instead of
//! delivering it, so no IP socket ever sees one: the home agent reads them from the link with
//! an AF_PACKET socket (packet(7)) while `super::nft` keeps the kernel's stack from acting on
//! them. A classic BPF filter ([`super::bpf`]) lets only IPv6 packets to our address on the
//! configured interface through that start with a Destination Options header, or ESP from the
//! home prefix, so the socket does not copy the rest of the link's traffic (nor the reverse
//! tunnel's ESP). Replies leave by a raw IPv6 socket with IPPROTO_RAW (raw(7):
//! the header is ours, IPV6_HDRINCL), since the type 2 routing header and ESP are built here.

use super::bpf;
use crate::sys::{MMSG_MAX, send_mmsg_to};
use socket2::{Domain, Protocol, SockAddr, SockFilter, Socket, Type};
use std::io::{self, IoSlice};
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV6};
use std::os::fd::{AsRawFd, RawFd};

/// ETH_P_IPV6 (linux/if_ether.h).
const ETH_P_IPV6: u16 = 0x86dd;
/// PACKET_IGNORE_OUTGOING (linux/if_packet.h): our own sends are not looped back to us.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// The receiving side: IPv6 packets from the link, network header first.
#[derive(Debug)]
pub struct LinkSocket {
    sock: Socket,
}

/// The interface's index, from sysfs (no unsafe if_nametoindex).
pub fn ifindex(name: &str) -> io::Result<u32> {
    let t = std::fs::read_to_string(format!("/sys/class/net/{name}/ifindex"))?;
    t.trim().parse().map_err(|_| io::Error::other(format!("ifindex of {name}: {t:?}")))
}

impl LinkSocket {
    /// Opens it for packets to `addr` arriving on `interface` ([`bpf::home_agent`]: ESP
    /// first only from `home_prefix`).
    pub fn open(
        interface: &str,
        addr: Ipv6Addr,
        home_prefix: (Ipv6Addr, u8),
    ) -> io::Result<LinkSocket> {
        let index = ifindex(interface)?;
        LinkSocket::with_filter(&bpf::to_sock_filter(&bpf::home_agent(index, addr, home_prefix)))
    }

    /// Opens it for the mobile node: packets with a routing header arriving on `interface`.
    pub fn open_mobile(interface: &str) -> io::Result<LinkSocket> {
        LinkSocket::with_filter(&bpf::to_sock_filter(&bpf::mobile_node(ifindex(interface)?)))
    }

    fn with_filter(filter: &[SockFilter]) -> io::Result<LinkSocket> {
        let proto = Protocol::from(i32::from(ETH_P_IPV6.to_be()));
        let sock = Socket::new(Domain::PACKET, Type::DGRAM, Some(proto))?;
        sock.attach_filter(filter)?;
        // Kernels before 4.20 lack the option; the filter's address test covers most of it.
        let _ = crate::sys::setsockopt_int(
            sock.as_raw_fd(),
            libc::SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            1,
        );
        sock.set_nonblocking(true)?;
        // A burst of Binding Updates queues whole veth/NIC buffers (2–3 kB of accounting each):
        // 16 MiB holds several thousand, past `net.core.rmem_max` where we may (root).
        let fd = sock.as_raw_fd();
        if !crate::sys::force_buffer(fd, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, 16 << 20) {
            return Err(io::Error::last_os_error());
        }
        Ok(LinkSocket { sock })
    }

    /// Its descriptor, for poll(2) and recvmmsg(2).
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

/// The sending side: whole IPv6 packets, header included, queued while a batch of Binding
/// Updates is handled and sent by one sendmmsg(2) at the batch's end.
#[derive(Debug)]
pub struct RawSender {
    sock: Socket,
    /// Queued packets (buffers kept for reuse) and their destinations; `queued` are live.
    packets: Vec<Vec<u8>>,
    dsts: Vec<SockAddr>,
    queued: usize,
}

/// What a [`RawSender::flush`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flushed {
    /// Packets the kernel took.
    pub sent: u64,
    /// Packets it refused (the first refusal's error is logged by the caller).
    pub failed: u64,
}

impl RawSender {
    /// Opens it (IPPROTO_RAW implies IPV6_HDRINCL, raw(7)). It is not bound: binding it to the
    /// home agent's address (to spare the kernel's per-packet source address selection, about
    /// 5 % of the home agent's time in a profile) made the Binding Acknowledgements of the
    /// lab's load test arrive tens of milliseconds late.
    pub fn open() -> io::Result<RawSender> {
        let sock = Socket::new(Domain::IPV6, Type::RAW, Some(Protocol::from(libc::IPPROTO_RAW)))?;
        sock.set_nonblocking(true)?;
        // A bigger buffer than the default lets a whole batch of replies queue at once.
        let _ = sock.set_send_buffer_size(4 << 20);
        Ok(RawSender { sock, packets: Vec::new(), dsts: Vec::new(), queued: 0 })
    }

    /// Queues the IPv6 packet `p` towards `to` (its destination address); [`MMSG_MAX`]
    /// queued packets are flushed at once.
    pub fn push(&mut self, to: Ipv6Addr, p: &[u8]) -> Option<(Flushed, Option<io::Error>)> {
        let dst: SockAddr = SocketAddr::V6(SocketAddrV6::new(to, 0, 0, 0)).into();
        if let (Some(b), Some(d)) =
            (self.packets.get_mut(self.queued), self.dsts.get_mut(self.queued))
        {
            b.clear();
            b.extend_from_slice(p);
            *d = dst;
        } else {
            self.packets.push(p.to_vec());
            self.dsts.push(dst);
        }
        self.queued += 1;
        (self.queued >= MMSG_MAX).then(|| self.flush())
    }

    /// Sends everything queued, a sendmmsg(2) per [`MMSG_MAX`].
    pub fn flush(&mut self) -> (Flushed, Option<io::Error>) {
        let mut f = Flushed::default();
        let mut err = None;
        let mut off = 0;
        while off < self.queued {
            let end = self.queued.min(off + MMSG_MAX);
            let parts: Vec<IoSlice<'_>> =
                self.packets[off..end].iter().map(|b| IoSlice::new(b)).collect();
            match send_mmsg_to(self.sock.as_raw_fd(), &self.dsts[off..end], &parts) {
                Ok(n) if n > 0 => {
                    f.sent += n as u64;
                    off += n;
                }
                Ok(_) => break,
                Err(e) => {
                    // The first packet left is refused: count it and go on with the rest.
                    f.failed += 1;
                    off += 1;
                    err.get_or_insert(e);
                }
            }
        }
        f.failed += (self.queued - off) as u64;
        self.queued = 0;
        (f, err)
    }
}
