//! Where IKE travels (RFC 7296 §2.11, RFC 3948 §2.2): UDP 500, a socket of the control thread's
//! own, and the ESP-in-UDP port 4500 shared with the data path — the lanes punt what arrives
//! there after the 4-byte non-ESP marker, and the control thread sends on a clone of the lane
//! socket, marker first.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

/// The non-ESP marker: four zero bytes where ESP's SPI would be (RFC 3948 §2.2).
pub const NON_ESP_MARKER: [u8; 4] = [0; 4];

/// IKE's two ports.
#[derive(Debug)]
pub struct IkeSockets {
    ike: UdpSocket,
    natt: Option<UdpSocket>,
}

impl IkeSockets {
    /// Binds UDP `port` (500 unless a test moves it) on `local`, and keeps `natt`, a clone of
    /// the data path's UDP socket, for sending on 4500.
    pub fn open(local: IpAddr, port: u16, natt: Option<UdpSocket>) -> io::Result<IkeSockets> {
        let ike = UdpSocket::bind(SocketAddr::new(local, port))?;
        ike.set_nonblocking(true)?;
        Ok(IkeSockets { ike, natt })
    }

    /// The port-500 socket's descriptor, for poll(2).
    pub fn fd(&self) -> RawFd {
        self.ike.as_raw_fd()
    }

    /// The next datagram waiting on port 500, if any.
    pub fn recv(&self, buf: &mut [u8]) -> Option<(usize, SocketAddr)> {
        self.ike.recv_from(buf).ok()
    }

    /// Sends an IKE message: on 4500 after the marker when `natt`, else on 500.
    pub fn send(&self, natt: bool, to: SocketAddr, bytes: &[u8]) -> io::Result<()> {
        if natt {
            let s = self.natt.as_ref().ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotConnected, "no ESP-in-UDP socket for port 4500")
            })?;
            let mut m = Vec::with_capacity(bytes.len() + 4);
            m.extend_from_slice(&NON_ESP_MARKER);
            m.extend_from_slice(bytes);
            s.send_to(&m, to).map(|_| ())
        } else {
            self.ike.send_to(bytes, to).map(|_| ())
        }
    }
}
