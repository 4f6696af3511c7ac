//! The coalescer against tun-rs's `gso_split` (wireguard-go's segmentation, an independent
//! implementation of what the kernel does with a GSO packet): every write, segmented again,
//! must give back exactly the packets that went in, checksums included.
#![allow(clippy::unwrap_used)]

use super::*;
use etherparse::{PacketBuilder, TcpOptionElement};
use proptest::prelude::*;

const A4: [u8; 4] = [10, 9, 0, 1];
const B4: [u8; 4] = [10, 9, 0, 2];
const A6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const B6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// What a test segment looks like.
#[derive(Debug, Clone, Copy)]
struct Seg {
    v6: bool,
    sport: u16,
    seq: u32,
    len: usize,
    psh: bool,
    fin: bool,
    id: u16,
}

fn seg(sport: u16, seq: u32, len: usize) -> Seg {
    Seg { v6: false, sport, seq, len, psh: false, fin: false, id: 0 }
}

fn tcp(s: Seg) -> PacketBuf {
    let payload: Vec<u8> = (0..s.len).map(|i| (s.seq as usize + i) as u8).collect();
    let b = if s.v6 { PacketBuilder::ipv6(A6, B6, 64) } else { PacketBuilder::ipv4(A4, B4, 64) };
    let mut t = b.tcp(s.sport, 5201, s.seq, 502).ack(7);
    if s.psh {
        t = t.psh();
    }
    if s.fin {
        t = t.fin();
    }
    let t = t.options(&[TcpOptionElement::Timestamp(11, 22)]).unwrap();
    let mut p = Vec::new();
    t.write(&mut p, &payload).unwrap();
    if !s.v6 {
        p[4..6].copy_from_slice(&s.id.to_be_bytes());
        wire::ip::set_total_len(&mut p, wire::IpVersion::V4).unwrap();
    }
    let mut b = PacketBuf::with_max_packet();
    b.load(&p, ipsec::buf::DEFAULT_HEADROOM).unwrap();
    b
}

fn udp(sport: u16, len: usize, fill: u8) -> PacketBuf {
    let mut p = Vec::new();
    PacketBuilder::ipv4(A4, B4, 64).udp(sport, 53).write(&mut p, &vec![fill; len]).unwrap();
    p[4..6].copy_from_slice(&u16::from(fill).to_be_bytes());
    wire::ip::set_total_len(&mut p, wire::IpVersion::V4).unwrap();
    let mut b = PacketBuf::with_max_packet();
    b.load(&p, ipsec::buf::DEFAULT_HEADROOM).unwrap();
    b
}

/// The bytes a write puts on the device: virtio-net header, first packet, later payloads.
fn written(c: &Coalescer, w: &Write, pkts: &[PacketBuf]) -> Vec<u8> {
    let mut out = w.vnet.to_vec();
    for (k, i) in c.segments(w).enumerate() {
        let skip = if k == 0 { 0 } else { w.header_len };
        out.extend_from_slice(&pkts[i].as_slice()[skip..]);
    }
    out
}

/// Segments a write again as the kernel would (tun-rs `gso_split`), or returns it alone.
fn resegment(bytes: &mut [u8], v6: bool) -> Vec<Vec<u8>> {
    let hdr = tun_rs::VirtioNetHdr::decode(bytes).unwrap();
    if hdr.gso_type == 0 {
        assert_eq!(hdr.flags, 0, "a single packet goes with an empty header");
        return vec![bytes[VNET_HDR_LEN..].to_vec()];
    }
    let mut out = vec![vec![0u8; 65536]; MAX_SEGMENTS];
    let mut sizes = vec![0usize; MAX_SEGMENTS];
    let n =
        tun_rs::gso_split(&mut bytes[VNET_HDR_LEN..], hdr, &mut out, &mut sizes, 0, v6).unwrap();
    (0..n).map(|i| out[i][..sizes[i]].to_vec()).collect()
}

/// Plans `pkts`, checks that the writes give them back (each once, each flow in order) and
/// returns the number of segments in each write.
fn round_trip(mut pkts: Vec<PacketBuf>, udp_gso: bool, v6: bool) -> Vec<usize> {
    let before: Vec<Vec<u8>> = pkts.iter().map(|p| p.as_slice().to_vec()).collect();
    let mut c = Coalescer::default();
    let writes = c.plan(&mut pkts, udp_gso).to_vec();
    let mut seen = vec![false; before.len()];
    let mut counts = Vec::new();
    for w in &writes {
        let idx: Vec<usize> = c.segments(w).collect();
        assert_eq!(idx.len(), w.segments);
        let mut bytes = written(&c, w, &pkts);
        let got = resegment(&mut bytes, v6);
        assert_eq!(got.len(), idx.len());
        for (g, &i) in got.iter().zip(&idx) {
            assert!(!seen[i], "packet {i} written twice");
            seen[i] = true;
            assert_eq!(g, &before[i], "packet {i} changed");
        }
        // Within a write the packets are in their arrival order.
        assert!(idx.windows(2).all(|p| p[0] < p[1]));
        counts.push(w.segments);
    }
    assert!(seen.iter().all(|s| *s), "every packet is written");
    counts
}

/// IPv4 identifications as a Linux sender gives them: one counter per flow.
fn ids(mut segs: Vec<Seg>) -> Vec<Seg> {
    let mut next = std::collections::HashMap::new();
    for s in segs.iter_mut() {
        let id = next.entry(s.sport).or_insert(1000 * s.sport);
        s.id = *id;
        *id = id.wrapping_add(1);
    }
    segs
}

#[test]
fn full_segments_and_a_short_last_one_make_one_write() {
    let segs =
        ids(vec![seg(1, 1000, 1388), seg(1, 2388, 1388), seg(1, 3776, 1388), seg(1, 5164, 9)]);
    let pkts: Vec<PacketBuf> = segs.iter().map(|s| tcp(*s)).collect();
    let mut c = Coalescer::default();
    let mut p2 = pkts.clone();
    let w = c.plan(&mut p2, false)[0];
    assert_eq!(w.segments, 4);
    let h = tun_rs::VirtioNetHdr::decode(&w.vnet).unwrap();
    assert_eq!((h.flags, h.gso_type), (VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_TCPV4));
    assert_eq!((h.hdr_len, h.gso_size, h.csum_start, h.csum_offset), (20 + 32, 1388, 20, 16));
    let first = p2[0].as_slice();
    assert_eq!(u16::from_be_bytes([first[2], first[3]]) as usize, 52 + 3 * 1388 + 9);
    assert!(internet_checksum_ok(&first[..20]), "IPv4 header checksum");
    assert_eq!(round_trip(pkts, false, false), vec![4]);
}

fn internet_checksum_ok(h: &[u8]) -> bool {
    wire::ip::internet_checksum(h) == 0
}

#[test]
fn ipv6_segments_merge() {
    let mut segs = vec![seg(1, 1, 1000), seg(1, 1001, 1000), seg(1, 2001, 500)];
    for s in &mut segs {
        s.v6 = true;
    }
    let pkts = segs.iter().map(|s| tcp(*s)).collect();
    assert_eq!(round_trip(pkts, false, true), vec![3]);
}

#[test]
fn a_gap_in_sequence_numbers_starts_a_new_write() {
    let segs =
        ids(vec![seg(1, 0, 1000), seg(1, 1000, 1000), seg(1, 5000, 1000), seg(1, 6000, 1000)]);
    let pkts = segs.iter().map(|s| tcp(*s)).collect();
    assert_eq!(round_trip(pkts, false, false), vec![2, 2]);
}

#[test]
fn a_short_segment_or_psh_ends_the_write() {
    let mut segs = ids(vec![
        seg(1, 0, 1000),
        seg(1, 1000, 400),
        seg(1, 1400, 1000),
        seg(1, 2400, 1000),
        seg(1, 3400, 1000),
        seg(1, 4400, 1000),
    ]);
    segs[3].psh = true;
    let pkts = segs.iter().map(|s| tcp(*s)).collect();
    assert_eq!(round_trip(pkts, false, false), vec![2, 2, 2]);
}

#[test]
fn fin_is_written_alone_and_nothing_overtakes_it() {
    let mut segs = ids(vec![seg(1, 0, 1000), seg(1, 1000, 1000), seg(1, 2000, 1000)]);
    segs[1].fin = true;
    let mut pkts: Vec<PacketBuf> = segs.iter().map(|s| tcp(*s)).collect();
    let mut c = Coalescer::default();
    let firsts: Vec<usize> = c.plan(&mut pkts, false).iter().map(|w| w.first).collect();
    assert_eq!(firsts, vec![0, 1, 2]);
}

#[test]
fn flows_are_kept_apart_and_each_in_order() {
    let segs = ids(vec![
        seg(1, 0, 1000),
        seg(2, 0, 1000),
        seg(1, 1000, 1000),
        seg(2, 1000, 1000),
        seg(1, 2000, 1000),
    ]);
    let pkts = segs.iter().map(|s| tcp(*s)).collect();
    assert_eq!(round_trip(pkts, false, false), vec![3, 2]);
}

#[test]
fn a_bad_checksum_is_never_merged() {
    let segs = ids(vec![seg(1, 0, 1000), seg(1, 1000, 1000), seg(1, 2000, 1000)]);
    let mut pkts: Vec<PacketBuf> = segs.iter().map(|s| tcp(*s)).collect();
    let last = pkts[1].len() - 1;
    pkts[1].as_mut_slice()[last] ^= 0xff;
    let mut c = Coalescer::default();
    let w: Vec<(usize, usize)> =
        c.plan(&mut pkts, false).iter().map(|w| (w.first, w.segments)).collect();
    // The bad one goes alone with an empty header, so the kernel checks (and drops) it.
    assert_eq!(w, vec![(0, 1), (1, 1), (2, 1)]);
    assert!(c.writes().iter().all(|w| w.vnet == [0; VNET_HDR_LEN]));
}

#[test]
fn udp_merges_only_when_the_device_takes_uso() {
    let pkts = || vec![udp(9, 1200, 1), udp(9, 1200, 2), udp(9, 700, 3), udp(9, 1200, 4)];
    assert_eq!(round_trip(pkts(), false, false), vec![1, 1, 1, 1]);
    assert_eq!(round_trip(pkts(), true, false), vec![3, 1]);
    let mut p = pkts();
    let mut c = Coalescer::default();
    let h = tun_rs::VirtioNetHdr::decode(&c.plan(&mut p, true)[0].vnet).unwrap();
    assert_eq!((h.gso_type, h.gso_size, h.csum_offset), (VIRTIO_NET_HDR_GSO_UDP_L4, 1200, 6));
}

#[test]
fn never_more_than_64_kb_or_64_segments() {
    let segs: Vec<Seg> = ids((0..120).map(|i| seg(1, i * 1400, 1400)).collect());
    let counts = round_trip(segs.iter().map(|s| tcp(*s)).collect(), false, false);
    // 52 + 46 * 1400 = 64452 bytes; a 47th segment would pass 65535.
    assert_eq!(counts, vec![46, 46, 28]);
    let small: Vec<Seg> = ids((0..100).map(|i| seg(1, i * 10, 10)).collect());
    let counts = round_trip(small.iter().map(|s| tcp(*s)).collect(), false, false);
    assert_eq!(counts, vec![64, 36]);
}

#[test]
fn other_packets_pass_as_they_are() {
    let mut p = Vec::new();
    PacketBuilder::ipv4(A4, B4, 64).icmpv4_echo_request(1, 1).write(&mut p, &[0; 64]).unwrap();
    let mut b = PacketBuf::with_max_packet();
    b.load(&p, 64).unwrap();
    let mut junk = PacketBuf::with_max_packet();
    junk.load(&[0x45, 0, 0], 64).unwrap();
    let pkts = vec![b, junk.clone(), tcp(seg(1, 0, 100)), junk];
    let mut c = Coalescer::default();
    let mut p2 = pkts.clone();
    assert_eq!(c.plan(&mut p2, true).len(), 4);
    for (w, p) in c.writes().iter().zip(&pkts) {
        assert_eq!(w.segments, 1);
        assert_eq!(p2[w.first].as_slice(), p.as_slice());
    }
}

proptest! {
    /// Random interleavings of three flows (IPv4 TCP), with gaps, short segments, PSH and FIN:
    /// every write segments back to exactly its packets, and each flow stays in order.
    #[test]
    fn any_batch_round_trips(
        steps in proptest::collection::vec((0u16..3, 0u8..10, 1usize..1400), 1..120)
    ) {
        let mut next = [0u32; 3];
        let mut segs = Vec::new();
        for (flow, kind, len) in steps {
            let f = flow as usize;
            let len = if kind < 6 { 1400 } else { len };
            let mut s = seg(flow + 1, next[f], len);
            s.psh = kind == 7;
            s.fin = kind == 8;
            if kind == 9 {
                s.seq = s.seq.wrapping_add(7); // a gap
            }
            next[f] = s.seq.wrapping_add(len as u32);
            segs.push(s);
        }
        let segs = ids(segs);
        let pkts: Vec<PacketBuf> = segs.iter().map(|s| tcp(*s)).collect();
        let mut c = Coalescer::default();
        let mut p2 = pkts.clone();
        c.plan(&mut p2, false);
        // Per flow, the first packets of its writes are in increasing order and each write's
        // packets come after the previous write's.
        for flow in 1..=3u16 {
            let mut last = None;
            for w in c.writes() {
                if segs[w.first].sport != flow {
                    continue;
                }
                let idx: Vec<usize> = c.segments(w).collect();
                if let Some(l) = last {
                    prop_assert!(idx[0] > l);
                }
                last = idx.last().copied();
            }
        }
        round_trip(pkts, false, false);
    }
}
