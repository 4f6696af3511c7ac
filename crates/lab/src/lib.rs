//! hipsec's performance lab (docs/lab.md): netns topologies, a netperf-style traffic engine with an
//! iperf3 cross-check, per-process CPU accounting and service demand, reports, and seed scenarios.

pub mod cap;
pub mod cpu;
pub mod error;
pub mod execute;
pub mod mip6gen;
pub mod node;
pub mod pages;
pub mod report;
pub mod sys;
pub mod tcpdump;
pub mod topology;
pub mod traffic;

pub use error::LabError;
pub mod scenario;

pub use execute::{RunSummary, run, run_with};
pub use node::{EspCarrier, NodeHook};
pub use scenario::{RunOptions, ScenarioInfo, list};
