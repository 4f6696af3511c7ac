//! What the kernel must do for a home agent's forwarding (RFC 6275 §10.4.1): answer neighbour
//! solicitations for a registered home address on the home link (proxy neighbour discovery,
//! `ip -6 neigh add proxy HOA dev LINK` with `proxy_ndp` on) and route the packets it so
//! intercepts to the node's TUN device (`ip -6 route replace HOA/128 dev TUN`), where the
//! tunnel policy seals them for the care-of address. Undone on de-registration, on expiry and
//! when the node stops. Each change is one `ip` command: bindings change rarely compared to
//! packets. When it starts intercepting, the home agent also multicasts a Neighbor
//! Advertisement for the home address with its own link-layer address ([`announce`], §10.4.1),
//! so that neighbours which still hold the mobile node's own address update their caches.

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

/// Multicasts an unsolicited Neighbor Advertisement (RFC 4861 §4.4, §7.2.6) for `home` to all
/// nodes on `link` with `link`'s own link-layer address, Override set and Router clear (RFC 6275
/// §10.4.1). The kernel writes the IPv6 header (link-local source, hop limit 255) and the
/// ICMPv6 checksum (RFC 3542 §3.1).
pub fn announce(home: Ipv6Addr, link: &str) -> io::Result<()> {
    use socket2::{Domain, Protocol, Socket, Type};
    let mac = std::fs::read_to_string(format!("/sys/class/net/{link}/address"))?;
    let mac: Vec<u8> =
        mac.trim().split(':').filter_map(|b| u8::from_str_radix(b, 16).ok()).collect();
    let Ok(mac) = <[u8; 6]>::try_from(mac) else {
        return Err(io::Error::other(format!("{link} has no Ethernet address")));
    };
    let mut na = vec![136, 0, 0, 0, 0x20, 0, 0, 0];
    na.extend_from_slice(&home.octets());
    // Target Link-Layer Address option: type 2, length 1 (8 octets).
    na.extend_from_slice(&[2, 1]);
    na.extend_from_slice(&mac);
    let sock = Socket::new(Domain::IPV6, Type::RAW, Some(Protocol::ICMPV6))?;
    sock.set_multicast_hops_v6(255)?;
    sock.set_multicast_if_v6(super::socket::ifindex(link)?)?;
    let all_nodes =
        std::net::SocketAddrV6::new(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1), 0, 0, 0);
    sock.send_to(&na, &std::net::SocketAddr::V6(all_nodes).into())?;
    Ok(())
}
