//! A strongSwan peer for interop tests (../shared/reference/strongswan-peer.md): charon
//! 5.9 with kernel-libipsec in a namespace of its own, with a private /run (5.9.8 hard-codes
//! its pid file there) and its vici socket in the test's directory, driven by `swanctl`.
//!
//! ```text
//!   ns A (hipsec)                                  ns B (charon + libipsec, TUN ipsec0)
//!   hipsec0 10.0.1.1/24 ── va 192.0.2.1 / 2001:db8::1 ══ vb 192.0.2.2 / 2001:db8::2 ── lo 10.0.2.1
//! ```
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const CHARON: &str = "/usr/lib/ipsec/charon";
static SEQ: AtomicUsize = AtomicUsize::new(0);

/// True if the test can run here (root, netns, TUN, charon, swanctl); else prints SKIPPED.
pub fn can_run() -> bool {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let ip = Command::new("ip").args(["netns", "list"]).output().is_ok_and(|o| o.status.success());
    let swanctl = Command::new("sh")
        .args(["-c", "command -v swanctl"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !(root && ip && Path::new("/dev/net/tun").exists() && Path::new(CHARON).exists() && swanctl)
    {
        println!("SKIPPED: needs root, ip netns, /dev/net/tun, {CHARON} and swanctl");
        return false;
    }
    true
}

/// One run's choices.
#[derive(Debug, Clone)]
pub struct Setup {
    /// IPv6 outer addresses (else IPv4).
    pub v6: bool,
    /// Who initiates: hipsec (`start_action = start` on our side) or strongSwan.
    pub hipsec_initiates: bool,
    /// IKE proposal, swanctl syntax (both sides).
    pub proposal: &'static str,
    /// ESP proposal, swanctl syntax (both sides).
    pub esp: &'static str,
    /// CHILD SA rekey_time on both sides (swanctl syntax), e.g. "1h".
    pub child_rekey: &'static str,
    /// CHILD SA rekey_time on our side only, when it differs from `child_rekey`.
    pub hipsec_child_rekey: Option<&'static str>,
    /// CHILD SA rand_time on both sides (so that either end may rekey first).
    pub child_rand: &'static str,
    /// IKE SA rekey_time on both sides.
    pub ike_rekey: &'static str,
    /// Extra lines for our `[[connection]]` (e.g. `dpd_delay = "2s"`).
    pub hipsec_extra: &'static str,
    /// Start hipsec with `--debug-export-ike-keys`.
    pub export_keys: bool,
    /// Public-key authentication (RFC 7427): our Ed25519 key, charon's ECDSA P-256 key, raw
    /// public keys on both sides (made with openssl); else the PSK.
    pub pubkey: bool,
    /// A second child `net2` on both sides: 10.0.3.0/24 (ours) ↔ 10.0.4.0/24 (charon's), with
    /// the same proposals and timers as `net`.
    pub second_child: bool,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            v6: false,
            hipsec_initiates: true,
            proposal: "aes128gcm16-prfsha256-x25519",
            esp: "aes128gcm16",
            child_rekey: "1h",
            hipsec_child_rekey: None,
            child_rand: "0s",
            ike_rekey: "4h",
            hipsec_extra: "",
            export_keys: false,
            pubkey: false,
            second_child: false,
        }
    }
}

/// Two namespaces, a hipsec node in A and charon in B; torn down on drop.
pub struct Pair {
    pub a: String,
    pub b: String,
    pub dir: PathBuf,
    pub setup: Setup,
    hipsec: Option<Child>,
    charon: Option<Child>,
}

pub fn sh(args: &[&str]) -> Output {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

impl Pair {
    pub fn outer(&self, side: u8) -> String {
        if self.setup.v6 { format!("2001:db8::{side}") } else { format!("192.0.2.{side}") }
    }

    /// Builds the namespaces and both configs, starts hipsec, then charon, loads swanctl's
    /// config (which initiates when strongSwan is the initiator).
    pub fn start(bin: &str, setup: Setup) -> Pair {
        Pair::start_edited(bin, setup, |_| {})
    }

    fn wait_for(&self, ok: impl Fn(&Pair) -> bool, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ok(self) {
            assert!(
                Instant::now() < deadline,
                "no {what} after 10 s; logs in {}",
                self.dir.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn topology(&self) {
        let (a, b) = (&self.a, &self.b);
        sh(&["ip", "netns", "add", a]);
        sh(&["ip", "netns", "add", b]);
        sh(&[
            "ip", "link", "add", "va", "netns", a, "type", "veth", "peer", "name", "vb", "netns", b,
        ]);
        for (ns, dev, side) in [(a, "va", 1u8), (b, "vb", 2)] {
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
            sh(&["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0"]);
            sh(&["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0"]);
            sh(&["ip", "-n", ns, "addr", "add", &format!("192.0.2.{side}/24"), "dev", dev]);
            sh(&[
                "ip",
                "-n",
                ns,
                "addr",
                "add",
                &format!("2001:db8::{side}/64"),
                "dev",
                dev,
                "nodad",
            ]);
            sh(&["ip", "-n", ns, "link", "set", dev, "up"]);
        }
        sh(&["ip", "-n", b, "addr", "add", "10.0.2.1/32", "dev", "lo"]);
        sh(&["ip", "-n", b, "addr", "add", "10.0.4.1/32", "dev", "lo"]);
    }

    /// openssl: a private key (PKCS#8 PEM) and its public key (SubjectPublicKeyInfo PEM).
    fn keypair(&self, key: &Path, public: &Path, args: &[&str]) {
        let ok = Command::new("openssl").arg("genpkey").args(args).arg("-out").arg(key).status();
        assert!(ok.is_ok_and(|s| s.success()), "openssl genpkey {args:?}");
        let ok = Command::new("openssl")
            .args(["pkey", "-pubout", "-in"])
            .arg(key)
            .arg("-out")
            .arg(public)
            .status();
        assert!(ok.is_ok_and(|s| s.success()), "openssl pkey -pubout");
    }

    fn write_configs(&self) {
        let d = &self.dir;
        let s = &self.setup;
        let (ss_auth, hs_auth) = if s.pubkey {
            for sub in ["private", "pubkey"] {
                std::fs::create_dir_all(d.join(sub)).unwrap();
            }
            self.keypair(
                &d.join("hipsec.key"),
                &d.join("pubkey/hipsec.pub"),
                &["-algorithm", "ed25519"],
            );
            self.keypair(
                &d.join("private/charon.key"),
                &d.join("pubkey/charon.pub"),
                &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
            );
            (
                (
                    "auth = pubkey\n      pubkeys = charon.pub",
                    "auth = pubkey\n      pubkeys = hipsec.pub",
                ),
                (
                    format!("auth = \"pubkey\"\nkey = \"{}\"", d.join("hipsec.key").display()),
                    format!(
                        "auth = \"pubkey\"\npubkeys = \"{}\"",
                        d.join("pubkey/charon.pub").display()
                    ),
                ),
            )
        } else {
            (
                ("auth = psk", "auth = psk"),
                ("auth = \"psk\"".to_string(), "auth = \"psk\"".to_string()),
            )
        };
        let (ours, theirs) = (self.outer(1), self.outer(2));
        let ss_start = if s.hipsec_initiates { "none" } else { "start" };
        let hs_start = if s.hipsec_initiates { "start" } else { "none" };
        let ss_second = if s.second_child {
            format!(
                "      net2 {{\n        mode = tunnel\n        local_ts = 10.0.4.0/24\n        remote_ts = 10.0.3.0/24\n        esp_proposals = {esp}\n        rekey_time = {rk}\n        life_time = 2h\n        rand_time = {rand}\n        start_action = {ss_start}\n      }}\n",
                esp = s.esp,
                rk = s.child_rekey,
                rand = s.child_rand,
            )
        } else {
            String::new()
        };
        let hs_second = if s.second_child {
            format!(
                "[connection.children.net2]\nlocal_ts = [\"10.0.3.0/24\"]\nremote_ts = [\"10.0.4.0/24\"]\nesp_proposals = [\"{esp}\"]\nrekey_time = \"{rk}\"\nlife_time = \"2h\"\nrand_time = \"{rand}\"\nstart_action = \"{hs_start}\"\n",
                esp = s.esp,
                rk = s.hipsec_child_rekey.unwrap_or(s.child_rekey),
                rand = s.child_rand,
            )
        } else {
            String::new()
        };
        let inner =
            if s.second_child { "\"10.0.1.1/24\", \"10.0.3.1/24\"" } else { "\"10.0.1.1/24\"" };
        let strongswan = format!(
            "charon {{\n  load_modular = no\n  load = random nonce openssl aes sha1 sha2 hmac gcm kdf pem pkcs1 pkcs8 x509 pubkey curve25519 kernel-libipsec kernel-netlink socket-default vici updown\n  install_routes = yes\n  port = 500\n  port_nat_t = 4500\n  retransmit_timeout = 1\n  plugins {{\n    vici {{\n      socket = unix://{vici}\n    }}\n  }}\n  filelog {{\n    log {{\n      path = {log}\n      time_format = %T\n      time_add_ms = yes\n      default = 1\n      ike = 2\n    }}\n  }}\n}}\nswanctl {{\n  socket = unix://{vici}\n}}\n",
            vici = d.join("charon.vici").display(),
            log = d.join("charon.log").display(),
        );
        std::fs::write(d.join("strongswan.conf"), strongswan).unwrap();
        // Explicit hard lifetimes: swanctl derives them from rekey_time (life_time = 110 %,
        // over_time = 10 %, in whole seconds), and with the tests' short rekey times that rounds
        // to the rekey time itself, so charon let CHILD SAs expire and deleted IKE SAs (then
        // recreated them) instead of rekeying: one lost ping in the tshark test.
        let swanctl = format!(
            "connections {{\n  site {{\n    version = 2\n    local_addrs = {theirs}\n    remote_addrs = {ours}\n    proposals = {prop}\n    rekey_time = {ike_rk}\n    over_time = 1h\n    encap = yes\n    local {{\n      {ss_local}\n      id = node2.example\n    }}\n    remote {{\n      {ss_remote}\n      id = node1.example\n    }}\n    children {{\n      net {{\n        mode = tunnel\n        local_ts = 10.0.2.0/24\n        remote_ts = 10.0.1.0/24\n        esp_proposals = {esp}\n        rekey_time = {rk}\n        life_time = 2h\n        rand_time = {rand}\n        start_action = {ss_start}\n      }}\n{ss_second}    }}\n  }}\n}}\nsecrets {{\n  ike-1 {{\n    id-1 = node1.example\n    id-2 = node2.example\n    secret = \"correct horse battery staple\"\n  }}\n}}\n",
            prop = s.proposal,
            esp = s.esp,
            rk = s.child_rekey,
            rand = s.child_rand,
            ike_rk = s.ike_rekey,
            ss_local = ss_auth.0,
            ss_remote = ss_auth.1,
        );
        std::fs::write(d.join("swanctl.conf"), swanctl).unwrap();
        let local = if s.v6 { format!("[{ours}]:4500") } else { format!("{ours}:4500") };
        let node = format!(
            "[interface]\nname = \"hipsec0\"\naddresses = [{inner}]\n[network]\nlocal = \"{local}\"\n[control]\nsocket = \"{sock}\"\n[[connection]]\nname = \"site\"\nremote_addrs = \"{theirs}\"\nproposals = [\"{prop}\"]\nrekey_time = \"{ike_rk}\"\nencap = true\n{extra}\n[connection.local]\n{hs_local}\nid = \"node1.example\"\n[connection.remote]\n{hs_remote}\nid = \"node2.example\"\n[connection.children.net]\nlocal_ts = [\"10.0.1.0/24\"]\nremote_ts = [\"10.0.2.0/24\"]\nesp_proposals = [\"{esp}\"]\nrekey_time = \"{rk}\"\nlife_time = \"2h\"\nrand_time = \"{rand}\"\nstart_action = \"{hs_start}\"\n{hs_second}[secrets.ike-1]\nid = [\"node1.example\", \"node2.example\"]\nsecret = \"correct horse battery staple\"\n",
            sock = d.join("a.sock").display(),
            prop = s.proposal,
            esp = s.esp,
            rk = s.hipsec_child_rekey.unwrap_or(s.child_rekey),
            rand = s.child_rand,
            ike_rk = s.ike_rekey,
            extra = s.hipsec_extra,
            hs_local = hs_auth.0,
            hs_remote = hs_auth.1,
        );
        let path = d.join("a.toml");
        std::fs::write(&path, node).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    /// `swanctl ARGS` against this charon.
    pub fn swanctl(&self, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.b, "swanctl"])
            .args(args)
            .env("STRONGSWAN_CONF", self.dir.join("strongswan.conf"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// hipsec's `status --json`.
    pub fn status(&self, bin: &str) -> serde_json::Value {
        let out = Command::new(bin)
            .args(["status", "--json"])
            .arg(self.dir.join("a.sock"))
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    /// Waits until hipsec reports an established IKE SA with a CHILD SA, and the route to the
    /// peer's inner network is in place.
    pub fn wait_up(&self, bin: &str) {
        let up = |p: &Pair| {
            p.status(bin)["ike"]["ike_sas"].as_array().is_some_and(|v| {
                v.iter().any(|s| {
                    s["state"] == "established"
                        && s["children"].as_array().is_some_and(|c| !c.is_empty())
                })
            })
        };
        self.wait_for(up, "established IKE SA with a CHILD SA");
        let _ = Command::new("ip")
            .args(["-n", &self.a, "route", "replace", "10.0.2.0/24", "dev", "hipsec0"])
            .status();
        if self.setup.second_child {
            let _ = Command::new("ip")
                .args(["-n", &self.a, "route", "replace", "10.0.4.0/24", "dev", "hipsec0"])
                .status();
        }
    }

    /// `ping -c N` from our inner address to the peer's; returns how many answers came.
    pub fn ping(&self, count: u32, interval: &str) -> u32 {
        self.ping_between("10.0.1.1", "10.0.2.1", count, interval)
    }

    /// `ping -c N` from our inner address `from` to the peer's `to`.
    pub fn ping_between(&self, from: &str, to: &str, count: u32, interval: &str) -> u32 {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.a,
                "ping",
                "-q",
                "-c",
                &count.to_string(),
                "-i",
                interval,
                "-W",
                "1",
                "-I",
                from,
                to,
            ])
            .output()
            .unwrap();
        crate::common::ping_received(&out.stdout) as u32
    }

    /// A SHA-256 sink on B's inner address, port `port`; runs `sender` (Python, given a
    /// connected socket `s`) on A; returns (the sink's SHA-256, the sender's stdout).
    fn tcp_through(&self, port: u16, sender: &str) -> (String, String) {
        let sink = format!(
            "import hashlib,socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('10.0.2.1',{port}));s.listen(1);print('ready',flush=True)\nc,_=s.accept();h=hashlib.sha256()\nwhile True:\n  b=c.recv(65536)\n  if not b: break\n  h.update(b)\nprint(h.hexdigest())"
        );
        let mut server = Command::new("ip")
            .args(["netns", "exec", &self.b, "python3", "-c", &sink])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines =
            std::io::BufRead::lines(std::io::BufReader::new(server.stdout.take().unwrap()));
        assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("ready"));
        let send = format!(
            "import hashlib,os,socket,time\ns=socket.create_connection(('10.0.2.1',{port}),source_address=('10.0.1.1',0),timeout=30)\n{sender}"
        );
        let out = Command::new("ip")
            .args(["netns", "exec", &self.a, "python3", "-c", &send])
            .output()
            .unwrap();
        assert!(out.status.success(), "sender: {}", String::from_utf8_lossy(&out.stderr));
        let got = lines.next().and_then(Result::ok).unwrap_or_default();
        let _ = server.wait();
        (got, String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Sends `bytes` over TCP from A's inner address to a sink on B's; returns the SHA-256 the
    /// sink computed of what it received and the one of what was sent.
    pub fn tcp_transfer(&self, bytes: usize) -> (String, String) {
        self.tcp_through(
            5201,
            &format!("d=os.urandom({bytes})\ns.sendall(d);s.close()\nprint(hashlib.sha256(d).hexdigest())"),
        )
    }

    /// Streams random bytes over TCP from A to a sink on B for `seconds` (at most `rate_bps`);
    /// returns (SHA-256 at the sink, SHA-256 sent, bytes sent).
    pub fn tcp_stream(&self, seconds: f64, rate_bps: u64) -> (String, String, u64) {
        let (got, text) = self.tcp_through(
            5202,
            &format!("h=hashlib.sha256();n=0;t0=time.time();chunk=16384\nwhile time.time()-t0<{seconds}:\n  d=os.urandom(chunk);s.sendall(d);h.update(d);n+=chunk\n  ahead=n*8/{rate_bps}-(time.time()-t0)\n  if ahead>0: time.sleep(ahead)\ns.close()\nprint(h.hexdigest(),n)"),
        );
        let mut f = text.split_whitespace();
        let sent = f.next().unwrap_or_default().to_string();
        let n = f.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        (got, sent, n)
    }

    /// Stops charon (SIGKILL: no DELETE reaches us) and starts it again with the same config.
    pub fn restart_charon(&mut self) {
        if let Some(mut c) = self.charon.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(self.dir.join("charon.vici"));
        let _ = std::fs::remove_file(self.dir.join("run").join("charon.pid"));
        self.spawn_charon();
        self.wait_for(|p| p.dir.join("charon.vici").exists(), "charon's vici socket");
        let o = self.swanctl(&[
            "--load-all",
            "--file",
            &self.dir.join("swanctl.conf").display().to_string(),
        ]);
        assert!(o.status.success(), "swanctl --load-all: {}", String::from_utf8_lossy(&o.stdout));
    }

    fn spawn_hipsec(&mut self, bin: &str) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("hipsec.log"))
            .unwrap();
        self.hipsec = Some(
            Command::new("ip")
                .args(["netns", "exec", &self.a, bin, "run", "-c"])
                .arg(self.dir.join("a.toml"))
                .args(self.setup.export_keys.then_some("--debug-export-ike-keys"))
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap(),
        );
        self.wait_for(|p| p.dir.join("a.sock").exists(), "hipsec's control socket");
    }

    /// Stops the hipsec node (SIGKILL: no DELETE reaches charon, and nothing of its state
    /// survives but the fail-closed guard) and starts it again with the same config.
    pub fn restart_hipsec(&mut self, bin: &str) {
        if let Some(mut c) = self.hipsec.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(self.dir.join("a.sock"));
        self.spawn_hipsec(bin);
    }

    fn spawn_charon(&mut self) {
        let conf = self.dir.join("strongswan.conf");
        let cmd = format!(
            "mount --make-rprivate / && mount --bind {} /run && exec {CHARON}",
            self.dir.join("run").display()
        );
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("charon.out"))
            .unwrap();
        self.charon = Some(
            Command::new("ip")
                .args(["netns", "exec", &self.b, "sh", "-c", &cmd])
                .env("STRONGSWAN_CONF", &conf)
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .unwrap(),
        );
    }

    /// charon's log so far.
    pub fn charon_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("charon.log")).unwrap_or_default()
    }

    /// hipsec's log so far.
    pub fn hipsec_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("hipsec.log")).unwrap_or_default()
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for c in [self.charon.as_mut(), self.hipsec.as_mut()].into_iter().flatten() {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Pair {
    /// As [`Pair::start`], with `edit` run on the written configs (and the directory, to add
    /// credential files) before hipsec and charon start: for authentication other than the
    /// PSK and raw keys `Setup` knows, such as certificates.
    pub fn start_edited(bin: &str, setup: Setup, edit: impl FnOnce(&Path)) -> Pair {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let base = format!("hss-{}-{n}", std::process::id());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(&base);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("run")).unwrap();
        let mut p = Pair {
            a: format!("{base}-a"),
            b: format!("{base}-b"),
            dir,
            setup,
            hipsec: None,
            charon: None,
        };
        p.topology();
        p.write_configs();
        edit(&p.dir);
        p.spawn_hipsec(bin);
        p.spawn_charon();
        p.wait_for(|p| p.dir.join("charon.vici").exists(), "charon's vici socket");
        let o =
            p.swanctl(&["--load-all", "--file", &p.dir.join("swanctl.conf").display().to_string()]);
        assert!(o.status.success(), "swanctl --load-all: {}", String::from_utf8_lossy(&o.stdout));
        p
    }

    /// Waits up to `secs` for `ok`; false if it never held.
    pub fn wait_until(&self, secs: u64, ok: impl Fn(&Pair) -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !ok(self) {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        true
    }
}
