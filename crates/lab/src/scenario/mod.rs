//! Scenarios (one per seed): the registry `hipsec lab list` shows and `crate::execute` runs
//! from, with `RunOptions` (a `clap::Args` to flatten) and a progress/ETA line.
//!
//! Each scenario is a folder (`ipsec_netperf/`, `mip6_binding/`, `filter_rules/`, `rekey_bandwidth/`, `dv_video/`) whose
//! `mod.rs` implements [`Scenario`] on a unit struct; [`REGISTRY`] lists them, with the planned
//! ones, in `hipsec lab list` order, and `crate::execute::run_with` dispatches through it. What the scenarios share sits below them:
//! [`common`] (the trait, `RunOptions`, `Progress`) and `crate::node` (the modes and the hook that
//! starts hipsec nodes). A scenario never imports this file.

pub mod common;
pub mod dv_video;
pub mod filter_rules;
pub mod hip_bex;
pub mod ipsec_netperf;
pub mod mip6_binding;
pub mod rekey_bandwidth;

/// The node pieces scenarios share, re-exported where callers have always found them.
pub use crate::node::{
    EspCarrier, EspSuite, FilterEngine, Mode, ModeGuard, ModeHook, NodeFilter, NodeHook, PlainOnly,
};
pub use common::{Progress, RunOptions, Scenario};

/// One line of `hipsec lab list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioInfo {
    pub name: &'static str,
    pub seed: &'static str,
    pub summary: &'static str,
    /// False while the scenario is only planned.
    pub available: bool,
}

/// A line of the registry: a scenario that runs, or one that is only planned.
#[derive(Clone, Copy)]
pub enum Entry {
    Runs(&'static dyn Scenario),
    /// Not implemented yet: listed with `available: false`; `run` refuses it.
    Planned {
        name: &'static str,
        seed: &'static str,
        summary: &'static str,
    },
}

impl Entry {
    /// Its line of `hipsec lab list`.
    pub fn info(&self) -> ScenarioInfo {
        match *self {
            Entry::Runs(s) => ScenarioInfo {
                name: s.name(),
                seed: s.seed(),
                summary: s.summary(),
                available: true,
            },
            Entry::Planned { name, seed, summary } => {
                ScenarioInfo { name, seed, summary, available: false }
            }
        }
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = self.info();
        write!(f, "{} ({})", i.name, if i.available { "runs" } else { "planned" })
    }
}

/// Every scenario of the lab, in `hipsec lab list` order. A new scenario replaces its
/// `Planned` line by `Entry::Runs(&its_folder::ItsStruct)`.
pub const REGISTRY: &[Entry] = &[
    Entry::Runs(&ipsec_netperf::IpsecNetperf),
    Entry::Runs(&mip6_binding::Mip6Binding),
    Entry::Runs(&hip_bex::HipBex),
    Entry::Runs(&filter_rules::FilterRules),
    Entry::Runs(&rekey_bandwidth::RekeyBandwidth),
    Entry::Runs(&dv_video::DvVideo),
];

/// Every scenario of the lab.
pub fn list() -> Vec<ScenarioInfo> {
    REGISTRY.iter().map(Entry::info).collect()
}

/// The scenario named `name`, if it runs.
pub fn find(name: &str) -> Option<&'static dyn Scenario> {
    REGISTRY.iter().find_map(|e| match e {
        Entry::Runs(s) if s.name() == name => Some(*s),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_each_scenario_once_and_refuses_the_planned() {
        let names: Vec<&str> = list().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "ipsec-netperf",
                "mip6-binding",
                "hip-bex",
                "filter-rules",
                "rekey-bandwidth",
                "dv-video"
            ]
        );
        let available: Vec<&str> = list().iter().filter(|s| s.available).map(|s| s.name).collect();
        assert_eq!(
            available,
            [
                "ipsec-netperf",
                "mip6-binding",
                "hip-bex",
                "filter-rules",
                "rekey-bandwidth",
                "dv-video"
            ]
        );
        assert_eq!(find("mip6-binding").map(|s| s.seed()), Some("000"));
        assert_eq!(find("hip-bex").map(|s| s.name()), Some("hip-bex"));
    }
}
