//! Each warning shown on a config or SA that has the weak setting, and none on a clean one.

use super::*;
use crate::config::{parse, sa};

const BASE: &str = "[interface]\nname = \"hipsec0\"\naddresses = [\"10.0.0.1/24\"]\n\
    [network]\nlocal = \"192.0.2.1:4500\"\npeer = \"192.0.2.2:4500\"\n";

/// A clean SA: random-looking AES-GCM key, default replay window.
fn sa_text(direction: &str, spi: u32, extra: &str) -> String {
    let (src, dst) =
        if direction == "out" { ("192.0.2.1", "192.0.2.2") } else { ("192.0.2.2", "192.0.2.1") };
    let alg = if extra.contains("enc =") || extra.contains("auth =") || extra.contains("aead =") {
        String::new()
    } else {
        "aead = \"aes128gcm\"\nkey = \"0x3f7a19c2e05b8d4461a9f0c37e2d5b18_9c4e1a07\"\n".into()
    };
    format!(
        "[[sa]]\ndirection = \"{direction}\"\nproto = \"esp\"\nmode = \"tunnel\"\nsrc = \"{src}\"\n\
         dst = \"{dst}\"\nspi = {spi}\n{alg}{extra}\n"
    )
}

fn one_sa(direction: &str, extra: &str) -> Vec<Warning> {
    let text = sa_text(direction, 4097, extra);
    let sas = sa::parse_runtime("t.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    check_sa(&sas[0])
}

fn events(ws: &[Warning]) -> Vec<&'static str> {
    ws.iter().map(Warning::event).collect()
}

/// A PSK connection with `secret`.
fn psk_config(secret: &str) -> String {
    format!(
        "{BASE}[[connection]]\nname = \"peer\"\nremote_addrs = \"192.0.2.2\"\n\
         [connection.children.net]\nlocal_ts = [\"10.0.0.0/24\"]\nremote_ts = [\"10.1.0.0/24\"]\n\
         [secrets.peer]\nid = \"192.0.2.2\"\nsecret = \"{secret}\"\n"
    )
}

#[test]
fn a_clean_config_draws_none() {
    let text = format!("{BASE}{}{}", sa_text("out", 4097, ""), sa_text("in", 8193, ""));
    let c = parse("t.toml", &text).unwrap();
    assert_eq!(check_config_with(&c, |_| None), vec![]);
    let c = parse("t.toml", &psk_config("a pre-shared key of 32 bytes....")).unwrap();
    assert_eq!(check_config_with(&c, |_| None), vec![]);
    // A config without keys may be world-readable.
    let c = parse("t.toml", BASE).unwrap();
    assert_eq!(check_config_with(&c, |_| Some(0o644)), vec![]);
}

#[test]
fn null_encryption() {
    let key = "0x8d2f61a0c4b97e3355f1d02a9b6c4e7f1a2b3c4d5e6f708192a3b4c5d6e7f809";
    let w = one_sa("out", &format!("enc = \"null\"\nauth = \"sha256\"\nauth-key = \"{key}\""));
    assert_eq!(events(&w), ["null-encryption"]);
    assert!(w[0].message().contains("in clear"), "{}", w[0].message());
    assert_eq!(w[0].to_json()["field"], "enc");
}

#[test]
fn legacy_3des_and_sha1() {
    let enc = "0x0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778";
    let auth = "0x99aabbccddeeff00112233445566778899aabbcc";
    let w = one_sa(
        "in",
        &format!("enc = \"3des\"\nenc-key = \"{enc}\"\nauth = \"sha1\"\nauth-key = \"{auth}\""),
    );
    assert_eq!(events(&w), ["legacy-algorithm", "legacy-algorithm"]);
    let j: Vec<Value> = w.iter().map(Warning::to_json).collect();
    assert_eq!((j[0]["field"].as_str(), j[0]["alg"].as_str()), (Some("enc"), Some("3des")));
    assert_eq!((j[1]["field"].as_str(), j[1]["alg"].as_str()), (Some("auth"), Some("sha1")));
    assert_eq!(j[0]["direction"], "in");
    assert_eq!(j[0]["spi"], "0x00001001");
    // AES-CBC with SHA-256 is not legacy.
    let enc = "0x0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    let auth = "0x8d2f61a0c4b97e3355f1d02a9b6c4e7f1a2b3c4d5e6f708192a3b4c5d6e7f809";
    let w = one_sa(
        "in",
        &format!(
            "enc = \"aes128cbc\"\nenc-key = \"{enc}\"\nauth = \"sha256\"\nauth-key = \"{auth}\""
        ),
    );
    assert_eq!(w, vec![]);
}

#[test]
fn replay_window_zero_on_inbound_sas() {
    let w = one_sa("in", "replay-window = 0");
    assert_eq!(events(&w), ["replay-window-off"]);
    assert_eq!(w[0].to_json()["field"], "replay-window");
    // The sender never checks for replays: an outbound SA's window is not used.
    assert_eq!(one_sa("out", "replay-window = 0"), vec![]);
}

#[test]
fn keys_of_one_repeated_byte() {
    let aead = |k: &str| format!("aead = \"aes128gcm\"\nkey = \"{k}\"");
    for k in
        ["0x0000000000000000000000000000000000000000", "0x4141414141414141414141414141414141414141"]
    {
        let w = one_sa("out", &aead(k));
        assert_eq!(events(&w), ["weak-key"], "{k}");
        assert_eq!(w[0].to_json()["field"], "key");
        // The warning never carries the key.
        assert!(!w[0].to_json().to_string().contains(&k[2..12]));
    }
    // A zero cipher key behind a random salt is as weak.
    let w = one_sa("out", &aead("0x00000000000000000000000000000000_9c4e1a07"));
    assert_eq!(events(&w), ["weak-key"]);
    // CBC: each key on its own.
    let zero_auth = format!("0x{}", "00".repeat(32));
    let w = one_sa(
        "out",
        &format!(
            "enc = \"aes128cbc\"\nenc-key = \"0x0f1e2d3c4b5a69788796a5b4c3d2e1f0\"\n\
             auth = \"sha256\"\nauth-key = \"{zero_auth}\""
        ),
    );
    assert_eq!(events(&w), ["weak-key"]);
    assert_eq!(w[0].to_json()["field"], "auth-key");
}

#[test]
fn short_and_repeated_psks() {
    let c = parse("t.toml", &psk_config("x")).unwrap();
    let w = check_config_with(&c, |_| None);
    assert_eq!(events(&w), ["short-psk"]);
    assert_eq!(w[0].to_json()["bytes"], 1);
    assert_eq!(w[0].to_json()["connection"], "peer");
    let c = parse("t.toml", &psk_config("nineteen bytes long")).unwrap();
    assert_eq!(events(&check_config_with(&c, |_| None)), ["short-psk"]);
    let c = parse("t.toml", &psk_config(&"a".repeat(32))).unwrap();
    assert_eq!(events(&check_config_with(&c, |_| None)), ["weak-psk"]);
    let c = parse("t.toml", &psk_config(&format!("0x{}", "00".repeat(8)))).unwrap();
    assert_eq!(events(&check_config_with(&c, |_| None)), ["short-psk", "weak-psk"]);
    // The PSK itself appears nowhere.
    let c = parse("t.toml", &psk_config("hunter2")).unwrap();
    let j = to_json(&check_config_with(&c, |_| Some(0o644))).to_string();
    assert!(!j.contains("hunter2"), "{j}");
}

#[test]
fn readable_files_holding_keys() {
    // [[sa]] keys and [secrets] PSKs in the config itself.
    let text = format!("{BASE}{}", sa_text("out", 4097, ""));
    let c = parse("/etc/hipsec/n.toml", &text).unwrap();
    let w = check_config_with(&c, |_| Some(0o644));
    assert_eq!(events(&w), ["keys-readable"]);
    assert!(w[0].message().contains("/etc/hipsec/n.toml (mode 644)"), "{}", w[0].message());
    assert_eq!(w[0].to_json()["holds"], "[[sa]] keys");
    let c = parse("/etc/hipsec/n.toml", &psk_config("a pre-shared key of 32 bytes....")).unwrap();
    let w = check_config_with(&c, |_| Some(0o640));
    assert_eq!(w[0].to_json()["holds"], "[secrets] PSKs");
    assert_eq!(w[0].to_json()["mode"], "640");
    // The HIP identity file (which the node then refuses to load).
    let hip = format!("{BASE}[hip]\nidentity = \"/etc/hipsec/host.pem\"\n");
    let c = parse("t.toml", &hip).unwrap();
    let w = check_config_with(&c, |p| (p == Path::new("/etc/hipsec/host.pem")).then_some(0o604));
    assert_eq!(events(&w), ["keys-readable"]);
    assert_eq!(w[0].to_json()["file"], "/etc/hipsec/host.pem");
}

/// `local.key` of a pubkey connection, with real files: the check reads their modes.
#[test]
fn readable_ike_private_key_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("hipsec-warn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("me.key");
    let _ = std::fs::remove_file(&key);
    crate::config::host_identity::create(
        &key,
        hip::identity::HiKind::Ecdsa(crypto::EcCurve::P256),
        true,
    )
    .unwrap();
    // The peer's public key as SubjectPublicKeyInfo DER (RFC 5480 §2: id-ecPublicKey, P-256).
    let pk = crate::config::keys::private_key(&key).unwrap().public_key();
    let mut spki = hex::decode("3059301306072a8648ce3d020106082a8648ce3d030107034200").unwrap();
    spki.extend_from_slice(&pk);
    std::fs::write(dir.join("peer.pub"), spki).unwrap();
    let text = format!(
        "{BASE}[[connection]]\nname = \"peer\"\nremote_addrs = \"192.0.2.2\"\n\
         [connection.local]\nauth = \"pubkey\"\nkey = \"me.key\"\n\
         [connection.remote]\nauth = \"pubkey\"\npubkeys = \"peer.pub\"\n\
         [connection.children.net]\nlocal_ts = [\"10.0.0.0/24\"]\nremote_ts = [\"10.1.0.0/24\"]\n"
    );
    let conf = dir.join("n.toml");
    let c = parse(&conf.display().to_string(), &text).unwrap();
    assert_eq!(check_config(&c), vec![], "mode 600 draws nothing");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let w = check_config(&c);
    assert_eq!(events(&w), ["keys-readable"]);
    assert_eq!(w[0].to_json()["file"], key.display().to_string());
    assert!(w[0].message().contains("local.key"), "{}", w[0].message());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The manually keyed Mobile IPv6 signalling SAs of a home agent are checked as [[sa]] are.
#[test]
fn mobile_ipv6_manual_keys() {
    let sa = |dir: &str, src: &str, dst: &str, spi: u32, alg: &str| {
        format!(
            "[home-agent.mobile-node.{dir}]\nsrc = \"{src}\"\ndst = \"{dst}\"\nproto = \"esp\"\n\
             mode = \"transport\"\nspi = {spi}\n{alg}\n"
        )
    };
    let (mn, ha) = ("2001:db8:1::100", "2001:db8:1::1");
    let text = format!(
        "[interface]\nname = \"hmtun0\"\n[network]\nlocal = \"[{ha}]:4500\"\n\
         [home-agent]\ninterface = \"eth0\"\naddress = \"{ha}\"\nhome-prefix = \"2001:db8:1::/64\"\n\
         [[home-agent.mobile-node]]\nhome-address = \"{mn}\"\n{}{}",
        sa(
            "sa-in",
            mn,
            ha,
            4352,
            "enc = \"aes128cbc\"\nauth = \"sha1\"\nenc-key = \"0x0f1e2d3c4b5a69788796a5b4c3d2e1f0\"\n\
             auth-key = \"0x99aabbccddeeff00112233445566778899aabbcc\""
        ),
        sa(
            "sa-out",
            ha,
            mn,
            8448,
            "aead = \"aes128gcm\"\nkey = \"0x3c3d3e3f404142434445464748494a4b4c4d4e4f\""
        )
    );
    let c = parse("/etc/hipsec/ha.toml", &text).unwrap();
    let w = check_config_with(&c, |_| Some(0o644));
    assert_eq!(events(&w), ["keys-readable", "legacy-algorithm"]);
    assert_eq!(w[0].to_json()["holds"], "Mobile IPv6 sa-in/sa-out keys");
    let j = w[1].to_json();
    assert_eq!(j["sa"], "[home-agent] mobile node 2001:db8:1::100 sa-in");
    assert_eq!((j["field"].as_str(), j["alg"].as_str()), (Some("auth"), Some("sha1")));
}

/// IKE proposals with 3DES, SHA-1 or MODP-1024 are refused outright, so they need no warning.
#[test]
fn legacy_ike_proposals_are_refused() {
    use crate::config::proposal::{esp_suites, ike_suites};
    for p in ["3des-sha256-x25519", "aes128-sha1-x25519", "aes128-sha256-modp1024"] {
        assert!(ike_suites(p).is_err(), "{p}");
    }
    for p in ["3des-sha256", "aes128-sha1", "null-sha256", "aes128gcm16-modp1024"] {
        assert!(esp_suites(p).is_err(), "{p}");
    }
}
