//! Sizing from calibrated costs (issue 14), the way the seeds size their systems: measure what
//! each unit of work costs on a machine ([`Profile`]), describe what a site must carry
//! ([`Workload`]), and add it up ([`size`]): CPU seconds per second for each part, how many cores
//! that is at a target utilisation, which part dominates, and whether the link rather than the
//! CPU is the bound ([`Answer`]).
//!
//! Pure computation, no I/O: `hipsec lab calibrate` writes profiles, `hipsec size` reads one
//! (from this machine or another) and prints the answer in words, as a table or as JSON.
//!
//! The model and its assumptions (stated again in [`model`]): costs add linearly; a packet's cost
//! is a fixed part plus a part per byte; control-plane work (handshakes, rekeys, binding updates)
//! is a cost per event times its rate; work spreads over cores perfectly except that one SA's
//! packets stay on one lane (one core), which bounds a single tunnel's rate.

pub mod answer;
pub mod examples;
pub mod model;
pub mod profile;
pub mod workload;

pub use answer::{Answer, Component};
pub use model::size;
pub use profile::Profile;
pub use workload::{PacketMix, Workload};

/// What can be wrong with a profile or a workload: the field and why.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SizingError {
    /// A field's value is out of range or names something the profile lacks.
    #[error("{field}: {why}")]
    Field {
        /// The field, as written in the JSON (`workload.suite`, `profile.suites.aes128gcm`).
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// The text is not the JSON expected.
    #[error("{what}: {why}")]
    Parse {
        /// Which document.
        what: String,
        /// serde's message (with line and column).
        why: String,
    },
}

impl SizingError {
    pub(crate) fn field(field: impl Into<String>, why: impl Into<String>) -> SizingError {
        SizingError::Field { field: field.into(), why: why.into() }
    }
}
