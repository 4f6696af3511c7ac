//! The runner of docs_commands.rs: a doc command run on a host of a setup (its namespace,
//! directory, socket and node) or parsed with HIPSEC_CHECK_ARGS, and the report of each.

use crate::common::markdown::DocCommand;
use crate::common::{self, BIN};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// What the test did with each command, and what went wrong.
#[derive(Default)]
pub struct Report {
    pub lines: Vec<String>,
    pub failures: Vec<String>,
    pub ran: usize,
    pub parsed: usize,
}

impl Report {
    pub fn ran(&mut self, c: &DocCommand) {
        self.ran += 1;
        self.lines.push(format!("RAN          {}: {}", c.at(), c.text));
    }
    pub fn parsed(&mut self, c: &DocCommand, why: &str) {
        self.parsed += 1;
        self.lines.push(format!("PARSED ONLY  {}: {} ({why})", c.at(), c.text));
    }
    pub fn skipped(&mut self, c: &DocCommand, why: &str) {
        self.lines.push(format!("SKIPPED      {}: {} ({why})", c.at(), c.text));
    }
    pub fn failed(&mut self, c: &DocCommand, why: &str) {
        self.failures.push(format!("{}: `{}`: {why}", c.at(), c.text));
    }
}

/// The `hipsec ...` part of a command (`cargo run ... -p hipsec -- ARGS` is `hipsec ARGS`), up
/// to the next pipe or redirection.
pub fn hipsec_part(cmd: &str) -> Option<String> {
    let start = if let Some(rest) = cmd.strip_prefix("cargo run").and_then(|r| r.split_once(" -- "))
    {
        format!("hipsec {}", rest.1)
    } else {
        let at = cmd.find("hipsec ").filter(|&i| i == 0 || cmd[..i].trim_end().ends_with('|'))?;
        cmd[at..].to_string()
    };
    let end = start.find(['|', '>', ';', '&']).unwrap_or(start.len());
    Some(start[..end].trim().to_string())
}

/// Why a hipsec command is only parsed: it runs for minutes (or is a benchmark, which the
/// house rules keep off this shared machine).
pub fn long_job(hipsec: &str) -> Option<&'static str> {
    let w: Vec<&str> = hipsec.split_whitespace().collect();
    match (w.get(1).copied(), w.get(2).copied()) {
        (Some("lab"), None) => Some("every lab scenario: minutes"),
        (Some("lab"), Some(s)) if s.starts_with('-') => Some("every lab scenario: minutes"),
        (Some("lab"), Some("run")) => Some("a lab scenario: minutes"),
        (Some("lab"), Some("calibrate")) => Some("a calibration: minutes"),
        (Some("lab"), Some("validate")) => Some("a validation: minutes"),
        (Some("bench"), _) => Some("a benchmark"),
        _ => None,
    }
}

/// Runs `hipsec ...` with HIPSEC_CHECK_ARGS: its arguments parse, or the error.
pub fn parse_check(dir: &Path, hipsec: &str) -> Result<(), String> {
    let o = shell(dir, hipsec).env("HIPSEC_CHECK_ARGS", "1").output().unwrap();
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("does not parse: {}", String::from_utf8_lossy(&o.stderr)))
    }
}

/// `bash -o pipefail -c CMD` in `dir` (under `timeout` unless it runs in the background),
/// `hipsec` being this build, HOME the directory; in namespace `ns` if given.
pub fn shell_in(ns: Option<&str>, dir: &Path, cmd: &str, background: bool) -> Command {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut c = Command::new(if ns.is_some() { "ip" } else { "env" });
    if let Some(ns) = ns {
        c.args(["netns", "exec", ns]);
    }
    if background {
        c.args(["bash", "-c", &format!("exec {cmd}")]);
    } else {
        c.args(["timeout", "60", "bash", "-o", "pipefail", "-c", cmd]);
    }
    c.current_dir(dir).env("PATH", path).env("HOME", dir);
    c
}

pub fn shell(dir: &Path, cmd: &str) -> Command {
    shell_in(None, dir, cmd, false)
}

/// Parses a command that cannot run here (`why`); a non-hipsec one is SKIPPED.
pub fn parse_or_skip(c: &DocCommand, dir: &Path, why: &str, r: &mut Report) {
    match hipsec_part(&c.text) {
        Some(h) => match parse_check(dir, &h) {
            Ok(()) => r.parsed(c, why),
            Err(e) => r.failed(c, &e),
        },
        None => r.skipped(c, why),
    }
}

pub fn output_text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// One host of a setup: its namespace (none offline), directory, control socket and node.
pub struct Host {
    pub name: String,
    pub ns: Option<String>,
    pub dir: PathBuf,
    pub sock: PathBuf,
    pub node: Option<Child>,
}

impl Host {
    pub fn stop(&mut self) {
        if let Some(mut c) = self.node.take() {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let _ = c.wait();
        }
    }
    pub fn command(&self, cmd: &str) -> Command {
        shell_in(self.ns.as_deref(), &self.dir, cmd, false)
    }
    pub fn background(&self, cmd: &str) -> Command {
        shell_in(self.ns.as_deref(), &self.dir, cmd, true)
    }
}

/// The hosts of a setup (`a`, `b`) and the words its commands have replaced.
pub struct Env {
    pub hosts: Vec<Host>,
    pub subst: Vec<(String, String)>,
}

impl Drop for Env {
    fn drop(&mut self) {
        for h in &mut self.hosts {
            h.stop();
            if let Some(ns) = &h.ns {
                let _ = Command::new("ip").args(["netns", "del", ns]).status();
            }
        }
    }
}

impl Env {
    /// The host a command's prompt names (none: the first).
    pub fn host_of(&self, c: &DocCommand) -> Option<usize> {
        match &c.host {
            None => Some(0),
            Some(h) => self.hosts.iter().position(|x| &x.name == h),
        }
    }

    /// `text` as host `i` types it: its socket, its directory, the setup's own values.
    pub fn localise(&self, i: usize, text: &str) -> String {
        let mut t = text.to_string();
        for (from, to) in &self.subst {
            t = t.replace(from, to);
        }
        let sock = |k: usize| self.hosts[k.min(self.hosts.len() - 1)].sock.display().to_string();
        // Every `/run/hipsec*.sock` the docs name is this host's socket.
        while let Some(at) = t.find("/run/hipsec") {
            let end = t[at..].find(".sock").map_or(t.len(), |e| at + e + 5);
            t.replace_range(at..end, &sock(i));
        }
        let words: Vec<String> = t
            .split(' ')
            .map(|w| match w {
                "SOCK_A" => sock(0),
                "SOCK_B" => sock(1),
                "SOCK" | "SOCKET" => sock(i),
                w => w.to_string(),
            })
            .collect();
        words.join(" ").replace("/etc/hipsec/", &format!("{}/", self.hosts[i].dir.display()))
    }

    /// Starts `cmd` (a `hipsec run`) on host `i` in the background and waits until its node
    /// answers on the host's socket.
    pub fn start(&mut self, i: usize, cmd: &str) -> Result<(), String> {
        self.hosts[i].stop();
        let _ = std::fs::remove_file(&self.hosts[i].sock);
        let log = self.hosts[i].dir.join("node.log");
        let f = std::fs::File::create(&log).unwrap();
        let mut command = self.hosts[i].background(cmd);
        let child = command.stdout(f.try_clone().unwrap()).stderr(f).spawn().unwrap();
        self.hosts[i].node = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.hosts[i].sock.exists() {
            let exited = self.hosts[i].node.as_mut().unwrap().try_wait().unwrap().is_some();
            if exited || Instant::now() > deadline {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(format!("the node did not start:\n{text}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Runs one doc command on its host: `hipsec run` and `hipsec monitor` in the background
    /// (the node must answer on its socket; monitor must still be streaming after 0.5 s),
    /// anything else to its end. The output of a finished command, for the setup's checks.
    pub fn run(&mut self, c: &DocCommand, r: &mut Report) -> Option<Output> {
        if let Some(why) = hipsec_part(&c.text).as_deref().and_then(long_job) {
            parse_or_skip(c, &self.hosts[0].dir, why, r);
            return None;
        }
        let Some(i) = self.host_of(c) else {
            r.failed(c, "its prompt names a host this setup does not have");
            return None;
        };
        let mut cmd = self.localise(i, &c.text);
        if cmd.starts_with("hipsec run ") {
            match self.start(i, &cmd) {
                Ok(()) => r.ran(c),
                Err(e) => r.failed(c, &e),
            }
            return None;
        }
        if cmd.starts_with("hipsec monitor ") {
            let mut child =
                self.hosts[i].background(&cmd).stdout(std::process::Stdio::null()).spawn().unwrap();
            std::thread::sleep(Duration::from_millis(500));
            match child.try_wait().unwrap() {
                Some(st) => r.failed(c, &format!("monitor ended at once: {st}")),
                None => r.ran(c),
            }
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        if cmd.starts_with("ping ") && !cmd.contains(" -c ") {
            cmd = cmd.replacen("ping ", "ping -c 5 -i 0.2 -W 1 ", 1);
        }
        let o = self.hosts[i].command(&cmd).output().unwrap();
        if o.status.success() {
            r.ran(c);
        } else {
            r.failed(c, &format!("`{cmd}` failed ({}):\n{}", o.status, output_text(&o)));
        }
        Some(o)
    }
}

pub fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Two hosts in namespaces `{base}-a`, `{base}-b` (192.0.2.1 on va, 192.0.2.2 on vb), each
/// with a directory of its own under `dir`.
pub fn two_hosts(base: &str, dir: &Path) -> Env {
    let ns = common::two_namespaces(base);
    let hosts = ns
        .into_iter()
        .enumerate()
        .map(|(i, ns)| {
            let d = dir.join(["a", "b"][i]);
            std::fs::create_dir_all(&d).unwrap();
            let name = ["a", "b"][i].to_string();
            Host { ns: Some(ns), sock: dir.join(format!("{name}.sock")), dir: d, node: None, name }
        })
        .collect();
    Env { hosts, subst: Vec::new() }
}

/// Five pings (`ping` with `args`) from host A captured on its link (ESP in UDP or as IP
/// protocol 50) to `file` in its directory, for the pages' tshark commands.
pub fn capture(env: &Env, file: &str, args: &[&str]) {
    let a = &env.hosts[0];
    let ns = a.ns.as_deref().unwrap();
    let mut td = Command::new("ip")
        .args(["netns", "exec", ns, "tcpdump", "-Z", "root", "-U", "-i", "va", "-w"])
        .arg(a.dir.join(file))
        .arg("udp or ip proto 50")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let _ = Command::new("ip")
        .args(["netns", "exec", ns, "ping", "-c", "5", "-i", "0.2", "-W", "1"])
        .args(args)
        .output();
    std::thread::sleep(Duration::from_millis(300));
    let _ = Command::new("kill").args(["-TERM", &td.id().to_string()]).status();
    let _ = td.wait();
}
