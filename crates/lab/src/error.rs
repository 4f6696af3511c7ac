//! The lab's error type: every variant names the command, field or option at fault.

use std::io;

/// Everything that can go wrong while building a topology, running traffic or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// Namespaces and veth links need privileges this process does not have.
    #[error(
        "the lab needs root: creating network namespaces and veth links requires CAP_SYS_ADMIN and \
         CAP_NET_ADMIN (run it as root, e.g. with sudo); {detail}"
    )]
    NotRoot { detail: String },
    /// A command could not be started at all (missing binary, ...).
    #[error("cannot start `{cmd}`: {source}")]
    Spawn { cmd: String, source: io::Error },
    /// A command ran and failed.
    #[error("`{cmd}` failed ({status}): {stderr}")]
    Command { cmd: String, status: String, stderr: String },
    /// A file or socket operation failed.
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    /// Output of a tool or a file did not parse; `field` names what was being read.
    #[error("cannot parse {field}: {reason}")]
    Parse { field: String, reason: String },
    /// A user-supplied option is invalid; `field` is the option's name.
    #[error("invalid option {field}: {reason}")]
    InvalidOption { field: String, reason: String },
    /// `lab run NAME` with a name that is not in `lab list`.
    #[error("unknown scenario `{name}` (known: {known})")]
    UnknownScenario { name: String, known: String },
    /// A mode whose implementation is not there yet.
    #[error("mode {mode} is pending: {reason}")]
    ModePending { mode: String, reason: String },
    /// A hipsec node of a protected mode failed to start, to bring the tunnel up, or died;
    /// `detail` ends with the tail of the node's stderr.
    #[error("mode {mode}: hipsec node {node}: {detail}")]
    Node { mode: String, node: String, detail: String },
    /// The traffic engine reported an error or an impossible result.
    #[error("traffic test {test} failed: {reason}")]
    Traffic { test: String, reason: String },
    /// The run was interrupted (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
}

impl LabError {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        LabError::Io { what: what.into(), source }
    }

    pub(crate) fn parse(field: impl Into<String>, reason: impl Into<String>) -> Self {
        LabError::Parse { field: field.into(), reason: reason.into() }
    }
}
