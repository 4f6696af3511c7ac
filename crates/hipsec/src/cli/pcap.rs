//! `hipsec pcap`: offline tools on capture files.

use super::spi::parse_spi;
use clap::{Args, Subcommand};
use hipsec::pcap::{self, Direction, Job};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub(crate) enum PcapCommand {
    /// Protect every packet of a capture with ESP/AH, as an outbound host would.
    #[command(long_about = SEAL_HELP)]
    Seal(SealArgs),
    /// Verify and remove ESP/AH from every packet of a capture, as an inbound host would.
    #[command(long_about = OPEN_HELP)]
    Open(OpenArgs),
    /// Print the SA file as Wireshark's esp_sa table, so Wireshark/tshark can decrypt.
    #[command(name = "wireshark-keys", long_about = KEYS_HELP)]
    WiresharkKeys(KeysArgs),
}

const SEAL_HELP: &str = "\
Protect every packet of a capture with ESP/AH, as an outbound host would (RFC 4303 §3.3).

Reads IN (pcap or pcapng; raw IP, Ethernet with VLAN tags, Linux cooked SLL/SLL2 or loopback),
installs every SA of the SA file (see docs/sa-file.md) as an outbound SA, protects each IP
packet and writes OUT as a raw-IP pcap (LINKTYPE_RAW) with the same timestamps. The packet's
capture time is the engine's clock, so time-based lifetimes work as they would have live.

Which SA protects a packet:
  default      the first SA of the file that is in tunnel mode, or in transport mode with
               src/dst equal to the packet's source/destination; no such SA: dropped, no_sa
  --spi X      always the SA with SPI X; repeat --spi to apply several in order (a bundle)
  --bundle     every SA of the file, in file order (e.g. ESP then AH, transport mode)

Every dropped packet gets a line on stderr (\"packet 17: dropped: malformed (...)\") and is
counted by reason in the summary on stdout; --json prints the summary as JSON. Exit status is
0 when the capture was processed (even with drops), 1 on a bad SA file, unreadable capture or
write error, 2 on bad usage.

Example:
  hipsec pcap seal --sa sa.toml plain.pcap sealed.pcap
  hipsec pcap seal --sa sa.toml --spi 0x1000 --json plain.pcapng sealed.pcap";

const OPEN_HELP: &str = "\
Verify and remove ESP/AH from every packet of a capture, as an inbound host would (RFC 4303 §3.4).

Installs every SA of the SA file as an inbound SA (found by SPI and protocol, as in the kernel's
SAD), checks the replay window and the ICV, decrypts, and writes the inner packets (tunnel mode)
or the restored packets (transport mode) to OUT as a raw-IP pcap. Packets without ESP/AH, with an
unknown SPI, replayed, forged or malformed are dropped: one line each on stderr
(\"packet 17: dropped: replayed (spi 0x00001000 seq 5)\") and a count by reason in the summary.

Example:
  hipsec pcap open --sa sa.toml sealed.pcap plain-again.pcap
  hipsec pcap open --sa sa.toml --json capture.pcapng out.pcap | jq .drops";

const KEYS_HELP: &str = "\
Print the SA file as lines of Wireshark's esp_sa table (Wireshark 4.0: 8 columns), so that
Wireshark and tshark decrypt ESP written by hipsec (or by any peer using these keys). AH SAs
and algorithms Wireshark 4.0 lacks (ChaCha20-Poly1305) are listed as comments.

Example:
  hipsec pcap wireshark-keys --sa sa.toml > ~/.config/wireshark/esp_sa
  tshark -o esp.enable_encryption_decode:TRUE -r sealed.pcap
or without touching the profile, one SA at a time:
  tshark -o esp.enable_encryption_decode:TRUE -o \"uat:esp_sa:$(hipsec pcap wireshark-keys --sa sa.toml | grep -v '^#' | head -1)\" -r sealed.pcap";

/// What `pcap seal` and `pcap open` share: the SA file, the JSON switch and the two captures.
#[derive(Debug, Args)]
pub(crate) struct CaptureArgs {
    /// SA file (TOML, see docs/sa-file.md).
    #[arg(long, value_name = "SAFILE")]
    sa: PathBuf,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Input capture (pcap or pcapng).
    #[arg(value_name = "IN")]
    input: PathBuf,
    /// Output capture (pcap, raw IP).
    #[arg(value_name = "OUT")]
    output: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct SealArgs {
    #[command(flatten)]
    capture: CaptureArgs,
    /// Apply the SA with this SPI (hex 0x... or decimal); repeat to apply several in order.
    #[arg(long, value_name = "SPI", value_parser = parse_spi)]
    spi: Vec<u32>,
    /// Apply every SA of the file to every packet, in file order.
    #[arg(long, conflicts_with = "spi")]
    bundle: bool,
}

#[derive(Debug, Args)]
pub(crate) struct OpenArgs {
    #[command(flatten)]
    capture: CaptureArgs,
}

#[derive(Debug, Args)]
pub(crate) struct KeysArgs {
    /// SA file (TOML, see docs/sa-file.md).
    #[arg(long, value_name = "SAFILE")]
    sa: PathBuf,
}

fn run_pcap(dir: Direction, job: Job, json: bool) -> Result<(), String> {
    let mut stderr = std::io::stderr().lock();
    let report = pcap::run(dir, &job, &mut stderr).map_err(|e| e.to_string())?;
    drop(stderr);
    let mut out = std::io::stdout().lock();
    let r = if json { writeln!(out, "{}", report.to_json()) } else { report.write_text(&mut out) };
    r.map_err(|e| format!("stdout: {e}"))
}

/// Runs a `hipsec pcap` subcommand.
pub(crate) fn run(c: PcapCommand) -> Result<(), String> {
    match c {
        PcapCommand::Seal(a) => {
            let job = Job {
                sa_file: a.capture.sa,
                input: a.capture.input,
                output: a.capture.output,
                spis: a.spi,
                bundle: a.bundle,
            };
            run_pcap(Direction::Seal, job, a.capture.json)
        }
        PcapCommand::Open(a) => {
            let job = Job {
                sa_file: a.capture.sa,
                input: a.capture.input,
                output: a.capture.output,
                spis: Vec::new(),
                bundle: false,
            };
            run_pcap(Direction::Open, job, a.capture.json)
        }
        PcapCommand::WiresharkKeys(a) => {
            let entries = pcap::load_sas(&a.sa).map_err(|e| e.to_string())?;
            for e in &entries {
                for n in &e.notes {
                    eprintln!("{}:{}: spi {}: {n}", a.sa.display(), e.line, e.params.spi);
                }
            }
            let text = hipsec::wireshark::esp_sa_file(&entries);
            std::io::stdout().lock().write_all(text.as_bytes()).map_err(|e| format!("stdout: {e}"))
        }
    }
}
