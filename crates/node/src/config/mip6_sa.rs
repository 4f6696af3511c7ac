//! The SAs of a Mobile IPv6 mobile node and its home agent, as both roles' config sections
//! name them (docs/mip6.md): `sa-in`/`sa-out` protect Binding Updates and Acknowledgements
//! (ESP transport mode, RFC 3776 §4.1), `tunnel-in`/`tunnel-out` the traffic to and from the
//! home address (ESP tunnel mode, RFC 4877 §4.3 / RFC 3776 §4.4). Each is an `[[sa]]` table of
//! docs/sa-file.md read by the SA file's parser; their `src` and `dst` name the home address and
//! the home agent (the SA's selectors, RFC 3776 §4.1), never the care-of address, which changes:
//! a tunnel SA's outer destination follows the binding.

use super::connection::{ConnectionConf, RawConnection};
use super::error::{ConfigError, Ctx};
use super::safile::{self, Options, RawSa};
use ipsec::{Mode, SaParams};
use std::net::{IpAddr, Ipv6Addr};
use toml::Spanned;

/// Reads `sa` (the table called `field`) and checks that it is ESP in `mode` from `src` to
/// `dst`; `direction`, `name`, `lane` and `peer` are refused (the role places the SA itself).
pub(crate) fn read(
    ctx: &Ctx<'_>,
    sa: &Spanned<RawSa>,
    field: &'static str,
    mode: Mode,
    src: Ipv6Addr,
    dst: Ipv6Addr,
) -> Result<SaParams, ConfigError> {
    let e = safile::entry(ctx, sa, Options::NODE)?;
    let raw = sa.get_ref();
    for (what, span) in [("direction", &raw.direction), ("name", &raw.name)] {
        if let Some(s) = span {
            return Err(ctx.err(s.span(), what, format!("not used in {field}")));
        }
    }
    if let Some(l) = &raw.lane {
        return Err(ctx.err(l.span(), "lane", format!("not used in {field}")));
    }
    if let Some(p) = &raw.peer {
        return Err(ctx.err(p.span(), "peer", format!("not used in {field}")));
    }
    let (rfc, want) = match mode {
        Mode::Transport => ("RFC 3776", "transport"),
        Mode::Tunnel => ("RFC 4877", "tunnel"),
    };
    if !matches!(e.params.protocol, ipsec::Protocol::Esp(_)) {
        return Err(ctx.err(sa.span(), "proto", format!("{field}: {rfc} wants esp")));
    }
    if e.params.mode != mode || e.beet {
        return Err(ctx.err(sa.span(), "mode", format!("{field}: {rfc} wants {want}")));
    }
    if e.params.src != IpAddr::V6(src) {
        return Err(ctx.err(
            raw.src.span(),
            "src",
            format!("{field} goes from {src} (RFC 3776 §4.1: home address and home agent)"),
        ));
    }
    if e.params.dst != IpAddr::V6(dst) {
        return Err(ctx.err(
            raw.dst.span(),
            "dst",
            format!("{field} goes to {dst} (RFC 3776 §4.1: home address and home agent)"),
        ));
    }
    Ok(e.params)
}

/// The tunnel pair `(tunnel-in, tunnel-out)`: both or neither (`at` spans the section);
/// tunnel-in goes from `them` to `us`, tunnel-out back.
pub(crate) fn tunnel_pair(
    ctx: &Ctx<'_>,
    at: std::ops::Range<usize>,
    tin: Option<&Spanned<RawSa>>,
    tout: Option<&Spanned<RawSa>>,
    them: Ipv6Addr,
    us: Ipv6Addr,
) -> Result<Option<(SaParams, SaParams)>, ConfigError> {
    match (tin, tout) {
        (None, None) => Ok(None),
        (Some(i), Some(o)) => {
            let tin = read(ctx, i, "tunnel-in", Mode::Tunnel, them, us)?;
            let tout = read(ctx, o, "tunnel-out", Mode::Tunnel, us, them)?;
            Ok(Some((tin, tout)))
        }
        (Some(_), None) => Err(ctx.err(at, "tunnel-out", "tunnel-in needs tunnel-out")),
        (None, Some(_)) => Err(ctx.err(at, "tunnel-in", "tunnel-out needs tunnel-in")),
    }
}

/// How a mobile node's signalling SAs are keyed.
#[derive(Debug, Clone)]
pub enum SignallingKeys {
    /// `sa-in` and `sa-out` in the config (the seed's setup, RFC 3776 §4.1 manual keying).
    Manual {
        /// The SA we receive Binding Updates (or Acknowledgements) in.
        sa_in: Box<SaParams>,
        /// The SA we send in.
        sa_out: Box<SaParams>,
    },
    /// `ike = "NAME"`: the CHILD SA of `[[connection]]` NAME (with `mip6 = "signalling"`,
    /// RFC 4877 §4.4), once IKEv2 has made it.
    Ike {
        /// The connection's name.
        connection: String,
    },
}

impl SignallingKeys {
    /// The connection's name, if keyed by IKEv2.
    pub fn ike_connection(&self) -> Option<&str> {
        match self {
            SignallingKeys::Ike { connection } => Some(connection),
            SignallingKeys::Manual { .. } => None,
        }
    }

    /// The manual pair `(sa_in, sa_out)`, if keyed by hand.
    pub fn manual(&self) -> Option<(&SaParams, &SaParams)> {
        match self {
            SignallingKeys::Manual { sa_in, sa_out } => Some((sa_in, sa_out)),
            SignallingKeys::Ike { .. } => None,
        }
    }
}

/// `sa-in` and `sa-out` (sa-in from `them` to `us`, sa-out back), or `ike` instead of both,
/// naming one of `ike_children`, the connections with a `mip6 = "signalling"` child (`at`
/// spans the section).
pub(crate) fn signalling_keys(
    ctx: &Ctx<'_>,
    at: std::ops::Range<usize>,
    sa_in: Option<&Spanned<RawSa>>,
    sa_out: Option<&Spanned<RawSa>>,
    ike: Option<&Spanned<String>>,
    ike_children: &[String],
    (them, us): (Ipv6Addr, Ipv6Addr),
) -> Result<SignallingKeys, ConfigError> {
    match (sa_in, sa_out, ike) {
        (Some(i), Some(o), None) => Ok(SignallingKeys::Manual {
            sa_in: Box::new(read(ctx, i, "sa-in", Mode::Transport, them, us)?),
            sa_out: Box::new(read(ctx, o, "sa-out", Mode::Transport, us, them)?),
        }),
        (None, None, Some(c)) if ike_children.contains(c.get_ref()) => {
            Ok(SignallingKeys::Ike { connection: c.get_ref().clone() })
        }
        (None, None, Some(c)) => Err(ctx.err(
            c.span(),
            "ike",
            format!(
                "{:?}: no [[connection]] of that name with a child of mip6 = \"signalling\"",
                c.get_ref()
            ),
        )),
        (_, _, Some(c)) => Err(ctx.err(c.span(), "ike", "ike replaces sa-in and sa-out")),
        (None, _, None) => Err(ctx.err(at, "sa-in", "want sa-in and sa-out, or ike = \"NAME\"")),
        (Some(_), None, None) => Err(ctx.err(at, "sa-out", "sa-in needs sa-out")),
    }
}

/// RFC 4877 §4.4 across sections: a `mip6 = "signalling"` connection keys a mobile node, so it
/// needs a `[home-agent]` or `[mobile-node]` (`named`: the connections their mobile nodes name,
/// `None` without either), and exactly one mobile node names it (its identity vouches for one
/// home address).
pub(super) fn check_connections(
    ctx: &Ctx<'_>,
    raw: &[Spanned<RawConnection>],
    conns: &[ConnectionConf],
    named: Option<&[&str]>,
) -> Result<(), ConfigError> {
    for (c, conn) in raw.iter().zip(conns) {
        let signalling = conn.children.iter().any(|ch| ch.mip6);
        let Some(named) = named else {
            if signalling {
                return Err(ctx.err(
                    c.span(),
                    "mip6",
                    "mip6 = \"signalling\" keys a [home-agent] or a [mobile-node]; this node has \
                     neither",
                ));
            }
            continue;
        };
        let n = named.iter().filter(|n| **n == conn.name).count();
        if signalling && n == 0 {
            let why = format!(
                "connection {:?} keys no mobile node: name it with ike = {:?}",
                conn.name, conn.name
            );
            return Err(ctx.err(c.span(), "mip6", why));
        }
        if n > 1 {
            let why = format!(
                "{n} mobile nodes name connection {:?}; one connection keys one home address",
                conn.name
            );
            return Err(ctx.err(c.span(), "ike", why));
        }
    }
    Ok(())
}
