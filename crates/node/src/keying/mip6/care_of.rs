//! The mobile node's care-of address (RFC 6275 §11.5.1: the address of the foreign link it is
//! attached to): the global IPv6 address of its interface, read from `/proc/net/if_inet6`.
//! A change is the movement detection that triggers a new Binding Update (§11.7.1). The kernel
//! announces every IPv6 address added, removed or changed on the rtnetlink group
//! `RTNLGRP_IPV6_IFADDR` ([`AddrWatch`]): the control thread polls that socket and reads the
//! addresses again at once, so a move is noticed in the time the kernel takes to tell, not at
//! the next once-a-second read (which stays, in case the notice is lost).

use std::io::{self, Read};
use std::net::Ipv6Addr;
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, Socket, Type};

/// /proc/net/if_inet6 flags (linux/if_addr.h) that make an address unusable as care-of
/// address: IFA_F_DADFAILED, IFA_F_DEPRECATED, IFA_F_TENTATIVE.
const UNUSABLE: u32 = 0x08 | 0x20 | 0x40;
/// Scope field of a global address.
const SCOPE_GLOBAL: u32 = 0;

/// The usable global IPv6 addresses of `interface` in `if_inet6` (the file's text), in order.
/// Each line reads `ADDR(32 hex) IFINDEX PREFIXLEN SCOPE FLAGS NAME`.
pub fn global_addresses(if_inet6: &str, interface: &str) -> Vec<Ipv6Addr> {
    if_inet6
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [addr, _, _, scope, flags, name] = f.as_slice() else { return None };
            let hex = |s: &str| u32::from_str_radix(s, 16).ok();
            if *name != interface
                || hex(scope)? != SCOPE_GLOBAL
                || hex(flags)? & UNUSABLE != 0
                || addr.len() != 32
            {
                return None;
            }
            u128::from_str_radix(addr, 16).ok().map(Ipv6Addr::from)
        })
        .collect()
}

/// The care-of address to use now: `current` while it is still there (a second address does
/// not move us), else the first usable one; `None` when the interface has none.
pub fn pick(current: Option<Ipv6Addr>, usable: &[Ipv6Addr]) -> Option<Ipv6Addr> {
    match current {
        Some(c) if usable.contains(&c) => Some(c),
        _ => usable.first().copied(),
    }
}

/// Reads the interface's care-of address candidates from the kernel.
pub fn read(interface: &str) -> Vec<Ipv6Addr> {
    std::fs::read_to_string("/proc/net/if_inet6")
        .map(|t| global_addresses(&t, interface))
        .unwrap_or_default()
}

/// rtnetlink(7) multicast group of IPv6 address changes, as a bind mask (linux/rtnetlink.h
/// `RTMGRP_IPV6_IFADDR`, group `RTNLGRP_IPV6_IFADDR` = 9).
const RTMGRP_IPV6_IFADDR: u32 = 1 << 8;

/// A NETLINK_ROUTE socket that becomes readable whenever an IPv6 address of any interface is
/// added, removed or changes flags (e.g. leaves the tentative state after DAD). The messages
/// are not parsed: any of them only means "read the addresses again".
#[derive(Debug)]
pub struct AddrWatch {
    sock: Socket,
}

impl AddrWatch {
    /// Subscribes to the group.
    pub fn open() -> io::Result<AddrWatch> {
        let sock = Socket::new(
            Domain::from(libc::AF_NETLINK),
            Type::RAW,
            Some(Protocol::from(libc::NETLINK_ROUTE)),
        )?;
        crate::sys::bind_netlink(sock.as_raw_fd(), RTMGRP_IPV6_IFADDR)?;
        sock.set_nonblocking(true)?;
        Ok(AddrWatch { sock })
    }

    /// Its descriptor, for poll(2).
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// Reads every waiting notice; true if there was one (or the queue overflowed, which also
    /// means something changed).
    pub fn drain(&mut self) -> bool {
        let mut buf = [0u8; 8192];
        let mut any = false;
        loop {
            match (&self.sock).read(&mut buf) {
                Ok(0) => return any,
                Ok(_) => any = true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return any,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ENOBUFS: notices were dropped; read the addresses to be sure.
                Err(_) => return true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
fe800000000000000000000000000001 02 40 20 80     mnv
20010db8000200000000000000000100 02 40 00 80     mnv
20010db8000300000000000000000100 02 40 00 c0     mnv
20010db8000400000000000000000100 02 40 00 a0     mnv
20010db8000500000000000000000100 03 40 00 80   other
00000000000000000000000000000001 01 80 10 80       lo
garbage line
";

    #[test]
    fn only_usable_global_addresses_of_the_interface() {
        let got = global_addresses(TEXT, "mnv");
        // Link-local (scope 20), tentative (0x40) and deprecated (0x20) ones are left out.
        assert_eq!(got, vec!["2001:db8:2::100".parse::<Ipv6Addr>().unwrap()]);
        assert!(global_addresses(TEXT, "nope").is_empty());
    }

    #[test]
    fn keeps_the_current_address_while_it_lasts() {
        let a: Ipv6Addr = "2001:db8:2::100".parse().unwrap();
        let b: Ipv6Addr = "2001:db8:3::100".parse().unwrap();
        assert_eq!(pick(Some(b), &[a, b]), Some(b));
        assert_eq!(pick(Some(a), &[b]), Some(b));
        assert_eq!(pick(None, &[a, b]), Some(a));
        assert_eq!(pick(Some(a), &[]), None);
    }

    /// The watch hears an address added in its namespace (a fresh one, so nothing else moves):
    /// silent before, readable after `ip -6 addr add`, and again after the delete.
    #[test]
    fn watch_hears_address_changes() {
        if effective_uid() != 0 {
            println!("SKIPPED: needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN)");
            return;
        }
        let ns = format!("hipsec-aw-{}", std::process::id());
        let ip = |args: &[&str]| {
            let ok =
                std::process::Command::new("ip").args(args).status().is_ok_and(|s| s.success());
            assert!(ok, "ip {args:?}");
        };
        ip(&["netns", "add", &ns]);
        let ns2 = ns.clone();
        let got = std::thread::spawn(move || {
            crate::netns::enter(&ns2).expect("enter netns");
            let mut w = AddrWatch::open().expect("netlink socket");
            let quiet = !w.drain();
            let ipn = |args: &[&str]| {
                let mut a = vec!["-n", ns2.as_str()];
                a.extend_from_slice(args);
                std::process::Command::new("ip").args(&a).status().is_ok_and(|s| s.success())
            };
            // A veth pair (this kernel has no dummy driver).
            let veth = ["link", "add", "d0", "type", "veth", "peer", "name", "d1"];
            assert!(ipn(&veth) && ipn(&["link", "set", "d0", "up"]));
            w.drain();
            assert!(ipn(&["-6", "addr", "add", "2001:db8:7::1/64", "dev", "d0", "nodad"]));
            let wait = |w: &mut AddrWatch| {
                // The notice is queued before `ip` returns; a few polls cover scheduling.
                (0..200).any(|_| {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    w.drain()
                })
            };
            let added = wait(&mut w);
            assert!(ipn(&["-6", "addr", "del", "2001:db8:7::1/64", "dev", "d0"]));
            let deleted = wait(&mut w);
            (quiet, added, deleted)
        })
        .join();
        ip(&["netns", "del", &ns]);
        assert_eq!(got.ok(), Some((true, true, true)), "(quiet before, heard add, heard delete)");
    }

    fn effective_uid() -> u32 {
        // /proc/self/status "Uid: real effective saved fs".
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(2).and_then(|u| u.parse().ok()))
            })
            .unwrap_or(u32::MAX)
    }
}
