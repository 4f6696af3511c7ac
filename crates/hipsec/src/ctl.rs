//! `hipsec sa`, `hipsec policy` and `hipsec monitor`: a running node's SAs and policies changed
//! over its control socket, the way `ip xfrm state|policy|monitor` changes the kernel's. SAs and
//! policies come from a TOML file (`[[sa]]`, `[[policy]]` tables, docs/sa-file.md) or as
//! `FIELD=VALUE` words (dotted for nested fields: `lifetime.soft.seconds=3600`); the node checks
//! every field and answers with JSON. Keys never come back: `list` shows none.

use crypto::{EncrAlg, EspSuite, IntegAlg};
use serde_json::{Map, Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Sends one request and returns the node's JSON answer; an `"ok": false` answer is an error
/// naming the field.
pub fn request(socket: &Path, req: &Value) -> Result<Value, String> {
    let line = req.to_string();
    let text = node::command(socket, &line).map_err(|e| e.to_string())?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| format!("the node's answer is not JSON: {e}"))?;
    if v["ok"] == false {
        let field = v["field"].as_str().map(|f| format!("field \"{f}\": ")).unwrap_or_default();
        return Err(format!("{field}{}", v["error"].as_str().unwrap_or("refused")));
    }
    Ok(v)
}

/// A `FIELD=VALUE` word's value: true/false, an integer, else a string.
fn scalar(v: &str) -> Value {
    match v {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => v.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(v.to_string())),
    }
}

/// An SA in a list: `SPI`, or `SPI@DST` for an outbound SA that need not be installed yet.
fn sa_ref(v: &str) -> Value {
    match v.split_once('@') {
        Some((spi, dst)) => json!({"spi": scalar(spi), "dst": dst}),
        None => scalar(v),
    }
}

/// Fields whose value is a list (`sas=0x1001,0x1002`).
const LIST_FIELDS: &[&str] = &["sas", "in-sas"];

/// Fields that hold keys (the SA file's names and their aliases). Their value may be `@FILE`
/// (read from that file) or `-` (read from standard input), so that no key goes on a command
/// line, where every local user can read it in /proc/PID/cmdline.
pub const SECRET_FIELDS: &[&str] = &["key", "enc-key", "auth-key", "enc_key", "auth_key"];

/// `FIELD=VALUE` words as one JSON object (dotted fields nest; `sas` and `in-sas` take
/// comma-separated lists; key fields read `@FILE` and `-` from a file or standard input).
pub fn fields(words: &[String]) -> Result<Value, String> {
    fields_reading(words, &mut std::io::stdin().lock())
}

/// [`fields`], with `key=-` reading from `stdin`.
pub fn fields_reading(words: &[String], stdin: &mut dyn Read) -> Result<Value, String> {
    let mut o = Map::new();
    let mut stdin_used = false;
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("{w:?}: want FIELD=VALUE"))?;
        let mut parts: Vec<&str> = k.split('.').collect();
        let last =
            parts.pop().filter(|l| !l.is_empty()).ok_or_else(|| format!("{w:?}: no field"))?;
        let mut at = &mut o;
        for p in parts {
            let e = at.entry(p.to_string()).or_insert_with(|| Value::Object(Map::new()));
            at = e.as_object_mut().ok_or_else(|| format!("{k}: {p} is not a table"))?;
        }
        let value = if LIST_FIELDS.contains(&last) {
            Value::Array(v.split(',').filter(|x| !x.is_empty()).map(sa_ref).collect())
        } else if SECRET_FIELDS.contains(&last) {
            Value::String(secret(k, v, stdin, &mut stdin_used)?.to_string())
        } else {
            scalar(v)
        };
        at.insert(last.to_string(), value);
    }
    Ok(Value::Object(o))
}

/// A key field's value: from the file of `@FILE` (warning when others may read it), from
/// standard input for `-`, else the word itself (with a warning: it is on the command line).
/// One line; its trailing newline is not part of the key.
fn secret(
    field: &str,
    v: &str,
    stdin: &mut dyn Read,
    stdin_used: &mut bool,
) -> Result<zeroize::Zeroizing<String>, String> {
    let (text, from) = if let Some(path) = v.strip_prefix('@') {
        let p = Path::new(path);
        if let Some(mode) = node::config::readable_by_others(p) {
            eprintln!(
                "hipsec: warning: {path} (mode {mode:03o}) holds {field} and other users can \
                 read it: chmod 600 it"
            );
        }
        let t = std::fs::read_to_string(p).map_err(|e| format!("{field}=@{path}: {e}"))?;
        (zeroize::Zeroizing::new(t), path.to_string())
    } else if v == "-" {
        if std::mem::replace(stdin_used, true) {
            return Err(format!("{field}=-: only one field can read standard input"));
        }
        let mut t = zeroize::Zeroizing::new(String::new());
        stdin.read_to_string(&mut t).map_err(|e| format!("{field}=-: standard input: {e}"))?;
        (t, "standard input".to_string())
    } else {
        eprintln!(
            "hipsec: warning: {field} given on the command line, where every local user can \
             read it (/proc/PID/cmdline): use {field}=@FILE, {field}=- or --file"
        );
        return Ok(zeroize::Zeroizing::new(v.to_string()));
    };
    let line = text.strip_suffix('\n').unwrap_or(&text);
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.is_empty() {
        return Err(format!("{field}: {from} is empty"));
    }
    if line.contains('\n') {
        return Err(format!("{field}: {from} holds more than one line; want the key alone"));
    }
    Ok(zeroize::Zeroizing::new(line.to_string()))
}

/// The `warnings` of a node's answer (weak settings it accepted), one sentence each.
pub fn warnings(v: &Value) -> Vec<String> {
    let empty = Vec::new();
    v["warnings"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|w| w["message"].as_str().or(w["event"].as_str()).unwrap_or("warning").to_string())
        .collect()
}

/// The `[[table]]` entries of a TOML file as JSON objects; warns when others may read it (it
/// may hold keys).
pub fn from_file(path: &Path, table: &str) -> Result<Vec<Value>, String> {
    if let Some(mode) = node::config::readable_by_others(path) {
        eprintln!(
            "hipsec: warning: {} (mode {mode:o}) can be read by other users; it may hold keys: chmod 600 it",
            path.display()
        );
    }
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?,
    );
    let doc: toml::Table = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let list = match doc.get(table) {
        Some(toml::Value::Array(a)) => a.clone(),
        _ => return Err(format!("{}: no [[{table}]] tables", path.display())),
    };
    list.into_iter()
        .map(|t| serde_json::to_value(t).map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

/// Entries from `--file` and/or `FIELD=VALUE` words (the words make one more entry).
pub fn entries(file: Option<&Path>, words: &[String], table: &str) -> Result<Vec<Value>, String> {
    let mut v = match file {
        Some(f) => from_file(f, table)?,
        None => Vec::new(),
    };
    if !words.is_empty() {
        v.push(fields(words)?);
    }
    if v.is_empty() {
        return Err(format!(
            "nothing to send: give --file with [[{table}]] tables or FIELD=VALUE words"
        ));
    }
    Ok(v)
}

/// Streams the node's events as JSON lines to stdout until the node or the reader goes.
pub fn monitor(socket: &Path) -> Result<(), String> {
    let mut s = UnixStream::connect(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    s.write_all(b"monitor\n").map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    for line in BufReader::new(s).lines() {
        let line = line.map_err(|e| e.to_string())?;
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// `hipsec sa list` / `policy list` as a table.
pub fn render_list(v: &Value, what: &str) -> String {
    let mut o = String::new();
    let empty = Vec::new();
    let items = v[what].as_array().unwrap_or(&empty);
    if what == "sas" {
        o.push_str(&format!(
            "{:<3} {:<10} {:<4} {:<17} {:<9} {:<39} {:<22} {}\n",
            "dir", "spi", "prot", "suite", "mode", "src -> dst", "peer", "lane"
        ));
        for s in items {
            let t = |k: &str| s[k].as_str().unwrap_or("-").to_string();
            o.push_str(&format!(
                "{:<3} {:<10} {:<4} {:<17} {:<9} {:<39} {:<22} {}\n",
                t("direction"),
                t("spi"),
                t("proto"),
                t("suite"),
                t("mode"),
                format!("{} -> {}", t("src"), t("dst")),
                t("peer"),
                s["lane"].as_u64().unwrap_or(0)
            ));
        }
    } else {
        o.push_str(&format!(
            "{:>4} {:>5} {:<40} {:<8} {}\n",
            "id", "prio", "src -> dst", "action", "sas"
        ));
        for p in items {
            let t = |k: &str| p[k].as_str().unwrap_or("-").to_string();
            let sas: Vec<String> = p["sas"]
                .as_array()
                .unwrap_or(&empty)
                .iter()
                .map(|s| {
                    format!(
                        "{}@{}",
                        s["spi"].as_str().unwrap_or("?"),
                        s["dst"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            o.push_str(&format!(
                "{:>4} {:>5} {:<40} {:<8} {}\n",
                p["id"].as_u64().unwrap_or(0),
                p["priority"].as_u64().unwrap_or(0),
                format!("{} -> {}", t("src"), t("dst")),
                t("action"),
                sas.join(",")
            ));
        }
    }
    o
}

fn random_hex(n: usize) -> Result<String, String> {
    let mut b = zeroize::Zeroizing::new(vec![0u8; n]);
    crypto::default_provider().fill_random(&mut b).map_err(|e| format!("random: {e}"))?;
    Ok(format!("0x{}", hex::encode(&*b)))
}

/// A random SPI above 255 that lane arithmetic keeps in `lane` of `lanes` (SPI mod lanes).
fn random_spi(lane: u64, lanes: u64) -> Result<u32, String> {
    let mut b = [0u8; 4];
    crypto::default_provider().fill_random(&mut b).map_err(|e| format!("random: {e}"))?;
    let lanes = lanes.max(1);
    // In 0x1000_0000..=0x7fff_ffff, so that moving it to the lane cannot pass u32::MAX.
    let x = u64::from(u32::from_be_bytes(b) & 0x7fff_ffff | 0x1000_0000);
    Ok((x - x % lanes + lane % lanes) as u32)
}

/// A new SA like `old` (a `sa-list` entry) with a fresh SPI and fresh keys of its suite.
fn successor(old: &Value, direction: &str, lanes: u64) -> Result<(u32, Value), String> {
    let suite: EspSuite = old["suite"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .filter(|_| old["proto"] == "esp")
        .ok_or("only ESP SA pairs can be rekeyed by hipsec sa rekey")?;
    let lane = old["lane"].as_u64().unwrap_or(0);
    let spi = random_spi(lane, lanes)?;
    let mut v = json!({
        "direction": direction, "src": old["src"], "dst": old["dst"], "proto": "esp",
        "spi": format!("0x{spi:08x}"), "mode": old["mode"], "lane": lane,
        "esn": old["esn"].as_bool().unwrap_or(false),
    });
    if let Some(p) = old["peer"].as_str() {
        v["peer"] = json!(p);
    }
    if let Some(w) = old["replay-window"].as_u64() {
        v["replay-window"] = json!(w);
    }
    match (suite.encr, suite.integ) {
        (EncrAlg::Aead(_), _) => {
            v["aead"] = json!(suite.encr.name());
            v["key"] = json!(random_hex(suite.encr.key_len())?);
        }
        (e, i) => {
            v["enc"] = json!(e.name());
            if e != EncrAlg::Null {
                v["enc-key"] = json!(random_hex(e.key_len())?);
            }
            if i != IntegAlg::None {
                v["auth"] = json!(i.name());
                v["auth-key"] = json!(random_hex(i.key_len())?);
            }
        }
    }
    Ok((spi, v))
}

/// Make-before-break rekey of a manually keyed pair of nodes A and B (both local): fresh SPIs
/// and keys for A→B and B→A; both new inbound SAs installed first, then each node switches its
/// outbound SA (and the policies naming it), then the old inbound SAs are retired after the
/// grace period. `spi_ab`: the A→B SPI to replace when A has several outbound SAs.
pub fn rekey_pair(a: &Path, b: &Path, spi_ab: Option<u32>, grace_ms: u64) -> Result<Value, String> {
    let list_a = request(a, &json!({"op": "sa-list"}))?;
    let list_b = request(b, &json!({"op": "sa-list"}))?;
    let empty = Vec::new();
    let sas = |l: &Value, dir: &str| -> Vec<Value> {
        l["sas"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter(|s| s["direction"] == dir)
            .cloned()
            .collect()
    };
    let (a_out, a_in, b_out, b_in) =
        (sas(&list_a, "out"), sas(&list_a, "in"), sas(&list_b, "out"), sas(&list_b, "in"));
    let spi_of = |s: &Value| s["spi"].as_str().unwrap_or("").to_string();
    // A→B: an outbound SA of A that B has inbound; B→A likewise.
    let ab: Vec<&Value> = a_out
        .iter()
        .filter(|s| b_in.iter().any(|i| spi_of(i) == spi_of(s)))
        .filter(|s| spi_ab.is_none_or(|x| spi_of(s) == format!("0x{x:08x}")))
        .collect();
    let ab = match ab.as_slice() {
        [one] => *one,
        [] => return Err("no outbound SA of A is an inbound SA of B (check --spi)".into()),
        _ => return Err("A has several outbound SAs to B: name one with --spi".into()),
    };
    let ba: Vec<&Value> = b_out
        .iter()
        .filter(|s| a_in.iter().any(|i| spi_of(i) == spi_of(s)) && s["dst"] == ab["src"])
        .collect();
    let [ba] = ba.as_slice() else {
        return Err(
            "cannot tell which outbound SA of B pairs with it (want exactly one to A)".into()
        );
    };
    let lanes = |l: &Value| l["lanes"].as_u64().unwrap_or(1);
    let (x_new, ab_new) = successor(ab, "out", lanes(&list_b))?;
    let (y_new, ba_new) = successor(ba, "out", lanes(&list_a))?;
    let as_in = |v: &Value, peer: Option<&Value>| {
        let mut v = v.clone();
        v["direction"] = json!("in");
        match peer.and_then(Value::as_str) {
            Some(p) => v["peer"] = json!(p),
            None => {
                v.as_object_mut().map(|o| o.remove("peer"));
            }
        }
        v
    };
    // The inbound twin's peer is the endpoint the receiver has for its sender.
    let peer_of = |list: &[Value], spi: &str| {
        list.iter().find(|s| spi_of(s) == spi).map(|s| s["peer"].clone())
    };
    let b_peer = peer_of(&b_in, &spi_of(ab));
    let a_peer = peer_of(&a_in, &spi_of(ba));
    let t0 = std::time::Instant::now();
    let add =
        |new: Value, old: &Value| json!({"op": "sa-add", "sas": [new], "succeeds": old["spi"]});
    // The nodes' warnings (a legacy suite carried over, say) come back with the result.
    let mut warned: Vec<Value> = Vec::new();
    let mut send = |socket: &Path, r: Value| -> Result<(), String> {
        let v = request(socket, &r)?;
        warned.extend(v["warnings"].as_array().into_iter().flatten().cloned());
        Ok(())
    };
    send(b, add(as_in(&ab_new, b_peer.as_ref()), ab))?;
    send(a, add(as_in(&ba_new, a_peer.as_ref()), ba))?;
    send(a, json!({"op": "sa-switch", "old": {"spi": ab["spi"], "dst": ab["dst"]}, "sa": ab_new}))?;
    send(b, json!({"op": "sa-switch", "old": {"spi": ba["spi"], "dst": ba["dst"]}, "sa": ba_new}))?;
    send(a, json!({"op": "sa-retire", "spi": ba["spi"], "grace-ms": grace_ms}))?;
    send(b, json!({"op": "sa-retire", "spi": ab["spi"], "grace-ms": grace_ms}))?;
    let mut out = json!({
        "ok": true,
        "a_to_b": { "old": ab["spi"], "new": format!("0x{x_new:08x}") },
        "b_to_a": { "old": ba["spi"], "new": format!("0x{y_new:08x}") },
        "grace_ms": grace_ms,
        "took_ms": t0.elapsed().as_secs_f64() * 1e3,
    });
    if !warned.is_empty() {
        out["warnings"] = Value::Array(warned);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_nest_and_type() {
        let w: Vec<String> =
            ["spi=0x1000", "replay-window=64", "esn=true", "lifetime.soft.seconds=30"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let v = fields(&w).unwrap_or_default();
        assert_eq!(v["spi"], "0x1000");
        assert_eq!(v["replay-window"], 64);
        assert_eq!(v["esn"], true);
        assert_eq!(v["lifetime"]["soft"]["seconds"], 30);
        assert!(fields(&["novalue".to_string()]).is_err());
        let p = fields(&["sas=0x1001,4098@192.0.2.9".to_string()]).unwrap_or_default();
        assert_eq!(p["sas"], json!(["0x1001", {"spi": 4098, "dst": "192.0.2.9"}]));
        assert!(fields(&["a=1".to_string(), "a.b=2".to_string()]).is_err());
    }

    /// `key=@FILE` and `key=-` put the key in the request, not on the command line.
    #[test]
    fn key_fields_read_files_and_standard_input() {
        let dir = std::env::temp_dir().join(format!("hipsec-ctl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let key = "0x3f7a19c2e05b8d4461a9f0c37e2d5b18_9c4e1a07";
        let f = dir.join("spoke7.key");
        std::fs::write(&f, format!("{key}\n")).unwrap_or_default();
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let at = format!("key=@{}", f.display());
        let mut stdin = "0xaabb\r\n".as_bytes();
        let v = fields_reading(&words(&[&at, "auth-key=-", "spi=4097"]), &mut stdin);
        let v = v.unwrap_or_default();
        assert_eq!(v["key"], key, "the trailing newline is not part of the key");
        assert_eq!(v["auth-key"], "0xaabb");
        assert_eq!(v["spi"], 4097);
        // A value that merely starts with @ elsewhere is left alone.
        let v = fields_reading(&words(&["name=@x"]), &mut "".as_bytes()).unwrap_or_default();
        assert_eq!(v["name"], "@x");
        // Standard input serves one field; empty or several lines are refused.
        let e = fields_reading(&words(&["key=-", "enc-key=-"]), &mut "0x01\n".as_bytes());
        assert!(e.is_err_and(|e| e.contains("enc-key=-") && e.contains("one field")));
        let e = fields_reading(&words(&["enc-key=-"]), &mut "\n".as_bytes());
        assert!(e.is_err_and(|e| e.contains("enc-key") && e.contains("empty")));
        let e = fields_reading(&words(&["key=-"]), &mut "0x01\n0x02\n".as_bytes());
        assert!(e.is_err_and(|e| e.contains("more than one line")));
        let missing = format!("key=@{}", dir.join("none").display());
        let e = fields_reading(&words(&[&missing]), &mut "".as_bytes());
        assert!(e.is_err_and(|e| e.starts_with("key=@") && e.contains("none")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn answer_warnings_are_read() {
        let v = json!({"ok": true, "warnings": [{"event": "weak-key", "message": "SA in 0x00001001: key ..."}]});
        assert_eq!(warnings(&v), ["SA in 0x00001001: key ..."]);
        assert!(warnings(&json!({"ok": true})).is_empty());
    }

    #[test]
    fn random_spis_keep_their_lane() {
        for lanes in 1..5u64 {
            for lane in 0..lanes {
                let s = random_spi(lane, lanes).unwrap_or(0);
                assert!(s > 255 && u64::from(s) % lanes == lane, "{s} {lane}/{lanes}");
            }
        }
    }

    #[test]
    fn successor_has_fresh_keys_of_the_suite() {
        let old = json!({"suite": "aes256cbc-sha384", "proto": "esp", "src": "192.0.2.1",
            "dst": "192.0.2.2", "mode": "tunnel", "lane": 0, "peer": "192.0.2.2:4500"});
        let (spi, v) = successor(&old, "out", 1).unwrap_or_default();
        assert!(spi > 255);
        assert_eq!(v["enc"], "aes256cbc");
        assert_eq!(v["enc-key"].as_str().map(str::len), Some(2 + 64));
        assert_eq!(v["auth-key"].as_str().map(str::len), Some(2 + 96));
        let gcm = json!({"suite": "aes128gcm", "proto": "esp", "lane": 0});
        let (_, v) = successor(&gcm, "out", 1).unwrap_or_default();
        assert_eq!(v["key"].as_str().map(str::len), Some(2 + 40));
        assert!(successor(&json!({"suite": "sha256", "proto": "ah"}), "out", 1).is_err());
    }
}
