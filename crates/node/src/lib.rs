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
//! - leaves: [`error`], [`log`], `sys` (system calls), [`huge_pages`] (the heap on transparent
//!   huge pages), [`netns`] (helpers for tests and benches).
#![deny(unsafe_code)]

pub mod config;
pub mod control;
pub mod datapath;
pub mod error;
pub mod huge_pages;
pub mod keying;
pub mod log;
pub mod netns;
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

/// Sends one control command (`status`, `reload-filter`) and returns the JSON answer.
pub fn command(socket: &Path, cmd: &str) -> Result<String, NodeError> {
    control::socket::query(socket, cmd)
        .map_err(io_err(format!("control socket {}", socket.display())))
}
