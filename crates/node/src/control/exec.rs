//! Carries out the SA and policy requests of the control socket on the control plane, and
//! answers with JSON: `{"ok": true, ...}` (with `warnings` for weak SAs it installed) or
//! `{"ok": false, "error": ..., "field": ...}`. Lists never carry keys (the control plane keeps none).

use super::commands::Request;
use crate::config::policy::{RuntimeAction, RuntimePolicy};
use crate::config::sa::{Direction, SaConf, SaRef};
use crate::config::warnings;
use crate::datapath::mailbox::{InKey, OutKey, PolicyAction, PolicySpec};
use crate::keying::plane::{ControlPlane, PlaneError, SaRecord, SaSpec};
use ipsec::spd_table::DEFAULT_PRIORITY;
use ipsec::{PolicyId, Spi};
use serde_json::{Value, json};
use std::time::Duration;

/// The reply to a refused or failed request.
pub fn error_reply(field: &str, message: &str) -> Value {
    let mut v = json!({ "ok": false, "error": message });
    if !field.is_empty() {
        v["field"] = json!(field);
    }
    v
}

fn spec(s: &SaConf) -> SaSpec {
    SaSpec {
        params: s.params.clone(),
        lane: s.lane,
        endpoint: s.peer,
        beet: s.beet,
        raw_ip: false,
        name: s.name.clone(),
    }
}

/// The weak settings of the SAs a request installs, logged; the answer carries them as
/// `warnings` so that `hipsec sa add` can print them.
fn warn<'a>(mut reply: Value, sas: impl IntoIterator<Item = &'a SaConf>) -> Value {
    let ws: Vec<warnings::Warning> = sas.into_iter().flat_map(warnings::check_sa).collect();
    if !ws.is_empty() {
        warnings::log_all(&ws);
        reply["warnings"] = warnings::to_json(&ws);
    }
    reply
}

fn in_key(r: &SaRef) -> InKey {
    (r.spi, r.proto)
}

/// The outbound SA a reference names: with `dst` as given (it need not exist when `may_be_new`),
/// else the one installed SA of that SPI and protocol.
fn out_key(p: &ControlPlane, r: &SaRef, at: &str, may_be_new: bool) -> Result<OutKey, PlaneError> {
    if let Some(dst) = r.dst {
        let k = OutKey { spi: r.spi, proto: r.proto, dst };
        if may_be_new || p.outbound().contains_key(&k) {
            return Ok(k);
        }
    }
    let mut found = p.outbound().keys().filter(|k| k.spi == r.spi && k.proto == r.proto);
    match (found.next(), found.next(), r.dst) {
        (Some(k), None, None) => Ok(*k),
        (Some(_), Some(_), None) => Err(PlaneError::field(
            at,
            format!("spi {} names several outbound SAs; give dst", Spi(r.spi)),
        )),
        _ => Err(PlaneError::field(
            at,
            format!(
                "no outbound SA with spi {}{}",
                Spi(r.spi),
                if may_be_new { "; give dst to name one not installed yet" } else { "" }
            ),
        )),
    }
}

fn policy_spec(p: &ControlPlane, r: &RuntimePolicy, at: &str) -> Result<PolicySpec, PlaneError> {
    let action = match &r.action {
        RuntimeAction::Bypass => PolicyAction::Bypass,
        RuntimeAction::Discard => PolicyAction::Discard,
        RuntimeAction::Protect(refs) => PolicyAction::Protect(
            refs.iter()
                .enumerate()
                .map(|(i, s)| out_key(p, s, &format!("{at}.sas[{i}]"), true))
                .collect::<Result<_, _>>()?,
        ),
    };
    Ok(PolicySpec {
        selector: r.selector.clone(),
        action,
        in_sas: r.in_sas.iter().map(in_key).collect(),
        priority: r.priority.unwrap_or(DEFAULT_PRIORITY),
    })
}

/// Carries out an SA or policy request (the others are the server's).
pub fn execute(p: &mut ControlPlane, req: Request) -> Value {
    match run(p, req) {
        Ok(v) => v,
        Err(e) => error_reply(e.field.as_deref().unwrap_or(""), &e.message),
    }
}

fn run(p: &mut ControlPlane, req: Request) -> Result<Value, PlaneError> {
    match req {
        Request::SaAdd { mut sas, succeeds: Some(old), .. } => {
            let new = sas.pop().ok_or_else(|| PlaneError::field("sas", "empty"))?;
            p.install_successor(in_key(&old), spec(&new))?;
            Ok(warn(json!({ "ok": true, "installed": 1 }), [&new]))
        }
        Request::SaAdd { sas, replace, .. } => {
            let (ins, outs): (Vec<&SaConf>, Vec<&SaConf>) =
                sas.iter().partition(|s| s.direction == Direction::In);
            let n = sas.len();
            p.install(
                ins.into_iter().map(spec).collect(),
                outs.into_iter().map(spec).collect(),
                replace,
            )?;
            Ok(warn(json!({ "ok": true, "installed": n }), &sas))
        }
        Request::SaDel { inbound, outbound } => {
            let ins: Vec<InKey> = inbound.iter().map(in_key).collect();
            let outs = outbound
                .iter()
                .enumerate()
                .map(|(i, r)| out_key(p, r, &format!("out[{i}]"), false))
                .collect::<Result<Vec<_>, _>>()?;
            p.remove(&ins, &outs)?;
            Ok(json!({ "ok": true, "removed": ins.len() + outs.len() }))
        }
        Request::SaList => Ok(sa_list(p)),
        Request::SaSwitch { old, new } => {
            let old = out_key(p, &old, "old", false)?;
            let k = p.switch_outbound(old, spec(&new))?;
            Ok(warn(json!({ "ok": true, "spi": Spi(k.spi).to_string() }), [&*new]))
        }
        Request::SaRetire { sa, grace_ms } => {
            let k = in_key(&sa);
            if !p.inbound().contains_key(&k) {
                return Err(PlaneError::field("spi", format!("no inbound SA {}", Spi(k.0))));
            }
            p.retire_after(k, Duration::from_millis(grace_ms));
            Ok(json!({ "ok": true, "retire_in_ms": grace_ms }))
        }
        Request::SaRekey { old_in, old_out, new_in, new_out, grace_ms } => {
            let old_out = out_key(p, &old_out, "old-out", false)?;
            let g = Duration::from_millis(grace_ms);
            p.rekey(in_key(&old_in), spec(&new_in), old_out, spec(&new_out), g)?;
            let reply = json!({ "ok": true, "rekeyed": true, "grace_ms": grace_ms });
            Ok(warn(reply, [&*new_in, &*new_out]))
        }
        Request::PolicyAdd { policies, replace } => {
            let mut next =
                p.policies().keys().filter(|&&id| id < 1 << 63).max().copied().unwrap_or(0) + 1;
            let mut out: Vec<(PolicyId, PolicySpec)> = Vec::new();
            for (i, r) in policies.iter().enumerate() {
                let at = format!("policies[{i}]");
                let id = match r.id {
                    Some(id) => id,
                    None => {
                        next += 1;
                        next - 1
                    }
                };
                let exists = p.policies().contains_key(&id) || out.iter().any(|(o, _)| *o == id);
                if exists != replace {
                    let what = if replace { "no policy" } else { "a policy already has" };
                    return Err(PlaneError::field(format!("{at}.id"), format!("{what} id {id}")));
                }
                out.push((id, policy_spec(p, r, &at)?));
            }
            let ids: Vec<PolicyId> = out.iter().map(|(id, _)| *id).collect();
            p.set_policies(out)?;
            Ok(json!({ "ok": true, "ids": ids }))
        }
        Request::PolicyDel { ids } => {
            p.remove_policies(&ids)?;
            Ok(json!({ "ok": true, "removed": ids.len() }))
        }
        Request::PolicyList => Ok(policy_list(p)),
        Request::Status
        | Request::ReloadFilter
        | Request::Monitor
        | Request::Initiate { .. }
        | Request::Terminate { .. }
        | Request::Rekey { .. }
        | Request::IkeKeys
        | Request::HipKeys
        | Request::HipClose { .. }
        | Request::HipRekey { .. } => Err(PlaneError::other("not an SA or policy request")),
    }
}

/// A lane as `sa-list` shows it: its number, or "every" for an outbound SA copied on each.
fn lane_json(lane: usize) -> Value {
    if lane == crate::keying::plane::EVERY_LANE { json!("every") } else { json!(lane) }
}

fn sa_json(dir: &str, r: &SaRecord) -> Value {
    json!({
        "direction": dir, "spi": r.spi.to_string(), "proto": r.proto, "suite": r.suite,
        "mode": r.mode, "src": r.src.to_string(), "dst": r.dst.to_string(),
        "peer": r.endpoint.map(|e| e.to_string()), "lane": lane_json(r.lane), "name": r.name,
        "esn": r.esn, "replay-window": r.replay_window,
    })
}

/// `sa-list`: every SA the control plane knows, outbound first; no keys.
pub fn sa_list(p: &ControlPlane) -> Value {
    let mut sas: Vec<Value> = p.outbound().values().map(|r| sa_json("out", r)).collect();
    sas.extend(p.inbound().values().map(|r| sa_json("in", r)));
    json!({ "ok": true, "lanes": p.lanes(), "sas": sas })
}

/// `policy-list`: every policy by id, SAs by key.
pub fn policy_list(p: &ControlPlane) -> Value {
    let ports = |r: Option<(u16, u16)>| {
        r.map(|(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") })
    };
    let list: Vec<Value> = p
        .policies()
        .iter()
        .map(|(id, s)| {
            let (action, sas) = match &s.action {
                PolicyAction::Protect(keys) => (
                    "protect",
                    keys.iter()
                        .map(|k| json!({ "spi": Spi(k.spi).to_string(), "dst": k.dst.to_string(),
                                         "proto": if k.proto == wire::proto::AH { "ah" } else { "esp" } }))
                        .collect(),
                ),
                PolicyAction::Bypass => ("bypass", vec![]),
                PolicyAction::Discard => ("discard", vec![]),
            };
            let sel = &s.selector;
            json!({
                "id": id, "priority": s.priority, "src": sel.src.to_string(), "dst": sel.dst.to_string(),
                "proto": sel.proto, "src-ports": ports(sel.src_ports), "dst-ports": ports(sel.dst_ports),
                "action": action, "sas": sas,
                "in-sas": s.in_sas.iter().map(|k| Spi(k.0).to_string()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "ok": true, "policies": list })
}
