//! The node's log, through `tracing`: one line per event on stderr, as text for people
//! (`2025-01-02T03:04:05.678Z  INFO ike{conn=gw id=1 peer=192.0.2.2:500}: ike-sa-up spi_i=…`)
//! or as one JSON object per line for log shippers (`tracing-subscriber`'s JSON: `timestamp`,
//! `level`, `message` — the event's name — its fields, and `spans`, the spans it happened in,
//! outermost first).
//!
//! The keying code opens a span per IKE SA (`ike`), CHILD SA (`child`), HIP association
//! (`hip`) and Mobile IPv6 binding (`binding`), so that one peer's story can be read alone,
//! in order, with a span filter: `--log 'warn,[ike{conn=gw}]=debug'`. Which events are
//! written is a `RUST_LOG`-style filter (`tracing_subscriber::EnvFilter`) taken from, first
//! to last: `hipsec run --log`, the `RUST_LOG` environment variable, `[log] filter`, `[log]
//! level`. Chosen once per process by [`init`]; until then (and in unit tests) nothing is
//! written.
//!
//! Events are rare (start, stop, SA lifetimes, exchanges, a refused offload); nothing here is
//! called per packet.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// The lowest level written when no filter is given (`[log] level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Level {
    /// Every step of every exchange, and why a packet of the control plane was refused.
    Debug,
    /// Normal operation (start, stop, an SA's soft lifetime).
    #[default]
    Info,
    /// Something the operator should look at (an SA's hard lifetime, a refused offload).
    Warn,
    /// Only failures.
    Error,
}

impl Level {
    /// From its config name (`debug`, `info`, `warn`, `error`).
    pub fn from_name(s: &str) -> Option<Level> {
        match s {
            "debug" => Some(Level::Debug),
            "info" => Some(Level::Info),
            "warn" => Some(Level::Warn),
            "error" => Some(Level::Error),
            _ => None,
        }
    }

    /// Its name, as written in the config and in a filter.
    pub fn name(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// How lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `<time> <LEVEL> <spans>: <event> key=value ...`, for people.
    #[default]
    Text,
    /// One JSON object per line, for machines.
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

/// An event at a level chosen at run time (`tracing`'s macros want a constant one):
/// `event_at!(level, spi = %spi, "sa-expired")`.
macro_rules! event_at {
    ($level:expr, $($rest:tt)+) => {
        match $level {
            $crate::log::Level::Debug => ::tracing::debug!($($rest)+),
            $crate::log::Level::Info => ::tracing::info!($($rest)+),
            $crate::log::Level::Warn => ::tracing::warn!($($rest)+),
            $crate::log::Level::Error => ::tracing::error!($($rest)+),
        }
    };
}
pub(crate) use event_at;

/// The `[log]` section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogConf {
    /// Line format.
    pub format: LogFormat,
    /// Lowest level written, when no filter is given.
    pub level: Level,
    /// A `RUST_LOG`-style filter (`info,[ike{conn=gw}]=debug`); overrides `level`.
    pub filter: Option<String>,
    /// The filter given on the command line (`hipsec run --log`); overrides the others.
    pub command_line: Option<String>,
}

/// Checks a filter as [`init`] would read it; the error names what is wrong.
pub fn check_filter(s: &str) -> Result<(), String> {
    EnvFilter::builder().parse(s).map(|_| ()).map_err(|e| format!("{s:?}: {e}"))
}

/// The filter in force: the command line's, else `RUST_LOG`, else the config's.
pub fn filter_of(conf: &LogConf) -> String {
    let env = std::env::var("RUST_LOG").ok().filter(|s| !s.trim().is_empty());
    conf.command_line
        .clone()
        .or(env)
        .or_else(|| conf.filter.clone())
        .unwrap_or_else(|| conf.level.name().to_string())
}

/// Installs the process's logger; only the first call counts (a process runs one node): later
/// ones return `Ok(false)` and change nothing. A bad filter is refused with its reason.
pub fn init(conf: &LogConf) -> Result<bool, String> {
    let spec = filter_of(conf);
    let filter =
        EnvFilter::builder().parse(&spec).map_err(|e| format!("log filter {spec:?}: {e}"))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_timer(Millis)
        .with_target(false)
        .with_ansi(false);
    let r = match conf.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .try_init(),
    };
    Ok(r.is_ok())
}

/// Timestamps as [`rfc3339_ms`].
#[derive(Debug, Clone, Copy)]
struct Millis;

impl FormatTime for Millis {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        w.write_str(&rfc3339_ms(SystemTime::now()))
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
    fn names_and_levels() {
        assert!(Level::Debug < Level::Info && Level::Info < Level::Warn);
        for l in [Level::Debug, Level::Info, Level::Warn, Level::Error] {
            assert_eq!(Level::from_name(l.name()), Some(l));
        }
        assert_eq!(Level::from_name("trace"), None);
        assert_eq!(LogFormat::from_name("json"), Some(LogFormat::Json));
        assert_eq!(LogFormat::from_name("JSON"), None);
    }

    #[test]
    fn filters() {
        for good in ["info", "warn,[ike{conn=gw}]=debug", "node::keying::hip=debug", "off"] {
            assert_eq!(check_filter(good), Ok(()), "{good}");
        }
        let e = check_filter("info,[ike{conn=gw]=debug").unwrap_err();
        assert!(e.contains("ike{conn=gw"), "{e}");
        let e = check_filter("node=loud").unwrap_err();
        assert!(e.contains("loud"), "{e}");
        // The command line comes before the config; without either, the level.
        let mut conf = LogConf { filter: Some("debug".into()), ..LogConf::default() };
        if std::env::var_os("RUST_LOG").is_none() {
            assert_eq!(filter_of(&conf), "debug");
            assert_eq!(filter_of(&LogConf::default()), "info");
        }
        conf.command_line = Some("warn".into());
        assert_eq!(filter_of(&conf), "warn");
    }
}
