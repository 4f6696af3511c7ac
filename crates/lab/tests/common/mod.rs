//! Helpers shared by the lab's integration tests.

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
