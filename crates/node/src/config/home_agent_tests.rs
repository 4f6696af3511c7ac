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
    let (sa_in, sa_out) = m.keys.manual().unwrap();
    assert_eq!(sa_in.spi.0, 0x1100);
    assert_eq!(sa_out.spi.0, 0x2100);
    // Keys never reach a Debug print of the config.
    let shown = format!("{:?}", m.keys);
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

/// A home agent whose mobile node is keyed by IKEv2 (RFC 4877 §4.4), over the raw carrier.
fn ike_keyed(child: &str, node: &str) -> String {
    let i = BASE.find("[home-agent.mobile-node.sa-in]").unwrap();
    let raw = "[network]\ntransport = \"raw\"\nlocal = \"2001:db8:1::1\"";
    let base = BASE[..i].replace("[network]\nlocal = \"[2001:db8:1::1]:4500\"", raw);
    format!(
        "{base}{node}\n\n[[connection]]\nname = \"mn1\"\nremote_addrs = \"%any\"\n\
         [connection.local]\nauth = \"psk\"\nid = \"ha.example\"\n[connection.remote]\n\
         auth = \"psk\"\nid = \"mn1.example\"\n[connection.children.bu]\n{child}\n\
         [secrets.mn1]\nid = [\"ha.example\", \"mn1.example\"]\nsecret = \"a long shared secret\"\n"
    )
}

const MIP6_CHILD: &str = "local_ts = [\"2001:db8:1::1[mobility-header]\"]\n\
    remote_ts = [\"2001:db8:1::100[mobility-header]\"]\nmode = \"transport\"\nmip6 = \"signalling\"";

#[test]
fn mobile_nodes_keyed_by_ike_are_checked() {
    use crate::config::mip6_sa::SignallingKeys;
    let c = parse("t.toml", &ike_keyed(MIP6_CHILD, "ike = \"mn1\"")).unwrap();
    let m = &c.home_agent.unwrap().mobile_nodes[0];
    assert!(matches!(&m.keys, SignallingKeys::Ike { connection } if connection == "mn1"));
    let ch = &c.connections[0].children[0];
    assert!(ch.mip6);
    assert_eq!(ch.local_ts[0].ip_protocol, 135);
    for (child, node, field) in [
        // A connection that does not exist; one whose child is the data path's cannot run
        // over the raw carrier.
        (MIP6_CHILD, "ike = \"mn2\"", "ike"),
        (&*MIP6_CHILD.replace("mip6 = \"signalling\"", ""), "ike = \"mn1\"", "connection"),
        (&*MIP6_CHILD.replace("signalling", "tunnel"), "ike = \"mn1\"", "mip6"),
        // RFC 4877 §4.4: transport mode, one address each side, the Mobility Header only.
        (&*MIP6_CHILD.replace("\"transport\"", "\"tunnel\""), "ike = \"mn1\"", "mode"),
        (
            &*MIP6_CHILD.replace("::1[mobility-header]", "::/64[mobility-header]"),
            "ike = \"mn1\"",
            "local_ts",
        ),
        (&*MIP6_CHILD.replace("::100[mobility-header]", "::100"), "ike = \"mn1\"", "remote_ts"),
        (&format!("{MIP6_CHILD}\nstart_action = \"trap\""), "ike = \"mn1\"", "start_action"),
        // Neither keys nor ike.
        (MIP6_CHILD, "", "sa-in"),
    ] {
        let (f, msg) = field_of(&ike_keyed(child, node));
        assert_eq!(f, field, "{child} / {node}: {msg}");
    }
    // ike and manual keys together.
    let both = format!("{}{}", ike_keyed(MIP6_CHILD, "ike = \"mn1\""), "");
    let i = BASE.find("[home-agent.mobile-node.sa-in]").unwrap();
    let keys = &BASE[i..];
    let at = both.find("\n\n[[connection]]").unwrap();
    let (f, msg) = field_of(&format!("{}\n{keys}{}", &both[..at], &both[at..]));
    assert_eq!(f, "ike", "{msg}");
    // A signalling connection no mobile node names; two mobile nodes naming one connection.
    let second = format!(
        "{}\n[[connection]]\nname = \"mn2\"\nremote_addrs = \"%any\"\n[connection.local]\n\
         auth = \"psk\"\nid = \"ha.example\"\n[connection.remote]\nauth = \"psk\"\n\
         id = \"mn1.example\"\n[connection.children.bu]\n{MIP6_CHILD}\n",
        ike_keyed(MIP6_CHILD, "ike = \"mn1\"")
    );
    let (f, msg) = field_of(&second);
    assert_eq!(f, "mip6", "{msg}");
    let node = "ike = \"mn1\"\n\n[[home-agent.mobile-node]]\nhome-address = \"2001:db8:1::101\"\nike = \"mn1\"";
    let (f, msg) = field_of(&ike_keyed(MIP6_CHILD, node));
    assert_eq!(f, "ike", "{msg}");
    // A signalling child on a node that is neither home agent nor mobile node.
    let plain = ike_keyed(MIP6_CHILD, "ike = \"mn1\"");
    let ha_at = plain.find("[home-agent]").unwrap();
    let conn_at = plain.find("[[connection]]").unwrap();
    let (f, msg) = field_of(&format!("{}{}", &plain[..ha_at], &plain[conn_at..]));
    assert_eq!(f, "mip6", "{msg}");
}
