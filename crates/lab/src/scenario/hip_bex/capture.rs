//! The base exchange on the wire: `tcpdump` on both ends of the veth keeps HIP (IPv4 protocol
//! 139) and ESP in UDP 4500; the HIP header's packet type (I1 = 1, R1 = 2, I2 = 3, R2 = 4) and
//! the packet's source tell each message and its direction, so the seed's Figure 3 intervals
//! come from kernel timestamps without decrypting anything:
//!
//! - on the initiator's interface: T_be = first I1 out → first ESP out; T2 = R1 in → I2 out;
//!   T4 = R2 in → first ESP out;
//! - on the responder's interface: T1 = I1 in → R1 out; T3 = I2 in → R2 out.
//!
//! With UDP GSO a frame on the sending side may hold several ESP datagrams; only the first
//! frame's timestamp is used.

use crate::error::LabError;
use crate::tcpdump::{Tcpdump, ip_frames};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::Path;

/// The capture filter.
pub const FILTER: &str = "ip proto 139 or ip proto 50 or udp port 4500";

/// What a captured packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A HIP packet of this type (1 I1, 2 R1, 3 I2, 4 R2, ...).
    Hip(u8),
    /// ESP: IP protocol 50 (HIP's default, RFC 7402), or in UDP 4500 (a non-zero SPI where
    /// IKE has its zero marker).
    Esp,
}

/// One captured packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pkt {
    /// Unix time, µs.
    pub t_us: f64,
    pub src: Ipv4Addr,
    pub kind: Kind,
}

/// The seed's Figure 3 intervals of one base exchange, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    pub t1_us: f64,
    pub t2_us: f64,
    pub t3_us: f64,
    pub t4_us: f64,
    pub t_be_us: f64,
}

impl Phases {
    /// T1 + T2 + T3 + T4: the hosts' share; T_be minus this is time on the wire and in queues.
    pub fn sum_us(&self) -> f64 {
        self.t1_us + self.t2_us + self.t3_us + self.t4_us
    }
}

/// A running capture of the HIP and ESP packets (the first 96 bytes of each, immediate mode:
/// a run lasts milliseconds).
#[derive(Debug)]
pub struct Capture(Tcpdump);

impl Capture {
    /// Starts tcpdump on `dev` in namespace `ns` and waits until it listens.
    pub fn start(ns: &str, dev: &str, file: &Path) -> Result<Capture, LabError> {
        Tcpdump::start(ns, dev, 96, true, FILTER, file).map(Capture)
    }

    /// Ends the capture and reads its packets.
    pub fn stop(self) -> Result<Vec<Pkt>, LabError> {
        parse_pcap(&self.0.stop()?)
    }
}

/// The HIP and ESP packets of a pcap file (IPv4).
pub fn parse_pcap(b: &[u8]) -> Result<Vec<Pkt>, LabError> {
    Ok(ip_frames(b)?.into_iter().filter_map(|(t, ip)| classify(ip, t)).collect())
}

/// HIP or ESP (plain or in UDP), from an IPv4 packet.
fn classify(ip: &[u8], t_us: f64) -> Option<Pkt> {
    if ip.first()? >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let src = Ipv4Addr::new(*ip.get(12)?, *ip.get(13)?, *ip.get(14)?, *ip.get(15)?);
    let payload = ip.get(ihl..)?;
    let kind = match *ip.get(9)? {
        // The HIP header: next header, length, then 0 and the 7-bit packet type.
        139 => Kind::Hip(payload.get(2)? & 0x7f),
        50 => Kind::Esp,
        17 => {
            let spi = u32::from_be_bytes(payload.get(8..12)?.try_into().ok()?);
            if spi == 0 {
                return None; // IKE's non-ESP marker, or a keepalive
            }
            Kind::Esp
        }
        _ => return None,
    };
    Some(Pkt { t_us, src, kind })
}

fn first(pkts: &[Pkt], from: Ipv4Addr, kind: Kind, after: f64) -> Option<f64> {
    pkts.iter().find(|p| p.src == from && p.kind == kind && p.t_us >= after).map(|p| p.t_us)
}

/// The intervals of the base exchange in `[from_us, to_us)`: `init` and `resp` are the packets
/// captured on the initiator's and the responder's interfaces, `i` and `r` their addresses.
pub fn phases(
    init: &[Pkt],
    resp: &[Pkt],
    i: Ipv4Addr,
    r: Ipv4Addr,
    from_us: f64,
    to_us: f64,
) -> Option<Phases> {
    let win = |v: &[Pkt]| -> Vec<Pkt> {
        v.iter().filter(|p| p.t_us >= from_us && p.t_us < to_us).copied().collect()
    };
    let (a, b) = (win(init), win(resp));
    // Initiator side.
    let i1_out = first(&a, i, Kind::Hip(1), from_us)?;
    let r1_in = first(&a, r, Kind::Hip(2), i1_out)?;
    let i2_out = first(&a, i, Kind::Hip(3), r1_in)?;
    let r2_in = first(&a, r, Kind::Hip(4), i2_out)?;
    let esp_out = first(&a, i, Kind::Esp, r2_in)?;
    // Responder side.
    let i1_in = first(&b, i, Kind::Hip(1), from_us)?;
    let r1_out = first(&b, r, Kind::Hip(2), i1_in)?;
    let i2_in = first(&b, i, Kind::Hip(3), r1_out)?;
    let r2_out = first(&b, r, Kind::Hip(4), i2_in)?;
    Some(Phases {
        t1_us: r1_out - i1_in,
        t2_us: i2_out - r1_in,
        t3_us: r2_out - i2_in,
        t4_us: esp_out - r2_in,
        t_be_us: esp_out - i1_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
    const R: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

    fn p(t: f64, src: Ipv4Addr, kind: Kind) -> Pkt {
        Pkt { t_us: t, src, kind }
    }

    #[test]
    fn figure_3_intervals_from_both_captures() {
        let init = [
            p(1000.0, I, Kind::Hip(1)),
            p(1200.0, R, Kind::Hip(2)),
            p(5200.0, I, Kind::Hip(3)),
            p(8300.0, R, Kind::Hip(4)),
            p(8900.0, I, Kind::Esp),
            p(9000.0, R, Kind::Esp),
        ];
        let resp = [
            p(1010.0, I, Kind::Hip(1)),
            p(1190.0, R, Kind::Hip(2)),
            p(5210.0, I, Kind::Hip(3)),
            p(8290.0, R, Kind::Hip(4)),
        ];
        let ph = phases(&init, &resp, I, R, 0.0, 1e9);
        let want =
            Phases { t1_us: 180.0, t2_us: 4000.0, t3_us: 3080.0, t4_us: 600.0, t_be_us: 7900.0 };
        assert_eq!(ph, Some(want));
        assert!(want.sum_us() <= want.t_be_us);
        // A window without the exchange has none.
        assert_eq!(phases(&init, &resp, I, R, 10_000.0, 1e9), None);
    }

    #[test]
    fn hip_and_esp_are_told_apart() {
        let mut hip = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 139, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2];
        hip.extend([59, 4, 0x03, 0x02]);
        assert_eq!(classify(&hip, 5.0).map(|p| p.kind), Some(Kind::Hip(3)));
        let mut udp = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 192, 0, 2, 2, 192, 0, 2, 1];
        udp.extend([0x11, 0x94, 0x11, 0x94, 0, 0, 0, 0]);
        let mut esp = udp.clone();
        esp.extend([0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(classify(&esp, 5.0).map(|p| (p.kind, p.src)), Some((Kind::Esp, R)));
        udp.extend([0, 0, 0, 0]);
        assert_eq!(classify(&udp, 5.0), None, "IKE's non-ESP marker");
        let mut raw = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 50, 0, 0, 192, 0, 2, 2, 192, 0, 2, 1];
        raw.extend([0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1]);
        assert_eq!(classify(&raw, 5.0).map(|p| (p.kind, p.src)), Some((Kind::Esp, R)));
    }
}
