//! Why a node stopped or did not start.

use crate::config::ConfigError;
use crate::config::filter::FilterError;
use ipsec::EngineError;

/// Why the node stopped or did not start.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The configuration file is wrong; nothing was started.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The engine refused an SA or a policy.
    #[error("{file}: SA or policy at line {line}: {source}")]
    Engine {
        /// Config file.
        file: String,
        /// Line of the `[[sa]]` or `[[policy]]`.
        line: usize,
        /// What the engine said.
        source: EngineError,
    },
    /// A device, socket or signal handler could not be set up, or the data path failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The packet filter's rule file could not be loaded.
    #[error("filter: {0}")]
    Filter(FilterError),
    /// The log filter (`--log`, `RUST_LOG` or `[log] filter`) does not parse.
    #[error("{0}")]
    Log(String),
    /// The link MTU leaves no room for the IPsec overhead.
    #[error("link mtu {link} minus IPsec overhead {overhead} is below 576")]
    MtuTooSmall {
        /// Link MTU.
        link: u16,
        /// Overhead.
        overhead: usize,
    },
}

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> NodeError {
    let what = what.into();
    move |source| NodeError::Io { what, source }
}
