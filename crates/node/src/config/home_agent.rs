//! `[home-agent]`: this node as a Mobile IPv6 home agent (RFC 6275 §10) for the mobile nodes
//! listed, each with the pair of ESP transport-mode SAs that protect its Binding Updates and our
//! Binding Acknowledgements (RFC 3776 §4.1, §5; docs/mip6.md).
//!
//! ```toml
//! [home-agent]
//! interface = "eth0"                  # the link Binding Updates arrive on (AF_PACKET)
//! address = "2001:db8:1::1"           # the home agent's address (BU destination, BA source)
//! home-prefix = "2001:db8:1::/64"     # home addresses must be on it (§10.3.1)
//! max-lifetime = 600                  # seconds granted at most (§10.3.1), rounded down to 4 s
//! capacity = 100000                   # binding cache entries at most (BA 130 beyond)
//! duplicate-address-detection = true  # DAD on `interface` before a first binding (§10.3.1)
//!
//! [[home-agent.mobile-node]]
//! home-address = "2001:db8:1::100"
//! [home-agent.mobile-node.sa-in]      # its BUs to us: an [[sa]] table of docs/sa-file.md
//! src = "2001:db8:1::100"             # the home address (RFC 3776 §4.1: the SA's selector)
//! dst = "2001:db8:1::1"               # our address
//! proto = "esp"
//! mode = "transport"
//! spi = "0x1000"
//! enc = "aes128cbc"
//! auth = "sha1"
//! enc-key = "0x..."
//! auth-key = "0x..."
//! [home-agent.mobile-node.sa-out]     # our BAs to it: src and dst the other way round
//! # or, instead of sa-in and sa-out: ike = "NAME", a [[connection]] whose child has
//! # mip6 = "signalling" (RFC 4877 §4.4)
//! [home-agent.mobile-node.tunnel-in]  # optional, with tunnel-out: ESP tunnel mode (RFC 4877),
//! [home-agent.mobile-node.tunnel-out] # its traffic to us and ours to it (via the care-of address)
//! ```

use super::error::{ConfigError, Ctx};
use super::mip6_sa::{self, SignallingKeys};
use super::safile::RawSa;
use ipsec::SaParams;
use ipsec::spd::Prefix;
use serde::Deserialize;
use std::net::{IpAddr, Ipv6Addr};
use toml::Spanned;

/// Default largest lifetime granted: 600 s (150 units of 4 s, §6.1.7).
pub const DEFAULT_MAX_LIFETIME_SECS: u32 = 600;
/// Default binding cache size.
pub const DEFAULT_CAPACITY: usize = 100_000;

/// The `[home-agent]` section, checked.
#[derive(Debug, Clone)]
pub struct HomeAgentConf {
    /// The interface Binding Updates arrive on.
    pub interface: String,
    /// The home agent's address.
    pub address: Ipv6Addr,
    /// The home prefix.
    pub home_prefix: Ipv6Addr,
    /// Its length.
    pub home_prefix_len: u8,
    /// Longest lifetime granted, in 4-second units (§6.1.7).
    pub max_lifetime_units: u16,
    /// Most bindings held.
    pub capacity: usize,
    /// Whether a home address's first binding waits for Duplicate Address Detection on
    /// `interface` (RFC 6275 §10.3.1; default true).
    pub dad: bool,
    /// The mobile nodes served.
    pub mobile_nodes: Vec<MobileNodeConf>,
}

impl HomeAgentConf {
    /// IKEv2 connection name → the home address of the mobile node whose signalling SAs it
    /// makes (`ike = "NAME"`, RFC 4877 §4.4): whom a CHILD SA of that connection may serve.
    pub fn ike_homes(&self) -> std::collections::HashMap<String, Ipv6Addr> {
        self.mobile_nodes
            .iter()
            .filter_map(|m| match &m.keys {
                SignallingKeys::Ike { connection } => Some((connection.clone(), m.home_address)),
                SignallingKeys::Manual { .. } => None,
            })
            .collect()
    }
}

/// One mobile node: its home address and its signalling SAs.
#[derive(Debug, Clone)]
pub struct MobileNodeConf {
    /// The home address (§6.3).
    pub home_address: Ipv6Addr,
    /// Its signalling SAs: `sa-in` (its Binding Updates, home address → us) and `sa-out` (our
    /// Binding Acknowledgements), or the IKEv2 connection that makes them (RFC 4877 §4.4).
    pub keys: SignallingKeys,
    /// The ESP tunnel-mode SAs of its traffic (RFC 4877 §4.3), `(tunnel-in, tunnel-out)`:
    /// forwarding to the care-of address is on only with them.
    pub tunnel: Option<(SaParams, SaParams)>,
    /// Line of its `[[home-agent.mobile-node]]` header.
    pub line: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawHomeAgent {
    interface: Spanned<String>,
    address: Spanned<String>,
    home_prefix: Spanned<String>,
    max_lifetime: Option<Spanned<i64>>,
    capacity: Option<Spanned<i64>>,
    duplicate_address_detection: Option<bool>,
    #[serde(default)]
    mobile_node: Vec<Spanned<RawMobileNode>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawMobileNode {
    home_address: Spanned<String>,
    sa_in: Option<Spanned<RawSa>>,
    sa_out: Option<Spanned<RawSa>>,
    ike: Option<Spanned<String>>,
    tunnel_in: Option<Spanned<RawSa>>,
    tunnel_out: Option<Spanned<RawSa>>,
}

fn v6(ctx: &Ctx<'_>, s: &Spanned<String>, field: &'static str) -> Result<Ipv6Addr, ConfigError> {
    s.get_ref()
        .trim()
        .parse()
        .map_err(|_| ctx.err(s.span(), field, format!("{:?} is not an IPv6 address", s.get_ref())))
}

pub(super) fn parse(
    ctx: &Ctx<'_>,
    r: &RawHomeAgent,
    ike_children: &[String],
) -> Result<HomeAgentConf, ConfigError> {
    let name = r.interface.get_ref();
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', '\0']) {
        return Err(ctx.err(r.interface.span(), "interface", "want a device name of 1..=15 bytes"));
    }
    let address = v6(ctx, &r.address, "address")?;
    let prefix: Prefix = r
        .home_prefix
        .get_ref()
        .parse()
        .map_err(|e| ctx.err(r.home_prefix.span(), "home-prefix", e))?;
    let IpAddr::V6(home_prefix) = prefix.addr else {
        return Err(ctx.err(r.home_prefix.span(), "home-prefix", "want an IPv6 prefix"));
    };
    let max_secs = match &r.max_lifetime {
        None => DEFAULT_MAX_LIFETIME_SECS,
        // The BA's Lifetime is 16 bits of 4-second units (§6.1.8).
        Some(m) => u32::try_from(*m.get_ref())
            .ok()
            .filter(|s| (4..=262_140).contains(s))
            .ok_or_else(|| ctx.err(m.span(), "max-lifetime", "want 4..=262140 seconds"))?,
    };
    let capacity = match &r.capacity {
        None => DEFAULT_CAPACITY,
        Some(c) => usize::try_from(*c.get_ref())
            .ok()
            .filter(|c| (1..=10_000_000).contains(c))
            .ok_or_else(|| ctx.err(c.span(), "capacity", "want 1..=10000000 bindings"))?,
    };
    let mut mobile_nodes: Vec<MobileNodeConf> = Vec::with_capacity(r.mobile_node.len());
    // Sets, not scans of the list: a config may list tens of thousands of mobile nodes.
    let mut homes = std::collections::HashSet::with_capacity(r.mobile_node.len());
    let mut spis = std::collections::HashSet::with_capacity(r.mobile_node.len());
    for m in &r.mobile_node {
        let mn = mobile_node(ctx, m, address, ike_children)?;
        let raw = m.get_ref();
        if !homes.insert(mn.home_address) {
            return Err(ctx.err(raw.home_address.span(), "home-address", "listed twice"));
        }
        if let (Some((sa_in, _)), Some(raw_in)) = (mn.keys.manual(), &raw.sa_in) {
            if !spis.insert(sa_in.spi) {
                return Err(ctx.err(
                    raw_in.get_ref().spi.span(),
                    "spi",
                    format!("{} is the sa-in of another mobile node", sa_in.spi),
                ));
            }
        }
        if let (Some((tin, _)), Some(t)) = (&mn.tunnel, &raw.tunnel_in) {
            if !spis.insert(tin.spi) {
                return Err(ctx.err(
                    t.get_ref().spi.span(),
                    "spi",
                    format!("{} is the sa-in or tunnel-in of another mobile node", tin.spi),
                ));
            }
        }
        mobile_nodes.push(mn);
    }
    Ok(HomeAgentConf {
        dad: r.duplicate_address_detection.unwrap_or(true),
        interface: name.clone(),
        address,
        home_prefix,
        home_prefix_len: prefix.len,
        max_lifetime_units: (max_secs / wire::mip6::LIFETIME_UNIT_SECS) as u16,
        capacity,
        mobile_nodes,
    })
}

/// One `[[home-agent.mobile-node]]`: its SAs are `[[sa]]` tables (safile, with integrity
/// required), ESP in transport mode between its home address and us (RFC 3776 §4.1).
fn mobile_node(
    ctx: &Ctx<'_>,
    m: &Spanned<RawMobileNode>,
    ha: Ipv6Addr,
    ike_children: &[String],
) -> Result<MobileNodeConf, ConfigError> {
    let r = m.get_ref();
    let home_address = v6(ctx, &r.home_address, "home-address")?;
    let keys = mip6_sa::signalling_keys(
        ctx,
        m.span(),
        r.sa_in.as_ref(),
        r.sa_out.as_ref(),
        r.ike.as_ref(),
        ike_children,
        (home_address, ha),
    )?;
    // RFC 4877 §4.3: the tunnel SAs carry the home address's traffic (the home agent's
    // tunnel-out goes from us to the home address; its outer destination is the care-of address).
    let tunnel = mip6_sa::tunnel_pair(
        ctx,
        m.span(),
        r.tunnel_in.as_ref(),
        r.tunnel_out.as_ref(),
        home_address,
        ha,
    )?;
    Ok(MobileNodeConf { home_address, keys, tunnel, line: ctx.header_line(m.span().start) })
}

#[cfg(test)]
#[path = "home_agent_tests.rs"]
mod tests;
