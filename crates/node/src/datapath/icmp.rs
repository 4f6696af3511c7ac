//! Path MTU for the tunnel: the ICMP "fragmentation needed" (RFC 792 type 3 code 4 with the
//! next-hop MTU of RFC 1191 §4) and ICMPv6 "packet too big" (RFC 4443 §3.2, RFC 8201) messages the
//! node writes back to the TUN device for a packet larger than the tunnel's MTU.
//! Read first: RFC 1191 §4, RFC 4443 §2.4, RFC 1812 §4.3.2.3 (how much to quote).
//!
//! Source address: the original packet's destination, not the TUN's own address. Linux as a
//! router sends its ICMP errors from the address of the interface toward the sender (`__icmp_send`
//! picks it by routing), and kernel WireGuard's `icmp_ndo_send` does the same from inside the
//! kernel, where the message is looped back locally. A userspace node can only write the message
//! to the TUN device, and the kernel drops a packet arriving there with one of its own addresses
//! as source ("martian source": `fib_validate_source` refuses RTN_LOCAL sources unless
//! `accept_local`), on a host and on a gateway alike. From the original destination the message
//! passes the reverse-path check (the route back to it is the tunnel), and the sender matches it
//! to its socket by the quoted header (RFC 1122 §3.2.2, RFC 8201 §4); the netns test
//! `pmtu_too_big_reaches_the_sender` shows the kernel learning the MTU from it.

/// Longest ICMPv4 error datagram: quote as much as fits in 576 bytes (RFC 1812 §4.3.2.3, as
/// Linux's `icmp_send` does; RFC 792's IP header + 64 bits is the minimum).
const V4_MAX: usize = 576;
/// Longest ICMPv6 error packet: no more than the IPv6 minimum MTU (RFC 4443 §2.4 (c)).
const V6_MAX: usize = 1280;
const ICMP: u8 = 1;
const ICMPV6: u8 = 58;
/// Hop limit / TTL of the generated message (Linux's default).
const HOP_LIMIT: u8 = 64;

/// Whether `packet`, longer than `mtu`, must be refused with a "too big" message: IPv4 with the
/// DF bit set, or any IPv6 packet (IPv6 routers never fragment, RFC 8200 §5). IPv4 without DF
/// may be sent on and fragmented in the outer header.
pub fn needs_too_big(packet: &[u8], mtu: usize) -> bool {
    if packet.len() <= mtu {
        return false;
    }
    match packet.first().map(|b| b >> 4) {
        Some(4) => packet.get(6).is_some_and(|f| f & 0x40 != 0),
        Some(6) => true,
        _ => false,
    }
}

/// Builds in `out` the ICMP "fragmentation needed" (IPv4) or ICMPv6 "packet too big" answer to
/// `packet`, from the packet's destination to its source, reporting `mtu`. Returns its length, or
/// `None` when no error may be sent: the packet does not parse, is itself an ICMP error (RFC 1122
/// §3.2.2, RFC 4443 §2.4 (e)), is a non-first IPv4 fragment, has a source that is not a unicast
/// host, or `out` is too small.
pub fn too_big(packet: &[u8], mtu: u16, out: &mut [u8]) -> Option<usize> {
    match packet.first()? >> 4 {
        4 => too_big_v4(packet, mtu, out),
        6 => too_big_v6(packet, mtu, out),
        _ => None,
    }
}

fn too_big_v4(p: &[u8], mtu: u16, out: &mut [u8]) -> Option<usize> {
    let ihl = (p[0] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([*p.get(2)?, *p.get(3)?]) as usize;
    if ihl < 20 || p.len() < ihl || total < ihl {
        return None;
    }
    let p = &p[..total.min(p.len())];
    let frag_offset = u16::from_be_bytes([p[6], p[7]]) & 0x1fff;
    let (src, dst) = (&p[12..16], &p[16..20]);
    // RFC 1122 §3.2.2: never about a non-first fragment, a non-unicast source, or a
    // broadcast/multicast destination (the latter also cannot be our source).
    let bad_addr = |a: &[u8]| a[0] == 0 || a[0] == 127 || a[0] >= 224;
    if frag_offset != 0 || bad_addr(src) || bad_addr(dst) {
        return None;
    }
    // ICMP errors (destination unreachable 3, source quench 4, redirect 5, time exceeded 11,
    // parameter problem 12) get no error back; a truncated ICMP header is treated as one.
    if p[9] == ICMP && p.get(ihl).is_none_or(|t| matches!(t, 3 | 4 | 5 | 11 | 12)) {
        return None;
    }
    let quote = p.len().min(V4_MAX - 28);
    let len = 28 + quote;
    let out = out.get_mut(..len)?;
    out.fill(0);
    out[0] = 0x45;
    out[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    out[8] = HOP_LIMIT;
    out[9] = ICMP;
    out[12..16].copy_from_slice(dst);
    out[16..20].copy_from_slice(src);
    let c = wire::ip::internet_checksum(&out[..20]);
    out[10..12].copy_from_slice(&c.to_be_bytes());
    let icmp = &mut out[20..];
    icmp[0] = 3; // destination unreachable
    icmp[1] = 4; // fragmentation needed and DF set
    icmp[6..8].copy_from_slice(&mtu.to_be_bytes()); // next-hop MTU (RFC 1191 §4)
    icmp[8..].copy_from_slice(&p[..quote]);
    let c = wire::ip::internet_checksum(icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    Some(len)
}

/// Whether an IPv6 packet carries an ICMPv6 error (type < 128), found by walking the
/// extension headers (RFC 8200 §4); `None` if the chain does not parse.
fn is_icmpv6_error(p: &[u8]) -> Option<bool> {
    let (mut next, mut at) = (p[6], 40);
    loop {
        match next {
            ICMPV6 => return Some(*p.get(at)? < 128),
            // Hop-by-hop, routing, destination options: length in 8-octet units after the first.
            0 | 43 | 60 => {
                next = *p.get(at)?;
                at += (*p.get(at + 1)? as usize + 1) * 8;
            }
            // Fragment: a non-first fragment holds no upper-layer header to look at.
            44 => {
                let off = u16::from_be_bytes([*p.get(at + 2)?, *p.get(at + 3)?]) & 0xfff8;
                if off != 0 {
                    return Some(false);
                }
                next = *p.get(at)?;
                at += 8;
            }
            // AH: length in 4-octet units minus 2 (RFC 4302 §2.2).
            51 => {
                next = *p.get(at)?;
                at += (*p.get(at + 1)? as usize + 2) * 4;
            }
            _ => return Some(false),
        }
    }
}

fn too_big_v6(p: &[u8], mtu: u16, out: &mut [u8]) -> Option<usize> {
    if p.len() < 40 {
        return None;
    }
    let payload = u16::from_be_bytes([p[4], p[5]]) as usize;
    let p = &p[..(40 + payload).min(p.len())];
    let (src, dst) = (&p[8..24], &p[24..40]);
    // The source must be a unicast host to answer (not :: nor multicast); the destination
    // becomes our source, so it must be unicast too (RFC 4443 §2.2).
    let unspecified = |a: &[u8]| a.iter().all(|&b| b == 0);
    if unspecified(src) || src[0] == 0xff || unspecified(dst) || dst[0] == 0xff {
        return None;
    }
    if is_icmpv6_error(p)? {
        return None;
    }
    let quote = p.len().min(V6_MAX - 48);
    let len = 48 + quote;
    let out = out.get_mut(..len)?;
    out.fill(0);
    out[0] = 0x60;
    out[4..6].copy_from_slice(&((8 + quote) as u16).to_be_bytes());
    out[6] = ICMPV6;
    out[7] = HOP_LIMIT;
    out[8..24].copy_from_slice(dst);
    out[24..40].copy_from_slice(src);
    out[40] = 2; // packet too big
    out[44..48].copy_from_slice(&u32::from(mtu).to_be_bytes());
    out[48..].copy_from_slice(&p[..quote]);
    // Checksum over the pseudo-header (RFC 8200 §8.1) and the message.
    let mut sum = sum16(&out[8..40]) + (8 + quote) as u32 + ICMPV6 as u32;
    sum += sum16(&out[40..]);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    out[42..44].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    Some(len)
}

/// Sum of the big-endian 16-bit words of `d` (odd tail padded with zero), not folded.
fn sum16(d: &[u8]) -> u32 {
    d.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)]))).sum()
}

#[cfg(test)]
#[path = "icmp_tests.rs"]
mod tests;
