//! Receive-side coalescing for the TUN device (GRO): the decrypted TCP segments (and, where the
//! device takes UDP segmentation offload, UDP datagrams) of one flow that follow each other are
//! written as one super-packet with a virtio-net header, so the kernel runs its TCP receive path
//! once per 64 KB instead of once per 1400 bytes. The rules are Linux's own for GRO
//! (net/ipv4/tcp_offload.c `tcp_gro_receive`, net/ipv4/udp_offload.c): same flow, same headers
//! but for lengths, sequence numbers and PSH, in-order sequence numbers, every segment as long
//! as the first but the last, at most 64 KB; and each segment's checksum verified before it is
//! merged, because the kernel trusts a merged packet's payload (`VIRTIO_NET_HDR_F_NEEDS_CSUM`
//! makes it CHECKSUM_PARTIAL) and a segment the sender's host got wrong must still be refused.
//!
//! Nothing is copied: [`Coalescer::plan`] rewrites the first segment's headers in place
//! (lengths, IPv4 header checksum, the pseudo-header sum in the TCP/UDP checksum field, PSH) and
//! the payloads of the others are gathered by writev(2) where they lie ([`Coalescer::writes`]).
//! tun-rs's `GROTable` does the same job but copies each packet into a fresh `Vec` before it
//! looks at it and copies each payload again into the first packet's buffer: an allocation and
//! two copies per packet on the busiest path of the receiving node.
//!
//! Sans-IO: it reads and edits packet bytes and says what to write; the inbound half writes.

use ipsec::PacketBuf;
use wire::ip::ones_complement_sum;

/// Bytes of the virtio-net header (`struct virtio_net_hdr`, linux/virtio_net.h) in front of
/// every packet written to a device opened with IFF_VNET_HDR.
pub const VNET_HDR_LEN: usize = 10;
/// Most segments merged into one super-packet (the kernel's `UDP_GRO_CNT_MAX`; a 64 KB TCP
/// super-packet of full-size segments holds fewer).
pub const MAX_SEGMENTS: usize = 64;

const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
const VIRTIO_NET_HDR_GSO_TCPV4: u8 = 1;
const VIRTIO_NET_HDR_GSO_TCPV6: u8 = 4;
const VIRTIO_NET_HDR_GSO_UDP_L4: u8 = 5;

const TCP: u8 = 6;
const UDP: u8 = 17;
const TCP_FIN_SYN_RST_URG_ECE_CWR: u8 = 0x01 | 0x02 | 0x04 | 0x20 | 0x40 | 0x80;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;
const NONE: u32 = u32::MAX;

/// One write to the device: a virtio-net header, then packet `first` whole, then the payloads
/// (after `header_len` bytes of headers) of the packets that follow it in the plan.
#[derive(Debug, Clone, Copy)]
pub struct Write {
    /// The virtio-net header (all zero for a packet written as it is).
    pub vnet: [u8; VNET_HDR_LEN],
    /// Index of the first packet.
    pub first: usize,
    /// Bytes of IP and TCP/UDP header at the front of every packet merged after the first.
    pub header_len: usize,
    /// Packets in the write (1 when nothing was merged).
    pub segments: usize,
}

/// What a packet's headers say, for coalescing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Flow {
    /// Source and destination address (4 or 16 bytes each), then the ports.
    key: [u8; 36],
    proto: u8,
    v6: bool,
}

#[derive(Debug, Clone, Copy)]
struct Parsed {
    flow: Flow,
    iph_len: usize,
    /// IP + TCP/UDP header bytes.
    hdr_len: usize,
    /// TCP sequence number (0 for UDP).
    seq: u32,
    psh: bool,
    /// Whether the packet may be merged at all (an ACK-only or ACK+PSH data segment, a UDP
    /// datagram with payload, no IP options, not a fragment).
    mergeable: bool,
}

#[derive(Debug, Clone, Copy)]
struct Item {
    flow: Flow,
    first: u32,
    last: u32,
    segments: u16,
    iph_len: u16,
    hdr_len: u16,
    /// Payload bytes of the first segment: every merged one but the last is this long.
    gso_size: u16,
    /// Length of the coalesced IP packet.
    len: usize,
    next_seq: u32,
    psh: bool,
    /// The first packet's checksum was verified (done when the second one arrives).
    verified: bool,
}

/// Plans the writes of a batch of decrypted packets. Its tables are reused from batch to batch,
/// so after the first batches it does not allocate.
#[derive(Debug, Default)]
pub struct Coalescer {
    items: Vec<Item>,
    /// Indices into `items` of the items that may still grow.
    open: Vec<u32>,
    /// `next[i]`: the packet merged after packet `i` (NONE: none).
    next: Vec<u32>,
    writes: Vec<Write>,
}

impl Coalescer {
    /// Groups `pkts` (IP packets, in the order they are to be delivered) into writes, editing
    /// the headers of every first packet that others are merged into. `udp` says whether the
    /// device takes UDP segmentation offload (`VIRTIO_NET_HDR_GSO_UDP_L4`). Packets of one flow
    /// keep their order; packets that cannot be merged are written as they are.
    pub fn plan(&mut self, pkts: &mut [PacketBuf], udp: bool) -> &[Write] {
        self.items.clear();
        self.open.clear();
        self.writes.clear();
        self.next.clear();
        self.next.resize(pkts.len(), NONE);
        for i in 0..pkts.len() {
            self.add(pkts, i, udp);
        }
        for it in &self.items {
            let mut w = Write {
                vnet: [0; VNET_HDR_LEN],
                first: it.first as usize,
                header_len: it.hdr_len as usize,
                segments: it.segments as usize,
            };
            if it.segments > 1 {
                w.vnet = finish(pkts[it.first as usize].as_mut_slice(), it);
            }
            self.writes.push(w);
        }
        &self.writes
    }

    /// The writes of the last [`Coalescer::plan`].
    pub fn writes(&self) -> &[Write] {
        &self.writes
    }

    /// The packets of `w` in order: the first, then those merged into it.
    pub fn segments(&self, w: &Write) -> impl Iterator<Item = usize> + '_ {
        let mut at = w.first as u32;
        std::iter::from_fn(move || {
            if at == NONE {
                return None;
            }
            let i = at as usize;
            at = self.next.get(i).copied().unwrap_or(NONE);
            Some(i)
        })
        .take(w.segments)
    }

    fn add(&mut self, pkts: &[PacketBuf], i: usize, udp: bool) {
        let p = pkts[i].as_slice();
        let Some(parsed) = parse(p, udp) else {
            self.items.push(single(i, p.len()));
            return;
        };
        if let Some(o) = self.open.iter().position(|&k| self.items[k as usize].flow == parsed.flow)
        {
            let k = self.open[o] as usize;
            match self.try_merge(pkts, k, i, &parsed) {
                Merge::Merged { still_open: true } => return,
                Merge::Merged { still_open: false } => {
                    self.open.swap_remove(o);
                    return;
                }
                // The flow's open item ends here: a later segment must not overtake this one.
                Merge::No => {
                    self.open.swap_remove(o);
                }
            }
        }
        let mut it = single(i, p.len());
        it.flow = parsed.flow;
        if parsed.mergeable && !parsed.psh {
            it.iph_len = parsed.iph_len as u16;
            it.hdr_len = parsed.hdr_len as u16;
            it.gso_size = (p.len() - parsed.hdr_len) as u16;
            it.next_seq = parsed.seq.wrapping_add(it.gso_size as u32);
            self.open.push(self.items.len() as u32);
        }
        self.items.push(it);
    }

    fn try_merge(&mut self, pkts: &[PacketBuf], k: usize, i: usize, new: &Parsed) -> Merge {
        let it = self.items[k];
        let first = pkts[it.first as usize].as_slice();
        let p = pkts[i].as_slice();
        let payload = p.len() - new.hdr_len;
        if !new.mergeable
            || new.hdr_len != it.hdr_len as usize
            || payload > it.gso_size as usize
            || it.len + payload > u16::MAX as usize
            || (new.flow.proto == TCP && new.seq != it.next_seq)
            || !same_headers(first, p, it.iph_len as usize, it.hdr_len as usize, new.flow)
            || (!new.flow.v6 && !next_id(first, p, it.segments))
        {
            return Merge::No;
        }
        if !it.verified && !checksum_ok(first, it.iph_len as usize, new.flow) {
            return Merge::No;
        }
        if !checksum_ok(p, new.iph_len, new.flow) {
            return Merge::No;
        }
        let it = &mut self.items[k];
        it.verified = true;
        self.next[it.last as usize] = i as u32;
        it.last = i as u32;
        it.segments += 1;
        it.len += payload;
        it.next_seq = it.next_seq.wrapping_add(payload as u32);
        it.psh |= new.psh;
        // Only the last segment may be short or carry PSH (tcp_gro_receive flushes on both).
        let still_open = !new.psh
            && payload == it.gso_size as usize
            && (it.segments as usize) < MAX_SEGMENTS
            && it.len + it.gso_size as usize <= u16::MAX as usize;
        Merge::Merged { still_open }
    }
}

enum Merge {
    Merged { still_open: bool },
    No,
}

fn single(i: usize, len: usize) -> Item {
    Item {
        flow: Flow { key: [0; 36], proto: 0, v6: false },
        first: i as u32,
        last: i as u32,
        segments: 1,
        iph_len: 0,
        hdr_len: 0,
        gso_size: 0,
        len,
        next_seq: 0,
        psh: false,
        verified: false,
    }
}

/// The flow and merge facts of an IP packet carrying TCP (or UDP when `udp`); None for anything
/// else, which is written as it is.
fn parse(p: &[u8], udp: bool) -> Option<Parsed> {
    let v6 = match p.first()? >> 4 {
        4 => false,
        6 => true,
        _ => return None,
    };
    let (iph_len, proto, ip_len, unfragmented) = if v6 {
        if p.len() < 40 {
            return None;
        }
        (40, p[6], 40 + u16::from_be_bytes([p[4], p[5]]) as usize, true)
    } else {
        if p.len() < 20 {
            return None;
        }
        let ihl = (p[0] & 0x0f) as usize * 4;
        let frag = u16::from_be_bytes([p[6], p[7]]) & 0x3fff; // MF and the offset
        (ihl, p[9], u16::from_be_bytes([p[2], p[3]]) as usize, frag == 0)
    };
    if ip_len != p.len() || !unfragmented || (!v6 && iph_len != 20) {
        return None;
    }
    let (l4_len, seq, mergeable, psh) = match proto {
        TCP => {
            let t = p.get(iph_len..iph_len + 20)?;
            let thl = (t[12] >> 4) as usize * 4;
            let flags = t[13];
            let ok = thl >= 20
                && flags & TCP_ACK != 0
                && flags & TCP_FIN_SYN_RST_URG_ECE_CWR == 0
                && p.len() > iph_len + thl;
            (thl, u32::from_be_bytes([t[4], t[5], t[6], t[7]]), ok, flags & TCP_PSH != 0)
        }
        UDP if udp => (8, 0, p.len() > iph_len + 8, false),
        _ => return None,
    };
    let hdr_len = iph_len + l4_len;
    if p.len() < hdr_len {
        return None;
    }
    let addr_at = if v6 { 8 } else { 12 };
    let addrs = if v6 { 32 } else { 8 };
    let mut key = [0u8; 36];
    key[..addrs].copy_from_slice(&p[addr_at..addr_at + addrs]);
    key[32..36].copy_from_slice(&p[iph_len..iph_len + 4]);
    Some(Parsed { flow: Flow { key, proto, v6 }, iph_len, hdr_len, seq, psh, mergeable })
}

/// Whether `p` may follow `first` in one super-packet: the IP fields that GRO keeps (IPv4 TOS,
/// DF, TTL; IPv6 traffic class, flow label, hop limit) and, for TCP, the ACK number, header
/// length, flags but PSH, window and options are the same.
fn same_headers(first: &[u8], p: &[u8], iph_len: usize, hdr_len: usize, f: Flow) -> bool {
    let ip_same = if f.v6 {
        first[..4] == p[..4] && first[7] == p[7]
    } else {
        first[1] == p[1] && (first[6] & 0x40) == (p[6] & 0x40) && first[8] == p[8]
    };
    if !ip_same {
        return false;
    }
    if f.proto != TCP {
        return true;
    }
    let (a, b) = (&first[iph_len..hdr_len], &p[iph_len..hdr_len]);
    // Bytes 8..13 ACK number and data offset, 13 flags, 14..16 window, 16..18 the checksum (not
    // compared), 18..20 urgent pointer, then the options.
    a[8..13] == b[8..13]
        && (a[13] & !TCP_PSH) == (b[13] & !TCP_PSH)
        && a[14..16] == b[14..16]
        && a[18..] == b[18..]
}

/// Whether IPv4 packet `p` carries the identification that segment number `n` of a
/// super-packet starting with `first` gets when the kernel segments it again (first's + n), as
/// Linux's GRO requires (`inet_gro_receive`, flush_id), so that a forwarded super-packet leaves
/// with the identifications it came with.
fn next_id(first: &[u8], p: &[u8], n: u16) -> bool {
    u16::from_be_bytes([first[4], first[5]]).wrapping_add(n) == u16::from_be_bytes([p[4], p[5]])
}

/// The pseudo-header sum (RFC 793 §3.1, RFC 8200 §8.1) of a packet's TCP/UDP part of `l4_len`
/// bytes.
fn pseudo_sum(p: &[u8], f: Flow, l4_len: usize) -> u16 {
    let addrs = if f.v6 { &p[8..40] } else { &p[12..20] };
    let s = ones_complement_sum(addrs, f.proto as u16);
    let len = l4_len as u32;
    let s = ones_complement_sum(&((len >> 16) as u16).to_be_bytes(), s);
    ones_complement_sum(&(len as u16).to_be_bytes(), s)
}

/// Whether the TCP/UDP checksum of `p` is right (a UDP/IPv4 checksum of zero means none).
fn checksum_ok(p: &[u8], iph_len: usize, f: Flow) -> bool {
    let l4 = &p[iph_len..];
    if f.proto == UDP && !f.v6 && l4[6] == 0 && l4[7] == 0 {
        return true;
    }
    ones_complement_sum(l4, pseudo_sum(p, f, l4.len())) == 0xffff
}

/// Rewrites the headers of a merged item's first packet for its coalesced length and returns
/// the virtio-net header that asks the kernel to finish the checksum (the field holds the
/// pseudo-header sum, as `CHECKSUM_PARTIAL` wants) and to treat it as GSO.
fn finish(p: &mut [u8], it: &Item) -> [u8; VNET_HDR_LEN] {
    let iph = it.iph_len as usize;
    let len = it.len as u16;
    let l4_len = it.len - iph;
    if it.flow.v6 {
        p[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
    } else {
        p[2..4].copy_from_slice(&len.to_be_bytes());
        p[10..12].fill(0);
        let c = !ones_complement_sum(&p[..20], 0);
        p[10..12].copy_from_slice(&c.to_be_bytes());
    }
    let (gso_type, csum_offset) = match (it.flow.proto, it.flow.v6) {
        (TCP, false) => (VIRTIO_NET_HDR_GSO_TCPV4, 16u16),
        (TCP, true) => (VIRTIO_NET_HDR_GSO_TCPV6, 16),
        _ => (VIRTIO_NET_HDR_GSO_UDP_L4, 6),
    };
    if it.flow.proto == TCP && it.psh {
        p[iph + 13] |= TCP_PSH;
    }
    if it.flow.proto == UDP {
        p[iph + 4..iph + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
    }
    let ps = pseudo_sum(p, it.flow, l4_len);
    let at = iph + csum_offset as usize;
    p[at..at + 2].copy_from_slice(&ps.to_be_bytes());
    // struct virtio_net_hdr: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset; the
    // 16-bit fields in the host's order (a legacy header, which TUN reads natively).
    let mut h = [0u8; VNET_HDR_LEN];
    h[0] = VIRTIO_NET_HDR_F_NEEDS_CSUM;
    h[1] = gso_type;
    h[2..4].copy_from_slice(&it.hdr_len.to_ne_bytes());
    h[4..6].copy_from_slice(&it.gso_size.to_ne_bytes());
    h[6..8].copy_from_slice(&it.iph_len.to_ne_bytes());
    h[8..10].copy_from_slice(&csum_offset.to_ne_bytes());
    h
}

#[cfg(test)]
#[path = "gro_tests.rs"]
mod tests;
