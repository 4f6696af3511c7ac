//! Tests of `[mobile-node]` and of the tunnel SAs of `[[home-agent.mobile-node]]`: the
//! documented shape parses, and each bad field is named.

use super::super::{ConfigError, parse};

fn sa(table: &str, src: &str, dst: &str, mode: &str, spi: u32) -> String {
    format!(
        "[{table}]\nsrc = \"{src}\"\ndst = \"{dst}\"\nproto = \"esp\"\nmode = \"{mode}\"\n\
         spi = \"0x{spi:x}\"\naead = \"aes128gcm\"\nkey = \"0x3c3d3e3f404142434445464748494a4b4c4d4e4f\"\n"
    )
}

const HOME: &str = "2001:db8:1::100";
const HA: &str = "2001:db8:1::1";

fn mn(lifetime: &str, tunnel_out_mode: &str) -> String {
    format!(
        "[interface]\nname = \"mntun0\"\naddresses = [\"{HOME}/128\"]\n\n[network]\n\
         transport = \"raw\"\nlocal = \"::\"\npeer = \"{HA}\"\n\n[mobile-node]\n\
         interface = \"eth0\"\nhome-address = \"{HOME}\"\nhome-agent = \"{HA}\"\n{lifetime}\n{}{}{}{}",
        sa("mobile-node.sa-out", HOME, HA, "transport", 0x1100),
        sa("mobile-node.sa-in", HA, HOME, "transport", 0x2100),
        sa("mobile-node.tunnel-out", HOME, HA, tunnel_out_mode, 0x3100),
        sa("mobile-node.tunnel-in", HA, HOME, "tunnel", 0x4100),
    )
}

fn field_of(text: &str) -> (String, String) {
    match parse("t.toml", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e @ ConfigError::Field { .. }) => (e.field().unwrap_or("").to_string(), e.to_string()),
        Err(e) => panic!("not a field error: {e}"),
    }
}

#[test]
fn mobile_node_parses() {
    let c = parse("t.toml", &mn("lifetime = 60", "tunnel")).unwrap();
    let m = c.mobile_node.unwrap();
    assert_eq!(m.interface, "eth0");
    assert_eq!(m.lifetime_units, 15);
    assert_eq!(m.keys.manual().unwrap().1.spi.0, 0x1100);
    assert_eq!(m.tunnel_out.spi.0, 0x3100);
    assert_eq!(m.tunnel_in.mode, ipsec::Mode::Tunnel);
}

#[test]
fn mobile_node_errors_name_the_field() {
    let (f, m) = field_of(&mn("lifetime = 2", "tunnel"));
    assert_eq!(f, "lifetime", "{m}");
    let (f, m) = field_of(&mn("", "transport"));
    assert_eq!(f, "mode", "{m}");
    assert!(m.contains("tunnel-out: RFC 4877 wants tunnel"), "{m}");
    let swapped = mn("", "tunnel").replace(
        &sa("mobile-node.tunnel-in", HA, HOME, "tunnel", 0x4100),
        &sa("mobile-node.tunnel-in", HOME, HA, "tunnel", 0x4100),
    );
    let (f, m) = field_of(&swapped);
    assert_eq!(f, "src", "{m}");
    let (f, m) =
        field_of(&mn("", "tunnel").replace("home-agent = \"2001:db8:1::1\"", "home-agent = \"x\""));
    assert_eq!(f, "home-agent", "{m}");
    let no_tunnel =
        mn("", "tunnel").replace(&sa("mobile-node.tunnel-in", HA, HOME, "tunnel", 0x4100), "");
    let (f, m) = field_of(&no_tunnel);
    assert_eq!(f, "tunnel-in", "{m}");
}

#[test]
fn mobile_node_needs_its_home_address_on_the_tun_and_the_raw_carrier() {
    let (f, m) = field_of(&mn("", "tunnel").replace("addresses = [\"2001:db8:1::100/128\"]", ""));
    assert_eq!(f, "home-address", "{m}");
    assert!(m.contains("[interface] addresses"), "{m}");
    let udp = mn("", "tunnel").replace(
        "transport = \"raw\"\nlocal = \"::\"\npeer = \"2001:db8:1::1\"",
        "local = \"[::]:4500\"",
    );
    let (f, m) = field_of(&udp);
    assert_eq!(f, "transport", "{m}");
}
