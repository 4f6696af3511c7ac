//! Transparent huge pages for the data path's memory (issue 10).
//!
//! With thousands of SAs, every packet meets a cold SA, its key schedule and an index slot,
//! each on its own 4 KiB page, so the lookups miss the TLB as well as the caches. In a virtual
//! machine each TLB miss is a two-level page walk. `hipsec bench sas --sas 1,10000` on the
//! 2-vCPU EPYC VM of issue 10, six pairs alternating on one binary (14:35 UTC, 2026-11-28):
//! - with 4 KiB pages: seal 1.18–1.23× the 1-SA figure (+35 to +44 ns);
//! - with glibc's heap on transparent huge pages: seal 1.09–1.11× (+18 to +22 ns).
//!
//! VPP and DPDK put their tables on huge pages for the same reason.
//!
//! How: glibc's malloc asks the kernel for huge pages (`madvise(MADV_HUGEPAGE)` on the memory
//! it obtains) when the tunable `glibc.malloc.hugetlb=1` is set (with a larger `top_pad`:
//! `TOP_PAD`). Tunables are read once, when
//! the process starts, so [`reexec_with_huge_pages`] adds it to `GLIBC_TUNABLES` and executes
//! the same program again (same pid, arguments and open files). It does so only:
//! - when the kernel's THP mode is `madvise`: with `always` the heap gets huge pages anyway,
//!   and with `never` it cannot;
//! - when `HIPSEC_HUGE_PAGES` is not `off`;
//! - when `GLIBC_TUNABLES` does not set `glibc.malloc.hugetlb` already (an operator's choice,
//!   or the process this one executed).

use std::ffi::OsString;

/// The environment variable that turns this off (`HIPSEC_HUGE_PAGES=off`).
pub const ENV_SWITCH: &str = "HIPSEC_HUGE_PAGES";

/// glibc's tunable: malloc marks its memory for transparent huge pages.
const TUNABLE: &str = "glibc.malloc.hugetlb=1";

/// And grows its heap 64 MiB at a time (unless the operator set `top_pad`), so that the marked
/// memory comes in stretches that hold whole 2 MiB pages rather than 128 KiB steps: measured
/// beside `hugetlb=1` alone (`bench sas --sas 1,10000`, four pairs), seal 1.10–1.11× against
/// 1.14–1.15×. Address space only: the kernel backs what is touched.
const TOP_PAD: &str = "glibc.malloc.top_pad=67108864";

/// What the process runs with, for the log and `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HugePages {
    /// glibc's heap is marked for transparent huge pages (the tunable is set).
    Heap,
    /// The kernel backs all anonymous memory with huge pages where it can (THP `always`).
    Always,
    /// 4 KiB pages: THP `never` or unknown, or `HIPSEC_HUGE_PAGES=off`.
    Off,
}

impl HugePages {
    /// The mode's name in logs and JSON.
    pub fn name(self) -> &'static str {
        match self {
            HugePages::Heap => "thp-heap",
            HugePages::Always => "thp-always",
            HugePages::Off => "off",
        }
    }
}

/// The kernel's THP mode: the bracketed word of
/// `/sys/kernel/mm/transparent_hugepage/enabled` ("always [madvise] never").
fn thp_mode(text: &str) -> Option<&str> {
    let start = text.find('[')? + 1;
    let len = text[start..].find(']')?;
    Some(&text[start..start + len])
}

/// The value `GLIBC_TUNABLES` gives the tunable `name` (`glibc.malloc.hugetlb`), if any.
fn tunable<'a>(tunables: Option<&'a str>, name: &str) -> Option<&'a str> {
    tunables?.split(':').find_map(|x| x.strip_prefix(name)?.strip_prefix('='))
}

/// What to do, from the THP mode, `GLIBC_TUNABLES` and the switch (pure, for the tests).
fn decide(mode: Option<&str>, tunables: Option<&str>, switch: Option<&str>) -> (HugePages, bool) {
    if switch.is_some_and(|s| s.eq_ignore_ascii_case("off")) {
        return (HugePages::Off, false);
    }
    // Someone set the tunable already (this is the re-executed process, or an operator chose):
    // leave it as it is.
    let set =
        tunables.and_then(|t| t.split(':').find_map(|x| x.strip_prefix("glibc.malloc.hugetlb=")));
    match (mode, set) {
        (Some("always"), _) => (HugePages::Always, false),
        (Some("madvise"), Some("0")) => (HugePages::Off, false),
        (Some("madvise"), Some(_)) => (HugePages::Heap, false),
        (Some("madvise"), None) => (HugePages::Heap, true),
        _ => (HugePages::Off, false),
    }
}

/// `GLIBC_TUNABLES` with the tunable added to what was there.
fn with_tunable(existing: Option<&str>) -> String {
    let existing = existing.filter(|t| !t.is_empty());
    let mut out: Vec<&str> = existing.into_iter().collect();
    out.push(TUNABLE);
    if tunable(existing, "glibc.malloc.top_pad").is_none() {
        out.push(TOP_PAD);
    }
    out.join(":")
}

/// This process's inputs to `decide`: the kernel's THP mode, `GLIBC_TUNABLES` and the switch.
/// Returns the decision and the tunables as found.
fn decide_here() -> ((HugePages, bool), Option<String>) {
    let mode_text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
    let tunables = std::env::var("GLIBC_TUNABLES").ok();
    let switch = std::env::var(ENV_SWITCH).ok();
    let mode = mode_text.as_deref().ok().and_then(thp_mode);
    (decide(mode, tunables.as_deref(), switch.as_deref()), tunables)
}

/// Call first thing in `main`, before threads or allocations that matter: executes the program
/// again with the tunable set when it is missing (see the module documentation), and returns
/// the mode the process runs with. Returns `Off` if the exec failed: the program then goes on
/// as it is, on 4 KiB pages.
pub fn reexec_with_huge_pages() -> HugePages {
    let ((mode, reexec), tunables) = decide_here();
    if !reexec {
        return mode;
    }
    let Ok(exe) = std::env::current_exe() else { return HugePages::Off };
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    use std::os::unix::process::CommandExt;
    // `exec` returns only on failure.
    let _ = std::process::Command::new(exe)
        .args(args)
        .env("GLIBC_TUNABLES", with_tunable(tunables.as_deref()))
        .exec();
    HugePages::Off
}

/// The mode this process runs with, without executing anything (the node's `up` line, `bench
/// sas`): a process that should have re-executed and did not runs on 4 KiB pages.
pub fn current() -> HugePages {
    match decide_here().0 {
        (_, true) => HugePages::Off,
        (m, false) => m,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_bracketed_mode() {
        assert_eq!(thp_mode("always [madvise] never\n"), Some("madvise"));
        assert_eq!(thp_mode("[always] madvise never"), Some("always"));
        assert_eq!(thp_mode("always madvise [never]"), Some("never"));
        assert_eq!(thp_mode("garbage"), None);
        assert_eq!(thp_mode("[unterminated"), None);
    }

    #[test]
    fn re_executes_only_when_madvise_and_the_tunable_is_missing() {
        assert_eq!(decide(Some("madvise"), None, None), (HugePages::Heap, true));
        assert_eq!(
            decide(Some("madvise"), Some("glibc.malloc.check=0"), None),
            (HugePages::Heap, true)
        );
        // Already set (this is the re-executed process): no loop.
        let set = "glibc.malloc.check=0:glibc.malloc.hugetlb=1";
        assert_eq!(decide(Some("madvise"), Some(set), None), (HugePages::Heap, false));
        assert_eq!(decide(Some("always"), None, None), (HugePages::Always, false));
        assert_eq!(decide(Some("never"), None, None), (HugePages::Off, false));
        assert_eq!(decide(None, None, None), (HugePages::Off, false));
        assert_eq!(decide(Some("madvise"), None, Some("OFF")), (HugePages::Off, false));
        // An operator's own choice of the tunable stands.
        assert_eq!(
            decide(Some("madvise"), Some("glibc.malloc.hugetlb=0"), None),
            (HugePages::Off, false)
        );
    }

    #[test]
    fn adds_the_tunable_to_what_was_there() {
        let ours = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864";
        assert_eq!(with_tunable(None), ours);
        assert_eq!(with_tunable(Some("")), ours);
        assert_eq!(
            with_tunable(Some("glibc.malloc.check=0")),
            format!("glibc.malloc.check=0:{ours}")
        );
        // An operator's own top_pad stands.
        assert_eq!(
            with_tunable(Some("glibc.malloc.top_pad=1048576")),
            "glibc.malloc.top_pad=1048576:glibc.malloc.hugetlb=1"
        );
    }
}
