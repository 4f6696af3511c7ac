//! Runs the filter benchmark by hand: `cargo run --release -p filter --example bench [secs]`,
//! printing the table and the JSON report.

use std::time::Duration;

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let counts: Vec<usize> = match std::env::args().nth(2) {
        Some(list) => list.split(',').filter_map(|n| n.parse().ok()).collect(),
        None => filter::bench::DEFAULT_RULE_COUNTS.to_vec(),
    };
    let report = filter::bench::run(&counts, Duration::from_secs_f64(secs));
    print!("{report}");
    match serde_json::to_string_pretty(&report) {
        Ok(json) => println!("{json}"),
        Err(e) => eprintln!("cannot encode the report: {e}"),
    }
}
