//! Lanes: the data path split over cores. With `[interface] queues = N` the TUN device is
//! multi-queue (IFF_MULTI_QUEUE: the kernel spreads flows over the queues by flow hash) and the
//! carrier is N UDP sockets in one SO_REUSEPORT group on the local port. Lane k owns TUN queue
//! k, socket k and its own SAs (`lane = k` in `[[sa]]`): per-resource SAs as RFC 9611 has them,
//! so no SA state (sequence numbers, replay windows) is ever shared between cores.
//!
//! Inbound, the kernel must hand each ESP packet to the lane that owns its SA: a classic BPF
//! program on the reuseport group (SO_ATTACH_REUSEPORT_CBPF, socket(7)) returns SPI mod N as
//! the socket index, and the config requires that an inbound SA of lane k has SPI ≡ k mod N
//! (the receiver picks its SPIs, RFC 4301 §4.1). Outbound, lane k sends from its own source
//! port (local port + k; lane 0 from the group socket itself): with one 4-tuple for all lanes,
//! the peer's GRO could merge datagrams of two lanes into one message, which the BPF program
//! (it sees the first datagram only) would hand to one lane.
//!
//! A node keyed by IKE sends from the group's port on every lane instead: its outbound SAs are
//! on every lane (`keying::plane::EVERY_LANE`), so one SA's packets leave from several lanes,
//! and from several ports they would look to the peer like a NAT rebinding at every packet
//! (RFC 3948 §3.1; our own receivers follow the newest port). One SA's
//! packets all go to the peer's one lane for its SPI, so merging them costs nothing.

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// Lane `k`'s sockets: `rx` in the reuseport group on `local` (lane 0's also sends), and for
/// k ≥ 1, with `own_ports`, `tx` bound to port `local.port() + k` (without, every lane sends
/// from its `rx`).
#[derive(Debug)]
pub struct LaneSockets {
    /// Receives (and for lane 0 sends).
    pub rx: UdpSocket,
    /// Sends, for lanes ≥ 1.
    pub tx: Option<UdpSocket>,
}

/// Opens the sockets of `lanes` lanes on `local` and steers received ESP to lane SPI mod
/// `lanes`. The group's sockets are bound in lane order, which is their index in the group.
pub fn open_udp(local: SocketAddr, lanes: usize, own_ports: bool) -> io::Result<Vec<LaneSockets>> {
    let mut out = Vec::with_capacity(lanes);
    for k in 0..lanes {
        let s = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
        s.set_reuse_port(true)?;
        s.set_nonblocking(true)?;
        s.bind(&local.into())?;
        if k == 0 {
            crate::sys::attach_reuseport_spi_mod(s.as_raw_fd(), lanes as u32)?;
        }
        let tx = if k == 0 || !own_ports {
            None
        } else {
            let port = local.port().checked_add(k as u16).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "local port + lane above 65535")
            })?;
            let t = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
            t.set_nonblocking(true)?;
            t.bind(&SocketAddr::new(local.ip(), port).into())?;
            Some(UdpSocket::from(t))
        };
        out.push(LaneSockets { rx: UdpSocket::from(s), tx });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over loopback: datagrams whose first four bytes (the SPI) leave k mod 3 arrive on lane
    /// k's socket, whatever the sender's port.
    #[test]
    fn reuseport_group_steers_by_spi() {
        let Ok(lanes) = open_udp("127.0.0.1:0".parse().unwrap(), 1, true) else { return };
        // Port 0 cannot be shared: find a free port first, then build three lanes on it.
        let port = lanes[0].rx.local_addr().unwrap().port();
        drop(lanes);
        let Ok(lanes) = open_udp(SocketAddr::from(([127, 0, 0, 1], port)), 3, true) else { return };
        let to = SocketAddr::from(([127, 0, 0, 1], port));
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        for spi in [0x1000u32, 0x1001, 0x1002, 0x2002, 0x2003, 0x3000] {
            let mut d = spi.to_be_bytes().to_vec();
            d.extend_from_slice(&[0u8; 40]);
            tx.send_to(&d, to).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        for (k, l) in lanes.iter().enumerate() {
            let mut got = Vec::new();
            let mut b = [0u8; 64];
            while let Ok(n) = l.rx.recv(&mut b) {
                assert_eq!(n, 44);
                got.push(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            }
            assert!(got.len() == 2, "lane {k} got {got:x?}");
            assert!(got.iter().all(|s| *s as usize % 3 == k), "lane {k} got {got:x?}");
        }
        assert_eq!(lanes[2].tx.as_ref().unwrap().local_addr().unwrap().port(), port + 2);
    }
}
