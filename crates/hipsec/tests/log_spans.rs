//! The node's log follows one peer: two hipsec nodes set up an IKE SA, rekey its CHILD SA and
//! the IKE SA, and tear it down, while node A runs with a span filter (`--log`) that keeps only
//! what happened inside that connection's `ike` span. The log must hold the whole story, in
//! order, and nothing from outside the span; and docs/logs.md's example must be this log (its
//! events, spans and field names; times and SPIs differ per run). With `HIPSEC_BLESS=1` the
//! test writes the run's log into the page instead.
//!
//! ```text
//!   ns A: hipsec0 10.0.1.1/24 ── va 192.0.2.1 ══ vb 192.0.2.2 ── hipsec0 10.0.2.1/24 :ns B
//! ```
//! Needs root, netns and TUN; otherwise SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::BIN;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The filter the docs show: warnings from anywhere, and everything of connection `site`.
const FILTER: &str = "warn,[ike{conn=site}]=debug";
/// docs/logs.md's example sits between these lines.
const BEGIN: &str = "<!-- log example: produced by crates/hipsec/tests/log_spans.rs -->";
const END: &str = "<!-- end of log example -->";
/// And node B's `ike-sa-up` as a JSON line between these.
const JSON_BEGIN: &str = "<!-- json example: produced by crates/hipsec/tests/log_spans.rs -->";
const JSON_END: &str = "<!-- end of json example -->";

struct Pair {
    ns: [String; 2],
    dir: PathBuf,
    nodes: Vec<Child>,
}

impl Pair {
    fn start() -> Pair {
        let base = format!("hilog-{}", std::process::id());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(&base);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ns = common::two_namespaces(&base);
        let mut p = Pair { ns: ns.clone(), dir, nodes: Vec::new() };
        for (i, nsi) in ns.iter().enumerate() {
            let (me, peer) = (i + 1, 2 - i);
            let conf = format!(
                "[interface]\nname = \"hipsec0\"\naddresses = [\"10.0.{me}.1/24\"]\n[network]\nlocal = \"192.0.2.{me}:4500\"\n[control]\nsocket = \"{sock}\"\n[[connection]]\nname = \"site\"\nremote_addrs = \"192.0.2.{peer}\"\nproposals = [\"aes128gcm16-prfsha256-x25519\"]\n[connection.local]\nid = \"node{me}.example\"\n[connection.remote]\nid = \"node{peer}.example\"\n[connection.children.net]\nlocal_ts = [\"10.0.{me}.0/24\"]\nremote_ts = [\"10.0.{peer}.0/24\"]\nesp_proposals = [\"aes128gcm16\"]\n[secrets.ike-1]\nid = [\"node1.example\", \"node2.example\"]\nsecret = \"two hipsec nodes, one story each\"\n",
                sock = p.sock(i).display(),
            );
            let path = p.dir.join(format!("{i}.toml"));
            std::fs::write(&path, conf).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            // A: text, filtered to the connection's span; B: every info event, as JSON.
            if i == 1 {
                let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
                std::io::Write::write_all(&mut f, b"[log]\nformat = \"json\"\n").unwrap();
            }
            let extra: &[&str] = if i == 0 { &["--log", FILTER] } else { &[] };
            p.nodes.push(common::start_node(nsi, &p.dir, i, extra));
        }
        p
    }

    fn sock(&self, i: usize) -> PathBuf {
        self.dir.join(format!("{i}.sock"))
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dir.join(format!("{i}.log"))).unwrap_or_default()
    }

    /// `hipsec ARGS SOCK_A site [MORE]`, which must succeed.
    fn command(&self, verb: &str, more: &[&str]) {
        let out = Command::new(BIN).arg(verb).arg(self.sock(0)).arg("site").args(more).output();
        let out = out.unwrap();
        assert!(out.status.success(), "{verb}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Waits until node A's log has `n` lines with event `what`.
    fn wait_for(&self, what: &str, n: usize) {
        let t0 = Instant::now();
        while events(&self.log(0)).iter().filter(|e| e.event == what).count() < n {
            assert!(t0.elapsed() < Duration::from_secs(15), "no {what}:\n{}", self.log(0));
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(&mut self) {
        for mut c in self.nodes.drain(..) {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let _ = c.wait();
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        self.stop();
        for ns in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// One text log line: `<time>  INFO ike{conn=site id=1 peer=…}:child{name=net}: child-sa-up k=v …`.
#[derive(Debug, PartialEq, Eq)]
struct Line {
    level: String,
    /// The spans' names with their field names (`ike{conn,id,peer}`), outermost first.
    spans: Vec<String>,
    event: String,
    fields: Vec<String>,
}

fn parse(line: &str) -> Option<Line> {
    let mut words = line.split_whitespace();
    let ts = words.next()?;
    if !(ts.len() == 24 && ts.ends_with('Z')) {
        return None;
    }
    let level = words.next()?.to_string();
    let rest: Vec<&str> = words.collect();
    let rest = rest.join(" ");
    // The span path ends at the first ": " outside braces.
    let (path, tail) = match split_path(&rest) {
        Some((p, t)) => (p, t),
        None => ("", rest.as_str()),
    };
    let spans = path
        .split("}:")
        .filter(|s| !s.is_empty())
        .map(|s| {
            let s = s.trim_end_matches('}');
            let (name, fields) = s.split_once('{').unwrap_or((s, ""));
            let keys: Vec<&str> =
                fields.split(' ').filter_map(|kv| kv.split_once('=').map(|(k, _)| k)).collect();
            format!("{name}{{{}}}", keys.join(","))
        })
        .collect();
    let mut t = tail.split(' ');
    let event = t.next()?.to_string();
    let fields = t.filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_string())).collect();
    Some(Line { level, spans, event, fields })
}

fn split_path(s: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ':' if depth == 0 && s[i + 1..].starts_with(' ') => {
                return Some((&s[..i], &s[i + 2..]));
            }
            _ => {}
        }
    }
    None
}

fn events(log: &str) -> Vec<Line> {
    log.lines().filter_map(parse).collect()
}

fn doc_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/logs.md")
}

/// The block of docs/logs.md between `begin` and `end`, without its fences.
fn doc_block(page: &str, begin: &str, end: &str, lang: &str) -> Option<String> {
    let (_, after) = page.split_once(begin)?;
    let (block, _) = after.split_once(end)?;
    let body = block.trim().strip_prefix(&format!("```{lang}"))?.strip_suffix("```")?;
    Some(body.trim_matches('\n').to_string())
}

/// Replaces the block between `begin` and `end` of `page`.
fn with_block(page: &str, begin: &str, end: &str, lang: &str, body: &str) -> String {
    let (head, rest) = page.split_once(begin).unwrap();
    let (_, tail) = rest.split_once(end).unwrap();
    format!("{head}{begin}\n```{lang}\n{body}\n```\n{end}{tail}")
}

/// A JSON line's shape: its keys, and each span's name with its keys.
fn shape(v: &serde_json::Value) -> (Vec<String>, Vec<String>) {
    let keys = v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    let spans = v["spans"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    let o = s.as_object().cloned().unwrap_or_default();
                    format!("{:?}", o.keys().collect::<Vec<_>>())
                })
                .collect()
        })
        .unwrap_or_default();
    (keys, spans)
}

#[test]
fn one_peers_span_tells_its_setup_rekeys_and_teardown_in_order() {
    if !common::netns_ready(&[]) {
        return;
    }
    let mut p = Pair::start();
    p.command("initiate", &[]);
    p.wait_for("child-sa-up", 1);
    p.command("rekey", &[]);
    p.wait_for("child-sa-rekeyed", 1);
    // The old pair's outbound SA goes at once, its inbound one after a grace period.
    p.wait_for("child-sa-retired", 1);
    p.command("rekey", &["--ike"]);
    p.wait_for("ike-sa-rekeyed", 1);
    p.command("terminate", &[]);
    p.wait_for("ike-sa-down", 1);
    p.stop();
    let log = p.log(0);
    let lines = events(&log);
    assert_eq!(lines.len(), log.lines().count(), "every line parses:\n{log}");

    // Only the span's story: no start, stop or control requests (outside every span, and
    // below warn).
    for l in &lines {
        assert!(l.spans.first().is_some_and(|s| s.starts_with("ike{conn")), "{l:?}\n{log}");
        assert!(!["up", "stopped", "control-request"].contains(&l.event.as_str()), "{log}");
    }
    // The story, in order.
    let order = [
        "ike-initiate",
        "ike-sa-up",
        "child-sa-up",
        "child-sa-rekeyed",
        "child-sa-retired",
        "ike-sa-rekeyed",
        "child-sa-down",
        "ike-sa-down",
    ];
    let mut at = 0;
    for l in &lines {
        if order.get(at) == Some(&l.event.as_str()) {
            at += 1;
        }
    }
    assert_eq!(at, order.len(), "events out of order or missing:\n{log}");
    // The IKE SA's span carries the peer once it is up; CHILD SA events sit in a child span.
    let up = lines.iter().find(|l| l.event == "child-sa-up").unwrap();
    assert_eq!(up.spans, ["ike{conn,id,peer}", "child{name}"], "{log}");
    assert!(log.contains("id=1 peer=192.0.2.2:"), "{log}");
    // No key material: a CHILD SA's keys are 16 bytes, an IKE SA's more; no long hex string.
    let longest_hex = log.split(|c: char| !c.is_ascii_hexdigit()).map(str::len).max().unwrap_or(0);
    assert!(longest_hex <= 16, "a long hex string in the log:\n{log}");

    // Node B logs every info event, outside and inside its spans, one JSON object a line.
    let b = p.log(1);
    let json: Vec<serde_json::Value> = b
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let msg = |v: &serde_json::Value| v["message"].as_str().unwrap_or("").to_string();
    assert!(json.iter().any(|v| msg(v) == "up"), "{b}");
    assert_eq!(json.last().map(msg).as_deref(), Some("stopped"), "{b}");
    let b_up = json.iter().find(|v| msg(v) == "ike-sa-up").expect("B's ike-sa-up");
    assert_eq!(b_up["spans"][0]["name"], "ike", "{b_up}");
    assert_eq!(b_up["spans"][0]["conn"], "site", "{b_up}");

    // docs/logs.md shows this run's logs.
    let page = std::fs::read_to_string(doc_path()).unwrap();
    if std::env::var_os("HIPSEC_BLESS").is_some() {
        let page = with_block(&page, BEGIN, END, "text", log.trim_end());
        let raw = b.lines().find(|l| l.contains("\"message\":\"ike-sa-up\"")).unwrap();
        let page = with_block(&page, JSON_BEGIN, JSON_END, "json", raw);
        std::fs::write(doc_path(), page).unwrap();
        return;
    }
    let shown_json = doc_block(&page, JSON_BEGIN, JSON_END, "json").expect("the JSON example");
    let shown_json: serde_json::Value = serde_json::from_str(&shown_json).unwrap();
    assert_eq!(shape(&shown_json), shape(b_up), "docs/logs.md's JSON example; HIPSEC_BLESS=1");
    let shown = doc_block(&page, BEGIN, END, "text").expect("docs/logs.md has the example block");
    assert_eq!(
        events(&shown),
        lines,
        "docs/logs.md's example is not what the node logs now; rerun with HIPSEC_BLESS=1:\n{log}"
    );
}
