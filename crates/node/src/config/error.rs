//! Errors of the node config and the SA file: every one names the file, line, column and
//! field, so an operator can go straight to what is wrong. `Ctx` turns byte spans into positions.

use ipsec::{SaError, Spi};
use serde::de::DeserializeOwned;
use std::net::IpAddr;
use std::ops::Range;

/// Why a configuration file (or an SA file, `crate::config::safile`) was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// File name.
        file: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// TOML syntax, unknown or missing fields, wrong types.
    #[error("{file}:{line}:{col}: {message}")]
    Toml {
        /// File name.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// The parser's message.
        message: String,
    },
    /// A field's value is wrong.
    #[error("{file}:{line}:{col}: field \"{field}\": {problem}")]
    Field {
        /// File name.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// Field name as written in the file.
        field: &'static str,
        /// What is wrong.
        problem: Problem,
    },
    /// An SA file without any `[[sa]]` (the node config may have none).
    #[error("{file}: no [[sa]] entries")]
    Empty {
        /// File name.
        file: String,
    },
}

impl ConfigError {
    /// The field named by the error, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            ConfigError::Field { field, .. } => Some(field),
            _ => None,
        }
    }
    /// The line named by the error, if any.
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::Field { line, .. } | ConfigError::Toml { line, .. } => Some(*line),
            ConfigError::Io { .. } | ConfigError::Empty { .. } => None,
        }
    }
}

/// What is wrong with one field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// Not an IPv4/IPv6 address.
    #[error("{0:?} is not an IP address")]
    BadAddress(String),
    /// src and dst of different families.
    #[error("src {src} and dst {dst} are of different IP versions")]
    MixedVersions {
        /// Source.
        src: IpAddr,
        /// Destination.
        dst: IpAddr,
    },
    /// Not "esp" or "ah".
    #[error("{0:?} is not a protocol; use \"esp\" or \"ah\"")]
    BadProto(String),
    /// Not "tunnel" or "transport" (or, in the node config, "beet").
    #[error("{0:?} is not a mode; use \"tunnel\" or \"transport\" (or \"beet\" in a node config)")]
    BadMode(String),
    /// BEET with AH: RFC 7402 defines BEET for ESP only (AH would cover the inner addresses).
    #[error("BEET is defined for ESP only (RFC 7402 §5)")]
    BeetNeedsEsp,
    /// SPI not a 32-bit number.
    #[error("{0} is not an SPI: want a 32-bit integer or a hex string like \"0x00001000\"")]
    BadSpi(String),
    /// Hex string did not decode.
    #[error("{0}")]
    BadHex(String),
    /// Algorithm name unknown or not allowed here.
    #[error("unknown algorithm {name:?} (known: {known})")]
    UnknownAlgorithm {
        /// What was written.
        name: String,
        /// The accepted names.
        known: &'static str,
    },
    /// `aead` with `auth` or `enc`.
    #[error("{aead} is a combined-mode (AEAD) cipher: it takes no separate \"{other}\"")]
    AeadCombined {
        /// The AEAD.
        aead: String,
        /// The other field.
        other: &'static str,
    },
    /// A field required by the other fields is absent.
    #[error("missing: {0}")]
    Missing(&'static str),
    /// A field that does not apply to this SA.
    #[error("not used here: {0}")]
    NotApplicable(&'static str),
    /// Wrong key length.
    #[error("{alg} needs a {want}-byte key{detail}, got {got} bytes")]
    KeyLength {
        /// Algorithm.
        alg: String,
        /// Required bytes.
        want: usize,
        /// Supplied bytes.
        got: usize,
        /// E.g. " (16-byte key + 4-byte salt)".
        detail: String,
    },
    /// Replay window out of range.
    #[error("{0} is out of range (0 disables anti-replay, else 32..=65536)")]
    BadWindow(i64),
    /// Two SAs with the same SPI and protocol.
    #[error("spi {spi} ({proto}) is already used by the SA at line {line}")]
    Duplicate {
        /// SPI.
        spi: Spi,
        /// "esp" or "ah".
        proto: &'static str,
        /// Line of the first one.
        line: usize,
    },
    /// ESP without integrity where the reader requires it ([`super::safile::Options::require_integrity`]).
    #[error(
        "missing: {0} is ESP without integrity, so packets can be forged (RFC 4303 §3.2); add \"auth\""
    )]
    IntegrityRequired(String),
    /// The engine refused the SA.
    #[error("{0}")]
    Sa(SaError),
    /// Any other problem of a config field (the node config's non-SA tables).
    #[error("{0}")]
    Other(String),
}

/// The text being parsed, for positions in error messages.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub file: &'a str,
    pub text: &'a str,
    /// Offsets where each line starts, built on the first position asked for: every
    /// `[[sa]]` and `[[home-agent.mobile-node]]` records its line, and counting newlines from
    /// the start each time made a config of thousands of mobile nodes take seconds to load
    /// (quadratic in its length).
    line_starts: std::cell::OnceCell<Vec<usize>>,
}

impl<'a> Ctx<'a> {
    pub fn new(file: &'a str, text: &'a str) -> Ctx<'a> {
        Ctx { file, text, line_starts: std::cell::OnceCell::new() }
    }

    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let starts = self.line_starts.get_or_init(|| {
            std::iter::once(0)
                .chain(
                    self.text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1),
                )
                .collect()
        });
        // The last line start at or before `offset` (starts[0] = 0 is always one).
        let line = starts.partition_point(|&s| s <= offset).max(1);
        let start = starts.get(line - 1).copied().unwrap_or(0);
        let col = self.text.get(start..offset).map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }

    /// Line of the `[[table]]` header of an array element: toml spans such an element from its header.
    pub fn header_line(&self, offset: usize) -> usize {
        self.line_col(offset).0
    }

    /// The whole text as `T`; syntax, unknown or missing fields and wrong types are `Toml` errors.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        toml::from_str(self.text).map_err(|e| {
            let (line, col) = self.line_col(e.span().map_or(0, |s| s.start));
            ConfigError::Toml {
                file: self.file.to_string(),
                line,
                col,
                message: e.message().trim().to_string(),
            }
        })
    }

    /// A `Field` error at `span`.
    pub fn field_err(
        &self,
        span: Range<usize>,
        field: &'static str,
        problem: Problem,
    ) -> ConfigError {
        let (line, col) = self.line_col(span.start);
        ConfigError::Field { file: self.file.to_string(), line, col, field, problem }
    }

    /// A `Field` error at `span`, described in words.
    pub fn err(
        &self,
        span: Range<usize>,
        field: &'static str,
        problem: impl ToString,
    ) -> ConfigError {
        self.field_err(span, field, Problem::Other(problem.to_string()))
    }
}
