//! Drives tests/interop/scapy_esp.py (hipsec vs scapy's ESP/AH) on a subset of suites with this
//! build's binary. The full matrix runs from tests/interop/run.sh. Skips, saying so, without a venv.

use std::path::Path;
use std::process::Command;

#[test]
fn scapy_cross_check_subset() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = std::env::var("VENV").map_or_else(|_| root.join(".venv"), |v| root.join(v));
    let python = venv.join("bin/python");
    let has_scapy = Command::new(&python)
        .args(["-c", "import scapy, cryptography"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_scapy {
        println!(
            "SKIPPED: no venv with scapy at {} (run tests/interop/run.sh to create it)",
            venv.display()
        );
        return;
    }
    let out = Command::new(&python)
        .arg(root.join("tests/interop/scapy_esp.py"))
        .args(["-k", "aes128gcm", "-k", "chacha20", "-k", "aes256cbc-sha512", "-k", "3des-sha1"])
        .args(["-k", "null-sha256", "-k", "ah sha256", "-k", "ah sha1"])
        .env("HIPSEC_BIN", env!("CARGO_BIN_EXE_hipsec"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or("");
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(last.ends_with(" passed, 0 failed"), "{last}");
    println!("scapy cross-check subset ok ({})", last.trim_end_matches(", 0 failed"));
}
