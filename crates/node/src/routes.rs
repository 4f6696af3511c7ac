//! Routes into the TUN device for the remote selectors of the manual `[[policy]]` entries
//! (`[interface] install_routes = true`), as strongSwan's `install_routes` does for its CHILD
//! SAs: without them the kernel never sends the protected traffic into the device, and every
//! user has to add them by hand. Installed with `ip route replace` once the device is up,
//! removed when the node stops (the kernel would also drop them with the device).
//!
//! Only protect policies get a route; bypass and discard entries keep their own routing. IKEv2
//! connections get routes for the remote selectors of their children as configured, from the
//! start rather than when a CHILD SA comes up (as strongSwan does): traffic for them then goes
//! into the device whether or not a CHILD SA is up, where a trap policy starts one or the
//! packet is dropped, and never leaves in clear by another route while the SA is down. A
//! selector that holds the peer's own address (`0.0.0.0/0` of a full tunnel) gets no route:
//! it would take IKE and ESP to the peer into the device too. HIP needs none: the HIT on the
//! device (2001:20::/28) routes every HIT there.
//!
//! Road warriors' address pools (`[pools.NAME]`) are routed into the device always, one route
//! per prefix of each pool's range, from the start: each lease then needs no route of its own.
//! A per-lease `ip route` bounded a concentrator at about 500 setups/s (`hipsec bench ike
//! --clients 1000`: the control thread waited for each `ip` to exit), and an address not leased
//! matches no CHILD SA's selectors, so its packets are dropped in the device, as before.

use crate::config::{NodeConfig, PolicyAction, RouteConf};
use ipsec::spd::Prefix;
use std::process::{Command, Stdio};

/// The routing table the routes go to when `route_table` is not given: `main`, where a
/// user's own `ip route add PREFIX dev hipsec0` would put them.
pub const DEFAULT_TABLE: u32 = 254;
/// The metric when `route_metric` is not given: the kernel's default for a new route.
pub const DEFAULT_METRIC: u32 = 0;

/// The destination prefixes of the protect policies, each once, in config order. A prefix
/// of the TUN device's own addresses is left out: the kernel already routes it to the device.
pub fn remote_prefixes(c: &NodeConfig) -> Vec<Prefix> {
    let mut out: Vec<Prefix> = Vec::new();
    for p in &c.policies {
        if !matches!(p.action, PolicyAction::Protect(_)) {
            continue;
        }
        let d = p.selector.dst;
        let bytes = octets(d.addr);
        let connected = c.interface.addresses.iter().any(|a| a.len <= d.len && a.contains(&bytes));
        if !connected && !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

fn octets(a: std::net::IpAddr) -> Vec<u8> {
    match a {
        std::net::IpAddr::V4(v) => v.octets().to_vec(),
        std::net::IpAddr::V6(v) => v.octets().to_vec(),
    }
}

/// The remote selectors of every IKE connection's children (not Mobile IPv6 signalling), as
/// prefixes, each once, in config order; those that hold the connection's peer are left out.
pub fn ike_prefixes(c: &NodeConfig) -> Vec<Prefix> {
    let mut out: Vec<Prefix> = Vec::new();
    for conn in &c.connections {
        for child in conn.children.iter().filter(|ch| !ch.mip6) {
            for ts in &child.remote_ts {
                for p in crate::keying::ike::install::prefixes(ts.start_addr, ts.end_addr) {
                    let holds_peer = conn
                        .remote_addr
                        .is_some_and(|a| p.addr.is_ipv4() == a.is_ipv4() && p.contains(&octets(a)));
                    if !holds_peer && !out.contains(&p) {
                        out.push(p);
                    }
                }
            }
        }
    }
    out
}

/// The prefixes that cover each `[pools.*]` range exactly, each once, in config order.
pub fn pool_prefixes(c: &NodeConfig) -> Vec<Prefix> {
    let mut out: Vec<Prefix> = Vec::new();
    for pool in &c.pools {
        for p in crate::keying::ike::install::prefixes(pool.first, pool.last) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// The routes a node installed; removing them is the job of [`Drop`].
#[derive(Debug)]
pub struct Installed {
    dev: String,
    conf: RouteConf,
    prefixes: Vec<Prefix>,
}

impl Installed {
    /// The prefixes routed into the device.
    pub fn prefixes(&self) -> &[Prefix] {
        &self.prefixes
    }
}

/// `ip route replace PREFIX dev DEV table T metric M` for every remote prefix of `c` (with
/// `install_routes`) and every pool's prefix (always; in the main table at metric 0 without
/// `install_routes`); None when there is none to make. An `ip` that fails stops the node,
/// naming the route.
pub fn install(c: &NodeConfig) -> Result<Option<Installed>, String> {
    let default = RouteConf { table: DEFAULT_TABLE, metric: DEFAULT_METRIC };
    let (conf, mut list) = match c.interface.routes {
        Some(conf) => (conf, remote_prefixes(c)),
        None => (default, Vec::new()),
    };
    let ike = if c.interface.routes.is_some() { ike_prefixes(c) } else { Vec::new() };
    for p in ike.into_iter().chain(pool_prefixes(c)) {
        if !list.contains(&p) {
            list.push(p);
        }
    }
    if list.is_empty() && c.interface.routes.is_none() {
        return Ok(None);
    }
    let dev = c.interface.name.clone();
    let mut done = Installed { dev, conf, prefixes: Vec::new() };
    for p in list {
        // On an error `done` drops here and takes the routes already made with it.
        ip(&route_args("replace", &p, &done.dev, conf))?;
        done.prefixes.push(p);
    }
    Ok(Some(done))
}

impl Drop for Installed {
    fn drop(&mut self) {
        for p in &self.prefixes {
            // The device may be gone already, and its routes with it: nothing to report.
            let _ = ip(&route_args("del", p, &self.dev, self.conf));
        }
    }
}

/// `ip [-6] route VERB PREFIX dev DEV table T metric M`.
fn route_args(verb: &str, p: &Prefix, dev: &str, conf: RouteConf) -> Vec<String> {
    let mut a = Vec::new();
    if p.addr.is_ipv6() {
        a.push("-6".to_string());
    }
    for s in ["route", verb, &p.to_string(), "dev", dev] {
        a.push(s.to_string());
    }
    for (k, v) in [("table", conf.table), ("metric", conf.metric)] {
        a.push(k.to_string());
        a.push(v.to_string());
    }
    a
}

fn ip(args: &[String]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!("ip {}: {}", args.join(" "), err.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_route_command_names_table_and_metric_and_the_family() {
        let conf = RouteConf { table: 100, metric: 50 };
        let v4: Prefix = "10.0.2.0/24".parse().unwrap();
        assert_eq!(
            route_args("replace", &v4, "hipsec0", conf).join(" "),
            "route replace 10.0.2.0/24 dev hipsec0 table 100 metric 50"
        );
        let v6: Prefix = "fd00:2::/64".parse().unwrap();
        assert_eq!(
            route_args("del", &v6, "hipsec0", conf).join(" "),
            "-6 route del fd00:2::/64 dev hipsec0 table 100 metric 50"
        );
    }

    #[test]
    fn only_remote_protect_prefixes_get_a_route() {
        let text = r#"
[interface]
name = "hipsec0"
addresses = ["10.0.1.1/24"]
install_routes = true
[network]
local = "192.0.2.1:4500"
peer = "192.0.2.2:4500"
[[sa]]
name = "o"
direction = "out"
src = "192.0.2.1"
dst = "192.0.2.2"
proto = "esp"
spi = "0x1001"
mode = "tunnel"
aead = "aes128gcm"
key = "0x6ae2b3f2c6d1a8e4c8e0f93b4f2c7d1e5a9b0c3d"
[[policy]]
src = "10.0.1.0/24"
dst = "10.0.9.0/24"
action = "discard"
[[policy]]
src = "10.0.1.0/24"
dst = "10.0.2.0/24"
action = "protect"
sas = ["o"]
[[policy]]
src = "10.0.1.0/24"
dst = "10.0.1.128/25"
action = "protect"
sas = ["o"]
[[policy]]
src = "10.0.1.0/24"
dst = "10.0.2.0/24"
proto = "tcp"
action = "protect"
sas = ["o"]
"#;
        let c = crate::config::parse("t.toml", text).unwrap();
        let got: Vec<String> = remote_prefixes(&c).iter().map(|p| p.to_string()).collect();
        assert_eq!(got, ["10.0.2.0/24"]);
        assert_eq!(c.interface.routes, Some(RouteConf { table: DEFAULT_TABLE, metric: 0 }));
    }

    /// A pool's routes cover exactly the addresses it hands out: a /24's network and
    /// broadcast addresses are not leased (swanctl's `addrs`), so they are not routed either.
    #[test]
    fn pools_are_routed_exactly() {
        let text = r#"
[interface]
name = "hipsec0"
addresses = ["10.1.0.1/16"]
[network]
local = "192.0.2.1:4500"
[[connection]]
name = "rw"
remote_addrs = "%any"
pools = ["rw", "six"]
[connection.local]
id = "gw.example"
[connection.remote]
id = "alice@example.com"
[connection.children.net]
local_ts = ["10.1.0.0/16"]
remote_ts = ["10.3.0.0/24"]
[pools.rw]
addrs = "10.3.0.0/24"
[pools.six]
addrs = "fd00:3::10-fd00:3::13"
[secrets.alice]
id = ["alice@example.com"]
secret = "correct horse battery staple"
"#;
        let c = crate::config::parse("t.toml", text).unwrap();
        let got: Vec<String> = pool_prefixes(&c).iter().map(|p| p.to_string()).collect();
        let v4: Vec<&str> = got.iter().map(String::as_str).filter(|p| p.contains('.')).collect();
        assert_eq!(v4.first(), Some(&"10.3.0.1/32"));
        assert!(v4.contains(&"10.3.0.128/26") && v4.last() == Some(&"10.3.0.254/32"), "{v4:?}");
        assert!(!v4.iter().any(|p| *p == "10.3.0.0/24" || p.starts_with("10.3.0.0/")), "{v4:?}");
        assert!(got.contains(&"fd00:3::10/126".to_string()), "{got:?}");
        // Routed without install_routes.
        assert_eq!(c.interface.routes, None);
    }

    /// With `install_routes`, an IKE connection's remote selectors are routed from the start;
    /// a full tunnel's `0.0.0.0/0` holds the peer, so it is not (IKE itself would go in).
    #[test]
    fn ike_remote_selectors_are_routed_but_not_one_holding_the_peer() {
        let text = r#"
[interface]
name = "hipsec0"
addresses = ["10.0.1.1/24"]
install_routes = true
[network]
local = "192.0.2.1:4500"
[[connection]]
name = "site"
remote_addrs = "192.0.2.2"
[connection.local]
id = "a.example"
[connection.remote]
id = "b.example"
[connection.children.net]
local_ts = ["10.0.1.0/24"]
remote_ts = ["10.0.2.0/24", "10.0.5.0/24"]
[connection.children.all]
local_ts = ["10.0.1.0/24"]
remote_ts = ["0.0.0.0/0"]
[secrets.s]
id = ["a.example", "b.example"]
secret = "correct horse battery staple"
"#;
        let c = crate::config::parse("t.toml", text).unwrap();
        let got: Vec<String> = ike_prefixes(&c).iter().map(|p| p.to_string()).collect();
        assert_eq!(got, ["10.0.2.0/24", "10.0.5.0/24"]);
        let off = text.replace("install_routes = true\n", "");
        let c = crate::config::parse("t.toml", &off).unwrap();
        assert_eq!(c.interface.routes, None, "no routes asked for");
    }
}
