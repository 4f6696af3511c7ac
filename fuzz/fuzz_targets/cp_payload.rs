//! Fuzz target: any bytes as a CP payload body (RFC 7296 §3.15): nothing may panic; what parses
//! re-emits to the same bytes except for R bits (§3.15.1: ignored on receipt, sent as zero), and
//! the typed view of an attribute either fails naming the field or re-encodes to its value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::ikev2::{CfgAttribute, Cp};

fuzz_target!(|data: &[u8]| {
    let Ok(cp) = Cp::parse(data) else { return };
    let mut out = vec![0; cp.buffer_len()];
    cp.emit(&mut out).expect("a parsed CP re-emits");
    assert_eq!(out.len(), data.len());
    assert_eq!(Cp::parse(&out).as_ref(), Ok(&cp));
    for a in &cp.attributes {
        if let Ok(Some(k)) = a.known() {
            assert_eq!(&CfgAttribute::from_known(k), a);
        }
    }
    let _ = cp.known();
});
