//! The TUN device (Linux `/dev/net/tun`, IFF_TUN | IFF_NO_PI) through the `tun-rs` crate: name,
//! MTU and addresses from the config; the device disappears when the last descriptor closes.

use crate::config::InterfaceConf;
use std::io;
use std::net::IpAddr;
use tun_rs::{DeviceBuilder, SyncDevice};

/// Creates, configures and brings up the TUN device; non-blocking.
pub fn open(c: &InterfaceConf, mtu: u16) -> io::Result<SyncDevice> {
    let dev = DeviceBuilder::new().name(c.name.as_str()).mtu(mtu).enable(true).build_sync()?;
    for a in &c.addresses {
        match a.addr {
            IpAddr::V4(v4) => dev.add_address_v4(v4, a.len)?,
            IpAddr::V6(v6) => dev.add_address_v6(v6, a.len)?,
        }
    }
    dev.set_nonblocking(true)?;
    Ok(dev)
}
