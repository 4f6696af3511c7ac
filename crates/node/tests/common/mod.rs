//! Helpers shared by the node's namespace tests: whether they can run here, running a command,
//! and stopping a node the way an operator does.

#![allow(clippy::unwrap_used, dead_code)] // test helpers: a failed setup step should panic

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Whether the namespace tests can run (root, `ip netns`, /dev/net/tun); says SKIPPED if not.
pub fn can_run() -> bool {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let ip = Command::new("ip").args(["netns", "list"]).output().is_ok_and(|o| o.status.success());
    if !(root && ip && Path::new("/dev/net/tun").exists()) {
        println!("SKIPPED: needs root and ip netns (and /dev/net/tun)");
        return false;
    }
    true
}

/// Runs a command; panics with its stderr if it fails.
pub fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Sends SIGTERM (clean shutdown) to a child we started, then waits for it (SIGKILL after 5 s).
pub fn stop(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .stderr(Stdio::null())
        .status();
    for _ in 0..50 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}
