//! Every command of the user docs (the code blocks of README.md and docs/*.md) is run by this
//! test, or parsed by the CLI, so the docs cannot drift from the program. Each block with
//! commands carries a mark above it, `<!-- test: SETUP[/STEP] [file=NAME] -->`, naming the
//! setup it is typed in; a block with commands and no mark, or a mark no setup knows, fails
//! the test with its file and line.
//!
//! - `manual-pair`: getting-started's two hosts (examples/manual-pair in two namespaces joined
//!   by a veth, 192.0.2.1 and 192.0.2.2); step `running` while both nodes run (sa-file.md's
//!   control commands, restarts.md's `guard show`, troubleshooting's sysctl), step `stopped`
//!   after they stop (`guard remove`, `--reset-sequence`).
//! - `hip-pair`: hip.md's two HIP hosts, B's identity from the doc's `keygen`, A's config the
//!   doc's block (`file=a.toml`); step `keys` restarts A with `--debug-export-hip-keys`,
//!   captures a ping and has tshark decrypt it with the keys `hip wireshark-keys` printed.
//! - `offline`: no network; a directory holding the kept calibration (profile.json) and a kept
//!   lab run (lab-results/1795600000).
//! - `skip: WHY`: commands that are not hipsec's and cannot run here (a release build, docker,
//!   the test command itself); any `hipsec` command in such a block is still parsed.
//! - `ike-pair`: ike.md's two gateways, A's config the page's block (`file=gw-a.toml`), B's
//!   its mirror image (addresses, ids, selectors swapped); step `keys` restarts both, A with
//!   `--debug-export-ike-keys`, captures the exchange and has tshark decrypt its IKE_AUTH.
//! - `mip6`: mip6.md's home agent `ha` and correspondent `cn` on a home link, the mobile node
//!   `mn` behind a router (mip6_nodes.rs's topology), examples/mip6's files.
//! - `config`, `sa-file` (TOML blocks): loaded as a node config or an SA file.
//!
//! Commands named in the prose (`hipsec rekey SOCKET NAME [--ike]`) are not run; each must name
//! a subcommand that exists and flags it takes.
//!
//! Where a page says what a command shows, the test checks it: pings answered, the SA pair and
//! its mode in `status`, `sa list` and `policy list` after the edits above them, the guard's
//! chains, tshark decrypting the HIP ping, the README's quoted `hipsec size` answer.
//!
//! Long jobs (`hipsec lab` runs, calibrations, validations, benchmarks) are only parsed, with
//! HIPSEC_CHECK_ARGS set, which makes `hipsec` stop once its arguments parse; the report says
//! so per command. In a setup, `/run/hipsec*.sock`, SOCK, SOCK_A, SOCK_B and `/etc/hipsec/` are
//! the host's own socket and directory; a `ping` without `-c` sends 5. Without root, netns,
//! /dev/net/tun or a tool a setup needs, its commands are parsed and the rest print SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "docs_commands/hip.rs"]
mod hip;
#[path = "docs_commands/ike.rs"]
mod ike;
#[path = "docs_commands/mip6.rs"]
mod mip6;
#[path = "docs_commands/prose.rs"]
mod prose;
#[path = "docs_commands/runner.rs"]
mod runner;
use common::BIN;
use common::markdown::{self, Block, DocCommand};
use prose::{HelpCache, inline_problems};
use runner::{Env, Host, Report, hipsec_part, long_job, parse_or_skip, two_hosts, write_private};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A marked block: its setup, step and the file it is written to, if any.
struct Marked {
    setup: String,
    step: String,
    file: Option<String>,
    block: Block,
}

fn parse_mark(mark: &str) -> (String, String, Option<String>) {
    if let Some(why) = mark.strip_prefix("skip:") {
        return ("skip".into(), why.trim().into(), None);
    }
    let mut words = mark.split_whitespace();
    let head = words.next().unwrap_or("");
    let file = words.find_map(|w| w.strip_prefix("file=")).map(String::from);
    let (setup, step) = head.split_once('/').unwrap_or((head, ""));
    (setup.into(), step.into(), file)
}

/// The blocks of `step`, in doc order; a block of a step the setup does not have fails.
fn step<'a>(marked: &[&'a Marked], steps: &[&str], step: &str, r: &mut Report) -> Vec<&'a Marked> {
    if step == steps[0] {
        for m in marked.iter().filter(|m| !steps.contains(&m.step.as_str())) {
            for c in markdown::commands(&m.block) {
                r.failed(
                    &c,
                    &format!("setup {} has no step {:?} (it has {steps:?})", m.setup, m.step),
                );
            }
        }
    }
    marked.iter().filter(|m| m.step == step).copied().collect()
}

/// A setup that cannot run here: its hipsec commands are parsed, the rest SKIPPED.
fn cannot_run(marked: &[&Marked], why: &str, r: &mut Report) {
    let dir = common::tmpdir("docs-parse");
    for m in marked {
        for c in markdown::commands(&m.block) {
            parse_or_skip(&c, &dir, why, r);
        }
    }
}

const NO_NETNS: &str = "SKIPPED: needs root, ip netns, /dev/net/tun and its tools";

fn offline(marked: &[&Marked], r: &mut Report) {
    let dir = common::tmpdir("docs-offline");
    std::fs::copy(
        root().join("docs/results/2026-11-25/sizing/profile.json"),
        dir.join("profile.json"),
    )
    .unwrap();
    // A kept lab run, where lab.md's `lab report` names one.
    std::fs::create_dir_all(dir.join("lab-results")).unwrap();
    let run = root().join("docs/results/2026-11-25/hip-bex-quick");
    let st =
        Command::new("cp").arg("-r").arg(&run).arg(dir.join("lab-results/1795600000")).status();
    assert!(st.unwrap().success());
    let host =
        Host { name: "offline".into(), ns: None, sock: dir.join("none.sock"), dir, node: None };
    let mut env = Env { hosts: vec![host], subst: Vec::new() };
    for m in step(marked, &[""], "", r) {
        for c in markdown::commands(&m.block) {
            let Some(o) = env.run(&c, r).filter(|o| o.status.success()) else { continue };
            if let Some(why) = answer_quoted(&c, &String::from_utf8_lossy(&o.stdout)) {
                r.failed(&c, &why);
            }
        }
    }
}

/// Where a page quotes a `hipsec size` answer (the README's worked example), the answer this
/// build gives from the same profile: its first three sentences, as the page words them.
fn answer_quoted(c: &DocCommand, out: &str) -> Option<String> {
    let first = out.lines().next().unwrap_or("");
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let page = words(&std::fs::read_to_string(root().join(&c.file)).unwrap());
    let name = first.split(':').next().unwrap_or("");
    if !c.text.starts_with("hipsec size") || name.is_empty() || !page.contains(&format!("{name}: "))
    {
        return None;
    }
    let answer = words(&out.lines().take(3).collect::<Vec<_>>().join(" "));
    (!page.contains(&answer)).then(|| format!("the page quotes another answer than:\n{answer}"))
}

/// A 20-byte AEAD key (16 + salt) in hex, different for each `n`.
fn hex_key(n: u8) -> String {
    (0..20u8)
        .map(|i| format!("{:02x}", i.wrapping_mul(7).wrapping_add(n.wrapping_mul(31)) ^ 0xa5))
        .collect()
}

fn spoke7(key: &str) -> String {
    format!(
        "[[sa]]\ndirection = \"out\"\nsrc = \"192.0.2.1\"\ndst = \"192.0.2.7\"\npeer = \"192.0.2.7:4500\"\n\
         proto = \"esp\"\nspi = \"0x1007\"\nmode = \"tunnel\"\naead = \"aes128gcm\"\nkey = \"0x{key}\"\n"
    )
}

/// getting-started's two hosts, then what the other pages do to them.
fn manual_pair(marked: &[&Marked], r: &mut Report) {
    if !common::netns_ready(&["ping", "xxd", "nft"]) {
        return cannot_run(marked, NO_NETNS, r);
    }
    let dir = common::tmpdir("docs-manual-pair");
    let mut env = two_hosts(&format!("dcm{}", std::process::id()), &dir);
    let example =
        |f: &str| std::fs::read_to_string(root().join("examples/manual-pair").join(f)).unwrap();
    let a = env.localise(0, &example("host-a.toml"));
    write_private(&env.hosts[0].dir.join("host-a.toml"), &a);
    write_private(&env.hosts[1].dir.join("host-b.toml"), &env.localise(1, &example("host-b.toml")));
    // The files the pages' commands name, as their text describes them.
    let ad = env.hosts[0].dir.clone();
    write_private(&ad.join("node.toml"), &format!("{a}\n[state]\nfile = \"node.state\"\n"));
    write_private(&ad.join("spoke7.toml"), &spoke7(&hex_key(1)));
    write_private(&ad.join("new-keys.toml"), &spoke7(&hex_key(2)));
    write_private(&ad.join("spoke7.key"), &format!("{}\n", hex_key(3)));
    write_private(
        &ad.join("p.toml"),
        "[[policy]]\nid = 9\nsrc = \"10.0.1.1/32\"\ndst = \"10.0.9.0/24\"\naction = \"discard\"\n",
    );
    let steps = ["", "running", "stopped"];
    for s in steps {
        if s == "stopped" {
            env.hosts.iter_mut().for_each(Host::stop);
        }
        for m in step(marked, &steps, s, r) {
            for c in markdown::commands(&m.block) {
                let Some(o) = env.run(&c, r).filter(|o| o.status.success()) else { continue };
                if let Some(why) = manual_pair_shows(&c, &String::from_utf8_lossy(&o.stdout)) {
                    r.failed(&c, &why);
                }
            }
        }
    }
}

/// What the pages say their manual-pair commands show, where the output is the point.
fn manual_pair_shows(c: &DocCommand, out: &str) -> Option<String> {
    let t = c.text.as_str();
    let lacks = |words: &[&str]| {
        let missing: Vec<&str> = words.iter().copied().filter(|w| !out.contains(w)).collect();
        (!missing.is_empty()).then(|| format!("the output lacks {missing:?}:\n{out}"))
    };
    if t.starts_with("ping ") {
        let got = common::ping_received(out.as_bytes());
        return (got < 4).then(|| format!("{got} of 5 pings through the tunnel:\n{out}"));
    }
    if t.starts_with("hipsec status") {
        // "lists the two SAs with their packet counts"
        return lacks(&["0x00001001", "0x00002001", "packets protected 5"]);
    }
    if t.starts_with("hipsec guard show") {
        return lacks(&["hipsec_guard", "out_hipsec0", "in_hipsec0"]);
    }
    if t.starts_with("hipsec sa list") {
        // What the lines before it added, replaced and deleted.
        if out.contains("0x00001008") {
            return Some(format!("sa del left 0x1008:\n{out}"));
        }
        return lacks(&["0x00001007", "0x00002007", "192.0.2.7:4500"]);
    }
    if t.starts_with("hipsec policy list") {
        let v: serde_json::Value = serde_json::from_str(out).unwrap_or_default();
        let ids: Vec<u64> = v["policies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["id"].as_u64())
            .collect();
        // The config's policy 1 and the one `policy add` made; 9 was deleted.
        return (ids != [1, 2]).then(|| format!("policies {ids:?}, not [1, 2]:\n{out}"));
    }
    None
}

/// For a command that is not run: the script it starts (`./scripts/x.sh`) or the package it
/// builds (`cargo ... -p NAME`) is missing from the repository.
fn what_it_names_is_missing(root: &Path, cmd: &str) -> Option<String> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    if let Some(script) = words.first().and_then(|w| w.strip_prefix("./")) {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root.join(script)).map(|m| m.permissions().mode());
        return (!mode.is_ok_and(|m| m & 0o111 != 0))
            .then(|| format!("{script} is not an executable file of the repository"));
    }
    if words.first() == Some(&"cargo") {
        let pkg = words.windows(2).find(|w| w[0] == "-p").map(|w| w[1])?;
        let found = std::fs::read_to_string(root.join("crates").join(pkg).join("Cargo.toml"))
            .is_ok_and(|t| t.contains(&format!("name = \"{pkg}\"")));
        return (!found).then(|| format!("no package {pkg} in crates/"));
    }
    None
}

#[test]
fn every_doc_command_is_run_or_parsed() {
    let root = root();
    let mut r = Report::default();
    let mut marked = Vec::new();
    for f in markdown::user_docs(&root) {
        let text = std::fs::read_to_string(root.join(&f)).unwrap();
        for b in markdown::blocks(&f, &text) {
            let cmds = markdown::commands(&b);
            let Some(mark) = &b.mark else {
                for c in &cmds {
                    r.failed(
                        c,
                        "its block has no `<!-- test: SETUP -->` mark: nothing runs or parses it",
                    );
                }
                continue;
            };
            let (setup, step, file) = parse_mark(mark);
            if matches!(setup.as_str(), "config" | "sa-file") {
                continue; // loaded by every_doc_config_loads_and_every_proposal_parses
            }
            if cmds.is_empty() && file.is_none() {
                r.failures
                    .push(format!("{}:{}: a test mark on a block with no command", b.file, b.line));
            }
            marked.push(Marked { setup, step, file, block: b });
        }
    }
    let known = ["skip", "offline", "manual-pair", "hip-pair", "ike-pair", "mip6"];
    for m in marked.iter().filter(|m| !known.contains(&m.setup.as_str())) {
        for c in markdown::commands(&m.block) {
            r.failed(&c, &format!("no setup {:?} (there are {known:?})", m.setup));
        }
    }
    let of = |s: &str| marked.iter().filter(|m| m.setup == s).collect::<Vec<_>>();
    let dir = common::tmpdir("docs-skip");
    for m in of("skip") {
        for c in markdown::commands(&m.block) {
            if let Some(why) = what_it_names_is_missing(&root, &c.text) {
                r.failed(&c, &why);
            }
            parse_or_skip(&c, &dir, &m.step, &mut r);
        }
    }
    offline(&of("offline"), &mut r);
    manual_pair(&of("manual-pair"), &mut r);
    hip::hip_pair(&of("hip-pair"), &mut r);
    ike::ike_pair(&of("ike-pair"), &mut r);
    mip6::mip6(&of("mip6"), &mut r);
    println!("{}", r.lines.join("\n"));
    println!("{} commands ran, {} parsed only", r.ran, r.parsed);
    assert!(r.failures.is_empty(), "doc commands:\n{}", r.failures.join("\n\n"));
    assert!(r.ran + r.parsed >= 40, "only {} commands found", r.ran + r.parsed);
}

/// The extractor finds commands where a reader sees them: prompts, continuations, comments,
/// indented blocks, and the mark above a block.
#[test]
fn the_extractor_reads_blocks_as_a_reader_does() {
    let md = "text\n\n<!-- test: x/y file=a.toml -->\n```sh\na# hipsec run -c a.toml   # root\n\
              2001:db8::1\nb$ hipsec sa add SOCK k=1 \\\n    x=2\n```\n\nPara:\n\n    hipsec guard show\n    \
              [guard]\n\n```toml\nhipsec = 1\n```\n```\nhipsec lab list\ncrates/wire\n```\n";
    let b = markdown::blocks("t.md", md);
    assert_eq!(b.len(), 4, "{b:?}");
    assert_eq!(b[0].mark.as_deref(), Some("x/y file=a.toml"));
    assert_eq!(parse_mark("x/y file=a.toml"), ("x".into(), "y".into(), Some("a.toml".into())));
    let c = markdown::commands(&b[0]);
    let got: Vec<_> = c.iter().map(|c| (c.line, c.host.as_deref(), c.text.as_str())).collect();
    assert_eq!(
        got,
        [(5, Some("a"), "hipsec run -c a.toml"), (7, Some("b"), "hipsec sa add SOCK k=1 x=2")]
    );
    let texts =
        |i: usize| markdown::commands(&b[i]).into_iter().map(|c| c.text).collect::<Vec<_>>();
    assert_eq!(texts(1), ["hipsec guard show"]);
    assert_eq!(b[1].mark, None);
    assert!(texts(2).is_empty());
    assert_eq!(texts(3), ["hipsec lab list"]);
    assert_eq!(
        hipsec_part("head -c 2 /dev/zero | hipsec sa add S k=- > x").as_deref(),
        Some("hipsec sa add S k=-")
    );
    assert_eq!(hipsec_part("cargo run --release -p hipsec -- lab").as_deref(), Some("hipsec lab"));
    assert_eq!(long_job("hipsec lab list"), None);
    assert!(long_job("hipsec lab run hip-bex --full").is_some());
}

/// The TOML blocks the pages give as whole files load as the node loads them: a block marked
/// `config` as a node's config (its socket moved into the test's directory), `sa-file` as an
/// SA file. And every algorithm proposal in any TOML block, fragments too, is one the config
/// accepts.
#[test]
fn every_doc_config_loads_and_every_proposal_parses() {
    use node::config::proposal::{esp_suites, ike_suites};
    let root = root();
    let dir = common::tmpdir("docs-configs");
    let mut bad = Vec::new();
    let (mut files, mut proposals) = (0, 0);
    for f in markdown::user_docs(&root) {
        let text = std::fs::read_to_string(root.join(&f)).unwrap();
        for b in markdown::blocks(&f, &text).into_iter().filter(|b| b.lang == "toml") {
            let at = format!("{}:{}", b.file, b.line);
            let body = b.text();
            match b.mark.as_deref() {
                Some("config") => {
                    files += 1;
                    let sock = dir.join("x.sock").display().to_string();
                    let t = body.replace("/run/hipsec-node.sock", &sock);
                    if let Err(e) = node::config::parse(&at, &t) {
                        bad.push(format!("{at}: the config does not load: {e}"));
                    }
                }
                Some("sa-file") => {
                    files += 1;
                    if let Err(e) = node::config::safile::parse(&at, &body) {
                        bad.push(format!("{at}: the SA file does not load: {e}"));
                    }
                }
                _ => {}
            }
            for (n, line) in &b.lines {
                let Some((k, v)) = line.split_once('=') else { continue };
                let k = k.trim();
                if k != "proposals" && k != "esp_proposals" {
                    continue;
                }
                let v = v.split(" #").next().unwrap_or("").trim();
                let list: Vec<String> = toml::from_str::<toml::Value>(&format!("p = {v}"))
                    .ok()
                    .and_then(|t| t["p"].as_array().cloned())
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect();
                if list.is_empty() {
                    bad.push(format!("{}:{n}: {k} is not a list of strings", b.file));
                }
                for p in list {
                    proposals += 1;
                    let r = if k == "proposals" {
                        ike_suites(&p).map(|_| ())
                    } else {
                        esp_suites(&p).map(|_| ())
                    };
                    if let Err(e) = r {
                        bad.push(format!("{}:{n}: {k} {p:?}: {e}", b.file));
                    }
                }
            }
        }
    }
    println!("{files} whole files loaded, {proposals} proposals parsed");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(files >= 1 && proposals >= 5, "{files} files, {proposals} proposals");
}

/// The commands the pages name in their prose (`hipsec rekey SOCKET NAME [--ike]`) are not run,
/// but each names a subcommand that exists and only flags it takes, so a renamed command or
/// flag cannot linger in a sentence.
#[test]
fn every_command_named_in_prose_exists_with_its_flags() {
    let root = root();
    let mut cache = HelpCache::new();
    let (mut bad, mut seen) = (Vec::new(), 0);
    for f in markdown::user_docs(&root) {
        let text = std::fs::read_to_string(root.join(&f)).unwrap();
        for (n, line) in text.lines().enumerate() {
            for (i, span) in line.split('`').enumerate() {
                let Some(rest) = span.strip_prefix("hipsec ").filter(|_| i % 2 == 1) else {
                    continue;
                };
                seen += 1;
                let rest = rest.split(" | ").next().unwrap_or("");
                let words: Vec<&str> = rest.split_whitespace().collect();
                if words.first().is_some_and(|w| w.starts_with('-')) {
                    bad.push(format!("{f}:{}: `{span}`: no subcommand", n + 1));
                    continue;
                }
                for p in inline_problems(&mut cache, &[], &words) {
                    bad.push(format!("{f}:{}: `{span}`: {p}", n + 1));
                }
            }
        }
    }
    println!("{seen} commands named in prose checked");
    assert!(seen > 50, "only {seen} found");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
