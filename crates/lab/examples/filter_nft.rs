//! Prints the nft ruleset `filter-rules` loads for COUNT generated rules:
//! `cargo run -p lab --example filter_nft -- COUNT linear|sets [IFACE...]` (default hlab4 hlab6).
//! The scenario loads the element batches (after the table) as separate `nft -f` runs.

use lab::scenario::filter_rules::{TUN_DEVICES, nft, rules_text};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let layout = match args.get(1).map(String::as_str) {
        Some("sets") => nft::Layout::Sets,
        _ => nft::Layout::Linear,
    };
    let ifaces: Vec<&str> = if args.len() > 2 {
        args[2..].iter().map(String::as_str).collect()
    } else {
        TUN_DEVICES.to_vec()
    };
    let set = match filter::parse_rules(&rules_text(count)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("generated rules do not parse: {e}");
            std::process::exit(1);
        }
    };
    let t = nft::translate(&set, &ifaces, layout);
    print!("{}", t.text);
    for b in &t.batches {
        print!("{b}");
    }
    eprintln!(
        "{} nft rules, {} sets, {} elements, set conflicts {} (verified: {})",
        t.nft_rules, t.sets, t.elements, t.exact.conflicts, t.exact.verified
    );
}
