//! `[guard]`: whether the node keeps its protected prefixes off every route but its TUN device
//! in the kernel (`crate::guard`), also while it is not running.

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
