//! What outlives the node's process: `[guard]`, whether the kernel keeps its protected prefixes
//! off every route but its TUN device (`crate::guard`), and `[state]`, the file that carries
//! the manual SAs' sequence numbers across restarts (`crate::keying::sequence`).

use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGuard {
    enabled: Option<Spanned<bool>>,
}

/// What `[guard]` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GuardConf {
    /// No `[guard]` or no `enabled`: on wherever a policy protects or discards something.
    #[default]
    Auto,
    /// `enabled = true`: the same as `Auto`, said explicitly.
    On,
    /// `enabled = false`: no guard; the node removes its own leftover one at start.
    Off,
}

impl GuardConf {
    /// Whether the guard is to be installed.
    pub fn enabled(self) -> bool {
        self != GuardConf::Off
    }
}

pub(crate) fn parse(raw: Option<&RawGuard>) -> GuardConf {
    match raw.and_then(|g| g.enabled.as_ref()).map(|e| *e.get_ref()) {
        None => GuardConf::Auto,
        Some(true) => GuardConf::On,
        Some(false) => GuardConf::Off,
    }
}

/// `[state]`: where the node keeps what must outlive it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawState {
    file: Spanned<String>,
}

/// The `[state] file` (relative to the config file's folder), if any: the outbound sequence
/// numbers of the manually keyed SAs (`crate::keying::sequence`).
pub(crate) fn state_file(
    ctx: &super::error::Ctx<'_>,
    raw: Option<&RawState>,
) -> Result<Option<std::path::PathBuf>, super::error::ConfigError> {
    let Some(r) = raw else { return Ok(None) };
    let path = std::path::PathBuf::from(r.file.get_ref());
    if r.file.get_ref().is_empty() {
        return Err(ctx.err(r.file.span(), "file", "want a path"));
    }
    Ok(Some(match std::path::Path::new(ctx.file).parent() {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    }))
}
