//! Stand-in for `hipsec lab` until the CLI is wired: `lab-run list` or `lab-run run SCENARIO [opts]`.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    List,
    Run {
        scenario: String,
        #[command(flatten)]
        opts: lab::RunOptions,
    },
}

fn main() {
    match Cli::parse().cmd {
        Cmd::List => {
            for s in lab::list() {
                println!(
                    "{:16} seed {}  {}{}",
                    s.name,
                    s.seed,
                    s.summary,
                    if s.available { "" } else { " [not yet]" }
                );
            }
        }
        Cmd::Run { scenario, opts } => {
            if let Err(e) = lab::run(&scenario, &opts) {
                eprintln!("lab: {e}");
                std::process::exit(1);
            }
        }
    }
}
