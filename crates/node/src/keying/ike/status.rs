//! The driver's part of `hipsec status`: every IKE SA with its state and CHILD SAs (SPIs,
//! suites, rekey counts and delays, timers; never keys), as `swanctl --list-sas` shows them.

use super::IkeDriver;
use ike::Time;
use serde_json::{Value, json};

/// Whole seconds from `now` to `t`.
fn secs_until(t: Time, now: Time) -> u64 {
    t.saturating_duration_since(now).as_secs()
}

impl IkeDriver {
    /// `status`: every IKE SA with its state and CHILD SAs (SPIs, suite; never keys).
    pub fn status(&self) -> Value {
        let now = self.now();
        let now_ms = now.as_millis();
        let children = self.endpoint.children();
        let mut v: Vec<Value> = self
            .endpoint
            .views()
            .into_iter()
            .map(|a| {
                let mut j = json!({
                    "connection": a.conn,
                    "peer": a.peer.to_string(),
                    "state": a.state,
                    "udp_encap": a.local.port() == self.natt_port,
                    "age_s": secs_until(now, a.created),
                });
                let Some((spi_i, spi_r, suite)) = a.ike else { return j };
                let node = self.assocs.get(&a.assoc);
                j["role"] = json!(if a.initiated { "initiator" } else { "responder" });
                j["spi_i"] = json!(format!("{spi_i:016x}"));
                j["spi_r"] = json!(format!("{spi_r:016x}"));
                j["suite"] = json!(crate::config::proposal::ike_suite_name(&suite));
                let paths = node.map(|n| n.children.values().collect::<Vec<_>>()).unwrap_or_default();
                j["child_rekeys"] = json!(paths.iter().map(|p| p.rekeys).sum::<u64>());
                // One child per connection today: its delays are the IKE SA's.
                let (n, median, exchange) =
                    paths.first().map_or((0, None, None), |p| p.rekey_delay());
                j["our_rekeys"] = json!(n);
                j["our_rekey_delay_median_us"] = json!(median);
                j["our_rekey_exchange_median_us"] = json!(exchange);
                let list: Vec<Value> = children
                    .iter()
                    .filter(|c| c.assoc == a.assoc)
                    .map(|c| {
                        let path = node.and_then(|n| n.children.get(&c.child));
                        let pair = path.and_then(|p| p.pairs.get(&c.spi_in));
                        let expired = c.expires.is_some_and(|e| e <= now);
                        let state = if c.rekeying {
                            "rekeying"
                        } else if expired {
                            "past its hard lifetime"
                        } else if c.rekey_failures > 0 {
                            "installed, rekey failing (retrying)"
                        } else if c.sending {
                            "installed, sending"
                        } else if c.awaiting_switch {
                            "rekeyed by the peer, awaiting its delete"
                        } else {
                            "installed, receiving"
                        };
                        json!({
                            "name": path.map_or_else(|| c.child.clone(), |p| p.name.clone()),
                            "spi_in": format!("{:08x}", c.spi_in),
                            "spi_out": format!("{:08x}", c.spi_out),
                            "suite": pair.map(|p| p.suite.clone()),
                            "esp": pair.map(|p| if p.raw_ip { "ip" } else { "udp" }),
                            "policies": path.map_or(0, |p| p.policies.len()),
                            "installed_s": pair.map_or(0, |p| now_ms.saturating_sub(p.up_ms) / 1000),
                            "rekey_in_s": c.rekey_at.map(|t| secs_until(t, now)),
                            "expires_in_s": c.expires.map(|t| secs_until(t, now)),
                            "rekey_failures": c.rekey_failures,
                            "state": state,
                        })
                    })
                    .collect();
                j["children"] = json!(list);
                j
            })
            .collect();
        v.sort_by(|a, b| a["connection"].as_str().cmp(&b["connection"].as_str()));
        let s = self.endpoint.stats();
        let (cookie_threshold, half_open_per_peer) = self.endpoint.limits();
        // Road warriors' leases (RFC 7296 §2.19): online ones name their IKE SA's peer.
        let views = self.endpoint.views();
        let leases: Vec<Value> = self
            .endpoint
            .leases()
            .into_iter()
            .map(|l| {
                let peer = l.holder.and_then(|h| views.iter().find(|a| a.assoc == h));
                json!({
                    "pool": l.pool,
                    "address": l.addr.to_string(),
                    "identity": super::vip::id_text(&l.identity),
                    "online": l.holder.is_some(),
                    "peer": peer.map(|a| a.peer.to_string()),
                })
            })
            .collect();
        let vips: Vec<Value> = self
            .vips
            .iter()
            .map(|(assoc, addrs)| {
                let conn = self.assoc_conn(*assoc).map(|c| c.name.clone());
                json!({
                    "connection": conn,
                    "addresses": addrs.iter().map(|(a, l)| format!("{a}/{l}")).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "leases": leases,
            "virtual_ips": vips,
            "ike_sas": v,
            "half_open": self.endpoint.half_open(),
            "limits": {
                "cookie_threshold": cookie_threshold,
                "half_open_per_peer": half_open_per_peer,
            },
            "counters": {
                "established": s.established,
                "failed": s.failed,
                "dropped": s.dropped,
                "unsupported": self.unsupported,
                "resent": s.resent,
                "init_refused": s.init_refused,
                "cookies": s.cookies,
                "blocked": s.blocked,
                "setups": s.setups,
                "rekeys_failed": s.rekeys_failed,
                "hard_expired": s.hard_expired,
            }
        })
    }
}
