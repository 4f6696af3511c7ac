//! `hipsec pcap wireshark-keys`: the esp_sa lines, and tshark decrypting what `seal` wrote with
//! them (skipped, saying so, when tshark is not installed).

#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use std::process::Command;

const SAS: &str = r#"
[[sa]]
src = "198.51.100.1"
dst = "198.51.100.2"
proto = "esp"
spi = "0x00001000"
mode = "tunnel"
aead = "aes128gcm"
key = "0x2ff0aab31e8889bbcbd4b3020ed34eae6d6d70eb"

[[sa]]
src = "2001:db8::1"
dst = "2001:db8::2"
proto = "esp"
spi = "0x00002000"
mode = "transport"
enc = "aes256cbc"
auth = "sha256"
enc-key = "0x000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
auth-key = "0x202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"

[[sa]]
src = "192.0.2.1"
dst = "192.0.2.2"
proto = "esp"
spi = "0x00003000"
mode = "transport"
enc = "3des"
auth = "sha1"
enc-key = "0x000102030405060708090a0b0c0d0e0f1011121314151617"
auth-key = "0x000102030405060708090a0b0c0d0e0f10111213"

[[sa]]
src = "192.0.2.1"
dst = "192.0.2.2"
proto = "esp"
spi = "0x00004000"
mode = "tunnel"
enc = "null"
auth = "sha512"
auth-key = "0x000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

[[sa]]
src = "192.0.2.1"
dst = "192.0.2.2"
proto = "esp"
spi = "0x00005000"
mode = "tunnel"
aead = "chacha20poly1305"
key = "0x000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f00010203"

[[sa]]
src = "192.0.2.1"
dst = "192.0.2.2"
proto = "ah"
spi = "0x00006000"
mode = "transport"
auth = "sha256"
auth-key = "0x000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
"#;

#[test]
fn esp_sa_lines() {
    let dir = tmpdir("wskeys");
    let sa = dir.join("sa.toml");
    std::fs::write(&sa, SAS).unwrap();
    let o = run(&["pcap", "wireshark-keys", "--sa", sa.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let records: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(records.len(), 4, "{out}");
    assert_eq!(
        records[0],
        r#""IPv4","198.51.100.1","198.51.100.2","0x00001000","AES-GCM with 16 octet ICV [RFC4106]","0x2ff0aab31e8889bbcbd4b3020ed34eae6d6d70eb","NULL","""#
    );
    assert!(records[1].starts_with(
        r#""IPv6","2001:db8::1","2001:db8::2","0x00002000","AES-CBC [RFC3602]","0x0001"#
    ));
    assert!(records[1].ends_with(r#","HMAC-SHA-256-128 [RFC4868]","0x202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f""#));
    assert!(
        records[2].contains(r#""TripleDES-CBC [RFC2451]""#)
            && records[2].contains(r#""HMAC-SHA-1-96 [RFC2404]""#)
    );
    assert!(records[3].contains(r#","NULL","","HMAC-SHA-512-256 [RFC4868]","#), "{}", records[3]);
    assert!(
        out.contains("# spi 0x00005000 (line 43): chacha20poly1305 is not in Wireshark 4.0"),
        "{out}"
    );
    assert!(out.contains("# spi 0x00006000 (line 52): AH needs no keys"), "{out}");
    assert!(stderr(&o).contains("legacy"), "3des-sha1 is legacy");
}

fn tshark_available() -> bool {
    Command::new("tshark").arg("-v").output().is_ok_and(|o| o.status.success())
}

/// hipsec seals with each SA; tshark, given only the esp_sa file, shows the inner UDP payload.
#[test]
fn tshark_decrypts_what_seal_wrote() {
    if !tshark_available() {
        println!("SKIPPED: tshark not installed");
        return;
    }
    let dir = tmpdir("tshark");
    let sa = dir.join("sa.toml");
    std::fs::write(&sa, SAS).unwrap();
    let cfg = dir.join("wireshark");
    std::fs::create_dir_all(&cfg).unwrap();
    let keys = run(&["pcap", "wireshark-keys", "--sa", sa.to_str().unwrap()]);
    std::fs::write(cfg.join("esp_sa"), &keys.stdout).unwrap();

    for (spi, v6) in [
        ("0x1000", false),
        ("0x1000", true),
        ("0x2000", true),
        ("0x3000", false),
        ("0x4000", false),
    ] {
        let marker = format!("hipsec-tshark-{spi}-v6={v6}");
        let payload = udp(40000, 9, marker.as_bytes());
        let ip = if v6 { ipv6(A6, B6, 17, &payload) } else { ipv4(A4, B4, 17, &payload) };
        let plain = dir.join("plain.pcap");
        std::fs::write(&plain, pcap(101, &[(1_700_000_000_000_000, ip)])).unwrap();
        let sealed = dir.join("sealed.pcap");
        let (o, v) = tool_json("seal", &sa, &plain, &sealed, &["--spi", spi]);
        assert!(o.status.success() && v["packets_out"] == 1, "{}: {v}", stderr(&o));
        let t = Command::new("tshark")
            .env("WIRESHARK_CONFIG_DIR", &cfg)
            .args(["-n", "-r", sealed.to_str().unwrap(), "-o", "esp.enable_encryption_decode:TRUE"])
            .args(["-T", "fields", "-e", "esp.spi", "-e", "udp.payload"])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&t.stdout);
        assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
        assert!(
            out.contains(&hex::encode(marker.as_bytes())),
            "spi {spi} v6={v6}: tshark did not decrypt:\n{out}\n{}",
            String::from_utf8_lossy(&t.stderr)
        );
    }
}
