//! Settings the node accepts but an operator should hear about: files holding keys that other
//! users can read, null or legacy algorithms (RFC 8221), inbound SAs without replay protection,
//! keys whose bytes are all the same, and short pre-shared keys. Pure functions over a loaded
//! config or one SA return typed warnings; the node logs them at start and answers
//! `sa-add`/`sa-update` with them. No warning carries a key.

use super::NodeConfig;
use super::connection::AuthConf;
use super::mip6_sa::SignallingKeys;
use super::sa::{Direction, SaConf};
use crypto::{EncrAlg, IntegAlg};
use ipsec::sa::Protocol;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Shortest pre-shared key that draws no warning, in bytes: as many as a SHA-1-sized PRF key,
/// and what an operator's "random 20 bytes" gives. RFC 7296 §2.15 asks for a PSK as strong
/// as the keys it protects.
pub const MIN_PSK_LEN: usize = 20;

/// Which SA a warning is about: its name if it has one, its SPI and direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaId {
    /// `name` in the config, if any.
    pub name: Option<String>,
    /// SPI in `0x%08x` form.
    pub spi: String,
    /// `in` or `out`.
    pub direction: &'static str,
}

impl SaId {
    /// The SA of `s`.
    pub fn of(s: &SaConf) -> SaId {
        SaId {
            name: s.name.clone(),
            spi: s.params.spi.to_string(),
            direction: if s.direction == Direction::In { "in" } else { "out" },
        }
    }

    fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("SA {n:?} ({} {})", self.direction, self.spi),
            None => format!("SA {} {}", self.direction, self.spi),
        }
    }
}

/// One weak setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// A file holding keys that group or others may read (mode bits `mode`).
    KeysReadable {
        /// The file.
        file: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// What secret it holds (`[[sa]] keys`, `[secrets] PSKs`, `local.key`, `[hip] identity`).
        holds: String,
    },
    /// ESP with `enc = "null"`: integrity only, the payload travels in clear (RFC 2410).
    NullEncryption {
        /// The SA.
        sa: SaId,
    },
    /// An algorithm RFC 8221 keeps for old peers only: 3DES encryption, HMAC-SHA1 integrity.
    LegacyAlgorithm {
        /// The SA.
        sa: SaId,
        /// `enc` or `auth`.
        field: &'static str,
        /// The algorithm's name.
        alg: &'static str,
    },
    /// An inbound SA with `replay-window = 0`: replayed packets are accepted (RFC 4303 §3.4.3).
    NoReplayWindow {
        /// The SA.
        sa: SaId,
    },
    /// A key field whose bytes are all the same (all zero, say): a placeholder, not a key.
    WeakKey {
        /// The SA.
        sa: SaId,
        /// `key`, `enc-key` or `auth-key`.
        field: &'static str,
    },
    /// A pre-shared key shorter than [`MIN_PSK_LEN`] bytes.
    ShortPsk {
        /// The `[[connection]]` that uses it.
        connection: String,
        /// Its length in bytes.
        len: usize,
    },
    /// A pre-shared key whose bytes are all the same.
    WeakPsk {
        /// The `[[connection]]` that uses it.
        connection: String,
    },
}

impl Warning {
    /// The log event's name.
    pub fn event(&self) -> &'static str {
        match self {
            Warning::KeysReadable { .. } => "keys-readable",
            Warning::NullEncryption { .. } => "null-encryption",
            Warning::LegacyAlgorithm { .. } => "legacy-algorithm",
            Warning::NoReplayWindow { .. } => "replay-window-off",
            Warning::WeakKey { .. } => "weak-key",
            Warning::ShortPsk { .. } => "short-psk",
            Warning::WeakPsk { .. } => "weak-psk",
        }
    }

    /// The event's fields: what it is about and which field, never a key.
    pub fn fields(&self) -> Vec<(&'static str, Value)> {
        let sa = |s: &SaId| {
            let mut v = vec![("spi", json!(s.spi)), ("direction", json!(s.direction))];
            if let Some(n) = &s.name {
                v.insert(0, ("sa", json!(n)));
            }
            v
        };
        match self {
            Warning::KeysReadable { file, mode, holds } => vec![
                ("file", json!(file.display().to_string())),
                ("mode", json!(format!("{mode:03o}"))),
                ("holds", json!(holds)),
            ],
            Warning::NullEncryption { sa: s } => {
                let mut v = sa(s);
                v.push(("field", json!("enc")));
                v
            }
            Warning::NoReplayWindow { sa: s } => {
                let mut v = sa(s);
                v.push(("field", json!("replay-window")));
                v
            }
            Warning::LegacyAlgorithm { sa: s, field, alg } => {
                let mut v = sa(s);
                v.extend([("field", json!(field)), ("alg", json!(alg))]);
                v
            }
            Warning::WeakKey { sa: s, field } => {
                let mut v = sa(s);
                v.push(("field", json!(field)));
                v
            }
            Warning::ShortPsk { connection, len } => vec![
                ("connection", json!(connection)),
                ("field", json!("secret")),
                ("bytes", json!(len)),
            ],
            Warning::WeakPsk { connection } => {
                vec![("connection", json!(connection)), ("field", json!("secret"))]
            }
        }
    }

    /// One sentence for a person: what is weak and what to do.
    pub fn message(&self) -> String {
        match self {
            Warning::KeysReadable { file, mode, holds } => format!(
                "{} (mode {mode:03o}) holds {holds} and other users can read it: chmod 600 it",
                file.display()
            ),
            Warning::NullEncryption { sa } => format!(
                "{}: enc = \"null\" sends the payload in clear (integrity only, RFC 2410); use \
                 aead = \"aes128gcm\"",
                sa.label()
            ),
            Warning::LegacyAlgorithm { sa, field, alg } => format!(
                "{}: {field} = \"{alg}\" is kept for old peers only (RFC 8221); use aead = \
                 \"aes128gcm\"",
                sa.label()
            ),
            Warning::NoReplayWindow { sa } => format!(
                "{}: replay-window = 0 accepts replayed packets (RFC 4303 §3.4.3); use 128",
                sa.label()
            ),
            Warning::WeakKey { sa, field } => format!(
                "{}: {field} has every byte the same, which is a placeholder, not a key; use \
                 random bytes (head -c 20 /dev/urandom | xxd -p)",
                sa.label()
            ),
            Warning::ShortPsk { connection, len } => format!(
                "connection {connection:?}: its PSK has {len} bytes, fewer than {MIN_PSK_LEN}; a \
                 short PSK can be guessed offline from one captured exchange (RFC 7296 §2.15)"
            ),
            Warning::WeakPsk { connection } => format!(
                "connection {connection:?}: its PSK has every byte the same; use random bytes"
            ),
        }
    }

    /// The warning as the control socket answers it: event, fields and message.
    pub fn to_json(&self) -> Value {
        let mut o = serde_json::Map::new();
        o.insert("event".into(), json!(self.event()));
        for (k, v) in self.fields() {
            o.insert(k.into(), v);
        }
        o.insert("message".into(), json!(self.message()));
        Value::Object(o)
    }

    /// Logs it at warn level.
    pub fn log(&self) {
        let fields = Value::Object(self.fields().into_iter().map(|(k, v)| (k.into(), v)).collect());
        tracing::warn!(detail = self.message(), fields = %fields, "{}", self.event());
    }
}

/// Logs every warning.
pub fn log_all(ws: &[Warning]) {
    ws.iter().for_each(Warning::log);
}

/// The warnings as a JSON array (the `warnings` of an `sa-add` answer).
pub fn to_json(ws: &[Warning]) -> Value {
    Value::Array(ws.iter().map(Warning::to_json).collect())
}

/// True for a key of two or more bytes that are all the same.
fn one_byte(k: &[u8]) -> bool {
    k.len() > 1 && k.iter().all(|b| *b == k[0])
}

/// The key without its trailing 4-byte salt (AEADs, RFC 4106 §8.1; GMAC, RFC 4543 §6): a
/// zero cipher key behind a random salt is as weak as an all-zero field.
fn without_salt(k: &[u8]) -> &[u8] {
    k.get(..k.len().saturating_sub(4)).unwrap_or(k)
}

/// The warnings one SA draws.
pub fn check_sa(s: &SaConf) -> Vec<Warning> {
    check_params(&SaId::of(s), &s.params, s.direction)
}

/// The warnings of the parameters of an SA, `id`, that goes in `direction`.
pub fn check_params(id: &SaId, p: &ipsec::SaParams, direction: Direction) -> Vec<Warning> {
    let id = || id.clone();
    let mut out = Vec::new();
    match p.protocol {
        Protocol::Esp(suite) => {
            match suite.encr {
                EncrAlg::Null => out.push(Warning::NullEncryption { sa: id() }),
                e if e.is_legacy() => {
                    out.push(Warning::LegacyAlgorithm { sa: id(), field: "enc", alg: e.name() })
                }
                _ => {}
            }
            if suite.integ.is_legacy() {
                let alg = suite.integ.name();
                out.push(Warning::LegacyAlgorithm { sa: id(), field: "auth", alg });
            }
            let (field, key) = match suite.encr {
                EncrAlg::Aead(_) => ("key", without_salt(&p.enc_key)),
                _ => ("enc-key", &p.enc_key[..]),
            };
            if one_byte(key) {
                out.push(Warning::WeakKey { sa: id(), field });
            }
            if one_byte(&p.auth_key) {
                out.push(Warning::WeakKey { sa: id(), field: "auth-key" });
            }
        }
        Protocol::Ah(integ) => {
            if integ.is_legacy() {
                out.push(Warning::LegacyAlgorithm { sa: id(), field: "auth", alg: integ.name() });
            }
            let key = match integ {
                IntegAlg::Aes128Gmac | IntegAlg::Aes256Gmac => without_salt(&p.auth_key),
                _ => &p.auth_key[..],
            };
            if one_byte(key) {
                out.push(Warning::WeakKey { sa: id(), field: "auth-key" });
            }
        }
    }
    // Only the receiver checks for replays (RFC 4303 §3.4.3): an outbound SA's window is unused.
    if direction == Direction::In && p.replay_window == 0 {
        out.push(Warning::NoReplayWindow { sa: id() });
    }
    out
}

/// The manually keyed Mobile IPv6 signalling SAs of the config (`sa-in`, `sa-out` of a
/// `[home-agent]` mobile node or of `[mobile-node]`), each with its name for the warnings.
fn mip6_manual(c: &NodeConfig) -> Vec<(SaId, &ipsec::SaParams, Direction)> {
    let mut keys: Vec<(String, &SignallingKeys)> = Vec::new();
    if let Some(h) = &c.home_agent {
        for m in &h.mobile_nodes {
            keys.push((format!("[home-agent] mobile node {}", m.home_address), &m.keys));
        }
    }
    if let Some(m) = &c.mobile_node {
        keys.push(("[mobile-node]".to_string(), &m.keys));
    }
    let mut out = Vec::new();
    for (who, k) in keys {
        if let Some((sa_in, sa_out)) = k.manual() {
            for (field, p, direction, dir) in
                [("sa-in", sa_in, Direction::In, "in"), ("sa-out", sa_out, Direction::Out, "out")]
            {
                let name = Some(format!("{who} {field}"));
                let id = SaId { name, spi: p.spi.to_string(), direction: dir };
                out.push((id, p, direction));
            }
        }
    }
    out
}

/// The warnings a loaded config draws, reading file modes from the file system.
pub fn check_config(c: &NodeConfig) -> Vec<Warning> {
    check_config_with(c, super::readable_by_others)
}

/// [`check_config`] with `readable(path)` giving a file's mode bits when group or others may
/// read it (tests give their own).
pub fn check_config_with(c: &NodeConfig, readable: impl Fn(&Path) -> Option<u32>) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut file = |path: &Path, holds: String| {
        if let Some(mode) = readable(path) {
            out.push(Warning::KeysReadable { file: path.to_path_buf(), mode, holds });
        }
    };
    let mip6 = mip6_manual(c);
    let mut in_config = Vec::new();
    if !c.sas.is_empty() {
        in_config.push("[[sa]] keys");
    }
    if !mip6.is_empty() {
        in_config.push("Mobile IPv6 sa-in/sa-out keys");
    }
    if c.has_secrets {
        in_config.push("[secrets] PSKs");
    }
    if !in_config.is_empty() {
        file(&c.file, in_config.join(", "));
    }
    for conn in &c.connections {
        if let Some(k) = &conn.local_key_file {
            file(k, format!("the private key of connection {:?} (local.key)", conn.name));
        }
    }
    if let Some(h) = &c.hip {
        file(&h.identity, "the HIP host identity ([hip] identity)".into());
    }
    for s in &c.sas {
        out.extend(check_sa(s));
    }
    for (id, p, direction) in &mip6 {
        out.extend(check_params(id, p, *direction));
    }
    for conn in &c.connections {
        if let AuthConf::Psk(psk) = &conn.auth {
            if psk.len() < MIN_PSK_LEN {
                out.push(Warning::ShortPsk { connection: conn.name.clone(), len: psk.len() });
            }
            if one_byte(psk) {
                out.push(Warning::WeakPsk { connection: conn.name.clone() });
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "warnings_tests.rs"]
mod tests;
