//! IKEv2 interop with strongSwan 5.9: a hipsec node and charon (kernel-libipsec)
//! in two namespaces negotiate IKE and CHILD SAs, and traffic flows through both user-space
//! ESP stacks: ping, and a TCP transfer whose SHA-256 must match at the far end. Each test
//! runs one cell of the matrix (who initiates, suite, outer IP version).
//! Needs root, netns, TUN and strongSwan (scripts/test-all.sh installs it); else SKIPPED.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod strongswan;
use common::BIN;
use strongswan::{Pair, Setup};

fn run_cell(setup: Setup) {
    if !strongswan::can_run() {
        return;
    }
    let p = Pair::start(BIN, setup);
    p.wait_up(BIN);
    let got = p.ping(5, "0.2");
    assert_eq!(
        got,
        5,
        "pings lost\n--- hipsec\n{}\n--- charon\n{}",
        p.hipsec_log(),
        p.charon_log()
    );
    let (far, near) = p.tcp_transfer(2 << 20);
    assert_eq!(far, near, "the TCP stream arrived changed");
    // strongSwan's own view: one IKE SA, its CHILD SA installed, carrying our bytes.
    let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
    assert!(sas.contains("ESTABLISHED") && sas.contains("INSTALLED"), "{sas}");
    // No key leaves a node that was not started to export them.
    let keys = std::process::Command::new(BIN)
        .args(["ike", "wireshark-keys"])
        .arg(p.dir.join("a.sock"))
        .output()
        .unwrap();
    assert!(!keys.status.success() && keys.stdout.is_empty());
    assert!(String::from_utf8_lossy(&keys.stderr).contains("--debug-export-ike-keys"));
    let st = p.status(BIN);
    // The IKE SA was made with the configured group (the proposal's last word).
    let group = p.setup.proposal.rsplit('-').next().unwrap_or_default();
    let suite = st["ike"]["ike_sas"][0]["suite"].as_str().unwrap_or_default();
    assert!(suite.ends_with(group), "IKE suite {suite:?}, configured {:?}", p.setup.proposal);
    let drops = &st["drops"];
    // (`no_policy` is not here: the TUN device's own IPv6 chatter, router solicitations and
    // MLD reports, has no policy and is dropped and counted, as it should be.)
    for r in ["replayed", "integrity_failed", "no_sa", "inbound_policy_mismatch"] {
        assert_eq!(drops[r].as_u64().unwrap_or(0), 0, "{r} drops: {st}");
    }
}

#[test]
fn hipsec_initiates_aes_gcm_ipv4() {
    run_cell(Setup::default());
}

#[test]
fn strongswan_initiates_aes_gcm_ipv4() {
    run_cell(Setup { hipsec_initiates: false, ..Setup::default() });
}

#[test]
fn hipsec_initiates_aes_cbc_sha256_ipv6() {
    run_cell(Setup {
        v6: true,
        proposal: "aes256-sha256-ecp256",
        esp: "aes128-sha256",
        ..Setup::default()
    });
}

#[test]
fn hipsec_initiates_pubkey_ed25519_vs_ecdsa() {
    run_cell(Setup { pubkey: true, ..Setup::default() });
}

#[test]
fn strongswan_initiates_pubkey_ipv6() {
    run_cell(Setup {
        pubkey: true,
        v6: true,
        hipsec_initiates: false,
        esp: "aes256gcm16",
        ..Setup::default()
    });
}

#[test]
fn strongswan_initiates_aes_cbc_sha256_ipv6() {
    run_cell(Setup {
        v6: true,
        hipsec_initiates: false,
        proposal: "aes128-sha256-x25519",
        esp: "aes256-sha256",
        ..Setup::default()
    });
}

/// strongSwan starts an IKE SA with modp2048 (and CBC + SHA-256): our responder answers a
/// 256-octet KE of group 14, and traffic flows.
#[test]
fn strongswan_initiates_modp2048() {
    run_cell(Setup {
        hipsec_initiates: false,
        proposal: "aes256-sha256-modp2048",
        esp: "aes256gcm16",
        ..Setup::default()
    });
}

/// Seconds of the rekey soak (1 minute; `HIPSEC_INTEROP_SECONDS` runs it longer).
fn soak_seconds() -> u64 {
    std::env::var("HIPSEC_INTEROP_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60)
}

/// CHILD rekeys every 10 s on both sides (less up to 4 s of rand_time, so both ends take
/// turns and sometimes collide, §2.8.1) and an IKE SA rekey, under a 100-per-second ping and
/// a TCP stream: every ping answered, the stream's SHA-256 intact, nothing dropped for lack
/// of an SA, and our rekeys' delay reported.
#[test]
fn rekeys_under_load_lose_nothing() {
    if !strongswan::can_run() {
        return;
    }
    let secs = soak_seconds();
    let p = Pair::start(
        BIN,
        Setup { child_rekey: "10s", child_rand: "4s", ike_rekey: "40s", ..Setup::default() },
    );
    p.wait_up(BIN);
    let pings = secs * 100;
    let (got, stream) = std::thread::scope(|s| {
        let ping = s.spawn(|| p.ping(pings as u32, "0.01"));
        let stream = p.tcp_stream(secs as f64, 20_000_000);
        (ping.join().unwrap(), stream)
    });
    let st = p.status(BIN);
    let sa = &st["ike"]["ike_sas"][0];
    let log = p.hipsec_log();
    let ike_rekeys = log.matches("ike-sa-rekeyed").count();
    println!(
        "soak {secs} s: pings {got}/{pings}, TCP {} bytes, CHILD rekeys {} (ours {}, median delay {} µs), IKE rekeys {ike_rekeys}",
        stream.2, sa["child_rekeys"], sa["our_rekeys"], sa["our_rekey_delay_median_us"]
    );
    assert_eq!(got as u64, pings, "pings lost\n{log}");
    assert_eq!(stream.0, stream.1, "the TCP stream arrived changed");
    assert!(sa["child_rekeys"].as_u64().unwrap_or(0) >= secs / 10, "too few rekeys: {sa}");
    assert!(ike_rekeys >= 1, "no IKE SA rekey in {secs} s\n{log}");
    assert!(!p.charon_log().contains("closing expired"), "charon let an SA expire");
    for r in ["no_sa", "replayed", "integrity_failed", "inbound_policy_mismatch", "sa_expired"] {
        assert_eq!(st["drops"][r].as_u64().unwrap_or(0), 0, "{r}: {st}");
    }
}

/// strongSwan killed (no DELETE) and started again: our liveness checks (dpd_delay 1 s) find
/// the IKE SA dead after the retransmissions run out, remove its CHILD SAs (fail closed) and
/// initiate again; traffic flows on the new SAs.
#[test]
fn dead_peer_is_noticed_and_the_connection_restarts() {
    if !strongswan::can_run() {
        return;
    }
    let mut p = Pair::start(BIN, Setup { hipsec_extra: "dpd_delay = \"1s\"", ..Setup::default() });
    p.wait_up(BIN);
    assert_eq!(p.ping(3, "0.2"), 3);
    let first = p.status(BIN)["ike"]["ike_sas"][0]["spi_i"].clone();
    p.restart_charon();
    // Retransmissions back off 1+2+4+8+16+32 s (§2.1) before the peer is taken for dead.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let st = p.status(BIN);
        let now = &st["ike"]["ike_sas"];
        let up_again = now
            .as_array()
            .is_some_and(|v| v.iter().any(|s| s["state"] == "established" && s["spi_i"] != first));
        if up_again {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no new IKE SA after 120 s\n{}",
            p.hipsec_log()
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    p.wait_up(BIN);
    assert_eq!(p.ping(5, "0.2"), 5, "{}", p.hipsec_log());
    let log = p.hipsec_log();
    assert!(log.contains("ike-sa-down") && log.contains("ike-retry"), "{log}");
}

/// tshark decrypts every IKE message of a run (initial exchanges, CHILD rekeys, an IKE rekey,
/// deletes, on 500 and on 4500) with the keys `hipsec ike wireshark-keys` exports from a node
/// started with `--debug-export-ike-keys`; a node started without it refuses to export.
#[test]
fn tshark_decrypts_the_run_with_exported_keys() {
    if !strongswan::can_run() {
        return;
    }
    let have = |t: &str| std::process::Command::new(t).arg("--version").output().is_ok();
    if !have("tshark") || !have("tcpdump") {
        println!("SKIPPED: needs tshark and tcpdump");
        return;
    }
    let p = Pair::start(
        BIN,
        Setup { export_keys: true, child_rekey: "3s", ike_rekey: "7s", ..Setup::default() },
    );
    let pcap = p.dir.join("ike.pcap");
    let mut dump = std::process::Command::new("ip")
        .args(["netns", "exec", &p.a, "tcpdump", "-i", "va", "--immediate-mode", "-U", "-w"])
        .arg(&pcap)
        .args(["udp port 500 or (udp port 4500 and udp[8:4] = 0)"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // The initiation happens at start; a capture that missed IKE_SA_INIT has the rekeyed SAs
    // still, but start over to see the whole run.
    let _ = std::process::Command::new(BIN)
        .args(["terminate"])
        .arg(p.dir.join("a.sock"))
        .arg("site")
        .output();
    std::process::Command::new(BIN)
        .args(["initiate"])
        .arg(p.dir.join("a.sock"))
        .arg("site")
        .output()
        .unwrap();
    p.wait_up(BIN);
    // Traffic keeps the rekeys honest (the loss-free soak is `rekeys_under_load_lose_nothing`).
    // Both ends rekey the CHILD SA every 3 s with no rand_time, so the rekeys often collide.
    let got = p.ping(100, "0.1");
    let st = p.status(BIN);
    let sa = &st["ike"]["ike_sas"][0];
    println!("pings {got}/100 during the rekeys; CHILD rekeys {}", sa["child_rekeys"]);
    assert_eq!(got, 100, "pings lost\n{}\n{st}", p.hipsec_log());
    assert!(sa["child_rekeys"].as_u64().unwrap_or(0) >= 2, "too few CHILD rekeys: {sa}");
    // Rekeyed, not expired and made again (which the one lost ping of an earlier run was).
    assert!(!p.charon_log().contains("closing expired"), "charon let an SA expire");
    for r in ["no_sa", "replayed", "integrity_failed", "inbound_policy_mismatch"] {
        assert_eq!(st["drops"][r].as_u64().unwrap_or(0), 0, "{r}: {st}");
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = std::process::Command::new("kill").args(["-INT", &dump.id().to_string()]).status();
    let _ = dump.wait();
    let keys = std::process::Command::new(BIN)
        .args(["ike", "wireshark-keys"])
        .arg(p.dir.join("a.sock"))
        .output()
        .unwrap();
    assert!(keys.status.success(), "{}", String::from_utf8_lossy(&keys.stderr));
    let lines: Vec<String> =
        String::from_utf8_lossy(&keys.stdout).lines().map(str::to_string).collect();
    assert!(lines.len() >= 2, "one IKE SA and at least one rekeyed: {lines:?}");
    let mut cmd = std::process::Command::new("tshark");
    cmd.arg("-r").arg(&pcap).arg("-V");
    for l in &lines {
        cmd.args(["-o", &format!("uat:ikev2_decryption_table:{l}")]);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let sk = text.matches("Payload: Encrypted and Authenticated (46)").count();
    let ok = text.matches("[correct]").count();
    println!(
        "{} IKE SAs' keys; {sk} encrypted IKE messages, {ok} decrypted and verified",
        lines.len()
    );
    assert!(sk >= 8, "IKE_AUTH, rekeys and deletes: {sk}");
    assert_eq!(ok, sk, "every SK payload decrypts and its ICV verifies:\n{text}");
    assert_eq!(text.matches("[incorrect]").count(), 0);
}

/// Lines of our log recording a CHILD rekey started by `by` ("us" or "peer").
fn rekeys_by(log: &str, by: &str) -> usize {
    let tag = format!("by={by}");
    log.lines().filter(|l| l.contains("child-sa-rekeyed") && l.contains(&tag)).count()
}

/// Waits (up to 15 s) until our log shows `n` CHILD rekeys started by `by`.
fn wait_rekeys(p: &Pair, by: &str, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while rekeys_by(&p.hipsec_log(), by) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "rekey {n} by {by} not done in 15 s\n--- hipsec\n{}\n--- charon\n{}",
            p.hipsec_log(),
            p.charon_log()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// PFS on CHILD rekeys (RFC 7296 §1.3.3: "SA, Ni, [KEi]", §2.17: g^ir (new) in the KEYMAT)
/// with `esp_proposals = aes128gcm16-<group>` on both ends: IKE_AUTH's CHILD SA comes without a
/// D-H transform (§1.2), each CREATE_CHILD_SA carries a KE of `group`. `we_init`: hipsec
/// starts the IKE SA (else strongSwan does). Our rekey_time is 4 s
/// (our timer starts 5 rekeys); between two of ours, `swanctl --rekey` makes strongSwan start
/// one (5 more, counted from our log's `by=peer`). A ping every 50 ms the whole time: none lost.
/// The exchanges are checked in a capture decrypted with the exported IKE keys: every
/// CREATE_CHILD_SA message, request and response, has a KE payload of the group, and
/// `swanctl --list-sas` names the group of the rekeyed CHILD SA. `proposal`: the IKE proposal
/// of both ends.
fn pfs_rekeys_both_ways(
    proposal: &'static str,
    group: &'static str,
    esp: &'static str,
    ike_id: u16,
    we_init: bool,
) {
    if !strongswan::can_run() {
        return;
    }
    let have = |t: &str| std::process::Command::new(t).arg("--version").output().is_ok();
    let capture = have("tshark") && have("tcpdump");
    if !capture {
        println!("SKIPPED (the capture check only): needs tshark and tcpdump");
    }
    let p = Pair::start(
        BIN,
        Setup {
            proposal,
            esp,
            child_rekey: "1h",
            hipsec_child_rekey: Some("4s"),
            export_keys: true,
            hipsec_initiates: we_init,
            ..Setup::default()
        },
    );
    let pcap = p.dir.join("pfs.pcap");
    let dump = capture.then(|| {
        std::process::Command::new("ip")
            .args(["netns", "exec", &p.a, "tcpdump", "-i", "va", "--immediate-mode", "-U", "-w"])
            .arg(&pcap)
            .args(["udp port 500 or (udp port 4500 and udp[8:4] = 0)"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    });
    p.wait_up(BIN);
    // Pings and a paced TCP stream (its SHA-256 checked at the far end) through the rekeys.
    let ((got, sent), (far, near, bytes)) = std::thread::scope(|s| {
        let ping = s.spawn(|| p.ping(700, "0.05"));
        let tcp = s.spawn(|| p.tcp_stream(25.0, 10_000_000));
        for i in 1..=5 {
            wait_rekeys(&p, "us", i);
            std::thread::sleep(std::time::Duration::from_millis(1000));
            let out = p.swanctl(&["--rekey", "--child", "net"]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            wait_rekeys(&p, "peer", i);
        }
        ((ping.join().unwrap(), 700), tcp.join().unwrap())
    });
    assert_eq!(far, near, "the TCP stream ({bytes} bytes) arrived changed");
    assert!(bytes > 1 << 20, "the TCP stream carried only {bytes} bytes");
    let log = p.hipsec_log();
    let st = p.status(BIN);
    let sa = &st["ike"]["ike_sas"][0];
    println!(
        "{group}: pings {got}/{sent}; CHILD rekeys by us {}, by strongSwan {}; status {}",
        rekeys_by(&log, "us"),
        rekeys_by(&log, "peer"),
        sa["children"]
    );
    assert_eq!(got, sent, "pings lost\n--- hipsec\n{log}\n--- charon\n{}", p.charon_log());
    assert!(rekeys_by(&log, "us") >= 5 && rekeys_by(&log, "peer") >= 5, "{log}");
    assert!(!log.contains("child-sa-rekey-failed"), "{log}");
    let charon = p.charon_log();
    // (A NO_PROPOSAL_CHOSEN to an IKE_SA_INIT that came before charon loaded its config is
    // no matter here: it is tried again.)
    let refused = |l: &&str| l.contains("N(NO_PROP)") || l.contains("N(INVAL_KE)");
    let bad: Vec<&str> =
        charon.lines().filter(|l| l.contains("CREATE_CHILD_SA")).filter(refused).collect();
    assert!(bad.is_empty(), "CHILD rekeys refused: {bad:?}");
    // charon's own reading of the messages: a KE in each.
    // Whole lines only: charon may be writing the last one while the log is read.
    let msg = |l: &&str| l.contains("[ENC]") && l.contains(" CREATE_CHILD_SA ") && l.ends_with(']');
    let cc: Vec<&str> = charon.lines().filter(msg).collect();
    assert!(cc.len() >= 20, "{charon}");
    assert!(cc.iter().all(|l| l.contains(" KE ")), "a CREATE_CHILD_SA without KE: {cc:?}");
    assert!(!charon.contains("closing expired"), "charon let an SA expire");
    // charon's names (its key exchange method names) for the group of the CHILD SA it holds.
    let charon_group = match group {
        "x25519" => "CURVE_25519",
        "ecp256" => "ECP_256",
        "modp2048" => "MODP_2048",
        other => other,
    };
    let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
    println!("{sas}");
    let child = sas.lines().skip_while(|l| !l.contains("net:")).take(2).collect::<String>();
    assert!(child.contains(charon_group), "the CHILD SA's group is not {charon_group}:\n{sas}");
    assert_eq!(sa["children"][0]["rekey_failures"], 0, "{sa}");
    for r in ["no_sa", "replayed", "integrity_failed", "inbound_policy_mismatch", "sa_expired"] {
        assert_eq!(st["drops"][r].as_u64().unwrap_or(0), 0, "{r}: {st}");
    }
    let Some(mut dump) = dump else { return };
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = std::process::Command::new("kill").args(["-INT", &dump.id().to_string()]).status();
    let _ = dump.wait();
    let keys = std::process::Command::new(BIN)
        .args(["ike", "wireshark-keys"])
        .arg(p.dir.join("a.sock"))
        .output()
        .unwrap();
    assert!(keys.status.success(), "{}", String::from_utf8_lossy(&keys.stderr));
    let mut cmd = std::process::Command::new("tshark");
    cmd.arg("-r").arg(&pcap);
    for l in String::from_utf8_lossy(&keys.stdout).lines() {
        cmd.args(["-o", &format!("uat:ikev2_decryption_table:{l}")]);
    }
    cmd.args(["-Y", "isakmp.exchangetype == 36", "-T", "fields", "-e", "isakmp.flags"]);
    cmd.args(["-e", "isakmp.key_exchange.dh_group"]);
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<(u64, String)> = text
        .lines()
        .filter_map(|l| {
            let (flags, ke) = l.split_once('\t')?;
            let f = u64::from_str_radix(flags.trim_start_matches("0x"), 16).ok()?;
            Some((f, ke.to_string()))
        })
        .collect();
    let want = ike_id.to_string();
    let responses = rows.iter().filter(|(f, _)| f & 0x20 != 0).count();
    println!("{} CREATE_CHILD_SA messages decrypted, {responses} responses", rows.len());
    assert!(rows.len() >= 20 && responses >= 10, "10 rekeys, request and response:\n{text}");
    for (f, ke) in &rows {
        assert_eq!(
            ke, &want,
            "a CREATE_CHILD_SA message (flags {f:#x}) without KE {want}:\n{text}"
        );
    }
}

#[test]
fn pfs_child_rekeys_x25519_both_ways() {
    pfs_rekeys_both_ways("aes128gcm16-prfsha256-x25519", "x25519", "aes128gcm16-x25519", 31, true);
}

/// With strongSwan starting the IKE SA: its IKE_AUTH offers aes128gcm16 without the group, which
/// we accept for a child configured with `aes128gcm16-ecp256` (§1.2).
#[test]
fn pfs_child_rekeys_ecp256_both_ways() {
    pfs_rekeys_both_ways("aes128gcm16-prfsha256-x25519", "ecp256", "aes128gcm16-ecp256", 19, false);
}

/// Group 14 (2048-bit MODP, RFC 3526 §3) for the IKE SA and for PFS on every CHILD rekey,
/// strongSwan's `modp2048` on both ends: the IKE SA is made with it (status names the suite,
/// charon lists MODP_2048), and RFC 7296 §1.3.3's "SA, Ni, [KEi]" carries a KE of group 14 in
/// each CREATE_CHILD_SA, both ways.
#[test]
fn modp2048_ike_sa_and_pfs_child_rekeys_both_ways() {
    if !strongswan::can_run() {
        return;
    }
    let p = Pair::start(
        BIN,
        Setup {
            proposal: "aes128gcm16-prfsha256-modp2048",
            esp: "aes128gcm16-modp2048",
            ..Setup::default()
        },
    );
    p.wait_up(BIN);
    assert_eq!(p.ping(5, "0.2"), 5, "{}\n--- charon\n{}", p.hipsec_log(), p.charon_log());
    let st = p.status(BIN);
    let sa = &st["ike"]["ike_sas"][0];
    assert_eq!(sa["suite"], "aes128gcm16-prfsha256-modp2048", "{sa}");
    let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
    // The IKE SA's lines, before its CHILD SA's.
    let ike = sas.lines().take_while(|l| !l.contains("net:")).collect::<String>();
    assert!(ike.contains("MODP_2048"), "charon's IKE SA is not MODP_2048:\n{sas}");
    drop(p);
    pfs_rekeys_both_ways(
        "aes128gcm16-prfsha256-modp2048",
        "modp2048",
        "aes128gcm16-modp2048",
        14,
        true,
    );
}

/// tshark decrypts the ESP of the IKE-made CHILD SAs (both directions, across CHILD rekeys)
/// with nothing but the `esp_sa` lines `hipsec ike wireshark-keys --esp` exports: every ESP
/// packet of the capture is one whose SA the node exported, and every echo request and reply
/// is read back in the clear.
#[test]
fn tshark_decrypts_the_esp_of_ike_made_child_sas() {
    if !strongswan::can_run() {
        return;
    }
    let have = |t: &str| std::process::Command::new(t).arg("--version").output().is_ok();
    if !have("tshark") || !have("tcpdump") {
        println!("SKIPPED: needs tshark and tcpdump");
        return;
    }
    let p = Pair::start(BIN, Setup { export_keys: true, child_rekey: "3s", ..Setup::default() });
    p.wait_up(BIN);
    let pcap = p.dir.join("esp.pcap");
    let mut dump = std::process::Command::new("ip")
        .args(["netns", "exec", &p.a, "tcpdump", "-i", "va", "--immediate-mode", "-U", "-w"])
        .arg(&pcap)
        .args(["udp port 4500 and udp[8:4] != 0"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // 8 s of pings: two or three CHILD rekeys, so the capture spans several SA pairs.
    let got = p.ping(80, "0.1");
    assert_eq!(got, 80, "pings lost\n{}", p.hipsec_log());
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = std::process::Command::new("kill").args(["-INT", &dump.id().to_string()]).status();
    let _ = dump.wait();
    let keys = std::process::Command::new(BIN)
        .args(["ike", "wireshark-keys", "--esp"])
        .arg(p.dir.join("a.sock"))
        .output()
        .unwrap();
    assert!(keys.status.success(), "{}", String::from_utf8_lossy(&keys.stderr));
    let lines: Vec<String> =
        String::from_utf8_lossy(&keys.stdout).lines().map(str::to_string).collect();
    assert!(lines.len() >= 6, "the first pair and at least two rekeyed ones: {lines:?}");
    let tshark = |filter: &str| {
        let mut cmd = std::process::Command::new("tshark");
        cmd.arg("-r").arg(&pcap).args(["-o", "esp.enable_encryption_decode:TRUE"]);
        for l in &lines {
            cmd.args(["-o", &format!("uat:esp_sa:{l}")]);
        }
        cmd.args(["-Y", filter, "-T", "fields", "-e", "esp.spi"]);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect::<Vec<_>>()
    };
    let esp = tshark("esp");
    let requests = tshark("icmp.type == 8");
    let replies = tshark("icmp.type == 0");
    let spis: std::collections::BTreeSet<&String> = esp.iter().collect();
    println!(
        "{} esp_sa lines; {} ESP packets on {} SPIs; decrypted {} echo requests, {} replies",
        lines.len(),
        esp.len(),
        spis.len(),
        requests.len(),
        replies.len()
    );
    assert!(spis.len() >= 4, "several pairs in the capture: {spis:?}");
    assert!(requests.len() >= 80 && replies.len() >= 80, "not every ping decrypted");
    assert_eq!(requests.len() + replies.len(), esp.len(), "ESP that did not decrypt to a ping");
}
