//! Every subcommand's `--help` teaches: it shows an example and names a doc page that exists,
//! its examples name the control socket the docs and `examples/` use, and the examples that
//! can run here do run: those of `status`, `sa`, `policy` against a node started from
//! `examples/manual-pair/host-a.toml` in a network namespace (root, `ip netns`, /dev/net/tun,
//! xxd and jq, else SKIPPED), and the offline ones of `lab list`, `keygen` and `size`.
//! Benchmarks, the lab runs, IKE, HIP, pcap and guard removal are not run here: they need
//! peers, captures or minutes, or change the machine (their own tests cover them).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::BIN;
use std::path::{Path, PathBuf};
use std::process::Command;

const SOCKET: &str = "/run/hipsec-node.sock";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every subcommand path, from the `Commands:` lists of `--help`.
fn subcommands(prefix: &[String], out: &mut Vec<Vec<String>>) {
    let help = help(prefix);
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
            subcommands(&p, out);
        }
    }
}

fn help(path: &[String]) -> String {
    let o = Command::new(BIN).args(path).arg("--help").output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The example commands of a help text: the indented lines under `Example:`/`Examples...:`
/// that start with `hipsec` or feed it through a pipe, `\` continuations joined, comments cut.
fn examples(help: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_block = false;
    let mut open = false;
    for line in help.lines() {
        if line.starts_with("Example") {
            in_block = true;
            continue;
        }
        if !line.starts_with("  ") {
            in_block = false;
            open = false;
            continue;
        }
        if !in_block {
            continue;
        }
        let t = line.trim();
        let body = t.trim_end_matches('\\').trim_end();
        if open {
            if let Some(last) = out.last_mut() {
                last.push(' ');
                last.push_str(body);
            }
        } else if t.starts_with("hipsec ") || t.contains("| hipsec ") {
            out.push(body.to_string());
        }
        open = (open || t.starts_with("hipsec ") || t.contains("| hipsec ")) && t.ends_with('\\');
    }
    out.into_iter()
        .map(|c| match c.find("  #") {
            Some(i) => c[..i].trim_end().to_string(),
            None => c,
        })
        .collect()
}

#[test]
fn every_help_has_an_example_and_an_existing_doc_page() {
    let mut paths = Vec::new();
    subcommands(&[], &mut paths);
    assert!(paths.len() > 40, "{paths:?}");
    let mut bad = Vec::new();
    for p in &paths {
        let h = help(p);
        let name = p.join(" ");
        if examples(&h).is_empty() {
            bad.push(format!("hipsec {name} --help: no example"));
        }
        let Some(more) = h.lines().find_map(|l| l.strip_prefix("More: ")) else {
            bad.push(format!("hipsec {name} --help: no doc page"));
            continue;
        };
        let page = more.split_whitespace().next().unwrap_or("");
        if !root().join(page).exists() {
            bad.push(format!("hipsec {name} --help: {page} does not exist"));
        }
        for line in h.lines().filter(|l| l.contains(".sock") && l.contains("/run/")) {
            if !line.contains(SOCKET) && !line.contains("/run/a.sock") {
                bad.push(format!("hipsec {name} --help: another socket: {line}"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_example_extractor_joins_continuations_and_cuts_comments() {
    let h = "Examples:\n  hipsec a x \\\n      y=1\n  head -c 2 /dev/zero | hipsec b  # note\n  tshark -r f\n\nMore: docs/x.md\n";
    assert_eq!(examples(h), ["hipsec a x y=1", "head -c 2 /dev/zero | hipsec b"]);
}

/// Runs `cmd` with `sh -c` in `dir`, `hipsec` being this build; the socket moved to `sock`.
fn sh(dir: &Path, sock: &Path, cmd: &str) -> std::process::Output {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let cmd = cmd
        .replace(SOCKET, &sock.display().to_string())
        .replace("/etc/hipsec/", &format!("{}/", dir.display()));
    Command::new("sh").arg("-c").arg(&cmd).current_dir(dir).env("PATH", path).output().unwrap()
}

/// The files the control examples name, as their help describes them.
fn example_files(dir: &Path) {
    let key = |name: &str| {
        let hex: String = (0..20).map(|i| format!("{:02x}", 0x40 + i * 3 + name.len())).collect();
        let p = dir.join(name);
        std::fs::write(&p, format!("{hex}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    };
    key("spoke8.key");
    // spoke7.toml exactly as `hipsec sa add --help` shows it.
    let h = help(&["sa".into(), "add".into()]);
    let block: Vec<&str> = h
        .lines()
        .skip_while(|l| !l.trim_end().ends_with("<40 hex digits>:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect();
    // Each `<40 hex digits>` replaced by a key of its own, as the help says.
    let mut n = 0u8;
    let block: Vec<String> = block
        .iter()
        .map(|l| {
            n += 1;
            let hex: String =
                (0..20u8).map(|i| format!("{:02x}", i.wrapping_mul(n) ^ 0x5a)).collect();
            l.replace("<40 hex digits>", &hex)
        })
        .collect();
    assert!(block.len() >= 10, "spoke7.toml missing from sa add --help:\n{h}");
    let p = dir.join("spoke7.toml");
    std::fs::write(&p, block.join("\n") + "\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    // policies.toml for `policy add --file`: a policy for spoke 7's net.
    let p = dir.join("policies.toml");
    std::fs::write(
        &p,
        "[[policy]]\nsrc = \"10.0.1.0/24\"\ndst = \"10.7.1.0/24\"\naction = \"protect\"\nsas = [\"0x1007\"]\n",
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn the_control_examples_run_against_a_node() {
    if !common::netns_ready(&["xxd", "jq"]) {
        return;
    }
    let dir = common::tmpdir("help-examples");
    let ns = format!("hhelp-{}", std::process::id());
    common::sh(&["ip", "netns", "add", &ns]);
    struct Cleanup(String, Option<std::process::Child>);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            if let Some(c) = &mut self.1 {
                let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
                let _ = c.wait();
            }
            let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
        }
    }
    let mut guard = Cleanup(ns.clone(), None);
    common::sh(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
    common::sh(&["ip", "-n", &ns, "link", "add", "d0", "type", "veth", "peer", "name", "d1"]);
    common::sh(&["ip", "-n", &ns, "addr", "add", "192.0.2.1/24", "dev", "d0"]);
    common::sh(&["ip", "-n", &ns, "link", "set", "d0", "up"]);
    common::sh(&["ip", "-n", &ns, "link", "set", "d1", "up"]);
    let sock = dir.join("0.sock");
    let conf = std::fs::read_to_string(root().join("examples/manual-pair/host-a.toml"))
        .unwrap()
        .replace(SOCKET, &sock.display().to_string());
    let p = dir.join("0.toml");
    std::fs::write(&p, conf).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    guard.1 = Some(common::start_node(&ns, &dir, 0, &[]));
    example_files(&dir);
    // In this order: what `sa update`, `sa del` and `policy update|del` change must exist.
    let order = [
        "status",
        "sa add",
        "sa update",
        "sa list",
        "sa",
        "sa del",
        "policy add",
        "policy list",
        "policy",
        "policy update",
        "policy del",
    ];
    let mut ran = 0;
    let mut bad = Vec::new();
    for name in order {
        let path: Vec<String> = name.split(' ').map(String::from).collect();
        for cmd in examples(&help(&path)) {
            let o = sh(&dir, &sock, &cmd);
            ran += 1;
            if !o.status.success() {
                bad.push(format!(
                    "hipsec {name} --help: `{cmd}` failed:\n{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
        }
    }
    assert!(ran >= 14, "only {ran} examples ran");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // What they did is there: spoke 7's pair, spoke 8's inbound SA; spoke 8's outbound deleted.
    let o = sh(&dir, &sock, "hipsec sa list --json /run/hipsec-node.sock");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let spis: Vec<String> =
        v["sas"].as_array().unwrap().iter().map(|s| s["spi"].as_str().unwrap().into()).collect();
    for spi in ["0x00002007", "0x00001007", "0x00002008"] {
        assert!(spis.iter().any(|s| s == spi), "{spi} missing: {spis:?}");
    }
    assert!(!spis.iter().any(|s| s == "0x00001008"), "sa del left 0x1008: {spis:?}");
}

#[test]
fn the_offline_examples_run() {
    let dir = common::tmpdir("help-offline");
    // `hipsec size`'s examples read profile.json: the kept calibration of docs/results.
    std::fs::copy(
        root().join("docs/results/2026-11-25/sizing/profile.json"),
        dir.join("profile.json"),
    )
    .unwrap();
    let sock = dir.join("none.sock");
    let mut ran = 0;
    for name in ["lab list", "keygen", "size"] {
        let path: Vec<String> = name.split(' ').map(String::from).collect();
        for cmd in examples(&help(&path)) {
            let o = sh(&dir, &sock, &cmd);
            ran += 1;
            assert!(
                o.status.success(),
                "hipsec {name} --help: `{cmd}` failed:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    assert!(ran >= 5, "only {ran} examples ran");
    let _ = std::fs::remove_dir_all(&dir);
}
