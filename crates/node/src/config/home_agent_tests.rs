//! Tests of `[home-agent]`: the documented shape parses, and each bad field is named.

use super::super::{ConfigError, parse};

const BASE: &str = r#"
[interface]
name = "hmtun0"

[network]
local = "[2001:db8:1::1]:4500"

[home-agent]
interface = "eth0"
address = "2001:db8:1::1"
home-prefix = "2001:db8:1::/64"
max-lifetime = 600
capacity = 1000

[[home-agent.mobile-node]]
home-address = "2001:db8:1::100"
[home-agent.mobile-node.sa-in]
src = "2001:db8:1::100"
dst = "2001:db8:1::1"
proto = "esp"
mode = "transport"
spi = "0x1100"
enc = "aes128cbc"
auth = "sha1"
enc-key = "0x000102030405060708090a0b0c0d0e0f"
auth-key = "0x202122232425262728292a2b2c2d2e2f30313233"
[home-agent.mobile-node.sa-out]
src = "2001:db8:1::1"
dst = "2001:db8:1::100"
proto = "esp"
mode = "transport"
spi = "0x2100"
aead = "aes128gcm"
key = "0x3c3d3e3f404142434445464748494a4b4c4d4e4f"
"#;

fn field_of(text: &str) -> (String, String) {
    match parse("t.toml", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e @ ConfigError::Field { .. }) => (e.field().unwrap_or("").to_string(), e.to_string()),
        Err(e) => panic!("not a field error: {e}"),
    }
}

#[test]
fn documented_shape_parses() {
    let c = parse("t.toml", BASE).unwrap();
    let h = c.home_agent.unwrap();
    assert_eq!(h.interface, "eth0");
    assert_eq!(h.home_prefix_len, 64);
    assert_eq!(h.max_lifetime_units, 150);
    assert_eq!(h.capacity, 1000);
    assert_eq!(h.mobile_nodes.len(), 1);
    let m = &h.mobile_nodes[0];
    assert_eq!(m.sa_in.spi.0, 0x1100);
    assert_eq!(m.sa_out.spi.0, 0x2100);
    // Keys never reach a Debug print of the config.
    let shown = format!("{:?}", m.sa_in);
    assert!(!shown.contains("202122"), "{shown}");
}

#[test]
fn bad_fields_are_named() {
    for (from, to, field) in [
        ("address = \"2001:db8:1::1\"", "address = \"192.0.2.1\"", "address"),
        ("home-prefix = \"2001:db8:1::/64\"", "home-prefix = \"10.0.0.0/8\"", "home-prefix"),
        ("max-lifetime = 600", "max-lifetime = 1", "max-lifetime"),
        ("capacity = 1000", "capacity = 0", "capacity"),
        ("interface = \"eth0\"", "interface = \"\"", "interface"),
        ("home-address = \"2001:db8:1::100\"", "home-address = \"x\"", "home-address"),
        // RFC 3776 §4.1: the SA goes between the home address and the home agent.
        ("src = \"2001:db8:1::100\"", "src = \"2001:db8:1::101\"", "src"),
        ("mode = \"transport\"", "mode = \"tunnel\"", "mode"),
        ("enc-key = \"0x000102030405060708090a0b0c0d0e0f\"", "enc-key = \"0x00\"", "enc-key"),
    ] {
        assert!(BASE.contains(from), "{from}");
        let (f, msg) = field_of(&BASE.replacen(from, to, 1));
        assert_eq!(f, field, "{msg}");
    }
}

#[test]
fn duplicate_mobile_nodes_are_refused() {
    let i = BASE.find("[[home-agent.mobile-node]]").unwrap();
    let twice = format!("{BASE}\n{}", &BASE[i..]);
    let (f, _) = field_of(&twice);
    assert_eq!(f, "home-address");
}

const TUNNELS: &str = r#"
[home-agent.mobile-node.tunnel-in]
src = "2001:db8:1::100"
dst = "2001:db8:1::1"
proto = "esp"
mode = "tunnel"
spi = "0x3100"
aead = "aes128gcm"
key = "0x3c3d3e3f404142434445464748494a4b4c4d4e4f"
[home-agent.mobile-node.tunnel-out]
src = "2001:db8:1::1"
dst = "2001:db8:1::100"
proto = "esp"
mode = "tunnel"
spi = "0x4100"
aead = "aes128gcm"
key = "0x3c3d3e3f404142434445464748494a4b4c4d4e4f"
"#;

/// BASE with the raw carrier the tunnels want, and `tunnels` appended.
fn with_tunnels(tunnels: &str) -> String {
    let raw =
        "[network]\ntransport = \"raw\"\nlocal = \"2001:db8:1::1\"\npeer = \"2001:db8:1::100\"";
    format!("{}{tunnels}", BASE.replace("[network]\nlocal = \"[2001:db8:1::1]:4500\"", raw))
}

#[test]
fn tunnel_sas_parse_and_are_checked() {
    let c = parse("t.toml", &with_tunnels(TUNNELS)).unwrap();
    let m = &c.home_agent.unwrap().mobile_nodes[0];
    let (tin, tout) = m.tunnel.as_ref().unwrap();
    assert_eq!((tin.spi.0, tout.spi.0), (0x3100, 0x4100));
    assert!(parse("t.toml", BASE).unwrap().home_agent.unwrap().mobile_nodes[0].tunnel.is_none());
    // ESP in UDP cannot follow a care-of address.
    let (f, m) = field_of(&format!("{BASE}{TUNNELS}"));
    assert_eq!(f, "transport", "{m}");
    let (f, m) =
        field_of(&with_tunnels(&TUNNELS.replacen("mode = \"tunnel\"", "mode = \"transport\"", 1)));
    assert_eq!(f, "mode", "{m}");
    assert!(m.contains("tunnel-in"), "{m}");
    let (f, m) = field_of(&with_tunnels(
        &TUNNELS.replace("dst = \"2001:db8:1::100\"", "dst = \"2001:db8:2::5\""),
    ));
    assert_eq!(f, "dst", "{m}");
    let only_in = TUNNELS.split("[home-agent.mobile-node.tunnel-out]").next().unwrap();
    let (f, m) = field_of(&with_tunnels(only_in));
    assert_eq!(f, "tunnel-out", "{m}");
    let (f, m) = field_of(&with_tunnels(&TUNNELS.replace("0x3100", "0x1100")));
    assert_eq!(f, "spi", "{m}");
}
