//! `hipsec-node -c node.toml`: runs one node (for the netns tests and until `hipsec run` is wired);
//! `hipsec-node status SOCKET` prints the node's status JSON.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    // The data path's tables on transparent huge pages (`node::huge_pages`): may execute this
    // program again, so before anything else.
    node::huge_pages::reexec_with_huge_pages();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.as_slice() {
        [c, path] if c == "-c" || c == "--config" => node::run(&PathBuf::from(path)),
        [c, path, r] if (c == "-c" || c == "--config") && r == "--reset-sequence" => {
            let o = node::run::RunOptions { reset_sequence: true, ..Default::default() };
            node::run::run_with(&PathBuf::from(path), o)
        }
        [s, sock] if s == "status" => node::status(&PathBuf::from(sock)).map(|j| println!("{j}")),
        _ => {
            eprintln!(
                "usage: hipsec-node -c CONFIG [--reset-sequence] | hipsec-node status SOCKET"
            );
            return ExitCode::from(2);
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hipsec-node: {e}");
            ExitCode::FAILURE
        }
    }
}
