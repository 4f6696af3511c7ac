//! `hipsec bench` runs its engines on transparent huge pages as the node does
//! (`node::huge_pages`): the program executes itself again with glibc's tunable when the kernel's
//! THP mode is `madvise`, and `HIPSEC_HUGE_PAGES=off` keeps 4 KiB pages. Checked end to end on
//! what `bench sas --json` reports, against the mode this machine's kernel is in.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_hipsec");

/// The mode `bench sas` reports, run with `env` added to the environment (and without any
/// GLIBC_TUNABLES of the test runner's own).
fn reported(env: &[(&str, &str)]) -> String {
    let mut c = Command::new(BIN);
    c.args(["bench", "sas", "--sas", "2", "--seconds", "0.01", "--json"]);
    c.env_remove("GLIBC_TUNABLES").env_remove(node::huge_pages::ENV_SWITCH);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    rows[0]["huge_pages"].as_str().expect("huge_pages in the row").to_string()
}

#[test]
fn bench_runs_on_the_heap_mode_the_kernel_allows_and_off_when_told() {
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let want = if mode.contains("[madvise]") {
        // Reported by the re-executed process, which sees the tunable: the exec happened.
        "thp-heap"
    } else if mode.contains("[always]") {
        "thp-always"
    } else {
        "off"
    };
    assert_eq!(reported(&[]), want, "THP mode: {mode}");
    assert_eq!(reported(&[("HIPSEC_HUGE_PAGES", "off")]), "off");
    if mode.contains("[madvise]") {
        // An operator's explicit "no" in the tunable itself stands too.
        assert_eq!(reported(&[("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0")]), "off");
    }
}
