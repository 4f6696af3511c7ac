//! OS helpers for tools that drive nodes inside network namespaces (the tunnel benchmark):
//! entering a namespace on the calling thread, ICMP echo round trips (RFC 792), process and
//! thread CPU time from /proc (proc(5): utime + stime), and a stop flag for SIGINT/SIGTERM.

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Moves the calling thread into the named network namespace (`/var/run/netns/NAME`).
/// Sockets made afterwards on this thread belong to that namespace.
#[allow(unsafe_code)]
pub fn enter(ns: &str) -> io::Result<()> {
    let f = File::open(format!("/var/run/netns/{ns}"))?;
    // SAFETY: setns(2) takes a descriptor we own and keep open for the call and a constant flag;
    // it changes only this thread's network namespace and touches no memory of ours.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn icmp_checksum(p: &[u8]) -> u16 {
    let mut s: u32 =
        p.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Sends `count` ICMP echo requests to `dst`, `interval` apart, and returns the round-trip time
/// of each one answered within a second (lost ones are left out). Needs CAP_NET_RAW.
pub fn ping(dst: Ipv4Addr, count: u16, interval: Duration) -> io::Result<Vec<Duration>> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))?;
    s.set_read_timeout(Some(Duration::from_secs(1)))?;
    let s = UdpSocket::from(s);
    let id = (std::process::id() as u16).to_be_bytes();
    let mut rtts = Vec::with_capacity(count as usize);
    let mut buf = [0u8; 1500];
    for seq in 1..=count {
        let mut req = [8u8, 0, 0, 0, id[0], id[1], 0, 0, b'h', b'i', b'p', b's', 0, 0, 0, 0];
        req[6..8].copy_from_slice(&seq.to_be_bytes());
        let c = icmp_checksum(&req);
        req[2..4].copy_from_slice(&c.to_be_bytes());
        let t0 = Instant::now();
        s.send_to(&req, SocketAddr::from((dst, 0)))?;
        while let Ok((n, _)) = s.recv_from(&mut buf) {
            // Raw IPv4 sockets deliver the IP header; the ICMP message follows it.
            let ihl = (buf[0] & 0x0f) as usize * 4;
            if n >= ihl + 8
                && buf[ihl] == 0
                && buf[ihl + 4..ihl + 6] == id
                && buf[ihl + 6..ihl + 8] == seq.to_be_bytes()
            {
                rtts.push(t0.elapsed());
                break;
            }
            if t0.elapsed() > Duration::from_secs(1) {
                break;
            }
        }
        std::thread::sleep(interval);
    }
    Ok(rtts)
}

#[allow(unsafe_code)]
fn clock_ticks() -> f64 {
    // SAFETY: sysconf(3) reads a constant system parameter; no pointers are involved.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// utime + stime in seconds from the text of a /proc/.../stat file; the command name (field 2)
/// may hold spaces and parentheses, so fields are counted after its last ')'.
fn stat_cpu(text: &str) -> Option<(String, f64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // After the name: state(3) ... utime(14) stime(15), i.e. indices 11 and 12 of `rest`.
    let ut: f64 = rest.get(11)?.parse().ok()?;
    let st: f64 = rest.get(12)?.parse().ok()?;
    Some((name, (ut + st) / clock_ticks()))
}

/// CPU seconds (user + system) a process has used so far, all its threads included.
pub fn cpu_seconds(pid: u32) -> io::Result<f64> {
    let t = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    stat_cpu(&t).map(|(_, s)| s).ok_or_else(|| io::Error::other("unparsable /proc stat"))
}

/// CPU seconds (user + system) the calling thread has used so far.
pub fn thread_self_cpu_seconds() -> io::Result<f64> {
    let t = std::fs::read_to_string("/proc/thread-self/stat")?;
    stat_cpu(&t).map(|(_, s)| s).ok_or_else(|| io::Error::other("unparsable /proc stat"))
}

/// CPU seconds of each thread of a process, by thread id and name.
pub fn thread_cpu_seconds(pid: u32) -> io::Result<Vec<(u32, String, f64)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let e = e?;
        let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(t) = std::fs::read_to_string(e.path().join("stat")) {
            if let Some((name, s)) = stat_cpu(&t) {
                out.push((tid, name, s));
            }
        }
    }
    out.sort_by_key(|x| x.0);
    Ok(out)
}

/// Times the threads of a process have blocked and been woken again so far (the sum of their
/// `voluntary_ctxt_switches`): a node's wake-ups, each one a batch of work or an idle poll.
pub fn wakeups(pid: u32) -> io::Result<u64> {
    let mut n = 0;
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Ok(status) = std::fs::read_to_string(e?.path().join("status")) else { continue };
        n += status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    Ok(n)
}

/// A flag set by SIGINT or SIGTERM (the process then keeps running, so it can clean up).
pub fn stop_flag() -> io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    Ok(stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_odd_names() {
        let t = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 3 0 1 2 3";
        let (name, s) = stat_cpu(t).unwrap_or_default();
        assert_eq!(name, "a) b (c)");
        assert!((s - 400.0 / clock_ticks()).abs() < 1e-9, "{s}");
        assert!(stat_cpu("garbage").is_none());
    }

    #[test]
    fn own_cpu_time_is_readable() {
        assert!(cpu_seconds(std::process::id()).is_ok_and(|s| s >= 0.0));
        assert!(thread_cpu_seconds(std::process::id()).is_ok_and(|v| !v.is_empty()));
    }
}
