//! Capture files in and out: reads pcap and pcapng (raw IP, Ethernet with VLAN tags, Linux cooked
//! SLL/SLL2, BSD loopback), hands out the IP packet of each frame, writes raw-IP pcap.

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapParser, PcapWriter};
use pcap_file::pcapng::Block;
use pcap_file::pcapng::PcapNgParser;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};
use std::io::Write;
use std::time::Duration;

/// Largest frame we accept from a file: bigger records mean a corrupt file, not a packet.
pub const MAX_FRAME: usize = 262_144;

/// One frame of a capture.
#[derive(Debug, Clone)]
pub struct Frame {
    /// 1-based frame number, as Wireshark counts.
    pub number: usize,
    /// Capture timestamp since the Unix epoch.
    pub ts: Duration,
    /// Link-layer type of the frame's interface.
    pub link: DataLink,
    /// The captured bytes, link-layer header included.
    pub data: Vec<u8>,
    /// Length on the wire (more than `data.len()` if the capture cut the frame short).
    pub orig_len: usize,
}

/// A capture read whole.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    /// The frames, in file order.
    pub frames: Vec<Frame>,
    /// Things worth a warning (a partial last record, unsupported blocks).
    pub warnings: Vec<String>,
}

/// Why a capture file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    /// Neither the pcap nor the pcapng magic.
    #[error("not a pcap or pcapng file (first bytes {0})")]
    NotACapture(String),
    /// The header or a record is inconsistent.
    #[error("corrupt {format} file at byte {offset}: {what}")]
    Corrupt {
        /// "pcap" or "pcapng".
        format: &'static str,
        /// Byte offset of the bad record.
        offset: usize,
        /// What is wrong.
        what: String,
    },
}

/// What the link layer of a frame holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload<'a> {
    /// An IPv4 or IPv6 packet.
    Ip(&'a [u8]),
    /// Something else (ARP, LLDP, ...): the EtherType or protocol number.
    NotIp(u32),
    /// The link-layer header is cut short.
    Truncated,
    /// A link type this tool does not read.
    UnsupportedLink(u32),
}

/// Reads a pcap or pcapng file from memory.
pub fn read(bytes: &[u8]) -> Result<Capture, CaptureError> {
    match bytes.get(..4) {
        Some([0x0a, 0x0d, 0x0d, 0x0a]) => read_pcapng(bytes),
        Some(m) if is_pcap_magic(m) => read_pcap(bytes),
        _ => {
            let shown: Vec<String> = bytes.iter().take(4).map(|b| format!("{b:02x}")).collect();
            Err(CaptureError::NotACapture(if shown.is_empty() {
                "none: empty file".into()
            } else {
                shown.join(" ")
            }))
        }
    }
}

fn is_pcap_magic(m: &[u8]) -> bool {
    matches!(
        m,
        [0xa1, 0xb2, 0xc3, 0xd4]
            | [0xd4, 0xc3, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0x3c, 0x4d]
            | [0x4d, 0x3c, 0xb2, 0xa1]
    )
}

fn corrupt(format: &'static str, offset: usize, e: impl std::fmt::Display) -> CaptureError {
    CaptureError::Corrupt { format, offset, what: e.to_string() }
}

fn read_pcap(bytes: &[u8]) -> Result<Capture, CaptureError> {
    let (mut rest, parser) = PcapParser::new(bytes).map_err(|e| corrupt("pcap", 0, e))?;
    let header = parser.header();
    let mut cap = Capture::default();
    while !rest.is_empty() {
        let offset = bytes.len() - rest.len();
        // The raw record, validated here: pcap-file 2.0 refuses orig_len > snaplen, which is
        // exactly what a capture with a short snaplen contains.
        let (next, raw) = match parser.next_raw_packet(rest) {
            Ok(x) => x,
            Err(PcapError::IncompleteBuffer) => {
                cap.warnings.push(format!(
                    "the file ends inside packet {} (byte {offset}); that partial record is ignored",
                    cap.frames.len() + 1
                ));
                break;
            }
            Err(e) => return Err(corrupt("pcap", offset, e)),
        };
        if raw.data.len() > MAX_FRAME {
            return Err(corrupt(
                "pcap",
                offset,
                format!("record length {} exceeds {MAX_FRAME}", raw.data.len()),
            ));
        }
        let frac_ns = match header.ts_resolution {
            TsResolution::MicroSecond => raw.ts_frac.saturating_mul(1000),
            TsResolution::NanoSecond => raw.ts_frac,
        };
        if frac_ns >= 1_000_000_000 {
            return Err(corrupt(
                "pcap",
                offset,
                format!("timestamp fraction {} out of range", raw.ts_frac),
            ));
        }
        let data = raw.data.into_owned();
        cap.frames.push(Frame {
            number: cap.frames.len() + 1,
            ts: Duration::new(u64::from(raw.ts_sec), frac_ns),
            link: header.datalink,
            orig_len: (raw.orig_len as usize).max(data.len()),
            data,
        });
        rest = next;
    }
    Ok(cap)
}

/// Units per second of an interface's timestamps (pcapng if_tsresol, default 10^-6).
fn ts_units_per_sec(options: &[InterfaceDescriptionOption<'_>]) -> u128 {
    for o in options {
        if let InterfaceDescriptionOption::IfTsResol(r) = o {
            let exp = u32::from(r & 0x7f);
            return if r & 0x80 == 0 {
                10u128.checked_pow(exp.min(30))
            } else {
                2u128.checked_pow(exp.min(100))
            }
            .unwrap_or(1_000_000);
        }
    }
    1_000_000
}

fn read_pcapng(bytes: &[u8]) -> Result<Capture, CaptureError> {
    let (mut rest, mut parser) = PcapNgParser::new(bytes).map_err(|e| corrupt("pcapng", 0, e))?;
    let mut cap = Capture::default();
    while !rest.is_empty() {
        let offset = bytes.len() - rest.len();
        let (next, block) = match parser.next_block(rest) {
            Ok(x) => x,
            Err(PcapError::IncompleteBuffer) => {
                cap.warnings
                    .push(format!("the file ends inside a block (byte {offset}); it is ignored"));
                break;
            }
            Err(e) => return Err(corrupt("pcapng", offset, e)),
        };
        let (iface, units, orig_len, data) = match block {
            Block::EnhancedPacket(p) => {
                // pcap-file 2.0 stores the raw timestamp units as nanoseconds; rescale them with
                // the interface's if_tsresol.
                (p.interface_id, Some(p.timestamp.as_nanos()), p.original_len, p.data)
            }
            Block::SimplePacket(p) => (0, None, p.original_len, p.data),
            Block::Packet(p) => {
                (u32::from(p.interface_id), Some(u128::from(p.timestamp)), p.original_len, p.data)
            }
            _ => {
                rest = next;
                continue;
            }
        };
        let idb = parser.interfaces().get(iface as usize).ok_or_else(|| {
            corrupt(
                "pcapng",
                offset,
                format!("packet names interface {iface}, which was not described"),
            )
        })?;
        if data.len() > MAX_FRAME {
            return Err(corrupt(
                "pcapng",
                offset,
                format!("packet length {} exceeds {MAX_FRAME}", data.len()),
            ));
        }
        let ts = match units {
            None => Duration::ZERO,
            Some(u) => {
                let per_sec = ts_units_per_sec(&idb.options);
                let secs = u64::try_from(u / per_sec).unwrap_or(u64::MAX);
                let nanos = ((u % per_sec) * 1_000_000_000 / per_sec) as u32;
                Duration::new(secs, nanos)
            }
        };
        cap.frames.push(Frame {
            number: cap.frames.len() + 1,
            ts,
            link: idb.linktype,
            orig_len: (orig_len as usize).max(data.len()),
            data: data.into_owned(),
        });
        rest = next;
    }
    Ok(cap)
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;

fn by_ethertype(ethertype: u16, rest: &[u8]) -> Payload<'_> {
    match ethertype {
        ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Payload::Ip(rest),
        other => Payload::NotIp(u32::from(other)),
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|s| u16::from_be_bytes([s[0], s[1]]))
}

/// The IP packet inside a frame.
pub fn payload(frame: &Frame) -> Payload<'_> {
    let d = frame.data.as_slice();
    match frame.link {
        DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => Payload::Ip(d),
        DataLink::Unknown(12) | DataLink::Unknown(14) => Payload::Ip(d), // DLT_RAW on some BSDs
        DataLink::ETHERNET => {
            let mut at = 12;
            // Up to two 802.1Q / 802.1ad tags (Q-in-Q).
            for _ in 0..3 {
                match be16(d, at) {
                    None => return Payload::Truncated,
                    Some(0x8100 | 0x88a8 | 0x9100) => at += 4,
                    Some(t) => return by_ethertype(t, d.get(at + 2..).unwrap_or(&[])),
                }
            }
            Payload::NotIp(0x8100)
        }
        DataLink::LINUX_SLL => match be16(d, 14) {
            None => Payload::Truncated,
            Some(t) => by_ethertype(t, d.get(16..).unwrap_or(&[])),
        },
        DataLink::LINUX_SLL2 => match (be16(d, 0), d.get(20..)) {
            (Some(t), Some(rest)) => by_ethertype(t, rest),
            _ => Payload::Truncated,
        },
        DataLink::NULL | DataLink::LOOP => {
            let Some(f) = d.get(..4) else { return Payload::Truncated };
            let le = u32::from_le_bytes([f[0], f[1], f[2], f[3]]);
            let be = u32::from_be_bytes([f[0], f[1], f[2], f[3]]);
            let family = if le < 256 { le } else { be };
            match family {
                2 | 10 | 24 | 28 | 30 => Payload::Ip(d.get(4..).unwrap_or(&[])),
                other => Payload::NotIp(other),
            }
        }
        other => Payload::UnsupportedLink(u32::from(other)),
    }
}

/// Writes raw-IP packets (LINKTYPE_RAW, microsecond timestamps) to a pcap file.
#[derive(Debug)]
pub struct RawIpWriter<W: Write> {
    inner: PcapWriter<W>,
}

impl<W: Write> RawIpWriter<W> {
    /// Writes the file header.
    pub fn new(w: W) -> Result<Self, PcapError> {
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: MAX_FRAME as u32,
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::MicroSecond,
            endianness: Endianness::native(),
        };
        Ok(RawIpWriter { inner: PcapWriter::with_header(w, header)? })
    }

    /// Appends one IP packet.
    pub fn write(&mut self, ts: Duration, packet: &[u8]) -> Result<(), PcapError> {
        let len = u32::try_from(packet.len()).unwrap_or(u32::MAX);
        self.inner.write_packet(&PcapPacket::new(ts, len, packet)).map(|_| ())
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(self) -> W {
        self.inner.into_writer()
    }
}
