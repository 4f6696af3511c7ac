//! The hipsec node: the only crate that touches the OS. A TUN device ↔ the `ipsec` engine ↔ UDP
//! (ESP in UDP, RFC 3948) or raw IP sockets (ESP 50 / AH 51), a config file and a control socket.
//! Read first: RFC 4301 §5 (processing), RFC 3948 §2 (UDP encapsulation).
//!
//! One folder per role, arrows pointing down only:
//! - [`mod@run`]: starts the lanes and the control thread, stops them on a signal;
//! - [`control`]: the control socket, `status`, `/metrics`;
//! - [`keying`]: how SAs and policies reach the data path (manual keying today);
//! - [`datapath`]: the lanes of worker threads, TUN, carrier sockets, the per-packet work;
//! - [`config`]: the node config and the SA file;
//! - [`guard`]: the nftables table that keeps protected traffic off other routes, also while
//!   the node is down;
//! - leaves: [`error`], [`log`], `sys` (system calls), [`huge_pages`] (the heap on transparent
//!   huge pages), [`netns`] (helpers for tests and benches).
#![deny(unsafe_code)]

pub mod config;
pub mod control;
pub mod datapath;
pub mod error;
pub mod guard;
pub mod huge_pages;
pub mod keying;
pub mod log;
pub mod netns;
pub mod nft;
pub mod routes;
pub mod run;
pub mod sys;

pub use config::safile;
pub use datapath::tuning::Tuning;
pub use run::{run, run_tuned, run_until};

pub use error::NodeError;
use error::io_err;
use std::path::Path;

/// Asks the node listening on `socket` for its status (JSON).
pub fn status(socket: &Path) -> Result<String, NodeError> {
    command(socket, "status")
}

/// Starts a node (`cmd`: its program and arguments, say `ip netns exec NS hipsec-node -c
/// FILE`) with its standard error in `log`, and waits until its control `socket` answers
/// [`status`], as a script or test does before it drives the node. Returns the child and
/// whether it came up: false if it exited first or did not answer within 10 s (the caller
/// keeps the child either way, to stop it and read its log).
pub fn spawn_and_wait(
    cmd: &mut std::process::Command,
    log: std::fs::File,
    socket: &Path,
) -> std::io::Result<(std::process::Child, bool)> {
    use std::process::Stdio;
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).spawn()?;
    for _ in 0..400 {
        if status(socket).is_ok() {
            return Ok((child, true));
        }
        if child.try_wait()?.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    Ok((child, false))
}

/// Sends one control command (`status`, `reload-filter`) and returns the JSON answer.
pub fn command(socket: &Path, cmd: &str) -> Result<String, NodeError> {
    control::socket::query(socket, cmd)
        .map_err(io_err(format!("control socket {}", socket.display())))
}
