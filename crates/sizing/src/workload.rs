//! What a site must carry: traffic, tunnels, rekeys, handshakes, binding updates, filter rules
//! (JSON, or built from `hipsec size`'s flags).

use crate::error::SizingError;
use serde::{Deserialize, Serialize};

/// Packet sizes of the protected traffic (inner IP packets), by share of packets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PacketMix {
    /// Every packet this many bytes.
    Fixed(u32),
    /// Simple IMIX: 7 packets of 40 bytes, 4 of 576, 1 of 1500 (by count; 340 bytes on average).
    Imix,
    /// (bytes, share) pairs; shares are normalised.
    Mix(Vec<(u32, f64)>),
}

impl PacketMix {
    /// (bytes, share of packets) with shares summing to 1.
    pub fn shares(&self) -> Vec<(f64, f64)> {
        let raw: Vec<(f64, f64)> = match self {
            PacketMix::Fixed(b) => vec![(f64::from(*b), 1.0)],
            PacketMix::Imix => vec![(40.0, 7.0), (576.0, 4.0), (1500.0, 1.0)],
            PacketMix::Mix(v) => v.iter().map(|&(b, s)| (f64::from(b), s)).collect(),
        };
        let total: f64 = raw.iter().map(|(_, s)| s).sum();
        raw.into_iter().map(|(b, s)| (b, s / total)).collect()
    }

    /// Mean packet size (bytes).
    pub fn mean(&self) -> f64 {
        self.shares().iter().map(|(b, s)| b * s).sum()
    }

    fn validate(&self) -> Result<(), SizingError> {
        let bad = |why: String| Err(SizingError::field("workload.packets", why));
        match self {
            PacketMix::Fixed(b) if !(20..=65535).contains(b) => bad(format!("{b} bytes")),
            PacketMix::Mix(v) if v.is_empty() => bad("an empty mix".into()),
            PacketMix::Mix(v) => {
                for &(b, s) in v {
                    if !(20..=65535).contains(&b) || !s.is_finite() || s <= 0.0 {
                        return bad(format!("({b} bytes, share {s})"));
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

fn default_util() -> f64 {
    0.7
}

/// A workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// A name for the report.
    pub name: String,
    /// Protected traffic, Gbit/s of inner packets, in each direction.
    #[serde(default)]
    pub throughput_gbps: f64,
    /// Whether `throughput_gbps` flows both ways (a gateway's usual case).
    #[serde(default)]
    pub bidirectional: bool,
    /// Inner packet sizes.
    pub packets: PacketMix,
    /// ESP/AH suite (a profile's `suites` key).
    pub suite: String,
    /// Carrier of the protected side (`udp` or `raw`).
    pub carrier: String,
    /// Tunnels (IKE_SAs with one CHILD_SA pair each, or peers).
    #[serde(default)]
    pub tunnels: u64,
    /// CHILD_SA rekey interval per tunnel (seconds; none: no rekeys).
    #[serde(default)]
    pub child_rekey_s: Option<f64>,
    /// IKE_SA rekey interval per tunnel (seconds).
    #[serde(default)]
    pub ike_rekey_s: Option<f64>,
    /// New IKE_SAs per second (each with its first CHILD_SA).
    #[serde(default)]
    pub handshakes_per_s: f64,
    /// HIP base exchanges per second (this node as responder) and their puzzle K.
    #[serde(default)]
    pub hip_bex_per_s: f64,
    /// HIP base exchanges per second this node initiates.
    #[serde(default)]
    pub hip_initiated_per_s: f64,
    /// Puzzle difficulty of the exchanges this node initiates.
    #[serde(default)]
    pub hip_puzzle_k: u8,
    /// Binding updates per second (home agent).
    #[serde(default)]
    pub binding_updates_per_s: f64,
    /// Binding-cache entries held (home agent).
    #[serde(default)]
    pub bindings: u64,
    /// Filter rules every packet meets.
    #[serde(default)]
    pub filter_rules: u64,
    /// The link's rate, Gbit/s each way (none: unknown, not checked).
    #[serde(default)]
    pub link_gbps: Option<f64>,
    /// Share of each core the sizing plans to use (headroom for bursts; 0.7 by default).
    #[serde(default = "default_util")]
    pub target_utilisation: f64,
}

impl Workload {
    /// Parses and checks a workload.
    pub fn from_json(text: &str) -> Result<Workload, SizingError> {
        let w: Workload = serde_json::from_str(text)
            .map_err(|e| SizingError::Parse { what: "workload".into(), why: e.to_string() })?;
        w.validate()?;
        Ok(w)
    }

    /// Ranges: rates finite and ≥ 0, intervals > 0, utilisation in (0, 1], K ≤ 40.
    pub fn validate(&self) -> Result<(), SizingError> {
        let rates = [
            ("workload.throughput_gbps", self.throughput_gbps),
            ("workload.handshakes_per_s", self.handshakes_per_s),
            ("workload.hip_bex_per_s", self.hip_bex_per_s),
            ("workload.hip_initiated_per_s", self.hip_initiated_per_s),
            ("workload.binding_updates_per_s", self.binding_updates_per_s),
        ];
        for (f, v) in rates {
            if !v.is_finite() || v < 0.0 {
                return Err(SizingError::field(f, format!("{v} (a rate ≥ 0)")));
            }
        }
        for (f, v) in [
            ("workload.child_rekey_s", self.child_rekey_s),
            ("workload.ike_rekey_s", self.ike_rekey_s),
            ("workload.link_gbps", self.link_gbps),
        ] {
            if let Some(v) = v {
                if !v.is_finite() || v <= 0.0 {
                    return Err(SizingError::field(f, format!("{v} (must be > 0)")));
                }
            }
        }
        if !(self.target_utilisation > 0.0 && self.target_utilisation <= 1.0) {
            return Err(SizingError::field(
                "workload.target_utilisation",
                format!("{} (a share in (0, 1])", self.target_utilisation),
            ));
        }
        if self.hip_puzzle_k > 40 {
            return Err(SizingError::field("workload.hip_puzzle_k", "above 40"));
        }
        self.packets.validate()
    }
}
