//! The link sockets' BPF programs run by a small interpreter of the instructions they use, on
//! packets the home agent and mobile node must and must not see.

use super::*;

/// Runs `p` on `pkt` (network header first) received on `ifindex`: bytes copied (0: dropped).
fn run(p: &[Insn], pkt: &[u8], ifindex: u32) -> u32 {
    let (mut a, mut pc) = (0u32, 0usize);
    for _ in 0..1000 {
        let i = p[pc];
        pc += 1;
        match i.code {
            LD_W if i.k == LOAD_IFINDEX => a = ifindex,
            LD_W => {
                let k = i.k as usize;
                let Some(b) = pkt.get(k..k + 4) else { return 0 };
                a = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            }
            LD_B => {
                let Some(b) = pkt.get(i.k as usize) else { return 0 };
                a = u32::from(*b);
            }
            AND => a &= i.k,
            JEQ => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
            RET => return i.k,
            c => panic!("opcode {c:#x} not interpreted"),
        }
    }
    panic!("no return")
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn packet(next: u8, src: &str, dst: &str) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0, 0, 8, next, 64];
    p.extend_from_slice(&v6(src).octets());
    p.extend_from_slice(&v6(dst).octets());
    p.extend_from_slice(&[0; 8]);
    p
}

#[test]
fn home_agent_sees_signalling_not_the_tunnel() {
    let p = home_agent(3, v6("2001:db8:1::1"), (v6("2001:db8:1::"), 64));
    let ha = "2001:db8:1::1";
    // A BU from a care-of address: Destination Options first.
    assert_eq!(run(&p, &packet(60, "2001:db8:2::100", ha), 3), ACCEPT_LEN);
    // A BU from the home address itself: ESP first, from the home prefix.
    assert_eq!(run(&p, &packet(50, "2001:db8:1::100", ha), 3), ACCEPT_LEN);
    // The reverse tunnel: ESP first from a care-of address.
    assert_eq!(run(&p, &packet(50, "2001:db8:2::100", ha), 3), 0);
    // Another interface, another destination, another protocol.
    assert_eq!(run(&p, &packet(60, "2001:db8:2::100", ha), 4), 0);
    assert_eq!(run(&p, &packet(60, "2001:db8:2::100", "2001:db8:1::2"), 3), 0);
    assert_eq!(run(&p, &packet(6, "2001:db8:1::100", ha), 3), 0);
    // A short packet is dropped, not read past its end.
    assert_eq!(run(&p, &packet(60, "2001:db8:2::100", ha)[..20], 3), 0);
}

#[test]
fn prefixes_of_any_length() {
    for (len, inside, outside) in [
        (48, "2001:db8:1:ffff::1", "2001:db8:2::1"),
        (56, "2001:db8:1:ff::1", "2001:db8:1:100::1"),
        (0, "fe80::1", "fe80::1"),
        (128, "2001:db8:1::100", "2001:db8:1::101"),
    ] {
        let p = home_agent(1, v6("2001:db8:1::1"), (v6(inside), len));
        assert_eq!(run(&p, &packet(50, inside, "2001:db8:1::1"), 1), ACCEPT_LEN, "/{len}");
        let want = if len == 0 { ACCEPT_LEN } else { 0 };
        assert_eq!(run(&p, &packet(50, outside, "2001:db8:1::1"), 1), want, "/{len}");
    }
}

#[test]
fn mobile_node_sees_routing_headers_only() {
    let p = mobile_node(7);
    assert_eq!(run(&p, &packet(43, "2001:db8:1::1", "2001:db8:2::100"), 7), ACCEPT_LEN);
    assert_eq!(run(&p, &packet(50, "2001:db8:1::1", "2001:db8:2::100"), 7), 0);
    assert_eq!(run(&p, &packet(43, "2001:db8:1::1", "2001:db8:2::100"), 8), 0);
}
