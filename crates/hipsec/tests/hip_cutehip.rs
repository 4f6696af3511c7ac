//! Drives tests/interop/hip_cutehip.sh (a hipsec HIP node against cutehip, an independent
//! pure-Python HIPv2 host) in both roles with this build's binary. Needs a cutehip checkout in
//! CUTEHIP_DIR and a python with its packages in CUTEHIP_PY (docs/hip.md, "Interop record");
//! without them, or without root, it prints SKIPPED.
//!
//! cutehip as published stops the exchange on faults of its own (docs/hip.md lists them), so
//! what is asserted is hipsec's part: it takes cutehip's R1 (its HOST_ID hashes to the HIT,
//! HIP_SIGNATURE_2 verifies) and answers with I2 as Initiator; it answers cutehip's I1 with
//! R1 as Responder; every HIP packet on the wire has a good checksum and none is malformed.
//! With CUTEHIP_EXPECT=complete (a copy changed for those faults) the whole run must pass:
//! base exchange, both ends established, pings answered over ESP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

fn run(role: &str) -> Option<(bool, String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hip-cutehip-{role}"));
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = Command::new("bash")
        .arg(root.join("tests/interop/hip_cutehip.sh"))
        .arg(role)
        .arg(&out_dir)
        .env("HIPSEC", env!("CARGO_BIN_EXE_hipsec"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if let Some(line) = stdout.lines().find(|l| l.starts_with("SKIPPED")) {
        println!("{line}");
        return None;
    }
    let summary = std::fs::read_to_string(out_dir.join("hip.summary.txt")).unwrap_or_default();
    Some((out.status.success(), stdout, summary))
}

#[test]
fn hipsec_and_cutehip_in_both_roles() {
    let complete = std::env::var("CUTEHIP_EXPECT").is_ok_and(|v| v == "complete");
    for (role, ours) in [("initiator", "I2 (Second HIP Initiator"), ("responder", "R1 (HIP Resp")] {
        let Some((ok, stdout, summary)) = run(role) else { return };
        assert!(
            stdout.contains("malformed or with a bad checksum: 0"),
            "{role}: tshark found a bad HIP packet\n{stdout}"
        );
        let from_us =
            summary.lines().any(|l| l.contains("192.0.2.1 → 192.0.2.2") && l.contains(ours));
        assert!(from_us, "{role}: hipsec did not send its {ours}\n{summary}");
        if complete {
            assert!(ok, "{role}: the exchange or the pings failed\n{stdout}");
        }
        println!("{role}: {}", stdout.lines().last().unwrap_or(""));
    }
}
