//! Range-to-prefix expansion of port ranges with 4-bit strides: a range becomes a few aligned
//! blocks whose prefix length is one of 0, 4, 8, 12, 16, so it can be matched by exact hashing.

use crate::rule::PortRange;

/// The prefix lengths a port block can have (16 = one port, 0 = every port).
pub(crate) const BLOCK_LENS: [u8; 5] = [0, 4, 8, 12, 16];

/// The most blocks [`blocks`] returns for one range (15 per side and level, 4 levels, plus
/// slack), so a rule with two ranges yields at most `MAX_BLOCKS²` entries.
#[cfg(test)]
pub(crate) const MAX_BLOCKS: usize = 2 * 15 * 4 + 2;

/// Mask keeping the top `len` bits of a port.
#[inline]
pub(crate) fn port_mask(len: u8) -> u16 {
    if len == 0 { 0 } else { u16::MAX << (16 - u32::from(len.min(16))) }
}

/// The aligned blocks `(first port, prefix length)` that exactly cover `range`, largest first
/// at each position (greedy, which is minimal for a fixed stride set). `None` (any port) is the
/// single block `(0, 0)`.
pub(crate) fn blocks(range: Option<PortRange>) -> Vec<(u16, u8)> {
    let Some(range) = range else {
        return vec![(0, 0)];
    };
    let mut out = Vec::new();
    let mut p = u32::from(range.lo());
    let hi = u32::from(range.hi());
    while p <= hi {
        for len in BLOCK_LENS {
            let size = 1u32 << (16 - u32::from(len));
            if p % size == 0 && p + size - 1 <= hi {
                // p <= hi <= u16::MAX here, so the cast is lossless.
                out.push((p as u16, len));
                p += size;
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covered(bl: &[(u16, u8)]) -> Vec<u16> {
        let mut v = Vec::new();
        for &(start, len) in bl {
            let size = 1u32 << (16 - u32::from(len));
            for i in 0..size {
                v.push((u32::from(start) + i) as u16);
            }
        }
        v.sort_unstable();
        v
    }

    #[test]
    fn exact_cover_and_bound() {
        let cases = [
            (0u16, 65535u16),
            (1, 65534),
            (1000, 2000),
            (80, 80),
            (0, 0),
            (65535, 65535),
            (1024, 65535),
            (17, 4113),
        ];
        for (lo, hi) in cases {
            let r = PortRange::new(lo, hi);
            let bl = blocks(r);
            assert!(bl.len() <= MAX_BLOCKS, "{lo}:{hi} -> {}", bl.len());
            let want: Vec<u16> = (lo..=hi).collect();
            assert_eq!(covered(&bl), want, "{lo}:{hi}");
            for &(start, len) in &bl {
                assert_eq!(start & port_mask(len), start, "aligned");
            }
        }
        assert_eq!(blocks(None), vec![(0, 0)]);
        assert_eq!(blocks(PortRange::new(0, 65535)), vec![(0, 0)]);
    }

    #[test]
    fn worst_case_is_bounded() {
        let mut worst = 0;
        // Ranges with ragged edges at every level.
        for lo in [1u16, 0x111, 0x1111, 0x0fff, 7] {
            for hi in [65534u16, 0xeeee, 0xfeee, 0xf000, 0x8001] {
                if let Some(r) = PortRange::new(lo, hi) {
                    worst = worst.max(blocks(Some(r)).len());
                }
            }
        }
        assert!(worst <= MAX_BLOCKS, "{worst}");
    }
}
