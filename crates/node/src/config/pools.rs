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

#[cfg(test)]
mod tests {
    use super::super::parse;

    const GATEWAY: &str = r#"
[interface]
name = "hipsec0"
addresses = ["10.1.0.1/16"]
[network]
local = "192.0.2.1:4500"
[[connection]]
name = "rw"
remote_addrs = "%any"
pools = ["rw"]
vips = ["0.0.0.0"]
[connection.local]
id = "gw.example"
[connection.remote]
id = "alice@example.com"
[connection.children.net]
local_ts = ["10.1.0.0/16"]
remote_ts = ["10.3.0.0/24"]
[pools.rw]
addrs = "10.3.0.0/24"
dns = ["10.3.0.53"]
[secrets.alice]
id = ["alice@example.com"]
secret = "correct horse battery staple"
"#;

    fn err(text: &str) -> String {
        match parse("t.toml", text) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn pools_and_vips_parse() {
        let c = parse("t.toml", GATEWAY).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.pools.len(), 1);
        assert_eq!(c.pools[0].name, "rw");
        assert_eq!(c.pools[0].size(), 254);
        assert_eq!(c.pools[0].dns, vec!["10.3.0.53".parse::<std::net::IpAddr>().unwrap()]);
        assert_eq!(c.connections[0].pools, vec!["rw".to_owned()]);
        assert_eq!(c.connections[0].vips, vec!["0.0.0.0".parse::<std::net::IpAddr>().unwrap()]);
    }

    #[test]
    fn bad_pools_name_the_field() {
        let e = err(&GATEWAY.replacen("pools = [\"rw\"]", "pools = [\"nope\"]", 1));
        assert!(e.contains("pools") && e.contains("nope"), "{e}");
        let e = err(&GATEWAY.replacen("addrs = \"10.3.0.0/24\"", "addrs = \"10.3.0.0\"", 1));
        assert!(e.contains("addrs"), "{e}");
        let e = err(&GATEWAY.replacen("dns = [\"10.3.0.53\"]", "dns = [\"ns1\"]", 1));
        assert!(e.contains("dns"), "{e}");
        let e = err(&GATEWAY.replacen("vips = [\"0.0.0.0\"]", "vips = [\"any\"]", 1));
        assert!(e.contains("vips"), "{e}");
    }
}
