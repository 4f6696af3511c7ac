//! Fuzz target for the front thread's request assembly (`node::control::conn::control_line`
//! and `node::control::metrics::parse_head`): bytes arrive in pieces of any size; neither
//! may panic, and a verdict reached on a prefix never changes when more bytes follow (the
//! front thread acts on the first verdict).
#![no_main]

use libfuzzer_sys::fuzz_target;
use node::control::conn::{Line, control_line};
use node::control::metrics::{self, Head};

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else { return };
    let cut = (cut as usize).min(rest.len());
    let (prefix, _) = rest.split_at(cut);

    let max = 64;
    match control_line(prefix, false, max) {
        Line::More => {}
        first => assert_eq!(control_line(rest, false, max), first),
    }
    // Once the client has shut its side, there is always a verdict.
    assert_ne!(control_line(rest, true, max), Line::More);

    if let Head::Done(route) = metrics::parse_head(prefix) {
        assert_eq!(metrics::parse_head(rest), Head::Done(route));
    }
    let reply = metrics::response(metrics::route(rest), || "hipsec_up 1\n".to_string());
    assert!(reply.starts_with(b"HTTP/1.1 "));
});
