//! The answer: cores needed, what dominates, where the link is the bound — in words, as a
//! table and as JSON.

use crate::profile::Profile;
use crate::workload::Workload;
use serde::Serialize;
use std::fmt::Write as _;

/// One part of the work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Component {
    /// What it is (`seal (aes128gcm)`, `CHILD_SA rekeys`, ...).
    pub name: String,
    /// CPU seconds per second (cores kept busy).
    pub cores: f64,
    /// Its share of the total.
    pub share: f64,
}

impl Component {
    pub(crate) fn new(name: impl Into<String>, cores: f64) -> Component {
        Component { name: name.into(), cores, share: 0.0 }
    }
}

/// Whether the link carries the workload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkCheck {
    /// The link's rate each way.
    pub link_gbps: f64,
    /// What the workload puts on the wire each way (inner packets plus overheads).
    pub wire_gbps: f64,
    /// True when the wire rate exceeds the link: the link, not the CPU, is the bound.
    pub bound: bool,
    /// The most inner traffic the link carries with this mix and suite.
    pub max_inner_gbps: f64,
}

/// The sizing of one workload on one profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// The workload's name.
    pub workload: String,
    /// The profile's machine (CPU, cores).
    pub machine: String,
    /// Cores the calibrated machine has.
    pub machine_cores: u32,
    /// Parts of the work, largest first.
    pub components: Vec<Component>,
    /// CPU seconds per second in all.
    pub total_cores: f64,
    /// Cores to provision at the workload's target utilisation.
    pub cores_needed: u32,
    /// The target utilisation used.
    pub target_utilisation: f64,
    /// The largest part.
    pub dominant: Option<String>,
    /// Packets per second each way.
    pub packets_per_s: f64,
    /// What one lane (one core, one tunnel) carries one way with this mix, Gbit/s.
    pub lane_gbps: Option<f64>,
    /// The workload's throughput per tunnel.
    pub per_tunnel_gbps: f64,
    /// The link check, when the workload names a link.
    pub link: Option<LinkCheck>,
    /// Memory for SAs and bindings, bytes.
    pub memory_bytes: f64,
    /// The answer in plain words.
    pub words: Vec<String>,
    /// The same workload sized with every cost at the low and at the high end of the
    /// calibration's rounds; None for a profile of one round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
}

/// How far the answer moves over what the calibration's rounds measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// Rounds the profile's costs are the median of.
    pub rounds: u32,
    pub total_cores_low: f64,
    pub total_cores_high: f64,
    pub cores_needed_low: u32,
    pub cores_needed_high: u32,
    /// The profile's costs that moved by more than 10 % over the rounds and that this
    /// workload uses.
    pub noisy: Vec<String>,
    /// The model's error a validation measured, which widened the interval (none: the
    /// interval is the calibration's spread alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_error: Option<crate::profile::ModelError>,
    /// Parts of this answer no validation run predicts (their range is the calibration's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unvalidated: Vec<String>,
}

fn gb(bytes: f64) -> String {
    if bytes >= 1e9 { format!("{:.1} GB", bytes / 1e9) } else { format!("{:.0} MB", bytes / 1e6) }
}

impl Answer {
    #[allow(clippy::too_many_arguments, reason = "one constructor for the model's figures")]
    pub(crate) fn new(
        w: &Workload,
        p: &Profile,
        components: Vec<Component>,
        total_cores: f64,
        cores_needed: u32,
        link: Option<LinkCheck>,
        lane_gbps: Option<f64>,
        per_tunnel_gbps: f64,
        memory_bytes: f64,
        packets_per_s: f64,
    ) -> Answer {
        let mut a = Answer {
            workload: w.name.clone(),
            machine: format!("{} ({} cores)", p.machine.cpu, p.machine.cores),
            machine_cores: p.machine.cores,
            dominant: components.first().map(|c| c.name.clone()),
            components,
            total_cores,
            cores_needed,
            target_utilisation: w.target_utilisation,
            packets_per_s,
            lane_gbps,
            per_tunnel_gbps,
            link,
            memory_bytes,
            words: Vec::new(),
            interval: None,
        };
        a.words = a.explain();
        a
    }

    fn explain(&self) -> Vec<String> {
        let mut v = Vec::new();
        v.push(format!(
            "{}: {:.2} cores busy in all; at {:.0} % utilisation that is {} core{} of the calibrated \
             machine ({}){}.",
            self.workload,
            self.total_cores,
            self.target_utilisation * 100.0,
            self.cores_needed,
            if self.cores_needed == 1 { "" } else { "s" },
            self.machine,
            if self.cores_needed > self.machine_cores {
                format!(
                    ", more than it has: {} such machines",
                    self.cores_needed.div_ceil(self.machine_cores)
                )
            } else {
                String::new()
            }
        ));
        if let Some(c) = self.components.first() {
            v.push(format!(
                "The largest part is {} ({:.0} % of the CPU).",
                c.name,
                c.share * 100.0
            ));
        }
        if let Some(l) = &self.link {
            v.push(if l.bound {
                format!(
                    "The link is the bound, not the CPU: {:.2} Gbit/s on the wire each way against a \
                     {:.2} Gbit/s link, which carries at most {:.2} Gbit/s of this traffic.",
                    l.wire_gbps, l.link_gbps, l.max_inner_gbps
                )
            } else {
                format!(
                    "The link carries it: {:.2} of {:.2} Gbit/s on the wire each way.",
                    l.wire_gbps, l.link_gbps
                )
            });
        }
        if let Some(lane) = self.lane_gbps {
            if self.per_tunnel_gbps > lane {
                v.push(format!(
                    "One tunnel carries {:.2} Gbit/s, but one SA's packets stay on one core, which \
                     carries {lane:.2} Gbit/s of this mix: spread the traffic over at least {} \
                     tunnels (or SAs).",
                    self.per_tunnel_gbps,
                    (self.per_tunnel_gbps / lane).ceil()
                ));
            }
        }
        if self.memory_bytes > 0.0 {
            v.push(format!("SAs and bindings hold about {} of memory.", gb(self.memory_bytes)));
        }
        v
    }

    /// Sets the interval and says it in words after the first line.
    pub(crate) fn with_interval(mut self, i: Interval) -> Answer {
        let pct = |b: &Option<crate::profile::ErrorBand>, what: &str| {
            b.map(|b| format!("{what} {:+.0} … {:+.0} %", b.low * 100.0, b.high * 100.0))
        };
        let basis = match &i.model_error {
            None => format!("Over the calibration's {} rounds", i.rounds),
            Some(m) => {
                let bands: Vec<String> = [pct(&m.data_path, "data path"), pct(&m.ike, "IKE")]
                    .into_iter()
                    .flatten()
                    .collect();
                format!(
                    "Over the calibration's {} rounds, and with the model's error that validation measured ({}, 90 % of runs)",
                    i.rounds,
                    bands.join(", ")
                )
            }
        };
        let line = format!(
            "{basis} the same work costs {:.2}–{:.2} cores ({} to provision){}{}.",
            i.total_cores_low,
            i.total_cores_high,
            if i.cores_needed_low == i.cores_needed_high {
                i.cores_needed_low.to_string()
            } else {
                format!("{}–{}", i.cores_needed_low, i.cores_needed_high)
            },
            if i.noisy.is_empty() {
                String::new()
            } else {
                format!("; noisy figures it uses: {}", i.noisy.join(", "))
            },
            if i.unvalidated.is_empty() || i.model_error.is_none() {
                String::new()
            } else {
                format!("; not validated on this machine: {}", i.unvalidated.join(", "))
            }
        );
        self.words.insert(1.min(self.words.len()), line);
        self.interval = Some(i);
        self
    }

    /// The components as a text table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{:<34} {:>10} {:>7}", "part", "cores", "share");
        for c in &self.components {
            let _ = writeln!(s, "{:<34} {:>10.4} {:>6.1}%", c.name, c.cores, c.share * 100.0);
        }
        let _ = writeln!(s, "{:<34} {:>10.4} {:>7}", "total", self.total_cores, "100.0%");
        let _ = writeln!(
            s,
            "{:<34} {:>10}",
            format!("cores at {:.0} % utilisation", self.target_utilisation * 100.0),
            self.cores_needed
        );
        if let Some(i) = &self.interval {
            let _ = writeln!(
                s,
                "{:<34} {:>10}",
                format!("over {} calibration rounds", i.rounds),
                format!("{:.2}–{:.2}", i.total_cores_low, i.total_cores_high)
            );
        }
        s
    }
}
