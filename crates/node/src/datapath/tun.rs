//! The TUN device (Linux `/dev/net/tun`) through the `tun-rs` crate: name, MTU and addresses from
//! the config; the device disappears when the last descriptor closes. With offloads on it is
//! opened with IFF_VNET_HDR and TSO4/TSO6/CSUM (the virtio-net header of wireguard-go's
//! tun/offload_linux.go): the kernel hands over TCP super-packets of up to 64 KB, which tun-rs
//! splits into MTU-sized segments (`recv_multiple`), and decrypted segments are coalesced back
//! into super-packets before they are written (`crate::gro`).

use crate::config::InterfaceConf;
use std::io;
use std::net::IpAddr;
use tun_rs::{DeviceBuilder, SyncDevice};

/// Bytes of the virtio-net header in front of every packet when offloads are on.
pub use super::gro::VNET_HDR_LEN;
// The coalescer writes the header itself; tun-rs reads it with the same size.
const _: () = assert!(VNET_HDR_LEN == tun_rs::VIRTIO_NET_HDR_LEN);

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
            tracing::warn!(interface = %c.name, error = e.to_string(), action = "running without offloads", "tun-offload-refused");
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
