//! Road warriors (RFC 7296 §2.19, §3.15) between a hipsec node and strongSwan 5.9 (charon,
//! kernel-libipsec) in two namespaces: charon asks for a virtual IP (`vips = 0.0.0.0`) and
//! gets one from a hipsec `[pools.rw]`, then pings through the tunnel from it; and hipsec, with
//! `vips = ["0.0.0.0"]`, gets one from charon's `pools`, puts it on its TUN device and pings
//! from it. X.509 certificates both ways, made at test time with strongSwan's `pki` as in
//! interop_strongswan_certs.rs (ECDSA P-256 end entities of one CA); and charon as an
//! EAP-MSCHAPv2 road warrior (RFC 7296 §2.16) behind our certificate. Needs root, netns, TUN,
//! strongSwan and `pki`; else SKIPPED.
//!
//! ```text
//!   ns A (hipsec)                         ns B (charon + libipsec)
//!   hipsec0 10.0.1.1/24 ── va 192.0.2.1 ══ vb 192.0.2.2 ── lo 10.0.2.1
//!   road warrior case 1: charon's virtual IP 10.3.0.1 from hipsec's pool
//!   road warrior case 2: hipsec0's virtual IP 10.3.0.1 from charon's pool
//! ```

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

/// The password of EAP user carol on both sides (a test value, not a credential).
const CAROL: &str = "carol-test-password";

/// Whether charon can run EAP-MSCHAPv2: its plugin, and MD4 and DES, which charon's openssl
/// plugin takes from OpenSSL 3's legacy provider (5.9.8 loads it unless
/// `plugins.openssl.load_legacy = no`); there is no separate md4 plugin on Debian.
fn can_run_eap() -> bool {
    let plugin = "/usr/lib/ipsec/plugins/libstrongswan-eap-mschapv2.so";
    if !Path::new(plugin).exists() {
        println!("SKIPPED: needs {plugin} (package libcharon-extauth-plugins)");
        return false;
    }
    let legacy = Command::new("openssl")
        .args(["list", "-providers", "-provider", "legacy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !legacy {
        println!("SKIPPED: OpenSSL's legacy provider (MD4, DES for MS-CHAPv2) is missing");
        return false;
    }
    true
}

/// charon as an EAP-MSCHAPv2 road warrior (`local { auth = eap-mschapv2 eap_id = carol }`,
/// `remote { auth = pubkey }` against our certificate) asking for a virtual IP; hipsec answers
/// on a `%any` connection with `remote.auth = "eap-mschapv2"` and `pools = ["rw"]`.
fn eap_pair(charon_password: &str) -> Pair {
    let setup = Setup { hipsec_initiates: false, ..Setup::default() };
    Pair::start_edited(BIN, setup, |d| {
        flush_log(d);
        certificates(d);
        edit(d, "strongswan.conf", " x509 pubkey ", " x509 pubkey eap-identity eap-mschapv2 ");
        edit(
            d,
            "swanctl.conf",
            "auth = pubkey\n      certs = charon.pem\n      id = node2.example",
            "auth = eap-mschapv2\n      eap_id = carol\n      id = node2.example",
        );
        edit(
            d,
            "swanctl.conf",
            "secrets {\n",
            &format!(
                "secrets {{\n  eap-carol {{\n    id = carol\n    secret = \"{charon_password}\"\n  }}\n"
            ),
        );
        edit(d, "swanctl.conf", "    encap = yes\n", "    encap = yes\n    vips = 0.0.0.0\n");
        edit(d, "swanctl.conf", "local_ts = 10.0.2.0/24", "local_ts = dynamic");
        let a = std::fs::read_to_string(d.join("a.toml")).unwrap();
        let from = a.find("[connection.remote]\nauth = \"pubkey\"\ncacerts = ").unwrap();
        let to = from + a[from..].find('\n').unwrap() + 1;
        let to = to + a[to..].find('\n').unwrap() + 1;
        let mut a =
            format!("{}[connection.remote]\nauth = \"eap-mschapv2\"\n{}", &a[..from], &a[to..]);
        a = a.replacen(
            "remote_addrs = \"192.0.2.2\"",
            "remote_addrs = \"%any\"\npools = [\"rw\"]",
            1,
        );
        a = a.replacen("remote_ts = [\"10.0.2.0/24\"]", "remote_ts = [\"10.3.0.0/24\"]", 1);
        a.push_str(&format!(
            "[secrets.eap-carol]\neap_id = \"carol\"\nsecret = \"{CAROL}\"\n\
             [pools.rw]\naddrs = \"10.3.0.0/24\"\n"
        ));
        std::fs::write(d.join("a.toml"), a).unwrap();
    })
}

/// TCP from charon's virtual IP to our inner address: a SHA-256 sink on 10.0.1.1 in our
/// namespace, `bytes` random bytes sent from 10.3.0.1 in charon's; (received, sent) digests.
fn tcp_from_vip(p: &Pair, bytes: usize) -> (String, String) {
    let sink = "import hashlib,socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('10.0.1.1',5203));s.listen(1);print('ready',flush=True)\nc,_=s.accept();h=hashlib.sha256()\nwhile True:\n  b=c.recv(65536)\n  if not b: break\n  h.update(b)\nprint(h.hexdigest())";
    let mut server = Command::new("ip")
        .args(["netns", "exec", &p.a, "python3", "-c", sink])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(server.stdout.take().unwrap()));
    assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("ready"));
    let send = format!(
        "import hashlib,os,socket\ns=socket.create_connection(('10.0.1.1',5203),source_address=('10.3.0.1',0),timeout=30)\nd=os.urandom({bytes})\ns.sendall(d);s.close()\nprint(hashlib.sha256(d).hexdigest())"
    );
    let out =
        Command::new("ip").args(["netns", "exec", &p.b, "python3", "-c", &send]).output().unwrap();
    assert!(out.status.success(), "sender: {}", String::from_utf8_lossy(&out.stderr));
    let got = lines.next().and_then(Result::ok).unwrap_or_default();
    let _ = server.wait();
    (got, String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// RFC 7296 §2.16 against charon: our certificate and signature first, then EAP-MSCHAPv2 for
/// user carol; both AUTHs after EAP keyed by the MSK; carol leases 10.3.0.1 and carries ping
/// and TCP from it.
#[test]
fn strongswan_eap_mschapv2_client_gets_an_address_from_a_hipsec_pool() {
    if !can_run() || !can_run_eap() {
        return;
    }
    let p = eap_pair(CAROL);
    p.wait_up(BIN);
    checked_our_certificate(&p);
    let log = p.charon_log();
    for line in [
        "server requested EAP_IDENTITY",
        "server requested EAP_MSCHAPV2 authentication",
        "EAP method EAP_MSCHAPV2 succeeded, MSK established",
        "authentication of 'node1.example' with EAP successful",
    ] {
        assert!(log.contains(line), "charon did not log {line:?}\n{}", logs(&p));
    }
    let installed =
        p.wait_until(10, |p| p.charon_log().contains("installing new virtual IP 10.3.0.1"));
    assert!(installed, "charon did not install 10.3.0.1\n{}", logs(&p));
    let st = p.status(BIN);
    let leases = st["ike"]["leases"].as_array().cloned().unwrap_or_default();
    assert_eq!(leases.len(), 1, "{st}");
    assert_eq!(leases[0]["address"], "10.3.0.1");
    assert_eq!(leases[0]["identity"], "carol", "the lease is the EAP user's, not IDi's");
    assert_eq!(ping_from_charon(&p, "10.3.0.1", "10.0.1.1", 5), 5, "pings lost\n{}", logs(&p));
    let (got, sent) = tcp_from_vip(&p, 1 << 20);
    assert_eq!(got, sent, "TCP from the virtual IP\n{}", logs(&p));
    // The password is in no log and no status.
    assert!(!p.hipsec_log().contains(CAROL) && !st.to_string().contains(CAROL));
    assert!(!human_status(&p).contains(CAROL));
}

/// A wrong password: EAP Failure with AUTHENTICATION_FAILED, no IKE SA, no lease.
#[test]
fn strongswan_eap_mschapv2_wrong_password_is_refused() {
    if !can_run() || !can_run_eap() {
        return;
    }
    let p = eap_pair("not-carols-password");
    let refused = p.wait_until(10, |p| {
        let log = p.charon_log();
        log.contains("received EAP_FAILURE") || log.contains("AUTHENTICATION_FAILED notify")
    });
    assert!(refused, "charon was not refused\n{}", logs(&p));
    let st = p.status(BIN);
    let leases = st["ike"]["leases"].as_array().cloned().unwrap_or_default();
    assert!(leases.is_empty(), "{st}");
    let sas = st["ike"]["ike_sas"].as_array().cloned().unwrap_or_default();
    assert!(sas.iter().all(|s| s["state"] != "established"), "{st}");
    assert!(!p.charon_log().contains("installing new virtual IP"), "{}", logs(&p));
}
