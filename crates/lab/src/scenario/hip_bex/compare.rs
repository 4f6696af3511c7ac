//! The seed's published numbers (Tables 4, 6 and 7 of the HIPL measurements) beside ours, for
//! the HTML report's headline charts: base-exchange intervals per device pair, round trips and
//! throughput.

use super::devices::DeviceSeries;
use super::plan::Results;
use super::table::{PHASES, wire_us};
use super::transfer::{Rtt, Throughput};
use crate::error::LabError;
use crate::report::Report;
use crate::report::compare::Comparison;

const WHY_BEX: &str =
    "one of today's server cores with ECDSA/ECDH on P-256 against the seed's 2009 laptop and PC";
const WHY_RTT: &str = "a veth between namespaces, not a network: the plain round trip is microseconds, HIP adds two passes through each userspace node";

fn bex(out: &mut Vec<Comparison>, r: &Report, pair: &str, what: &str, s: &super::bex::Series) {
    let chart = format!("Base exchange {pair} ({what}), Table 4");
    for (key, label) in PHASES {
        let Some(seed) = r.seed_num(&["times_ms", pair, key]) else { continue };
        let ours = s.median.as_ref().and_then(|m| wire_us(m, key)).map(|us| us / 1e3);
        out.push(Comparison::new(&chart, *label, "ms", seed).ours(ours).why(WHY_BEX));
    }
}

fn rtt(out: &mut Vec<Comparison>, r: &Report, key: &str, what: &str, rtt: Option<&Rtt>) {
    let chart = format!("Round trip {what}, Table 6 {key}");
    for (path, label) in [("ipv6", "IPv6 (plain)"), ("hip", "HIP (HIT to HIT, ESP)")] {
        let Some(seed) = r.seed_num(&["rtt_ms", key, path]) else { continue };
        let ours = rtt.map(|x| if path == "hip" { x.hip.avg_ms } else { x.ipv6.avg_ms });
        out.push(Comparison::new(&chart, label, "ms", seed).ours(ours).why(WHY_RTT));
    }
}

fn throughput(out: &mut Vec<Comparison>, r: &Report, col: &str, what: &str, t: &[Throughput]) {
    let chart = format!("Throughput {what}, Table 7 {col}");
    for (key, proto, hip, label) in [
        ("tcp", "TCP", false, "TCP"),
        ("tcp_hip", "TCP", true, "TCP + HIP"),
        ("udp", "UDP", false, "UDP"),
        ("udp_hip", "UDP", true, "UDP + HIP"),
    ] {
        let Some(seed) = r.seed_num(&["throughput_mbit_s", col, key]) else { continue };
        let ours = t
            .iter()
            .find(|x| x.proto == proto && x.hip == hip && (col != "ethernet" || x.link == "10mbit"))
            .map(|x| x.mbit_s);
        out.push(Comparison::new(&chart, label, "Mbit/s", seed).ours(ours).why(
            "both on a link of about the seed's rate: the link, not the CPU, bounds the rate",
        ));
    }
}

/// Every published figure of the seed that this report measured (or should have).
pub fn comparisons(r: &Report) -> Result<Vec<Comparison>, LabError> {
    let Some(res) = r.extra_as::<Results>()? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    bex(&mut out, r, "A1", "laptop → PC, Ethernet", &res.main);
    let dev = |name: &str| res.devices.iter().find(|d| d.name == name);
    let a2: Option<&DeviceSeries> = dev("A2");
    let a3: Option<&DeviceSeries> = dev("A3");
    for (pair, d) in [("A2", a2), ("A3", a3)] {
        if let Some(d) = d {
            bex(&mut out, r, pair, &d.what, &d.bex);
        }
    }
    rtt(&mut out, r, "B1_ethernet", "on Ethernet", res.rtt.as_ref());
    for (key, d) in [("B2_wifi", a2), ("B3_tablet", a3)] {
        if let Some(d) = d {
            rtt(&mut out, r, key, &format!("{} ({})", d.name, d.what), d.rtt.as_ref());
        }
    }
    throughput(&mut out, r, "ethernet", "on a 10 Mbit/s link", &res.throughput);
    if let Some(d) = a2 {
        throughput(&mut out, r, "wireless", "on the Wi-Fi-like link (A2)", &d.throughput);
    }
    Ok(out)
}
