//! Running nft(8): a script on standard input, applied as one transaction (all of it or none),
//! and listings. Used by the tables the node keeps in the kernel (`crate::guard`,
//! `crate::keying::mip6::nft`).

use std::io::{self, Write};
use std::process::{Command, Stdio};

/// Applies `script` (`nft -f -`: one atomic transaction).
pub fn apply(script: &str) -> io::Result<()> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(not_found)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("nft: {}", String::from_utf8_lossy(&out.stderr).trim())))
    }
}

/// Runs `nft ARGS` and returns what it printed; an error carries its message.
pub fn output(args: &[&str]) -> io::Result<String> {
    let out = Command::new("nft").args(args).stdin(Stdio::null()).output().map_err(not_found)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(io::Error::other(format!("nft: {}", String::from_utf8_lossy(&out.stderr).trim())))
    }
}

fn not_found(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::NotFound {
        io::Error::new(
            e.kind(),
            "nft not found: install nftables (Debian: apt-get install nftables)",
        )
    } else {
        e
    }
}
