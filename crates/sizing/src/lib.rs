//! Sizing from calibrated costs, the way the seeds size their systems: measure what
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

pub mod agree;
pub mod answer;
pub mod capacity;
pub mod error;
pub mod examples;
pub mod load;
pub mod model;
pub mod profile;
pub mod rounds;
pub mod workload;

pub use answer::{Answer, Component};
pub use error::SizingError;
pub use model::size;
pub use profile::Profile;
pub use workload::{PacketMix, Workload};
