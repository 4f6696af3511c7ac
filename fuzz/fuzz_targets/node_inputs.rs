//! Fuzz target for what a node reads from users and peers outside the ESP parsers: the node
//! config (TOML), the SA file of the pcap tools, the metrics endpoint's HTTP request head, and
//! the decrypted packets that the TUN coalescer (`node::gro`) reads and edits.
//! None may panic; every refusal is an error value naming file, line and field (checked here:
//! the message starts with the file name).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    match which % 4 {
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
        3 => coalesce(rest),
        _ => {
            let route = node::control::metrics::route(rest);
            let reply = node::control::metrics::response(route, || "hipsec_up 1\n".to_string());
            assert!(reply.starts_with(b"HTTP/1.1 "), "{route:?}");
        }
    }
});

/// Cuts `data` into packets (a length byte before each), plans their writes and checks that
/// every packet is written exactly once and no super-packet passes 64 KB or 64 segments.
fn coalesce(data: &[u8]) {
    let mut pkts = Vec::new();
    let mut rest = data;
    while let Some((&n, r)) = rest.split_first() {
        let n = (n as usize * 8).min(r.len());
        let mut b = ipsec::PacketBuf::new(n + 64, 32);
        if b.load(&r[..n], 32).is_err() {
            return;
        }
        pkts.push(b);
        rest = &r[n..];
    }
    let mut c = node::datapath::gro::Coalescer::default();
    let udp = data.first().is_some_and(|b| b & 1 == 1);
    let writes = c.plan(&mut pkts, udp).to_vec();
    let mut seen = vec![false; pkts.len()];
    for w in &writes {
        let mut len = 0;
        for (k, i) in c.segments(w).enumerate() {
            assert!(!seen[i], "packet {i} written twice");
            seen[i] = true;
            len += pkts[i].len() - if k == 0 { 0 } else { w.header_len };
        }
        assert!(w.segments <= node::datapath::gro::MAX_SEGMENTS);
        assert!(w.segments == 1 || len <= 65535, "{len}");
    }
    assert!(seen.iter().all(|s| *s));
}
