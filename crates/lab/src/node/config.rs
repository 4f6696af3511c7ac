//! The config file of one hipsec node for a mode (the node's format, docs/node-example.toml):
//! TUN device and inner addresses, carrier, fixed lab keys and SAs, the protect policy; and the
//! report's one-line description of what protects the traffic.

use super::filter::NodeFilter;
use super::mode::{EspSuite, Mode};
use crate::topology::Family;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

/// Inner (TUN) addresses of h1 and h2.
pub const INNER_V4: [Ipv4Addr; 2] = [Ipv4Addr::new(10, 99, 0, 1), Ipv4Addr::new(10, 99, 0, 2)];
pub const INNER_V6: [Ipv6Addr; 2] =
    [Ipv6Addr::new(0xfd00, 0x99, 0, 0, 0, 0, 0, 1), Ipv6Addr::new(0xfd00, 0x99, 0, 0, 0, 0, 0, 2)];

/// What carries ESP between the hosts. AH always goes over raw IP (protocol 51): the node does
/// not put AH in UDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EspCarrier {
    /// Raw IP protocol 50, like AH and like the seed's KAME stack: the AH/ESP comparison then
    /// compares protocols, not carriers.
    #[default]
    Raw,
    /// ESP in UDP port 4500 (RFC 3948), the node's batched path (GSO/GRO).
    Udp,
}

/// Lab key material: `n` bytes derived from `seed` (fixed and public; never use outside the lab).
fn lab_key(seed: u8, n: usize) -> String {
    let mut s = String::from("0x");
    for i in 0..n {
        let _ = write!(s, "{:02x}", seed.wrapping_mul(31).wrapping_add(i as u8 * 7));
    }
    s
}

/// The `[[sa]]` key lines of an ESP suite.
fn esp_keys(suite: EspSuite, seed: u8) -> String {
    match suite {
        // 16-byte key || 4-byte salt (RFC 4106 §8.1).
        EspSuite::Aes128Gcm => format!("aead = \"aes128gcm\"\nkey = \"{}\"\n", lab_key(seed, 20)),
        EspSuite::AesCbcHmacSha1 => format!(
            "enc = \"aes128cbc\"\nenc-key = \"{}\"\nauth = \"sha1\"\nauth-key = \"{}\"\n",
            lab_key(seed, 16),
            lab_key(seed ^ 0x55, 20)
        ),
        EspSuite::TripleDesHmacSha1 => format!(
            "enc = \"3des\"\nenc-key = \"{}\"\nauth = \"sha1\"\nauth-key = \"{}\"\n",
            lab_key(seed, 24),
            lab_key(seed ^ 0x55, 20)
        ),
    }
}

/// The config of the node on side 0 (h1) or 1 (h2) for `family`.
pub(super) fn config(
    mode: Mode,
    carrier: EspCarrier,
    family: Family,
    side: usize,
    outer: [IpAddr; 2],
    socket: &Path,
) -> String {
    let (me, peer) = (outer[side], outer[1 - side]);
    let (inner, net, tun) = match family {
        Family::V4 => (format!("{}/24", INNER_V4[side]), "10.99.0.0/24", "hlab4"),
        Family::V6 => (format!("{}/64", INNER_V6[side]), "fd00:99::/64", "hlab6"),
    };
    let (local, peer_ep, transport) = match carrier {
        EspCarrier::Raw => (me.to_string(), peer.to_string(), "raw"),
        EspCarrier::Udp => {
            (SocketAddr::new(me, 4500).to_string(), SocketAddr::new(peer, 4500).to_string(), "udp")
        }
    };
    let mut t = format!(
        "# hipsec lab, mode {mode}, {family}, {} (generated)\n\
         [interface]\nname = \"{tun}\"\nmtu = 1500\naddresses = [\"{inner}\"]\n\n\
         [network]\ntransport = \"{transport}\"\nlocal = \"{local}\"\npeer = \"{peer_ep}\"\n\n\
         [control]\nsocket = \"{}\"\n\n",
        ["h1", "h2"][side],
        socket.display()
    );
    // SPIs name the sender (0x1xxx from h1, 0x2xxx from h2), the family (+0x100 for IPv6) and the
    // protocol (+1 for AH); key seeds differ per direction.
    let fam = if family == Family::V4 { 0 } else { 0x100 };
    let spi = |from: usize, ah: bool| 0x1000 * (from as u32 + 1) + fam + u32::from(ah);
    let seed = |from: usize, ah: bool| (from as u8) * 2 + u8::from(ah) + 1;
    let sa = |name: &str, dir: &str, proto: &str, sa_mode: &str, from: usize, keys: &str| {
        format!(
            "[[sa]]\nname = \"{name}\"\ndirection = \"{dir}\"\nproto = \"{proto}\"\nmode = \"{sa_mode}\"\n\
             src = \"{}\"\ndst = \"{}\"\nspi = \"0x{:08x}\"\n{keys}\n",
            outer[from],
            outer[1 - from],
            spi(from, proto == "ah"),
        )
    };
    let ah_keys = |from: usize| {
        format!("auth = \"sha256\"\nauth-key = \"{}\"\n", lab_key(seed(from, true), 32))
    };
    let (esp, ah_mode) = match mode {
        Mode::None => (None, None),
        Mode::Ah => (None, Some("tunnel")),
        Mode::Esp(s) => (Some(s), None),
        // ESP tunnel inside, AH transport over the outer header (RFC 4301 §4.5 bundle).
        Mode::AhEsp(s) => (Some(s), Some("transport")),
    };
    let mut sas = Vec::new();
    if let Some(s) = esp {
        t += &sa("esp-out", "out", "esp", "tunnel", side, &esp_keys(s, seed(side, false)));
        t += &sa("esp-in", "in", "esp", "tunnel", 1 - side, &esp_keys(s, seed(1 - side, false)));
        sas.push("\"esp-out\"");
    }
    if let Some(m) = ah_mode {
        t += &sa("ah-out", "out", "ah", m, side, &ah_keys(side));
        t += &sa("ah-in", "in", "ah", m, 1 - side, &ah_keys(1 - side));
        sas.push("\"ah-out\"");
    }
    let _ = write!(
        t,
        "[[policy]]\nsrc = \"{net}\"\ndst = \"{net}\"\naction = \"protect\"\nsas = [{}]\n",
        sas.join(", ")
    );
    t
}

/// One line for the report: what protects the traffic in `mode`.
pub(super) fn describe(mode: Mode, carrier: EspCarrier, filter: Option<&NodeFilter>) -> String {
    let esp_carrier = match carrier {
        EspCarrier::Raw => "raw IP (protocol 50)",
        EspCarrier::Udp => "UDP 4500 (RFC 3948)",
    };
    let what = match mode {
        Mode::None => "no protection".to_string(),
        Mode::Ah => "AH tunnel mode, HMAC-SHA-256-128, raw IP (protocol 51)".to_string(),
        Mode::Esp(_) => format!("ESP tunnel mode over {esp_carrier}"),
        Mode::AhEsp(_) => {
            "a bundle: ESP tunnel mode, then AH transport mode (HMAC-SHA-256-128) over the outer header, raw IP".to_string()
        }
    };
    let filter = filter.map_or(String::new(), |f| {
        format!("; [filter] engine {} in the nodes of {}", f.engine.as_str(), f.hosts.join(", "))
    });
    format!(
        "{mode}: {what}; one hipsec node pair per family (TUN 10.99.0.0/24 and fd00:99::/64, outer h1/h2 addresses of the same family){filter}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outer4() -> [IpAddr; 2] {
        [
            "192.0.2.1".parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            "203.0.113.2".parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        ]
    }

    #[test]
    fn ah_esp_config_is_a_bundle_esp_then_ah() {
        let t = config(
            Mode::AhEsp(EspSuite::Aes128Gcm),
            EspCarrier::Raw,
            Family::V4,
            0,
            outer4(),
            Path::new("/tmp/x.sock"),
        );
        assert!(t.contains("sas = [\"esp-out\", \"ah-out\"]"), "{t}");
        assert!(t.contains("transport = \"raw\""), "{t}");
        assert!(t.contains("mode = \"transport\""), "{t}");
        assert!(t.contains("spi = \"0x00001000\"") && t.contains("spi = \"0x00002001\""), "{t}");
        let parsed: Result<toml::Table, _> = toml::from_str(&t);
        assert!(parsed.is_ok(), "{t}");
    }

    #[test]
    fn suites_have_the_node_key_lengths() {
        let cbc = esp_keys(EspSuite::AesCbcHmacSha1, 3);
        assert!(cbc.contains(&format!("enc-key = \"{}\"", lab_key(3, 16))), "{cbc}");
        let des = esp_keys(EspSuite::TripleDesHmacSha1, 3);
        assert!(des.contains("enc = \"3des\"") && des.contains(&lab_key(3, 24)), "{des}");
        assert_eq!(lab_key(1, 20).len(), 2 + 40);
        let udp = config(
            Mode::Esp(EspSuite::Aes128Gcm),
            EspCarrier::Udp,
            Family::V6,
            1,
            [
                "2001:db8:1::1".parse().unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
                "2001:db8:3::2".parse().unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
            ],
            Path::new("/tmp/y.sock"),
        );
        assert!(udp.contains("local = \"[2001:db8:3::2]:4500\""), "{udp}");
        assert!(udp.contains("fd00:99::2/64") && udp.contains("spi = \"0x00002100\""), "{udp}");
    }
}
