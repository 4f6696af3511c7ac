//! The control socket's language: one request per line, a word (`status`, `reload-filter`,
//! `monitor`) or a JSON object `{"op": ..., ...}`, read into a [`Request`] whose every field is
//! checked before the node acts on it, so a malformed request changes nothing and its error
//! names the field. SAs and policies take the SA-file and node-config field names
//! (docs/sa-file.md, docs/node-example.toml); the `hipsec sa` and `hipsec policy` commands
//! write these requests.
//!
//! | op | fields |
//! |---|---|
//! | `sa-add`, `sa-update` | `sas`: `[[sa]]` tables as JSON objects (`direction` required); `sa-add` also `succeeds`: the inbound SA a single new inbound SA succeeds |
//! | `sa-del` | `sas`: `{direction, spi, proto?, dst?}` |
//! | `sa-list`, `policy-list` | — |
//! | `sa-switch` | `old`: `{spi, dst?, proto?}` outbound; `sa`: the new outbound SA |
//! | `sa-retire` | `spi`, `proto?`, `grace-ms` (inbound SA to remove after the grace period) |
//! | `sa-rekey` | `old-in`, `old-out` (refs), `sas`: new inbound and outbound SA, `grace-ms?` |
//! | `policy-add`, `policy-update` | `policies`: `[[policy]]` tables with `id?`, `priority?` |
//! | `policy-del` | `ids` |
//! | `initiate`, `terminate` | `connection`: a `[[connection]]` name |
//! | `rekey` | `connection`, `ike?`: true to rekey the IKE SA instead of the CHILD SA |
//! | `ike-keys` | — (tshark key lines; only on a node started with `--debug-export-ike-keys`) |
//! | `hip-close` | `hit` (end the HIP association with that HIT: CLOSE, RFC 7401 §6.14) |
//! | `hip-keys` | — (tshark esp_sa lines; only on a node started with `--debug-export-hip-keys`) |

use crate::config::ConfigError;
use crate::config::policy::{self, RuntimePolicy};
use crate::config::sa::{self, Direction, SaConf, SaRef};
use serde_json::{Map, Value};

/// Largest request line accepted (10,000 SAs with keys fit well below it).
pub const MAX_REQUEST: usize = 32 << 20;

/// Default grace period before an old inbound SA is removed after a rekey.
pub const DEFAULT_GRACE_MS: u64 = 1000;

/// A checked request.
#[derive(Debug, Clone)]
pub enum Request {
    /// The status document.
    Status,
    /// Re-read the filter rules.
    ReloadFilter,
    /// Stream events as JSON lines until the client goes.
    Monitor,
    /// Install SAs (`replace`: replace existing ones of the same key).
    SaAdd {
        /// The SAs.
        sas: Vec<SaConf>,
        /// `sa-update`.
        replace: bool,
        /// `succeeds`: the one inbound SA given succeeds this one (make-before-break: it joins
        /// every policy that admits the old one).
        succeeds: Option<SaRef>,
    },
    /// Remove SAs.
    SaDel {
        /// Inbound SAs.
        inbound: Vec<SaRef>,
        /// Outbound SAs.
        outbound: Vec<SaRef>,
    },
    /// List SAs (never keys).
    SaList,
    /// Switch outbound from `old` to `new` (make-before-break, outbound half).
    SaSwitch {
        /// The SA now in use.
        old: SaRef,
        /// Its successor.
        new: Box<SaConf>,
    },
    /// Remove an inbound SA after a grace period.
    SaRetire {
        /// Which.
        sa: SaRef,
        /// Grace period.
        grace_ms: u64,
    },
    /// Make-before-break rekey of an SA pair on this node.
    SaRekey {
        /// Inbound SA to retire.
        old_in: SaRef,
        /// Outbound SA to replace.
        old_out: SaRef,
        /// New inbound SA.
        new_in: Box<SaConf>,
        /// New outbound SA.
        new_out: Box<SaConf>,
        /// Grace period of the old inbound SA.
        grace_ms: u64,
    },
    /// Install policies (`replace`: each must exist).
    PolicyAdd {
        /// The policies.
        policies: Vec<RuntimePolicy>,
        /// `policy-update`.
        replace: bool,
    },
    /// Remove policies.
    PolicyDel {
        /// Their ids.
        ids: Vec<u64>,
    },
    /// List policies.
    PolicyList,
    /// Start an IKE connection now.
    Initiate {
        /// Its name.
        connection: String,
    },
    /// Delete an IKE connection's SAs.
    Terminate {
        /// Its name.
        connection: String,
        /// Only this CHILD SA (the IKE SA stays).
        child: Option<String>,
    },
    /// Rekey an IKE connection's CHILD SA (or IKE SA) now.
    Rekey {
        /// Its name.
        connection: String,
        /// This CHILD SA (default: the connection's first).
        child: Option<String>,
        /// The IKE SA rather than the CHILD SA.
        ike: bool,
    },
    /// tshark's IKE key table (debug nodes only).
    IkeKeys,
    /// End the HIP association with this HIT (CLOSE).
    HipClose {
        /// The peer's HIT.
        hit: hip::HostIdentityTag,
    },
    /// The ESP keys of the HIP associations as tshark `esp_sa` lines (debug switch only).
    HipKeys,
    /// Rekey the ESP pair with this HIT by UPDATE (RFC 7402 §6.8).
    HipRekey {
        /// The peer's HIT.
        hit: hip::HostIdentityTag,
    },
}

/// A request that could not be read: which field, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if field.is_empty() { String::new() } else { format!("field \"{field}\": ") })]
pub struct CommandError {
    /// The field (`sas[2].key`), or empty for the request as a whole.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn err(field: impl Into<String>, message: impl Into<String>) -> CommandError {
    CommandError { field: field.into(), message: message.into() }
}

/// Reads one request line.
pub fn parse(line: &[u8]) -> Result<Request, CommandError> {
    let text = std::str::from_utf8(line).map_err(|_| err("", "the request is not UTF-8"))?;
    match text.trim() {
        "status" => return Ok(Request::Status),
        "reload-filter" => return Ok(Request::ReloadFilter),
        "monitor" => return Ok(Request::Monitor),
        _ => {}
    }
    let v: Value = serde_json::from_str(text).map_err(|e| {
        err("", format!("not a command word (status, reload-filter, monitor) nor JSON: {e}"))
    })?;
    let o = v.as_object().ok_or_else(|| err("", "want a JSON object {\"op\": ...}"))?;
    let op = o.get("op").and_then(Value::as_str).ok_or_else(|| err("op", "missing"))?;
    let allowed: &[&str] = match op {
        "status" | "reload-filter" | "monitor" | "sa-list" | "policy-list" | "ike-keys"
        | "hip-keys" => &[],
        "initiate" => &["connection"],
        "terminate" => &["connection", "child"],
        "hip-close" | "hip-rekey" => &["hit"],
        "rekey" => &["connection", "child", "ike"],
        "sa-add" => &["sas", "succeeds"],
        "sa-update" | "sa-del" => &["sas"],
        "sa-switch" => &["old", "sa"],
        "sa-retire" => &["spi", "proto", "grace-ms"],
        "sa-rekey" => &["old-in", "old-out", "sas", "grace-ms"],
        "policy-add" | "policy-update" => &["policies"],
        "policy-del" => &["ids"],
        other => return Err(err("op", format!("unknown op {other:?}"))),
    };
    if let Some(k) = o.keys().find(|k| *k != "op" && !allowed.contains(&k.as_str())) {
        return Err(err(k.clone(), format!("not a field of {op}")));
    }
    Ok(match op {
        "status" => Request::Status,
        "reload-filter" => Request::ReloadFilter,
        "monitor" => Request::Monitor,
        "sa-list" => Request::SaList,
        "policy-list" => Request::PolicyList,
        "ike-keys" => Request::IkeKeys,
        "hip-keys" => Request::HipKeys,
        "hip-close" | "hip-rekey" => {
            let hit = o
                .get("hit")
                .and_then(Value::as_str)
                .ok_or_else(|| err("hit", "want a HIT"))?
                .parse()
                .map_err(|e: String| err("hit", e))?;
            if op == "hip-close" { Request::HipClose { hit } } else { Request::HipRekey { hit } }
        }
        "initiate" | "terminate" | "rekey" => {
            let connection = o
                .get("connection")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| err("connection", "want a connection name"))?
                .to_string();
            let child = match o.get("child") {
                None | Some(Value::Null) => None,
                Some(v) => Some(
                    v.as_str()
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| err("child", "want a CHILD SA name"))?
                        .to_string(),
                ),
            };
            match op {
                "initiate" => Request::Initiate { connection },
                "terminate" => Request::Terminate { connection, child },
                _ => {
                    let ike = match o.get("ike") {
                        None => false,
                        Some(v) => v.as_bool().ok_or_else(|| err("ike", "want true or false"))?,
                    };
                    if ike && child.is_some() {
                        return Err(err(
                            "child",
                            "not with \"ike\": true (the IKE SA has no child name)",
                        ));
                    }
                    Request::Rekey { connection, child, ike }
                }
            }
        }
        "sa-add" | "sa-update" => {
            let sas: Vec<SaConf> = array(o, "sas")?
                .iter()
                .enumerate()
                .map(|(i, s)| one_sa(s, &format!("sas[{i}]")))
                .collect::<Result<_, _>>()?;
            let succeeds = match o.get("succeeds") {
                None => None,
                Some(v) => {
                    if sas.len() != 1 || sas[0].direction != Direction::In {
                        return Err(err("succeeds", "takes exactly one new inbound SA in sas"));
                    }
                    Some(sa_ref(v, "succeeds")?)
                }
            };
            Request::SaAdd { sas, replace: op == "sa-update", succeeds }
        }
        "sa-del" => {
            let (mut inbound, mut outbound) = (Vec::new(), Vec::new());
            for (i, s) in array(o, "sas")?.iter().enumerate() {
                let at = format!("sas[{i}]");
                let mut s = s.as_object().cloned().ok_or_else(|| err(&at, "want an object"))?;
                let dir = s.remove("direction");
                let r = sa_ref(&Value::Object(s), &at)?;
                match dir.as_ref().and_then(Value::as_str) {
                    Some("in") => inbound.push(r),
                    Some("out") => outbound.push(r),
                    _ => return Err(err(format!("{at}.direction"), "want \"in\" or \"out\"")),
                }
            }
            Request::SaDel { inbound, outbound }
        }
        "sa-switch" => {
            let old = sa_ref(o.get("old").unwrap_or(&Value::Null), "old")?;
            let new = one_sa(o.get("sa").unwrap_or(&Value::Null), "sa")?;
            if new.direction != Direction::Out {
                return Err(err("sa.direction", "the new SA of a switch is outbound"));
            }
            Request::SaSwitch { old, new: Box::new(new) }
        }
        "sa-retire" => {
            let mut r = Map::new();
            for k in ["spi", "proto"] {
                if let Some(v) = o.get(k) {
                    r.insert(k.to_string(), v.clone());
                }
            }
            Request::SaRetire { sa: sa_ref(&Value::Object(r), "")?, grace_ms: grace(o)? }
        }
        "sa-rekey" => {
            let old_in = sa_ref(o.get("old-in").unwrap_or(&Value::Null), "old-in")?;
            let old_out = sa_ref(o.get("old-out").unwrap_or(&Value::Null), "old-out")?;
            let sas = array(o, "sas")?;
            let mut new: Vec<SaConf> = sas
                .iter()
                .enumerate()
                .map(|(i, s)| one_sa(s, &format!("sas[{i}]")))
                .collect::<Result<_, _>>()?;
            let pos = |d| new.iter().position(|s| s.direction == d);
            let (Some(i), Some(_), 2) = (pos(Direction::In), pos(Direction::Out), new.len()) else {
                return Err(err("sas", "want the new inbound and the new outbound SA"));
            };
            let new_in = new.remove(i);
            let new_out = new.remove(0);
            Request::SaRekey {
                old_in,
                old_out,
                new_in: Box::new(new_in),
                new_out: Box::new(new_out),
                grace_ms: grace(o)?,
            }
        }
        "policy-add" | "policy-update" => {
            let mut policies = Vec::new();
            for (i, p) in array(o, "policies")?.iter().enumerate() {
                let at = format!("policies[{i}]");
                let text = as_toml("policy", p, &at)?;
                let mut v = policy::parse_runtime("request", &text).map_err(|e| named(&at, e))?;
                policies.append(&mut v);
            }
            let replace = op == "policy-update";
            if let Some(i) = policies.iter().position(|p| replace && p.id.is_none()) {
                return Err(err(format!("policies[{i}].id"), "policy-update names the policy"));
            }
            Request::PolicyAdd { policies, replace }
        }
        "policy-del" => {
            let ids = array(o, "ids")?
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_u64()
                        .filter(|&id| id > 0)
                        .ok_or_else(|| err(format!("ids[{i}]"), "want a policy id 1.."))
                })
                .collect::<Result<_, _>>()?;
            Request::PolicyDel { ids }
        }
        _ => return Err(err("op", "unknown")),
    })
}

fn array<'a>(o: &'a Map<String, Value>, k: &str) -> Result<&'a Vec<Value>, CommandError> {
    match o.get(k) {
        Some(Value::Array(a)) if !a.is_empty() => Ok(a),
        Some(Value::Array(_)) => Err(err(k, "empty")),
        Some(_) => Err(err(k, "want an array")),
        None => Err(err(k, "missing")),
    }
}

fn grace(o: &Map<String, Value>) -> Result<u64, CommandError> {
    match o.get("grace-ms") {
        None => Ok(DEFAULT_GRACE_MS),
        Some(v) => v
            .as_u64()
            .filter(|&g| g <= 3_600_000)
            .ok_or_else(|| err("grace-ms", "want milliseconds 0..=3600000")),
    }
}

/// A JSON object as one TOML array-of-tables entry `[[table]]`.
fn as_toml(table: &str, v: &Value, at: &str) -> Result<String, CommandError> {
    if !v.is_object() {
        return Err(err(at, "want an object"));
    }
    let t = toml::Value::try_from(v).map_err(|e| err(at, format!("not representable: {e}")))?;
    let mut doc = toml::Table::new();
    doc.insert(table.to_string(), toml::Value::Array(vec![t]));
    toml::to_string(&doc).map_err(|e| err(at, e.to_string()))
}

/// A config error about one object of a request, named by its place (`sas[3].key`).
fn named(at: &str, e: ConfigError) -> CommandError {
    match e {
        ConfigError::Field { field, problem, .. } => {
            err(format!("{at}.{field}"), problem.to_string())
        }
        ConfigError::Toml { message, .. } => err(at, message),
        other => err(at, other.to_string()),
    }
}

fn one_sa(v: &Value, at: &str) -> Result<SaConf, CommandError> {
    let text = as_toml("sa", v, at)?;
    let mut v = sa::parse_runtime("request", &text).map_err(|e| named(at, e))?;
    v.pop().ok_or_else(|| err(at, "no SA"))
}

/// An SA reference: an SPI, or `{spi, dst?, proto?}`.
fn sa_ref(v: &Value, at: &str) -> Result<SaRef, CommandError> {
    let t = match v {
        Value::Object(_) | Value::String(_) | Value::Number(_) => {
            toml::Value::try_from(v).map_err(|e| err(at, e.to_string()))?
        }
        _ => return Err(err(at, "want an SPI or {spi, dst, proto}")),
    };
    let mut doc = toml::Table::new();
    doc.insert("r".into(), t);
    let text = toml::to_string(&doc).map_err(|e| err(at, e.to_string()))?;
    sa::parse_ref("request", &text).map_err(|e| match e {
        ConfigError::Field { problem, .. } => err(at, problem.to_string()),
        other => err(at, other.to_string()),
    })
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
