//! The node's log: one line per event on stderr, as text (`hipsec-node: up interface=hipsec0
//! mtu=1420`) or as one JSON object per line (`{"ts":"2025-01-02T03:04:05.678Z","level":"info",
//! "event":"up",...}`) for log shippers. Chosen once per process by `[log]` in the config
//! (`crate::config`); until then, and in tests, text at level info.
//!
//! Events are rare (start, stop, SA lifetimes, a refused offload); nothing here is called per
//! packet, so a line is built in a `String` and written with one `write_all` (lines of two
//! threads never interleave).

use serde_json::Value;
use std::io::Write;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// How important an event is; events below the configured level are not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Level {
    /// Detail for finding a problem (a refused metrics request).
    Debug,
    /// Normal operation (start, stop, an SA's soft lifetime).
    #[default]
    Info,
    /// Something the operator should look at (an SA's hard lifetime, a refused offload).
    Warn,
}

impl Level {
    /// From its config name (`debug`, `info`, `warn`).
    pub fn from_name(s: &str) -> Option<Level> {
        match s {
            "debug" => Some(Level::Debug),
            "info" => Some(Level::Info),
            "warn" => Some(Level::Warn),
            _ => None,
        }
    }

    /// Its name, as written in the config and in JSON lines.
    pub fn name(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
        }
    }
}

/// How lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `hipsec-node: <event> key=value ...`, for people.
    #[default]
    Text,
    /// One JSON object per line with `ts`, `level`, `event` and the fields, for machines.
    Json,
}

impl LogFormat {
    /// From its config name (`text`, `json`).
    pub fn from_name(s: &str) -> Option<LogFormat> {
        match s {
            "text" => Some(LogFormat::Text),
            "json" => Some(LogFormat::Json),
            _ => None,
        }
    }
}

/// The `[log]` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogConf {
    /// Line format.
    pub format: LogFormat,
    /// Lowest level written.
    pub level: Level,
}

static LOGGER: OnceLock<LogConf> = OnceLock::new();

/// Sets the process's log configuration; only the first call counts (a process runs one node),
/// later ones return false and change nothing.
pub fn init(conf: LogConf) -> bool {
    LOGGER.set(conf).is_ok()
}

fn conf() -> LogConf {
    LOGGER.get().copied().unwrap_or_default()
}

/// Whether an event of `level` would be written (lets callers skip building fields).
pub fn enabled(level: Level) -> bool {
    level >= conf().level
}

/// Writes one event to stderr if its level is enabled. Field names must not be `ts`, `level`
/// or `event` (they would repeat those keys in a JSON line).
pub fn event(level: Level, event: &str, fields: &[(&str, Value)]) {
    let c = conf();
    if level < c.level {
        return;
    }
    let mut line = format_line(c.format, SystemTime::now(), level, event, fields);
    line.push('\n');
    // A daemon whose stderr is gone keeps running: unlike eprintln!, a failed write is ignored.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Logs an event with `name => value` fields (any `Serialize` value):
/// `log_event!(Level::Info, "up", "interface" => name, "mtu" => mtu)`.
macro_rules! log_event {
    ($level:expr, $event:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if $crate::log::enabled($level) {
            $crate::log::event(
                $level,
                $event,
                &[$(($k, ::serde_json::to_value(&$v).unwrap_or(::serde_json::Value::Null))),*],
            );
        }
    };
}
pub(crate) use log_event;

/// One line without its newline, in `format`, stamped `now`.
pub fn format_line(
    format: LogFormat,
    now: SystemTime,
    level: Level,
    event: &str,
    fields: &[(&str, Value)],
) -> String {
    match format {
        LogFormat::Text => {
            let mut s = format!("hipsec-node: {event}");
            for (k, v) in fields {
                s.push(' ');
                s.push_str(k);
                s.push('=');
                s.push_str(&text_value(v));
            }
            s
        }
        LogFormat::Json => {
            // Written key by key so that ts, level and event come first whatever the map order.
            let q = |s: &str| Value::from(s).to_string();
            let mut s = format!(
                "{{\"ts\":{},\"level\":{},\"event\":{}",
                q(&rfc3339_ms(now)),
                q(level.name()),
                q(event)
            );
            for (k, v) in fields {
                s.push(',');
                s.push_str(&q(k));
                s.push(':');
                s.push_str(&v.to_string());
            }
            s.push('}');
            s
        }
    }
}

/// A field value in a text line: bare when that is unambiguous, else a JSON string literal
/// (so a value never hides a `key=` or a line break).
fn text_value(v: &Value) -> String {
    match v {
        Value::String(s)
            if !s.is_empty()
                && !s
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '=') =>
        {
            s.clone()
        }
        other => other.to_string(),
    }
}

/// `now` as an RFC 3339 (§5.6) UTC timestamp with milliseconds: `2025-01-02T03:04:05.678Z`.
/// Times before 1970 are written as the epoch.
pub fn rfc3339_ms(now: SystemTime) -> String {
    let d = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// (year, month, day) of the proleptic Gregorian calendar, `days` after 1970-01-01: Howard
/// Hinnant's `civil_from_days` ("chrono-Compatible Low-Level Date Algorithms"), unsigned since
/// `days` is never negative here.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z / 146_097;
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365], from March 1st
    let mp = (5 * doy + 2) / 153; // [0, 11], March is 0
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn at(secs: u64, ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(ms)
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339_ms(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // date -u -d @951782400: the leap day of a year divisible by 400.
        assert_eq!(rfc3339_ms(at(951_782_400, 5)), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339_ms(at(951_868_799, 999)), "2000-02-29T23:59:59.999Z");
        assert_eq!(rfc3339_ms(at(1_709_210_096, 120)), "2024-02-29T12:34:56.120Z");
        assert_eq!(rfc3339_ms(at(4_102_444_799, 0)), "2099-12-31T23:59:59.000Z");
        assert_eq!(rfc3339_ms(at(4_107_542_400, 0)), "2100-03-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(UNIX_EPOCH - Duration::from_secs(5)), "1970-01-01T00:00:00.000Z");
        // Every day for 500 years: the day after a date is the next date.
        let mut prev = civil_from_days(0);
        for d in 1..500 * 366 {
            let c = civil_from_days(d);
            let next_day = (prev.0, prev.1, prev.2 + 1) == c;
            let next_month = (prev.0, prev.1 + 1, 1) == c && prev.2 >= 28;
            let next_year = (prev.0 + 1, 1, 1) == c && (prev.1, prev.2) == (12, 31);
            assert!(next_day || next_month || next_year, "{prev:?} -> {c:?}");
            prev = c;
        }
    }

    #[test]
    fn text_lines() {
        let f = [
            ("interface", json!("hipsec0")),
            ("mtu", json!(1420)),
            ("offload", json!(true)),
            ("error", json!("Operation not permitted (os error 1)")),
            ("odd", json!("a=b")),
            ("empty", json!("")),
        ];
        let l = format_line(LogFormat::Text, UNIX_EPOCH, Level::Info, "up", &f);
        assert_eq!(
            l,
            "hipsec-node: up interface=hipsec0 mtu=1420 offload=true \
             error=\"Operation not permitted (os error 1)\" odd=\"a=b\" empty=\"\""
        );
        let l = format_line(LogFormat::Text, UNIX_EPOCH, Level::Info, "stopped", &[]);
        assert_eq!(l, "hipsec-node: stopped");
    }

    #[test]
    fn json_lines() {
        let f = [("spi", json!("0x00001001")), ("limit", json!("bytes")), ("n", json!(3))];
        let l = format_line(LogFormat::Json, at(1, 2), Level::Warn, "sa-hard-expired", &f);
        assert!(l.starts_with("{\"ts\":\"1970-01-01T00:00:01.002Z\",\"level\":\"warn\""), "{l}");
        let v: Value = serde_json::from_str(&l).unwrap_or_default();
        assert_eq!(v["event"], "sa-hard-expired");
        assert_eq!(v["spi"], "0x00001001");
        assert_eq!(v["n"], 3);
        let nasty = [("msg", json!("line\nbreak \"quoted\" \\"))];
        let l = format_line(LogFormat::Json, UNIX_EPOCH, Level::Info, "ev\"", &nasty);
        assert!(!l.contains('\n'));
        let v: Value = serde_json::from_str(&l).unwrap_or_default();
        assert_eq!((v["event"].as_str(), v["msg"].as_str()), (Some("ev\""), nasty[0].1.as_str()));
    }

    #[test]
    fn names_and_levels() {
        assert!(Level::Debug < Level::Info && Level::Info < Level::Warn);
        for l in [Level::Debug, Level::Info, Level::Warn] {
            assert_eq!(Level::from_name(l.name()), Some(l));
        }
        assert_eq!(Level::from_name("error"), None);
        assert_eq!(LogFormat::from_name("json"), Some(LogFormat::Json));
        assert_eq!(LogFormat::from_name("JSON"), None);
        // Not initialised in unit tests: text at info.
        assert!(enabled(Level::Info) && !enabled(Level::Debug));
    }
}
