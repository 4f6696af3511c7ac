//! `[[policy]]` tables of the node config: SPD entries (RFC 4301 §4.4.1) with their selectors,
//! action and the SAs they name; also read for policies given over the control socket.

use super::error::{ConfigError, Ctx};
use super::sa::{self, Direction, SaConf, SaRef};
use ipsec::spd::{Prefix, Selector};
use serde::Deserialize;
use toml::Spanned;

/// What an SPD entry does with matching packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyAction {
    /// Apply these SAs (indices into [`super::NodeConfig::sas`], all outbound), in order.
    Protect(Vec<usize>),
    /// Pass unprotected.
    Bypass,
    /// Drop.
    Discard,
}

/// One SPD entry.
#[derive(Debug, Clone)]
pub struct PolicyConf {
    /// Selectors.
    pub selector: Selector,
    /// Action.
    pub action: PolicyAction,
    /// Inbound SAs (indices into [`super::NodeConfig::sas`]) that may carry the reverse traffic of a
    /// protect policy (`in-sas`); empty: any inbound SA of the node. See
    /// [`crate::keying::manual::build_engine_for`] for the inbound SPD made from it (RFC 4301 §5.2).
    pub in_sas: Vec<usize>,
    /// Line of its `[[policy]]` header.
    pub line: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawPolicy {
    src: Spanned<String>,
    dst: Spanned<String>,
    proto: Option<Spanned<toml::Value>>,
    #[serde(alias = "src_ports")]
    src_ports: Option<Spanned<toml::Value>>,
    #[serde(alias = "dst_ports")]
    dst_ports: Option<Spanned<toml::Value>>,
    action: Spanned<String>,
    sas: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    in_sas: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    /// Run time only (`hipsec policy add`): the policy's id.
    id: Option<Spanned<i64>>,
    /// Run time only: lower matches first.
    priority: Option<Spanned<i64>>,
}

pub(crate) fn policy(
    ctx: &Ctx<'_>,
    p: &Spanned<RawPolicy>,
    sas: &[SaConf],
) -> Result<PolicyConf, ConfigError> {
    let line = ctx.header_line(p.span().start);
    let r = p.get_ref();
    // A config policy's id is its place in the file; its priority the default.
    for (f, name) in [(&r.id, "id"), (&r.priority, "priority")] {
        if let Some(f) = f {
            return Err(ctx.err(
                f.span(),
                name,
                "only for policies added at run time (hipsec policy add)",
            ));
        }
    }
    let selector = selector(ctx, r)?;
    let action = match r.action.get_ref().as_str() {
        "protect" => {
            let list = r.sas.as_ref().ok_or_else(|| {
                ctx.err(r.action.span(), "sas", "protect needs sas = [\"name\", ...]")
            })?;
            if list.get_ref().is_empty() {
                return Err(ctx.err(list.span(), "sas", "protect needs at least one SA"));
            }
            let mut idx = Vec::new();
            for s in list.get_ref() {
                idx.push(sa::resolve(ctx, s, sas, Direction::Out, "sas")?);
            }
            PolicyAction::Protect(idx)
        }
        a @ ("bypass" | "discard") => {
            no_sas(ctx, r, a)?;
            if a == "bypass" { PolicyAction::Bypass } else { PolicyAction::Discard }
        }
        other => return Err(bad_action(ctx, r, other)),
    };
    let mut in_sas = Vec::new();
    if let Some(list) = &r.in_sas {
        if list.get_ref().is_empty() {
            return Err(ctx.err(list.span(), "in-sas", "leave in-sas out for any inbound SA"));
        }
        for s in list.get_ref() {
            in_sas.push(sa::resolve(ctx, s, sas, Direction::In, "in-sas")?);
        }
    }
    Ok(PolicyConf { selector, action, in_sas, line })
}

/// A bypass or discard policy names no SAs.
pub(crate) fn no_sas(ctx: &Ctx<'_>, r: &RawPolicy, a: &str) -> Result<(), ConfigError> {
    if let Some(s) = &r.sas {
        return Err(ctx.err(s.span(), "sas", format!("{a} takes no SAs")));
    }
    if let Some(s) = &r.in_sas {
        return Err(ctx.err(s.span(), "in-sas", format!("{a} takes no SAs")));
    }
    Ok(())
}

/// The error for an unknown `action`.
pub(crate) fn bad_action(ctx: &Ctx<'_>, r: &RawPolicy, other: &str) -> ConfigError {
    ctx.err(
        r.action.span(),
        "action",
        format!("{other:?}: use \"protect\", \"bypass\" or \"discard\""),
    )
}

/// The selectors of a `[[policy]]` (RFC 4301 §4.4.1.1): prefixes of one IP version, protocol,
/// and port ranges only where the protocol has ports.
pub(crate) fn selector(ctx: &Ctx<'_>, r: &RawPolicy) -> Result<Selector, ConfigError> {
    let prefix = |s: &Spanned<String>, f: &'static str| -> Result<Prefix, ConfigError> {
        s.get_ref().parse::<Prefix>().map_err(|e| ctx.err(s.span(), f, e))
    };
    let src = prefix(&r.src, "src")?;
    let dst = prefix(&r.dst, "dst")?;
    if src.addr.is_ipv4() != dst.addr.is_ipv4() {
        return Err(ctx.err(r.dst.span(), "dst", "src and dst differ in IP version"));
    }
    let proto = match &r.proto {
        None => None,
        Some(v) => protocol(v.get_ref(), src.addr.is_ipv6()).ok_or_else(|| {
            ctx.err(v.span(), "proto", "want any, tcp, udp, icmp, icmpv6, sctp or 0..=255")
        })?,
    };
    let ports = |v: &Option<Spanned<toml::Value>>, f: &'static str| -> Result<_, ConfigError> {
        let Some(v) = v else { return Ok(None) };
        if !matches!(proto, Some(6 | 17 | 132)) {
            return Err(ctx.err(v.span(), f, "ports need proto = \"tcp\", \"udp\" or \"sctp\""));
        }
        port_range(v.get_ref())
            .map(Some)
            .ok_or_else(|| ctx.err(v.span(), f, "want a port (80) or a range (\"1024-65535\")"))
    };
    let src_ports = ports(&r.src_ports, "src-ports")?;
    let dst_ports = ports(&r.dst_ports, "dst-ports")?;
    Ok(Selector { src, dst, proto, src_ports, dst_ports })
}

pub(crate) fn protocol(v: &toml::Value, v6: bool) -> Option<Option<u8>> {
    match v {
        toml::Value::Integer(i) => u8::try_from(*i).ok().map(Some),
        toml::Value::String(s) => match s.as_str() {
            "any" => Some(None),
            "tcp" => Some(Some(6)),
            "udp" => Some(Some(17)),
            "sctp" => Some(Some(132)),
            "icmp" if !v6 => Some(Some(1)),
            "icmpv6" | "icmp" => Some(Some(58)),
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn port_range(v: &toml::Value) -> Option<(u16, u16)> {
    match v {
        toml::Value::Integer(i) => u16::try_from(*i).ok().map(|p| (p, p)),
        toml::Value::String(s) => {
            let (lo, hi) = match s.split_once('-') {
                Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
                None => {
                    let p = s.trim().parse().ok()?;
                    (p, p)
                }
            };
            (lo <= hi).then_some((lo, hi))
        }
        _ => None,
    }
}

/// A policy given while the node runs (`hipsec policy add`): selectors and action as in the
/// config, SAs named by [`SaRef`] (they need not be installed yet: their packets raise
/// acquires), an optional `id` (else the next free one) and `priority` (lower first).
#[derive(Debug, Clone)]
pub struct RuntimePolicy {
    /// `id`, if given.
    pub id: Option<u64>,
    /// `priority`, if given.
    pub priority: Option<u32>,
    /// Selectors.
    pub selector: Selector,
    /// `protect` with its SAs (outbound, in order), `bypass` or `discard`.
    pub action: RuntimeAction,
    /// `in-sas`: inbound SAs that may carry the reverse traffic; empty: any.
    pub in_sas: Vec<SaRef>,
}

/// The action of a [`RuntimePolicy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeAction {
    /// Apply these SAs in order.
    Protect(Vec<SaRef>),
    /// Pass in clear.
    Bypass,
    /// Drop.
    Discard,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicies {
    #[serde(default)]
    policy: Vec<Spanned<RawPolicy>>,
}

/// Reads `[[policy]]` tables given while the node runs.
pub fn parse_runtime(file: &str, text: &str) -> Result<Vec<RuntimePolicy>, ConfigError> {
    let ctx = Ctx::new(file, text);
    let raw: RawPolicies = ctx.deserialize()?;
    let mut out = Vec::with_capacity(raw.policy.len());
    for p in &raw.policy {
        let r = p.get_ref();
        let selector = selector(&ctx, r)?;
        let refs = |l: &Option<Spanned<Vec<Spanned<toml::Value>>>>, f: &'static str| {
            l.iter()
                .flat_map(|l| l.get_ref())
                .map(|v| sa::sa_ref(&ctx, v, f))
                .collect::<Result<Vec<_>, _>>()
        };
        let action = match r.action.get_ref().as_str() {
            "protect" => {
                let sas = refs(&r.sas, "sas")?;
                if sas.is_empty() {
                    return Err(ctx.err(
                        r.action.span(),
                        "sas",
                        "protect needs sas = [SPI or { spi, dst }, ...]",
                    ));
                }
                RuntimeAction::Protect(sas)
            }
            a @ ("bypass" | "discard") => {
                no_sas(&ctx, r, a)?;
                if a == "bypass" { RuntimeAction::Bypass } else { RuntimeAction::Discard }
            }
            other => return Err(bad_action(&ctx, r, other)),
        };
        let in_sas = refs(&r.in_sas, "in-sas")?;
        let id = match &r.id {
            None => None,
            Some(v) => Some(
                u64::try_from(*v.get_ref())
                    .ok()
                    .filter(|&i| i > 0)
                    .ok_or_else(|| ctx.err(v.span(), "id", "want a policy id 1.."))?,
            ),
        };
        let priority = match &r.priority {
            None => None,
            Some(v) => Some(u32::try_from(*v.get_ref()).map_err(|_| {
                ctx.err(v.span(), "priority", "want 0..=4294967295 (lower matches first)")
            })?),
        };
        out.push(RuntimePolicy { id, priority, selector, action, in_sas });
    }
    Ok(out)
}
