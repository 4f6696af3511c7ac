//! Address pools for road warriors (RFC 7296 §2.19, §3.15): the responder's table of virtual
//! IP leases, sans-IO. A lease belongs to a peer identity, so the same identity gets the same
//! address back (as strongSwan's `pools` do); the IKE SA holding it releases it when it ends,
//! and the address stays reserved for that identity until no never-used one is left, when the
//! one released longest ago is given to someone else.

use crate::time::Time;
use std::collections::BTreeMap;
use std::net::IpAddr;
use wire::ikev2::Id;

/// Which association holds a lease (an [`AssocId`](crate::assoc::AssocId)).
pub type Holder = u64;

/// One pool: a name, a range of addresses, and the DNS servers its CFG_REPLY names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Its name, as connections list it.
    pub name: String,
    /// First address handed out.
    pub first: IpAddr,
    /// Last address handed out (same family as `first`, not below it).
    pub last: IpAddr,
    /// DNS servers sent with a lease (INTERNAL_IP4_DNS / INTERNAL_IP6_DNS).
    pub dns: Vec<IpAddr>,
    /// The prefix length an INTERNAL_IP6_ADDRESS carries (§3.15.3: the pool's prefix, 128
    /// for a range); 32 for an IPv4 pool, whose leases are hosts.
    pub prefix_len: u8,
}

/// Why a pool's addresses cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// `addrs` is neither `a.b.c.d/len` nor `first-last`.
    #[error("pool {pool:?} addrs {value:?}: want a prefix (10.3.0.0/24) or a range (a-b)")]
    BadAddrs {
        /// The pool.
        pool: String,
        /// What was given.
        value: String,
    },
    /// The range is empty or mixes families.
    #[error("pool {pool:?} addrs: empty range or mixed families")]
    EmptyRange {
        /// The pool.
        pool: String,
    },
}

impl PoolConfig {
    /// A pool from swanctl's `addrs` syntax: a prefix, whose network address (and, for IPv4
    /// shorter than /31, broadcast address) is never handed out, or a range `first-last`.
    pub fn parse(name: &str, addrs: &str, dns: Vec<IpAddr>) -> Result<PoolConfig, PoolError> {
        let bad = || PoolError::BadAddrs { pool: name.to_owned(), value: addrs.to_owned() };
        let empty = || PoolError::EmptyRange { pool: name.to_owned() };
        let (first, last, prefix_len) = if let Some((a, b)) = addrs.split_once('-') {
            let a: IpAddr = a.trim().parse().map_err(|_| bad())?;
            let b: IpAddr = b.trim().parse().map_err(|_| bad())?;
            (a, b, if a.is_ipv4() { 32 } else { 128 })
        } else {
            let (a, len) = addrs.split_once('/').ok_or_else(bad)?;
            let a: IpAddr = a.trim().parse().map_err(|_| bad())?;
            let len: u32 = len.trim().parse().map_err(|_| bad())?;
            let bits = if a.is_ipv4() { 32 } else { 128 };
            if len > bits {
                return Err(bad());
            }
            let host_bits = bits - len;
            let mask = if host_bits >= 128 { u128::MAX } else { (1u128 << host_bits) - 1 };
            let net = to_u128(a) & !mask;
            let top = net | mask;
            let (lo, hi) = match (a.is_ipv4(), host_bits) {
                (_, 0) => (net, top),
                (true, 1) => (net, top),
                (true, _) => (net + 1, top - 1),
                (false, _) => (net + 1, top),
            };
            let prefix_len = if a.is_ipv4() { 32 } else { u8::try_from(len).unwrap_or(128) };
            (from_u128(lo, a.is_ipv4()), from_u128(hi, a.is_ipv4()), prefix_len)
        };
        if first.is_ipv4() != last.is_ipv4() || to_u128(first) > to_u128(last) {
            return Err(empty());
        }
        Ok(PoolConfig { name: name.to_owned(), first, last, dns, prefix_len })
    }

    /// Addresses in the pool.
    pub fn size(&self) -> u128 {
        (to_u128(self.last) - to_u128(self.first)).saturating_add(1)
    }
}

fn to_u128(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(a) => u32::from(a).into(),
        IpAddr::V6(a) => a.into(),
    }
}

fn from_u128(v: u128, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::from(u32::try_from(v).unwrap_or(u32::MAX).to_be_bytes())
    } else {
        IpAddr::from(v.to_be_bytes())
    }
}

/// One lease as status shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseView {
    /// The pool.
    pub pool: String,
    /// The address.
    pub addr: IpAddr,
    /// The identity it belongs to.
    pub identity: Id,
    /// The association using it now (`None`: offline, kept for the identity).
    pub holder: Option<Holder>,
}

#[derive(Debug)]
struct Lease {
    identity: Id,
    holder: Option<Holder>,
    released: Time,
}

#[derive(Debug)]
struct Pool {
    cfg: PoolConfig,
    /// By offset from `cfg.first`.
    leases: BTreeMap<u128, Lease>,
}

impl Pool {
    fn acquire(&mut self, identity: &Id, holder: Holder) -> Option<IpAddr> {
        let v4 = self.cfg.first.is_ipv4();
        let base = to_u128(self.cfg.first);
        // The identity's own address, online or not.
        let own = self.leases.iter().find(|(_, l)| &l.identity == identity).map(|(o, _)| *o);
        // Else the lowest never-used offset (the leases are sorted: the first gap).
        let fresh = || {
            let mut next = 0u128;
            for o in self.leases.keys() {
                if *o != next {
                    break;
                }
                next += 1;
            }
            (next < self.cfg.size()).then_some(next)
        };
        // Else the offline lease released longest ago.
        let stale = || {
            self.leases
                .iter()
                .filter(|(_, l)| l.holder.is_none())
                .min_by_key(|(_, l)| l.released)
                .map(|(o, _)| *o)
        };
        let off = own.or_else(fresh).or_else(stale)?;
        self.leases.insert(
            off,
            Lease { identity: identity.clone(), holder: Some(holder), released: Time::ZERO },
        );
        Some(from_u128(base + off, v4))
    }
}

/// What a CFG_REQUEST is answered with: the addresses leased, and the pools' DNS servers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    /// One address per family asked for, with its pool's prefix length.
    pub addrs: Vec<(IpAddr, u8)>,
    /// DNS servers of the pools the addresses came from.
    pub dns: Vec<IpAddr>,
}

/// Every pool of an endpoint, and their leases.
#[derive(Debug, Default)]
pub struct Pools {
    pools: Vec<Pool>,
}

impl Pools {
    /// The pools, by name.
    pub fn new(cfgs: Vec<PoolConfig>) -> Pools {
        Pools { pools: cfgs.into_iter().map(|cfg| Pool { cfg, leases: BTreeMap::new() }).collect() }
    }

    /// Whether a pool of this name exists.
    pub fn has(&self, name: &str) -> bool {
        self.pools.iter().any(|p| p.cfg.name == name)
    }

    /// Leases one address of each family in `families` (`true`: IPv4) from the first of
    /// `names` that has one, for `identity`, held by `holder`. A family none of `names` serves
    /// is ignored (RFC 7296 §3.15.4: "the responder simply ignores the type of address it does
    /// not support and processes the rest of the request as usual"). `None` when a family
    /// served has no address left, or none asked for is served (INTERNAL_ADDRESS_FAILURE);
    /// nothing is kept leased then.
    pub fn acquire(
        &mut self,
        names: &[String],
        families: &[bool],
        identity: &Id,
        holder: Holder,
        now: Time,
    ) -> Option<Grant> {
        let serves = |v4: bool| {
            self.pools.iter().any(|p| names.contains(&p.cfg.name) && p.cfg.first.is_ipv4() == v4)
        };
        let served: Vec<bool> = families.iter().copied().filter(|&v4| serves(v4)).collect();
        if served.is_empty() {
            return None;
        }
        let mut grant = Grant::default();
        for &v4 in &served {
            let mut got = None;
            for name in names {
                let Some(p) = self.pools.iter_mut().find(|p| &p.cfg.name == name) else { continue };
                if p.cfg.first.is_ipv4() != v4 {
                    continue;
                }
                if let Some(a) = p.acquire(identity, holder) {
                    got = Some((a, p.cfg.prefix_len, p.cfg.dns.clone()));
                    break;
                }
            }
            let Some((a, len, dns)) = got else {
                self.release(holder, now);
                return None;
            };
            grant.addrs.push((a, len));
            grant.dns.extend(dns.into_iter().filter(|d| d.is_ipv4() == v4));
        }
        Some(grant)
    }

    /// The association `holder` ended: its leases go offline, kept for their identities.
    pub fn release(&mut self, holder: Holder, now: Time) -> Vec<IpAddr> {
        let mut out = Vec::new();
        for p in &mut self.pools {
            for (o, l) in p.leases.iter_mut() {
                if l.holder == Some(holder) {
                    l.holder = None;
                    l.released = now;
                    out.push(from_u128(to_u128(p.cfg.first) + o, p.cfg.first.is_ipv4()));
                }
            }
        }
        out
    }

    /// Every lease, pool by pool, in address order.
    pub fn leases(&self) -> Vec<LeaseView> {
        let mut out = Vec::new();
        for p in &self.pools {
            for (o, l) in &p.leases {
                out.push(LeaseView {
                    pool: p.cfg.name.clone(),
                    addr: from_u128(to_u128(p.cfg.first) + o, p.cfg.first.is_ipv4()),
                    identity: l.identity.clone(),
                    holder: l.holder,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    }

    #[test]
    fn prefixes_and_ranges() {
        let p = PoolConfig::parse("a", "10.3.0.0/24", vec![]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((p.first, p.last, p.size()), (ip("10.3.0.1"), ip("10.3.0.254"), 254));
        let p =
            PoolConfig::parse("b", "10.3.0.7-10.3.0.9", vec![]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (p.first, p.last, p.size(), p.prefix_len),
            (ip("10.3.0.7"), ip("10.3.0.9"), 3, 32)
        );
        let p = PoolConfig::parse("c", "fd00::/120", vec![]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((p.first, p.last, p.prefix_len), (ip("fd00::1"), ip("fd00::ff"), 120));
        let p = PoolConfig::parse("d", "10.0.0.5/32", vec![]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.size(), 1);
        for bad in ["10.3.0.0", "10.3.0.0/33", "x/24", "10.0.0.9-10.0.0.1", "10.0.0.1-fd00::1"] {
            assert!(PoolConfig::parse("e", bad, vec![]).is_err(), "{bad}");
        }
    }

    /// RFC 7296 §3.15.4: "The initiator may request a particular type of address (IPv4 or
    /// IPv6) that the responder does not support, even though the responder supports
    /// Configuration payloads. In this case, the responder simply ignores the type of address
    /// it does not support and processes the rest of the request as usual."
    #[test]
    fn a_family_without_a_pool_is_ignored() {
        let one = "10.3.0.1-10.3.0.1";
        let v4 = PoolConfig::parse("v4", one, vec![]).unwrap_or_else(|e| panic!("{e}"));
        let mut pools = Pools::new(vec![v4]);
        let names = vec!["v4".to_owned()];
        let id = Id::fqdn("alice");
        // IPv4 and IPv6 asked for, IPv4 served: the IPv4 address alone.
        let g = pools.acquire(&names, &[true, false], &id, 1, Time::ZERO);
        assert_eq!(g.map(|g| g.addrs), Some(vec![(ip("10.3.0.1"), 32)]));
        // IPv6 alone: nothing to grant, nothing kept.
        assert!(pools.acquire(&names, &[false], &Id::fqdn("bob"), 2, Time::ZERO).is_none());
        assert_eq!(pools.leases().iter().filter(|l| l.holder.is_some()).count(), 1);
        // A served family with no address left still fails the whole request.
        let g = pools.acquire(&names, &[true, false], &Id::fqdn("carol"), 3, Time::ZERO);
        assert!(g.is_none() && pools.leases().iter().filter(|l| l.holder.is_some()).count() == 1);
    }
}
