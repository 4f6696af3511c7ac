//! Outbound sequence numbers of manually keyed SAs across restarts. RFC 4303 §3.3.3: "the
//! sender's counter is ... never allowed to cycle" under one key, and a manual SA has no
//! exchange to start a fresh one; a node that began again at 1 would see its packets dropped by
//! the peer's replay window for as long as it had been sending before.
//!
//! A thread of its own writes each outbound SA's last sequence number to the `[state] file`
//! every [`INTERVAL`] in which one moved (written to a temporary file, synced, renamed: a crash
//! leaves the old checkpoint or the new one). At start the node resumes each SA past its
//! checkpoint by [`MARGIN`], more than an SA can send between two checkpoints, and writes the
//! resumed numbers at once. An SA the file does not know is refused unless `--reset-sequence`
//! says its numbers may start again; a checkpoint under another key is a new SA and starts at 1.

use crate::config::NodeConfig;
use crate::config::sa::Direction;
use crate::datapath::board::Board;
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the sequence numbers are checkpointed.
pub const INTERVAL: Duration = Duration::from_millis(250);

/// How far past its checkpoint an SA resumes: 2^24 packets, what one SA sealing at 16 M packets
/// a second (about three times a lane's fastest, 180 ns a packet in `hipsec bench sas`) sends
/// in a second, four checkpoint intervals. A 32-bit counter affords 255 such restarts per key.
pub const MARGIN: u64 = 1 << 24;

/// Largest sequence number without extended sequence numbers (RFC 4303 §2.2).
const MAX_32: u64 = u32::MAX as u64;

/// The file's format.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct StateFile {
    version: u32,
    /// Random, kept across writes: the key fingerprints are HMACs under it, so the file tells
    /// nothing about a key except whether it is the one the checkpoint was made under.
    salt: String,
    sas: Vec<Entry>,
}

/// One outbound SA's checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Entry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    proto: String,
    spi: u32,
    dst: IpAddr,
    key_id: String,
    seq: u64,
}

/// Why an SA cannot be started without reusing its sequence numbers.
#[derive(Debug, thiserror::Error)]
pub enum SequenceError {
    /// The file is missing or unreadable.
    #[error(
        "{path}: {why}; not starting the manually keyed outbound SAs, since their sequence numbers \
         would start again at 1 under the same keys and the peer would drop their packets as \
         replays: start once with --reset-sequence if the keys are new, or rekey (hipsec sa rekey)"
    )]
    Unusable {
        /// The state file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// The file has no checkpoint for this SA.
    #[error(
        "{path}: no checkpoint for outbound SA {sa}; not starting it, since its sequence numbers \
         would start again at 1: start with --reset-sequence if its key is new, or rekey"
    )]
    NoCheckpoint {
        /// The state file.
        path: String,
        /// The SA (name, SPI and destination).
        sa: String,
    },
    /// Resuming past the checkpoint would run out of 32-bit sequence numbers.
    #[error(
        "outbound SA {sa}: its checkpoint ({seq}) leaves no room for a restart's margin in 32-bit \
         sequence numbers (RFC 4303 §3.3.3): rekey it, or use esn = true"
    )]
    Exhausted {
        /// The SA.
        sa: String,
        /// The checkpointed sequence number.
        seq: u64,
    },
    /// The checkpoint could not be written.
    #[error("{path}: {source}")]
    Write {
        /// The state file.
        path: String,
        /// Why.
        source: io::Error,
    },
}

/// One tracked SA: index in the config, identity and key fingerprint.
#[derive(Debug, Clone)]
struct Tracked {
    entry: Entry,
    esn: bool,
}

/// What start-up decided, and the thread that keeps the file up to date.
#[derive(Debug)]
pub struct Checkpointer {
    path: PathBuf,
    salt: String,
    tracked: Vec<Tracked>,
    /// (config SA index, last sequence number sent) for every tracked SA.
    pub resume: Vec<(usize, u64)>,
}

fn describe(name: &Option<String>, spi: u32, dst: IpAddr) -> String {
    match name {
        Some(n) => format!("{n:?} (spi 0x{spi:08x} to {dst})"),
        None => format!("spi 0x{spi:08x} to {dst}"),
    }
}

fn key_id(salt: &[u8], enc: &[u8], auth: &[u8]) -> String {
    let prf = crypto::Prf::new(crypto::PrfAlg::HmacSha256, salt);
    let mac = prf.compute(&[&(enc.len() as u32).to_be_bytes(), enc, auth]);
    hex::encode(mac.get(..16).unwrap_or(&mac))
}

impl Checkpointer {
    /// Reads the state file of `c` (None without `[state] file` or without outbound manual SAs)
    /// and decides where each outbound SA resumes; `reset`: `--reset-sequence`.
    pub fn start(c: &NodeConfig, reset: bool) -> Result<Option<Checkpointer>, SequenceError> {
        let Some(path) = &c.sequence_state else { return Ok(None) };
        let outbound: Vec<(usize, &crate::config::sa::SaConf)> =
            c.sas.iter().enumerate().filter(|(_, s)| s.direction == Direction::Out).collect();
        if outbound.is_empty() {
            return Ok(None);
        }
        let shown = path.display().to_string();
        let old = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice::<StateFile>(&bytes)
                .map_err(|e| format!("not a state file ({e})"))
                .and_then(|f| match (f.version, hex::decode(&f.salt).map(|s| s.len())) {
                    (1, Ok(16)) => Ok(f),
                    (1, _) => Err("its salt is not 16 bytes of hex".to_string()),
                    (v, _) => Err(format!("version {v}, not 1")),
                }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err("no such file".to_string()),
            Err(e) => Err(e.to_string()),
        };
        let old = match (old, reset) {
            (Ok(f), _) => Some(f),
            (Err(why), false) => return Err(SequenceError::Unusable { path: shown, why }),
            (Err(why), true) => {
                tracing::warn!(file = %shown, why = why.to_string(), "sequence-reset");
                None
            }
        };
        let salt = match &old {
            Some(f) => f.salt.clone(),
            None => {
                let mut s = [0u8; 16];
                crypto::default_provider().fill_random(&mut s).map_err(|_| {
                    SequenceError::Write {
                        path: shown.clone(),
                        source: io::Error::other("no random bytes for the salt"),
                    }
                })?;
                hex::encode(s)
            }
        };
        let salt_bytes = hex::decode(&salt).unwrap_or_default();
        let mut tracked = Vec::new();
        let mut resume = Vec::new();
        for (i, s) in outbound {
            let p = &s.params;
            let mut entry = Entry {
                name: s.name.clone(),
                proto: if p.protocol.number() == 51 { "ah" } else { "esp" }.into(),
                spi: p.spi.0,
                dst: p.dst,
                key_id: key_id(&salt_bytes, &p.enc_key, &p.auth_key),
                seq: 0,
            };
            let what = describe(&s.name, p.spi.0, p.dst);
            let found = old.as_ref().and_then(|f| {
                f.sas
                    .iter()
                    .find(|e| e.proto == entry.proto && e.spi == entry.spi && e.dst == entry.dst)
            });
            entry.seq = match found {
                Some(e) if e.key_id == entry.key_id => {
                    let next = e.seq.saturating_add(MARGIN);
                    if !p.esn && next >= MAX_32 {
                        return Err(SequenceError::Exhausted { sa: what, seq: e.seq });
                    }
                    tracing::info!(sa = %what, checkpoint = e.seq, resumed = next, "sequence-resumed");
                    next
                }
                // Another key under the same SPI is another SA: its numbers are its own.
                Some(_) => {
                    tracing::info!(sa = %what, "sequence-new-key");
                    0
                }
                None if reset => {
                    tracing::warn!(sa = %what, "sequence-reset");
                    0
                }
                None => return Err(SequenceError::NoCheckpoint { path: shown, sa: what }),
            };
            resume.push((i, entry.seq));
            tracked.push(Tracked { entry, esn: p.esn });
        }
        let cp = Checkpointer { path: path.clone(), salt, tracked, resume };
        // The resumed numbers are the new floor at once: a crash before the first checkpoint
        // must not go back below them.
        cp.write()?;
        Ok(Some(cp))
    }

    /// Sets where the outbound SAs of `lane` in `engine` (built from `c`) resume.
    pub fn apply(&self, c: &NodeConfig, lane: usize, engine: &mut ipsec::Engine) {
        for &(i, seq) in &self.resume {
            let Some(s) = c.sas.get(i).filter(|s| s.lane == lane) else { continue };
            let p = &s.params;
            let h = engine.outbound_entries().find_map(|(h, sa)| {
                let same = sa.spi() == p.spi
                    && sa.addrs().1 == p.dst
                    && sa.protocol().number() == p.protocol.number();
                same.then_some(h)
            });
            if let Some(sa) = h.and_then(|h| engine.outbound_sa_mut(h)) {
                sa.set_last_seq_out(ipsec::SeqNum(seq));
            }
        }
    }

    fn file(&self) -> StateFile {
        StateFile {
            version: 1,
            salt: self.salt.clone(),
            sas: self.tracked.iter().map(|t| t.entry.clone()).collect(),
        }
    }

    /// Writes the checkpoint: a temporary file beside it, synced, renamed over it, the
    /// directory synced.
    fn write(&self) -> Result<(), SequenceError> {
        let err = |source| SequenceError::Write { path: self.path.display().to_string(), source };
        write_atomic(&self.path, &serde_json::to_vec_pretty(&self.file()).unwrap_or_default())
            .map_err(err)
    }

    /// Takes the sequence numbers out of the workers' snapshots; true when one moved.
    fn update(&mut self, snaps: &[serde_json::Value]) -> bool {
        let mut moved = false;
        for snap in snaps {
            for sa in snap["sas"].as_array().into_iter().flatten() {
                if sa["direction"] != "out" {
                    continue;
                }
                let (Some(spi), Some(dst), Some(seq)) = (
                    sa["spi"]
                        .as_str()
                        .and_then(|s| s.strip_prefix("0x"))
                        .and_then(|s| u32::from_str_radix(s, 16).ok()),
                    sa["dst"].as_str().and_then(|s| s.parse::<IpAddr>().ok()),
                    sa["seq_out"].as_u64(),
                ) else {
                    continue;
                };
                for t in &mut self.tracked {
                    let e = &mut t.entry;
                    if e.spi == spi
                        && e.dst == dst
                        && sa["proto"] == e.proto.as_str()
                        && seq > e.seq
                    {
                        e.seq = if t.esn { seq } else { seq.min(MAX_32) };
                        moved = true;
                    }
                }
            }
        }
        moved
    }

    /// Checkpoints every [`INTERVAL`] until `stop`, and once more on the way out.
    pub fn run(mut self, board: &Board, stop: &AtomicBool) {
        let mut next = Instant::now() + INTERVAL;
        loop {
            let stopping = stop.load(Ordering::Relaxed);
            if stopping || Instant::now() >= next {
                next += INTERVAL;
                if self.update(&board.collect()) {
                    if let Err(e) = self.write() {
                        tracing::warn!(error = e.to_string(), "sequence-checkpoint-failed");
                    }
                }
                if stopping {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp",
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
#[path = "sequence_tests.rs"]
mod tests;
