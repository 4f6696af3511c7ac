//! A small, fast, seedable hasher for the classifier's tables (multiply-rotate per word, a
//! folded 128-bit multiply to finish). Not a keyed PRF: the seed only spreads tables apart.

use std::hash::{BuildHasher, Hasher};
use std::net::IpAddr;

const K: u64 = 0x9E37_79B9_7F4A_7C15;
const K2: u64 = 0xD6E8_FEB8_6659_FD93;

/// The hasher state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastHasher {
    h: u64,
}

impl FastHasher {
    pub(crate) fn with_seed(seed: u64) -> FastHasher {
        FastHasher { h: seed ^ K2 }
    }

    #[inline]
    pub(crate) fn add(&mut self, x: u64) {
        self.h = (self.h.rotate_left(23) ^ x).wrapping_mul(K);
    }

    #[inline]
    pub(crate) fn add_u128(&mut self, x: u128) {
        self.add(x as u64);
        self.add((x >> 64) as u64);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let r = u128::from(self.h).wrapping_mul(u128::from(K2));
        (r as u64) ^ ((r >> 64) as u64)
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.add(x);
    }

    #[inline]
    fn write_u128(&mut self, x: u128) {
        self.add_u128(x);
    }
}

/// Folded multiply: the two halves of the 128-bit product, xored.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let r = u128::from(a).wrapping_mul(u128::from(b));
    (r as u64) ^ ((r >> 64) as u64)
}

const P0: u64 = 0xA076_1D64_78BD_642F;
const P1: u64 = 0xE703_7ED1_A0B4_28DB;
const P2: u64 = 0x8EBC_6AF0_9C88_C6E3;
const P3: u64 = 0x5899_65CC_7537_4CC3;

/// A 64-bit digest of two addresses and one word of small fields (two independent folded
/// multiplies, then a third to combine): the whole per-key hashing cost of the tables.
#[inline]
pub(crate) fn digest(src: u128, dst: u128, small: u64) -> u64 {
    let a = fold((src as u64) ^ P0, ((src >> 64) as u64) ^ P1);
    let b = fold((dst as u64) ^ P2, ((dst >> 64) as u64) ^ P3);
    fold(a ^ small ^ P1, b ^ P2)
}

/// `BuildHasher` for `HashMap`s of the classifier.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SeededState {
    pub(crate) seed: u64,
}

impl BuildHasher for SeededState {
    type Hasher = FastHasher;

    #[inline]
    fn build_hasher(&self) -> FastHasher {
        FastHasher::with_seed(self.seed)
    }
}

/// The bits of an address as a `u128` (IPv4 in the low 32 bits) and a family tag (1 = IPv4,
/// 2 = IPv6).
#[inline]
pub(crate) fn addr_bits(addr: IpAddr) -> (u128, u8) {
    match addr {
        IpAddr::V4(a) => (u128::from(a.to_bits()), 1),
        IpAddr::V6(a) => (a.to_bits(), 2),
    }
}
