//! What protects the traffic between h1 and h2: the modes ([`Mode`], [`EspSuite`]), and the two
//! traits a scenario sets a mode up through — [`ModeHook`] (set up a mode on a topology) and
//! [`ModeGuard`] (held while it is up). [`PlainOnly`] is the library's own hook (mode `none`
//! only); [`super::NodeHook`] starts real hipsec nodes.

use super::filter::NodeFilter;
use super::ike::{IkeGateway, IkeNodes};
use crate::error::LabError;
use crate::topology::{Family, Topology};
use std::net::IpAddr;

/// ESP transforms: the modern default and the seed era's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EspSuite {
    Aes128Gcm,
    AesCbcHmacSha1,
    TripleDesHmacSha1,
}

/// What protects the traffic between h1 and h2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    None,
    /// AH with HMAC-SHA-256-128.
    Ah,
    Esp(EspSuite),
    AhEsp(EspSuite),
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let suite = |s: &EspSuite| match s {
            EspSuite::Aes128Gcm => "AES-128-GCM",
            EspSuite::AesCbcHmacSha1 => "AES-CBC+HMAC-SHA1",
            EspSuite::TripleDesHmacSha1 => "3DES+HMAC-SHA1",
        };
        match self {
            Mode::None => f.write_str("none"),
            Mode::Ah => f.write_str("AH"),
            Mode::Esp(s) => write!(f, "ESP {}", suite(s)),
            Mode::AhEsp(s) => write!(f, "AH+ESP {}", suite(s)),
        }
    }
}

impl Mode {
    /// Modes of a profile: quick keeps one ESP suite, full adds the seed era's.
    pub fn all(full: bool) -> Vec<Mode> {
        let mut v = vec![
            Mode::None,
            Mode::Ah,
            Mode::Esp(EspSuite::Aes128Gcm),
            Mode::AhEsp(EspSuite::Aes128Gcm),
        ];
        if full {
            v.extend([
                Mode::Esp(EspSuite::AesCbcHmacSha1),
                Mode::Esp(EspSuite::TripleDesHmacSha1),
                Mode::AhEsp(EspSuite::AesCbcHmacSha1),
            ]);
        }
        v
    }

    /// Short name used in the report ("none", "AH", "ESP", "AH+ESP" for the default suite).
    pub fn short(&self) -> String {
        match self {
            Mode::Esp(EspSuite::Aes128Gcm) => "ESP".into(),
            Mode::AhEsp(EspSuite::Aes128Gcm) => "AH+ESP".into(),
            m => m.to_string(),
        }
    }
}

/// Held while a mode is active; dropping it removes the protection (stops nodes, SAs...).
pub trait ModeGuard: std::fmt::Debug {
    /// Processes whose CPU is charged to the tests (e.g. the hipsec nodes on h1 and h2).
    fn pids(&self) -> Vec<u32> {
        Vec::new()
    }

    /// The address on h2 the tests of `family` must target in this mode (e.g. h2's TUN address
    /// behind the tunnel); None: h2's address on its link.
    fn target(&self, _family: Family) -> Option<IpAddr> {
        None
    }

    /// Fails (naming the mode and the process, with its stderr) if the protection broke down,
    /// e.g. a node died. Called after every test.
    fn check(&self) -> Result<(), LabError> {
        Ok(())
    }

    /// One line for the report's notes: what protects the traffic.
    fn note(&self) -> Option<String> {
        None
    }
}

/// Sets a mode up on a topology. The hipsec node (`node::hook`) implements this: start a node in h1 and
/// h2 with TUN and SAs for `mode`, route h1↔h2 through it, and return a guard owning the nodes.
pub trait ModeHook: std::fmt::Debug {
    fn setup(&self, mode: Mode, topo: &Topology) -> Result<Box<dyn ModeGuard>, LabError>;

    /// Like `setup`, with a packet filter (`[filter]` table) in the nodes of `filter.hosts`
    /// (scenario `filter-rules`). Hooks without nodes cannot: the mode is pending.
    fn setup_filtered(
        &self,
        mode: Mode,
        _topo: &Topology,
        _filter: &NodeFilter,
    ) -> Result<Box<dyn ModeGuard>, LabError> {
        Err(LabError::ModePending {
            mode: format!("{mode} with a hipsec filter"),
            reason: "this hook starts no hipsec nodes".into(),
        })
    }

    /// Starts IKEv2 security gateways (scenario `rekey-bandwidth`), in the order given. Hooks
    /// without nodes cannot: pending.
    fn start_ike(&self, _topo: &Topology, _gateways: &[IkeGateway]) -> Result<IkeNodes, LabError> {
        Err(LabError::ModePending {
            mode: "IKEv2 gateways".into(),
            reason: "this hook starts no hipsec nodes".into(),
        })
    }
}

/// The plain network: nothing to set up.
#[derive(Debug)]
pub struct NoProtection;
impl ModeGuard for NoProtection {}

/// Today's hook: only `none` runs; every protected mode is pending.
#[derive(Debug)]
pub struct PlainOnly;

impl ModeHook for PlainOnly {
    fn setup(&self, mode: Mode, _topo: &Topology) -> Result<Box<dyn ModeGuard>, LabError> {
        match mode {
            Mode::None => Ok(Box::new(NoProtection)),
            m => Err(LabError::ModePending {
                mode: m.to_string(),
                reason: "needs the hipsec node (no mode hook given)".into(),
            }),
        }
    }
}
