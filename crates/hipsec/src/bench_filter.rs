//! `hipsec bench filter`: ns per packet of the compiled classifier (uncached and behind its flow
//! cache) for growing rule counts, beside the linear reference evaluator, in one run.

use std::time::Duration;

/// Arguments of `hipsec bench filter`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchFilterArgs {
    /// Rule counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = filter::bench::DEFAULT_RULE_COUNTS)]
    pub rules: Vec<usize>,
    /// Seconds of measurement per rule count (split into interleaved repetitions).
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark and prints the table or JSON.
pub fn run(args: &BenchFilterArgs) -> Result<(), String> {
    if !(args.seconds > 0.0 && args.seconds <= 600.0) {
        return Err(format!("--seconds {}: must be in (0, 600]", args.seconds));
    }
    if args.rules.is_empty() || args.rules.iter().any(|&n| n == 0 || n > 1_000_000) {
        return Err("--rules: give counts from 1 to 1000000, e.g. --rules 10,100,5000".into());
    }
    let report = filter::bench::run(&args.rules, Duration::from_secs_f64(args.seconds));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        println!(
            "packet filter: ns per packet by rule count (none of the rules match the traffic)"
        );
        print!("{report}");
        println!(
            "medians of interleaved repetitions; linear evaluator skipped above {} rules",
            filter::bench::LINEAR_MAX_RULES
        );
    }
    Ok(())
}
