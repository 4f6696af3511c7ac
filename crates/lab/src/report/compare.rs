//! Our figure beside the seed's: one [`Comparison`] per published number, the plain-words reading
//! of the difference (the ratio ours ÷ seed), and the headline charts that draw them.
//!
//! Each scenario knows which of its figures answers which published number
//! (`Scenario::comparisons`); this module only reads and draws them.

use super::number::num;
use super::svg::Group;
use serde::Serialize;

/// One published number of the seed and ours for the same figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The headline chart it is drawn in, e.g. "Base exchange, A1".
    pub chart: String,
    /// The figure, e.g. "T2 initiator: R1 in → I2 out".
    pub figure: String,
    /// Unit of both values, e.g. "ms".
    pub unit: String,
    pub seed: f64,
    /// None: not measured in this run.
    pub ours: Option<f64>,
    /// Why the two differ, where the scenario knows a reason.
    pub why: Option<String>,
}

impl Comparison {
    pub fn new(chart: &str, figure: impl Into<String>, unit: &str, seed: f64) -> Self {
        Comparison {
            chart: chart.into(),
            figure: figure.into(),
            unit: unit.into(),
            seed,
            ours: None,
            why: None,
        }
    }

    pub fn ours(mut self, v: Option<f64>) -> Self {
        self.ours = v.filter(|v| v.is_finite());
        self
    }

    pub fn why(mut self, why: impl Into<String>) -> Self {
        self.why = Some(why.into());
        self
    }

    /// ours ÷ seed, when both have the same sign and the seed is not zero.
    pub fn ratio(&self) -> Option<f64> {
        let o = self.ours?;
        (self.seed != 0.0 && o * self.seed >= 0.0).then(|| o / self.seed)
    }

    /// The difference in plain words, e.g. "ours is 115× lower than the seed's (0.0087)".
    pub fn reading(&self) -> String {
        let Some(o) = self.ours else {
            return "not measured in this run".into();
        };
        let u = &self.unit;
        let plain = match self.ratio() {
            Some(q) if (0.9..=1.1).contains(&q) => {
                format!("ours is within 10 % of the seed's (ours ÷ seed = {:.2})", q)
            }
            Some(q) if q > 1.0 => {
                format!("ours is {}× the seed's ({} vs {} {u})", sig3(q), num(o), num(self.seed))
            }
            Some(q) if q > 0.0 => format!(
                "ours is {}× lower than the seed's (ours ÷ seed = {})",
                sig3(1.0 / q),
                sig3(q)
            ),
            Some(_) => format!("ours is 0 {u} where the seed has {} {u}", num(self.seed)),
            None if self.seed == 0.0 => format!("ours is {} {u} where the seed has 0", num(o)),
            None => {
                let points = if u == "%" { "percentage points".to_string() } else { u.clone() };
                format!(
                    "ours is {}{} {u}, the seed's {}{} {u}: opposite directions, {} {points} apart (no ratio across the sign)",
                    if o > 0.0 { "+" } else { "" },
                    num(o),
                    if self.seed > 0.0 { "+" } else { "" },
                    num(self.seed),
                    num((o - self.seed).abs())
                )
            }
        };
        match &self.why {
            Some(w) => format!("{plain}; {w}"),
            None => plain,
        }
    }

    /// Within 25 % of the seed's figure.
    pub fn close(&self) -> bool {
        self.ratio().is_some_and(|q| (0.8..=1.25).contains(&q))
    }
}

/// A ratio with three significant digits (0.00865, 0.419, 12.6, 115).
pub fn sig3(q: f64) -> String {
    if !q.is_finite() || q == 0.0 {
        return num(q);
    }
    let digits = (2 - q.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{q:.digits$}")
}

/// One headline chart: its title, unit and groups (seed and ours per figure).
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    pub title: String,
    pub unit: String,
    pub groups: Vec<Group>,
}

/// The comparisons drawn as charts, one per `chart` title in first-seen order; a figure we did not
/// measure keeps its seed bar alone.
pub fn headlines(comparisons: &[Comparison]) -> Vec<Headline> {
    let mut out: Vec<Headline> = Vec::new();
    for c in comparisons {
        let mut bars = vec![("seed".to_string(), c.seed, 0.0)];
        if let Some(o) = c.ours {
            bars.push(("ours".to_string(), o, 0.0));
        }
        let group = (c.figure.clone(), bars);
        match out.iter_mut().find(|h| h.title == c.chart && h.unit == c.unit) {
            Some(h) => h.groups.push(group),
            None => out.push(Headline {
                title: c.chart.clone(),
                unit: c.unit.clone(),
                groups: vec![group],
            }),
        }
    }
    out
}

/// One sentence over all comparisons, for the index page.
pub fn summary(comparisons: &[Comparison]) -> String {
    let measured: Vec<&Comparison> = comparisons.iter().filter(|c| c.ours.is_some()).collect();
    if comparisons.is_empty() {
        return "no published figure to compare with".into();
    }
    let close = measured.iter().filter(|c| c.close()).count();
    format!(
        "{} published figures, {} measured here, {} of them within 25 % of the seed's",
        comparisons.len(),
        measured.len(),
        close
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_names_the_ratio() {
        let c = Comparison::new("A1", "T_be", "ms", 188.418).ours(Some(1.63));
        let r = c.reading();
        assert!(r.contains("× lower"), "{r}");
        assert!(r.contains("0.00865"), "{r}");
        let same = Comparison::new("x", "tcp", "Mbit/s", 8.773).ours(Some(9.49));
        assert!(same.reading().contains("within 10 %"), "{}", same.reading());
        assert!(same.close());
        let signed = Comparison::new("x", "drop", "%", -0.788).ours(Some(1.2));
        assert_eq!(signed.ratio(), None);
        assert!(signed.reading().contains("no ratio"));
        let none = Comparison::new("x", "y", "s", 1.0).ours(None);
        assert_eq!(none.reading(), "not measured in this run");
    }

    #[test]
    fn headlines_group_by_chart_and_unit() {
        let cs = [
            Comparison::new("BEX", "T1", "ms", 17.0).ours(Some(0.15)),
            Comparison::new("BEX", "T2", "ms", 98.8),
            Comparison::new("RTT", "IPv6", "ms", 0.43).ours(Some(0.018)),
        ];
        let h = headlines(&cs);
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].groups.len(), 2);
        assert_eq!(h[0].groups[1].1.len(), 1, "an unmeasured figure keeps its seed bar");
        assert!(summary(&cs).starts_with("3 published figures, 2 measured"));
    }
}
