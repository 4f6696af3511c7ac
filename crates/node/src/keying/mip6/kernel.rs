//! What the kernel must do for a home agent's forwarding (RFC 6275 §10.4.1): answer neighbour
//! solicitations for a registered home address on the home link (proxy neighbour discovery,
//! `ip -6 neigh add proxy HOA dev LINK` with `proxy_ndp` on) and route the packets it so
//! intercepts to the node's TUN device (`ip -6 route replace HOA/128 dev TUN`), where the
//! tunnel policy seals them for the care-of address. Undone on de-registration, on expiry and
//! when the node stops. Each change is one `ip` command: bindings change rarely compared to
//! packets.

use std::io;
use std::net::Ipv6Addr;
use std::process::{Command, Stdio};

fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).stdin(Stdio::null()).output()?;
    if out.status.success() {
        Ok(())
    } else {
        let why = String::from_utf8_lossy(&out.stderr);
        Err(io::Error::other(format!("ip {}: {}", args.join(" "), why.trim())))
    }
}

/// Turns proxy neighbour discovery on for `link` (net.ipv6.conf.LINK.proxy_ndp = 1).
pub fn enable_proxy_ndp(link: &str) -> io::Result<()> {
    std::fs::write(format!("/proc/sys/net/ipv6/conf/{link}/proxy_ndp"), "1")
}

/// Intercepts `home` on `link` and routes it to `tun`.
pub fn intercept(home: Ipv6Addr, link: &str, tun: &str) -> io::Result<()> {
    let h = home.to_string();
    ip(&["-6", "neigh", "replace", "proxy", &h, "dev", link])?;
    ip(&["-6", "route", "replace", &format!("{h}/128"), "dev", tun])
}

/// Stops intercepting `home` (both halves tried; the first failure is returned).
pub fn release(home: Ipv6Addr, link: &str, tun: &str) -> io::Result<()> {
    let h = home.to_string();
    let a = ip(&["-6", "neigh", "del", "proxy", &h, "dev", link]);
    let b = ip(&["-6", "route", "del", &format!("{h}/128"), "dev", tun]);
    a.and(b)
}
