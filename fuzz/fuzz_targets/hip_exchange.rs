//! Fuzz target: the HIP base exchange (RFC 7401 §4.1) between two hosts joined by function
//! calls, with a mutator between them. The first input byte picks which of I1, R1, I2, R2 is
//! hit and how (replaced by the input, bytes XORed in, or truncated); the receiver must refuse
//! it or take it, never panic, and after a refusal the genuine packet must still complete the
//! exchange with mirrored keys.
#![no_main]

#[path = "common/mutate.rs"]
mod mutate;
use mutate::mutate;

use crypto::EcCurve;
use hip::LocalHost;
use hip::bex::initiator::I1Sent;
use hip::bex::responder::Responder;
use hip::bex::Config;
use libfuzzer_sys::fuzz_target;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::OnceLock;

const A: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
const B: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));

struct Hosts {
    i: LocalHost,
    r: LocalHost,
    resp: Responder,
}

fn hosts() -> &'static Hosts {
    static H: OnceLock<Hosts> = OnceLock::new();
    H.get_or_init(|| {
        let i = LocalHost::from_scalar(EcCurve::P256, &[0x11; 32]).expect("initiator");
        let r = LocalHost::from_scalar(EcCurve::P256, &[0x22; 32]).expect("responder");
        // K = 1 keeps the genuine path cheap; the puzzle check itself is the same code.
        let config = Config { puzzle_k: 1, ..Config::default() };
        let resp = Responder::new(&r, config, crypto::default_provider()).expect("responder");
        Hosts { i, r, resp }
    })
}


fuzz_target!(|input: &[u8]| {
    let Some((&sel, data)) = input.split_first() else { return };
    let (step, how) = (sel % 4, sel / 4);
    let h = hosts();
    let p = crypto::default_provider();
    let config = Config { puzzle_k: 1, ..Config::default() };
    let s = I1Sent::start(&h.i, h.r.hit(), config, A, B).expect("start");
    if step == 0 {
        let _ = h.resp.on_i1(&h.r.hit(), &mutate(how, s.i1(), data), A, B);
    }
    let r1 = h.resp.on_i1(&h.r.hit(), s.i1(), A, B).expect("genuine I1");
    let s = if step == 1 {
        match s.on_r1(&h.i, p, &mutate(how, &r1, data), B, A) {
            Ok(_) => return,
            Err(rej) => *rej.state,
        }
    } else {
        s
    };
    let (s, _) = s.on_r1(&h.i, p, &r1, B, A).expect("genuine R1");
    if step == 2 {
        let _ = h.resp.on_i2(&h.r, &mutate(how, s.i2(), data), A, B);
    }
    let (r2, est_r) = h.resp.on_i2(&h.r, s.i2(), A, B).expect("genuine I2");
    let s = if step == 3 {
        match s.on_r2(&mutate(how, &r2, data), B, A) {
            Ok(_) => return,
            Err(rej) => *rej.state,
        }
    } else {
        s
    };
    let est_i = s.on_r2(&r2, B, A).expect("genuine R2");
    assert_eq!(est_i.esp.spi_out, est_r.esp.spi_in);
    assert_eq!(*est_i.esp.enc_out, *est_r.esp.enc_in);
});
