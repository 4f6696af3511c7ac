//! Helpers shared by the lab's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The hipsec binary the nodes run: `HIPSEC_BIN`, else the one cargo built beside this test
/// (target/<profile>/deps/TEST-HASH → target/<profile>/hipsec).
pub fn hipsec_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HIPSEC_BIN") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.parent()?.join("hipsec");
    p.is_file().then_some(p)
}

/// What a scenario test needs: root, the hipsec binary and `tools`. Returns the binary, or
/// None after printing SKIPPED; under CI (`CI` set) anything missing fails the test instead.
pub fn ready(tools: &[&str]) -> Option<PathBuf> {
    if !lab::sys::have_privileges() {
        println!("SKIPPED: needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN)");
        return None;
    }
    let ci = std::env::var_os("CI").is_some();
    let Some(hipsec) = hipsec_bin() else {
        assert!(!ci, "CI: no hipsec binary beside the test");
        println!("SKIPPED: needs the hipsec binary (cargo build -p hipsec, or set HIPSEC_BIN)");
        return None;
    };
    for tool in tools {
        if std::process::Command::new(tool).arg("--version").output().is_err() {
            assert!(!ci, "CI: no {tool}");
            println!("SKIPPED: needs {tool}");
            return None;
        }
    }
    Some(hipsec)
}
