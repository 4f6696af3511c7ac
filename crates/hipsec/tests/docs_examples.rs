//! No example in the docs or the `--help` texts puts a key on a command line, where every local
//! user can read it in /proc/PID/cmdline: `hipsec` command lines (README.md, docs/**/*.md, every
//! subcommand's help) may give key fields only as `@FILE` or `-`, and carry no hex key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Key fields of the SA words and of anything else that may hold a secret.
const SECRET_WORDS: &[&str] =
    &["key", "enc-key", "auth-key", "enc_key", "auth_key", "psk", "secret"];

/// The complaint about one command line, if it puts a key in argv.
fn key_in_argv(cmd: &str) -> Option<String> {
    for word in cmd.split_whitespace() {
        let word = word.trim_matches(|c| matches!(c, '`' | '"' | '\'' | ';' | ','));
        let bare = word.trim_start_matches('-');
        if let Some((k, v)) = bare.split_once('=') {
            if SECRET_WORDS.contains(&k) && !v.starts_with('@') && v != "-" {
                return Some(format!("{word}: a key field with its value on the command line"));
            }
        }
        // A hex key given any other way (`--key 0x…`): 32 or more hex digits in one word.
        let v = bare.split_once('=').map_or(bare, |(_, v)| v);
        let v = v.strip_prefix("0x").unwrap_or(v);
        let digits = v.chars().filter(|c| *c != '_').collect::<String>();
        if digits.len() >= 32 && digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Some(format!("{word}: a hex key on the command line"));
        }
    }
    None
}

/// The `hipsec ...` command lines of a text, with their `\` continuations joined; each with
/// the line number it starts on.
fn commands(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (i, line) in text.lines().enumerate() {
        if open {
            if let Some((_, c)) = out.last_mut() {
                c.push(' ');
                c.push_str(line.trim_end_matches('\\'));
            }
        } else if let Some(at) = line.find("hipsec ") {
            out.push((i + 1, line[at..].trim_end_matches('\\').to_string()));
        }
        open = (open || line.contains("hipsec ")) && line.trim_end().ends_with('\\');
    }
    out
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let p = e.path();
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

/// Every subcommand path (`["sa", "add"]`, ...) from the `Commands:` lists of `--help`.
fn subcommands(prefix: &[String], out: &mut Vec<Vec<String>>) {
    let o = Command::new(common::BIN).args(prefix).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut in_list = false;
    for line in help.lines() {
        if line.starts_with("Commands:") {
            in_list = true;
            continue;
        }
        if in_list {
            let Some(name) = line.strip_prefix("  ").and_then(|l| l.split_whitespace().next())
            else {
                in_list = false;
                continue;
            };
            if name == "help" || line.starts_with("   ") {
                continue;
            }
            let mut p = prefix.to_vec();
            p.push(name.to_string());
            out.push(p.clone());
            if p.len() < 4 {
                subcommands(&p, out);
            }
        }
    }
}

/// The checker itself catches what it is for, and lets the safe forms through.
#[test]
fn the_checker_catches_keys_in_argv() {
    let bad = [
        "hipsec sa add S direction=in aead=aes128gcm key=0x000102030405060708090a0b0c0d0e0f10111213",
        "hipsec sa add S enc-key=0x00 auth-key=@a.key",
        "hipsec pcap seal --key 000102030405060708090a0b0c0d0e0f10111213",
        "hipsec x -auth-key=0x0102",
    ];
    for b in bad {
        assert!(key_in_argv(b).is_some(), "{b}");
    }
    let good = [
        "hipsec sa add S --file spoke7.toml",
        "hipsec sa add S aead=aes128gcm key=@spoke7.key peer=192.0.2.7:4500",
        "xxd -p | hipsec sa add S enc-key=- auth-key=@a.key spi=0x2007",
        "hipsec sa del S --direction out --spi 0x1007",
    ];
    for g in good {
        assert_eq!(key_in_argv(g), None, "{g}");
    }
    let joined = commands("x\nhipsec sa add S a=1 \\\n    key=0x0102\nnext");
    assert_eq!(joined.len(), 1);
    assert!(key_in_argv(&joined[0].1).is_some(), "{joined:?}");
}

#[test]
fn no_doc_example_puts_a_key_in_argv() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    markdown_files(&root.join("docs"), &mut files);
    let mut bad = Vec::new();
    let mut seen = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (line, cmd) in commands(&text) {
            seen += 1;
            if let Some(why) = key_in_argv(&cmd) {
                bad.push(format!("{}:{line}: {why}", f.display()));
            }
        }
    }
    assert!(seen > 20, "found only {seen} hipsec command lines in {} files", files.len());
    assert!(bad.is_empty(), "examples with keys on the command line:\n{}", bad.join("\n"));
}

#[test]
fn no_help_example_puts_a_key_in_argv() {
    let mut paths = vec![Vec::new()];
    subcommands(&[], &mut paths);
    assert!(paths.iter().any(|p| p == &["sa", "add"]), "{paths:?}");
    let mut bad = Vec::new();
    for p in &paths {
        let o = Command::new(common::BIN).args(p).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&o.stdout).into_owned();
        for (line, cmd) in commands(&help) {
            if let Some(why) = key_in_argv(&cmd) {
                bad.push(format!("hipsec {} --help, line {line}: {why}", p.join(" ")));
            }
        }
    }
    assert!(bad.is_empty(), "help examples with keys on the command line:\n{}", bad.join("\n"));
}
