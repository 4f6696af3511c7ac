//! The seed's scenarios B and C on an established association: ping round trips to the peer's
//! HIT (through the HIP/ESP nodes) and to its plain IPv6 address on the veth; iperf3 TCP and UDP
//! from the initiator to the responder, over HIP and plain IPv6, on links shaped by `tc tbf` (both
//! veth ends) or unlimited.

use super::hosts::{HipHosts, PingStats};
use crate::error::LabError;
use crate::traffic::iperf;
use crate::traffic::{Request, TestKind};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// Round trips, plain IPv6 and HIP.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rtt {
    pub ipv6: PingStats,
    pub hip: PingStats,
}

/// One throughput test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    pub link: String,
    pub rate_bps: Option<u64>,
    /// "TCP" or "UDP".
    pub proto: String,
    pub hip: bool,
    /// Receiver's rate.
    pub mbit_s: f64,
    pub sender_mbit_s: f64,
    pub lost_pct: Option<f64>,
}

/// UDP datagrams small enough for the veth and for the HIP path without fragments.
pub const UDP_PAYLOAD: usize = 1200;
/// TCP writes (iperf3's default).
pub const TCP_WRITE: usize = 131_072;

/// `count` pings each way (plain first, then HIP), 10 ms apart; the nodes must be up with an
/// association.
pub fn rtt(hosts: &HipHosts, count: u32) -> Result<Rtt, LabError> {
    let (src, dst) = (hosts.plain_v6(0)?.to_string(), hosts.plain_v6(1)?.to_string());
    let ipv6 = hosts.ping(&src, &dst, count)?;
    let hip = hosts.ping(&hosts.hits[0], &hosts.hits[1], count)?;
    Ok(Rtt { ipv6, hip })
}

/// TCP and UDP, plain then HIP, on each link; `secs` measured after 1 s omitted.
pub fn throughput(
    hosts: &mut HipHosts,
    links: &[(String, Option<u64>)],
    secs: u64,
) -> Result<Vec<Throughput>, LabError> {
    let mut out = Vec::new();
    for (name, rate) in links {
        hosts.topo.set_rate(*rate)?;
        out.extend(tests(hosts, name, *rate, secs)?);
    }
    hosts.topo.set_rate(None)?;
    Ok(out)
}

/// TCP and UDP, plain then HIP, on the link as it is shaped now (`name` and `rate` label it);
/// `secs` measured after 1 s omitted.
pub fn tests(
    hosts: &mut HipHosts,
    name: &str,
    rate: Option<u64>,
    secs: u64,
) -> Result<Vec<Throughput>, LabError> {
    let hit: IpAddr = hosts.hits[1]
        .parse()
        .map_err(|_| LabError::parse("responder HIT", hosts.hits[1].clone()))?;
    let plain = hosts.plain_v6(1)?;
    let mut out = Vec::new();
    for (test, msg, proto) in
        [(TestKind::TcpStream, TCP_WRITE, "TCP"), (TestKind::UdpStream, UDP_PAYLOAD, "UDP")]
    {
        for (over_hip, ip) in [(false, plain), (true, hit)] {
            let req = Request { test, msg_size: msg, resp_size: 0 };
            let r = iperf::run(&hosts.topo, "h1", "h2", ip, req, secs, 1)?;
            hosts.check()?;
            out.push(Throughput {
                link: name.to_string(),
                rate_bps: rate,
                proto: proto.into(),
                hip: over_hip,
                mbit_s: r.mbit_s,
                sender_mbit_s: r.sender_mbit_s,
                lost_pct: r.lost_pct,
            });
        }
    }
    Ok(out)
}
