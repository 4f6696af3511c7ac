//! Tests of the plan: the generated rules and the profiles' budgets.

use super::*;
use filter::{Direction, LinearFilter, PacketKey};

#[test]
fn generated_rules_never_touch_the_tunnel_traffic() {
    let text = rules_text(5000);
    assert_eq!(text.lines().count(), 5000);
    let set = filter::parse_rules(&text).unwrap();
    let lin = LinearFilter::new(&set);
    let (a, b): (IpAddr, IpAddr) = (INNER_V4[0].into(), INNER_V4[1].into());
    for (dir, src, dst) in [(Direction::In, a, b), (Direction::Out, b, a), (Direction::In, b, a)] {
        for (proto, sp, dp) in [(6, 40000, 12866), (17, 40001, 33000), (6, 12866, 40000)] {
            let k = PacketKey::new(dir, src, dst, proto, sp, dp);
            assert_eq!(lin.evaluate(&k).rule, None, "{k:?} matched");
        }
    }
    // Deterministic: the same rules every run, and a prefix of the larger sets' generator.
    assert_eq!(rules_text(100), rules_text(100));
    assert!(rules_text(0).is_empty());
}

#[test]
fn plans_fit_their_budgets() {
    for (full, budget_s) in [(false, 200.0), (true, 1500.0)] {
        let p = plan(full);
        let s: f64 = p.points.iter().map(|x| planned_point_s(&p, x)).sum();
        assert!(s < budget_s, "full={full}: {s} s planned");
        assert_eq!(p.points.first().map(|x| x.imp), Some(Implementation::Off));
        assert_eq!(p.points.last().map(|x| x.imp), Some(Implementation::Off));
    }
    let q = plan(false);
    assert!(q.points.contains(&Point { imp: Implementation::Classifier, rules: 100_000 }));
    assert!(
        !plan(true)
            .points
            .iter()
            .any(|x| x.imp == Implementation::NftLinear && x.rules > NFT_LINEAR_MAX)
    );
}
