//! Mobile IPv6 forwarding between two hipsec nodes: a home agent and a
//! mobile node away from home. The mobile node registers its care-of address in an ESP-protected
//! Binding Update (RFC 3776); the home agent intercepts its home address on the home link (proxy
//! neighbour discovery) and tunnels it to the care-of address in ESP tunnel mode (RFC 4877); the
//! mobile node's traffic comes back through the reverse tunnel. Then the mobile node moves to
//! another care-of address and registers again, under traffic.
//!
//! ```text
//!   ns CN: cv 2001:db8:1::2/64 ─┐                     home link 2001:db8:1::/64 (bridge in R)
//!   ns HA: hv 2001:db8:1::1/64 ─┤ br0 2001:db8:1::fe  ns R (router)
//!     hipsec [home-agent]       │  rm 2001:db8:2::1/64, 2001:db8:3::1/64, fe80::1
//!     TUN mip6ha0               │        │ foreign link
//!                                        │
//!   ns MN: mv 2001:db8:2::100/64 (care-of; later 2001:db8:3::100), via fe80::1 to the HA
//!     hipsec [mobile-node], TUN mip6mn0 with the home address 2001:db8:1::100
//! ```
//! Needs root, netns, TUN, nft, tcpdump and python3; otherwise SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::BIN;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const HOA: &str = "2001:db8:1::100";
const HA: &str = "2001:db8:1::1";
const CN: &str = "2001:db8:1::2";
const COA1: &str = "2001:db8:2::100";
/// A second mobile node the home agent serves (IKEv2 test only; it never connects).
const HOA2: &str = "2001:db8:1::101";
const COA2: &str = "2001:db8:3::100";

fn key(seed: u8) -> String {
    format!(
        "0x{}",
        (0..20).map(|i| format!("{:02x}", seed.wrapping_add(i * 7))).collect::<String>()
    )
}

fn sa(table: &str, src: &str, dst: &str, mode: &str, spi: u32, seed: u8) -> String {
    format!(
        "[{table}]\nsrc = \"{src}\"\ndst = \"{dst}\"\nproto = \"esp\"\nmode = \"{mode}\"\n\
         spi = \"0x{spi:x}\"\naead = \"aes128gcm\"\nkey = \"{}\"\n",
        key(seed)
    )
}

struct Lab {
    base: String,
    dir: PathBuf,
    nodes: Vec<Child>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.nodes {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            for i in [1, 2] {
                let log = std::fs::read_to_string(self.dir.join(format!("{i}.log")));
                eprintln!("--- node {i} log:\n{}", log.unwrap_or_default());
            }
        }
        for n in ["cn", "ha", "r", "mn"] {
            let _ = Command::new("ip").args(["netns", "del", &self.ns(n)]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Lab {
    fn ns(&self, n: &str) -> String {
        format!("{}-{n}", self.base)
    }

    /// `ip -n NS ARGS...`
    fn ip(&self, n: &str, args: &str) {
        let ns = self.ns(n);
        let mut a = vec!["ip", "-n", &ns];
        a.extend(args.split_whitespace());
        common::sh(&a);
    }

    fn exec(&self, n: &str, args: &[&str]) -> std::process::Output {
        Command::new("ip").args(["netns", "exec", &self.ns(n)]).args(args).output().unwrap()
    }

    fn sysctl(&self, n: &str, kv: &str) {
        let out = self.exec(n, &["sysctl", "-qw", kv]);
        assert!(out.status.success(), "sysctl {kv}: {}", common::stderr(&out));
    }

    fn new(tag: &str) -> Lab {
        let base = format!("mip6{tag}-{}", std::process::id());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(&base);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let lab = Lab { base, dir, nodes: Vec::new() };
        for n in ["cn", "ha", "r", "mn"] {
            common::sh(&["ip", "netns", "add", &lab.ns(n)]);
            lab.ip(n, "link set lo up");
            lab.sysctl(n, "net.ipv6.conf.all.accept_dad=0");
            lab.sysctl(n, "net.ipv6.conf.default.accept_dad=0");
        }
        for (a, an, b, bn) in
            [("hv", "ha", "rh", "r"), ("cv", "cn", "rc", "r"), ("mv", "mn", "rm", "r")]
        {
            common::sh(&[
                "ip",
                "link",
                "add",
                a,
                "netns",
                &lab.ns(an),
                "type",
                "veth",
                "peer",
                "name",
                b,
                "netns",
                &lab.ns(bn),
            ]);
        }
        lab.ip("r", "link add br0 type bridge");
        lab.ip("r", "link set rh master br0");
        lab.ip("r", "link set rc master br0");
        for d in ["br0", "rh", "rc", "rm"] {
            lab.ip("r", &format!("link set {d} up"));
        }
        lab.ip("r", "addr add 2001:db8:1::fe/64 dev br0 nodad");
        lab.ip("r", "addr add 2001:db8:2::1/64 dev rm nodad");
        lab.ip("r", "addr add 2001:db8:3::1/64 dev rm nodad");
        lab.ip("r", "addr add fe80::1/64 dev rm nodad");
        lab.sysctl("r", "net.ipv6.conf.all.forwarding=1");
        lab.ip("cn", &format!("addr add {CN}/64 dev cv nodad"));
        lab.ip("cn", "link set cv up");
        lab.ip("ha", &format!("addr add {HA}/64 dev hv nodad"));
        lab.ip("ha", "link set hv up");
        lab.ip("ha", "route add 2001:db8:2::/47 via 2001:db8:1::fe");
        // The home agent routes between the reverse tunnel (its TUN) and the home link.
        lab.sysctl("ha", "net.ipv6.conf.all.forwarding=1");
        lab.ip("mn", &format!("addr add {COA1}/64 dev mv nodad"));
        lab.ip("mn", "link set mv up");
        lab.ip("mn", &format!("route add {HA}/128 via fe80::1 dev mv"));
        lab
    }

    /// The two configs; with `ike`, the signalling SAs come from an IKEv2 connection whose
    /// child says `mip6 = "signalling"` (RFC 4877 §4.4) instead of `sa-in`/`sa-out`.
    fn write_configs(&self, ike: bool) {
        let (ha_keys, mn_keys) = if ike {
            ("ike = \"mn1\"\n".to_string(), "ike = \"ha\"\n".to_string())
        } else {
            (
                sa("home-agent.mobile-node.sa-in", HOA, HA, "transport", 0x1100, 1)
                    + &sa("home-agent.mobile-node.sa-out", HA, HOA, "transport", 0x2100, 2),
                sa("mobile-node.sa-out", HOA, HA, "transport", 0x1100, 1)
                    + &sa("mobile-node.sa-in", HA, HOA, "transport", 0x2100, 2),
            )
        };
        let conn = |name: &str,
                    remote: &str,
                    local: &str,
                    me: &str,
                    peer: &str,
                    ts: (&str, &str),
                    start: &str| {
            if !ike {
                return String::new();
            }
            format!(
                "\n[[connection]]\nname = \"{name}\"\nremote_addrs = \"{remote}\"\n{local}\
                 proposals = [\"aes128gcm16-prfsha256-x25519\"]\n[connection.local]\nauth = \"psk\"\n\
                 id = \"{me}\"\n[connection.remote]\nauth = \"psk\"\nid = \"{peer}\"\n\
                 [connection.children.bu]\nlocal_ts = [\"{}[mobility-header]\"]\n\
                 remote_ts = [\"{}[mobility-header]\"]\nmode = \"transport\"\nmip6 = \"signalling\"\n\
                 esp_proposals = [\"aes128gcm16\"]\nstart_action = \"{start}\"\n",
                ts.0, ts.1
            )
        };
        let secrets = if ike {
            "\n[secrets.bu]\nid = [\"ha.example\", \"mn1.example\", \"mn2.example\"]\n\
             secret = \"a mobile node's secret\"\n"
        } else {
            ""
        };
        // With IKEv2 the home agent serves a second mobile node, whose connection (also open to
        // any peer) comes first: IKE_SA_INIT carries no identity, so the mobile node's
        // IKE_AUTH must move the exchange to its own connection (by its IDi).
        let (other_node, other_conn) = if ike {
            (
                format!("\n[[home-agent.mobile-node]]\nhome-address = \"{HOA2}\"\nike = \"mn2\"\n"),
                conn("mn2", "%any", "", "ha.example", "mn2.example", (HA, HOA2), "none"),
            )
        } else {
            (String::new(), String::new())
        };
        let ha = format!(
            "[interface]\nname = \"mip6ha0\"\n\n[network]\ntransport = \"raw\"\nlocal = \"{HA}\"\n\n[control]\nsocket = \"{}\"\n\n[log]\nlevel = \"debug\"\n\n[home-agent]\ninterface = \"hv\"\n\
             address = \"{HA}\"\nhome-prefix = \"2001:db8:1::/64\"\nmax-lifetime = 600\n\n\
             [[home-agent.mobile-node]]\nhome-address = \"{HOA}\"\n{ha_keys}{}{}{other_node}{other_conn}{}{secrets}",
            self.sock(1).display(),
            sa("home-agent.mobile-node.tunnel-in", HOA, HA, "tunnel", 0x3100, 3),
            sa("home-agent.mobile-node.tunnel-out", HA, HOA, "tunnel", 0x4100, 4),
            conn("mn1", "%any", "", "ha.example", "mn1.example", (HA, HOA), "none"),
        );
        let mn = format!(
            "[interface]\nname = \"mip6mn0\"\naddresses = [\"{HOA}/128\"]\n\n[network]\n\
             transport = \"raw\"\nlocal = \"::\"\npeer = \"{HA}\"\n\n[control]\nsocket = \"{}\"\n\n[log]\nlevel = \"debug\"\n\n\
             [mobile-node]\ninterface = \"mv\"\nhome-address = \"{HOA}\"\nhome-agent = \"{HA}\"\n\
             lifetime = 60\n{mn_keys}{}{}{}{secrets}",
            self.sock(2).display(),
            sa("mobile-node.tunnel-out", HOA, HA, "tunnel", 0x3100, 3),
            sa("mobile-node.tunnel-in", HA, HOA, "tunnel", 0x4100, 4),
            // The IKE SA runs between the care-of address and the home agent (RFC 4877 §4.4).
            conn(
                "ha",
                HA,
                &format!("local_addrs = \"{COA1}\"\n"),
                "mn1.example",
                "ha.example",
                (HOA, HA),
                "start"
            ),
        );
        for (i, text) in [(1, ha), (2, mn)] {
            let p = self.dir.join(format!("{i}.toml"));
            std::fs::write(&p, text).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
    }

    fn sock(&self, i: usize) -> PathBuf {
        self.dir.join(format!("{i}.sock"))
    }

    fn status(&self, i: usize) -> serde_json::Value {
        let out = Command::new(BIN).args(["status", "--json"]).arg(self.sock(i)).output().unwrap();
        assert!(out.status.success(), "status: {}", common::stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `ping` from CN to the home address: answers received.
    fn ping(&self, count: u32) -> u64 {
        let c = count.to_string();
        let out =
            self.exec("cn", &["ping", "-6", "-q", "-n", "-c", &c, "-i", "0.2", "-W", "1", HOA]);
        common::ping_received(&out.stdout)
    }

    /// Prints what the nodes and the correspondent saw when `got` of `want` pings came back.
    fn diagnose(&self, got: u64, want: u64) {
        if got >= want {
            return;
        }
        let cn = self.exec("cn", &["ip", "-6", "neigh"]);
        eprintln!("CN neighbours: {}", common::stdout(&cn));
        eprintln!("HA: {:#}\nMN: {:#}", self.status(1), self.status(2));
    }

    /// Waits until `f` holds on node `i`'s status (up to `secs`).
    fn wait_status(&self, i: usize, secs: u64, what: &str, f: impl Fn(&serde_json::Value) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.status(i);
            if f(&s) {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: {s:#}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Packets in the capture `pcap` that match the tcpdump filter `filter`.
fn count(pcap: &Path, filter: &str) -> usize {
    let out = Command::new("tcpdump")
        .args(["-n", "-r"])
        .arg(pcap)
        .args(filter.split_whitespace())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// Registration, forwarding both ways through the ESP tunnel (ping, TCP), nothing in clear on
/// the foreign link, then a move under traffic; before any Binding Update, nothing is forwarded.
#[test]
fn home_agent_tunnels_to_the_care_of_address_and_follows_a_move() {
    if !common::netns_ready(&["nft", "tcpdump", "python3"]) {
        return;
    }
    let t0 = Instant::now();
    let mut lab = Lab::new("n");
    lab.write_configs(false);
    let pcap = lab.dir.join("foreign.pcap");
    let dump = Command::new("ip")
        .args(["netns", "exec", &lab.ns("mn"), "tcpdump", "-i", "mv", "-U", "-w"])
        .arg(&pcap)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    lab.nodes.push(dump);
    lab.nodes.push(common::start_node(&lab.ns("ha"), &lab.dir, 1, &[]));
    // The tunnel SAs are installed on the home agent's first tick, the policy discards.
    lab.wait_status(1, 5, "home agent tunnels", |s| {
        s["home_agent"]["forwarding"]["tunnels"][0]["tunnel_out_spi"].is_string()
    });
    // No Binding Update yet: the home address is not intercepted, nothing reaches the foreign
    // link (fail closed).
    assert_eq!(lab.ping(2), 0, "answers without a binding");
    let ha = lab.status(1);
    assert!(ha["home_agent"]["forwarding"]["tunnels"][0]["care_of_address"].is_null(), "{ha:#}");

    // The correspondent remembers the mobile node's own link-layer address from when it was at
    // home; the home agent's Neighbor Advertisement must replace it (RFC 6275 §10.4.1).
    lab.ip("cn", &format!("neigh replace {HOA} lladdr 02:00:00:00:01:00 dev cv nud stale"));
    lab.nodes.push(common::start_node(&lab.ns("mn"), &lab.dir, 2, &[]));
    lab.ip("mn", "route add 2001:db8:1::/64 dev mip6mn0");
    lab.wait_status(2, 10, "mobile node registered", |s| {
        s["mobile_node"]["registration"]["care_of_address"] == COA1
    });
    lab.wait_status(1, 5, "home agent tunnel to the care-of address", |s| {
        s["home_agent"]["forwarding"]["tunnels"][0]["care_of_address"] == COA1
    });
    // The home agent's unsolicited Neighbor Advertisement (RFC 6275 §10.4.1) replaced the
    // correspondent's stale entry for the home address by the home agent's link-layer address.
    let ha_mac = lab.exec("ha", &["cat", "/sys/class/net/hv/address"]);
    let ha_mac = common::stdout(&ha_mac).trim().to_string();
    let neigh = common::stdout(&lab.exec("cn", &["ip", "-6", "neigh", "show", HOA]));
    assert!(neigh.contains(&ha_mac), "CN's entry for the home address: {neigh:?}, HA {ha_mac}");
    let registered = t0.elapsed();
    println!("registered after {registered:?}");

    // Ping through the tunnel: 20 of 20.
    let got = lab.ping(20);
    lab.diagnose(got, 20);
    assert_eq!(got, 20, "pings answered through the tunnel: {got}/20");
    println!("20 pings done after {:?}", t0.elapsed());

    // TCP from CN to the home address: 1 MB through, intact.
    let data: Vec<u8> =
        (0..1_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let sum: u64 = data.iter().map(|b| u64::from(*b)).sum();
    let listen = format!(
        "import socket\ns=socket.socket(socket.AF_INET6)\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
         s.bind(('{HOA}',5001))\ns.listen(1)\nc,_=s.accept()\nn=0\nt=0\nwhile True:\n  b=c.recv(65536)\n  \
         if not b: break\n  n+=len(b)\n  t+=sum(b)\nprint(n,t)\n"
    );
    let sink = Command::new("ip")
        .args(["netns", "exec", &lab.ns("mn"), "python3", "-c", &listen])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let send = format!(
        "import socket,sys\ns=socket.create_connection(('{HOA}',5001),timeout=20)\ns.sendall(sys.stdin.buffer.read())\ns.close()\n"
    );
    let mut src = Command::new("ip")
        .args(["netns", "exec", &lab.ns("cn"), "python3", "-c", &send])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        src.stdin.take().unwrap().write_all(&data).unwrap();
    }
    assert!(src.wait().unwrap().success(), "the TCP sender failed");
    let out = sink.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{} {sum}", data.len()),
        "the TCP stream arrived changed"
    );

    println!("TCP done after {:?}", t0.elapsed());
    // The move, under a ping every 50 ms: a new care-of address, the old one gone. (A count, not
    // a deadline: on a shared machine the namespaces' processes may be paused for a while.)
    let mon = Command::new("ip")
        .args(["netns", "exec", &lab.ns("mn"), BIN, "monitor"])
        .arg(lab.sock(2))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pinger = Command::new("ip")
        .args([
            "netns",
            "exec",
            &lab.ns("cn"),
            "ping",
            "-6",
            "-n",
            "-i",
            "0.05",
            "-c",
            "120",
            "-W",
            "1",
            HOA,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let m0 = Instant::now();
    lab.ip("mn", &format!("addr add {COA2}/64 dev mv nodad"));
    let m1 = m0.elapsed();
    lab.ip("mn", &format!("addr del {COA1}/64 dev mv"));
    let m2 = m0.elapsed();
    let out = pinger.wait_with_output().unwrap();
    println!("move: addr add {m1:?}, addr del {m2:?}, ping done {:?}", m0.elapsed());
    let seqs: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split("icmp_seq=").nth(1)?.split_whitespace().next()?.parse().ok())
        .collect();
    let sent = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.split(" packets transmitted").next()?.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let gap = seqs.windows(2).map(|w| w[1].saturating_sub(w[0])).max().unwrap_or(0);
    let last = seqs.last().copied().unwrap_or(0);
    println!(
        "move under traffic: {} of {sent} pings answered, longest gap {} ms ({} pings at 50 ms)",
        seqs.len(),
        gap * 50,
        gap.saturating_sub(1)
    );
    assert!(
        last + 4 >= sent,
        "pings did not continue after the move: last answered {last} of {sent}"
    );
    lab.wait_status(1, 5, "home agent tunnel moved", |s| {
        s["home_agent"]["forwarding"]["tunnels"][0]["care_of_address"] == COA2
    });
    let got = lab.ping(20);
    lab.diagnose(got, 20);
    assert_eq!(got, 20, "pings after the move: {got}/20");
    let mn = lab.status(2);
    assert_eq!(mn["mobile_node"]["registration"]["care_of_address"], COA2, "{mn:#}");
    assert_eq!(mn["mobile_node"]["counters"]["moves"], 1, "{mn:#}");
    let ha = lab.status(1);
    assert_eq!(ha["home_agent"]["forwarding"]["counters"]["moved"], 1, "{ha:#}");
    assert_eq!(ha["home_agent"]["binding_cache"]["count"], 1, "{ha:#}");
    // The link socket's filter copies Binding Updates to the control thread, not the tunnel.
    let copied = ha["home_agent"]["link"]["received"].as_u64().unwrap();
    assert!(copied < 20, "the home agent's link socket copied {copied} packets: {ha:#}");
    // The human form names the binding and the tunnel's care-of address on both sides.
    for i in [1, 2] {
        let out = Command::new(BIN).arg("status").arg(lab.sock(i)).output().unwrap();
        let human = common::stdout(&out);
        assert!(human.contains(COA2) && human.contains(HOA), "node {i}:\n{human}");
    }
    let text = serde_json::to_string(&ha).unwrap() + &serde_json::to_string(&mn).unwrap();
    assert!(!text.contains(&key(3)[2..]), "a key in status");

    // The monitor saw the move and the new registration.
    let _ = Command::new("kill").args(["-TERM", &mon.id().to_string()]).status();
    let out = mon.wait_with_output().unwrap();
    let events = String::from_utf8_lossy(&out.stdout);
    assert!(events.contains("care-of-changed"), "{events}");
    assert!(events.contains("binding-registered"), "{events}");

    // The mobile node stops: it de-registers, and the home agent stops forwarding at once.
    let mut mn_node = lab.nodes.remove(2);
    let _ = Command::new("kill").args(["-TERM", &mn_node.id().to_string()]).status();
    let _ = mn_node.wait();
    lab.wait_status(1, 5, "home agent tunnel closed on de-registration", |s| {
        s["home_agent"]["forwarding"]["tunnels"][0]["care_of_address"].is_null()
            && s["home_agent"]["binding_cache"]["count"] == 0
    });
    let ha = lab.status(1);
    assert_eq!(ha["home_agent"]["bindings"]["deregistered"], 1, "{ha:#}");
    assert_eq!(ha["home_agent"]["forwarding"]["counters"]["closed"], 1, "{ha:#}");

    // The foreign link carried ESP only: nothing with the home address in an IP header.
    std::thread::sleep(Duration::from_millis(300));
    let esp = count(&pcap, "ip6 proto 50");
    let clear = count(&pcap, &format!("ip6 host {HOA}"));
    let tcp = count(&pcap, "tcp or ( icmp6 and ( ip6[40] == 128 or ip6[40] == 129 ) )");
    println!(
        "foreign link: {esp} ESP packets, {clear} with the home address in clear, {tcp} TCP/echo in clear; registered after {:?}, test took {:?}",
        registered,
        t0.elapsed()
    );
    assert!(esp > 1000, "ESP packets on the foreign link: {esp}");
    assert_eq!(clear, 0, "packets with the home address in clear on the foreign link");
    assert_eq!(tcp, 0, "TCP or ICMPv6 echo in clear on the foreign link");
}

/// The home agent's inbound signalling SA with SPI `spi` (as status prints it), if any.
fn ha_sa_in(ha: &serde_json::Value, spi: &str) -> Option<serde_json::Value> {
    ha["home_agent"]["signalling"]["sas"]
        .as_array()?
        .iter()
        .find(|s| s["direction"] == "in" && s["spi"] == spi)
        .cloned()
}

/// `hipsec rekey` of the mobile node's connection; waits until its Binding Updates go out in
/// an SA other than `old` and one inbound SA is left (the old pair deleted); the new SPI.
fn rekey(lab: &Lab, old: &str) -> String {
    let out = Command::new(BIN).arg("rekey").arg(lab.sock(2)).arg("ha").output().unwrap();
    assert!(out.status.success(), "rekey: {}", common::stderr(&out));
    lab.wait_status(2, 10, "the mobile node's new SA", |s| {
        s["mobile_node"]["signalling"]["sa_out_spi"].as_str().is_some_and(|s| s != old)
            && s["mobile_node"]["signalling"]["sa_in_spis"].as_array().map(Vec::len) == Some(1)
    });
    lab.status(2)["mobile_node"]["signalling"]["sa_out_spi"].as_str().unwrap().to_string()
}

/// RFC 4877 §4.4: the signalling SAs come from IKEv2 between the mobile node's care-of address
/// and the home agent, not from the config. The mobile node registers only once the CHILD SA is
/// up, the home agent accepts the Binding Update in that SA (whose selectors name the home
/// address the home agent lists for that connection), a rekey replaces the pair make-before-
/// break, and the Binding Update after the next move travels in the new SA while the old one is
/// gone from both ends.
#[test]
fn signalling_sas_made_by_ikev2_register_and_follow_a_rekey() {
    if !common::netns_ready(&["nft", "tcpdump", "python3"]) {
        return;
    }
    let mut lab = Lab::new("i");
    lab.write_configs(true);
    lab.nodes.push(common::start_node(&lab.ns("ha"), &lab.dir, 1, &[]));
    lab.wait_status(1, 5, "home agent up", |s| s["home_agent"].is_object());
    let ha = lab.status(1);
    assert_eq!(ha["home_agent"]["signalling"]["sas"], serde_json::json!([]), "{ha:#}");
    lab.nodes.push(common::start_node(&lab.ns("mn"), &lab.dir, 2, &[]));
    lab.ip("mn", "route add 2001:db8:1::/64 dev mip6mn0");
    lab.wait_status(2, 15, "registered in IKEv2-made SAs", |s| {
        s["mobile_node"]["registration"]["care_of_address"] == COA1
    });
    let mn = lab.status(2);
    assert_eq!(mn["mobile_node"]["signalling"]["keyed_by"], "ike:ha", "{mn:#}");
    let spi1 = mn["mobile_node"]["signalling"]["sa_out_spi"].as_str().unwrap().to_string();
    let ha = lab.status(1);
    let sa = ha_sa_in(&ha, &spi1).unwrap_or_else(|| panic!("no inbound SA {spi1}: {ha:#}"));
    assert!(sa["packets"].as_u64().unwrap() >= 1, "{sa:#}");
    assert_eq!(sa["home_address"], HOA, "{sa:#}");
    assert_eq!(ha["home_agent"]["link"]["ike_refused"], 0, "{ha:#}");
    assert_eq!(ha["ike"]["ike_sas"].as_array().map(Vec::len), Some(1), "{ha:#}");
    // The tunnel (manual SAs here) carries traffic: the binding is real.
    let got = lab.ping(5);
    lab.diagnose(got, 5);
    assert_eq!(got, 5, "pings through the tunnel: {got}/5");

    // A CHILD rekey from the mobile node: the new pair sends at once on both ends.
    let spi2 = rekey(&lab, &spi1);
    // The move's Binding Update is sealed in the new SA and accepted.
    lab.ip("mn", &format!("addr add {COA2}/64 dev mv nodad"));
    lab.ip("mn", &format!("addr del {COA1}/64 dev mv"));
    lab.wait_status(2, 10, "registered after the move", |s| {
        s["mobile_node"]["registration"]["care_of_address"] == COA2
    });
    let ha = lab.status(1);
    let sa = ha_sa_in(&ha, &spi2).unwrap_or_else(|| panic!("no inbound SA {spi2}: {ha:#}"));
    assert!(sa["packets"].as_u64().unwrap() >= 1, "{sa:#}");
    assert!(ha_sa_in(&ha, &spi1).is_none(), "the old SA is still there: {ha:#}");
    let ins = ha["home_agent"]["signalling"]["sas"].as_array().unwrap();
    assert_eq!(ins.len(), 2, "one pair left: {ha:#}");
    let got = lab.ping(5);
    lab.diagnose(got, 5);
    assert_eq!(got, 5, "pings after the move: {got}/5");
    // The IKE SA began at the first care-of address; a rekey the mobile node asks for from the
    // new one is answered there (RFC 7296 §2.11), not at the address it left.
    let spi3 = rekey(&lab, &spi2);
    let ha = lab.status(1);
    assert!(ha_sa_in(&ha, &spi3).is_some(), "no inbound SA {spi3}: {ha:#}");
    // Keys never appear in status.
    let text =
        serde_json::to_string(&ha).unwrap() + &serde_json::to_string(&lab.status(2)).unwrap();
    assert!(!text.contains("a mobile node's secret"), "the secret in status");
}
