//! `hipsec size`: how many cores a workload needs on a calibrated machine.

use sizing::{Answer, PacketMix, Profile, Workload, examples};
use std::path::PathBuf;

/// The long help of `hipsec size`.
pub const HELP: &str = "\
How many cores of a calibrated machine a workload needs, which part of the work dominates, and
whether the link rather than the CPU is the bound: the seeds' sizing sections, from this
machine's own measured costs. The profile (JSON) holds per-packet and per-byte costs of each
ESP/AH suite in the node's data path, the per-packet I/O of each carrier, the filter, and the
CPU of IKE setups and rekeys, HIP base exchanges and binding updates; a profile measured on
another machine sizes for that machine. The workload comes from --example, from a JSON file
(--workload; the same field names as the flags, with _ for -) or from the flags, which also
override a file's or an example's fields.

The model adds costs linearly and spreads work over cores perfectly, except that one SA's
packets stay on one core (docs/sizing.md has the assumptions and the error the lab measured).
A profile calibrated in several rounds (the default is 5) holds each cost's median and its
range: the answer then says what the workload costs at both ends of that range, and names the
noisy figures (moved by more than 10 % over the rounds) that it depends on.

Examples:
  hipsec size --profile profile.json --example gateway-10g
  hipsec size --profile profile.json --example road-warriors --json
  hipsec size --profile profile.json --gbps 2 --both --imix --suite aes128gcm --tunnels 100 \\
      --child-rekey 3600 --link 10
  hipsec size --profile profile.json --packet-size 1400 --cores 0.01
The last asks the inverse: how much traffic 1 % of a core carries (a CPU-capped gateway).
Examples: gateway-10g (10 Gbit/s each way of IMIX through 16 tunnels on a 10 Gbit/s link),
road-warriors (10,000 tunnels, hourly CHILD_SA rekeys, 50 handshakes/s), home-agent
(1,000,000 mobile nodes re-registering every 10 minutes, 2 Gbit/s tunnelled to them).";

/// Arguments of `hipsec size`.
#[derive(Debug, Clone, clap::Args)]
pub struct SizeArgs {
    /// The calibrated profile (JSON, written by `hipsec lab calibrate`).
    #[arg(long, value_name = "FILE")]
    pub profile: PathBuf,
    /// A worked workload: gateway-10g, road-warriors or home-agent.
    #[arg(long, value_name = "NAME")]
    pub example: Option<String>,
    /// A workload file (JSON).
    #[arg(long, value_name = "FILE", conflicts_with = "example")]
    pub workload: Option<PathBuf>,
    /// Protected traffic each way, Gbit/s of inner packets.
    #[arg(long)]
    pub gbps: Option<f64>,
    /// The traffic flows both ways (a gateway's usual case).
    #[arg(long)]
    pub both: bool,
    /// Every inner packet this many bytes.
    #[arg(long, value_name = "BYTES", conflicts_with = "imix")]
    pub packet_size: Option<u32>,
    /// Simple IMIX (7 × 40, 4 × 576, 1 × 1500 bytes).
    #[arg(long)]
    pub imix: bool,
    /// ESP/AH suite (a name in the profile).
    #[arg(long)]
    pub suite: Option<String>,
    /// Carrier: udp (ESP in UDP) or raw (ESP over IP).
    #[arg(long)]
    pub carrier: Option<String>,
    /// Tunnels (IKE_SAs with a CHILD_SA pair each, or peers).
    #[arg(long)]
    pub tunnels: Option<u64>,
    /// CHILD_SA rekey interval per tunnel, seconds.
    #[arg(long, value_name = "SECONDS")]
    pub child_rekey: Option<f64>,
    /// IKE_SA rekey interval per tunnel, seconds.
    #[arg(long, value_name = "SECONDS")]
    pub ike_rekey: Option<f64>,
    /// New IKE_SAs per second.
    #[arg(long)]
    pub handshakes: Option<f64>,
    /// HIP base exchanges answered per second.
    #[arg(long)]
    pub hip_bex: Option<f64>,
    /// Binding updates per second (home agent).
    #[arg(long)]
    pub binding_updates: Option<f64>,
    /// Binding-cache entries held.
    #[arg(long)]
    pub bindings: Option<u64>,
    /// Filter rules every packet meets.
    #[arg(long)]
    pub rules: Option<u64>,
    /// The link's rate each way, Gbit/s.
    #[arg(long, value_name = "GBPS")]
    pub link: Option<f64>,
    /// Share of each core to plan for (0.7 by default).
    #[arg(long, value_name = "SHARE")]
    pub utilisation: Option<f64>,
    /// The inverse question: the most traffic (--gbps, each way) the workload can have on
    /// this many cores, every core fully used. A share of one core works too: 0.01 is a
    /// gateway capped at 1 % of a core, whose CPU rather than its link then bounds it above
    /// the rate this gives. Example: hipsec size --profile profile.json --packet-size 1400
    /// --cores 0.5
    #[arg(long, value_name = "CORES")]
    pub cores: Option<f64>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn read(path: &PathBuf, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading the {what} {}: {e}", path.display()))
}

/// The workload the arguments describe.
pub fn workload(a: &SizeArgs) -> Result<Workload, String> {
    let mut w = match (&a.example, &a.workload) {
        (Some(n), _) => examples::example(n)
            .ok_or_else(|| format!("--example {n}: not one of {}", examples::NAMES.join(", ")))?,
        (None, Some(f)) => Workload::from_json(&read(f, "workload")?).map_err(|e| e.to_string())?,
        (None, None) => Workload { tunnels: 1, ..examples::base("workload") },
    };
    if let Some(v) = a.gbps {
        w.throughput_gbps = v;
    }
    w.bidirectional |= a.both;
    if let Some(b) = a.packet_size {
        w.packets = PacketMix::Fixed(b);
    }
    if a.imix {
        w.packets = PacketMix::Imix;
    }
    if let Some(v) = &a.suite {
        w.suite = v.clone();
    }
    if let Some(v) = &a.carrier {
        w.carrier = v.clone();
    }
    let set = |dst: &mut Option<f64>, v: Option<f64>| {
        if v.is_some() {
            *dst = v;
        }
    };
    set(&mut w.child_rekey_s, a.child_rekey);
    set(&mut w.ike_rekey_s, a.ike_rekey);
    set(&mut w.link_gbps, a.link);
    w.tunnels = a.tunnels.unwrap_or(w.tunnels);
    w.handshakes_per_s = a.handshakes.unwrap_or(w.handshakes_per_s);
    w.hip_bex_per_s = a.hip_bex.unwrap_or(w.hip_bex_per_s);
    w.binding_updates_per_s = a.binding_updates.unwrap_or(w.binding_updates_per_s);
    w.bindings = a.bindings.unwrap_or(w.bindings);
    w.filter_rules = a.rules.unwrap_or(w.filter_rules);
    w.target_utilisation = a.utilisation.unwrap_or(w.target_utilisation);
    w.validate().map_err(|e| e.to_string())?;
    Ok(w)
}

/// Sizes and returns the answer.
pub fn answer(a: &SizeArgs) -> Result<Answer, String> {
    let p = Profile::from_json(&read(&a.profile, "profile")?)
        .map_err(|e| format!("{}: {e}", a.profile.display()))?;
    sizing::rounds::size_with_interval(&p, &workload(a)?).map_err(|e| e.to_string())
}

/// `--cores`: what those cores carry.
fn capacity(a: &SizeArgs, cores: f64) -> Result<(), String> {
    let p = Profile::from_json(&read(&a.profile, "profile")?)
        .map_err(|e| format!("{}: {e}", a.profile.display()))?;
    let w = workload(a)?;
    let c = sizing::capacity::capacity(&p, &w, cores).map_err(|e| e.to_string())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&c).map_err(|e| e.to_string())?);
        return Ok(());
    }
    let mbit =
        |g: f64| if g < 1.0 { format!("{:.1} Mbit/s", g * 1e3) } else { format!("{g:.2} Gbit/s") };
    println!(
        "{}: {cores} core{} carr{} up to {} each way of inner packets ({} on the wire).",
        w.name,
        if cores == 1.0 { "" } else { "s" },
        if cores == 1.0 { "ies" } else { "y" },
        mbit(c.gbps),
        mbit(c.wire_gbps)
    );
    if let (Some(lo), Some(hi)) = (c.gbps_low, c.gbps_high) {
        println!(
            "Over the calibration's spread and the error validation measured: {} to {}.",
            mbit(lo),
            mbit(hi)
        );
    }
    Ok(())
}

/// Runs `hipsec size`.
pub fn run(a: &SizeArgs) -> Result<(), String> {
    if let Some(cores) = a.cores {
        return capacity(a, cores);
    }
    let ans = answer(a)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&ans).map_err(|e| e.to_string())?);
        return Ok(());
    }
    for line in &ans.words {
        println!("{line}");
    }
    println!();
    print!("{}", ans.table());
    Ok(())
}
