//! Do two calibrations of one machine agree? Each cost of a profile of several rounds carries
//! its range over the rounds ([`Spread`]); two profiles agree on a cost when those ranges
//! overlap: the difference between them is no more than what each calibration saw its own
//! rounds move. A cost of a profile from one round has a range of one point.

use crate::profile::{Profile, Spread};
use serde::Serialize;

/// One cost in both profiles.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostAgreement {
    /// The cost's dotted path in the profile (`suites.aes128gcm.seal.per_packet_ns`).
    pub figure: String,
    /// Its spread in the first profile.
    pub a: Spread,
    /// Its spread in the second.
    pub b: Spread,
    /// (b − a) ÷ a of the medians (NaN when a's median is 0).
    pub change: f64,
    /// The two ranges overlap.
    pub agree: bool,
}

fn point(x: f64) -> Spread {
    Spread { median: x, min: x, max: x, rounds: 1, values: Vec::new() }
}

/// Where a part-load figure was measured (the rate of its run), not what it cost: the x of
/// the `by_rate` tables, and the wake-ups kept for the reader.
fn is_coordinate(figure: &str) -> bool {
    figure.contains("by_rate.")
        && [".share", ".packets_per_s", ".gbps", ".setups_per_s", ".wakeups_per_packet"]
            .iter()
            .any(|end| figure.ends_with(end))
}

/// Every cost both profiles hold, in path order. Costs only one of them holds are left out
/// (other suites measured); a profile without spreads compares its figures as points.
pub fn agreement(a: &Profile, b: &Profile) -> Vec<CostAgreement> {
    let (fa, fb) = (crate::rounds::costs(a), crate::rounds::costs(b));
    let mut out = Vec::new();
    for (figure, xa) in fa.iter().filter(|(f, _)| !is_coordinate(f)) {
        let Some((_, xb)) = fb.iter().find(|(f, _)| f == figure) else { continue };
        let sa = a.spread.get(figure).cloned().unwrap_or_else(|| point(*xa));
        let sb = b.spread.get(figure).cloned().unwrap_or_else(|| point(*xb));
        let agree = sa.min <= sb.max && sb.min <= sa.max;
        let change = if sa.median != 0.0 { (sb.median - sa.median) / sa.median } else { f64::NAN };
        out.push(CostAgreement { figure: figure.clone(), a: sa, b: sb, change, agree });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rounds::tests::base as example_profile;

    fn spread(median: f64, min: f64, max: f64) -> Spread {
        Spread { median, min, max, rounds: 5, values: Vec::new() }
    }

    #[test]
    fn overlapping_ranges_agree_and_disjoint_ones_do_not() {
        let mut a = example_profile();
        let mut b = example_profile();
        let f = "ike.ike_sa_setup_us".to_string();
        let x = a.ike.ike_sa_setup_us;
        a.spread.insert(f.clone(), spread(x, 0.9 * x, 1.1 * x));
        b.spread.insert(f.clone(), spread(1.15 * x, 1.05 * x, 1.2 * x));
        let r = agreement(&a, &b);
        let c = r.iter().find(|c| c.figure == f).unwrap_or_else(|| panic!("{r:?}"));
        assert!(c.agree && (c.change - 0.15).abs() < 1e-9, "{c:?}");
        b.spread.insert(f.clone(), spread(1.3 * x, 1.2 * x, 1.4 * x));
        let r = agreement(&a, &b);
        assert!(!r.iter().any(|c| c.figure == f && c.agree), "{r:?}");
        // Without spreads, two equal profiles agree everywhere, as points.
        let p = example_profile();
        let r = agreement(&p, &p);
        assert!(r.len() > 10 && r.iter().all(|c| c.agree), "{r:?}");
    }

    /// The rates a part-load point ran at are where it was measured, not a cost to agree on.
    #[test]
    fn the_rates_of_part_load_points_are_not_compared() {
        assert!(is_coordinate("carriers.udp.by_rate.paced20.gbps"));
        assert!(is_coordinate("ike.setup_by_rate.paced5.setups_per_s"));
        assert!(!is_coordinate("carriers.udp.by_rate.paced20.extra_ns"));
        assert!(!is_coordinate("ike.setup_by_rate.paced5.us"));
        assert!(!is_coordinate("carriers.udp.per_byte_ns"));
    }
}
