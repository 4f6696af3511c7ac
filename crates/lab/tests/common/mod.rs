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

/// Fails unless every file named in `want` is among `written` (a report's files).
pub fn assert_written(written: &[PathBuf], want: &[&str]) {
    for f in want {
        assert!(written.iter().any(|p| p.ends_with(f)), "{f} not written: {written:?}");
    }
}

/// Fails if this test process left a lab namespace that was not there `before`.
pub fn assert_no_namespaces_left(before: &[String]) {
    let left: Vec<String> = lab::topology::list_namespaces()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with(&format!("hlab-{}-", std::process::id())) && !before.contains(n))
        .collect();
    assert!(left.is_empty(), "namespaces left: {left:?}");
}
