//! Fuzz target for what a node reads from users and peers outside the packet path: the node
//! config (TOML), the SA file of the pcap tools, and the metrics endpoint's HTTP request head.
//! None may panic; every refusal is an error value naming file, line and field (checked here:
//! the message starts with the file name).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    match which % 3 {
        0 => {
            if let Err(e) = node::config::parse("fuzz.toml", &text) {
                assert!(e.to_string().starts_with("fuzz.toml"), "{e}");
            }
        }
        1 => {
            if let Err(e) = node::safile::parse("sa.toml", &text) {
                assert!(e.to_string().starts_with("sa.toml"), "{e}");
            }
        }
        _ => {
            let route = node::metrics::route(rest);
            let reply = node::metrics::response(route, || "hipsec_up 1\n".to_string());
            assert!(reply.starts_with(b"HTTP/1.1 "), "{route:?}");
        }
    }
});
