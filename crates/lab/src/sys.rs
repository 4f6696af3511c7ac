//! Small helpers around the OS: running `ip`/`tc`, the privilege check, and a registry of the
//! processes and namespaces the lab started, which the Ctrl-C handler (signal-hook, no unsafe here)
//! kills and deletes. A leaf: it imports nothing of the lab but the error type.

use crate::error::LabError;
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Every namespace the lab creates starts with this; the teardown deletes no other.
pub const PREFIX: &str = "hlab-";

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// True once SIGINT/SIGTERM arrived (the signal thread is tearing down and will exit with 130).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// If a signal arrived, an error on the main thread is a consequence of the teardown: report it
/// as `Interrupted` and give the signal thread time to finish and exit the process with 130.
pub(crate) fn map_interrupted(e: LabError) -> LabError {
    if interrupted() {
        std::thread::sleep(std::time::Duration::from_secs(5));
        return LabError::Interrupted;
    }
    e
}

/// Runs a command to completion; returns its stdout, or an error carrying its stderr.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<String, LabError> {
    let cmd = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| LabError::Spawn { cmd: cmd.clone(), source })?;
    if !out.status.success() {
        return Err(LabError::Command {
            cmd,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `ip netns exec NS program args...` to completion.
pub(crate) fn run_in(ns: &str, program: &str, args: &[&str]) -> Result<String, LabError> {
    // `ip netns exec` would only say "exec of ping failed" after the namespace is built; a
    // fresh Debian has no ping (iputils-ping), which the hip-bex and mip6-binding scenarios use.
    if !program.contains('/') && !on_path(program) {
        let package = match program {
            "ping" => "iputils-ping",
            "nft" => "nftables",
            other => other,
        };
        return Err(LabError::Spawn {
            cmd: format!("ip netns exec {ns} {program}"),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{program} is not on PATH (apt-get install {package})"),
            ),
        });
    }
    let mut full = vec!["netns", "exec", ns, program];
    full.extend_from_slice(args);
    run("ip", &full)
}

/// Checks for CAP_SYS_ADMIN (21) and CAP_NET_ADMIN (12) in the effective set.
pub fn check_privileges() -> Result<(), LabError> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| LabError::io("reading /proc/self/status", e))?;
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .ok_or_else(|| LabError::parse("CapEff in /proc/self/status", "missing or not hex"))?;
    let need = (1u64 << 21) | (1u64 << 12);
    if cap_eff & need != need {
        return Err(LabError::NotRoot {
            detail: format!("effective capabilities are {cap_eff:#x}"),
        });
    }
    Ok(())
}

/// True when this process may build topologies (used by tests to print "SKIPPED: needs root").
pub fn have_privileges() -> bool {
    check_privileges().is_ok()
}

/// Namespaces and child processes alive right now, for the signal handler.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) namespaces: BTreeSet<String>,
    pub(crate) pids: BTreeSet<u32>,
}

static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();

pub(crate) fn registry() -> MutexGuard<'static, Registry> {
    let m = REGISTRY.get_or_init(|| Mutex::new(Registry::default()));
    // A panic while holding the lock leaves the data consistent enough (sets of names).
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Sends SIGKILL to one process we started, by its id (via kill(1): no unsafe needed).
pub(crate) fn kill_pid(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Installs (once) a SIGINT/SIGTERM handler thread that kills registered processes, deletes
/// registered namespaces and exits with 130.
pub(crate) fn install_signal_teardown() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
            eprintln!("lab: warning: cannot install the Ctrl-C handler; teardown on drop only");
            return;
        };
        let spawned = std::thread::Builder::new().name("lab-signals".into()).spawn(move || {
            if let Some(sig) = signals.forever().next() {
                INTERRUPTED.store(true, Ordering::SeqCst);
                eprintln!("\nlab: signal {sig}: tearing down namespaces and processes");
                teardown_all();
                std::process::exit(130);
            }
        });
        if spawned.is_err() {
            eprintln!("lab: warning: cannot start the signal thread; teardown on drop only");
        }
    });
}

/// Kills every registered process and deletes every registered namespace.
pub(crate) fn teardown_all() {
    let (pids, namespaces) = {
        let mut r = registry();
        (std::mem::take(&mut r.pids), std::mem::take(&mut r.namespaces))
    };
    for pid in pids {
        kill_pid(pid);
    }
    for ns in namespaces {
        delete_namespace(&ns);
    }
}

/// Kills the processes inside `ns` and deletes it; errors are ignored (best effort teardown).
pub(crate) fn delete_namespace(ns: &str) {
    if !ns.starts_with(PREFIX) {
        return; // never touch namespaces that are not the lab's
    }
    if let Ok(pids) = run("ip", &["netns", "pids", ns]) {
        for pid in pids.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
            kill_pid(pid);
        }
    }
    let _ = run("ip", &["netns", "del", ns]);
}

/// True if `program` names an executable file in a directory of `$PATH`.
fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program missing from PATH is refused before any namespace is touched, naming the
    /// package that brings it; one on PATH passes the check.
    #[test]
    fn a_missing_program_names_its_package() {
        assert!(on_path("sh"));
        assert!(!on_path("hipsec-no-such-program"));
        let e = run_in("hipsec-no-such-ns", "hipsec-no-such-program", &[]).map(|_| ());
        let msg = e.map_err(|e| e.to_string()).err().unwrap_or_default();
        assert!(msg.contains("not on PATH (apt-get install hipsec-no-such-program)"), "{msg}");
    }
}
