//! The lab's traffic helper: `hipsec-traffic server|client`, started inside namespaces by the lab.

use clap::Parser;

fn main() {
    std::process::exit(lab::traffic::cli::main_with(lab::traffic::cli::TrafficCli::parse()));
}
