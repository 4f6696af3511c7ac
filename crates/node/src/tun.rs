//! The TUN device (Linux `/dev/net/tun`) through the `tun-rs` crate: name, MTU and addresses from
//! the config; the device disappears when the last descriptor closes. With offloads on it is
//! opened with IFF_VNET_HDR and TSO4/TSO6/CSUM (the virtio-net header of wireguard-go's
//! tun/offload_linux.go): the kernel hands over TCP super-packets of up to 64 KB, which tun-rs
//! splits into MTU-sized segments (`recv_multiple`), and decrypted segments are coalesced back
//! into super-packets before they are written (`send_multiple` with a `GROTable`).

use crate::config::InterfaceConf;
use ipsec::PacketBuf;
use std::io;
use std::net::IpAddr;
use tun_rs::{DeviceBuilder, ExpandBuffer, SyncDevice};

/// Bytes of the virtio-net header in front of every packet when offloads are on.
pub const VNET_HDR_LEN: usize = tun_rs::VIRTIO_NET_HDR_LEN;

/// Creates, configures and brings up the TUN device with `c.queues` queues (IFF_MULTI_QUEUE when
/// more than one: the kernel spreads flows over them by hash), all non-blocking. `offload` asks
/// for the virtio-net header and TCP segmentation offloads (falls back to a plain device if the
/// kernel refuses); `tx_queue_len` sets the device's transmit queue (packets the kernel may
/// queue for us to read). Returns one device handle per queue and whether offloads are on.
pub fn open(
    c: &InterfaceConf,
    mtu: u16,
    offload: bool,
    tx_queue_len: Option<u32>,
) -> io::Result<(Vec<SyncDevice>, bool)> {
    let build = |offload: bool| {
        let mut b = DeviceBuilder::new()
            .name(c.name.as_str())
            .mtu(mtu)
            .offload(offload)
            .multi_queue(c.queues > 1);
        if let Some(q) = tx_queue_len {
            b = b.tx_queue_len(q);
        }
        b.enable(true).build_sync()
    };
    let (dev, on) = match build(offload) {
        Ok(d) => (d, offload),
        Err(e) if offload => {
            crate::log::log_event!(
                crate::log::Level::Warn,
                "tun-offload-refused",
                "interface" => c.name,
                "error" => e.to_string(),
                "action" => "running without offloads"
            );
            (build(false)?, false)
        }
        Err(e) => return Err(e),
    };
    for a in &c.addresses {
        match a.addr {
            IpAddr::V4(v4) => dev.add_address_v4(v4, a.len)?,
            IpAddr::V6(v6) => dev.add_address_v6(v6, a.len)?,
        }
    }
    dev.set_nonblocking(true)?;
    let mut queues = Vec::with_capacity(c.queues);
    for _ in 1..c.queues {
        let q = dev.try_clone()?;
        q.set_nonblocking(true)?;
        queues.push(q);
    }
    queues.insert(0, dev);
    Ok((queues, on))
}

/// A packet buffer as tun-rs's GRO wants it: the window starts [`VNET_HDR_LEN`] bytes before the
/// IP packet (room for the virtio-net header) and may grow into the tailroom when segments of
/// one TCP flow are coalesced into it.
#[derive(Debug)]
#[repr(transparent)]
pub struct TunPkt(pub PacketBuf);

impl TunPkt {
    /// Views packet buffers as `TunPkt`s (no copy).
    #[allow(unsafe_code)]
    pub fn slice_mut(bufs: &mut [PacketBuf]) -> &mut [TunPkt] {
        // SAFETY: `TunPkt` is `repr(transparent)` over `PacketBuf`, so both slice types have the
        // same layout; the returned slice borrows `bufs` exclusively for its lifetime.
        unsafe { &mut *(bufs as *mut [PacketBuf] as *mut [TunPkt]) }
    }
}

impl AsRef<[u8]> for TunPkt {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl AsMut<[u8]> for TunPkt {
    fn as_mut(&mut self) -> &mut [u8] {
        self.0.as_mut_slice()
    }
}

impl ExpandBuffer for TunPkt {
    fn buf_capacity(&self) -> usize {
        self.0.len() + self.0.tailroom()
    }

    fn buf_resize(&mut self, new_len: usize, value: u8) {
        let old = self.0.len();
        if new_len <= old {
            self.0.truncate(new_len);
        } else if self.0.append(new_len - old).is_ok() {
            self.0.as_mut_slice()[old..].fill(value);
        }
    }

    fn buf_extend_from_slice(&mut self, src: &[u8]) {
        let old = self.0.len();
        // tun-rs checks `buf_capacity` before it coalesces, so the append fits.
        if self.0.append(src.len()).is_ok() {
            self.0.as_mut_slice()[old..].copy_from_slice(src);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tun_pkt_grows_in_place() {
        let mut bufs = vec![PacketBuf::new(64, 8)];
        assert!(bufs[0].load(&[1, 2, 3], 8).is_ok());
        let t = &mut TunPkt::slice_mut(&mut bufs)[0];
        assert_eq!(t.buf_capacity(), 56);
        t.buf_extend_from_slice(&[4, 5]);
        t.buf_resize(7, 9);
        assert_eq!(t.as_ref(), &[1, 2, 3, 4, 5, 9, 9]);
        t.buf_resize(2, 0);
        assert_eq!(bufs[0].as_slice(), &[1, 2]);
    }
}
