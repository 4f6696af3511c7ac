//! The generator's sockets, in the mobile nodes' namespace.
//!
//! - Out: a raw IPv6 socket with IPPROTO_RAW (raw(7): IPV6_HDRINCL, the header is ours, so
//!   the source is each node's care-of address and the Destination Options header with the
//!   Home Address option goes out as built), a batch per sendmmsg(2). Every BU goes to the
//!   home agent, so one destination serves the whole batch.
//! - In: an AF_PACKET socket (packet(7)) that copies IPv6 packets whose first extension is a
//!   routing header or ESP: the Binding Acknowledgements, whose type 2 routing header (RFC 6275
//!   §6.4) a kernel without `CONFIG_IPV6_MIP6` would not process; they are addressed to care-of
//!   addresses that are not the namespace's, and an nftables rule of the scenario drops them at
//!   prerouting once this tap has its copy. A batch per recvmmsg(2).

use node::sys::{Datagram, MMSG_MAX, recv_mmsg, send_mmsg};
use socket2::{Domain, Protocol, SockAddr, SockFilter, Socket, Type};
use std::io::{self, IoSlice};
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV6};
use std::os::fd::AsRawFd;

/// ETH_P_IPV6 (linux/if_ether.h).
const ETH_P_IPV6: u16 = 0x86dd;
/// PACKET_IGNORE_OUTGOING (linux/if_packet.h): our own BUs are not copied back to us.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// The sending side.
#[derive(Debug)]
pub struct BuSender {
    sock: Socket,
    to: SockAddr,
}

impl BuSender {
    /// Opens it towards `home_agent`, with a send buffer of `sndbuf` bytes.
    pub fn open(home_agent: Ipv6Addr, sndbuf: usize) -> io::Result<BuSender> {
        let sock = Socket::new(Domain::IPV6, Type::RAW, Some(Protocol::from(libc::IPPROTO_RAW)))?;
        sock.set_send_buffer_size(sndbuf)?;
        let to = SockAddr::from(SocketAddr::V6(SocketAddrV6::new(home_agent, 0, 0, 0)));
        Ok(BuSender { sock, to })
    }

    /// Sends `packets` (each a whole IPv6 packet), [`MMSG_MAX`] a sendmmsg(2); returns how many
    /// the kernel took (it blocks while the socket buffer is full, so normally all).
    pub fn send(&self, packets: &[&[u8]]) -> io::Result<usize> {
        let mut sent = 0;
        for chunk in packets.chunks(MMSG_MAX) {
            let parts: Vec<IoSlice<'_>> = chunk.iter().map(|p| IoSlice::new(p)).collect();
            let mut off = 0;
            while off < parts.len() {
                let n = send_mmsg(self.sock.as_raw_fd(), &self.to, &parts[off..], &[])?;
                if n == 0 {
                    return Ok(sent);
                }
                off += n;
                sent += n;
            }
        }
        Ok(sent)
    }
}

/// The classic BPF program: the IPv6 Next Header (offset 6 of the network header, which is
/// where an AF_PACKET SOCK_DGRAM socket starts) is 43 (routing) or 50 (ESP).
fn filter() -> Vec<SockFilter> {
    let code = |c: u32| c as u16;
    let ld_b = code(libc::BPF_LD | libc::BPF_B | libc::BPF_ABS);
    let jeq = code(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K);
    let ret = code(libc::BPF_RET | libc::BPF_K);
    vec![
        SockFilter::new(ld_b, 0, 0, 6),
        SockFilter::new(jeq, 2, 0, 43),
        SockFilter::new(jeq, 1, 0, 50),
        SockFilter::new(ret, 0, 0, 0),
        SockFilter::new(ret, 0, 0, 0xffff),
    ]
}

/// The receiving side, with its buffers.
#[derive(Debug)]
pub struct BaReceiver {
    sock: Socket,
    bufs: Vec<Vec<u8>>,
    got: Vec<Datagram>,
}

impl BaReceiver {
    /// Opens it (all interfaces of the namespace: the veth and `lo`) with a receive buffer of
    /// `rcvbuf` bytes; `batch` packets per recvmmsg(2).
    pub fn open(rcvbuf: usize, batch: usize, frame: usize) -> io::Result<BaReceiver> {
        let proto = Protocol::from(i32::from(ETH_P_IPV6.to_be()));
        let sock = Socket::new(Domain::PACKET, Type::DGRAM, Some(proto))?;
        sock.attach_filter(&filter())?;
        // Kernels before 4.20 lack the option; the filter keeps our BUs (Next Header 60) out.
        let _ = node::sys::setsockopt_int(
            sock.as_raw_fd(),
            libc::SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            1,
        );
        sock.set_nonblocking(true)?;
        sock.set_recv_buffer_size(rcvbuf)?;
        let batch = batch.clamp(1, MMSG_MAX);
        Ok(BaReceiver {
            sock,
            bufs: vec![vec![0; frame]; batch],
            got: vec![Datagram::default(); batch],
        })
    }

    /// Reads what is queued, a recvmmsg(2) at a time, and hands each whole packet to `f`;
    /// returns how many were read (0: nothing was waiting).
    pub fn drain(&mut self, mut f: impl FnMut(&[u8])) -> io::Result<usize> {
        let mut total = 0;
        loop {
            let n = {
                let mut views: Vec<&mut [u8]> =
                    self.bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
                recv_mmsg(self.sock.as_raw_fd(), &mut views, &mut self.got)?
            };
            for (b, g) in self.bufs.iter().zip(&self.got).take(n) {
                if !g.truncated {
                    if let Some(p) = b.get(..g.len) {
                        f(p);
                    }
                }
            }
            total += n;
            if n < self.bufs.len() {
                return Ok(total);
            }
        }
    }

    /// Its descriptor, for poll(2).
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.sock.as_raw_fd()
    }
}
