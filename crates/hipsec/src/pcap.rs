//! `hipsec pcap seal` and `hipsec pcap open`: run every packet of a capture through an
//! `ipsec::Engine` keyed from an SA file, write the result as raw-IP pcap, and account for every
//! packet that did not come out (RFC 4303 §3.3 outbound, §3.4 inbound).

use crate::capture::{self, Frame, Payload, RawIpWriter};
use crate::safile::{self, SaEntry, SaFileError};
use ipsec::engine::SaHandle;
use ipsec::{DropReason, Engine, Mode, PacketBuf, SaEvent, SecurityAssociation, Spi, Time};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use wire::{IpLayout, proto};

/// Which way packets go through the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Outbound: protect plaintext packets.
    Seal,
    /// Inbound: verify and remove ESP/AH.
    Open,
}

impl Direction {
    fn name(self) -> &'static str {
        match self {
            Direction::Seal => "seal",
            Direction::Open => "open",
        }
    }
}

/// What `seal`/`open` were asked to do.
#[derive(Debug, Clone)]
pub struct Job {
    /// The SA file.
    pub sa_file: PathBuf,
    /// Input capture (pcap or pcapng).
    pub input: PathBuf,
    /// Output capture (pcap, LINKTYPE_RAW).
    pub output: PathBuf,
    /// `seal`: apply exactly these SAs, in this order, to every packet.
    pub spis: Vec<u32>,
    /// `seal`: apply every SA of the file, in file order, to every packet.
    pub bundle: bool,
}

/// Why a tool run could not be completed (packets that fail are drops, not errors).
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The SA file is wrong.
    #[error(transparent)]
    SaFile(#[from] SaFileError),
    /// An input file could not be read.
    #[error("{file}: {source}")]
    Read {
        /// File name.
        file: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The input is not a capture we can read.
    #[error("{file}: {source}")]
    Capture {
        /// File name.
        file: String,
        /// What is wrong.
        source: capture::CaptureError,
    },
    /// A frame's link type is not supported.
    #[error(
        "{file}: packet {packet}: link type {link} is not supported (raw IP 101/228/229, Ethernet 1, Linux SLL 113/276, loopback 0/108)"
    )]
    Link {
        /// File name.
        file: String,
        /// Frame number.
        packet: usize,
        /// The link type number.
        link: u32,
    },
    /// The output could not be written.
    #[error("{file}: {what}")]
    Write {
        /// File name.
        file: String,
        /// The error.
        what: String,
    },
    /// `--spi` names no SA of the file.
    #[error("--spi 0x{spi:08x}: no SA with this SPI in {file}")]
    UnknownSpi {
        /// The SPI.
        spi: u32,
        /// The SA file.
        file: String,
    },
    /// `--spi`/`--bundle` given to `open`.
    #[error("--spi and --bundle only apply to seal: open finds each packet's SA by its SPI")]
    SelectOnOpen,
    /// The engine refused an SA (should have been caught by the SA file check).
    #[error("{file}: {source}")]
    Engine {
        /// The SA file.
        file: String,
        /// The engine's error.
        source: ipsec::EngineError,
    },
}

/// One dropped packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Frame number (1-based).
    pub packet: usize,
    /// Drop reason name (`DropReason::name()`, or `not_ip` for non-IP frames).
    pub reason: &'static str,
    /// Extra detail: SPI and sequence number, or addresses.
    pub detail: String,
}

/// The outcome of a run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// "seal" or "open".
    pub command: &'static str,
    /// Frames read.
    pub packets_in: usize,
    /// Packets written.
    pub packets_out: usize,
    /// Drops by reason name.
    pub drops: BTreeMap<&'static str, u64>,
    /// Every dropped packet.
    pub dropped: Vec<Dropped>,
    /// Lifetime events, as text.
    pub events: Vec<String>,
    /// Per-SA usage lines.
    pub sas: Vec<serde_json::Value>,
    /// Warnings about the input file and SA notes.
    pub warnings: Vec<String>,
}

impl Report {
    fn drop(&mut self, packet: usize, reason: &'static str, detail: String) {
        *self.drops.entry(reason).or_insert(0) += 1;
        self.dropped.push(Dropped { packet, reason, detail });
    }

    /// Total drops.
    pub fn dropped_total(&self) -> u64 {
        self.drops.values().sum()
    }

    /// The summary as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let dropped: Vec<_> = self
            .dropped
            .iter()
            .map(|d| json!({"packet": d.packet, "reason": d.reason, "detail": d.detail}))
            .collect();
        json!({
            "command": self.command,
            "packets_in": self.packets_in,
            "packets_out": self.packets_out,
            "dropped": self.dropped_total(),
            "drops": self.drops,
            "dropped_packets": dropped,
            "events": self.events,
            "sas": self.sas,
            "warnings": self.warnings,
        })
    }

    /// The human summary.
    pub fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            w,
            "{}: {} packets in, {} out, {} dropped",
            self.command,
            self.packets_in,
            self.packets_out,
            self.dropped_total()
        )?;
        for (name, n) in &self.drops {
            writeln!(w, "  {name:<20} {n}")?;
        }
        for sa in &self.sas {
            writeln!(
                w,
                "sa {} {} {} {}: {} packets, {} bytes",
                sa["spi"].as_str().unwrap_or("?"),
                sa["proto"].as_str().unwrap_or("?"),
                sa["alg"].as_str().unwrap_or("?"),
                sa["mode"].as_str().unwrap_or("?"),
                sa["packets"],
                sa["bytes"]
            )?;
        }
        Ok(())
    }
}

/// Runs `seal` or `open`. Drop lines go to `log` as they happen.
pub fn run(dir: Direction, job: &Job, log: &mut dyn Write) -> Result<Report, ToolError> {
    let entries = safile::load(&job.sa_file)?;
    let sa_name = job.sa_file.display().to_string();
    let in_name = job.input.display().to_string();
    let bytes = std::fs::read(&job.input)
        .map_err(|source| ToolError::Read { file: in_name.clone(), source })?;
    let cap = capture::read(&bytes)
        .map_err(|source| ToolError::Capture { file: in_name.clone(), source })?;
    if let Some(f) =
        cap.frames.iter().find(|f| matches!(capture::payload(f), Payload::UnsupportedLink(_)))
    {
        return Err(ToolError::Link { file: in_name, packet: f.number, link: u32::from(f.link) });
    }
    if dir == Direction::Open && (job.bundle || !job.spis.is_empty()) {
        return Err(ToolError::SelectOnOpen);
    }
    let mut report =
        Report { command: dir.name(), packets_in: cap.frames.len(), ..Report::default() };
    for e in &entries {
        for n in &e.notes {
            report.warnings.push(format!("{sa_name}:{}: spi {}: {n}", e.line, e.params.spi));
        }
    }
    for w in &cap.warnings {
        report.warnings.push(format!("{in_name}: {w}"));
    }
    for w in &report.warnings {
        let _ = writeln!(log, "{w}");
    }

    let start = Time(cap.frames.first().map_or(0, micros));
    let mut engine = Engine::new(crypto::default_provider());
    let mut handles = Vec::with_capacity(entries.len());
    for e in &entries {
        let h = match dir {
            Direction::Seal => engine.add_outbound(&e.params, start),
            Direction::Open => engine.add_inbound(&e.params, start),
        };
        handles.push(h.map_err(|source| ToolError::Engine { file: sa_name.clone(), source })?);
    }
    let fixed = fixed_bundle(job, &entries, &handles, &sa_name)?;

    let out_name = job.output.display().to_string();
    let werr = |e: &dyn std::fmt::Display| ToolError::Write {
        file: out_name.clone(),
        what: e.to_string(),
    };
    let file = std::fs::File::create(&job.output).map_err(|e| werr(&e))?;
    let mut writer = RawIpWriter::new(std::io::BufWriter::new(file)).map_err(|e| werr(&e))?;
    let mut buf = PacketBuf::with_max_packet();

    for frame in &cap.frames {
        let before = report.dropped.len();
        let now = Time(micros(frame));
        let outcome = match dir {
            Direction::Seal => {
                seal_one(&mut engine, &entries, &handles, fixed.as_deref(), frame, &mut buf, now)
            }
            Direction::Open => open_one(&mut engine, frame, &mut buf, now),
        };
        match outcome {
            Ok(()) => {
                writer.write(frame.ts, buf.as_slice()).map_err(|e| werr(&e))?;
                report.packets_out += 1;
            }
            Err((reason, detail)) => report.drop(frame.number, reason, detail),
        }
        if let Some(d) = report.dropped.get(before) {
            let _ = writeln!(log, "packet {}: dropped: {} ({})", d.packet, d.reason, d.detail);
        }
        for ev in engine.drain_events() {
            let text = event_text(frame.number, ev);
            let _ = writeln!(log, "{text}");
            report.events.push(text);
        }
    }
    writer.finish().flush().map_err(|e| werr(&e))?;
    let sas: Vec<&SecurityAssociation> = match dir {
        Direction::Seal => engine.outbound_sas().collect(),
        Direction::Open => engine.inbound_sas().collect(),
    };
    report.sas = sas.into_iter().map(sa_json).collect();
    Ok(report)
}

fn micros(f: &Frame) -> u64 {
    u64::try_from(f.ts.as_micros()).unwrap_or(u64::MAX)
}

/// `--spi` / `--bundle`: the same SAs for every packet; `None` means choose per packet.
fn fixed_bundle(
    job: &Job,
    entries: &[SaEntry],
    handles: &[SaHandle],
    sa_name: &str,
) -> Result<Option<Vec<SaHandle>>, ToolError> {
    if job.bundle {
        return Ok(Some(handles.to_vec()));
    }
    if job.spis.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(job.spis.len());
    for &spi in &job.spis {
        let i = entries
            .iter()
            .position(|e| e.params.spi == Spi(spi))
            .ok_or_else(|| ToolError::UnknownSpi { spi, file: sa_name.to_string() })?;
        if let Some(&h) = handles.get(i) {
            out.push(h);
        }
    }
    Ok(Some(out))
}

type Outcome = Result<(), (&'static str, String)>;

fn ip_of(frame: &Frame) -> Result<&[u8], (&'static str, String)> {
    match capture::payload(frame) {
        Payload::Ip(p) => Ok(p),
        Payload::NotIp(t) => Err(("not_ip", format!("link-layer protocol 0x{t:04x}"))),
        Payload::Truncated => {
            Err((DropReason::Malformed.name(), "link-layer header cut short".into()))
        }
        Payload::UnsupportedLink(l) => Err(("unsupported_link", format!("link type {l}"))),
    }
}

fn addr(b: &[u8]) -> Option<IpAddr> {
    match b.len() {
        4 => <[u8; 4]>::try_from(b).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(b).ok().map(IpAddr::from),
        _ => None,
    }
}

/// The SA-choice rule of `seal` (docs/sa-file.md): the first SA of the file that is in tunnel
/// mode, or in transport mode with the packet's own source and destination.
fn choose(
    entries: &[SaEntry],
    handles: &[SaHandle],
    src: Option<IpAddr>,
    dst: Option<IpAddr>,
) -> Option<SaHandle> {
    entries.iter().zip(handles).find_map(|(e, &h)| {
        let p = &e.params;
        let ok = p.mode == Mode::Tunnel || (Some(p.src) == src && Some(p.dst) == dst);
        ok.then_some(h)
    })
}

fn seal_one(
    engine: &mut Engine,
    entries: &[SaEntry],
    handles: &[SaHandle],
    fixed: Option<&[SaHandle]>,
    frame: &Frame,
    buf: &mut PacketBuf,
    now: Time,
) -> Outcome {
    let ip = ip_of(frame)?;
    let layout = IpLayout::parse(ip).map_err(|e| (DropReason::Malformed.name(), e.to_string()))?;
    // Drop link-layer padding after the IP packet (short Ethernet frames are padded to 60 bytes).
    let ip = ip.get(..layout.total_len).unwrap_or(ip);
    let (s, d) = layout.addrs(ip);
    let (src, dst) = (addr(s), addr(d));
    let flow = format!(
        "{} -> {}",
        src.map_or("?".into(), |a| a.to_string()),
        dst.map_or("?".into(), |a| a.to_string())
    );
    buf.load(ip, ipsec::buf::DEFAULT_HEADROOM)
        .map_err(|_| (DropReason::TooBig.name(), flow.clone()))?;
    let chosen;
    let bundle: &[SaHandle] = match fixed {
        Some(b) => b,
        None => {
            chosen = choose(entries, handles, src, dst)
                .ok_or((DropReason::NoSa.name(), flow.clone()))?;
            std::slice::from_ref(&chosen)
        }
    };
    engine.protect_with(bundle, buf, now).map(|_| ()).map_err(|r| {
        let spis: Vec<String> = bundle
            .iter()
            .filter_map(|h| handles.iter().position(|x| x == h).and_then(|i| entries.get(i)))
            .map(|e| e.params.spi.to_string())
            .collect();
        (r.name(), format!("{flow}, spi {}", spis.join("+")))
    })
}

/// SPI and sequence number of the outermost ESP/AH header, for drop lines.
fn ipsec_ids(ip: &[u8]) -> String {
    let Ok(l) = IpLayout::parse(ip) else { return "not an IP packet".into() };
    let at = l.header_len;
    let (spi_at, seq_at) = match l.next_header {
        proto::ESP => (at, at + 4),
        proto::AH => (at + 4, at + 8),
        p => return format!("ip protocol {p}"),
    };
    let word = |o: usize| ip.get(o..o + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    match (word(spi_at), word(seq_at)) {
        (Some(spi), Some(seq)) => format!("spi {} seq {seq}", Spi(spi)),
        (Some(spi), None) => format!("spi {}", Spi(spi)),
        _ => "header cut short".into(),
    }
}

fn open_one(engine: &mut Engine, frame: &Frame, buf: &mut PacketBuf, now: Time) -> Outcome {
    let ip = ip_of(frame)?;
    buf.load(ip, ipsec::buf::DEFAULT_HEADROOM)
        .map_err(|_| (DropReason::TooBig.name(), ipsec_ids(ip)))?;
    engine.inbound(buf, now).map(|_| ()).map_err(|r| (r.name(), ipsec_ids(ip)))
}

fn event_text(packet: usize, ev: SaEvent) -> String {
    match ev {
        SaEvent::SoftExpired { spi, limit } => {
            format!("packet {packet}: sa {spi}: soft lifetime reached ({limit}): time to rekey")
        }
        SaEvent::HardExpired { spi, limit } => {
            format!("packet {packet}: sa {spi}: hard lifetime reached ({limit}): the SA stops")
        }
        SaEvent::Acquire { policy, src, dst, proto } => format!(
            "packet {packet}: acquire: policy {policy} has no SA for {src} -> {dst} (protocol {proto})"
        ),
    }
}

fn sa_json(sa: &SecurityAssociation) -> serde_json::Value {
    let alg = match sa.protocol() {
        ipsec::sa::Protocol::Esp(s) => s.to_string(),
        ipsec::sa::Protocol::Ah(i) => i.name().to_string(),
    };
    let (src, dst) = sa.addrs();
    json!({
        "spi": sa.spi().to_string(),
        "proto": sa.protocol().name(),
        "alg": alg,
        "mode": if sa.mode() == Mode::Tunnel { "tunnel" } else { "transport" },
        "src": src.to_string(),
        "dst": dst.to_string(),
        "packets": sa.usage().packets,
        "bytes": sa.usage().bytes,
    })
}

/// Reads just the SA file, for `wireshark-keys`.
pub fn load_sas(path: &Path) -> Result<Vec<SaEntry>, ToolError> {
    Ok(safile::load(path)?)
}
