//! `[[sa]]` tables of the node config: manually keyed SAs with the field names of the SA file
//! (docs/sa-file.md), plus `direction` and `name`. RFC 4301 §4.4.2 lists what an SA holds.

use crate::config::{ConfigError, Ctx};
use crypto::{EncrAlg, EspSuite, IntegAlg};
use ipsec::sa::Protocol;
use ipsec::{Lifetime, Mode, SaParams, SecurityAssociation, Spi, Time};
use serde::Deserialize;
use std::net::IpAddr;
use toml::Spanned;
use zeroize::Zeroizing;

/// Default replay window (as in the SA file).
pub const DEFAULT_REPLAY_WINDOW: u32 = 128;

/// Whether an SA protects what we send or what we receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// We receive with it (SAD by SPI).
    In,
    /// We send with it (named by policies).
    Out,
}

/// One checked SA.
#[derive(Debug, Clone)]
pub struct SaConf {
    /// Name policies refer to (defaults to none: refer to it by SPI).
    pub name: Option<String>,
    /// In or out.
    pub direction: Direction,
    /// The parameters, checked by building an SA from them.
    pub params: SaParams,
    /// Line of the `[[sa]]` header.
    pub line: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawSa {
    name: Option<Spanned<String>>,
    direction: Spanned<String>,
    src: Spanned<String>,
    dst: Spanned<String>,
    proto: Spanned<String>,
    spi: Spanned<toml::Value>,
    mode: Spanned<String>,
    aead: Option<Spanned<String>>,
    enc: Option<Spanned<String>>,
    auth: Option<Spanned<String>>,
    key: Option<Spanned<String>>,
    #[serde(alias = "enc_key")]
    enc_key: Option<Spanned<String>>,
    #[serde(alias = "auth_key")]
    auth_key: Option<Spanned<String>>,
    esn: Option<bool>,
    #[serde(alias = "replay_window")]
    replay_window: Option<Spanned<i64>>,
    lifetime: Option<RawLifetimes>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLifetimes {
    soft: Option<Lifetime>,
    hard: Option<Lifetime>,
}

/// Checks every `[[sa]]`: fields, key lengths, unique names and (per direction) SPIs.
pub(crate) fn parse_all(ctx: &Ctx<'_>, raw: &[Spanned<RawSa>]) -> Result<Vec<SaConf>, ConfigError> {
    let mut out: Vec<SaConf> = Vec::with_capacity(raw.len());
    for s in raw {
        let line = ctx.header_line(s.span().start);
        let r = s.get_ref();
        let c = one(ctx, r, line)?;
        if let (Some(n), Some(span)) = (&c.name, r.name.as_ref().map(|n| n.span())) {
            if let Some(prev) = out.iter().find(|o| o.name.as_ref() == Some(n)) {
                return Err(ctx.err(span, "name", format!("already used at line {}", prev.line)));
            }
        }
        let key = (c.direction, c.params.spi, c.params.protocol.number());
        if let Some(prev) =
            out.iter().find(|o| (o.direction, o.params.spi, o.params.protocol.number()) == key)
        {
            let msg =
                format!("spi {} is already used by the SA at line {}", c.params.spi, prev.line);
            return Err(ctx.err(r.spi.span(), "spi", msg));
        }
        out.push(c);
    }
    Ok(out)
}

/// Finds the outbound SA a policy names, by `name` or by SPI.
pub(crate) fn resolve_outbound(
    ctx: &Ctx<'_>,
    s: &Spanned<toml::Value>,
    sas: &[SaConf],
) -> Result<usize, ConfigError> {
    let found = match s.get_ref() {
        toml::Value::String(n) => sas
            .iter()
            .position(|c| c.name.as_deref() == Some(n.as_str()))
            .or_else(|| parse_spi(s.get_ref()).and_then(|spi| by_spi(sas, spi))),
        v => parse_spi(v).and_then(|spi| by_spi(sas, spi)),
    };
    let i =
        found.ok_or_else(|| ctx.err(s.span(), "sas", format!("no SA named {}", s.get_ref())))?;
    if sas[i].direction != Direction::Out {
        return Err(ctx.err(s.span(), "sas", "policies protect with outbound SAs only"));
    }
    Ok(i)
}

fn by_spi(sas: &[SaConf], spi: u32) -> Option<usize> {
    sas.iter().position(|c| c.direction == Direction::Out && c.params.spi.0 == spi)
}

fn parse_spi(v: &toml::Value) -> Option<u32> {
    match v {
        toml::Value::Integer(i) => u32::try_from(*i).ok(),
        toml::Value::String(s) => {
            let t = s.trim();
            match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(h) => u32::from_str_radix(h, 16).ok(),
                None => t.parse().ok(),
            }
        }
        _ => None,
    }
}

type Keys = (Protocol, Zeroizing<Vec<u8>>, Zeroizing<Vec<u8>>);

fn one(ctx: &Ctx<'_>, r: &RawSa, line: usize) -> Result<SaConf, ConfigError> {
    let direction = match r.direction.get_ref().as_str() {
        "in" => Direction::In,
        "out" => Direction::Out,
        d => {
            return Err(ctx.err(
                r.direction.span(),
                "direction",
                format!("{d:?}: use \"in\" or \"out\""),
            ));
        }
    };
    let addr = |s: &Spanned<String>, f: &str| {
        s.get_ref()
            .parse::<IpAddr>()
            .map_err(|_| ctx.err(s.span(), f, format!("{:?} is not an IP address", s.get_ref())))
    };
    let src = addr(&r.src, "src")?;
    let dst = addr(&r.dst, "dst")?;
    if src.is_ipv4() != dst.is_ipv4() {
        return Err(ctx.err(r.dst.span(), "dst", "src and dst differ in IP version"));
    }
    let spi = parse_spi(r.spi.get_ref()).map(Spi).ok_or_else(|| {
        ctx.err(r.spi.span(), "spi", "want a 32-bit integer or a hex string like \"0x00001000\"")
    })?;
    if !spi.is_valid() {
        return Err(ctx.err(r.spi.span(), "spi", format!("spi {spi} is reserved (must be > 255)")));
    }
    let mode = match r.mode.get_ref().as_str() {
        "tunnel" => Mode::Tunnel,
        "transport" => Mode::Transport,
        m => {
            return Err(ctx.err(
                r.mode.span(),
                "mode",
                format!("{m:?}: use \"tunnel\" or \"transport\""),
            ));
        }
    };
    let (protocol, enc_key, auth_key) = match r.proto.get_ref().as_str() {
        "esp" => esp(ctx, r)?,
        "ah" => ah(ctx, r)?,
        p => return Err(ctx.err(r.proto.span(), "proto", format!("{p:?}: use \"esp\" or \"ah\""))),
    };
    let replay_window = match &r.replay_window {
        None => DEFAULT_REPLAY_WINDOW,
        Some(w) => u32::try_from(*w.get_ref())
            .ok()
            .filter(|&v| v == 0 || (32..=ipsec::replay::MAX_WINDOW).contains(&v))
            .ok_or_else(|| ctx.err(w.span(), "replay-window", "0 (off) or 32..=65536"))?,
    };
    let lt = r.lifetime.as_ref();
    let params = SaParams {
        spi,
        protocol,
        mode,
        src,
        dst,
        enc_key,
        auth_key,
        esn: r.esn.unwrap_or(false),
        replay_window,
        soft: lt.and_then(|l| l.soft).unwrap_or_default(),
        hard: lt.and_then(|l| l.hard).unwrap_or_default(),
    };
    SecurityAssociation::new(&params, crypto::default_provider(), Time(0))
        .map_err(|e| ctx.err(r.proto.span(), "proto", e))?;
    let name = r.name.as_ref().map(|n| n.get_ref().clone());
    Ok(SaConf { name, direction, params, line })
}

fn hex_key(
    ctx: &Ctx<'_>,
    s: &Spanned<String>,
    field: &str,
) -> Result<Zeroizing<Vec<u8>>, ConfigError> {
    let t = s.get_ref().trim();
    let digits = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    let digits: Zeroizing<String> =
        Zeroizing::new(digits.chars().filter(|c| *c != '_' && *c != ':').collect());
    hex::decode(digits.as_str())
        .map(Zeroizing::new)
        .map_err(|e| ctx.err(s.span(), field, format!("not a hex key: {e}")))
}

fn key_len(
    ctx: &Ctx<'_>,
    s: &Spanned<String>,
    field: &str,
    key: &[u8],
    alg: &str,
    want: usize,
) -> Result<(), ConfigError> {
    if key.len() == want {
        return Ok(());
    }
    let msg = format!("{alg} needs a {want}-byte key, got {} bytes", key.len());
    Err(ctx.err(s.span(), field, msg))
}

fn esp(ctx: &Ctx<'_>, r: &RawSa) -> Result<Keys, ConfigError> {
    if let Some(a) = &r.aead {
        for (f, name) in
            [(&r.auth, "auth"), (&r.enc, "enc"), (&r.enc_key, "enc-key"), (&r.auth_key, "auth-key")]
        {
            if let Some(f) = f {
                return Err(ctx.err(f.span(), name, "an aead takes only \"key\""));
            }
        }
        let encr = match EncrAlg::from_name(&a.get_ref().to_ascii_lowercase()) {
            Some(e @ EncrAlg::Aead(_)) => e,
            _ => {
                return Err(ctx.err(
                    a.span(),
                    "aead",
                    "want aes128gcm, aes256gcm or chacha20poly1305",
                ));
            }
        };
        let k = r
            .key
            .as_ref()
            .ok_or_else(|| ctx.err(a.span(), "key", "missing (cipher key || 4-byte salt)"))?;
        let key = hex_key(ctx, k, "key")?;
        key_len(ctx, k, "key", &key, encr.name(), encr.key_len())?;
        let suite = EspSuite { encr, integ: IntegAlg::None };
        return Ok((Protocol::Esp(suite), key, Zeroizing::new(Vec::new())));
    }
    let e = r.enc.as_ref().ok_or_else(|| {
        ctx.err(r.proto.span(), "enc", "esp needs \"aead\", or \"enc\" and \"auth\"")
    })?;
    if let Some(k) = &r.key {
        return Err(ctx.err(
            k.span(),
            "key",
            "\"key\" is for aead; use \"enc-key\" and \"auth-key\"",
        ));
    }
    let encr = match EncrAlg::from_name(&e.get_ref().to_ascii_lowercase()) {
        Some(EncrAlg::Aead(_)) | None => {
            return Err(ctx.err(
                e.span(),
                "enc",
                "want aes128cbc, aes256cbc, 3des or null (AEADs go in \"aead\")",
            ));
        }
        Some(x) => x,
    };
    let integ = match &r.auth {
        None => IntegAlg::None,
        Some(a) => match IntegAlg::from_name(&a.get_ref().to_ascii_lowercase()) {
            Some(i @ IntegAlg::Hmac(_)) => i,
            _ => return Err(ctx.err(a.span(), "auth", "want sha1, sha256, sha384 or sha512")),
        },
    };
    if integ == IntegAlg::None {
        // Confidentiality-only ESP can be forged (RFC 4303 §3.2); the node does not run it.
        return Err(ctx.err(
            e.span(),
            "auth",
            "missing: the node requires integrity (RFC 4303 §3.2)",
        ));
    }
    let suite = EspSuite::new(encr, integ).map_err(|x| ctx.err(e.span(), "enc", x))?;
    let enc_key = match (&r.enc_key, encr.key_len()) {
        (None, 0) => Zeroizing::new(Vec::new()),
        (None, _) => return Err(ctx.err(e.span(), "enc-key", "missing")),
        (Some(k), want) => {
            let key = hex_key(ctx, k, "enc-key")?;
            key_len(ctx, k, "enc-key", &key, encr.name(), want)?;
            key
        }
    };
    let a = r.auth.as_ref().map_or(e.span(), |a| a.span());
    let k = r.auth_key.as_ref().ok_or_else(|| ctx.err(a, "auth-key", "missing"))?;
    let auth_key = hex_key(ctx, k, "auth-key")?;
    key_len(ctx, k, "auth-key", &auth_key, integ.name(), integ.key_len())?;
    Ok((Protocol::Esp(suite), enc_key, auth_key))
}

fn ah(ctx: &Ctx<'_>, r: &RawSa) -> Result<Keys, ConfigError> {
    for (f, name) in [(&r.aead, "aead"), (&r.enc, "enc"), (&r.enc_key, "enc-key"), (&r.key, "key")]
    {
        if let Some(f) = f {
            return Err(ctx.err(f.span(), name, "ah takes only \"auth\" and \"auth-key\""));
        }
    }
    let a = r.auth.as_ref().ok_or_else(|| ctx.err(r.proto.span(), "auth", "ah needs \"auth\""))?;
    let integ = match IntegAlg::from_name(&a.get_ref().to_ascii_lowercase()) {
        Some(IntegAlg::None) | None => {
            return Err(ctx.err(
                a.span(),
                "auth",
                "want sha1, sha256, sha384, sha512, gmac128 or gmac256",
            ));
        }
        Some(i) => i,
    };
    let k = r.auth_key.as_ref().ok_or_else(|| ctx.err(a.span(), "auth-key", "missing"))?;
    let key = hex_key(ctx, k, "auth-key")?;
    key_len(ctx, k, "auth-key", &key, integ.name(), integ.key_len())?;
    Ok((Protocol::Ah(integ), Zeroizing::new(Vec::new()), key))
}
