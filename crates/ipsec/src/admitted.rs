//! What an inbound SA remembers of the last flow its inbound policy admitted (RFC 4301 §5.2
//! step 4), and where: an IPv4 flow in 16 bytes of the SA's line 1, which opening reads
//! anyway; any other flow in line 3 (`SecurityAssociation::admitted`).
//!
//! Why 16 bytes of line 1 are free for it: an SA is filed as outbound or inbound for life
//! (`Engine::insert_outbound`, `Engine::insert_inbound`), and the 16 bytes that sealing reads
//! there (an IPv4 tunnel's outer addresses, the key's address) mean nothing to opening.
//! [`Tail`] holds either, and says which by how it was made; it is never read both ways.
//!
//! With the IPv4 memo here, opening an IPv4 flow reads three lines of its SA, not four, and
//! compares 16 bytes instead of 56 (at 10,000 SAs each line a packet reads starts as a miss,
//! and in `hipsec bench sas --sas 1,10000` building the 40-byte `FlowKey` was most of the check's 18 ns).

use wire::{IpLayout, IpVersion, proto};

/// An IPv4 flow's selector fields and the inbound SPD generation, packed: bytes 0–7 source and
/// destination address, 8–11 the ports (zero without), 12 the protocol, 13 [`WITH_PORTS`] or
/// [`NO_PORTS`] (never 0, so the zeroed [`Tail`] matches no packet), 14–15 the low 16 bits of
/// the generation. Two packets get equal memos under one generation exactly when their
/// `FlowKey`s are equal: the same fields, the same rule for when ports count.
pub(crate) type MemoV4 = [u8; 16];

const WITH_PORTS: u8 = 2;
const NO_PORTS: u8 = 1;

/// The memo of an IPv4 packet whose `layout` was parsed from `p` (`None` for IPv6, whose
/// addresses do not fit: those use `FlowKey` in line 3).
#[inline]
pub(crate) fn memo_v4(p: &[u8], layout: &IpLayout, generation: u64) -> Option<MemoV4> {
    if layout.version != IpVersion::V4 {
        return None;
    }
    let mut m = [0u8; 16];
    m[..8].copy_from_slice(p.get(12..20)?);
    let ports = match layout.next_header {
        proto::TCP | proto::UDP if !layout.is_fragment => {
            p.get(layout.header_len..layout.header_len + 4)
        }
        _ => None,
    };
    m[13] = match ports {
        Some(x) => {
            m[8..12].copy_from_slice(x);
            WITH_PORTS
        }
        None => NO_PORTS,
    };
    m[12] = layout.next_header;
    // Truncated on purpose: `Engine` forgets every memo when the low 16 bits come round to 0
    // (`Engine::change_spd_in`), so a memo never outlives 65,536 changes.
    m[14..].copy_from_slice(&(generation as u16).to_ne_bytes());
    Some(m)
}

/// True if the inbound SPD's generation went from `before` to `after` through a multiple of
/// 65,536: then every IPv4 memo must be forgotten, or one made 65,536 changes ago could match
/// again.
pub(crate) fn generation_wraps(before: u64, after: u64) -> bool {
    before >> 16 != after >> 16
}

/// The last 16 bytes of an SA's line 1, read by one direction each: sealing's (the IPv4 outer
/// addresses, then the expanded key's address), or opening's (the IPv4 memo, zero when
/// none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(8))]
pub(crate) struct Tail([u8; 16]);

impl Tail {
    /// Sealing's bytes. An inbound SA starts with these too, until the engine files it
    /// (`Tail::opening` then).
    pub(crate) fn sealing(outer_v4: [u8; 8], key_at: usize) -> Tail {
        let mut t = [0u8; 16];
        t[..8].copy_from_slice(&outer_v4);
        let k = key_at.to_ne_bytes();
        t[8..8 + k.len()].copy_from_slice(&k);
        Tail(t)
    }

    /// Opening's bytes, with no memo: the zero memo matches no packet (byte 13 is never 0).
    pub(crate) fn opening() -> Tail {
        Tail([0; 16])
    }

    /// An IPv4 SA's outer source and destination addresses (sealing).
    #[inline]
    pub(crate) fn outer_v4(&self) -> [u8; 8] {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.0[..8]);
        a
    }

    /// Where the SA's expanded key starts (sealing; opening takes it from the SAD entry).
    #[inline]
    pub(crate) fn key_at(&self) -> usize {
        let mut k = 0usize.to_ne_bytes();
        let n = k.len();
        k.copy_from_slice(&self.0[8..8 + n]);
        usize::from_ne_bytes(k)
    }

    /// True if `m` is the remembered memo (opening).
    #[inline]
    pub(crate) fn admits(&self, m: &MemoV4) -> bool {
        self.0 == *m
    }

    /// Remembers `m` (opening).
    pub(crate) fn remember(&mut self, m: MemoV4) {
        self.0 = m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spd::FlowKey;
    use proptest::prelude::*;

    fn v4(proto: u8, frag: bool, src: [u8; 4], dst: [u8; 4], ports: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&40u16.to_be_bytes());
        if frag {
            p[6] = 0x20; // More Fragments
        }
        p[8] = 64;
        p[9] = proto;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p[20..24].copy_from_slice(&ports);
        p
    }

    fn parsed(p: &[u8]) -> IpLayout {
        IpLayout::parse(p).unwrap_or_else(|e| panic!("test packet does not parse: {e}"))
    }

    proptest! {
        /// The memo is as fine as the key the SPD's selectors read, and no finer: equal
        /// memos exactly when equal `FlowKey`s (the reference the line-3 memo keeps using).
        #[test]
        fn memo_equal_exactly_when_flow_key_equal(
            a in (prop::sample::select(vec![6u8, 17, 1, 50]), any::<bool>(), any::<[u8; 4]>(),
                  any::<[u8; 4]>(), any::<[u8; 4]>()),
            b in (prop::sample::select(vec![6u8, 17, 1, 50]), any::<bool>(), any::<[u8; 4]>(),
                  any::<[u8; 4]>(), any::<[u8; 4]>()),
            same_addrs in any::<bool>(), same_ports in any::<bool>(),
        ) {
            let pa = v4(a.0, a.1, a.2, a.3, a.4);
            let (src, dst) = if same_addrs { (a.2, a.3) } else { (b.2, b.3) };
            let pb = v4(b.0, b.1, src, dst, if same_ports { a.4 } else { b.4 });
            let (la, lb) = (parsed(&pa), parsed(&pb));
            let ma = memo_v4(&pa, &la, 7);
            let mb = memo_v4(&pb, &lb, 7);
            prop_assert!(ma.is_some() && mb.is_some());
            prop_assert_eq!(ma == mb, FlowKey::of(&pa, &la) == FlowKey::of(&pb, &lb));
            prop_assert_ne!(ma, Some([0u8; 16]), "the empty tail never matches");
        }
    }

    #[test]
    fn generation_counts_and_ipv6_is_not_taken() {
        let p = v4(17, false, [10, 0, 0, 1], [10, 0, 0, 2], [0, 1, 0, 2]);
        let l = parsed(&p);
        assert_ne!(memo_v4(&p, &l, 1), memo_v4(&p, &l, 2));
        assert_eq!(memo_v4(&p, &l, 1), memo_v4(&p, &l, 1 + 65_536), "low 16 bits only");
        assert!(generation_wraps(65_535, 65_536) && generation_wraps(65_534, 65_537));
        assert!(!generation_wraps(65_536, 65_539) && !generation_wraps(1, 65_535));
        let mut p6 = vec![0u8; 48];
        p6[0] = 0x60;
        p6[4..6].copy_from_slice(&8u16.to_be_bytes());
        p6[6] = 59; // No Next Header
        p6[7] = 64;
        assert_eq!(memo_v4(&p6, &parsed(&p6), 1), None);
    }

    #[test]
    fn tail_round_trips_sealing_bytes() {
        let t = Tail::sealing([192, 0, 2, 1, 192, 0, 2, 2], 0xdead_beef);
        assert_eq!(t.outer_v4(), [192, 0, 2, 1, 192, 0, 2, 2]);
        assert_eq!(t.key_at(), 0xdead_beef);
        assert!(!Tail::opening().admits(&[1; 16]));
    }
}

/// The engine side: the memo is forgotten when the SPD's generation comes round.
#[cfg(test)]
mod engine_tests {
    #![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]
    use crate::spd::{Action, Prefix, Selector, SpdEntry};
    use crate::{DropReason, Engine, Mode, PacketBuf, SaParams, Time};
    use crypto::default_provider;

    fn params(spi: u32) -> SaParams {
        SaParams {
            spi: crate::Spi(spi),
            protocol: crate::sa::Protocol::Esp("aes128gcm".parse().unwrap()),
            mode: Mode::Tunnel,
            src: "192.0.2.1".parse().unwrap(),
            dst: "192.0.2.2".parse().unwrap(),
            enc_key: zeroize::Zeroizing::new(vec![7; 20]),
            auth_key: zeroize::Zeroizing::new(Vec::new()),
            esn: false,
            replay_window: 0,
            soft: Default::default(),
            hard: Default::default(),
        }
    }

    fn to(h: usize) -> SpdEntry {
        let selector = Selector {
            src: Prefix::any(false),
            dst: Prefix::any(false),
            proto: None,
            src_ports: None,
            dst_ports: None,
        };
        SpdEntry { selector, action: Action::Protect(vec![h]) }
    }

    /// A memo made at generation g, then exactly 65,536 changes of the SPD, the last of which
    /// gives the flow to another SA: the memo's 16 bits match again, and only the pass that
    /// forgets every memo on the way round keeps the packet out. Fails without that pass.
    #[test]
    fn a_memo_does_not_outlive_the_generation_coming_round() {
        let mut tx = Engine::new(default_provider());
        let mut rx = Engine::new(default_provider());
        let out = tx.add_outbound(&params(0x7200), Time(0)).unwrap();
        let a = rx.add_inbound(&params(0x7200), Time(0)).unwrap();
        let b = rx.add_inbound(&params(0x7201), Time(0)).unwrap();
        rx.set_inbound_policy(1, 10, to(a.0)).unwrap();
        let mut pkt = Vec::new();
        etherparse::PacketBuilder::ipv4([10, 1, 0, 16], [10, 2, 0, 32], 64)
            .udp(40000, 5001)
            .write(&mut pkt, b"flow")
            .unwrap();
        let mut buf = PacketBuf::with_max_packet();
        let mut through_a = |rx: &mut Engine| {
            buf.load(&pkt, 128).unwrap();
            tx.protect_with(&[out], &mut buf, Time(0)).unwrap();
            rx.inbound(&mut buf, Time(0)).map(|_| ())
        };
        assert_eq!(through_a(&mut rx), Ok(()));
        let g = rx.inbound_policies().generation();
        // Replacing entry 1 counts two changes (a removal inside `set`); removing an entry
        // that is not there counts one.
        while rx.inbound_policies().generation() < g + 65_536 - 2 {
            let _ = rx.remove_inbound_policy(99);
        }
        rx.set_inbound_policy(1, 10, to(b.0)).unwrap();
        assert_eq!(rx.inbound_policies().generation(), g + 65_536, "the low 16 bits as at g");
        assert_eq!(through_a(&mut rx), Err(DropReason::InboundPolicyMismatch));
    }
}
