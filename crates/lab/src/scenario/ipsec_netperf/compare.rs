//! The seed's STREAM throughput ratios (AH, ESP against plain) and its AH+ESP absolute rates
//! beside ours, for the HTML report's headline charts. Ours are taken over IPv6, as the seed's
//! headline figures are, on each link the run had.

use crate::report::compare::Comparison;
use crate::report::{Case, Report};
use crate::topology::Family;
use crate::traffic::TestKind;

fn case<'a>(
    r: &'a Report,
    mode: &str,
    link: &str,
    test: TestKind,
    size: usize,
) -> Option<&'a Case> {
    r.cases.iter().find(|c| {
        c.mode == mode
            && c.family == Family::V6
            && c.link == link
            && c.test == test
            && c.msg_size == size
    })
}

fn links(r: &Report) -> Vec<String> {
    let mut l: Vec<String> = Vec::new();
    for c in &r.cases {
        if !l.contains(&c.link) {
            l.push(c.link.clone());
        }
    }
    // The seed's fast Ethernet first.
    l.sort_by_key(|x| x != "100mbit");
    l
}

/// Every published ratio and rate, beside ours on each link.
pub fn comparisons(r: &Report) -> Vec<Comparison> {
    let mut out = Vec::new();
    let streams = [
        ("tcp_stream_throughput_ratio_vs_plain", "TCP_STREAM", TestKind::TcpStream, 16384),
        ("udp_stream_throughput_ratio_vs_plain", "UDP_STREAM", TestKind::UdpStream, 1024),
    ];
    for (key, name, test, size) in streams {
        for (sub, mode) in [("ah", "AH"), ("esp", "ESP")] {
            let Some(seed) = r.seed_num(&[key, sub]) else { continue };
            for link in links(r) {
                let ours = case(r, mode, &link, test, size).and_then(|c| c.ratio_vs_none);
                let why = if link == "unlimited" {
                    "plain traffic moves 64 KB GSO segments in the kernel while the node handles each packet in userspace; AES-NI makes the cipher itself cheap"
                } else {
                    "the link, not the CPU, bounds both modes here; the seed's 1999 PCs were CPU-bound at fast Ethernet"
                };
                out.push(
                    Comparison::new(
                        "Throughput ÷ plain (STREAM, IPv6)",
                        format!("{name} {mode} ÷ none, {link}"),
                        "ratio",
                        seed,
                    )
                    .ours(ours)
                    .why(why),
                );
            }
        }
    }
    for (sub, name, test, size) in [
        ("udp", "UDP_STREAM", TestKind::UdpStream, 1024),
        ("tcp", "TCP_STREAM", TestKind::TcpStream, 16384),
    ] {
        let Some(seed) = r.seed_num(&["ah_esp_throughput_mbit_s", sub]) else { continue };
        for link in links(r) {
            let ours = case(r, "AH+ESP", &link, test, size).and_then(|c| c.summary).map(|s| s.mean);
            out.push(
                Comparison::new(
                    "AH+ESP throughput (IPv6)",
                    format!("{name} AH+ESP, {link}"),
                    "Mbit/s",
                    seed,
                )
                .ours(ours)
                .why("1999 PCs without crypto instructions against a 2020s core with AES-NI"),
            );
        }
    }
    out
}
