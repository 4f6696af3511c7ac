//! Transparent huge pages for the data path's memory.
//!
//! With thousands of SAs, every packet meets a cold SA, its key schedule and an index slot,
//! each on its own 4 KiB page, so the lookups miss the TLB as well as the caches. In a virtual
//! machine each TLB miss is a two-level page walk. `hipsec bench sas --sas 1,10000` on the
//! 2-vCPU EPYC VM, six pairs alternating on one binary:
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
//!
//! glibc 2.35 and 2.36 (Debian 12's) decide whether the kernel's mode is `madvise` by `strcmp`
//! on the bytes read from `/sys/kernel/mm/transparent_hugepage/enabled` without terminating
//! them (`__malloc_thp_mode`; later releases add `str[s] = '\0'`), so with the tunable set they
//! mark their memory only when the stack byte after those 23 bytes happens to be zero. Seen
//! here: `hipsec bench` always got huge pages, `hipsec run` in two of nine starts
//! (`strace -e madvise`: no `MADV_HUGEPAGE` at all in the others, and `AnonHugePages: 0 kB`
//! in a node holding 10,000 SAs). So the executed process checks that glibc did mark its
//! heap (the `hg` flag of `[heap]` in `/proc/self/smaps`) and, if not, executes itself again,
//! up to [`MAX_TRIES`] times: the stack's contents change from one execution to the next. What
//! the process reports ([`current`]) is what it checked, never what it asked for.

use std::ffi::OsString;

/// The environment variable that turns this off (`HIPSEC_HUGE_PAGES=off`).
pub const ENV_SWITCH: &str = "HIPSEC_HUGE_PAGES";

/// Set by [`reexec_with_huge_pages`] on the program it executes: `PID:N`, the N-th execution
/// of process PID (a child that inherits it has another pid, and starts its own count).
const TRY_ENV: &str = "HIPSEC_HUGE_PAGES_TRY";

/// Executions at most, before the process gives up and runs on 4 KiB pages (see the module
/// documentation: each execution has a fresh chance).
pub const MAX_TRIES: u32 = 8;

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
/// again with the tunable set when it is missing, and again while glibc did not mark the heap
/// (see the module documentation); returns the mode the process runs with ([`current`]).
/// Returns `Off` if an exec failed: the program then goes on as it is, on 4 KiB pages.
pub fn reexec_with_huge_pages() -> HugePages {
    let ((mode, reexec), tunables) = decide_here();
    let pid = std::process::id();
    let tries = std::env::var(TRY_ENV).ok().and_then(|v| tries_of(&v, pid));
    let again = !reexec
        && mode == HugePages::Heap
        && tries.is_some_and(|n| n < MAX_TRIES)
        && heap_advised_here() == Some(false);
    if !reexec && !again {
        return current();
    }
    let Ok(exe) = std::env::current_exe() else { return HugePages::Off };
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args).env(TRY_ENV, format!("{pid}:{}", tries.unwrap_or(0) + 1));
    if reexec {
        cmd.env("GLIBC_TUNABLES", with_tunable(tunables.as_deref()));
    }
    use std::os::unix::process::CommandExt;
    // `exec` returns only on failure.
    let _ = cmd.exec();
    HugePages::Off
}

/// Executions so far by this process, from `HIPSEC_HUGE_PAGES_TRY`: N of `PID:N` with our pid;
/// 0 with another's (a node that a `hipsec bench` or a test started inherits the tunable and
/// the marker, and checks its own heap as its parent did); `None` if malformed.
fn tries_of(value: &str, pid: u32) -> Option<u32> {
    let (p, n) = value.split_once(':')?;
    let (p, n) = (p.parse::<u32>().ok()?, n.parse().ok()?);
    Some(if p == pid { n } else { 0 })
}

/// Whether glibc marked the heap for huge pages: the `VmFlags` of the `[heap]` mapping in
/// `/proc/PID/smaps` text hold `hg` (`MADV_HUGEPAGE`). `None` without a `[heap]` mapping.
fn heap_advised(smaps: &str) -> Option<bool> {
    let mut lines = smaps.lines().skip_while(|l| !l.ends_with("[heap]"));
    lines.next()?;
    // The mapping's fields follow its header line, up to the next header; `VmFlags` is last.
    let flags = lines.find_map(|l| l.strip_prefix("VmFlags:"))?;
    Some(flags.split_whitespace().any(|f| f == "hg"))
}

/// [`heap_advised`] for this process, after one allocation (so that the heap exists: glibc
/// marks it when it first grows it).
fn heap_advised_here() -> Option<bool> {
    std::hint::black_box(vec![0u8; 64]);
    heap_advised(&std::fs::read_to_string("/proc/self/smaps").ok()?)
}

/// The mode this process runs with, without executing anything (the node's `up` line, `bench
/// sas`): `Heap` only if glibc did mark the heap (a process that should have re-executed and
/// did not, or whose glibc did not act on the tunable, runs on 4 KiB pages).
pub fn current() -> HugePages {
    match decide_here().0 {
        (_, true) => HugePages::Off,
        (HugePages::Heap, false) if heap_advised_here() != Some(true) => HugePages::Off,
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

    /// Two mappings as `/proc/self/smaps` shows them (abridged).
    fn smaps(heap_flags: &str) -> String {
        format!(
            "55e5c7f92000-55e5c8221000 r--p 00000000 fe:00 5312273 /usr/bin/hipsec\n\
             Size:               2620 kB\n\
             VmFlags: rd mr mw me hg sd\n\
             5605ae918000-5605b2d19000 rw-p 00000000 00:00 0                          [heap]\n\
             Size:              69636 kB\n\
             AnonHugePages:     0 kB\n\
             VmFlags: {heap_flags}\n\
             7f3254000000-7f3258000000 rw-p 00000000 00:00 0\n\
             VmFlags: rd wr mr mw me nr hg\n"
        )
    }

    /// The heap's own flags decide, not another mapping's `hg`.
    #[test]
    fn reads_the_heaps_huge_page_flag() {
        assert_eq!(heap_advised(&smaps("rd wr mr mw me ac hg sd")), Some(true));
        assert_eq!(heap_advised(&smaps("rd wr mr mw me ac sd")), Some(false));
        assert_eq!(heap_advised(&smaps("rd wr mr mw me ac high")), Some(false));
        assert_eq!(heap_advised("7f32-7f33 rw-p 0 00:00 0\nVmFlags: rd wr hg\n"), None);
    }

    /// A count is ours only under our pid: an inherited one starts a child's count afresh.
    #[test]
    fn counts_only_its_own_executions() {
        assert_eq!(tries_of("4242:3", 4242), Some(3));
        assert_eq!(tries_of("4242:3", 4243), Some(0));
        assert_eq!(tries_of("4242", 4242), None);
        assert_eq!(tries_of("x:1", 4242), None);
        assert_eq!(tries_of("4242:many", 4242), None);
    }
}
