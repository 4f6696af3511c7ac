//! tcpdump in a namespace, and the frames of what it wrote: the scenarios that time protocol
//! messages on the wire (rekey-bandwidth: IKE; hip-bex: HIP and ESP) share this, and each maps
//! the IP packets to its own messages.

use crate::error::LabError;
use crate::topology::spawn_registered;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running tcpdump; `stop` ends it with SIGTERM so that the file is complete (dropping it
/// kills it).
#[derive(Debug)]
pub struct Tcpdump {
    child: Option<Child>,
    pid: u32,
    /// The pcap file it writes.
    pub file: PathBuf,
}

impl Drop for Tcpdump {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        crate::sys::registry().pids.remove(&self.pid);
    }
}

impl Tcpdump {
    /// Starts tcpdump on `dev` in namespace `ns`, keeping `snaplen` bytes of each packet that
    /// matches `filter`, and waits until it listens. `immediate`: hand each packet to the file
    /// at once (a run of milliseconds would otherwise lose what sits in the kernel's ring).
    pub fn start(
        ns: &str,
        dev: &str,
        snaplen: u32,
        immediate: bool,
        filter: &str,
        file: &Path,
    ) -> Result<Tcpdump, LabError> {
        let f = file.to_string_lossy().into_owned();
        let snap = snaplen.to_string();
        let mut args = vec!["netns", "exec", ns, "tcpdump", "-i", dev, "-n", "-s", &snap, "-U"];
        if immediate {
            args.push("--immediate-mode");
        }
        args.extend(["-w", &f]);
        let mut c = Command::new("ip");
        c.args(&args).arg(filter);
        let cmd = format!("ip {} '{filter}'", args.join(" "));
        let (mut child, pid) = spawn_registered(c, &cmd)?;
        // tcpdump says "listening on DEV" on stderr once its filter is in place.
        let err = child.stderr.take();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let Some(err) = err else { return };
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                if l.contains("listening on") {
                    let _ = tx.send(Ok(()));
                } else if l.contains("tcpdump:") {
                    let _ = tx.send(Err(l));
                }
            }
        });
        let t = Tcpdump { child: Some(child), pid, file: file.to_path_buf() };
        match rx.recv_timeout(Duration::from_secs(5)) {
            Ok(Ok(())) => Ok(t),
            Ok(Err(l)) => Err(LabError::Command { cmd, status: "failed".into(), stderr: l }),
            Err(_) => Err(LabError::Command {
                cmd,
                status: "not listening".into(),
                stderr: "tcpdump did not start within 5 s".into(),
            }),
        }
    }

    /// Ends the capture (SIGTERM, at most 3 s) and returns the file's bytes.
    pub fn stop(mut self) -> Result<Vec<u8>, LabError> {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &self.pid.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let t0 = Instant::now();
            while matches!(c.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(3) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        std::fs::read(&self.file)
            .map_err(|e| LabError::io(format!("reading {}", self.file.display()), e))
    }
}

fn u32_at(b: &[u8], at: usize, le: bool) -> Option<u32> {
    let s: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if le { u32::from_le_bytes(s) } else { u32::from_be_bytes(s) })
}

/// The frames of a pcap file (Ethernet, Linux cooked v1 or v2 links): each one's timestamp in
/// microseconds and its IP packet (the link header removed). A truncated last record ends the
/// list; a bad header is an error naming what is wrong.
pub fn ip_frames(b: &[u8]) -> Result<Vec<(f64, &[u8])>, LabError> {
    let bad = |why: &str| LabError::parse("tcpdump capture (pcap)", why.to_string());
    let magic = u32_at(b, 0, true).ok_or_else(|| bad("shorter than its header"))?;
    let (le, nanos) = match magic {
        0xa1b2_c3d4 => (true, false),
        0xa1b2_3c4d => (true, true),
        0xd4c3_b2a1 => (false, false),
        0x4d3c_b2a1 => (false, true),
        m => return Err(bad(&format!("magic {m:#010x}"))),
    };
    let l2 = match u32_at(b, 20, le).ok_or_else(|| bad("shorter than its header"))? {
        1 => 14,
        113 => 16,
        276 => 20,
        l => return Err(bad(&format!("link type {l}"))),
    };
    let mut out = Vec::new();
    let mut at = 24;
    while let (Some(sec), Some(frac), Some(incl)) =
        (u32_at(b, at, le), u32_at(b, at + 4, le), u32_at(b, at + 8, le))
    {
        let start = at + 16;
        let Some(pkt) = b.get(start..start + incl as usize) else { break };
        at = start + incl as usize;
        let t_us = f64::from(sec) * 1e6 + f64::from(frac) / if nanos { 1e3 } else { 1.0 };
        out.push((t_us, pkt.get(l2..).unwrap_or_default()));
    }
    Ok(out)
}
