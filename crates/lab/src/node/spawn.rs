//! Starting one `hipsec run` in a namespace, its output to a log file, its pid registered so an
//! interrupted lab still stops it (the node hooks, the IKE gateways and the HIP hosts share it),
//! and stopping them takes their guard tables with them.

use crate::error::LabError;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `exe run -c cfg` in namespace `ns`, stdout and stderr to `log` (created anew), and
/// returns the child and its pid (`ip netns exec` execs the program: the pid is the node's
/// own).
pub fn spawn_node(exe: &Path, ns: &str, cfg: &Path, log: &Path) -> Result<(Child, u32), LabError> {
    let err = std::fs::File::create(log)
        .map_err(|e| LabError::io(format!("creating {}", log.display()), e))?;
    let out = err.try_clone().map_err(|e| LabError::io("duplicating the log handle", e))?;
    let cmd = format!("ip netns exec {ns} {} run -c {}", exe.display(), cfg.display());
    let child = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(exe)
        .args(["run", "-c"])
        .arg(cfg)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|source| LabError::Spawn { cmd, source })?;
    let pid = child.id();
    crate::sys::registry().pids.insert(pid);
    if let Ok(mut m) = NAMESPACES.lock() {
        m.insert(pid, ns.to_string());
    }
    Ok((child, pid))
}

/// The namespace of each node [`spawn_node`] started, so that [`stop_nodes`] can take its guard
/// away with it.
static NAMESPACES: std::sync::Mutex<std::collections::BTreeMap<u32, String>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Removes the guard table (`node::guard`) the stopped nodes left in their namespaces. A
/// deployment keeps it on purpose (docs/restarts.md); the lab stops a mode's nodes for good,
/// and the next mode, or the plain path, must find the namespace as it was.
fn remove_guards(pids: &[u32]) {
    let namespaces: std::collections::BTreeSet<String> = match NAMESPACES.lock() {
        Ok(mut m) => pids.iter().filter_map(|p| m.remove(p)).collect(),
        Err(_) => return,
    };
    for ns in namespaces {
        let _ = Command::new("ip")
            .args(["netns", "exec", &ns, "nft", "delete", "table", "inet", node::guard::TABLE])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// How long a node has to stop after SIGTERM (a clean stop removes its TUN device) before
/// SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// Stops nodes: SIGTERM to all first, then waits for each up to [`STOP_GRACE`] in all, then
/// SIGKILL; their pids leave the registry.
pub fn stop_nodes<'a>(nodes: impl IntoIterator<Item = (u32, &'a mut Child)>) {
    let nodes: Vec<(u32, &mut Child)> = nodes.into_iter().collect();
    for (pid, _) in &nodes {
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let deadline = Instant::now() + STOP_GRACE;
    let pids: Vec<u32> = nodes.iter().map(|(pid, _)| *pid).collect();
    for (pid, c) in nodes {
        while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = c.kill();
        let _ = c.wait();
        crate::sys::registry().pids.remove(&pid);
    }
    remove_guards(&pids);
}
