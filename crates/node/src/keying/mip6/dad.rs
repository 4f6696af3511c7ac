//! Duplicate Address Detection for a home address before its first binding (RFC 6275 §10.3.1),
//! run by the kernel's own DAD (RFC 4862 §5.4): the home address is added to the home link as a
//! /128 without `nodad`, so the kernel sends its Neighbor Solicitations from the unspecified
//! address and marks the address `dadfailed` if another node answers or probes for it; once it
//! leaves the `tentative` state unchallenged, it is unique. The address is removed again as soon
//! as the result is known (the home agent then defends it by proxy, `kernel::intercept`).
//!
//! Why the kernel's DAD and not a probe of our own: it is the implementation of RFC 4862 the
//! host already runs (its DupAddrDetectTransmits and RetransTimer, its handling of a
//! simultaneous probe by another node, its skipping DAD on links that have no neighbour
//! discovery); a hand-made Neighbor Solicitation would have to redo all of that. The flags are
//! read from `if_inet6` in `/proc`, as [`super::care_of`] reads the mobile node's addresses.

use std::io;
use std::net::Ipv6Addr;
use std::process::{Command, Stdio};

use ipsec::Time;

/// linux/if_addr.h: IFA_F_DADFAILED and IFA_F_TENTATIVE.
const DADFAILED: u32 = 0x08;
const TENTATIVE: u32 = 0x40;
/// Longest wait for the kernel's verdict; past it the address counts as unique (the kernel
/// gave no sign of a duplicate). RFC 4862's defaults take one second.
const DEADLINE_US: u64 = 5_000_000;

/// The flags of `addr` on `link` in `/proc/net/if_inet6`'s text, if it is there. Each line
/// reads `ADDR(32 hex) IFINDEX PREFIXLEN SCOPE FLAGS NAME`.
pub fn flags_of(if_inet6: &str, link: &str, addr: Ipv6Addr) -> Option<u32> {
    let want = format!("{:032x}", u128::from(addr));
    if_inet6.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [a, _, _, _, flags, name] = f.as_slice() else { return None };
        (*a == want && *name == link).then(|| u32::from_str_radix(flags, 16).ok()).flatten()
    })
}

/// What the flags say: `Some(true)` unique, `Some(false)` duplicate, `None` still tentative.
pub fn verdict(flags: Option<u32>) -> Option<bool> {
    match flags {
        Some(f) if f & DADFAILED != 0 => Some(false),
        Some(f) if f & TENTATIVE != 0 => None,
        // Not tentative (done), or gone (removed by someone else: no duplicate was seen).
        _ => Some(true),
    }
}

/// `if_inet6` of the calling thread's network namespace (`/proc/net` is the process's, which
/// differs for a thread that entered another namespace).
fn read_if_inet6() -> String {
    std::fs::read_to_string("/proc/thread-self/net/if_inet6")
        .or_else(|_| std::fs::read_to_string("/proc/net/if_inet6"))
        .unwrap_or_default()
}

/// The probes running on the home link.
#[derive(Debug)]
pub struct Probes {
    link: String,
    running: Vec<(Ipv6Addr, Time)>,
}

fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).stdin(Stdio::null()).output()?;
    if out.status.success() {
        Ok(())
    } else {
        let why = String::from_utf8_lossy(&out.stderr);
        Err(io::Error::other(format!("ip {}: {}", args.join(" "), why.trim())))
    }
}

impl Probes {
    /// Probes on `link`, the home link.
    pub fn new(link: &str) -> Probes {
        Probes { link: link.to_string(), running: Vec::new() }
    }

    /// True while a probe runs (the tick then looks at the flags).
    pub fn any(&self) -> bool {
        !self.running.is_empty()
    }

    /// Starts DAD for `home`. An error means no DAD could run (the address could not be added);
    /// the caller decides what that means for the registration.
    pub fn start(&mut self, home: Ipv6Addr, now: Time) -> io::Result<()> {
        if self.running.iter().any(|(h, _)| *h == home) {
            return Ok(());
        }
        let a = format!("{home}/128");
        ip(&["-6", "addr", "add", &a, "dev", &self.link, "noprefixroute"])?;
        self.running.push((home, Time(now.0.saturating_add(DEADLINE_US))));
        Ok(())
    }

    /// The probes that finished by `now`, each with its verdict (true: unique); their
    /// addresses are removed from the link.
    pub fn poll(&mut self, now: Time) -> Vec<(Ipv6Addr, bool)> {
        if self.running.is_empty() {
            return Vec::new();
        }
        let text = read_if_inet6();
        let mut done = Vec::new();
        let link = self.link.clone();
        self.running.retain(|&(home, deadline)| {
            let v = verdict(flags_of(&text, &link, home));
            let v = match v {
                None if now >= deadline => Some(true),
                v => v,
            };
            match v {
                Some(unique) => {
                    done.push((home, unique));
                    false
                }
                None => true,
            }
        });
        for (home, _) in &done {
            self.remove(*home);
        }
        done
    }

    fn remove(&self, home: Ipv6Addr) {
        // Gone already is fine: the point is that it is not left behind.
        let _ = ip(&["-6", "addr", "del", &format!("{home}/128"), "dev", &self.link]);
    }
}

impl Drop for Probes {
    fn drop(&mut self) {
        for (home, _) in &self.running {
            self.remove(*home);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
20010db8000100000000000000000100 02 80 00 c0     home
20010db8000100000000000000000200 02 80 00 c8     home
20010db8000100000000000000000300 02 80 00 80     home
20010db8000100000000000000000100 03 80 00 80    other
";

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap_or(Ipv6Addr::UNSPECIFIED)
    }

    #[test]
    fn reads_the_verdict_from_the_flags() {
        let f = |x| flags_of(TEXT, "home", a(x));
        assert_eq!(f("2001:db8:1::100"), Some(0xc0));
        assert_eq!(verdict(f("2001:db8:1::100")), None, "tentative: still running");
        assert_eq!(verdict(f("2001:db8:1::200")), Some(false), "dadfailed");
        assert_eq!(verdict(f("2001:db8:1::300")), Some(true), "permanent, not tentative");
        assert_eq!(verdict(f("2001:db8:1::400")), Some(true), "gone");
        assert_eq!(flags_of(TEXT, "other", a("2001:db8:1::100")), Some(0x80));
    }

    /// The kernel's DAD on a veth pair into a second namespace: an address the peer holds is
    /// found duplicate, a free one unique, and neither is left on the link afterwards.
    #[test]
    fn kernel_dad_finds_the_duplicate() {
        if crate::sys::euid() != 0 {
            println!("SKIPPED: needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN)");
            return;
        }
        let ns = format!("hipsec-dad-{}", std::process::id());
        let run = |args: &[&str]| {
            std::process::Command::new("ip").args(args).status().is_ok_and(|s| s.success())
        };
        let peer = format!("{ns}-peer");
        assert!(run(&["netns", "add", &ns]) && run(&["netns", "add", &peer]));
        let (ns2, peer2) = (ns.clone(), peer.clone());
        let got = std::thread::spawn(move || {
            crate::netns::enter(&ns2).expect("enter netns");
            let ok = |args: &[&str]| {
                let mut v = vec!["-n", ns2.as_str()];
                v.extend_from_slice(args);
                std::process::Command::new("ip").args(&v).status().is_ok_and(|s| s.success())
            };
            let in_peer = |args: &[&str]| {
                let mut v = vec!["-n", peer2.as_str()];
                v.extend_from_slice(args);
                std::process::Command::new("ip").args(&v).status().is_ok_and(|s| s.success())
            };
            let veth = ["link", "add", "h0", "type", "veth", "peer", "name", "h1", "netns"];
            let mut veth = veth.to_vec();
            veth.push(&peer2);
            assert!(ok(&veth));
            assert!(ok(&["link", "set", "h0", "up"]) && in_peer(&["link", "set", "h1", "up"]));
            // The peer owns ::100 (nodad: it holds it at once and defends it).
            assert!(in_peer(&["-6", "addr", "add", "2001:db8:1::100/64", "dev", "h1", "nodad"]));
            // Link-local addresses finish their own DAD first, or the probes wait behind them.
            std::thread::sleep(std::time::Duration::from_millis(2500));
            let mut p = Probes::new("h0");
            let t0 = std::time::Instant::now();
            let now = || Time(t0.elapsed().as_micros() as u64);
            p.start(a("2001:db8:1::100"), now()).expect("add ::100");
            p.start(a("2001:db8:1::101"), now()).expect("add ::101");
            let mut out = Vec::new();
            while p.any() && t0.elapsed() < std::time::Duration::from_secs(8) {
                out.extend(p.poll(now()));
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            out.sort();
            let left = read_if_inet6();
            let left = [a("2001:db8:1::100"), a("2001:db8:1::101")]
                .iter()
                .any(|x| flags_of(&left, "h0", *x).is_some());
            (out, left)
        })
        .join();
        assert!(run(&["netns", "del", &ns]) && run(&["netns", "del", &peer]));
        let (out, left) = got.expect("probe thread");
        assert_eq!(out, vec![(a("2001:db8:1::100"), false), (a("2001:db8:1::101"), true)]);
        assert!(!left, "probe addresses removed");
    }
}
