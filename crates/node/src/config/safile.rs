//! `[[sa]]` tables: manually keyed Security Associations in TOML, named after `ip xfrm state`
//! (RFC 4301 §4.4.2 lists what an SA holds). One parser serves the SA file of the pcap tools and the
//! node config, whose `config::sa` adds `direction` and `name` on top. Format: docs/sa-file.md.

pub use super::error::Problem;
use super::error::{ConfigError, Ctx};
use ipsec::{Lifetime, Mode, SaError, SaParams, SecurityAssociation, Spi, Time};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;
use zeroize::Zeroizing;

use crypto::{EncrAlg, EspSuite, IntegAlg};

/// One SA of the file, with where it was written and what the tools should say about it.
#[derive(Debug, Clone)]
pub struct SaEntry {
    /// The parameters, checked by building an `ipsec::SecurityAssociation` from them.
    pub params: SaParams,
    /// Line of the `[[sa]]` header.
    pub line: usize,
    /// Legacy and insecurity notes for the user.
    pub notes: Vec<Note>,
    /// BEET mode (RFC 7402 §5, node config only): ESP in transport mode between the inner
    /// addresses `src`/`dst`, whose IP header the carrier replaces by its own on the wire.
    pub beet: bool,
}

/// Something worth telling the user about an SA that is nonetheless accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// Uses an algorithm RFC 8221 keeps only for old peers (3DES, HMAC-SHA1).
    Legacy(String),
    /// Confidentiality-only ESP: no integrity protection (RFC 4303 §3.2, RFC 8221 §5).
    Insecure(String),
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Legacy(m) => write!(f, "legacy: {m}"),
            Note::Insecure(m) => write!(f, "warning: insecure: {m}"),
        }
    }
}

/// Why an SA file could not be loaded: the node config's error, so both name the file, line, column
/// and field in the same way.
pub type SaFileError = ConfigError;

/// What a reader of `[[sa]]` tables accepts beyond the common fields, and what it refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Accept `direction` and `name` (the node config reads them); otherwise they are errors.
    pub node_fields: bool,
    /// Refuse ESP without integrity instead of accepting it with a [`Note::Insecure`].
    pub require_integrity: bool,
}

impl Options {
    /// The SA file of the pcap tools: confidentiality-only ESP is accepted with a warning.
    pub const SA_FILE: Options = Options { node_fields: false, require_integrity: false };
    /// The node config: `direction` and `name`, and ESP must have integrity (RFC 4303 §3.2).
    pub const NODE: Options = Options { node_fields: true, require_integrity: true };
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    sa: Vec<Spanned<RawSa>>,
}

/// One `[[sa]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawSa {
    pub(crate) src: Spanned<String>,
    pub(crate) dst: Spanned<String>,
    proto: Spanned<String>,
    pub(crate) spi: Spanned<toml::Value>,
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
    /// Node config only: `in` or `out`.
    pub(crate) direction: Option<Spanned<String>>,
    /// Node config only: the name policies refer to.
    pub(crate) name: Option<Spanned<String>>,
    /// Node config only: the data-path lane (TUN queue) that owns the SA.
    pub(crate) lane: Option<Spanned<i64>>,
    /// Node config only: the peer's UDP endpoint (`ADDR:PORT`).
    pub(crate) peer: Option<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLifetimes {
    soft: Option<Lifetime>,
    hard: Option<Lifetime>,
}

/// Default replay window, as `ip xfrm` users commonly set it.
pub const DEFAULT_REPLAY_WINDOW: u32 = 128;

/// Reads and checks an SA file.
pub fn load(path: &Path) -> Result<Vec<SaEntry>, SaFileError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|source| SaFileError::Io { file: file.clone(), source })?;
    parse(&file, &text)
}

/// Parses and checks the text of an SA file; `file` is used in error messages.
pub fn parse(file: &str, text: &str) -> Result<Vec<SaEntry>, SaFileError> {
    let ctx = Ctx::new(file, text);
    let raw: RawFile = ctx.deserialize()?;
    if raw.sa.is_empty() {
        return Err(SaFileError::Empty { file: file.to_string() });
    }
    let mut seen: HashMap<(u32, u8), usize> = HashMap::new();
    let mut out = Vec::with_capacity(raw.sa.len());
    for sa in &raw.sa {
        let entry = entry(&ctx, sa, Options::SA_FILE)?;
        let key = (entry.params.spi.0, entry.params.protocol.number());
        if let Some(&first) = seen.get(&key) {
            return Err(duplicate(&ctx, sa.get_ref(), &entry.params, first));
        }
        seen.insert(key, entry.line);
        out.push(entry);
    }
    Ok(out)
}

/// Checks one `[[sa]]` table and builds its SA once, as the engine will; `direction` and `name`
/// are left to the caller (they are only read under [`Options::NODE`]).
pub(crate) fn entry(
    ctx: &Ctx<'_>,
    sa: &Spanned<RawSa>,
    opts: Options,
) -> Result<SaEntry, ConfigError> {
    Reader { ctx, opts }.entry(sa.get_ref(), ctx.header_line(sa.span().start))
}

/// The error for an SA whose SPI and protocol the SA at line `first` already uses.
pub(crate) fn duplicate(ctx: &Ctx<'_>, r: &RawSa, p: &SaParams, first: usize) -> ConfigError {
    let problem = Problem::Duplicate { spi: p.spi, proto: p.protocol.name(), line: first };
    ctx.field_err(r.spi.span(), "spi", problem)
}

/// An SPI as written: a 32-bit integer, or a string in decimal or `0x` hex.
pub(crate) fn spi_number(v: &toml::Value) -> Option<u32> {
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

/// Reads `[[sa]]` tables under one set of [`Options`].
struct Reader<'a> {
    ctx: &'a Ctx<'a>,
    opts: Options,
}

impl Reader<'_> {
    fn err(&self, span: Range<usize>, field: &'static str, problem: Problem) -> ConfigError {
        self.ctx.field_err(span, field, problem)
    }

    fn entry(&self, r: &RawSa, line: usize) -> Result<SaEntry, ConfigError> {
        if !self.opts.node_fields {
            for (f, name) in [(&r.direction, "direction"), (&r.name, "name"), (&r.peer, "peer")] {
                if let Some(f) = f {
                    let p = Problem::NotApplicable(
                        "\"direction\", \"name\", \"lane\" and \"peer\" are for the node config",
                    );
                    return Err(self.err(f.span(), name, p));
                }
            }
            if let Some(l) = &r.lane {
                let p = Problem::NotApplicable(
                    "\"direction\", \"name\", \"lane\" and \"peer\" are for the node config",
                );
                return Err(self.err(l.span(), "lane", p));
            }
        }
        let src = self.addr(&r.src, "src")?;
        let dst = self.addr(&r.dst, "dst")?;
        if src.is_ipv4() != dst.is_ipv4() {
            return Err(self.err(r.dst.span(), "dst", Problem::MixedVersions { src, dst }));
        }
        let spi = self.spi(&r.spi)?;
        let (mode, beet) = match r.mode.get_ref().as_str() {
            "tunnel" => (Mode::Tunnel, false),
            "transport" => (Mode::Transport, false),
            "beet" if self.opts.node_fields => {
                if r.proto.get_ref() != "esp" {
                    return Err(self.err(r.mode.span(), "mode", Problem::BeetNeedsEsp));
                }
                (Mode::Transport, true)
            }
            m => return Err(self.err(r.mode.span(), "mode", Problem::BadMode(m.to_string()))),
        };
        let (protocol, enc_key, auth_key, notes) = match r.proto.get_ref().as_str() {
            "esp" => self.esp(r)?,
            "ah" => self.ah(r)?,
            p => return Err(self.err(r.proto.span(), "proto", Problem::BadProto(p.to_string()))),
        };
        let replay_window = match &r.replay_window {
            None => DEFAULT_REPLAY_WINDOW,
            Some(w) => u32::try_from(*w.get_ref())
                .ok()
                .filter(|&v| v == 0 || (32..=ipsec::replay::MAX_WINDOW).contains(&v))
                .ok_or_else(|| {
                    self.err(w.span(), "replay-window", Problem::BadWindow(*w.get_ref()))
                })?,
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
            .map_err(|e| self.sa_error(r, e))?;
        Ok(SaEntry { params, line, notes, beet })
    }

    fn addr(&self, s: &Spanned<String>, field: &'static str) -> Result<IpAddr, ConfigError> {
        s.get_ref()
            .parse()
            .map_err(|_| self.err(s.span(), field, Problem::BadAddress(s.get_ref().clone())))
    }

    fn spi(&self, v: &Spanned<toml::Value>) -> Result<Spi, ConfigError> {
        let spi = spi_number(v.get_ref()).map(Spi).ok_or_else(|| {
            let shown = match v.get_ref() {
                toml::Value::String(s) => format!("{s:?}"),
                other => other.to_string(),
            };
            self.err(v.span(), "spi", Problem::BadSpi(shown))
        })?;
        if !spi.is_valid() {
            return Err(self.err(v.span(), "spi", Problem::Sa(SaError::ReservedSpi(spi))));
        }
        Ok(spi)
    }

    fn hex(
        &self,
        s: &Spanned<String>,
        field: &'static str,
    ) -> Result<Zeroizing<Vec<u8>>, ConfigError> {
        let t = s.get_ref().trim();
        let digits = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
        let digits: Zeroizing<String> =
            Zeroizing::new(digits.chars().filter(|c| *c != '_' && *c != ':').collect());
        hex::decode(digits.as_str()).map(Zeroizing::new).map_err(|e| {
            let why = match e {
                hex::FromHexError::OddLength => "odd number of hex digits".to_string(),
                hex::FromHexError::InvalidHexCharacter { c, index } => {
                    format!("{c:?} at position {index} is not a hex digit")
                }
                other => other.to_string(),
            };
            self.err(s.span(), field, Problem::BadHex(format!("not a hex key: {why}")))
        })
    }

    fn alg_name(s: &Spanned<String>) -> String {
        s.get_ref().trim().to_ascii_lowercase()
    }

    #[allow(clippy::type_complexity)]
    fn esp(
        &self,
        r: &RawSa,
    ) -> Result<(ipsec::sa::Protocol, Zeroizing<Vec<u8>>, Zeroizing<Vec<u8>>, Vec<Note>), ConfigError>
    {
        const ENC: &str = "aes128cbc, aes256cbc, 3des, null";
        const AEAD: &str = "aes128gcm, aes256gcm, chacha20poly1305";
        const AUTH: &str = "sha1, sha256, sha384, sha512";
        let (suite, enc_key, auth_key) = if let Some(a) = &r.aead {
            for (f, name) in [
                (&r.auth, "auth"),
                (&r.enc, "enc"),
                (&r.enc_key, "enc-key"),
                (&r.auth_key, "auth-key"),
            ] {
                if let Some(f) = f {
                    let p = Problem::AeadCombined { aead: a.get_ref().clone(), other: name };
                    return Err(self.err(f.span(), name, p));
                }
            }
            let encr = match EncrAlg::from_name(&Self::alg_name(a)) {
                Some(e @ EncrAlg::Aead(_)) => e,
                _ => return Err(self.unknown(a, "aead", AEAD)),
            };
            let key = r.key.as_ref().ok_or_else(|| {
                self.err(
                    a.span(),
                    "key",
                    Problem::Missing("key (cipher key || 4-byte salt) for the aead"),
                )
            })?;
            let k = self.hex(key, "key")?;
            self.key_len(
                key,
                "key",
                encr.name(),
                k.len(),
                encr.key_len(),
                " (cipher key + 4-byte salt)",
            )?;
            (EspSuite { encr, integ: IntegAlg::None }, k, Zeroizing::new(Vec::new()))
        } else {
            let e = r.enc.as_ref().ok_or_else(|| {
                self.err(
                    r.proto.span(),
                    "proto",
                    Problem::Missing("esp needs \"aead\", or \"enc\" (with \"auth\")"),
                )
            })?;
            if let Some(k) = &r.key {
                return Err(self.err(
                    k.span(),
                    "key",
                    Problem::NotApplicable("\"key\" is for aead; use \"enc-key\" and \"auth-key\""),
                ));
            }
            let encr = match EncrAlg::from_name(&Self::alg_name(e)) {
                Some(EncrAlg::Aead(_)) => {
                    return Err(self.err(
                        e.span(),
                        "enc",
                        Problem::NotApplicable("combined-mode ciphers go in \"aead\""),
                    ));
                }
                Some(x) => x,
                None => return Err(self.unknown(e, "enc", ENC)),
            };
            let integ = match &r.auth {
                None => IntegAlg::None,
                Some(a) => match IntegAlg::from_name(&Self::alg_name(a)) {
                    Some(i @ IntegAlg::Hmac(_)) => i,
                    _ => return Err(self.unknown(a, "auth", AUTH)),
                },
            };
            let suite = EspSuite::new(encr, integ).map_err(|_| {
                self.err(e.span(), "auth", Problem::Missing("null encryption needs \"auth\""))
            })?;
            if self.opts.require_integrity && suite.is_insecure() {
                return Err(self.err(
                    e.span(),
                    "auth",
                    Problem::IntegrityRequired(suite.to_string()),
                ));
            }
            let enc_key =
                self.opt_key(r.enc_key.as_ref(), "enc-key", encr.name(), encr.key_len(), e.span())?;
            let auth_key = self.opt_key(
                r.auth_key.as_ref(),
                "auth-key",
                integ.name(),
                integ.key_len(),
                e.span(),
            )?;
            (suite, enc_key, auth_key)
        };
        let mut notes = Vec::new();
        if suite.is_legacy() {
            notes.push(Note::Legacy(format!("{suite} is kept for old peers only (RFC 8221)")));
        }
        if suite.is_insecure() {
            notes.push(Note::Insecure(format!(
                "{suite} is ESP without integrity: packets can be forged (RFC 4303 §3.2)"
            )));
        }
        Ok((ipsec::sa::Protocol::Esp(suite), enc_key, auth_key, notes))
    }

    #[allow(clippy::type_complexity)]
    fn ah(
        &self,
        r: &RawSa,
    ) -> Result<(ipsec::sa::Protocol, Zeroizing<Vec<u8>>, Zeroizing<Vec<u8>>, Vec<Note>), ConfigError>
    {
        const AUTH: &str = "sha1, sha256, sha384, sha512, gmac128, gmac256";
        for (f, name) in
            [(&r.aead, "aead"), (&r.enc, "enc"), (&r.enc_key, "enc-key"), (&r.key, "key")]
        {
            if let Some(f) = f {
                return Err(self.err(
                    f.span(),
                    name,
                    Problem::NotApplicable("ah takes only \"auth\" and \"auth-key\""),
                ));
            }
        }
        let a = r.auth.as_ref().ok_or_else(|| {
            self.err(r.proto.span(), "auth", Problem::Missing("ah needs \"auth\""))
        })?;
        let integ = match IntegAlg::from_name(&Self::alg_name(a)) {
            Some(IntegAlg::None) | None => return Err(self.unknown(a, "auth", AUTH)),
            Some(i) => i,
        };
        let salt = if matches!(integ, IntegAlg::Aes128Gmac | IntegAlg::Aes256Gmac) {
            " (AES key + 4-byte salt)"
        } else {
            ""
        };
        let k = r
            .auth_key
            .as_ref()
            .ok_or_else(|| self.err(a.span(), "auth-key", Problem::Missing("auth-key")))?;
        let key = self.hex(k, "auth-key")?;
        self.key_len(k, "auth-key", integ.name(), key.len(), integ.key_len(), salt)?;
        let mut notes = Vec::new();
        if integ.is_legacy() {
            notes.push(Note::Legacy(format!(
                "ah {} is kept for old peers only (RFC 8221)",
                integ.name()
            )));
        }
        Ok((ipsec::sa::Protocol::Ah(integ), Zeroizing::new(Vec::new()), key, notes))
    }

    fn unknown(
        &self,
        s: &Spanned<String>,
        field: &'static str,
        known: &'static str,
    ) -> ConfigError {
        self.err(s.span(), field, Problem::UnknownAlgorithm { name: s.get_ref().clone(), known })
    }

    fn key_len(
        &self,
        s: &Spanned<String>,
        field: &'static str,
        alg: &str,
        got: usize,
        want: usize,
        detail: &str,
    ) -> Result<(), ConfigError> {
        if got == want {
            return Ok(());
        }
        let p = Problem::KeyLength { alg: alg.to_string(), want, got, detail: detail.to_string() };
        Err(self.err(s.span(), field, p))
    }

    /// A key that must be present when the algorithm needs one and absent (or empty) otherwise.
    fn opt_key(
        &self,
        s: Option<&Spanned<String>>,
        field: &'static str,
        alg: &str,
        want: usize,
        anchor: Range<usize>,
    ) -> Result<Zeroizing<Vec<u8>>, ConfigError> {
        match s {
            None if want == 0 => Ok(Zeroizing::new(Vec::new())),
            None => Err(self.err(
                anchor,
                field,
                Problem::Missing(if field == "enc-key" { "enc-key" } else { "auth-key" }),
            )),
            Some(s) => {
                let k = self.hex(s, field)?;
                self.key_len(s, field, alg, k.len(), want, "")?;
                Ok(k)
            }
        }
    }

    /// Maps the engine's refusal to the field it concerns.
    fn sa_error(&self, r: &RawSa, e: SaError) -> ConfigError {
        let key_span = |name: &str| -> (&'static str, Range<usize>) {
            let pick = |o: &Option<Spanned<String>>| o.as_ref().map(|s| s.span());
            match name {
                "enc_key" => match (pick(&r.key), pick(&r.enc_key)) {
                    (Some(s), _) => ("key", s),
                    (None, Some(s)) => ("enc-key", s),
                    (None, None) => ("enc", pick(&r.enc).unwrap_or(r.proto.span())),
                },
                _ => ("auth-key", pick(&r.auth_key).or(pick(&r.auth)).unwrap_or(r.proto.span())),
            }
        };
        let (field, span) = match &e {
            SaError::ReservedSpi(_) => ("spi", r.spi.span()),
            SaError::MixedVersions { .. } => ("dst", r.dst.span()),
            SaError::Window(_) => {
                ("replay-window", r.replay_window.as_ref().map_or(r.spi.span(), |w| w.span()))
            }
            SaError::AhWithoutInteg => ("auth", r.proto.span()),
            SaError::KeyLength { field, .. } => key_span(field),
            SaError::Crypto(_) => {
                key_span(if r.proto.get_ref() == "ah" { "auth_key" } else { "enc_key" })
            }
        };
        self.err(span, field, Problem::Sa(e))
    }
}
