//! Framing between the engine (whole IP packets with ESP/AH) and the sockets: ESP in UDP
//! (RFC 3948 §2.1 ESP header, §2.2 IKE non-ESP marker, §2.3 NAT-keepalive) and raw IP payloads.

use ipsec::PacketBuf;
use std::net::IpAddr;
use wire::proto;

/// What a UDP datagram on the ESP-in-UDP port holds (RFC 3948 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UdpPayload {
    /// An ESP packet, starting with a non-zero SPI.
    Esp,
    /// Four zero bytes: the non-ESP marker of an IKE message (not handled by this node).
    Ike,
    /// The one-byte 0xff NAT-keepalive.
    Keepalive,
    /// Anything else that cannot be ESP (shorter than an SPI).
    Runt,
}

/// Classifies a UDP payload (RFC 3948 §2.2, §2.3).
pub fn classify(p: &[u8]) -> UdpPayload {
    match p {
        [0xff] => UdpPayload::Keepalive,
        [0, 0, 0, 0, ..] => UdpPayload::Ike,
        [_, _, _, _, ..] => UdpPayload::Esp,
        _ => UdpPayload::Runt,
    }
}

/// Prepends an IPv4 or IPv6 header with protocol `protocol` from `src` to `dst` in front of the
/// packet in `buf` (an ESP or AH packet), so that the engine sees what a kernel would.
/// Returns false if the addresses differ in version or the buffer lacks headroom or length.
pub fn prepend_ip_header(buf: &mut PacketBuf, src: IpAddr, dst: IpAddr, protocol: u8) -> bool {
    let payload_len = buf.len();
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let total = payload_len + 20;
            if total > u16::MAX as usize || buf.prepend(20).is_err() {
                return false;
            }
            let h = &mut buf.as_mut_slice()[..20];
            h.fill(0);
            h[0] = 0x45;
            h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            h[8] = 64;
            h[9] = protocol;
            h[12..16].copy_from_slice(&s.octets());
            h[16..20].copy_from_slice(&d.octets());
            let c = wire::ip::internet_checksum(h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            true
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            if payload_len > u16::MAX as usize || buf.prepend(40).is_err() {
                return false;
            }
            let h = &mut buf.as_mut_slice()[..40];
            h.fill(0);
            h[0] = 0x60;
            h[4..6].copy_from_slice(&(payload_len as u16).to_be_bytes());
            h[6] = protocol;
            h[7] = 64;
            h[8..24].copy_from_slice(&s.octets());
            h[24..40].copy_from_slice(&d.octets());
            true
        }
        _ => false,
    }
}

/// The IP header length, protocol and destination of a protected packet the engine produced.
/// `None` if the packet is not ESP/AH over IPv4/IPv6 (which the engine never produces).
pub fn outer_info(p: &[u8]) -> Option<(usize, u8, IpAddr)> {
    let l = wire::IpLayout::parse(p).ok()?;
    if !matches!(l.next_header, proto::ESP | proto::AH) {
        return None;
    }
    let (_, d) = l.addrs(p);
    let dst = match d.len() {
        4 => IpAddr::from(<[u8; 4]>::try_from(d).ok()?),
        _ => IpAddr::from(<[u8; 16]>::try_from(d).ok()?),
    };
    Some((l.header_len, l.next_header, dst))
}

/// The SPI of an ESP packet (no IP header in front).
pub fn esp_spi(p: &[u8]) -> Option<u32> {
    p.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_rfc3948() {
        assert_eq!(classify(&[0xff]), UdpPayload::Keepalive);
        assert_eq!(classify(&[0, 0, 0, 0, 1, 2]), UdpPayload::Ike);
        assert_eq!(classify(&[0, 0, 0x10, 0x01, 0, 0, 0, 1]), UdpPayload::Esp);
        assert_eq!(classify(&[1, 2]), UdpPayload::Runt);
        assert_eq!(classify(&[]), UdpPayload::Runt);
    }

    #[test]
    fn prepend_v4_parses_and_round_trips() {
        let mut b = PacketBuf::new(256, 64);
        b.load(&[0, 0, 0x10, 0x01, 0, 0, 0, 1, 9, 9], 64).unwrap();
        let (s, d): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        assert!(prepend_ip_header(&mut b, s, d, proto::ESP));
        let l = wire::IpLayout::parse(b.as_slice()).unwrap();
        assert_eq!((l.header_len, l.next_header, l.total_len), (20, proto::ESP, 30));
        assert_eq!(wire::ip::internet_checksum(&b.as_slice()[..20]), 0);
        assert_eq!(outer_info(b.as_slice()), Some((20, proto::ESP, d)));
        assert_eq!(esp_spi(&b.as_slice()[20..]), Some(0x1001));
    }

    #[test]
    fn prepend_v6_and_refusals() {
        let mut b = PacketBuf::new(256, 64);
        b.load(&[1, 2, 3, 4, 5, 6, 7, 8], 64).unwrap();
        let (s, d): (IpAddr, IpAddr) =
            ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap());
        assert!(prepend_ip_header(&mut b, s, d, proto::AH));
        assert_eq!(outer_info(b.as_slice()), Some((40, proto::AH, d)));
        assert!(!prepend_ip_header(&mut b, s, "192.0.2.1".parse().unwrap(), proto::ESP));
        let mut small = PacketBuf::new(32, 8);
        small.load(&[1, 2, 3, 4], 8).unwrap();
        assert!(!prepend_ip_header(&mut small, d, d, proto::ESP));
    }
}
