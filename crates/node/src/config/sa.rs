//! `[[sa]]` tables of the node config: the SA file's format (docs/sa-file.md), read by `safile`
//! with [`Options::NODE`] (integrity required), plus `direction` and `name`. RFC 4301 §4.4.2 lists
//! what an SA holds.

use super::error::{ConfigError, Ctx, Problem};
use super::safile::{self, Note, Options, RawSa};
use ipsec::SaParams;
use std::net::{IpAddr, SocketAddr};
use toml::Spanned;

pub use super::safile::DEFAULT_REPLAY_WINDOW;

/// Default UDP port for ESP in UDP (RFC 3948 §2, shared with IKE NAT traversal).
pub const DEFAULT_UDP_PORT: u16 = 4500;

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
    /// Data-path lane that owns it (`lane`, default 0; see `crate::datapath::lanes`).
    pub lane: usize,
    /// BEET mode (RFC 7402 §5): transport mode between inner addresses that never travel; the
    /// carrier writes its own addresses on the wire and the receiver restores the SA's.
    pub beet: bool,
    /// The peer's UDP endpoint for ESP in UDP (`peer`): where an outbound SA's packets go and
    /// where an inbound SA's come from (NAT rebinding moves it). None: `[network] peer`, else
    /// the SA's outer address on the carrier's port (`keying::manual::default_endpoint`).
    pub peer: Option<std::net::SocketAddr>,
    /// Legacy notes for the user (insecure SAs are refused, not noted).
    pub notes: Vec<Note>,
}

/// Checks every `[[sa]]`: fields, key lengths, unique names and (per direction) SPIs.
pub(crate) fn parse_all(ctx: &Ctx<'_>, raw: &[Spanned<RawSa>]) -> Result<Vec<SaConf>, ConfigError> {
    let mut out: Vec<SaConf> = Vec::with_capacity(raw.len());
    for s in raw {
        let r = s.get_ref();
        let direction = direction(ctx, s)?;
        let e = safile::entry(ctx, s, Options::NODE)?;
        let name = r.name.as_ref().map(|n| n.get_ref().clone());
        let lane = match &r.lane {
            None => 0,
            Some(l) => usize::try_from(*l.get_ref())
                .ok()
                .filter(|&l| l < MAX_LANES)
                .ok_or_else(|| ctx.err(l.span(), "lane", "want a lane number 0.."))?,
        };
        // A name is unique per lane: each lane has its own SA of that name (`crate::datapath::lanes`).
        if let (Some(n), Some(span)) = (&name, r.name.as_ref().map(|n| n.span())) {
            if let Some(prev) = out.iter().find(|o| o.name.as_ref() == Some(n) && o.lane == lane) {
                let what = if lane == 0 { String::new() } else { format!(" in lane {lane}") };
                return Err(ctx.err(
                    span,
                    "name",
                    format!("already used{what} at line {}", prev.line),
                ));
            }
        }
        let key = (direction, e.params.spi, e.params.protocol.number());
        if let Some(prev) =
            out.iter().find(|o| (o.direction, o.params.spi, o.params.protocol.number()) == key)
        {
            return Err(safile::duplicate(ctx, r, &e.params, prev.line));
        }
        out.push(SaConf {
            name,
            direction,
            params: e.params,
            line: e.line,
            lane,
            beet: e.beet,
            peer: r.peer.as_ref().map(|p| endpoint(ctx, p, "peer")).transpose()?,
            notes: e.notes,
        });
    }
    Ok(out)
}

fn direction(ctx: &Ctx<'_>, s: &Spanned<RawSa>) -> Result<Direction, ConfigError> {
    let Some(d) = &s.get_ref().direction else {
        let p = Problem::Missing("direction (\"in\" or \"out\")");
        return Err(ctx.field_err(s.span(), "direction", p));
    };
    match d.get_ref().as_str() {
        "in" => Ok(Direction::In),
        "out" => Ok(Direction::Out),
        x => Err(ctx.err(d.span(), "direction", format!("{x:?}: use \"in\" or \"out\""))),
    }
}

/// Finds the SA a policy names in `field`, by `name` or by SPI; it must go in direction `dir`.
pub(crate) fn resolve(
    ctx: &Ctx<'_>,
    s: &Spanned<toml::Value>,
    sas: &[SaConf],
    dir: Direction,
    field: &'static str,
) -> Result<usize, ConfigError> {
    let by_spi = |spi: u32| sas.iter().position(|c| c.direction == dir && c.params.spi.0 == spi);
    // By name: lane 0's SA of that name (the others are its counterparts, `crate::datapath::lanes`).
    let found = match s.get_ref() {
        toml::Value::String(n) => sas
            .iter()
            .position(|c| c.name.as_deref() == Some(n.as_str()) && c.lane == 0)
            .or_else(|| safile::spi_number(s.get_ref()).and_then(by_spi)),
        v => safile::spi_number(v).and_then(by_spi),
    };
    let i =
        found.ok_or_else(|| ctx.err(s.span(), field, format!("no SA named {}", s.get_ref())))?;
    if sas[i].direction != dir {
        let want = if dir == Direction::Out { "outbound" } else { "inbound" };
        return Err(ctx.err(s.span(), field, format!("{field} lists {want} SAs only")));
    }
    Ok(i)
}

/// With the raw IP carrier the engine's outer header goes on the wire as it is (IPv4,
/// IP_HDRINCL) or gives the destination (IPv6), so every SA must carry the carrier's addresses:
/// `local` → `peer` outbound, `peer` → `local` inbound. An SA between other addresses (say,
/// transport mode between the TUN addresses) would be routed back into the TUN device and round
/// again; over UDP the carrier's own header replaces it, so there it is fine.
pub(crate) fn check_raw_addresses(
    ctx: &Ctx<'_>,
    raw: &[Spanned<RawSa>],
    sas: &[SaConf],
    local: std::net::IpAddr,
    peer: std::net::IpAddr,
) -> Result<(), ConfigError> {
    // BEET SAs carry inner addresses by definition; the carrier swaps in its own.
    for (r, c) in raw.iter().zip(sas).filter(|(_, c)| !c.beet) {
        let (want_src, want_dst) =
            if c.direction == Direction::Out { (local, peer) } else { (peer, local) };
        let r = r.get_ref();
        for (field, span, got, want) in [
            ("src", r.src.span(), c.params.src, want_src),
            ("dst", r.dst.span(), c.params.dst, want_dst),
        ] {
            if got != want {
                return Err(ctx.err(
                    span,
                    field,
                    format!(
                        "{got}: transport = \"raw\" puts the SA's addresses on the wire, so this \
                         {} SA needs {field} = \"{want}\" (for other addresses use \
                         transport = \"udp\")",
                        if c.direction == Direction::Out { "outbound" } else { "inbound" }
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Most lanes (TUN queues) a node runs.
pub const MAX_LANES: usize = 16;

/// The SA of lane `lane` that stands for SA `i` (lane 0's): same name and direction. SA `i`
/// itself for lane 0.
pub fn counterpart(sas: &[SaConf], i: usize, lane: usize) -> Option<usize> {
    let sa = sas.get(i)?;
    if sa.lane == lane {
        return Some(i);
    }
    let name = sa.name.as_ref()?;
    sas.iter().position(|c| {
        c.lane == lane && c.direction == sa.direction && c.name.as_ref() == Some(name)
    })
}

/// `ADDR:PORT`, `[V6]:PORT`, or a bare address (port 4500).
pub(crate) fn endpoint(
    ctx: &Ctx<'_>,
    s: &Spanned<String>,
    field: &'static str,
) -> Result<SocketAddr, ConfigError> {
    let t = s.get_ref().trim();
    if let Ok(a) = t.parse::<SocketAddr>() {
        return Ok(a);
    }
    t.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, DEFAULT_UDP_PORT)).map_err(|_| {
        ctx.err(s.span(), field, format!("{t:?} is not ADDR, ADDR:PORT or [V6ADDR]:PORT"))
    })
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSas {
    #[serde(default)]
    sa: Vec<Spanned<RawSa>>,
}

/// `[[sa]]` tables given while the node runs (`hipsec sa add`): the node config's fields, and
/// the same checks (`direction` required, integrity required, unique keys).
pub fn parse_runtime(file: &str, text: &str) -> Result<Vec<SaConf>, ConfigError> {
    let ctx = Ctx::new(file, text);
    let raw: RawSas = ctx.deserialize()?;
    parse_all(&ctx, &raw.sa)
}

/// An SA named in a request: by SPI, and for an outbound SA (whose SPI the peer chose) its
/// destination where the SPI alone is ambiguous; the protocol defaults to ESP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaRef {
    /// SPI.
    pub spi: u32,
    /// IP protocol (50 or 51).
    pub proto: u8,
    /// Destination address (outbound SAs).
    pub dst: Option<IpAddr>,
}

/// Reads an SA reference: an SPI (`4096`, `"0x1000"`) or a table `{ spi, proto, dst }`.
pub(crate) fn sa_ref(
    ctx: &Ctx<'_>,
    v: &Spanned<toml::Value>,
    field: &'static str,
) -> Result<SaRef, ConfigError> {
    let bad = |m: &str| ctx.err(v.span(), field, m);
    let want = "want an SPI (4096 or \"0x1000\") or { spi, dst, proto }";
    match v.get_ref() {
        toml::Value::Table(t) => {
            if let Some(k) = t.keys().find(|k| !matches!(k.as_str(), "spi" | "dst" | "proto")) {
                return Err(bad(&format!("unknown key {k:?}; {want}")));
            }
            let spi = t.get("spi").and_then(safile::spi_number).ok_or_else(|| bad(want))?;
            let proto = match t.get("proto").map(|p| p.as_str()) {
                None | Some(Some("esp")) => wire::proto::ESP,
                Some(Some("ah")) => wire::proto::AH,
                _ => return Err(bad("proto: want \"esp\" or \"ah\"")),
            };
            let dst = match t.get("dst") {
                None => None,
                Some(d) => Some(
                    d.as_str()
                        .and_then(|s| s.parse::<IpAddr>().ok())
                        .ok_or_else(|| bad("dst: want an IP address"))?,
                ),
            };
            Ok(SaRef { spi, proto, dst })
        }
        other => {
            let spi = safile::spi_number(other).ok_or_else(|| bad(want))?;
            Ok(SaRef { spi, proto: wire::proto::ESP, dst: None })
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRef {
    r: Spanned<toml::Value>,
}

/// Reads the SA reference in `r = ...` (an SPI or `{ spi, dst, proto }`).
pub fn parse_ref(file: &str, text: &str) -> Result<SaRef, ConfigError> {
    let ctx = Ctx::new(file, text);
    let raw: RawRef = ctx.deserialize()?;
    sa_ref(&ctx, &raw.r, "spi")
}
