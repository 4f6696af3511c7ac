//! `[hip]`: this host's HIP identity and the peers it knows (RFC 7401; docs/hip.md).
//!
//! ```toml
//! [hip]
//! identity = "/etc/hipsec/host.pem"   # hipsec keygen --hip -o ...
//! puzzle-k = 10                       # difficulty of the puzzle our R1s carry (0..=28)
//! puzzle-threads = 2                  # threads solving a peer's puzzle (default: the CPUs, ≤ 4)
//! esp-suites = ["aes128gcm", "aes128cbc-sha256"]
//! accept = "known"                    # "known": only [[hip.peer]] HITs; "any": whoever proves
//!                                     # its HIT (opportunistic, RFC 7401 §4.1.8)
//! encap = false                       # ESP as IP protocol 50 (RFC 7402, the default); true:
//!                                     # ESP in UDP to the peer's [network] port (through NATs)
//!
//! [[hip.peer]]
//! hit = "2001:22:aaf2:d77d:f996:f6a1:b2df:73d7"
//! locator = "192.0.2.2"              # where its HIP and ESP packets go
//! ```

use super::error::{ConfigError, Ctx};
use hip::HostIdentityTag;
use serde::Deserialize;
use std::net::IpAddr;
use std::path::PathBuf;
use toml::Spanned;

/// The `[hip]` section, checked.
#[derive(Debug, Clone)]
pub struct HipConf {
    /// The host identity file.
    pub identity: PathBuf,
    /// Puzzle difficulty of our R1s.
    pub puzzle_k: u8,
    /// Threads that solve a Responder's puzzle together (1: on the control thread alone).
    pub puzzle_threads: usize,
    /// ESP transforms we offer, in order.
    pub esp_suites: Vec<wire::hip::EspSuite>,
    /// Known peers.
    pub peers: Vec<HipPeer>,
    /// Complete base exchanges with hosts that are not among `peers` (they still have to
    /// prove the HIT they claim).
    pub accept_any: bool,
    /// ESP in UDP (RFC 3948 framing, to the port of `[network] local`) instead of plain ESP,
    /// IP protocol 50, which RFC 7402 runs between HIP hosts. For paths through a NAT; the
    /// HIP packets themselves stay on IP protocol 139.
    pub encap: bool,
}

/// A known peer: its HIT and where it is.
#[derive(Debug, Clone)]
pub struct HipPeer {
    /// Its HIT.
    pub hit: HostIdentityTag,
    /// Its locator.
    pub locator: IpAddr,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawHip {
    identity: Spanned<String>,
    puzzle_k: Option<Spanned<i64>>,
    puzzle_threads: Option<Spanned<i64>>,
    esp_suites: Option<Vec<Spanned<String>>>,
    accept: Option<Spanned<String>>,
    encap: Option<bool>,
    #[serde(default)]
    peer: Vec<RawPeer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPeer {
    hit: Spanned<String>,
    locator: Spanned<String>,
}

pub(super) fn parse(ctx: &Ctx<'_>, r: &RawHip, local: IpAddr) -> Result<HipConf, ConfigError> {
    let puzzle_k = match &r.puzzle_k {
        None => 10,
        Some(k) => u8::try_from(*k.get_ref())
            .ok()
            .filter(|&k| k <= hip::puzzle::MAX_SOLVABLE_K)
            .ok_or_else(|| ctx.err(k.span(), "puzzle-k", "want 0..=28"))?,
    };
    let esp_suites = match &r.esp_suites {
        None => vec![wire::hip::EspSuite::AES_GCM_16, wire::hip::EspSuite::AES_128_CBC_HMAC_SHA256],
        Some(v) => v
            .iter()
            .map(|s| {
                hip::esp::suite_id(s.get_ref()).ok_or_else(|| {
                    ctx.err(
                        s.span(),
                        "esp-suites",
                        "HIP ESP offers aes128gcm, aes128cbc-sha256, aes256cbc-sha256, null-sha256, aes128cbc-sha1",
                    )
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let puzzle_threads = match &r.puzzle_threads {
        // A puzzle at K = 10 is about 0.4 ms of hashing: more than a few threads cost more to
        // start than they save.
        None => std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
        Some(t) => usize::try_from(*t.get_ref())
            .ok()
            .filter(|t| (1..=64).contains(t))
            .ok_or_else(|| ctx.err(t.span(), "puzzle-threads", "want 1..=64"))?,
    };
    let mut peers: Vec<HipPeer> = Vec::new();
    for p in &r.peer {
        let hit: HostIdentityTag =
            p.hit.get_ref().parse().map_err(|e: String| ctx.err(p.hit.span(), "hit", e))?;
        let locator: IpAddr = p
            .locator
            .get_ref()
            .parse()
            .map_err(|_| ctx.err(p.locator.span(), "locator", "want an IP address"))?;
        if locator.is_ipv4() != local.is_ipv4() {
            return Err(ctx.err(
                p.locator.span(),
                "locator",
                format!("of another family than [network] local {local}"),
            ));
        }
        if peers.iter().any(|q| q.hit == hit) {
            return Err(ctx.err(p.hit.span(), "hit", "two peers with this HIT"));
        }
        peers.push(HipPeer { hit, locator });
    }
    let accept_any = match &r.accept {
        None => false,
        Some(a) => match a.get_ref().as_str() {
            "known" => false,
            "any" => true,
            _ => return Err(ctx.err(a.span(), "accept", "want \"known\" or \"any\"")),
        },
    };
    Ok(HipConf {
        identity: PathBuf::from(r.identity.get_ref()),
        puzzle_k,
        puzzle_threads,
        esp_suites,
        peers,
        accept_any,
        encap: r.encap.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    const HIT: &str = "2001:22:aaf2:d77d:f996:f6a1:b2df:73d7";

    fn conf(hip: &str) -> String {
        format!(
            "[interface]\nname = \"hipsec0\"\naddresses = [\"10.0.0.1/24\"]\n[network]\nlocal = \"192.0.2.1:4500\"\n{hip}"
        )
    }

    fn err(hip: &str) -> String {
        parse("t.toml", &conf(hip)).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn a_good_section_and_its_defaults() {
        let text = conf(&format!(
            "[hip]\nidentity = \"/etc/h.pem\"\n[[hip.peer]]\nhit = \"{HIT}\"\nlocator = \"192.0.2.2\"\n"
        ));
        let c = parse("t.toml", &text).unwrap().hip.unwrap();
        assert_eq!(c.puzzle_k, 10);
        assert!((1..=4).contains(&c.puzzle_threads));
        assert!(!c.accept_any);
        assert_eq!(c.peers.len(), 1);
        assert_eq!(c.peers[0].hit.to_string(), HIT);
        assert_eq!(c.esp_suites[0], wire::hip::EspSuite::AES_GCM_16);
    }

    #[test]
    fn every_bad_field_is_named() {
        let peer =
            |hit: &str, loc: &str| format!("[[hip.peer]]\nhit = \"{hit}\"\nlocator = \"{loc}\"\n");
        let base = "[hip]\nidentity = \"/h.pem\"\n";
        for (hip, field) in [
            (format!("{base}puzzle-k = 40\n"), "puzzle-k"),
            (format!("{base}puzzle-threads = 0\n"), "puzzle-threads"),
            (format!("{base}accept = \"maybe\"\n"), "accept"),
            (format!("{base}esp-suites = [\"chacha20poly1305\"]\n"), "esp-suites"),
            (format!("{base}{}", peer("2001:db8::1", "192.0.2.2")), "hit"),
            (format!("{base}{}", peer(HIT, "2001:db8::2")), "locator"),
            (format!("{base}{}", peer(HIT, "nowhere")), "locator"),
            (format!("{base}{}{}", peer(HIT, "192.0.2.2"), peer(HIT, "192.0.2.3")), "hit"),
            (format!("{base}colour = \"blue\"\n"), "colour"),
        ] {
            let e = err(&hip);
            assert!(e.contains(field), "{field}: {e}");
        }
        let two_lanes =
            conf("[hip]\nidentity = \"/h.pem\"\n").replace("addresses", "queues = 2\naddresses");
        let e = parse("t.toml", &two_lanes).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("queues = 1"), "{e}");
    }
}
