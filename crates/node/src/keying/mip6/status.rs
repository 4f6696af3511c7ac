//! The `home_agent` part of `status` (binding cache count and a sample, refusals by reason,
//! never keys) and the bindings as monitor events.

use super::HomeAgentRuntime;
use ipsec::Time;
use mip6::{Binding, Refusal};
use serde_json::{Value, json};

/// Entries of the binding cache shown in `status` (a large cache shows its count and these).
pub const SAMPLE: usize = 16;

/// A refusal's name in `status` and events.
pub fn refusal_name(r: Refusal) -> &'static str {
    match r {
        Refusal::Malformed => "malformed",
        Refusal::BadChecksum => "bad_checksum",
        Refusal::Unprotected => "unprotected",
        Refusal::WrongSa => "wrong_sa",
        Refusal::BadCareOf => "bad_care_of",
        Refusal::OutOfWindow => "out_of_window",
        Refusal::NotHomeRegistration => "not_home_registration",
        Refusal::NotHomeSubnet => "not_home_subnet",
        Refusal::NotHomeAgentForThisMobileNode => "not_home_agent_for_this_mobile_node",
        Refusal::InsufficientResources => "insufficient_resources",
        Refusal::UnsupportedMessage => "unsupported_message",
        Refusal::NotForHomeAgent => "not_for_home_agent",
    }
}

/// One binding as JSON.
pub fn binding_json(b: &Binding, now: Time) -> Value {
    json!({
        "home_address": b.home_address.to_string(),
        "care_of_address": b.care_of_address.to_string(),
        "sequence": b.sequence,
        "spi": b.spi.to_string(),
        "expires_in_s": b.expires.0.saturating_sub(now.0) / 1_000_000,
    })
}

pub(super) fn status(rt: &HomeAgentRuntime, now: Time) -> Value {
    let cache = rt.ha.cache();
    let sample: Vec<Value> = cache.iter().take(SAMPLE).map(|b| binding_json(&b, now)).collect();
    let c = rt.ha.counters();
    let mut refused: serde_json::Map<String, Value> =
        c.refusals().map(|(r, n)| (refusal_name(r).to_string(), json!(n))).collect();
    for (name, n) in &rt.esp_refused {
        refused.insert(format!("esp_{name}"), json!(n));
    }
    json!({
        "interface": rt.conf.interface,
        "address": rt.conf.address.to_string(),
        "home_prefix": format!("{}/{}", rt.conf.home_prefix, rt.conf.home_prefix_len),
        "mobile_nodes": rt.conf.mobile_nodes.len(),
        "binding_cache": {
            "count": cache.len(),
            "capacity": cache.capacity(),
            "memory_bytes": cache.memory_bytes(),
            "sample": sample,
        },
        "bindings": {
            "created": c.created, "updated": c.updated,
            "deregistered": c.deregistered, "expired": c.expired,
        },
        "refused": refused,
        "link": rt.counters,
        "signalling": rt.sigs.status(),
        "forwarding": rt.fwd.status(),
    })
}
