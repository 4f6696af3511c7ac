//! Where manual SAs resume: from a checkpoint, under a new key, refused without one.

use super::*;
use serde_json::json;

const EXAMPLE: &str = include_str!("../../../../docs/node-example.toml");

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(tag: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("hipsec-seq-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

/// The example (one outbound SA, spi 0x1001 to 192.0.2.2) with `[state] file` in `d`.
fn config(d: &Dir, text: &str) -> NodeConfig {
    let path = d.0.join("node.toml");
    std::fs::write(&path, format!("{text}\n[state]\nfile = \"seq.json\"\n")).unwrap();
    crate::config::load(&path).unwrap()
}

fn snapshot(seq: u64) -> serde_json::Value {
    json!({ "sas": [
        { "direction": "out", "spi": "0x00001001", "proto": "esp", "dst": "192.0.2.2", "seq_out": seq },
        { "direction": "in", "spi": "0x00002001", "proto": "esp", "dst": "192.0.2.1" },
    ]})
}

#[test]
fn a_missing_file_is_refused_unless_reset() {
    let d = dir("missing");
    let c = config(&d, EXAMPLE);
    let e = Checkpointer::start(&c, false).unwrap_err().to_string();
    assert!(e.contains("seq.json") && e.contains("--reset-sequence"), "{e}");
    let cp = Checkpointer::start(&c, true).unwrap().unwrap();
    assert_eq!(cp.resume, vec![(0, 0)]);
    // Written at once, mode 600, and without any key: only an HMAC under the file's salt.
    let text = std::fs::read_to_string(d.0.join("seq.json")).unwrap();
    assert!(!text.contains("000102030405060708090a0b0c0d0e0f"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(d.0.join("seq.json")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn a_restart_resumes_past_the_checkpoint() {
    let d = dir("resume");
    let c = config(&d, EXAMPLE);
    let mut cp = Checkpointer::start(&c, true).unwrap().unwrap();
    assert!(cp.update(&[snapshot(123_456)]));
    assert!(!cp.update(&[snapshot(123_456)]), "an unchanged number is no reason to write");
    cp.write().unwrap();
    let again = Checkpointer::start(&c, false).unwrap().unwrap();
    assert_eq!(again.resume, vec![(0, 123_456 + MARGIN)]);
    // And the resumed number is the floor of the next restart, even with no packet between.
    let third = Checkpointer::start(&c, false).unwrap().unwrap();
    assert_eq!(third.resume, vec![(0, 123_456 + 2 * MARGIN)]);
}

#[test]
fn the_engine_sends_from_the_resumed_number() {
    let d = dir("apply");
    let c = config(&d, EXAMPLE);
    let mut cp = Checkpointer::start(&c, true).unwrap().unwrap();
    cp.update(&[snapshot(1000)]);
    cp.write().unwrap();
    let cp = Checkpointer::start(&c, false).unwrap().unwrap();
    let (mut engine, _) =
        crate::keying::manual::build_engine_for(&c, ipsec::Time(0), true, false, 0).unwrap();
    cp.apply(&c, 0, &mut engine);
    let sa = engine.outbound_sas().next().unwrap();
    assert_eq!(sa.last_seq_out().0, 1000 + MARGIN);
}

#[test]
fn another_key_under_the_same_spi_starts_at_one() {
    let d = dir("rekeyed");
    let c = config(&d, EXAMPLE);
    let mut cp = Checkpointer::start(&c, true).unwrap().unwrap();
    cp.update(&[snapshot(5000)]);
    cp.write().unwrap();
    let new_key = EXAMPLE.replacen(
        "0x000102030405060708090a0b0c0d0e0f_a0a1a2a3",
        "0x0f0e0d0c0b0a09080706050403020100_a0a1a2a3",
        1,
    );
    let c2 = config(&d, &new_key);
    assert_eq!(Checkpointer::start(&c2, false).unwrap().unwrap().resume, vec![(0, 0)]);
}

#[test]
fn an_sa_the_file_does_not_know_is_refused() {
    let d = dir("unknown");
    let c = config(&d, EXAMPLE);
    Checkpointer::start(&c, true).unwrap();
    let other_spi = EXAMPLE.replacen("spi = \"0x00001001\"", "spi = \"0x00001009\"", 1);
    let c2 = config(&d, &other_spi);
    let e = Checkpointer::start(&c2, false).unwrap_err().to_string();
    assert!(
        e.contains("no checkpoint for outbound SA \"a-to-b\" (spi 0x00001009 to 192.0.2.2)"),
        "{e}"
    );
    assert_eq!(Checkpointer::start(&c2, true).unwrap().unwrap().resume, vec![(0, 0)]);
}

#[test]
fn a_checkpoint_near_the_end_of_32_bits_is_refused() {
    let d = dir("exhausted");
    let c = config(&d, EXAMPLE);
    let mut cp = Checkpointer::start(&c, true).unwrap().unwrap();
    cp.update(&[snapshot(u32::MAX as u64 - 1000)]);
    cp.write().unwrap();
    let e = Checkpointer::start(&c, false).unwrap_err().to_string();
    assert!(e.contains("rekey it, or use esn = true"), "{e}");
}

#[test]
fn a_corrupt_file_is_refused_and_named() {
    let d = dir("corrupt");
    let c = config(&d, EXAMPLE);
    std::fs::write(d.0.join("seq.json"), b"{\"version\":1,\"salt\":\"zz\",\"sas\":[]}").unwrap();
    let e = Checkpointer::start(&c, false).unwrap_err().to_string();
    assert!(e.contains("salt"), "{e}");
    std::fs::write(d.0.join("seq.json"), b"\x00\x01garbage").unwrap();
    let e = Checkpointer::start(&c, false).unwrap_err().to_string();
    assert!(e.contains("not a state file"), "{e}");
}
