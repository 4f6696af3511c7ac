//! The report's forwarding sections: STREAM/RR through the home agent beside the plain path,
//! the move under a paced stream, a plain-words reading, and a chart.

use super::move_gap;
use super::stream_rr::{ForwardResults, Way};
use crate::report::{Chart, Section};
use crate::traffic::TestKind;
use std::fmt::Write as _;

const TESTS: [TestKind; 4] =
    [TestKind::TcpStream, TestKind::UdpStream, TestKind::TcpRr, TestKind::UdpRr];

fn fig(v: f64, test: TestKind) -> String {
    if test.is_stream() { format!("{v:.0} Mbit/s") } else { format!("{v:.0} trans/s") }
}

fn us(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.0}"))
}

/// The forwarding and move sections.
pub fn sections(f: &ForwardResults) -> Vec<Section> {
    let mut t = String::from(
        "| test | through the home agent (ESP tunnel) | plain path to the care-of address | tunnel ÷ plain | RR latency p50 / p99, tunnel (µs) | plain (µs) | hipsec nodes' CPU, tunnel (% of a core) |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for test in TESTS {
        let Some(c) = f.case(Way::Tunnel, test) else { continue };
        let p = f.case(Way::Plain, test);
        let lat = |c: Option<&super::stream_rr::ForwardCase>| match c {
            Some(c) if !test.is_stream() => format!("{} / {}", us(c.rtt_p50_us), us(c.rtt_p99_us)),
            _ => "–".into(),
        };
        let _ = writeln!(
            t,
            "| {} {} B | {} | {} | {} | {} | {} | {:.0} |",
            test,
            c.req.msg_size,
            fig(c.value, test),
            p.map_or("–".into(), |p| fig(p.value, test)),
            p.filter(|p| p.value > 0.0)
                .map_or("–".into(), |p| format!("{:.2}", c.value / p.value)),
            lat(Some(c)),
            lat(p),
            c.nodes_cpu_pct,
        );
    }
    let _ = write!(
        t,
        "\nCorrespondent → home address: the home link's router resolves the home address by \
         neighbour discovery, the home agent answers for it (proxy, RFC 6275 §10.4.1), seals the \
         packet in ESP tunnel mode ({}) to the care-of address (RFC 4877), the mobile node opens \
         it onto its TUN; replies go back through the reverse tunnel. The plain path sends the same \
         tests to the care-of address through the routers alone (one router hop fewer, no hipsec \
         node). Medians of {} repetitions of {} ms each (after {} ms warm-up); the control \
         connection stays on the plain path. The seed's forwarding figures (netperf 2.2p14 through its ESP tunnel) are not in \
         the excerpt (docs/reference/seed-figures.toml: \"figures not in the excerpt\"): ours \
         stand beside our own plain path only.",
        f.suite, f.params.repetitions, f.params.duration_ms, f.params.warmup_ms,
    );
    let mut g = String::from(
        "| move | datagrams sent | delivered | lost | longest time without delivery | it began (after the deletion) | deletion → first delivery at the new address | re-registrations | mobile node moves / home agent tunnel moves | BUs sent |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for m in &f.moves {
        let _ = writeln!(
            g,
            "| {} → {} | {} (1 per {} µs) | {} | {} | {:.1} ms | {:+.1} ms | {} | {} | {} / {} | {} |",
            m.from,
            m.to,
            m.sent,
            m.interval_us,
            m.delivered,
            m.lost,
            m.longest_gap_ms,
            m.longest_gap_from_ms,
            m.first_after_move_ms.map_or("none came".into(), |v| format!("{v:.1} ms")),
            m.reregistrations,
            m.mn_moves,
            m.ha_moved,
            m.bu_sent,
        );
    }
    let (gap, first) = move_gap::medians(&f.moves);
    let ms = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.1} ms"));
    let _ = writeln!(
        g,
        "| **median of {}** | | | | **{}** | | **{}** | | | |",
        f.moves.len(),
        ms(gap),
        ms(first)
    );
    let apart = move_gap::medians_of(&f.moves, |m| m.add_to_delete_ms);
    let _ = write!(
        g,
        "\nA UDP stream from the correspondent to the home address, each datagram with its \
         sequence number and send time; under it the mobile node's new care-of address was added \
         and the old one deleted ({} apart, median), back and forth between the two addresses, \
         one stream per move. *Deletion → first delivery*: the first datagram sent after the old \
         address was gone (so it can only have gone to the new one) that arrived.",
        ms(apart)
    );
    vec![
        Section {
            title: "Forwarding: correspondent → home agent → mobile node".into(), body: t
        },
        Section { title: "Move under traffic".into(), body: g },
    ]
}

/// The reading's lines on forwarding and the move.
pub fn reading(f: &ForwardResults) -> String {
    let mut out = String::new();
    let ratio = |test| match (f.case(Way::Tunnel, test), f.case(Way::Plain, test)) {
        (Some(t), Some(p)) if p.value > 0.0 => Some((t.value, p.value, t.value / p.value)),
        _ => None,
    };
    if let Some((t, p, r)) = ratio(TestKind::TcpStream) {
        let _ = writeln!(
            out,
            "- Forwarding: TCP through the home agent's ESP tunnel ran at {t:.0} Mbit/s against {p:.0} on the \
             plain path ({:.0} %): every packet is sealed by one userspace node and opened by another, with \
             both TUN devices and the home agent's extra hop on the same two cores.",
            r * 100.0
        );
    }
    if let Some((t, p, _)) = ratio(TestKind::UdpRr) {
        let lat = |w| f.case(w, TestKind::UdpRr).and_then(|c| c.rtt_p50_us).unwrap_or(0.0);
        let _ = writeln!(
            out,
            "- Round trips: {t:.0} UDP transactions/s through the home agent against {p:.0} direct; a round \
             trip costs {:.0} µs against {:.0} µs (p50) — the two tunnel crossings and the home agent's hop.",
            lat(Way::Tunnel),
            lat(Way::Plain)
        );
    }
    let (gap, first) = move_gap::medians(&f.moves);
    let lost: u64 = f.moves.iter().map(|m| m.lost).sum();
    let sent: u64 = f.moves.iter().map(|m| m.sent).sum();
    let back = first.map_or("delivery never resumed at the new address".into(), |v| {
        format!("the first datagram sent after the deletion arrived {v:.1} ms after it (median)")
    });
    let _ = writeln!(
        out,
        "- The moves: over {} moves, {lost} of {sent} datagrams were lost, the longest time without delivery \
         was {} (median), and {back}. The mobile node hears of the address change from the kernel \
         (rtnetlink) and sends its Binding Update at once; the rest is the Binding Update's way to the \
         home agent and the tunnel's move there.",
        f.moves.len(),
        gap.map_or("–".into(), |v| format!("{v:.1} ms")),
    );
    out
}

/// A chart: STREAM Mbit/s and RR transactions/s, tunnel beside plain.
pub fn charts(f: &ForwardResults) -> Vec<Chart> {
    let groups = |stream: bool| -> Vec<crate::report::svg::Group> {
        TESTS
            .iter()
            .filter(|t| t.is_stream() == stream)
            .map(|&test| {
                let bars = [(Way::Tunnel, "through the home agent"), (Way::Plain, "plain path")]
                    .iter()
                    .filter_map(|&(w, label)| {
                        f.case(w, test).map(|c| (label.to_string(), c.value, 0.0))
                    })
                    .collect();
                (test.to_string(), bars)
            })
            .collect()
    };
    vec![
        Chart {
            file: "forward_stream.svg".into(),
            title: "Correspondent → mobile node: STREAM through the home agent and plain (median)"
                .into(),
            unit: "Mbit/s".into(),
            groups: groups(true),
        },
        Chart {
            file: "forward_rr.svg".into(),
            title: "Correspondent → mobile node: RR through the home agent and plain (median)"
                .into(),
            unit: "trans/s".into(),
            groups: groups(false),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::mip6_binding::move_gap::MoveGap;
    use crate::scenario::mip6_binding::stream_rr::{ForwardCase, tests};
    use crate::traffic::runner::RunParams;

    #[test]
    fn tunnel_beside_plain_and_the_move_in_words() {
        let case = |way, req: crate::traffic::Request, value| ForwardCase {
            way,
            req,
            value,
            summary: None,
            rtt_p50_us: (!req.test.is_stream()).then_some(80.0),
            rtt_p99_us: (!req.test.is_stream()).then_some(200.0),
            nodes_cpu_pct: 50.0,
            errors: 0,
        };
        let mut cases = Vec::new();
        for req in tests() {
            cases.push(case(Way::Tunnel, req, 500.0));
            cases.push(case(Way::Plain, req, 1000.0));
        }
        let f = ForwardResults {
            suite: "aes128gcm".into(),
            params: RunParams { warmup_ms: 200, duration_ms: 1000, repetitions: 2 },
            registration_s: 0.2,
            cases,
            moves: vec![MoveGap {
                from: "2001:db8:2::100".into(),
                to: "2001:db8:3::100".into(),
                interval_us: 1000,
                sent: 3500,
                send_errors: 0,
                delivered: 3000,
                lost: 500,
                duplicates: 0,
                longest_gap_ms: 501.0,
                longest_gap_from_ms: -0.3,
                add_to_delete_ms: 4.0,
                first_after_move_ms: Some(500.2),
                delivered_after_move: 2000,
                reregistrations: 1,
                mn_moves: 1,
                ha_moved: 1,
                bu_sent: 1,
            }],
        };
        let s = sections(&f);
        assert_eq!(s.len(), 2);
        assert!(s[0].body.contains("| TCP_STREAM 16384 B | 500 Mbit/s | 1000 Mbit/s | 0.50 |"));
        assert!(s[0].body.contains("figures not in the excerpt"));
        assert!(
            s[1].body.contains(
                "| 2001:db8:2::100 → 2001:db8:3::100 | 3500 (1 per 1000 µs) | 3000 | 500 | 501.0 ms | -0.3 ms | 500.2 ms | 1 |"
            )
        );
        let r = reading(&f);
        assert!(s[1].body.contains("| **median of 1** | | | | **501.0 ms** | | **500.2 ms** |"));
        assert!(r.contains("(50 %)") && r.contains("500 of 3500"), "{r}");
        assert_eq!(charts(&f)[0].groups.len(), 2);
    }
}
