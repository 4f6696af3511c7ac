//! The command line of `hipsec bench tunnel`, and the carriers it measures.

/// Arguments of `hipsec bench tunnel`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchTunnelArgs {
    /// ESP suite: aes128gcm, aes256gcm, chacha20poly1305 or aes128cbc-sha256.
    #[arg(long, default_value = "aes128gcm")]
    pub suite: String,
    /// Seconds of iperf3 TCP per measurement (tunnel and plain each).
    #[arg(long, default_value_t = 10)]
    pub seconds: u32,
    /// TCP congestion control of both iperf3 transfers (iperf3 -C): "cubic" (the Linux
    /// default, CONFIG_DEFAULT_TCP_CONG), "bbr", "reno", ... or "system" for whatever
    /// net.ipv4.tcp_congestion_control says. Pinned by default so that runs on machines with
    /// different sysctls compare; the report names the one used.
    #[arg(long, default_value = "cubic")]
    pub congestion: String,
    /// Data-path lanes of each node (`[interface] queues`; one SA pair per lane): with more
    /// than one, use --parallel so that several flows can spread over the TUN queues.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub queues: u32,
    /// Rounds (each: plain, then tunnel); the table and the top-level JSON figures are the
    /// round with the median tunnel throughput, `rounds` lists them all.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub rounds: u32,
    /// Parallel TCP streams of each iperf3 transfer (iperf3 -P).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: u32,
    /// Carrier of the tunnel's ESP: "udp" (ESP in UDP port 4500, RFC 3948; sent in UDP GSO
    /// runs, received with recvmmsg and UDP GRO), "raw" (ESP straight over IP protocol 50,
    /// RFC 4303, the carrier of the ipsec-netperf lab and of Mobile IPv6 bindings: recvmmsg and
    /// sendmmsg batches, but every packet is its own trip through the kernel's IP stack, as no
    /// GSO or GRO exists for ESP on raw sockets) or "both": each round measures plain, then the
    /// UDP and the raw tunnel (the nodes restart between them, the order alternating; about
    /// 110 s with the defaults), and the report adds raw/udp (JSON: {"udp": report, "raw":
    /// report, "raw_to_udp": ..}). Raw needs --queues 1: every raw socket gets every ESP packet.
    /// For the raw carrier before batching, run with HIPSEC_NODE_TUNING=no-mmsg (one system
    /// call per packet). Example: hipsec bench tunnel --transport both --rounds 5
    #[arg(long, value_enum, default_value = "udp")]
    pub transport: TransportArg,
    /// TCP maximum segment size of the transfers (iperf3 -M, 88..=1400): smaller packets at
    /// the same byte rate, so the per-packet costs weigh more. Default: the path's.
    #[arg(long, value_parser = clap::value_parser!(u16).range(88..=1400))]
    pub mss: Option<u16>,
    /// Pace each transfer to this many Gbit/s in all (iperf3 -b, split over --parallel flows),
    /// plain and tunnel alike: the node at part load, where it wakes for fewer packets at a
    /// time and each packet takes a larger share of a system call. Default: as fast as TCP
    /// goes. Example: hipsec bench tunnel --bitrate 0.5 --json
    #[arg(long, value_name = "GBPS", value_parser = parse_gbps)]
    pub bitrate: Option<f64>,
    /// Give both nodes a `[filter]` of this many rules, none matching the tunnel's traffic
    /// (the filter-rules lab scenario's rule set). 0: no filter.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub filter_rules: u32,
    /// Who keys the tunnel: "manual" (one SA pair per lane from the config) or "ike" (the
    /// nodes run IKEv2 with a pre-shared key, one initiating at start, and the data path
    /// carries the CHILD SA it makes: its outbound SA on every lane with one sequence counter).
    /// IKE's ESP goes in UDP (`encap = true`).
    #[arg(long, value_enum, default_value = "manual")]
    pub keying: KeyingArg,
    /// Also measure the tunnel with this many lanes in the same run: each round runs plain,
    /// then the tunnel with --queues and with this many (the nodes restart between them, the
    /// order alternating), and the report adds the ratio between the two. Example: hipsec
    /// bench tunnel --keying ike --queues 1 --vs-queues 2 --parallel 2
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub vs_queues: Option<u32>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `--keying`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyingArg {
    /// SAs from the config.
    Manual,
    /// A CHILD SA made by IKEv2.
    Ike,
}

impl KeyingArg {
    pub(super) fn name(self) -> &'static str {
        match self {
            KeyingArg::Manual => "manual",
            KeyingArg::Ike => "ike",
        }
    }
}

/// `--transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TransportArg {
    /// ESP in UDP (RFC 3948).
    Udp,
    /// ESP over IP protocol 50 (raw sockets).
    Raw,
    /// Both, in the same run.
    Both,
}

/// A carrier measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Carrier {
    Udp,
    Raw,
}

impl Carrier {
    pub(super) fn name(self) -> &'static str {
        match self {
            Carrier::Udp => "udp",
            Carrier::Raw => "raw",
        }
    }
}

/// `--bitrate`: a positive rate in Gbit/s, at least 1 Mbit/s.
fn parse_gbps(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("`{s}` is not a number of Gbit/s: {e}"))?;
    if v.is_finite() && v >= 0.001 {
        Ok(v)
    } else {
        Err(format!("`{s}`: a rate of at least 0.001 Gbit/s (1 Mbit/s)"))
    }
}
