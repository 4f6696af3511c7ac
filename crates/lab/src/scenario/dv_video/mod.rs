//! Scenario `dv-video`, seed 004 §4 (Ariga et al.): DV video through IPsec over IPv6. The seed sent
//! DV with DVTS between hosts three routers apart and found 7–17 Mbit/s with IPsec, enough for
//! 1/10 of the frames; it asked whether the full frame rate survives AH+ESP. Here ffmpeg makes a
//! DV clip (PAL, 25 frames/s, 28.8 Mbit/s of DIF blocks), `hipsec-traffic dv-send` streams it as
//! RTP from h1 to h2 at the full rate and at the reduced rates the seed used (every K-th frame),
//! through none, AH, ESP and AH+ESP, on an unlimited link and one shaped to the seed's ≈ 10
//! Mbit/s; `dv-recv` keeps the frames that arrived whole, and ffmpeg decodes them.

pub mod table;

use crate::error::LabError;
use crate::node::{EspSuite, Mode, ModeHook};
use crate::report::{Machine, Pending, Report, SCHEMA, SeedFigures};
use crate::scenario::common::{Progress, RunOptions, Scenario, background_load_pct, unix_now_s};
use crate::topology::{Family, Topology, TopologySpec, parse_rate};
use crate::traffic::dv::{DvFormat, DvRecvResult, DvSendResult};
use crate::traffic::runner::RunParams;
use serde::{Deserialize, Serialize};
use std::net::{Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const NAME: &str = "dv-video";
const SEED_TABLE: &str = "ipsec_ipv6_netperf";
/// The seed's DV path ran at about 10 Mbit/s end to end (its ATM links).
const SEED_PATH_BPS: u64 = 10_000_000;
/// The stream's UDP port on h2.
const PORT: u16 = 5004;
/// The receiver starts this long before the sender and listens this long after it.
const RECV_LEAD: Duration = Duration::from_millis(200);
const RECV_TAIL_S: f64 = 0.5;
/// Frames of the clip ffmpeg makes (the sender loops over it).
const CLIP_FRAMES: u32 = 50;
/// Seconds a point costs beyond its stream (receiver lead and tail, decoding).
const POINT_OVERHEAD_S: f64 = 1.0;
/// Seconds to start a mode's nodes, check the tunnel, and stop them.
const MODE_SETUP_S: f64 = 1.5;

/// The scenario in the registry.
#[derive(Debug, Clone, Copy)]
pub struct DvVideo;

impl Scenario for DvVideo {
    fn name(&self) -> &'static str {
        NAME
    }

    fn seed(&self) -> &'static str {
        "004"
    }

    fn summary(&self) -> &'static str {
        "DV video (ffmpeg, RTP) through none/AH/ESP/AH+ESP over IPv6, full and reduced frame rates, unlimited and 10 Mbit/s"
    }

    fn run(&self, opts: &RunOptions, hook: &dyn ModeHook) -> Result<Report, LabError> {
        run(opts, hook, &Plan::of(opts)?)
    }

    fn comparisons(
        &self,
        report: &Report,
    ) -> Result<Vec<crate::report::compare::Comparison>, LabError> {
        Ok(table::comparisons(report))
    }
}

/// What a run covers.
#[derive(Debug, Clone)]
pub struct Plan {
    pub modes: Vec<Mode>,
    pub links: Vec<(String, Option<u64>)>,
    /// Every K-th frame sent: 1 is the full rate.
    pub every: Vec<u32>,
    pub seconds: f64,
}

impl Plan {
    /// Quick: the four modes with AES-128-GCM, rates 1, 1/2, 1/3, 1/4 and 1/10, 2 s each; full: the
    /// seed era's suites too, every rate from 1 to 1/10, 10 s each.
    pub fn of(opts: &RunOptions) -> Result<Plan, LabError> {
        let links = match opts.link.as_deref() {
            None => vec![("unlimited".into(), None), ("10mbit".into(), Some(SEED_PATH_BPS))],
            Some("unlimited") => vec![("unlimited".into(), None)],
            Some(text) => vec![(text.to_ascii_lowercase(), Some(parse_rate(text)?))],
        };
        Ok(if opts.full {
            Plan { modes: Mode::all(true), links, every: (1..=10).collect(), seconds: 10.0 }
        } else {
            let gcm = EspSuite::Aes128Gcm;
            Plan {
                modes: vec![Mode::None, Mode::Ah, Mode::Esp(gcm), Mode::AhEsp(gcm)],
                links,
                every: vec![1, 2, 3, 4, 10],
                seconds: 2.0,
            }
        })
    }

    fn point_s(&self) -> f64 {
        self.seconds + POINT_OVERHEAD_S
    }

    fn planned_s(&self) -> f64 {
        let per_mode = self.every.len() as f64 * self.point_s();
        self.links.len() as f64 * self.modes.len() as f64 * (per_mode + MODE_SETUP_S)
    }
}

/// One stream: a mode, a link and a frame rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub mode: String,
    pub link: String,
    /// Every K-th frame was sent.
    pub every: u32,
    pub sent: DvSendResult,
    pub received: DvRecvResult,
    /// Frames of the received file that ffmpeg decoded (None: ffprobe failed).
    pub decoded_frames: Option<u64>,
}

impl Point {
    /// Seconds the stream took to send: its planned length, or longer when the sender was held
    /// back.
    pub fn send_s(&self) -> f64 {
        self.sent.elapsed_s.max(self.sent.seconds).max(1e-9)
    }

    /// Frames sent per second (what left the sender, over the time it took).
    pub fn sent_fps(&self) -> f64 {
        self.sent.frames_sent as f64 / self.send_s()
    }

    /// Whole frames received per second.
    pub fn received_fps(&self) -> f64 {
        self.received.frames_complete as f64 / self.send_s()
    }

    /// Share of the frames sent that did not arrive whole, %.
    pub fn frame_loss_pct(&self) -> f64 {
        let s = self.sent.frames_sent.max(1) as f64;
        (100.0 * (s - self.received.frames_complete as f64) / s).max(0.0)
    }

    /// RTP payload received, Mbit/s from the first packet to the last (a shaped link's queue
    /// drains after the sender stops).
    pub fn received_mbit_s(&self) -> f64 {
        let s =
            if self.received.active_s > 0.0 { self.received.active_s } else { self.sent.seconds };
        self.received.payload_bytes as f64 * 8.0 / s.max(1e-9) / 1e6
    }

    /// The stream came through: at most 1 % of the frames lost, every whole frame decodable.
    pub fn survives(&self) -> bool {
        self.frame_loss_pct() <= 1.0 && self.decoded_frames == Some(self.received.frames_complete)
    }
}

/// Makes the DV clip with ffmpeg (test pattern, PAL, 4:2:0, `CLIP_FRAMES` frames).
fn make_clip(dir: &Path) -> Result<PathBuf, LabError> {
    let clip = dir.join("clip.dv");
    let frames = CLIP_FRAMES.to_string();
    crate::sys::run(
        "ffmpeg",
        &[
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=720x576:rate=25",
            "-frames:v",
            &frames,
            "-c:v",
            "dvvideo",
            "-pix_fmt",
            "yuv420p",
            "-f",
            "dv",
        ]
        .iter()
        .copied()
        .chain([clip.to_string_lossy().as_ref()])
        .collect::<Vec<_>>(),
    )?;
    Ok(clip)
}

/// Frames ffmpeg's decoder reads from `file` (ffprobe `-count_frames`).
pub fn decoded_frames(file: &Path) -> Option<u64> {
    let f = file.to_string_lossy();
    let out = crate::sys::run(
        "ffprobe",
        &[
            "-v",
            "error",
            "-count_frames",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=nb_read_frames",
            "-of",
            "default=nokey=1:noprint_wrappers=1",
            &f,
        ],
    )
    .ok()?;
    out.trim().parse().ok()
}

/// True when ffmpeg and ffprobe are on the PATH.
pub fn ffmpeg_available() -> bool {
    ["ffmpeg", "ffprobe"].iter().all(|t| {
        std::process::Command::new(t)
            .arg("-version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn parse<T: serde::de::DeserializeOwned>(out: &str, what: &str) -> Result<T, LabError> {
    serde_json::from_str(out.trim()).map_err(|e| LabError::parse(what, e.to_string()))
}

/// Runs the plan and returns its report (not yet written).
pub fn run(opts: &RunOptions, hook: &dyn ModeHook, plan: &Plan) -> Result<Report, LabError> {
    if !ffmpeg_available() {
        return Err(LabError::InvalidOption {
            field: "ffmpeg".into(),
            reason: "ffmpeg and ffprobe are needed (Debian: apt-get install ffmpeg)".into(),
        });
    }
    let bin = opts.traffic_bin()?;
    let started = Instant::now();
    let started_unix_s = unix_now_s();
    let background = background_load_pct()?;
    let dir = std::env::temp_dir().join(format!("hlab-dv-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
    let clip = make_clip(&dir)?;
    let clip_frames = decoded_frames(&clip);
    let mut topo = Topology::new(TopologySpec::seed004())?;
    let steps = plan.links.len() * plan.modes.len() * plan.every.len();
    if !opts.no_progress {
        eprintln!(
            "[{NAME}] {} profile: {} modes × {} links × {} frame rates, {} s each, planned {:.0} s",
            opts.profile(),
            plan.modes.len(),
            plan.links.len(),
            plan.every.len(),
            plan.seconds,
            plan.planned_s()
        );
    }
    let mut progress = Progress::new(NAME, steps, plan.planned_s(), !opts.no_progress);
    let (prog, lead) = bin.command();
    let with = |more: Vec<String>| lead.iter().cloned().chain(more).collect::<Vec<String>>();
    let mut points = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut notes = Vec::new();
    for (link, rate) in &plan.links {
        topo.set_rate(*rate)?;
        for mode in &plan.modes {
            let guard = match hook.setup(*mode, &topo) {
                Ok(g) => g,
                Err(LabError::ModePending { mode: m, reason }) => {
                    progress.skip(plan.every.len() as f64 * plan.point_s(), plan.every.len());
                    if !pending.iter().any(|p| p.mode == m) {
                        pending.push(Pending { mode: m, reason });
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(n) = guard.note() {
                if !notes.contains(&n) {
                    notes.push(n);
                }
            }
            let to_ip = match guard.target(Family::V6) {
                Some(ip) => ip,
                None => topo.addr("h2", Family::V6)?,
            };
            // The path answers before the first stream (a fresh IPv6 neighbour, a tunnel just
            // up): a TCP connection attempt to the stream's port, refused or not, is a round trip.
            topo.spawn(
                "h1",
                &prog,
                &with(vec![
                    "probe".into(),
                    "--server".into(),
                    SocketAddr::new(to_ip, PORT).to_string(),
                    "--tries".into(),
                    "40".into(),
                ]),
            )?
            .wait_output()?;
            for &every in &plan.every {
                progress.step(&format!("{} 1/{every} {link}", mode.short()), plan.point_s());
                let out = dir.join(format!("rx-{}.dv", points.len()));
                let rx = topo.spawn(
                    "h2",
                    &prog,
                    &with(vec![
                        "dv-recv".into(),
                        "--listen".into(),
                        SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), PORT).to_string(),
                        "--seconds".into(),
                        format!("{}", plan.seconds + RECV_LEAD.as_secs_f64() + RECV_TAIL_S),
                        "--out".into(),
                        out.to_string_lossy().into_owned(),
                    ]),
                )?;
                std::thread::sleep(RECV_LEAD);
                let tx = topo.spawn(
                    "h1",
                    &prog,
                    &with(vec![
                        "dv-send".into(),
                        "--file".into(),
                        clip.to_string_lossy().into_owned(),
                        "--to".into(),
                        SocketAddr::new(to_ip, PORT).to_string(),
                        "--every".into(),
                        every.to_string(),
                        "--seconds".into(),
                        plan.seconds.to_string(),
                    ]),
                )?;
                let sent: DvSendResult = parse(&tx.wait_output()?, "dv-send output")?;
                let received: DvRecvResult = parse(&rx.wait_output()?, "dv-recv output")?;
                guard.check()?;
                let decoded =
                    if received.frames_complete == 0 { Some(0) } else { decoded_frames(&out) };
                let _ = std::fs::remove_file(&out);
                points.push(Point {
                    mode: mode.short(),
                    link: link.clone(),
                    every,
                    sent,
                    received,
                    decoded_frames: decoded,
                });
            }
            drop(guard);
        }
    }
    progress.finish();
    drop(topo);
    let _ = std::fs::remove_dir_all(&dir);
    let fmt = DvFormat::default();
    notes.insert(0, format!(
        "Video: ffmpeg's dvvideo encoder, testsrc2 pattern, 720×576 at 25 frames/s ({} frames, {} decodable), sent as RTP with {} DIF blocks ({} octets) a packet, {} packets a frame: {:.1} Mbit/s of DV at the full rate.",
        CLIP_FRAMES,
        clip_frames.map_or("?".into(), |n| n.to_string()),
        fmt.blocks_per_packet,
        fmt.payload(),
        fmt.packets_per_frame(),
        fmt.full_rate_bps() as f64 / 1e6
    ));
    notes.push("Topology: h1 — r1 — r2 — h2 in network namespaces (veth), IPv6; 10mbit = tc tbf rate 10mbit on every link, the seed's end-to-end path rate.".into());
    notes.push("On a shaped link the plain sender meets the shaper on its own egress queue: its sends block when the queue is full, so its frames leave late (see frames sent/s) rather than being lost. Through IPsec the sender writes into the TUN device, and what the shaped link cannot carry is dropped on the way, so a frame loses a packet somewhere: whole frames become rare once the offered rate passes the link's.".into());
    notes.push("A frame counts as received when every one of its packets arrived; the received frames are written to a DV file that ffprobe decodes (`decoded`). Jitter: RFC 3550 §6.4.1's estimator over each whole frame's last packet.".into());
    notes.push(format!("Background load before the run: {background:.0} % of the machine."));
    if cfg!(debug_assertions) {
        notes.push("The lab was built without optimisation (debug profile); build with --release for figures.".into());
    }
    let seed = SeedFigures::load(&opts.seed_path(), SEED_TABLE);
    let sections = table::sections(&points, &seed);
    let charts = table::charts(&points);
    let extra = serde_json::to_value(&points).ok().map(|v| serde_json::json!({ "points": v }));
    Ok(Report {
        schema: SCHEMA.into(),
        scenario: NAME.into(),
        profile: opts.profile().into(),
        params: RunParams {
            warmup_ms: 0,
            duration_ms: (plan.seconds * 1e3) as u64,
            repetitions: 1,
        },
        started_unix_s,
        wall_s: started.elapsed().as_secs_f64(),
        machine: Machine::describe(),
        cases: Vec::new(),
        pending,
        seed: Some(seed),
        notes,
        sections,
        charts,
        extra,
    })
}
