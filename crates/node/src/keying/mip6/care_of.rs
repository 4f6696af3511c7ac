//! The mobile node's care-of address (RFC 6275 §11.5.1: the address of the foreign link it is
//! attached to): the global IPv6 address of its interface, read from `/proc/net/if_inet6`
//! (no netlink, no unsafe). Read once a second on the control thread's tick; a change is the
//! movement detection that triggers a new Binding Update (§11.7.1).

use std::net::Ipv6Addr;

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
}
