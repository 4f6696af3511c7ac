//! The classic BPF programs (socket(7) SO_ATTACH_FILTER, linux/filter.h) of the Mobile IPv6
//! link sockets, so that the kernel copies to us only what may be signalling:
//!
//! - the home agent: IPv6 packets on its interface to its address that start with a Destination
//!   Options header (a Binding Update from a care-of address carries the Home Address option,
//!   RFC 6275 §6.3) or with ESP from the home prefix (a Binding Update from the home address
//!   itself, §11.5.4). ESP from elsewhere is the reverse tunnel's (RFC 4877 §4.3), for the data
//!   path only: copying every tunnelled packet to the control thread would cost it as much as
//!   the data path's work;
//! - the mobile node: IPv6 packets on its interface that start with a routing header (the type
//!   2 routing header of a Binding Acknowledgement, §6.4); the care-of address changes, so the
//!   caller checks the destination.
//!
//! Packets are read from the network header (SOCK_DGRAM AF_PACKET): offset 6 is the IPv6 Next
//! Header, 8 the source address, 24 the destination.

use socket2::SockFilter;
use std::net::Ipv6Addr;

/// SKF_AD_OFF + SKF_AD_IFINDEX (linux/filter.h): loads the receiving interface's index.
const LOAD_IFINDEX: u32 = 0xffff_f000 + 8;
const LD_W: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const LD_B: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
/// Bytes a matching packet is copied up to (all of it).
const ACCEPT_LEN: u32 = 0xffff;

/// One instruction, with jumps still symbolic while the program is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    /// Opcode.
    pub code: u16,
    /// Jump if true (relative, after resolution).
    pub jt: u8,
    /// Jump if false.
    pub jf: u8,
    /// Constant.
    pub k: u32,
}

/// Where a comparison goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum To {
    Next,
    Accept,
    Drop,
}

struct Builder {
    code: Vec<(u16, To, To, u32)>,
}

impl Builder {
    fn op(&mut self, code: u16, k: u32) {
        self.code.push((code, To::Next, To::Next, k));
    }
    fn jeq(&mut self, k: u32, yes: To, no: To) {
        self.code.push((JEQ, yes, no, k));
    }
    /// Drops unless the 16 bytes at `at` equal `a` under the first `len` bits.
    fn addr(&mut self, at: u32, a: Ipv6Addr, len: u8) {
        let o = a.octets();
        for i in 0..4u32 {
            let bits = u32::from(len).saturating_sub(32 * i).min(32);
            if bits == 0 {
                break;
            }
            let mask = if bits == 32 { u32::MAX } else { !(u32::MAX >> bits) };
            let j = 4 * i as usize;
            let word = u32::from_be_bytes([o[j], o[j + 1], o[j + 2], o[j + 3]]);
            self.op(LD_W, at + 4 * i);
            if mask != u32::MAX {
                self.op(AND, mask);
            }
            self.jeq(word & mask, To::Next, To::Drop);
        }
    }
    /// Resolves the jumps: the program ends with accept, then drop.
    fn finish(mut self) -> Vec<Insn> {
        self.op(RET, ACCEPT_LEN);
        self.op(RET, 0);
        let n = self.code.len();
        let rel = |i: usize, t: To| -> u8 {
            let target = match t {
                To::Next => i + 1,
                To::Accept => n - 2,
                To::Drop => n - 1,
            };
            u8::try_from(target - i - 1).unwrap_or(u8::MAX)
        };
        self.code
            .iter()
            .enumerate()
            .map(|(i, &(code, jt, jf, k))| Insn { code, jt: rel(i, jt), jf: rel(i, jf), k })
            .collect()
    }
}

/// The home agent's program: interface `ifindex`, destination `addr`, then Destination Options
/// first, or ESP first from `home_prefix`.
pub fn home_agent(ifindex: u32, addr: Ipv6Addr, home_prefix: (Ipv6Addr, u8)) -> Vec<Insn> {
    let mut b = Builder { code: Vec::new() };
    b.op(LD_W, LOAD_IFINDEX);
    b.jeq(ifindex, To::Next, To::Drop);
    b.addr(24, addr, 128);
    b.op(LD_B, 6);
    b.jeq(60, To::Accept, To::Next);
    b.jeq(50, To::Next, To::Drop);
    b.addr(8, home_prefix.0, home_prefix.1);
    b.finish()
}

/// The mobile node's program: interface `ifindex`, a routing header first.
pub fn mobile_node(ifindex: u32) -> Vec<Insn> {
    let mut b = Builder { code: Vec::new() };
    b.op(LD_W, LOAD_IFINDEX);
    b.jeq(ifindex, To::Next, To::Drop);
    b.op(LD_B, 6);
    b.jeq(43, To::Accept, To::Drop);
    b.finish()
}

/// The program as the kernel takes it.
pub fn to_sock_filter(p: &[Insn]) -> Vec<SockFilter> {
    p.iter().map(|i| SockFilter::new(i.code, i.jt, i.jf, i.k)).collect()
}

#[cfg(test)]
#[path = "bpf_tests.rs"]
mod tests;
