//! A calibrated cost profile: what each unit of work cost on one machine, as `hipsec lab
//! calibrate` measured it (JSON, schema [`SCHEMA`]).

use crate::error::SizingError;
use crate::load::{BatchPoint, RatePoint};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema name a profile carries.
pub const SCHEMA: &str = "hipsec-profile/1";

/// A cost with a fixed part per packet and a part per byte (ns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinearCost {
    /// Nanoseconds per packet whatever its size.
    pub per_packet_ns: f64,
    /// Nanoseconds per byte of the packet.
    pub per_byte_ns: f64,
}

impl LinearCost {
    /// The cost of one packet of `bytes`.
    pub fn ns(&self, bytes: f64) -> f64 {
        self.per_packet_ns + self.per_byte_ns * bytes
    }
}

/// An ESP or AH suite in the node's data path (lookup, headers, counters and the cipher).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SuiteCost {
    /// Protecting one packet (the inner packet's size).
    pub seal: LinearCost,
    /// Opening one packet.
    pub open: LinearCost,
    /// Bytes the suite adds on the wire per packet beyond the inner packet, before the carrier
    /// (ESP header, IV, padding on average, trailer, ICV; tunnel mode's outer IP header).
    pub overhead_bytes: f64,
}

/// The node's per-packet I/O for one carrier (syscalls and copies, per packet, amortised over
/// the batches the node makes): a fixed part per packet and a part per byte of the inner
/// packet. The per-byte part is mostly not copying: with GSO/GRO the kernel hands the node
/// 64 KB super-packets, so what a super-packet costs is spread over its segments in proportion
/// to their size (a 536-byte MSS costs ~0.6× the I/O per packet of a 1,432-byte one here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoCost {
    /// Receiving one packet: the fixed part.
    pub rx_ns: f64,
    /// Sending one packet: the fixed part.
    pub tx_ns: f64,
    /// Added per byte of the inner packet, receiving and sending alike (0 in profiles written
    /// before it was measured).
    #[serde(default)]
    pub per_byte_ns: f64,
    /// Bytes the carrier adds on the wire (UDP header for ESP in UDP; 0 for raw IP).
    pub overhead_bytes: f64,
    /// What a packet costs beyond `rx_ns`/`tx_ns` + `per_byte_ns` at the packet rates
    /// calibration ran (by run name: `full`, `paced50`, ...); none in profiles written before
    /// part load was measured.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_rate: BTreeMap<String, BatchPoint>,
}

impl IoCost {
    /// A carrier measured saturated only.
    pub fn flat(rx_ns: f64, tx_ns: f64, per_byte_ns: f64, overhead_bytes: f64) -> IoCost {
        IoCost { rx_ns, tx_ns, per_byte_ns, overhead_bytes, by_rate: BTreeMap::new() }
    }

    /// What part load adds to each packet when one tunnel runs at `share` of its saturated
    /// rate (ns; 1 for a saturated one).
    pub fn load_ns(&self, share: f64) -> f64 {
        crate::load::extra_ns(&self.by_rate, share)
    }
}

/// The packet filter.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FilterCost {
    /// Per packet with no rules.
    pub per_packet_ns: f64,
    /// Added per packet per rule (0 for the filter whose cost does not grow with rules).
    pub per_rule_ns: f64,
}

/// IKEv2 work, both ends' CPU of the sized node (µs per event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IkeCost {
    /// IKE_SA_INIT + IKE_AUTH with its first CHILD_SA, as responder.
    pub ike_sa_setup_us: f64,
    /// CREATE_CHILD_SA rekeying a CHILD_SA (and installing the pair).
    pub child_rekey_us: f64,
    /// CREATE_CHILD_SA rekeying the IKE SA.
    pub ike_rekey_us: f64,
    /// The responder's µs per setup at the rates calibration ran (by run name); a node below
    /// saturation pays more per setup (a wake-up each, smaller batches). `ike_sa_setup_us` is
    /// the saturated figure.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub setup_by_rate: BTreeMap<String, RatePoint>,
}

impl IkeCost {
    /// µs per setup at `setups_per_s` (the saturated figure without a table).
    pub fn setup_us_at(&self, setups_per_s: f64) -> f64 {
        crate::load::setup_us(&self.setup_by_rate, setups_per_s, self.ike_sa_setup_us)
    }
}

/// HIP base exchange work (µs per exchange).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HipCost {
    /// As initiator, without the puzzle.
    pub initiator_us: f64,
    /// Per puzzle try (the initiator makes 2^K on average).
    pub puzzle_try_ns: f64,
    /// As responder (I1 → R1 from a template, I2 → R2).
    pub responder_us: f64,
}

/// Mobile IPv6 home agent work.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mip6Cost {
    /// One ESP-protected Binding Update: open, binding cache update, Binding Acknowledgement.
    pub binding_update_us: f64,
    /// Memory per binding-cache entry.
    pub bytes_per_binding: f64,
}

/// What the profile was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model.
    pub cpu: String,
    /// Cores (logical CPUs) the machine has.
    pub cores: u32,
    /// Kernel release.
    pub kernel: String,
    /// hipsec commit that measured it.
    pub commit: String,
    /// When (RFC 3339 or a date).
    pub date: String,
}

/// A calibrated profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// [`SCHEMA`].
    pub schema: String,
    /// Where it was measured.
    pub machine: Machine,
    /// ESP/AH suites by name (`aes128gcm`, `aes128cbc-sha1`, ...).
    pub suites: BTreeMap<String, SuiteCost>,
    /// Carriers by name: `udp` (ESP in UDP), `raw` (ESP over IP), `tun` (the clear side).
    pub carriers: BTreeMap<String, IoCost>,
    /// The filter.
    pub filter: FilterCost,
    /// IKEv2.
    pub ike: IkeCost,
    /// HIP.
    pub hip: HipCost,
    /// Mobile IPv6.
    pub mip6: Mip6Cost,
    /// Memory per installed SA (engine, tables, control records).
    pub bytes_per_sa: f64,
    /// How each figure was measured (figure → command), for the reader.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// How each cost moved over the calibration's rounds (dotted figure → its spread), the
    /// cost above being the median; empty in a profile of one round.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spread: BTreeMap<String, Spread>,
    /// What else ran on the machine while it was calibrated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<Interference>,
    /// The model's error as a validation on this machine measured it (`hipsec lab validate
    /// --record`): `hipsec size` widens its interval by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<ModelError>,
}

/// The error of the model's predictions, (predicted − measured) ÷ measured, over a validation's
/// runs of one kind of work.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ErrorBand {
    /// The median error.
    pub median: f64,
    /// The 5th percentile of the errors.
    pub low: f64,
    /// The 95th percentile.
    pub high: f64,
    /// Runs it is taken over.
    pub runs: u32,
}

impl ErrorBand {
    /// The band of `errors` (none for no errors).
    pub fn of(errors: &[f64]) -> Option<ErrorBand> {
        let mut v: Vec<f64> = errors.iter().copied().filter(|e| e.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let at = |q: f64| {
            // Linear between the closest ranks (the "R-7" quantile of most statistics tools).
            let h = q * (v.len() - 1) as f64;
            let (i, f) = (h.floor() as usize, h - h.floor());
            let next = v.get(i + 1).copied().unwrap_or(v[i]);
            v[i] + f * (next - v[i])
        };
        Some(ErrorBand { median: at(0.5), low: at(0.05), high: at(0.95), runs: v.len() as u32 })
    }

    /// What a prediction of `low`..`high` says the measurement will be, given this band:
    /// measured = predicted ÷ (1 + error), for the error anywhere in the band.
    pub fn widen(&self, low: f64, high: f64) -> (f64, f64) {
        let div = |x: f64, e: f64| if 1.0 + e > 0.0 { x / (1.0 + e) } else { x };
        (div(low, self.high.max(0.0)), div(high, self.low.min(0.0)))
    }
}

/// The model's measured error on a machine, by the kind of work it predicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelError {
    /// When the validation ran (UTC, RFC 3339).
    pub date: String,
    /// The data path: tunnels of other suites, carriers, sizes and filters.
    pub data_path: Option<ErrorBand>,
    /// IKEv2 handshakes at other loads.
    pub ike: Option<ErrorBand>,
}

/// One figure over the calibration's rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub rounds: u32,
    /// Each round's value, in round order (empty in profiles written before they were kept):
    /// figures measured together (a line's intercept and slope) move together from round to
    /// round, which their min and max alone do not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<f64>,
}

/// The machine's own noise during a calibration, from /proc/stat and the process's CPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    /// Time the hypervisor gave the machine's vCPUs to others, % of all CPU time (steal).
    pub steal_pct: f64,
    /// CPU of processes other than the calibration and its children, % of all CPU time.
    pub other_cpu_pct: f64,
    /// The worst round's steal, %.
    pub worst_round_steal_pct: f64,
    /// Seconds the calibration took.
    pub seconds: f64,
}

fn check(field: String, v: f64) -> Result<(), SizingError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(SizingError::field(field, format!("{v} is not a finite cost ≥ 0")))
    }
}

impl Profile {
    /// Parses and checks a profile.
    pub fn from_json(text: &str) -> Result<Profile, SizingError> {
        let p: Profile = serde_json::from_str(text)
            .map_err(|e| SizingError::Parse { what: "profile".into(), why: e.to_string() })?;
        p.validate()?;
        Ok(p)
    }

    /// Every cost finite and non-negative, the schema ours, a `tun` carrier present.
    pub fn validate(&self) -> Result<(), SizingError> {
        if self.schema != SCHEMA {
            return Err(SizingError::field(
                "profile.schema",
                format!("`{}` (this hipsec reads `{SCHEMA}`)", self.schema),
            ));
        }
        for (n, s) in &self.suites {
            for (part, c) in [("seal", s.seal), ("open", s.open)] {
                check(format!("profile.suites.{n}.{part}.per_packet_ns"), c.per_packet_ns)?;
                check(format!("profile.suites.{n}.{part}.per_byte_ns"), c.per_byte_ns)?;
            }
            check(format!("profile.suites.{n}.overhead_bytes"), s.overhead_bytes)?;
        }
        for (n, c) in &self.carriers {
            check(format!("profile.carriers.{n}.rx_ns"), c.rx_ns)?;
            check(format!("profile.carriers.{n}.tx_ns"), c.tx_ns)?;
            check(format!("profile.carriers.{n}.per_byte_ns"), c.per_byte_ns)?;
            check(format!("profile.carriers.{n}.overhead_bytes"), c.overhead_bytes)?;
            for (k, b) in &c.by_rate {
                let f = format!("profile.carriers.{n}.by_rate.{k}");
                check(format!("{f}.share"), b.share)?;
                check(format!("{f}.packets_per_s"), b.packets_per_s)?;
                check(format!("{f}.extra_ns"), b.extra_ns)?;
                check(format!("{f}.wakeups_per_packet"), b.wakeups_per_packet)?;
            }
        }
        if !self.carriers.contains_key("tun") {
            return Err(SizingError::field("profile.carriers", "no `tun` (the clear side's I/O)"));
        }
        let rest = [
            ("profile.filter.per_packet_ns", self.filter.per_packet_ns),
            ("profile.filter.per_rule_ns", self.filter.per_rule_ns),
            ("profile.ike.ike_sa_setup_us", self.ike.ike_sa_setup_us),
            ("profile.ike.child_rekey_us", self.ike.child_rekey_us),
            ("profile.ike.ike_rekey_us", self.ike.ike_rekey_us),
            ("profile.hip.initiator_us", self.hip.initiator_us),
            ("profile.hip.puzzle_try_ns", self.hip.puzzle_try_ns),
            ("profile.hip.responder_us", self.hip.responder_us),
            ("profile.mip6.binding_update_us", self.mip6.binding_update_us),
            ("profile.mip6.bytes_per_binding", self.mip6.bytes_per_binding),
            ("profile.bytes_per_sa", self.bytes_per_sa),
        ];
        for (f, v) in rest {
            check(f.into(), v)?;
        }
        for (k, r) in &self.ike.setup_by_rate {
            check(format!("profile.ike.setup_by_rate.{k}.setups_per_s"), r.setups_per_s)?;
            check(format!("profile.ike.setup_by_rate.{k}.us"), r.us)?;
        }
        if self.machine.cores == 0 {
            return Err(SizingError::field("profile.machine.cores", "0"));
        }
        Ok(())
    }
}
