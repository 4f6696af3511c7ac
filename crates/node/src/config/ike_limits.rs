//! `[ike]`: the responder's defences against a flood of IKE_SA_INIT requests (RFC 7296 §2.6),
//! named as strongSwan names them (`charon.cookie_threshold`, `charon.block_threshold`).

use super::error::{ConfigError, Ctx};
use serde::Deserialize;
use toml::Spanned;

/// What `[ike]` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IkeLimits {
    /// Half-open IKE SAs beyond which an IKE_SA_INIT must bring a COOKIE (default 64; 0: always).
    pub cookie_threshold: usize,
    /// Half-open IKE SAs one address may hold; further IKE_SA_INITs from it are dropped
    /// before any work (default 0: no limit; strongSwan's `block_threshold` is 5).
    pub half_open_per_peer: usize,
}

impl Default for IkeLimits {
    fn default() -> IkeLimits {
        IkeLimits { cookie_threshold: 64, half_open_per_peer: 0 }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawIke {
    cookie_threshold: Option<Spanned<i64>>,
    half_open_per_peer: Option<Spanned<i64>>,
}

fn count(
    ctx: &Ctx<'_>,
    v: Option<&Spanned<i64>>,
    field: &'static str,
    default: usize,
) -> Result<usize, ConfigError> {
    let Some(v) = v else { return Ok(default) };
    usize::try_from(*v.get_ref())
        .ok()
        .filter(|n| *n <= 1_000_000)
        .ok_or_else(|| ctx.err(v.span(), field, "want a count from 0 to 1000000"))
}

pub(crate) fn parse(ctx: &Ctx<'_>, raw: Option<&RawIke>) -> Result<IkeLimits, ConfigError> {
    let d = IkeLimits::default();
    let Some(r) = raw else { return Ok(d) };
    Ok(IkeLimits {
        cookie_threshold: count(
            ctx,
            r.cookie_threshold.as_ref(),
            "cookie_threshold",
            d.cookie_threshold,
        )?,
        half_open_per_peer: count(
            ctx,
            r.half_open_per_peer.as_ref(),
            "half_open_per_peer",
            d.half_open_per_peer,
        )?,
    })
}
