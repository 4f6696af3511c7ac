//! A profile from repeated calibration rounds: each cost is the median of its rounds, and the
//! rounds' spread is kept beside it, so that `hipsec size` can say how sure an answer is. On a
//! shared VM one round is not a measurement: the same work measured twice moved by up to 27
//! points (the validation runs of docs/sizing.md), which a median of five rounds and its range
//! make visible instead of hiding.
//!
//! The rounds are combined leaf by leaf over the profile's JSON form, so every number a profile
//! holds (suites, carriers, filter, IKE, HIP, Mobile IPv6, memory) is treated alike and a cost
//! added to [`Profile`] later needs nothing here.

use crate::answer::{Answer, Interval};
use crate::error::SizingError;
use crate::profile::{Interference, Profile, Spread};
use crate::workload::Workload;
use serde_json::Value;
use std::collections::BTreeMap;

/// A figure whose rounds spread by more than this share of its median is marked noisy.
pub const NOISY_SPREAD: f64 = 0.10;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Every numeric leaf of `v` under `path` (dotted), in document order.
fn leaves(v: &Value, path: &str, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.push((path.to_string(), x));
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                leaves(x, &p, out);
            }
        }
        _ => {}
    }
}

/// Sets the numeric leaf at dotted `path` in `v` to `x`.
fn set(v: &mut Value, path: &str, x: f64) {
    let mut cur = v;
    for k in path.split('.') {
        let Some(next) = cur.get_mut(k) else { return };
        cur = next;
    }
    if let Some(n) = serde_json::Number::from_f64(x) {
        *cur = Value::Number(n);
    }
}

/// The figures whose spread is measured: costs, not the machine's description.
fn is_cost(path: &str) -> bool {
    !path.starts_with("machine.")
        && !path.starts_with("interference.")
        && !path.starts_with("validation.")
}

/// Every cost of `p` (not the machine's description, not the spreads) by its dotted path.
pub(crate) fn costs(p: &Profile) -> Vec<(String, f64)> {
    let mut l = Vec::new();
    if let Ok(v) = to_value(p) {
        leaves(&v, "", &mut l);
    }
    l.retain(|(path, _)| is_cost(path) && !path.starts_with("spread."));
    l
}

fn to_value(p: &Profile) -> Result<Value, SizingError> {
    serde_json::to_value(p)
        .map_err(|e| SizingError::Parse { what: "profile".into(), why: e.to_string() })
}

fn from_value(v: Value) -> Result<Profile, SizingError> {
    serde_json::from_value(v)
        .map_err(|e| SizingError::Parse { what: "profile".into(), why: e.to_string() })
}

/// Combines calibration rounds (each a whole profile of the same machine and commit): every
/// cost the median of its rounds, `spread` filled in, `interference` as given. The rounds must
/// hold the same figures (the same suites and carriers).
pub fn combine(
    rounds: &[Profile],
    interference: Option<Interference>,
) -> Result<Profile, SizingError> {
    let Some(first) = rounds.first() else {
        return Err(SizingError::field("calibration", "no rounds"));
    };
    let values: Vec<Value> = rounds.iter().map(to_value).collect::<Result<_, _>>()?;
    let mut per: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for v in &values {
        let mut l = Vec::new();
        leaves(v, "", &mut l);
        for (p, x) in l.into_iter().filter(|(p, _)| is_cost(p) && !p.starts_with("spread.")) {
            per.entry(p).or_default().push(x);
        }
    }
    let mut out = to_value(first)?;
    let mut spread = BTreeMap::new();
    for (path, mut xs) in per {
        if xs.len() != rounds.len() {
            return Err(SizingError::field(
                format!("profile.{path}"),
                format!("measured in {} of {} rounds", xs.len(), rounds.len()),
            ));
        }
        let (min, max) =
            xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        let values = xs.clone();
        let m = median(&mut xs);
        set(&mut out, &path, m);
        spread.insert(path, Spread { median: m, min, max, rounds: xs.len() as u32, values });
    }
    let mut p = from_value(out)?;
    p.spread = spread;
    p.interference = interference;
    p.validate()?;
    Ok(p)
}

impl Spread {
    /// (max − min) ÷ median; 0 for a zero figure that never moved.
    pub fn relative(&self) -> f64 {
        let range = self.max - self.min;
        if self.median.abs() > 0.0 {
            range / self.median.abs()
        } else if range == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    }

    /// Its rounds moved by more than [`NOISY_SPREAD`].
    pub fn noisy(&self) -> bool {
        self.relative() > NOISY_SPREAD
    }
}

impl Profile {
    /// The figures whose rounds spread by more than [`NOISY_SPREAD`], noisiest first.
    pub fn noisy(&self) -> Vec<(&str, f64)> {
        let mut v: Vec<(&str, f64)> = self
            .spread
            .iter()
            .filter(|(_, s)| s.noisy())
            .map(|(k, s)| (k.as_str(), s.relative()))
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    }

    /// The profile with every cost at the low (`high = false`) or the high end of its rounds:
    /// sizing with both brackets an answer by what the calibration itself saw move. A profile
    /// from one round is its own bracket.
    pub fn bracket(&self, high: bool) -> Result<Profile, SizingError> {
        let mut v = to_value(self)?;
        for (path, s) in &self.spread {
            set(&mut v, path, if high { s.max } else { s.min });
        }
        from_value(v)
    }
}

impl Profile {
    /// The profile as each calibration round measured it (every figure at that round's value),
    /// none when the spreads do not keep their rounds' values (older profiles).
    pub fn rounds(&self) -> Result<Option<Vec<Profile>>, SizingError> {
        let n = self.spread.values().map(|s| s.values.len()).max().unwrap_or(0);
        if n < 2 || self.spread.values().any(|s| s.values.len() != n) {
            return Ok(None);
        }
        let v = to_value(self)?;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut r = v.clone();
            for (path, s) in &self.spread {
                set(&mut r, path, s.values[i]);
            }
            out.push(from_value(r)?);
        }
        Ok(Some(out))
    }

    /// What the calibration's spread lets a figure be: each round's profile when the rounds'
    /// values are kept, else every cost at its low and at its high end at once ([`bracket`]).
    ///
    /// [`bracket`]: Profile::bracket
    pub fn ends(&self) -> Result<Vec<Profile>, SizingError> {
        match self.rounds()? {
            Some(r) => Ok(r),
            None => Ok(vec![self.bracket(false)?, self.bracket(true)?]),
        }
    }
}

/// Sizes `w` on `p`; a profile of several rounds also sizes it with each round's costs (or, for
/// a profile that did not keep them, at both ends of its costs' range) and gives the answer its
/// interval. The figures noted noisy are those whose part of the
/// answer is not zero (a noisy HIP cost does not make a gateway's answer unsure).
pub fn size_with_interval(p: &Profile, w: &Workload) -> Result<Answer, SizingError> {
    let a = crate::model::size(p, w)?;
    let Some(rounds) = p.spread.values().map(|s| s.rounds).max().filter(|&r| r > 1) else {
        return Ok(a);
    };
    let ends: Vec<Answer> =
        p.ends()?.iter().map(|e| crate::model::size(e, w)).collect::<Result<_, _>>()?;
    let span = |f: &dyn Fn(&Answer) -> f64| {
        ends.iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(x), h.max(x)))
    };
    // A noisy figure matters to this answer when moving it alone to its high end moves the
    // answer.
    let mut noisy = Vec::new();
    for (figure, rel) in p.noisy() {
        let Some(sp) = p.spread.get(figure) else { continue };
        let mut v = to_value(p)?;
        set(&mut v, figure, sp.max);
        let moved = crate::model::size(&from_value(v)?, w)?;
        if (moved.total_cores - a.total_cores).abs() > 1e-12 {
            noisy.push(format!("{figure} ({:.0} %)", rel * 100.0));
        }
    }
    let (mut total_low, mut total_high) = span(&|x| x.total_cores);
    let mut unvalidated = Vec::new();
    if let Some(v) = &p.validation {
        // Each part widened by the error validation measured for its kind of work; parts no
        // validation run predicts keep the calibration's range, and are named.
        (total_low, total_high) = (0.0, 0.0);
        for c in &a.components {
            let (l, h) = span(&|x| {
                x.components.iter().find(|d| d.name == c.name).map_or(c.cores, |d| d.cores)
            });
            let band = match kind_of(&c.name) {
                WorkKind::DataPath => v.data_path,
                WorkKind::Ike => v.ike,
                WorkKind::Other => None,
            };
            let (l, h) = match band {
                Some(b) => b.widen(l.min(h), l.max(h)),
                None => {
                    unvalidated.push(c.name.clone());
                    (l.min(h), l.max(h))
                }
            };
            total_low += l;
            total_high += h;
        }
    }
    let cores = |t: f64| (t / w.target_utilisation).ceil().max(1.0) as u32;
    Ok(a.with_interval(Interval {
        rounds,
        total_cores_low: total_low,
        total_cores_high: total_high,
        cores_needed_low: cores(total_low),
        cores_needed_high: cores(total_high),
        noisy,
        model_error: p.validation.clone(),
        unvalidated,
    }))
}

/// Which validation band a part of an answer falls under.
enum WorkKind {
    DataPath,
    Ike,
    Other,
}

fn kind_of(component: &str) -> WorkKind {
    if component.starts_with("IKE") || component.starts_with("CHILD_SA") {
        WorkKind::Ike
    } else if component.starts_with("HIP") || component.starts_with("binding") {
        WorkKind::Other
    } else {
        WorkKind::DataPath
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::profile::*;

    /// A small profile of one round, for the tests.
    pub(crate) fn base() -> Profile {
        let lin = |p, b| LinearCost { per_packet_ns: p, per_byte_ns: b };
        let io = |rx, tx| IoCost::flat(rx, tx, 0.0, 0.0);
        Profile {
            schema: SCHEMA.into(),
            machine: Machine {
                cpu: "Test CPU".into(),
                cores: 2,
                kernel: "6.0".into(),
                commit: "0".into(),
                date: "2026-12-02".into(),
            },
            suites: [(
                "aes128gcm".to_string(),
                SuiteCost { seal: lin(100.0, 0.5), open: lin(120.0, 0.5), overhead_bytes: 50.0 },
            )]
            .into(),
            carriers: [
                ("tun".to_string(), io(200.0, 250.0)),
                ("udp".to_string(), io(300.0, 300.0)),
            ]
            .into(),
            filter: FilterCost { per_packet_ns: 50.0, per_rule_ns: 0.0 },
            ike: IkeCost {
                ike_sa_setup_us: 500.0,
                child_rekey_us: 1000.0,
                ike_rekey_us: 2000.0,
                setup_by_rate: Default::default(),
            },
            hip: HipCost { initiator_us: 300.0, puzzle_try_ns: 500.0, responder_us: 400.0 },
            mip6: Mip6Cost { binding_update_us: 10.0, bytes_per_binding: 64.0 },
            bytes_per_sa: 1000.0,
            sources: Default::default(),
            spread: Default::default(),
            interference: None,
            validation: None,
        }
    }

    fn round(scale: f64) -> Profile {
        let mut p = base();
        p.ike.ike_sa_setup_us *= scale;
        p.filter.per_packet_ns *= scale;
        p
    }

    #[test]
    fn the_median_of_the_rounds_with_their_range() {
        let rounds = [round(1.0), round(1.3), round(0.9), round(1.05), round(1.0)];
        let base = base();
        let p = combine(&rounds, None).unwrap_or_else(|e| panic!("{e}"));
        assert!((p.ike.ike_sa_setup_us - base.ike.ike_sa_setup_us).abs() < 1e-9);
        let s = &p.spread["ike.ike_sa_setup_us"];
        assert_eq!(s.rounds, 5);
        assert!((s.min - 0.9 * base.ike.ike_sa_setup_us).abs() < 1e-6);
        assert!((s.max - 1.3 * base.ike.ike_sa_setup_us).abs() < 1e-6);
        assert!(s.noisy(), "a 40 % range is noisy: {s:?}");
        // A figure no round moved is not noisy; the two that moved lead the noisy list.
        assert!(!p.spread["bytes_per_sa"].noisy());
        let noisy: Vec<&str> = p.noisy().iter().map(|n| n.0).collect();
        assert_eq!(noisy, ["filter.per_packet_ns", "ike.ike_sa_setup_us"]);
        let (lo, hi) = (
            p.bracket(false).unwrap_or_else(|e| panic!("{e}")),
            p.bracket(true).unwrap_or_else(|e| panic!("{e}")),
        );
        assert!(
            lo.ike.ike_sa_setup_us < p.ike.ike_sa_setup_us
                && p.ike.ike_sa_setup_us < hi.ike.ike_sa_setup_us
        );
    }

    #[test]
    fn an_answer_carries_the_interval_of_its_rounds() {
        let rounds = [round(1.0), round(1.5), round(0.8)];
        let p = combine(&rounds, None).unwrap_or_else(|e| panic!("{e}"));
        let mut w = crate::examples::base("handshakes");
        w.tunnels = 1;
        w.throughput_gbps = 0.0;
        w.handshakes_per_s = 1000.0;
        let a = size_with_interval(&p, &w).unwrap_or_else(|e| panic!("{e}"));
        let i = a.interval.clone().unwrap_or_else(|| panic!("no interval: {a:?}"));
        assert_eq!(i.rounds, 3);
        // 1000 setups/s at 500 µs is 0.5 cores; the rounds saw 400 to 750 µs.
        assert!((a.total_cores - 0.5).abs() < 1e-9, "{a:?}");
        assert!(
            (i.total_cores_low - 0.4).abs() < 1e-9 && (i.total_cores_high - 0.75).abs() < 1e-9,
            "{i:?}"
        );
        // The filter's noise does not touch a workload with no packets; the handshakes' does.
        assert_eq!(i.noisy, ["ike.ike_sa_setup_us (70 %)"], "{i:?}");
        assert!(a.words.iter().any(|l| l.contains("0.40–0.75 cores")), "{:?}", a.words);
        // One round: no interval.
        let one = size_with_interval(&round(1.0), &w).unwrap_or_else(|e| panic!("{e}"));
        assert!(one.interval.is_none());
    }

    /// A validation's measured error widens each part by its kind of work's band; a part no
    /// validation covers keeps the calibration's range and is named.
    #[test]
    fn a_validated_profile_widens_the_interval_by_the_model_error() {
        let rounds = [round(1.0), round(1.5), round(0.8)];
        let mut p = combine(&rounds, None).unwrap_or_else(|e| panic!("{e}"));
        let mut w = crate::examples::base("handshakes");
        w.tunnels = 1;
        w.throughput_gbps = 0.0;
        w.handshakes_per_s = 1000.0;
        w.hip_bex_per_s = 100.0;
        let band = ErrorBand { median: -0.1, low: -0.2, high: 0.25, runs: 9 };
        p.validation = Some(ModelError { date: "d".into(), data_path: None, ike: Some(band) });
        let a = size_with_interval(&p, &w).unwrap_or_else(|e| panic!("{e}"));
        let i = a.interval.clone().unwrap_or_else(|| panic!("no interval: {a:?}"));
        // IKE: 0.4–0.75 cores over the rounds; measured = predicted ÷ (1 + error), the error
        // from −20 % to +25 %: 0.4 / 1.25 … 0.75 / 0.8. HIP (400 µs × 100/s) as calibrated.
        let hip = 0.04;
        assert!((i.total_cores_low - (0.32 + hip)).abs() < 1e-9, "{i:?}");
        assert!((i.total_cores_high - (0.9375 + hip)).abs() < 1e-9, "{i:?}");
        assert_eq!(i.unvalidated, ["HIP base exchanges"], "{i:?}");
        let line = a.words.iter().find(|l| l.contains("validation measured")).cloned();
        let line = line.unwrap_or_else(|| panic!("{:?}", a.words));
        assert!(
            line.contains("IKE -20 … +25 %") && line.contains("not validated on this machine: HIP"),
            "{line}"
        );
    }

    /// Two figures measured together that move against each other from round to round (a
    /// line's intercept and slope) give each round's answer, not both ends at once.
    #[test]
    fn each_rounds_costs_go_together() {
        let mk = |tx: f64, per_byte: f64| {
            let mut p = base();
            if let Some(u) = p.carriers.get_mut("udp") {
                (u.tx_ns, u.per_byte_ns) = (tx, per_byte);
            }
            p
        };
        // 300 + 0.2 × 1000, 100 + 0.4 × 1000, 200 + 0.3 × 1000: 500 ns a packet in each round.
        let rounds = [mk(300.0, 0.2), mk(100.0, 0.4), mk(200.0, 0.3)];
        let p = combine(&rounds, None).unwrap_or_else(|e| panic!("{e}"));
        let mut w = crate::examples::base("t");
        (w.tunnels, w.throughput_gbps) = (1, 1.0);
        w.packets = crate::workload::PacketMix::Fixed(1000);
        let i = size_with_interval(&p, &w).unwrap_or_else(|e| panic!("{e}")).interval;
        let i = i.unwrap_or_else(|| panic!("no interval"));
        assert!((i.total_cores_high - i.total_cores_low).abs() < 1e-12, "{i:?}");
        // A profile that did not keep its rounds' values: every cost at its ends at once.
        let mut old = p.clone();
        for s in old.spread.values_mut() {
            s.values.clear();
        }
        assert!(old.rounds().unwrap_or_else(|e| panic!("{e}")).is_none());
        let i = size_with_interval(&old, &w).unwrap_or_else(|e| panic!("{e}")).interval;
        let i = i.unwrap_or_else(|| panic!("no interval"));
        assert!(i.total_cores_high > 1.05 * i.total_cores_low, "{i:?}");
    }

    #[test]
    fn rounds_that_measured_different_figures_are_refused() {
        let mut other = round(1.0);
        other.suites.clear();
        let e = combine(&[round(1.0), other], None).map(|_| ()).map_err(|e| e.to_string());
        assert!(e.as_ref().is_err_and(|e| e.contains("measured in 1 of 2 rounds")), "{e:?}");
        assert!(combine(&[], None).is_err());
    }

    #[test]
    fn a_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut [5.0]), 5.0);
        assert!(median(&mut []).is_nan());
    }
}
