//! IKE timing from the wire: `tcpdump` on the initiating gateway's outer link keeps every IKE
//! message (UDP 500, and UDP 4500 with the non-ESP marker); the IKE header is in clear (SPIs,
//! exchange type, response flag, message ID), so requests pair with responses and each
//! exchange gets its round trip without decrypting anything.
//!
//! Which CREATE_CHILD_SA exchange rekeyed the IKE SA is not visible in clear; the node's log
//! says which IKE SAs were replaced (`ike-sa-up`, then `ike-sa-rekeyed` with each new SA's
//! SPI): on a replaced SA, the last CREATE_CHILD_SA exchange is its rekey (after it, only the
//! DELETE of the old SA travels on it). Every other CREATE_CHILD_SA exchange is a CHILD rekey.
//! A rekey's delay is counted to the end of the DELETE exchange that follows it (the seed's
//! two round trips: request, response, then the delete or traffic on the new SA), and also to
//! the response alone.

use crate::error::LabError;
use crate::tcpdump::{Tcpdump, ip_frames};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::Path;

/// IKEv2 exchange types (RFC 7296 §3.1).
pub const IKE_SA_INIT: u8 = 34;
pub const IKE_AUTH: u8 = 35;
pub const CREATE_CHILD_SA: u8 = 36;
pub const INFORMATIONAL: u8 = 37;

/// One IKE message on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IkeMsg {
    /// Unix time, µs.
    pub t_us: f64,
    pub spi_i: u64,
    pub exchange: u8,
    pub response: bool,
    pub msg_id: u32,
    /// Sent by the capturing gateway.
    pub ours: bool,
}

/// A request and its response.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    pub spi_i: u64,
    pub exchange: u8,
    pub msg_id: u32,
    /// Requested by the capturing gateway.
    pub by_us: bool,
    pub request_us: f64,
    pub response_us: Option<f64>,
}

/// A rekey's timing, µs of Unix time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rekey {
    pub by_us: bool,
    pub request_us: f64,
    pub response_us: Option<f64>,
    /// End of the DELETE exchange that followed.
    pub deleted_us: Option<f64>,
}

impl Rekey {
    /// Request to response, s.
    pub fn rtt_s(&self) -> Option<f64> {
        self.response_us.map(|r| (r - self.request_us) / 1e6)
    }

    /// Request to the end of the DELETE, s (the seed's two round trips).
    pub fn delay_s(&self) -> Option<f64> {
        self.deleted_us.map(|d| (d - self.request_us) / 1e6)
    }
}

/// What the capture shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IkeTiming {
    pub ike_rekeys: Vec<Rekey>,
    pub child_rekeys: Vec<Rekey>,
    /// IKE_SA_INIT request to IKE_AUTH response of the first IKE SA, s, and messages counted.
    pub setup_s: Option<f64>,
    pub setup_messages: usize,
    pub messages: usize,
}

/// A running capture of the IKE messages.
#[derive(Debug)]
pub struct Capture(Tcpdump);

/// The capture filter: IKE on 500, and on 4500 behind the 4-byte non-ESP marker.
const FILTER: &str = "udp port 500 or (udp port 4500 and udp[8:4] = 0)";

impl Capture {
    /// Starts tcpdump on `dev` in namespace `ns` and waits until it listens.
    pub fn start(ns: &str, dev: &str, file: &Path) -> Result<Capture, LabError> {
        Tcpdump::start(ns, dev, 128, false, FILTER, file).map(Capture)
    }

    /// Ends the capture and reads the IKE messages; `ours` is the capturing gateway's outer
    /// address.
    pub fn stop(self, ours: Ipv4Addr) -> Result<Vec<IkeMsg>, LabError> {
        parse_pcap(&self.0.stop()?, ours)
    }
}

/// The IKE messages of a pcap file (IPv4).
pub fn parse_pcap(b: &[u8], ours: Ipv4Addr) -> Result<Vec<IkeMsg>, LabError> {
    Ok(ip_frames(b)?.into_iter().filter_map(|(t, ip)| ike_of(ip, ours, t)).collect())
}

/// The IKE header of an IPv4/UDP packet, if it carries one.
fn ike_of(ip: &[u8], ours: Ipv4Addr, t_us: f64) -> Option<IkeMsg> {
    if ip.first()? >> 4 != 4 || *ip.get(9)? != 17 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let src = Ipv4Addr::new(*ip.get(12)?, ip[13], ip[14], ip[15]);
    let udp = ip.get(ihl..)?;
    let sport = u16::from_be_bytes([*udp.first()?, *udp.get(1)?]);
    let dport = u16::from_be_bytes([*udp.get(2)?, *udp.get(3)?]);
    let mut ike = udp.get(8..)?;
    if sport == 4500 || dport == 4500 {
        ike = ike.get(4..)?; // non-ESP marker
    }
    let h = ike.get(..28)?;
    let spi_i = u64::from_be_bytes(h[0..8].try_into().ok()?);
    Some(IkeMsg {
        t_us,
        spi_i,
        exchange: h[18],
        response: h[19] & 0x20 != 0,
        msg_id: u32::from_be_bytes(h[20..24].try_into().ok()?),
        ours: src == ours,
    })
}

/// Pairs requests with responses (a retransmitted request keeps its first time).
pub fn exchanges(msgs: &[IkeMsg]) -> Vec<Exchange> {
    let mut out: Vec<Exchange> = Vec::new();
    for m in msgs {
        let same = |e: &Exchange| {
            e.spi_i == m.spi_i
                && e.msg_id == m.msg_id
                && e.exchange == m.exchange
                && e.by_us == (m.ours != m.response)
        };
        if !m.response {
            if !out.iter().any(same) {
                out.push(Exchange {
                    spi_i: m.spi_i,
                    exchange: m.exchange,
                    msg_id: m.msg_id,
                    by_us: m.ours,
                    request_us: m.t_us,
                    response_us: None,
                });
            }
        } else if let Some(e) = out.iter_mut().rev().find(|e| same(e)) {
            e.response_us.get_or_insert(m.t_us);
        }
    }
    out
}

/// Sorts the exchanges into IKE and CHILD rekeys. `replaced` are the initiator SPIs of the IKE
/// SAs that the log says were rekeyed.
pub fn classify(msgs: &[IkeMsg], replaced: &[u64]) -> IkeTiming {
    let ex = exchanges(msgs);
    let mut t = IkeTiming { messages: msgs.len(), ..IkeTiming::default() };
    if let Some(init) = ex.iter().find(|e| e.exchange == IKE_SA_INIT) {
        let auth = ex.iter().find(|e| e.exchange == IKE_AUTH && e.spi_i == init.spi_i);
        t.setup_s = auth.and_then(|a| a.response_us).map(|r| (r - init.request_us) / 1e6);
        t.setup_messages = msgs
            .iter()
            .filter(|m| m.spi_i == init.spi_i && matches!(m.exchange, IKE_SA_INIT | IKE_AUTH))
            .count();
    }
    let ike_rekey_idx: Vec<usize> = replaced
        .iter()
        .filter_map(|spi| ex.iter().rposition(|e| e.spi_i == *spi && e.exchange == CREATE_CHILD_SA))
        .collect();
    for (i, e) in ex.iter().enumerate().filter(|(_, e)| e.exchange == CREATE_CHILD_SA) {
        // The DELETE that follows: the next INFORMATIONAL from the same side on the same SA.
        let deleted = e.response_us.and_then(|r| {
            ex[i + 1..]
                .iter()
                .find(|d| {
                    d.exchange == INFORMATIONAL
                        && d.spi_i == e.spi_i
                        && d.by_us == e.by_us
                        && d.request_us >= r
                })
                .and_then(|d| d.response_us)
        });
        let r = Rekey {
            by_us: e.by_us,
            request_us: e.request_us,
            response_us: e.response_us,
            deleted_us: deleted,
        };
        if ike_rekey_idx.contains(&i) {
            t.ike_rekeys.push(r);
        } else {
            t.child_rekeys.push(r);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(t: f64, spi: u64, x: u8, resp: bool, id: u32, ours: bool) -> IkeMsg {
        IkeMsg { t_us: t, spi_i: spi, exchange: x, response: resp, msg_id: id, ours }
    }

    #[test]
    fn rekeys_are_told_apart_by_the_replaced_sa() {
        let msgs = vec![
            m(0.0, 1, IKE_SA_INIT, false, 0, true),
            m(500.0, 1, IKE_SA_INIT, true, 0, false),
            m(1000.0, 1, IKE_AUTH, false, 1, true),
            m(2000.0, 1, IKE_AUTH, true, 1, false),
            // CHILD rekey then its DELETE
            m(10_000.0, 1, CREATE_CHILD_SA, false, 2, true),
            m(10_400.0, 1, CREATE_CHILD_SA, true, 2, false),
            m(10_500.0, 1, INFORMATIONAL, false, 3, true),
            m(10_900.0, 1, INFORMATIONAL, true, 3, false),
            // IKE rekey (retransmitted once) then the old SA's DELETE
            m(20_000.0, 1, CREATE_CHILD_SA, false, 4, true),
            m(21_000.0, 1, CREATE_CHILD_SA, false, 4, true),
            m(21_300.0, 1, CREATE_CHILD_SA, true, 4, false),
            m(21_400.0, 1, INFORMATIONAL, false, 5, true),
            m(21_700.0, 1, INFORMATIONAL, true, 5, false),
            // a CHILD rekey on the new SA
            m(30_000.0, 2, CREATE_CHILD_SA, false, 0, true),
            m(30_200.0, 2, CREATE_CHILD_SA, true, 0, false),
        ];
        let t = classify(&msgs, &[1]);
        assert_eq!(t.setup_s, Some(0.002));
        assert_eq!(t.setup_messages, 4);
        assert_eq!(t.ike_rekeys.len(), 1);
        assert_eq!(t.ike_rekeys[0].rtt_s(), Some(0.0013));
        assert_eq!(t.ike_rekeys[0].delay_s(), Some(0.0017));
        assert_eq!(t.child_rekeys.len(), 2);
        assert_eq!(t.child_rekeys[0].delay_s(), Some(0.0009));
        assert_eq!(t.child_rekeys[1].delay_s(), None);
        assert!(t.child_rekeys.iter().all(|r| r.by_us));
    }

    #[test]
    fn pcap_with_one_ike_message_over_4500() {
        let mut f = Vec::new();
        f.extend(0xa1b2_c3d4u32.to_le_bytes());
        f.extend([2, 0, 4, 0]);
        f.extend([0u8; 8]);
        f.extend(65535u32.to_le_bytes());
        f.extend(1u32.to_le_bytes());
        let mut pkt = vec![0u8; 14];
        let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 192, 0, 2, 1, 198, 51, 100, 2];
        ip.extend(4500u16.to_be_bytes());
        ip.extend(4500u16.to_be_bytes());
        ip.extend([0u8; 4]);
        ip.extend([0u8; 4]); // marker
        let mut ike = vec![0u8; 28];
        ike[7] = 9;
        ike[18] = CREATE_CHILD_SA;
        ike[19] = 0x08;
        ike[23] = 7;
        ip.extend(ike);
        pkt.extend(ip);
        f.extend(3u32.to_le_bytes());
        f.extend(250u32.to_le_bytes());
        f.extend((pkt.len() as u32).to_le_bytes());
        f.extend((pkt.len() as u32).to_le_bytes());
        f.extend(pkt);
        let v = parse_pcap(&f, Ipv4Addr::new(192, 0, 2, 1)).unwrap_or_default();
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0],
            m(3_000_250.0, 9, CREATE_CHILD_SA, false, 7, true),
            "spi, exchange, message id, direction"
        );
    }
}
