//! The home agent's forwarding (RFC 6275 §10.4.1, RFC 4877 §4.3): packets for a registered home
//! address reach the node's TUN device ([`super::kernel`]: proxy neighbour discovery on the home
//! link and a host route), a policy `dst = home address → protect` seals them with the mobile
//! node's `tunnel-out` SA (ESP tunnel mode), and the raw carrier sends them to the care-of
//! address, the SA's endpoint. The reverse tunnel opens with `tunnel-in` and the kernel
//! forwards the inner packet. All through the node's control plane (DESIGN §6): the SAs are
//! installed once at start, and a binding only switches the policy and moves the endpoint.
//!
//! - No binding: the policy discards (fail closed, counted as `policy_discard`), and the kernel
//!   does not intercept the home address at all.
//! - A new care-of address moves the tunnel SA's endpoint at once ([`ControlPlane::set_endpoint`]):
//!   same keys, same sequence numbers, so the mobile node's replay window goes on.

use super::kernel;
use crate::config::home_agent::HomeAgentConf;
use crate::datapath::mailbox::{InKey, OutKey, PolicyAction, PolicySpec};
use crate::keying::plane::{ControlPlane, SaSpec, in_key_of, out_key_of};
use ipsec::spd::Prefix;
use ipsec::{PolicyId, SaParams, Selector};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// Ids of the home agent's policies (IKE's start at 1 << 40, HIP's at 1 << 41).
const POLICY_BASE: PolicyId = 1 << 42;
/// Their priority: after HIP's (1 100), before its traps.
pub const POLICY_PRIORITY: u32 = 1_200;

/// One mobile node's tunnel.
#[derive(Debug)]
struct Tunnel {
    tunnel_in: SaParams,
    tunnel_out: SaParams,
    in_key: InKey,
    out_key: OutKey,
    policy: PolicyId,
    /// The care-of address the tunnel goes to, while bound.
    care_of: Option<Ipv6Addr>,
}

/// What forwarding did, for `status`.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ForwardCounters {
    /// Tunnels opened (a binding created).
    pub opened: u64,
    /// Tunnels moved to a new care-of address.
    pub moved: u64,
    /// Tunnels closed (de-registration or expiry).
    pub closed: u64,
    /// Control plane or kernel changes that failed (logged).
    pub failed: u64,
    /// ESP packets of a tunnel-in SA seen by the link socket and left to the data path.
    pub tunnelled_seen: u64,
}

/// The tunnels of the mobile nodes that have tunnel SAs.
#[derive(Debug)]
pub struct Forwarding {
    link: String,
    tun: String,
    tunnels: BTreeMap<Ipv6Addr, Tunnel>,
    started: bool,
    /// Counters.
    pub counters: ForwardCounters,
}

fn policy(home: Ipv6Addr, t: &Tunnel, bound: bool) -> (PolicyId, PolicySpec) {
    let selector = Selector {
        src: Prefix::any(true),
        dst: Prefix { addr: IpAddr::V6(home), len: 128 },
        proto: None,
        src_ports: None,
        dst_ports: None,
    };
    let action = if bound { PolicyAction::Protect(vec![t.out_key]) } else { PolicyAction::Discard };
    (t.policy, PolicySpec { selector, action, in_sas: vec![t.in_key], priority: POLICY_PRIORITY })
}

fn spec(params: &SaParams, endpoint: Option<SocketAddr>, name: String) -> SaSpec {
    SaSpec {
        params: params.clone(),
        lane: 0,
        endpoint,
        beet: false,
        raw_ip: false,
        name: Some(name),
    }
}

impl Forwarding {
    /// The tunnels of `conf`'s mobile nodes; `tun` is the node's TUN device.
    pub fn new(conf: &HomeAgentConf, tun: &str) -> Forwarding {
        let tunnels = conf
            .mobile_nodes
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let (tin, tout) = m.tunnel.as_ref()?;
                Some((
                    m.home_address,
                    Tunnel {
                        tunnel_in: tin.clone(),
                        tunnel_out: tout.clone(),
                        in_key: in_key_of(tin),
                        out_key: out_key_of(tout),
                        policy: POLICY_BASE + i as PolicyId,
                        care_of: None,
                    },
                ))
            })
            .collect();
        Forwarding {
            link: conf.interface.clone(),
            tun: tun.to_string(),
            tunnels,
            started: false,
            counters: ForwardCounters::default(),
        }
    }

    /// Whether `home` has a tunnel (its binding changes concern forwarding).
    pub fn tunnels(&self, home: Ipv6Addr) -> bool {
        self.tunnels.contains_key(&home)
    }

    /// Whether inbound SPI `spi` is a tunnel-in SA's (its packets are the data path's).
    pub fn is_tunnel_spi(&self, spi: u32) -> bool {
        self.tunnels.values().any(|t| t.in_key.0 == spi)
    }

    /// Installs every tunnel's SAs and its discarding policy, once, on the first tick.
    pub fn start(&mut self, plane: &mut ControlPlane) {
        if self.started || self.tunnels.is_empty() {
            self.started = true;
            return;
        }
        self.started = true;
        if let Err(e) = kernel::enable_proxy_ndp(&self.link) {
            self.fail("proxy-ndp", &self.link.clone(), e.to_string());
        }
        let mut ins = Vec::new();
        let mut outs = Vec::new();
        let mut pols = Vec::new();
        for (home, t) in &self.tunnels {
            ins.push(spec(&t.tunnel_in, None, format!("mip6-in-{home}")));
            // The endpoint is set when a binding names the care-of address.
            outs.push(spec(&t.tunnel_out, None, format!("mip6-out-{home}")));
            pols.push(policy(*home, t, false));
        }
        if let Err(e) = plane.install_then(ins, outs, false, pols) {
            self.fail("install", "tunnels", e.to_string());
        }
    }

    fn fail(&mut self, what: &str, whom: &str, why: String) {
        self.counters.failed += 1;
        tracing::warn!(what = %what, home_address = %whom, why = why.to_string(), "mip6-forward-failed");
    }

    /// A binding for `home` now names `care_of` (RFC 6275 §10.3.1): the tunnel goes there.
    pub fn bound(&mut self, plane: &mut ControlPlane, home: Ipv6Addr, care_of: Ipv6Addr) {
        let Some(t) = self.tunnels.get(&home) else { return };
        let (was, out_key) = (t.care_of, t.out_key);
        if was == Some(care_of) {
            return;
        }
        let h = home.to_string();
        if let Err(e) = plane.set_endpoint(out_key, SocketAddr::new(IpAddr::V6(care_of), 0)) {
            return self.fail("endpoint", &h, e.to_string());
        }
        if was.is_none() {
            let p = policy(home, t, true);
            if let Err(e) = plane.set_policies(vec![p]) {
                return self.fail("policy", &h, e.to_string());
            }
            if let Err(e) = kernel::intercept(home, &self.link, &self.tun) {
                self.fail("intercept", &h, e.to_string());
            }
            if let Err(e) = kernel::announce(home, &self.link) {
                self.fail("announce", &h, e.to_string());
            }
            self.counters.opened += 1;
        } else {
            self.counters.moved += 1;
        }
        if let Some(t) = self.tunnels.get_mut(&home) {
            t.care_of = Some(care_of);
        }
    }

    /// The binding for `home` is gone: its packets are no longer intercepted, and the policy
    /// discards whatever still comes (fail closed).
    pub fn unbound(&mut self, plane: &mut ControlPlane, home: Ipv6Addr) {
        let Some(t) = self.tunnels.get_mut(&home) else { return };
        if t.care_of.take().is_none() {
            return;
        }
        let p = policy(home, t, false);
        let h = home.to_string();
        if let Err(e) = kernel::release(home, &self.link, &self.tun) {
            self.fail("release", &h, e.to_string());
        }
        if let Err(e) = plane.set_policies(vec![p]) {
            self.fail("policy", &h, e.to_string());
        }
        self.counters.closed += 1;
    }

    /// The `forwarding` part of the home agent's status (SPIs and care-of addresses, no keys).
    pub fn status(&self) -> Value {
        let tunnels: Vec<Value> = self
            .tunnels
            .iter()
            .map(|(home, t)| {
                json!({
                    "home_address": home.to_string(),
                    "care_of_address": t.care_of.map(|c| c.to_string()),
                    "tunnel_in_spi": t.tunnel_in.spi.to_string(),
                    "tunnel_out_spi": t.tunnel_out.spi.to_string(),
                })
            })
            .collect();
        json!({ "tun": self.tun, "tunnels": tunnels, "counters": self.counters })
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        for (home, t) in &self.tunnels {
            if t.care_of.is_some() {
                let _ = kernel::release(*home, &self.link, &self.tun);
            }
        }
    }
}
