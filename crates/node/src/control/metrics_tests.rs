//! Tests of the metrics endpoint: the exposition text, checked line by line against the
//! OpenMetrics text format, and the HTTP request routing, which must never panic on client
//! bytes.

use super::*;
use crate::control::status;
use crate::datapath::counters::NodeCounters;
use crate::datapath::snapshot;
use ipsec::Time;
use serde_json::json;
use std::collections::{HashMap, HashSet};

const EXAMPLE: &str = include_str!("../../../../docs/node-example.toml");

/// A status document as the control thread makes it: two workers (out and in) over the
/// example's engine, with some traffic counted.
fn example_status() -> Value {
    let c = crate::config::parse("example.toml", EXAMPLE).unwrap_or_else(|e| panic!("{e}"));
    let (out, _) = crate::keying::manual::build_engine_for(&c, Time(0), true, false, 0)
        .unwrap_or_else(|e| panic!("{e}"));
    let (inb, _) = crate::keying::manual::build_engine_for(&c, Time(0), false, true, 0)
        .unwrap_or_else(|e| panic!("{e}"));
    let counters = NodeCounters { tun_rx: 7, net_tx: 7, ..Default::default() };
    let mut w0 = snapshot::merge(&[snapshot::engine_json(&out, &counters, Time(1))]);
    w0["role"] = json!("out");
    w0["cpu_s"] = json!(0.25);
    let mut w1 = snapshot::merge(&[snapshot::engine_json(&inb, &NodeCounters::default(), Time(1))]);
    w1["role"] = json!("in");
    w1["cpu_s"] = json!(f64::NAN); // null: no CPU time could be read
    status::status_value(&[w0, w1], Time(2_500_000))
}

fn is_metric_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Parses a sample line `name{l="v",...} value` by the text format's grammar; label values
/// are unescaped. Panics with the line on any deviation.
fn parse_sample(line: &str) -> (String, Vec<(String, String)>, f64) {
    let end = line.find(['{', ' ']).unwrap_or_else(|| panic!("no value: {line:?}"));
    let name = &line[..end];
    assert!(is_metric_name(name), "bad name: {line:?}");
    let mut rest = &line[end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            let eq = rest.find('=').unwrap_or_else(|| panic!("label without '=': {line:?}"));
            let lname = &rest[..eq];
            assert!(is_label_name(lname), "bad label name {lname:?}: {line:?}");
            rest = rest[eq + 1..].strip_prefix('"').unwrap_or_else(|| panic!("{line:?}"));
            let mut value = String::new();
            let mut chars = rest.char_indices();
            let close = loop {
                match chars.next() {
                    Some((_, '\\')) => match chars.next() {
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, 'n')) => value.push('\n'),
                        other => panic!("bad escape {other:?}: {line:?}"),
                    },
                    Some((i, '"')) => break i,
                    Some((_, '\n')) => panic!("raw line break: {line:?}"),
                    Some((_, ch)) => value.push(ch),
                    None => panic!("unterminated label value: {line:?}"),
                }
            };
            labels.push((lname.to_string(), value));
            rest = &rest[close + 1..];
            if let Some(r) = rest.strip_prefix(',') {
                rest = r;
            } else {
                rest = rest.strip_prefix('}').unwrap_or_else(|| panic!("{line:?}"));
                break;
            }
        }
    }
    let v = rest.strip_prefix(' ').unwrap_or_else(|| panic!("no space before value: {line:?}"));
    let value = match v {
        "NaN" => f64::NAN,
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().unwrap_or_else(|_| panic!("bad value {v:?}: {line:?}")),
    };
    (name.to_string(), labels, value)
}

/// Checks the whole text against the OpenMetrics text format: HELP and TYPE once per family,
/// before its samples; samples of a family together; a counter family's samples end in
/// `_total`; no series twice; `# EOF` last. Returns the samples by `name{labels}` as written.
fn check_format(text: &str) -> HashMap<String, f64> {
    let body =
        text.strip_suffix("# EOF\n").unwrap_or_else(|| panic!("no # EOF at the end: {text}"));
    assert!(body.is_empty() || body.ends_with('\n'), "the last line must end in a line break");
    let mut types: HashMap<String, String> = HashMap::new();
    let mut helps: HashSet<String> = HashSet::new();
    let mut done: HashSet<String> = HashSet::new();
    let mut current = String::new();
    let mut samples = HashMap::new();
    for line in body.lines() {
        if let Some(r) = line.strip_prefix("# HELP ") {
            let (name, help) = r.split_once(' ').unwrap_or_else(|| panic!("{line:?}"));
            assert!(is_metric_name(name) && !help.trim().is_empty(), "{line:?}");
            assert!(!name.ends_with("_total"), "family named like a sample: {line:?}");
            assert!(helps.insert(name.to_string()), "HELP twice: {line:?}");
            assert!(!types.contains_key(name), "HELP after TYPE: {line:?}");
        } else if let Some(r) = line.strip_prefix("# TYPE ") {
            let (name, kind) = r.split_once(' ').unwrap_or_else(|| panic!("{line:?}"));
            assert!(is_metric_name(name), "{line:?}");
            assert!(["counter", "gauge"].contains(&kind), "{line:?}");
            assert!(helps.contains(name), "TYPE without HELP: {line:?}");
            assert!(types.insert(name.to_string(), kind.to_string()).is_none(), "{line:?}");
            done.insert(std::mem::replace(&mut current, name.to_string()));
        } else {
            assert!(!line.starts_with('#') && !line.is_empty(), "stray line {line:?}");
            let (name, labels, value) = parse_sample(line);
            let family = match types.get(&current).map(String::as_str) {
                Some("counter") => name
                    .strip_suffix("_total")
                    .unwrap_or_else(|| panic!("counter sample without _total: {line:?}")),
                _ => name.as_str(),
            };
            assert_eq!(family, current, "sample outside its family: {line:?}");
            assert!(!done.contains(family), "family split: {line:?}");
            let series = line.rsplit_once(' ').map_or("", |x| x.0).to_string();
            let mut keys: Vec<_> = labels.iter().map(|l| &l.0).collect();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), labels.len(), "label twice: {line:?}");
            assert!(samples.insert(series, value).is_none(), "series twice: {line:?}");
        }
    }
    samples
}

#[test]
fn render_example_status() {
    let text = render(&example_status());
    let s = check_format(&text);
    assert_eq!(s.get("hipsec_up"), Some(&1.0));
    assert_eq!(s.get("hipsec_uptime_seconds"), Some(&2.5));
    for r in ipsec::DropReason::ALL {
        let key = format!("hipsec_drops_total{{reason=\"{}\"}}", r.name());
        assert_eq!(s.get(&key), Some(&0.0), "{key}");
    }
    for (f, _) in NodeCounters::HELP {
        assert!(s.contains_key(&format!("hipsec_node_{f}_total")), "{f}");
    }
    assert_eq!(s.get("hipsec_node_tun_rx_total"), Some(&7.0));
    for k in ["protected", "decapsulated", "bypassed"] {
        assert_eq!(s.get(&format!("hipsec_engine_{k}_total")), Some(&0.0), "{k}");
    }
    let sa = "{spi=\"0x00001001\",direction=\"out\",proto=\"esp\"}";
    assert_eq!(s.get(&format!("hipsec_sa_bytes_total{sa}")), Some(&0.0));
    assert_eq!(s.get(&format!("hipsec_sa_packets_total{sa}")), Some(&0.0));
    assert_eq!(s.get(&format!("hipsec_sa_expired{sa}")), Some(&0.0));
    let sa_in = "{spi=\"0x00002001\",direction=\"in\",proto=\"esp\"}";
    assert!(s.contains_key(&format!("hipsec_sa_bytes_total{sa_in}")));
    assert_eq!(s.get("hipsec_worker_cpu_seconds_total{worker=\"0\",role=\"out\"}"), Some(&0.25));
    // Worker 1 has no CPU time: no sample rather than a made-up one.
    assert!(!text.contains("worker=\"1\""), "{text}");
    // Node counters carry their doc comment as help.
    assert!(text.contains("# HELP hipsec_node_runts Datagrams too short to hold an SPI.\n"));
}

#[test]
fn render_escapes_and_odd_values() {
    let doc = json!({
        "uptime_s": 1e-7,
        "drops": { "replayed": 3, "new\"reason\\x\ny": 1 },
        "engine": {},
        "node": { "tun_rx": 1, "odd-name.x": 2 },
        "sas": [
            { "spi": "0x\"1\\\n", "direction": "in", "proto": "ah", "bytes": 10, "packets": 1,
              "expired": true },
            { "spi": "0x2", "direction": "out", "proto": "esp", "bytes": "junk", "packets": null }
        ],
        "workers": [ { "role": "both", "cpu_s": 1.5 }, "not an object" ],
    });
    let text = render(&doc);
    let s = check_format(&text);
    assert_eq!(s.get("hipsec_drops_total{reason=\"replayed\"}"), Some(&3.0));
    assert_eq!(s.get("hipsec_drops_total{reason=\"no_sa\"}"), Some(&0.0));
    assert_eq!(s.get("hipsec_drops_total{reason=\"new\\\"reason\\\\x\\ny\"}"), Some(&1.0));
    assert_eq!(s.get("hipsec_node_odd_name_x_total"), Some(&2.0));
    assert_eq!(s.get("hipsec_uptime_seconds"), Some(&1e-7));
    let sa = "{spi=\"0x\\\"1\\\\\\n\",direction=\"in\",proto=\"ah\"}";
    assert_eq!(s.get(&format!("hipsec_sa_bytes_total{sa}")), Some(&10.0));
    assert_eq!(s.get(&format!("hipsec_sa_expired{sa}")), Some(&1.0));
    assert!(!text.contains("spi=\"0x2\""), "non-numbers give no sample:\n{text}");
    assert_eq!(s.get("hipsec_worker_cpu_seconds_total{worker=\"0\",role=\"both\"}"), Some(&1.5));

    // An empty or foreign document still gives a well-formed page with every drop reason;
    // families without samples are left out (prometheus-client writes none for them).
    for doc in [json!({}), json!(null), json!([1, 2]), json!("x")] {
        let text = render(&doc);
        let s = check_format(&text);
        assert_eq!(s.get("hipsec_up"), Some(&1.0));
        assert_eq!(s.get("hipsec_drops_total{reason=\"no_sa\"}"), Some(&0.0));
        assert!(!text.contains("hipsec_sa_bytes"), "{text}");
    }
}

#[test]
fn requests_are_routed() {
    let metrics = Route::Metrics { head: false };
    let cases: &[(&[u8], Route)] = &[
        (b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n", metrics),
        (b"GET /metrics HTTP/1.0\r\n\r\n", metrics),
        (b"GET /metrics HTTP/1.1\nhost: x\n\n", metrics),
        (b"GET /metrics?name[]=up HTTP/1.1\r\nHost: x\r\n\r\n", metrics),
        (b"GET http://127.0.0.1:9469/metrics HTTP/1.1\r\nHost: x\r\n\r\n", metrics),
        (b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", Route::Metrics { head: true }),
        (b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", Route::MethodNotAllowed),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", Route::NotFound),
        (b"GET /metrics/ HTTP/1.1\r\nHost: x\r\n\r\n", Route::NotFound),
        (b"GET http://h HTTP/1.1\r\nHost: x\r\n\r\n", Route::NotFound),
        (b"DELETE /x HTTP/1.1\r\nHost: x\r\n\r\n", Route::NotFound),
        (b"GET /metrics HTTP/1.1\r\n\r\n", Route::BadRequest), // no Host (RFC 9112 §3.2)
        (b"GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n", Route::BadRequest),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Route::BadRequest),
        (b"GET  /metrics HTTP/1.1\r\nHost: x\r\n\r\n", Route::BadRequest),
        (b"GET /metrics\r\n\r\n", Route::BadRequest),
        (b"GET /met rics HTTP/1.1\r\nHost: x\r\n\r\n", Route::BadRequest),
        (b"G(T /metrics HTTP/1.1\r\nHost: x\r\n\r\n", Route::BadRequest),
        (b"GET /metrics HTTP/1.1\r\nHost x\r\n\r\n", Route::BadRequest),
        (b"GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n", Route::BadRequest),
        (b"GET /m\xffetrics HTTP/1.1\r\nHost: x\r\n\r\n", Route::BadRequest),
        (b"", Route::BadRequest),
        (b"\r\n\r\n", Route::BadRequest),
    ];
    for (req, want) in cases {
        assert_eq!(route(req), *want, "{:?}", String::from_utf8_lossy(req));
    }
    let done = Head::Done(Route::Metrics { head: false });
    assert_eq!(parse_head(b"GET /metrics HTTP/1.0\r\n\r\nbody"), done);
    assert_eq!(parse_head(b"GET /metrics HTTP/1.0\n\n"), done);
    assert_eq!(parse_head(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"), Head::Partial);
    assert_eq!(parse_head(b"GET /met"), Head::Partial);
    assert_eq!(parse_head(b""), Head::Partial);
    assert_eq!(parse_head(b"G(T /metrics"), Head::Done(Route::BadRequest));
}

/// Random and mutated request heads: routing never panics (no panic on peer input).
#[test]
fn routing_survives_garbage() {
    let base: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // xorshift64: a fixed sequence, so a failure repeats.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20_000 {
        let mut buf = base.to_vec();
        for _ in 0..(next() % 6) {
            let i = (next() as usize) % buf.len();
            match next() % 3 {
                0 => buf[i] = next() as u8,
                1 => {
                    buf.remove(i);
                }
                _ => buf.insert(i, b" :\r\n/?\xff"[(next() % 7) as usize]),
            }
            if buf.is_empty() {
                break;
            }
        }
        let _ = route(&buf);
        let _ = parse_head(&buf);
        let len = (next() % 64) as usize;
        let junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let _ = route(&junk);
    }
}

#[test]
fn responses() {
    let r = String::from_utf8(response(Route::Metrics { head: false }, || "hipsec_up 1\n".into()))
        .unwrap_or_default();
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(
        r.contains(
            "\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"
        ),
        "{r}"
    );
    assert!(
        r.contains("\r\nContent-Length: 12\r\n") && r.ends_with("\r\n\r\nhipsec_up 1\n"),
        "{r}"
    );
    let h = String::from_utf8(response(Route::Metrics { head: true }, || "hipsec_up 1\n".into()))
        .unwrap_or_default();
    assert!(h.contains("Content-Length: 12\r\n") && h.ends_with("\r\n\r\n"), "{h}");
    let mut called = false;
    for (route, status) in [
        (Route::NotFound, "404 Not Found"),
        (Route::BadRequest, "400 Bad Request"),
        (Route::MethodNotAllowed, "405 Method Not Allowed"),
    ] {
        let r = String::from_utf8(response(route, || {
            called = true;
            String::new()
        }))
        .unwrap_or_default();
        assert!(r.starts_with(&format!("HTTP/1.1 {status}\r\n")), "{r}");
    }
    assert!(!called, "the metrics are rendered only for a scrape");
}
