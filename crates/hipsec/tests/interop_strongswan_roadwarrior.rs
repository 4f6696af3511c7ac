//! Road warriors (RFC 7296 §2.19, §3.15) between a hipsec node and strongSwan 5.9 (charon,
//! kernel-libipsec) in two namespaces: charon asks for a virtual IP (`vips = 0.0.0.0`) and
//! gets one from a hipsec `[pools.rw]`, then pings through the tunnel from it; and hipsec, with
//! `vips = ["0.0.0.0"]`, gets one from charon's `pools`, puts it on its TUN device and pings
//! from it. X.509 certificates both ways, made at test time with strongSwan's `pki` as in
//! interop_strongswan_certs.rs (ECDSA P-256 end entities of one CA). Needs root, netns, TUN,
//! strongSwan and `pki`; else SKIPPED.
//!
//! ```text
//!   ns A (hipsec)                         ns B (charon + libipsec)
//!   hipsec0 10.0.1.1/24 ── va 192.0.2.1 ══ vb 192.0.2.2 ── lo 10.0.2.1
//!   road warrior case 1: charon's virtual IP 10.3.0.1 from hipsec's pool
//!   road warrior case 2: hipsec0's virtual IP 10.3.0.1 from charon's pool
//! ```
//!
//! The RFC sentences below are quoted from memory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod strongswan;
use common::BIN;
use std::path::Path;
use std::process::Command;
use strongswan::{Pair, Setup};

fn edit(d: &Path, file: &str, from: &str, to: &str) {
    let p = d.join(file);
    let s = std::fs::read_to_string(&p).unwrap();
    assert!(s.contains(from), "{file} has no {from:?}");
    std::fs::write(&p, s.replacen(from, to, 1)).unwrap();
}

fn append(d: &Path, file: &str, text: &str) {
    let p = d.join(file);
    let mut s = std::fs::read_to_string(&p).unwrap();
    s.push_str(text);
    std::fs::write(&p, s).unwrap();
}

fn can_run() -> bool {
    if !strongswan::can_run() {
        return false;
    }
    if Command::new("pki").arg("--help").output().is_err() {
        println!("SKIPPED: needs strongSwan's pki (package strongswan-pki)");
        return false;
    }
    true
}

fn pki(dir: &Path, script: &str) {
    let out = Command::new("sh").current_dir(dir).args(["-c", script]).output().unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA and an ECDSA P-256 certificate for each side (node1.example is hipsec, node2.example
/// charon), and both configs switched from the PSK to them.
fn certificates(d: &Path) {
    let ca = d.join("ca");
    for sub in ["ca/x509ca", "x509ca", "x509", "private"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    pki(
        &ca,
        "pki --gen --type ecdsa --size 256 --outform pem > ca.key && \
         pki --self --ca --lifetime 30 --in ca.key --type ecdsa \
           --dn 'C=CH, O=hipsec test, CN=hipsec rw CA' --outform pem > x509ca/ca.pem",
    );
    for (name, san, serial) in
        [("hipsec", "node1.example", "01"), ("charon", "node2.example", "02")]
    {
        pki(
            &ca,
            &format!(
                "pki --gen --type ecdsa --size 256 --outform pem > {name}.key && \
                 pki --pub --in {name}.key | pki --issue --lifetime 30 --cacert x509ca/ca.pem \
                   --cakey ca.key --dn 'C=CH, O=hipsec test, CN={san}' --san {san} \
                   --serial {serial} --outform pem > {name}.pem"
            ),
        );
    }
    std::fs::copy(ca.join("x509ca/ca.pem"), d.join("x509ca/ca.pem")).unwrap();
    std::fs::copy(ca.join("charon.pem"), d.join("x509/charon.pem")).unwrap();
    std::fs::copy(ca.join("charon.key"), d.join("private/charon.key")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for k in [ca.join("hipsec.key"), d.join("private/charon.key")] {
        std::fs::set_permissions(k, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    edit(d, "strongswan.conf", " x509 pubkey ", " x509 pubkey constraints ");
    edit(
        d,
        "swanctl.conf",
        "local {\n      auth = psk\n      id = node2.example",
        "local {\n      auth = pubkey\n      certs = charon.pem\n      id = node2.example",
    );
    edit(d, "swanctl.conf", "remote {\n      auth = psk", "remote {\n      auth = pubkey");
    edit(
        d,
        "a.toml",
        "[connection.local]\nauth = \"psk\"",
        &format!(
            "[connection.local]\nauth = \"pubkey\"\nkey = \"{}\"\ncerts = [\"{}\"]",
            ca.join("hipsec.key").display(),
            ca.join("hipsec.pem").display()
        ),
    );
    edit(
        d,
        "a.toml",
        "[connection.remote]\nauth = \"psk\"",
        &format!(
            "[connection.remote]\nauth = \"pubkey\"\ncacerts = \"{}/\"",
            ca.join("x509ca").display()
        ),
    );
}

/// charon validated our certificate to the CA.
fn checked_our_certificate(p: &Pair) {
    let log = p.charon_log();
    let ee = "received end entity cert \"C=CH, O=hipsec test, CN=node1.example\"";
    assert!(log.contains(ee) && log.contains("reached self-signed root ca"), "{}", logs(p));
}

/// Every charon log line on disk at once: the tests read the log while charon runs.
fn flush_log(d: &Path) {
    edit(d, "strongswan.conf", "time_add_ms = yes", "time_add_ms = yes\n      flush_line = yes");
}

/// `hipsec status` as a person reads it.
fn human_status(p: &Pair) -> String {
    let out = Command::new(BIN).arg("status").arg(p.dir.join("a.sock")).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn logs(p: &Pair) -> String {
    format!("--- hipsec\n{}\n--- charon\n{}", p.hipsec_log(), p.charon_log())
}

/// `ping -c N -I from to` in charon's namespace; the answers that came.
fn ping_from_charon(p: &Pair, from: &str, to: &str, count: u32) -> u32 {
    let out = Command::new("ip")
        .args(["netns", "exec", &p.b, "ping", "-q", "-c", &count.to_string(), "-i", "0.2"])
        .args(["-W", "1", "-I", from, to])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    s.split(',')
        .find_map(|f| f.trim().strip_suffix(" received").and_then(|n| n.trim().parse().ok()))
        .unwrap_or(0)
}

/// charon initiates with `vips = 0.0.0.0` and `local_ts = dynamic`; hipsec answers on a
/// `%any` connection with `pools = ["rw"]` (10.3.0.0/24, DNS 10.3.0.53).
#[test]
fn strongswan_client_gets_an_address_from_a_hipsec_pool() {
    if !can_run() {
        return;
    }
    let setup = Setup { hipsec_initiates: false, ..Setup::default() };
    let p = Pair::start_edited(BIN, setup, |d| {
        flush_log(d);
        certificates(d);
        edit(d, "swanctl.conf", "    encap = yes\n", "    encap = yes\n    vips = 0.0.0.0\n");
        edit(d, "swanctl.conf", "local_ts = 10.0.2.0/24", "local_ts = dynamic");
        edit(
            d,
            "a.toml",
            "remote_addrs = \"192.0.2.2\"",
            "remote_addrs = \"%any\"\npools = [\"rw\"]",
        );
        edit(d, "a.toml", "remote_ts = [\"10.0.2.0/24\"]", "remote_ts = [\"10.3.0.0/24\"]");
        append(d, "a.toml", "[pools.rw]\naddrs = \"10.3.0.0/24\"\ndns = [\"10.3.0.53\"]\n");
    });
    p.wait_up(BIN);
    checked_our_certificate(&p);
    // §3.15.1: the CFG_REPLY's INTERNAL_IP4_ADDRESS is the address the responder assigned;
    // charon installs it.
    let installed =
        p.wait_until(10, |p| p.charon_log().contains("installing new virtual IP 10.3.0.1"));
    assert!(installed, "charon did not install 10.3.0.1\n{}", logs(&p));
    // And it read the DNS server (it has no resolver plugin to install it with).
    assert!(p.charon_log().contains("processing INTERNAL_IP4_DNS attribute"), "{}", logs(&p));
    // §2.9: TSi narrowed to the virtual IP.
    let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
    assert!(sas.contains("local  10.3.0.1/32"), "{sas}");
    assert_eq!(ping_from_charon(&p, "10.3.0.1", "10.0.1.1", 5), 5, "pings lost\n{}", logs(&p));
    let st = p.status(BIN);
    let leases = st["ike"]["leases"].as_array().cloned().unwrap_or_default();
    assert_eq!(leases.len(), 1, "{st}");
    assert_eq!(leases[0]["address"], "10.3.0.1");
    assert_eq!(leases[0]["identity"], "node2.example");
    assert_eq!(leases[0]["online"], true);
    let text = human_status(&p);
    assert!(text.contains("rw 10.3.0.1 to node2.example (online, 192.0.2.2:4500)"), "{text}");
    // The IKE SA goes: the lease goes offline, kept for node2.example.
    let o = p.swanctl(&["--terminate", "--ike", "site"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let offline = p.wait_until(10, |p| p.status(BIN)["ike"]["leases"][0]["online"] == false);
    assert!(offline, "lease still online: {}", p.status(BIN));
}

/// hipsec initiates with `vips = ["0.0.0.0"]`; charon answers from `pools { rw }` with
/// `remote_ts = dynamic`. The address lands on hipsec0 and carries pings.
#[test]
fn hipsec_client_gets_an_address_from_a_strongswan_pool() {
    if !can_run() {
        return;
    }
    let setup = Setup { hipsec_initiates: true, ..Setup::default() };
    let p = Pair::start_edited(BIN, setup, |d| {
        flush_log(d);
        certificates(d);
        edit(d, "swanctl.conf", "    encap = yes\n", "    encap = yes\n    pools = rw\n");
        edit(d, "swanctl.conf", "remote_ts = 10.0.1.0/24", "remote_ts = dynamic");
        append(
            d,
            "swanctl.conf",
            "pools {\n  rw {\n    addrs = 10.3.0.0/24\n    dns = 10.3.0.53\n  }\n}\n",
        );
        edit(d, "a.toml", "encap = true\n", "encap = true\nvips = [\"0.0.0.0\"]\n");
    });
    p.wait_up(BIN);
    checked_our_certificate(&p);
    let st = p.status(BIN);
    let vips = st["ike"]["virtual_ips"][0]["addresses"].clone();
    assert_eq!(vips, serde_json::json!(["10.3.0.1/32"]), "{st}\n{}", logs(&p));
    let text = human_status(&p);
    assert!(text.contains("virtual IP 10.3.0.1/32 from site"), "{text}");
    let addrs = Command::new("ip").args(["-n", &p.a, "addr", "show", "dev", "hipsec0"]).output();
    let addrs = String::from_utf8_lossy(&addrs.unwrap().stdout).into_owned();
    assert!(addrs.contains("inet 10.3.0.1/32"), "{addrs}");
    // charon leased it from its pool and narrowed our TSi (0.0.0.0/0) to it (§2.9).
    let assigned = p.wait_until(5, |p| p.charon_log().contains("assigning virtual IP 10.3.0.1"));
    assert!(assigned, "{}", logs(&p));
    let sas = String::from_utf8_lossy(&p.swanctl(&["--list-sas"]).stdout).into_owned();
    assert!(sas.contains("remote 10.3.0.1/32"), "{sas}");
    assert_eq!(p.ping_between("10.3.0.1", "10.0.2.1", 5, "0.2"), 5, "pings lost\n{}", logs(&p));
    // The IKE SA goes: the address leaves hipsec0.
    let o = p.swanctl(&["--terminate", "--ike", "site"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let gone = p.wait_until(10, |p| {
        let o = Command::new("ip").args(["-n", &p.a, "addr", "show", "dev", "hipsec0"]).output();
        !String::from_utf8_lossy(&o.unwrap().stdout).contains("10.3.0.1")
    });
    assert!(gone, "10.3.0.1 still on hipsec0\n{}", logs(&p));
}
