//! Which speed-ups the data path uses (`HIPSEC_NODE_TUNING`), each measurable on its own.

/// Which speed-ups the data path uses. All on by default (two workers from four cores up);
/// `HIPSEC_NODE_TUNING` (a comma list of `no-mmsg`, `no-gso`, `no-gro`, `no-offload`,
/// `no-buffers`, `sockbuf=BYTES`, `one-worker`, `two-workers`, `no-realtime`) changes them, for kernels that lack one and for
/// measuring each one's worth (`hipsec bench tunnel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// recvmmsg/sendmmsg on the UDP carrier.
    pub mmsg: bool,
    /// UDP GSO (UDP_SEGMENT) on send; needs `mmsg`.
    pub gso: bool,
    /// UDP GRO on receive; needs `mmsg`.
    pub gro: bool,
    /// TUN virtio-net header with TSO/checksum offloads and GRO on write.
    pub tun_offload: bool,
    /// Larger TUN transmit queue, and socket buffers of `socket_buffer` bytes set with
    /// SO_RCVBUFFORCE/SO_SNDBUFFORCE (not capped by `net.core.[rw]mem_max`).
    pub big_buffers: bool,
    /// Socket buffer bytes with `big_buffers` (word `sockbuf=BYTES`).
    pub socket_buffer: usize,
    /// Worker threads: 1 (both halves) or 2 (one per half).
    pub workers: usize,
    /// Data-path threads as `[data-path] scheduling` says (word `no-realtime`: always
    /// SCHED_OTHER, to measure what real-time scheduling is worth).
    pub realtime: bool,
}

/// Cores from which a node runs two workers by default. On two cores (`hipsec bench tunnel`:
/// both nodes, iperf3 and kernel TCP on one machine; medians of 3, three batches) two workers
/// per node moved no more data (4.0 vs 4.2, 5.0 vs 4.8 Gbit/s) for more CPU (2.3 vs 1.8 and
/// 2.3 vs 2.1 µs/KB): the second thread wakes up for the few packets of the other direction.
const TWO_WORKERS_FROM_CORES: usize = 4;

/// Socket buffers of the carrier (forced, so also where `net.core.[rw]mem_max` is smaller).
/// Measured on two cores (`hipsec bench tunnel`, medians of 3 alternating runs): 16 MiB did no
/// better than 4 MiB (4.54 vs 4.56 Gbit/s); with TUN offloads the queues stay short.
pub const DEFAULT_SOCKET_BUFFER: usize = 4 << 20;

impl Default for Tuning {
    fn default() -> Tuning {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Tuning {
            mmsg: true,
            gso: true,
            gro: true,
            tun_offload: true,
            big_buffers: true,
            socket_buffer: DEFAULT_SOCKET_BUFFER,
            workers: if cores >= TWO_WORKERS_FROM_CORES { 2 } else { 1 },
            realtime: true,
        }
    }
}

impl Tuning {
    /// From a comma list of `no-…`/`one-worker` words; unknown words are returned as errors.
    pub fn parse(s: &str) -> Result<Tuning, String> {
        let mut t = Tuning::default();
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "no-mmsg" => t.mmsg = false,
                "no-gso" => t.gso = false,
                "no-gro" => t.gro = false,
                "no-offload" => t.tun_offload = false,
                "no-buffers" => t.big_buffers = false,
                "one-worker" => t.workers = 1,
                "two-workers" => t.workers = 2,
                "no-realtime" => t.realtime = false,
                w if w.starts_with("sockbuf=") => {
                    t.socket_buffer = w["sockbuf=".len()..]
                        .parse()
                        .ok()
                        .filter(|&b| (4096..=1 << 30).contains(&b))
                        .ok_or_else(|| format!("HIPSEC_NODE_TUNING: {w:?}: want 4096..=2^30"))?;
                }
                other => return Err(format!("HIPSEC_NODE_TUNING: unknown word {other:?}")),
            }
        }
        if !t.mmsg {
            (t.gso, t.gro) = (false, false);
        }
        Ok(t)
    }

    /// From the environment (`HIPSEC_NODE_TUNING`), defaults if unset.
    pub fn from_env() -> Result<Tuning, String> {
        Tuning::parse(&std::env::var("HIPSEC_NODE_TUNING").unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_words() {
        let t = Tuning::parse("no-gso, one-worker").unwrap_or_default();
        assert!(t.mmsg && !t.gso && t.gro && t.tun_offload && t.workers == 1);
        let t = Tuning::parse("no-mmsg,two-workers,sockbuf=65536").unwrap_or_default();
        assert!(!t.mmsg && !t.gso && !t.gro && t.workers == 2 && t.socket_buffer == 65536);
        assert!(Tuning::parse("sockbuf=12").is_err());
        assert!(Tuning::parse("no-such").is_err());
        assert_eq!(Tuning::parse("").ok(), Some(Tuning::default()));
    }
}
