//! Road warriors on a virtual clock (RFC 7296 §2.19, §3.15): `ike::assoc` endpoints asking for
//! a virtual IP (`vips = 0.0.0.0`) from a responder open to any peer with an address pool.
//! Datagrams go straight from one endpoint to the other; the events are what the node acts on.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod sim;

use ike::assoc::{Endpoint, Event, Target};
use ike::pool::PoolConfig;
use ike::{Error, PeerMisbehaved, Time};
use sim::{CONN, Timers, connection, endpoint_with};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use wire::ikev2::{Id, NotifyType, TrafficSelector};

const SERVER: usize = 1;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn client_addr(n: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(198, 51, 100, n)), 500)
}

/// The gateway: any peer with the PSK, pool `rw` of two addresses (10.3.0.0/30 less its
/// network and broadcast addresses), DNS 10.3.0.53.
fn server() -> Endpoint {
    let mut c = connection(SERVER, false, &Timers::short());
    c.any_peer = true;
    c.ike.remote_id = None;
    c.pools = vec!["rw".into()];
    let mut ep = endpoint_with(Time::ZERO, SERVER, c, 77);
    let pool = PoolConfig::parse("rw", "10.3.0.0/30", vec![ip("10.3.0.53")]).unwrap();
    ep.set_pools(vec![pool]);
    ep
}

/// A road warrior called `name` at `198.51.100.n`; `vips` as in swanctl.conf.
fn client(name: &str, n: u8, vips: &[&str]) -> Endpoint {
    let mut c = connection(0, false, &Timers::short());
    c.ike.local_id = Id::fqdn(name);
    c.local = client_addr(n);
    c.vips = vips.iter().map(|v| ip(v)).collect();
    endpoint_with(Time::ZERO, 0, c, u64::from(n) * 1000)
}

/// Moves datagrams both ways until none is left; returns each side's events.
fn shuttle(now: Time, c: &mut Endpoint, s: &mut Endpoint) -> (Vec<Event>, Vec<Event>) {
    let (mut ce, mut se) = (Vec::new(), Vec::new());
    loop {
        let mut moved = false;
        while let Some(t) = c.poll_transmit() {
            moved = true;
            let _ = s.handle(now, t.from, &t.payload);
        }
        while let Some(t) = s.poll_transmit() {
            moved = true;
            let _ = c.handle(now, t.from, &t.payload);
        }
        ce.extend(std::iter::from_fn(|| c.poll_event()));
        se.extend(std::iter::from_fn(|| s.poll_event()));
        if !moved {
            return (ce, se);
        }
    }
}

fn connect(now: Time, c: &mut Endpoint, s: &mut Endpoint) -> (Vec<Event>, Vec<Event>) {
    c.initiate(now, CONN).unwrap();
    shuttle(now, c, s)
}

fn granted(events: &[Event], ours: bool) -> Option<Vec<(IpAddr, u8)>> {
    events.iter().find_map(|e| match e {
        Event::VirtualIp { addrs, ours: o, .. } if *o == ours => Some(addrs.clone()),
        _ => None,
    })
}

fn installed_ts(events: &[Event]) -> Option<(Vec<TrafficSelector>, Vec<TrafficSelector>)> {
    events.iter().find_map(|e| match e {
        Event::InstallChild { keys, .. } => Some((keys.local_ts.clone(), keys.remote_ts.clone())),
        _ => None,
    })
}

fn child_failed(events: &[Event]) -> Option<NotifyType> {
    events.iter().find_map(|e| match e {
        Event::ChildFailed {
            error: Error::PeerMisbehaved(PeerMisbehaved::ErrorNotify(t)), ..
        } => Some(*t),
        _ => None,
    })
}

fn established(events: &[Event]) -> bool {
    events.iter().any(|e| matches!(e, Event::Established { .. }))
}

#[test]
fn lease_granted_and_tsi_narrowed_to_it() {
    let mut s = server();
    let mut alice = client("alice", 10, &["0.0.0.0"]);
    let (ce, se) = connect(Time::ZERO, &mut alice, &mut s);
    // §3.15.1: a zero-length INTERNAL_IP4_ADDRESS in a CFG_REQUEST asks for any address; the
    // CFG_REPLY carries the one assigned.
    assert_eq!(granted(&ce, true), Some(vec![(ip("10.3.0.1"), 32)]), "{ce:#?}");
    assert_eq!(granted(&se, false), Some(vec![(ip("10.3.0.1"), 32)]));
    let dns = ce.iter().find_map(|e| match e {
        Event::VirtualIp { dns, .. } => Some(dns.clone()),
        _ => None,
    });
    assert_eq!(dns, Some(vec![ip("10.3.0.53")]));
    // §2.9: the responder narrows the TSi the initiator proposed (0.0.0.0/0) to the address
    // it assigned.
    let host = TrafficSelector::host(ip("10.3.0.1"));
    assert_eq!(installed_ts(&ce).unwrap().0, vec![host]);
    assert_eq!(installed_ts(&se).unwrap().1, vec![host]);
    // The virtual IP is reported before the first CHILD SA is installed.
    let vip_at = ce.iter().position(|e| matches!(e, Event::VirtualIp { .. }));
    let install_at = ce.iter().position(|e| matches!(e, Event::InstallChild { .. }));
    assert!(vip_at < install_at);
    let leases = s.leases();
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].identity, Id::fqdn("alice"));
    assert!(leases[0].holder.is_some());
}

#[test]
fn same_identity_same_address_and_release_on_delete() {
    let mut s = server();
    let mut alice = client("alice", 10, &["0.0.0.0"]);
    let (ce, _) = connect(Time::ZERO, &mut alice, &mut s);
    assert_eq!(granted(&ce, true), Some(vec![(ip("10.3.0.1"), 32)]));
    // Alice deletes her IKE SA: the lease goes offline but stays hers.
    let t1 = Time::from_millis(1_000);
    alice.terminate(t1, CONN, &Target::All).unwrap();
    let (_, se) = shuttle(t1, &mut alice, &mut s);
    assert!(se.iter().any(|e| matches!(e, Event::Down { .. })), "{se:#?}");
    let leases = s.leases();
    assert_eq!((leases.len(), leases[0].holder), (1, None));
    // Carol gets the address nobody has had; Alice, back, gets hers again.
    let mut carol = client("carol", 11, &["0.0.0.0"]);
    let t2 = Time::from_millis(2_000);
    let (ce, _) = connect(t2, &mut carol, &mut s);
    assert_eq!(granted(&ce, true), Some(vec![(ip("10.3.0.2"), 32)]));
    let t3 = Time::from_millis(3_000);
    let (ce, _) = connect(t3, &mut alice, &mut s);
    assert_eq!(granted(&ce, true), Some(vec![(ip("10.3.0.1"), 32)]));
    assert!(s.leases().iter().all(|l| l.holder.is_some()));
}

#[test]
fn pool_exhausted_answers_internal_address_failure() {
    let mut s = server();
    let mut alice = client("alice", 10, &["0.0.0.0"]);
    let mut carol = client("carol", 11, &["0.0.0.0"]);
    let mut dave = client("dave", 12, &["0.0.0.0"]);
    connect(Time::ZERO, &mut alice, &mut s);
    connect(Time::ZERO, &mut carol, &mut s);
    let (ce, se) = connect(Time::ZERO, &mut dave, &mut s);
    // §3.15.4: "If the responder encounters an error while attempting to assign an IP address
    // to the initiator during the processing of a Configuration payload, it responds with an
    // INTERNAL_ADDRESS_FAILURE notification. The IKE SA is still created even if the initial
    // Child SA cannot be created because of this failure."
    assert_eq!(child_failed(&ce), Some(NotifyType::INTERNAL_ADDRESS_FAILURE), "{ce:#?}");
    assert!(established(&ce) && established(&se), "the IKE SA stays up (§3.15.4)");
    assert!(installed_ts(&ce).is_none() && granted(&ce, true).is_none());
    assert_eq!(s.leases().len(), 2, "nothing is leased to dave");
    // Once Carol's IKE SA is gone and no fresh address is left, hers is reused.
    let t1 = Time::from_millis(1_000);
    carol.terminate(t1, CONN, &Target::All).unwrap();
    shuttle(t1, &mut carol, &mut s);
    dave.terminate(t1, CONN, &Target::All).unwrap();
    shuttle(t1, &mut dave, &mut s);
    let t2 = Time::from_millis(2_000);
    let (ce, _) = connect(t2, &mut dave, &mut s);
    assert_eq!(granted(&ce, true), Some(vec![(ip("10.3.0.2"), 32)]));
}

#[test]
fn no_cfg_request_answers_failed_cp_required() {
    let mut s = server();
    let mut bob = client("bob", 13, &[]);
    let (ce, _) = connect(Time::ZERO, &mut bob, &mut s);
    // §2.19: "The FAILED_CP_REQUIRED is not fatal to the IKE SA; it simply causes the Child SA
    // creation to fail."
    assert_eq!(child_failed(&ce), Some(NotifyType::FAILED_CP_REQUIRED), "{ce:#?}");
    assert!(established(&ce));
    assert!(s.leases().is_empty());
}

#[test]
fn ipv4_and_ipv6_addresses_in_one_request() {
    let mut c = connection(SERVER, false, &Timers::short());
    c.any_peer = true;
    c.ike.remote_id = None;
    c.pools = vec!["rw".into(), "rw6".into()];
    let both = vec![TrafficSelector::any(false), TrafficSelector::any(true)];
    c.ike.local_ts = both.clone();
    c.ike.remote_ts = both.clone();
    let mut s = endpoint_with(Time::ZERO, SERVER, c, 78);
    s.set_pools(vec![
        PoolConfig::parse("rw", "10.3.0.0/30", vec![ip("10.3.0.53")]).unwrap(),
        PoolConfig::parse("rw6", "fd00:3::/120", vec![ip("fd00:3::53")]).unwrap(),
    ]);
    let mut c = connection(0, false, &Timers::short());
    c.ike.local_id = Id::fqdn("alice");
    c.local = client_addr(10);
    c.vips = vec![ip("0.0.0.0"), ip("::")];
    c.ike.local_ts = both.clone();
    c.ike.remote_ts = both;
    let mut alice = endpoint_with(Time::ZERO, 0, c, 10_000);
    let (ce, se) = connect(Time::ZERO, &mut alice, &mut s);
    // §3.15.3: INTERNAL_IP6_ADDRESS carries the address and its prefix length.
    let want = vec![(ip("10.3.0.1"), 32), (ip("fd00:3::1"), 120)];
    assert_eq!(granted(&ce, true), Some(want.clone()), "{ce:#?}");
    assert_eq!(granted(&se, false), Some(want));
    let dns = ce.iter().find_map(|e| match e {
        Event::VirtualIp { dns, .. } => Some(dns.clone()),
        _ => None,
    });
    assert_eq!(dns, Some(vec![ip("10.3.0.53"), ip("fd00:3::53")]));
    let hosts = vec![TrafficSelector::host(ip("10.3.0.1")), TrafficSelector::host(ip("fd00:3::1"))];
    assert_eq!(installed_ts(&ce).unwrap().0, hosts);
}

#[test]
fn later_children_of_a_road_warrior_use_its_virtual_ip() {
    let t = Timers::short();
    let more = |c: &mut ike::assoc::ConnectionConfig| {
        let first = c.ike.child_policies().remove(0);
        c.ike.more_children = vec![ike::ChildPolicy {
            local_ts: vec![TrafficSelector::any(false)],
            remote_ts: vec![TrafficSelector::any(false)],
            ..first
        }];
        c.more_children =
            vec![ike::assoc::ChildConfig { name: "second".into(), lifetimes: t.child }];
    };
    let mut c = connection(SERVER, false, &t);
    c.any_peer = true;
    c.ike.remote_id = None;
    c.pools = vec!["rw".into()];
    more(&mut c);
    let mut s = endpoint_with(Time::ZERO, SERVER, c, 79);
    s.set_pools(vec![PoolConfig::parse("rw", "10.3.0.0/30", vec![]).unwrap()]);
    let mut c = connection(0, false, &t);
    c.ike.local_id = Id::fqdn("alice");
    c.local = client_addr(10);
    c.vips = vec![ip("0.0.0.0")];
    more(&mut c);
    let mut alice = endpoint_with(Time::ZERO, 0, c, 10_001);
    let (ce, se) = connect(Time::ZERO, &mut alice, &mut s);
    // The second child (CREATE_CHILD_SA after IKE_AUTH) carries the virtual IP on the road
    // warrior's side too, on both ends, although its policy says any address.
    let host = vec![TrafficSelector::host(ip("10.3.0.1"))];
    let installs = |ev: &[Event], ours: bool| -> Vec<Vec<TrafficSelector>> {
        ev.iter()
            .filter_map(|e| match e {
                Event::InstallChild { keys, .. } => {
                    Some(if ours { keys.local_ts.clone() } else { keys.remote_ts.clone() })
                }
                _ => None,
            })
            .collect()
    };
    assert_eq!(installs(&ce, true), vec![host.clone(), host.clone()], "{ce:#?}");
    assert_eq!(installs(&se, false), vec![host.clone(), host]);
}
