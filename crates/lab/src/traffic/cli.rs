//! Command line of the traffic helper (`hipsec-traffic`, or a hidden `hipsec` subcommand that
//! flattens `TrafficCli`): `server --listen ADDR...` and `client ... ` printing JSON on stdout.

use super::engine::{self, ClientParams};
use super::{Request, TestKind};
use std::net::SocketAddr;
use std::time::Duration;

/// `hipsec-traffic`'s arguments.
#[derive(Debug, clap::Parser)]
#[command(name = "hipsec-traffic", about = "netperf-style traffic helper of the hipsec lab")]
pub struct TrafficCli {
    #[command(subcommand)]
    pub cmd: TrafficCmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum TrafficCmd {
    /// Sink/echo tests on these control addresses until killed.
    Server {
        #[arg(long, required = true)]
        listen: Vec<SocketAddr>,
        /// Exit after one test.
        #[arg(long)]
        once: bool,
    },
    /// Run one test and print a JSON `ClientResult`.
    Client {
        #[arg(long)]
        server: SocketAddr,
        /// Send the data to this address of the server instead of the control address.
        #[arg(long)]
        data_ip: Option<std::net::IpAddr>,
        #[arg(long, value_enum)]
        test: TestKind,
        #[arg(long, default_value_t = 16384)]
        msg_size: usize,
        #[arg(long, default_value_t = 1)]
        resp_size: usize,
        #[arg(long, default_value_t = 500)]
        warmup_ms: u64,
        #[arg(long, default_value_t = 3000)]
        duration_ms: u64,
    },
    /// FTP-like sessions (seed 003): `--clients` clients each sending `--size` bytes per
    /// connection to a `sink`, again and again for `--duration-ms` (then `--drain-ms` for the
    /// last ones to finish); prints a JSON `SessionsResult`.
    Sessions {
        #[arg(long)]
        server: SocketAddr,
        #[arg(long, default_value_t = 10)]
        clients: u32,
        #[arg(long, default_value_t = 10_000_000)]
        size: u64,
        /// No session starts after this.
        #[arg(long, default_value_t = 10_000)]
        duration_ms: u64,
        /// Running sessions may finish within this after `--duration-ms`.
        #[arg(long, default_value_t = 0)]
        drain_ms: u64,
    },
    /// The sink of `sessions`: reads every connection to its end and answers with the byte
    /// count, until killed.
    Sink {
        #[arg(long)]
        listen: SocketAddr,
    },
    /// The Mobile IPv6 load generator (scenario mip6-binding): mobile nodes sending
    /// ESP-protected Binding Updates to the home agent; prints a JSON `mip6gen::GenResult`.
    Mip6(crate::mip6gen::GenParams),
    /// A paced UDP stream (scenario mip6-binding's move gap): `--count` datagrams of `--size`
    /// octets to `--to`, one every `--interval-us`, each with its sequence number and send time;
    /// prints a JSON `paced::SendResult`.
    PacedSend {
        #[arg(long)]
        to: SocketAddr,
        #[arg(long, default_value_t = 1000)]
        interval_us: u64,
        #[arg(long)]
        count: u64,
        #[arg(long, default_value_t = 64)]
        size: usize,
    },
    /// The receiver of `paced-send`: notes every datagram's arrival on `--listen` for
    /// `--duration-ms`; prints a JSON `paced::SinkResult`.
    PacedSink {
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long)]
        duration_ms: u64,
    },
    /// DV video over RTP (scenario dv-video): `--seconds` of the frame clock from the DV file
    /// `--file`, every `--every`-th frame sent to `--to`; prints a JSON `dv::DvSendResult`.
    DvSend {
        #[arg(long)]
        file: std::path::PathBuf,
        #[arg(long)]
        to: SocketAddr,
        #[arg(long, default_value_t = 1)]
        every: u32,
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        #[command(flatten)]
        format: DvFormatArgs,
    },
    /// The receiver of `dv-send`: reassembles whole frames for `--seconds` into the DV file
    /// `--out`; prints a JSON `dv::DvRecvResult`.
    DvRecv {
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long)]
        seconds: f64,
        #[arg(long)]
        out: std::path::PathBuf,
        #[command(flatten)]
        format: DvFormatArgs,
    },
    /// Waits until `--server` answers a TCP connection attempt (accepted or refused: either is a
    /// round trip, e.g. through a tunnel), trying `--tries` times `--timeout-ms` each.
    Probe {
        #[arg(long)]
        server: SocketAddr,
        #[arg(long, default_value_t = 20)]
        tries: u32,
        #[arg(long, default_value_t = 250)]
        timeout_ms: u64,
    },
}

/// How the DV stream is cut (both ends must agree).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct DvFormatArgs {
    /// Octets of a DV frame (144000: 625/50 PAL).
    #[arg(long, default_value_t = super::dv::PAL_FRAME)]
    pub frame_bytes: usize,
    #[arg(long, default_value_t = 25)]
    pub fps: u32,
    /// 80-octet DIF blocks per RTP packet.
    #[arg(long, default_value_t = 15)]
    pub blocks_per_packet: usize,
}

impl From<DvFormatArgs> for super::dv::DvFormat {
    fn from(a: DvFormatArgs) -> Self {
        super::dv::DvFormat {
            frame_bytes: a.frame_bytes,
            fps: a.fps,
            blocks_per_packet: a.blocks_per_packet,
        }
    }
}

fn json<T: serde::Serialize>(v: &T, what: &str) -> Result<String, crate::error::LabError> {
    serde_json::to_string(v).map_err(|e| crate::error::LabError::parse(what, e.to_string()))
}

/// Runs the helper; returns the process exit code.
pub fn main_with(cli: TrafficCli) -> i32 {
    let res = match cli.cmd {
        TrafficCmd::Server { listen, once } => engine::serve(&listen, once).map(|()| String::new()),
        TrafficCmd::Client {
            server,
            data_ip,
            test,
            msg_size,
            resp_size,
            warmup_ms,
            duration_ms,
        } => {
            let p = ClientParams {
                server,
                data_ip,
                req: Request { test, msg_size, resp_size },
                warmup: Duration::from_millis(warmup_ms),
                duration: Duration::from_millis(duration_ms.max(1)),
            };
            engine::run_client(&p).and_then(|r| {
                serde_json::to_string(&r)
                    .map_err(|e| crate::error::LabError::parse("client result", e.to_string()))
            })
        }
        TrafficCmd::Sessions { server, clients, size, duration_ms, drain_ms } => {
            let p = super::sessions::SessionsParams {
                server,
                clients,
                size,
                duration: Duration::from_millis(duration_ms.max(1)),
                drain: Duration::from_millis(drain_ms),
            };
            super::sessions::run(&p).and_then(|r| {
                serde_json::to_string(&r)
                    .map_err(|e| crate::error::LabError::parse("sessions result", e.to_string()))
            })
        }
        TrafficCmd::Sink { listen } => super::sessions::sink(listen).map(|()| String::new()),
        TrafficCmd::Mip6(p) if p.print_config.is_some() => {
            let dev = p.print_config.as_deref().unwrap_or_default();
            Ok(crate::mip6gen::nodes::home_agent_toml(dev, p.nodes, p.suite, p.nodes as usize))
        }
        TrafficCmd::Mip6(p) => crate::mip6gen::run::run(&p)
            .map_err(|e| crate::error::LabError::Traffic { test: "mip6".into(), reason: e })
            .and_then(|r| {
                serde_json::to_string(&r)
                    .map_err(|e| crate::error::LabError::parse("mip6 result", e.to_string()))
            }),
        TrafficCmd::PacedSend { to, interval_us, count, size } => {
            super::paced::send(to, Duration::from_micros(interval_us), count, size)
                .and_then(|r| json(&r, "paced-send result"))
        }
        TrafficCmd::PacedSink { listen, duration_ms } => {
            super::paced::sink(listen, Duration::from_millis(duration_ms))
                .and_then(|r| json(&r, "paced-sink result"))
        }
        TrafficCmd::DvSend { file, to, every, seconds, format } => {
            super::dv::send(&file, to, every, seconds, format.into())
                .and_then(|r| json(&r, "dv-send result"))
        }
        TrafficCmd::DvRecv { listen, seconds, out, format } => {
            super::dv::recv(listen, seconds, &out, format.into())
                .and_then(|r| json(&r, "dv-recv result"))
        }
        TrafficCmd::Probe { server, tries, timeout_ms } => {
            engine::probe(server, tries, Duration::from_millis(timeout_ms))
                .map(|n| format!("{server} answered after {n} attempt(s)"))
        }
    };
    match res {
        Ok(out) => {
            if !out.is_empty() {
                println!("{out}");
            }
            0
        }
        Err(e) => {
            eprintln!("hipsec-traffic: {e}");
            1
        }
    }
}
