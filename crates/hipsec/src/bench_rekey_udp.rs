//! The UDP stream of `hipsec bench rekey`: a fixed rate of numbered datagrams from A to B
//! through the tunnel, counted at both ends: the sender's refusals and give-ups, and the
//! receiver's distinct datagrams and its socket's drops (SO_RXQ_OVFL, socket(7); and the
//! socket's `drops` in /proc/net/udp).

use crate::bench_net::Topo;
use crate::bench_rekey_loss::StreamCounts;
use std::net::UdpSocket;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the sender retries one datagram that sendto refuses before it gives it up.
const SEND_PATIENCE: Duration = Duration::from_secs(1);

/// What the receiving socket got: distinct sequence numbers, and the kernel's count of the
/// datagrams its buffer dropped (SO_RXQ_OVFL, as the last datagram carried it).
fn receive(s: &UdpSocket, total: u64) -> (std::collections::HashSet<u64>, Option<u64>) {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, setsockopt, sockopt};
    use std::os::fd::AsRawFd;
    let ovfl = setsockopt(s, sockopt::RxqOvfl, &1).is_ok();
    let mut seen = std::collections::HashSet::with_capacity(total as usize);
    let mut drops = None;
    let mut b = [0u8; 64];
    let mut cmsg = nix::cmsg_space!(u32);
    loop {
        let mut iov = [std::io::IoSliceMut::new(&mut b)];
        let Ok(m) = recvmsg::<()>(s.as_raw_fd(), &mut iov, Some(&mut cmsg), MsgFlags::empty())
        else {
            break; // the read timeout: the stream is over
        };
        if let Ok(cmsgs) = m.cmsgs() {
            for c in cmsgs {
                if let ControlMessageOwned::RxqOvfl(n) = c {
                    drops = Some(u64::from(n));
                }
            }
        }
        let n = m.bytes;
        if n >= 8 {
            seen.insert(u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
        }
    }
    // Enabled and nothing dropped: the kernel attaches no count until the first drop. Drops
    // after the last datagram received show only in /proc/net/udp's count for the socket.
    let cmsg = if ovfl { Some(drops.unwrap_or(0)) } else { None };
    let proc = s.local_addr().ok().and_then(proc_udp_drops);
    (seen, cmsg.max(proc))
}

/// The `drops` column of /proc/net/udp for the IPv4 socket bound to `local` (in the namespace
/// of the calling thread).
fn proc_udp_drops(local: std::net::SocketAddr) -> Option<u64> {
    let std::net::SocketAddr::V4(v4) = local else { return None };
    // The kernel prints the address as the native-endian u32 of its network-order bytes.
    let want = format!("{:08X}:{:04X}", u32::from_ne_bytes(v4.ip().octets()), v4.port());
    let text = std::fs::read_to_string("/proc/net/udp").ok()?;
    text.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(1) == Some(&want.as_str())).then(|| f.last()?.parse().ok())?
    })
}

/// A fixed-rate UDP stream from A to B through the tunnel: what was sent and received.
pub(crate) fn udp_stream(topo: &Topo, seconds: u32, rate: u32) -> Result<StreamCounts, String> {
    let (ns_a, ns_b) = (topo.ns[0].clone(), topo.ns[1].clone());
    let total = u64::from(seconds) * u64::from(rate);
    let ready = Arc::new(Mutex::new(false));
    let r2 = Arc::clone(&ready);
    let sink = std::thread::spawn(
        move || -> Result<(std::collections::HashSet<u64>, Option<u64>), String> {
            node::netns::enter(&ns_b).map_err(|e| e.to_string())?;
            let s = UdpSocket::bind("10.99.0.2:7010").map_err(|e| e.to_string())?;
            s.set_read_timeout(Some(Duration::from_millis(1500))).map_err(|e| e.to_string())?;
            *r2.lock().map_err(|_| "lock")? = true;
            Ok(receive(&s, total))
        },
    );
    while !*ready.lock().map_err(|_| "lock")? {
        std::thread::sleep(Duration::from_millis(5));
    }
    let source = std::thread::spawn(move || -> Result<(u64, u64), String> {
        node::netns::enter(&ns_a).map_err(|e| e.to_string())?;
        let s = UdpSocket::bind("10.99.0.1:0").map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let gap_ns = 1_000_000_000 / u64::from(rate.max(1));
        let (mut given_up, mut retries) = (0u64, 0u64);
        for i in 0..total {
            let due = t0 + Duration::from_nanos(i * gap_ns);
            if let Some(d) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
            let mut p = [0u8; 64];
            p[..8].copy_from_slice(&i.to_be_bytes());
            // A full socket buffer is the sender's, not the tunnel's: retry for a while,
            // counting each refusal; a datagram never taken whole is the sender's loss.
            let first = Instant::now();
            loop {
                match s.send_to(&p, "10.99.0.2:7010") {
                    Ok(n) if n == p.len() => break,
                    Ok(_) => {
                        given_up += 1;
                        break;
                    }
                    Err(_) if first.elapsed() < SEND_PATIENCE => {
                        retries += 1;
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    Err(_) => {
                        given_up += 1;
                        break;
                    }
                }
            }
        }
        Ok((given_up, retries))
    });
    let (sender_lost, send_retries) = source.join().map_err(|_| "UDP source panicked")??;
    let (seen, socket_drops) = sink.join().map_err(|_| "UDP sink panicked")??;
    let received = (0..total).filter(|i| seen.contains(i)).count() as u64;
    Ok(StreamCounts { sent: total, received, sender_lost, send_retries, socket_drops })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receiver that cannot keep up: the kernel's count of its drops comes back, and the
    /// datagrams it got plus the drops are all that were sent.
    #[test]
    fn the_receiving_sockets_drops_are_counted() {
        use nix::sys::socket::{setsockopt, sockopt};
        let (Ok(rx), Ok(tx)) = (UdpSocket::bind("127.0.0.1:0"), UdpSocket::bind("127.0.0.1:0"))
        else {
            println!("SKIPPED: no loopback UDP");
            return;
        };
        let to = rx.local_addr().unwrap_or_else(|_| unreachable!());
        assert_eq!(proc_udp_drops(to), Some(0));
        let _ = setsockopt(&rx, sockopt::RcvBuf, &2048);
        let _ = rx.set_read_timeout(Some(Duration::from_millis(200)));
        let n = 200u64;
        for i in 0..n {
            let mut p = [0u8; 64];
            p[..8].copy_from_slice(&i.to_be_bytes());
            let _ = tx.send_to(&p, to);
        }
        let (seen, drops) = receive(&rx, n);
        let drops = drops.unwrap_or(0);
        assert!(drops > 0, "a 2 KB buffer held {} of {n}", seen.len());
        assert_eq!(seen.len() as u64 + drops, n);
    }
}
