//! `[mobile-node]`: this node as a Mobile IPv6 mobile node (RFC 6275 §11) away from home: its
//! home address sits on the TUN device, its care-of address is the global IPv6 address of
//! `interface`, and it registers that address with its home agent in Binding Updates protected
//! by ESP transport mode (RFC 3776 §4.1) and sends its traffic through an ESP tunnel to the home
//! agent (RFC 4877 §4.3). docs/mip6.md has the whole example.
//!
//! ```toml
//! [mobile-node]
//! interface = "eth0"                 # its global IPv6 address is the care-of address
//! home-address = "2001:db8:1::100"   # on the TUN device ([interface] addresses)
//! home-agent = "2001:db8:1::1"
//! lifetime = 600                     # seconds asked for, 4..=262140 (RFC 6275 §6.1.7)
//! [mobile-node.sa-out]               # our BUs: home address → home agent, ESP transport
//! [mobile-node.sa-in]                # its BAs: home agent → home address
//! # or, instead of sa-out and sa-in: ike = "NAME", a [[connection]] whose child has
//! # mip6 = "signalling" (RFC 4877 §4.4)
//! [mobile-node.tunnel-out]           # our traffic: home address → home agent, ESP tunnel
//! [mobile-node.tunnel-in]            # its traffic: home agent → home address
//! ```

use super::error::{ConfigError, Ctx};
use super::mip6_sa::{self, SignallingKeys};
use super::safile::RawSa;
use ipsec::SaParams;
use serde::Deserialize;
use std::net::Ipv6Addr;
use toml::Spanned;

/// Lifetime asked for by default (seconds).
pub const DEFAULT_LIFETIME_SECS: u32 = 600;

/// The `[mobile-node]` section, checked.
#[derive(Debug, Clone)]
pub struct MobileNodeConf {
    /// The interface whose global IPv6 address is the care-of address.
    pub interface: String,
    /// The home address (§6.3).
    pub home_address: Ipv6Addr,
    /// The home agent's address.
    pub home_agent: Ipv6Addr,
    /// The lifetime asked for, in 4-second units (§6.1.7).
    pub lifetime_units: u16,
    /// The signalling SAs: `sa-out` (our Binding Updates, home address → home agent,
    /// transport) and `sa-in` (its Acknowledgements), or the IKEv2 connection that makes them
    /// (RFC 4877 §4.4).
    pub keys: SignallingKeys,
    /// Tunnel SA of the traffic from the home agent (tunnel mode).
    pub tunnel_in: SaParams,
    /// Tunnel SA of our traffic to the home agent (tunnel mode).
    pub tunnel_out: SaParams,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawMobileNode {
    interface: Spanned<String>,
    home_address: Spanned<String>,
    home_agent: Spanned<String>,
    lifetime: Option<Spanned<i64>>,
    sa_out: Option<Spanned<RawSa>>,
    sa_in: Option<Spanned<RawSa>>,
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
    m: &Spanned<RawMobileNode>,
    ike_children: &[String],
) -> Result<MobileNodeConf, ConfigError> {
    let r = m.get_ref();
    let name = r.interface.get_ref();
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', '\0']) {
        return Err(ctx.err(r.interface.span(), "interface", "want a device name of 1..=15 bytes"));
    }
    let home = v6(ctx, &r.home_address, "home-address")?;
    let ha = v6(ctx, &r.home_agent, "home-agent")?;
    if home == ha {
        return Err(ctx.err(r.home_agent.span(), "home-agent", "is the home address"));
    }
    let secs = match &r.lifetime {
        None => DEFAULT_LIFETIME_SECS,
        // 16 bits of 4-second units (§6.1.7).
        Some(l) => u32::try_from(*l.get_ref())
            .ok()
            .filter(|s| (4..=262_140).contains(s))
            .ok_or_else(|| ctx.err(l.span(), "lifetime", "want 4..=262140 seconds"))?,
    };
    let keys = mip6_sa::signalling_keys(
        ctx,
        m.span(),
        r.sa_in.as_ref(),
        r.sa_out.as_ref(),
        r.ike.as_ref(),
        ike_children,
        (ha, home),
    )?;
    let tunnel =
        mip6_sa::tunnel_pair(ctx, m.span(), r.tunnel_in.as_ref(), r.tunnel_out.as_ref(), ha, home)?;
    let Some((tunnel_in, tunnel_out)) = tunnel else {
        return Err(ctx.err(
            m.span(),
            "tunnel-out",
            "a mobile node needs tunnel-in and tunnel-out",
        ));
    };
    Ok(MobileNodeConf {
        interface: name.clone(),
        home_address: home,
        home_agent: ha,
        lifetime_units: (secs / wire::mip6::LIFETIME_UNIT_SECS) as u16,
        keys,
        tunnel_in,
        tunnel_out,
    })
}

#[cfg(test)]
#[path = "mobile_node_tests.rs"]
mod tests;
