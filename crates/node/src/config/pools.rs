//! Road warriors' address pools (swanctl.conf's `pools` section, RFC 7296 §2.19):
//! `[pools.NAME] addrs = "10.3.0.0/24"` (or `"first-last"`), `dns = [..]`; a connection that
//! answers road warriors names them in `pools = ["NAME"]`, and one that is a road warrior asks
//! for an address with `vips = ["0.0.0.0"]` (or `"::"`).

use super::connection::ConnectionConf;
use super::error::{ConfigError, Ctx};
use ike::pool::PoolConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPool {
    addrs: Spanned<String>,
    #[serde(default)]
    dns: Vec<Spanned<String>>,
}

/// The `[pools.*]` tables, checked; and every pool a connection names must be one of them.
pub(super) fn parse(
    ctx: &Ctx<'_>,
    raw: &BTreeMap<String, RawPool>,
    conns: &[ConnectionConf],
    conn_spans: &[std::ops::Range<usize>],
) -> Result<Vec<PoolConfig>, ConfigError> {
    let mut out = Vec::new();
    for (name, p) in raw {
        let mut dns = Vec::new();
        for d in &p.dns {
            let a = d.get_ref().trim().parse::<IpAddr>();
            dns.push(a.map_err(|_| {
                ctx.err(d.span(), "dns", format!("{:?}: want an IP address", d.get_ref()))
            })?);
        }
        let pool = PoolConfig::parse(name, p.addrs.get_ref(), dns)
            .map_err(|e| ctx.err(p.addrs.span(), "addrs", e))?;
        out.push(pool);
    }
    for (c, span) in conns.iter().zip(conn_spans) {
        if let Some(missing) = c.pools.iter().find(|n| !raw.contains_key(*n)) {
            let why = format!("{missing:?}: no [pools.{missing}] defines it");
            return Err(ctx.err(span.clone(), "pools", why));
        }
    }
    Ok(out)
}
