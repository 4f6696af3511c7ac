//! `hipsec lab validate`: does the profile predict what the node really costs? (issue 14 item 3)
//!
//! Each check runs real work on this machine — two nodes in namespaces carrying iperf3 TCP
//! through the tunnel (`hipsec bench tunnel`) with other suites and carriers than the one
//! calibration ran, and IKEv2 handshakes against a real responder node (`hipsec bench ike`) —
//! (calibration ran 32 handshakes in flight, this 8: another rate of the same work),
//! then predicts the CPU the nodes used from the profile alone and the work the run reports
//! (packets and their sizes from the nodes' counters; handshakes completed), the way `hipsec
//! size` adds costs. Predicted beside measured, and the error; a check misses when the error is
//! beyond [`TOLERANCE`].

use crate::calibrate::tunnel_work;
use crate::{bench_ike, bench_tunnel};
use serde::Serialize;
use sizing::Profile;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The error the issue allows: |predicted − measured| / measured.
pub const TOLERANCE: f64 = 0.20;

/// Arguments of `hipsec lab validate`.
#[derive(Debug, Clone, clap::Args)]
pub struct ValidateArgs {
    /// The profile to check (written by `hipsec lab calibrate` on this machine).
    #[arg(long, value_name = "FILE")]
    pub profile: PathBuf,
    /// Seconds of each tunnel transfer and of the handshake round.
    #[arg(long, default_value_t = 4)]
    pub seconds: u32,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What ran.
    pub run: String,
    /// The work it did (packets, sizes, handshakes).
    pub work: String,
    /// CPU the profile predicts, seconds (or µs per handshake).
    pub predicted: f64,
    /// CPU measured.
    pub measured: f64,
    /// (predicted − measured) / measured.
    pub error: f64,
    /// |error| ≤ [`TOLERANCE`].
    pub within: bool,
    /// Unit of `predicted` and `measured`.
    pub unit: &'static str,
}

fn check(run: String, work: String, predicted: f64, measured: f64, unit: &'static str) -> Check {
    let error = if measured > 0.0 { (predicted - measured) / measured } else { f64::NAN };
    Check { run, work, predicted, measured, error, within: error.abs() <= TOLERANCE, unit }
}

/// The tunnel runs: a suite and a carrier each.
const TUNNELS: [(&str, bench_tunnel::TransportArg); 4] = [
    ("aes256gcm", bench_tunnel::TransportArg::Udp),
    ("chacha20poly1305", bench_tunnel::TransportArg::Udp),
    ("aes128cbc-sha256", bench_tunnel::TransportArg::Udp),
    ("aes128gcm", bench_tunnel::TransportArg::Raw),
];

fn tunnel_check(
    p: &Profile,
    suite: &str,
    transport: bench_tunnel::TransportArg,
    seconds: u32,
) -> Result<Check, String> {
    let carrier = match transport {
        bench_tunnel::TransportArg::Raw => "raw",
        _ => "udp",
    };
    let cost = p.suites.get(suite).ok_or_else(|| format!("the profile has no suite {suite}"))?;
    let io = p
        .carriers
        .get(carrier)
        .ok_or_else(|| format!("the profile has no carrier {carrier} (calibrated --no-tunnel?)"))?;
    let tun = p.carriers.get("tun").ok_or("the profile has no tun carrier")?;
    eprintln!("validate: {suite} over {carrier}, {seconds} s of iperf3 TCP …");
    let args = bench_tunnel::BenchTunnelArgs {
        suite: suite.into(),
        seconds,
        congestion: "cubic".into(),
        queues: 1,
        rounds: 1,
        parallel: 1,
        transport,
        json: true,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let bench_tunnel::Output::One(r) = bench_tunnel::measure_all(&args, &stop)? else {
        return Err("the tunnel bench ran both carriers".into());
    };
    let w = tunnel_work(&r, cost)?;
    // A sealed packet costs the TUN's receive and the carrier's send, an opened one the
    // carrier's receive and the TUN's send (`sizing::model`); the model takes rx and tx alike.
    let per_packet_io = (io.rx_ns + io.tx_ns + tun.rx_ns + tun.tx_ns) / 2.0;
    let predicted = (w.engine_ns + w.handled * per_packet_io) / 1e9;
    Ok(check(
        format!("bench tunnel --suite {suite} --transport {carrier}"),
        format!(
            "{:.2} Gbit/s, {:.0} packets, data {:.0} B",
            r.tunnel.gbps, w.handled, w.data_bytes
        ),
        predicted,
        w.cpu_ns / 1e9,
        "CPU s",
    ))
}

fn ike_check(p: &Profile, seconds: u32) -> Result<Check, String> {
    eprintln!("validate: IKEv2 handshakes against a responder node, {seconds} s …");
    let args = bench_ike::BenchIkeArgs {
        seconds,
        rounds: 1,
        // Calibration ran 32 in flight: a quarter of that is another handshake rate.
        concurrency: 8,
        group: "x25519".into(),
        no_delete: false,
        json: true,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let r = bench_ike::measure(&args, &stop)?;
    Ok(check(
        "bench ike --concurrency 8 (responder, x25519, PSK)".into(),
        format!("{:.0} setups/s", r.setups_per_s),
        p.ike.ike_sa_setup_us,
        r.responder_us_per_setup,
        "µs per setup",
    ))
}

/// Runs every check.
pub fn measure(args: &ValidateArgs) -> Result<Vec<Check>, String> {
    let text = std::fs::read_to_string(&args.profile)
        .map_err(|e| format!("reading {}: {e}", args.profile.display()))?;
    let p = Profile::from_json(&text).map_err(|e| format!("{}: {e}", args.profile.display()))?;
    let mut out = Vec::new();
    for (suite, transport) in TUNNELS {
        out.push(tunnel_check(&p, suite, transport, args.seconds)?);
    }
    out.push(ike_check(&p, args.seconds)?);
    Ok(out)
}

/// The table.
pub fn render(checks: &[Check]) -> String {
    let mut s = String::from(
        "| run | work | predicted | measured | error | within 20 % |\n|---|---|---|---|---|---|\n",
    );
    for c in checks {
        s.push_str(&format!(
            "| {} | {} | {:.3} {} | {:.3} {} | {:+.1} % | {} |\n",
            c.run,
            c.work,
            c.predicted,
            c.unit,
            c.measured,
            c.unit,
            c.error * 100.0,
            if c.within { "yes" } else { "no" }
        ));
    }
    s
}

/// `hipsec lab validate`.
pub fn run(args: &ValidateArgs) -> Result<(), String> {
    let checks = measure(args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&checks).map_err(|e| e.to_string())?);
    } else {
        print!("{}", render(&checks));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_the_tolerance() {
        let c = check("r".into(), "w".into(), 1.1, 1.0, "CPU s");
        assert!((c.error - 0.1).abs() < 1e-9 && c.within);
        let c = check("r".into(), "w".into(), 0.7, 1.0, "CPU s");
        assert!(!c.within);
        let t = render(&[c]);
        assert!(t.contains("-30.0 %") && t.contains("| no |"), "{t}");
    }
}
