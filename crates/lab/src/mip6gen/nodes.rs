//! The simulated mobile nodes: for index `i`, a home address on the home prefix, a care-of
//! address on the foreign link, and an ESP transport-mode SA pair with the home agent (RFC 3776
//! §4.1: the SAs' selectors name the home address, not the care-of address), all derived from
//! `i` and the suite so that the lab (which writes the home agent's config) and the generator
//! (which plays the mobile nodes) agree without exchanging keys. Manual keys, as the seed's run
//! had; they protect nothing outside the lab's namespaces.

use crypto::{AeadAlg, CbcAlg, EncrAlg, EspSuite, HmacAlg, IntegAlg};
use ipsec::{Mode, Protocol, SaParams, Spi};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv6Addr};
use zeroize::Zeroizing;

/// The home agent's address (`mip6::workload::HOME_AGENT`, on the home prefix).
pub const HOME_AGENT: Ipv6Addr = mip6::workload::HOME_AGENT;
/// The home prefix (RFC 6275 §10.3.1: home addresses must be on it).
pub const HOME_PREFIX: &str = "2001:db8:1::/64";
/// The care-of prefix of the foreign link; the home agent routes it towards the generator.
pub const CARE_OF_PREFIX: &str = "2001:db8:2::/64";
/// First SPI of the Binding Update SAs (mobile node → home agent); node `i` has this + `i`.
pub const BU_SPI_BASE: u32 = 0x0010_0000;
/// First SPI of the Binding Acknowledgement SAs (home agent → mobile node).
pub const BA_SPI_BASE: u32 = 0x0020_0000;
/// Replay window of every SA (RFC 4303 §3.4.3).
pub const REPLAY_WINDOW: u32 = 64;

/// The ESP suites the scenario measures: the seed's pair and AES-GCM.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
pub enum Suite {
    /// ESP AES-128-CBC + HMAC-SHA-1-96 (the seed's "ESP-AES").
    #[value(name = "aes128cbc-sha1")]
    AesCbcSha1,
    /// ESP 3DES-CBC + HMAC-SHA-1-96 (the seed's "ESP-3DES").
    #[value(name = "3des-sha1")]
    TripleDesSha1,
    /// ESP AES-128-GCM with a 16-octet ICV (RFC 4106).
    #[value(name = "aes128gcm")]
    AesGcm,
}

impl Suite {
    /// Every suite, in report order.
    pub const ALL: [Suite; 3] = [Suite::AesCbcSha1, Suite::TripleDesSha1, Suite::AesGcm];

    /// Its command-line and report name.
    pub fn name(self) -> &'static str {
        match self {
            Suite::AesCbcSha1 => "aes128cbc-sha1",
            Suite::TripleDesSha1 => "3des-sha1",
            Suite::AesGcm => "aes128gcm",
        }
    }

    /// The algorithms.
    pub fn esp(self) -> EspSuite {
        let (encr, integ) = match self {
            Suite::AesCbcSha1 => (EncrAlg::Cbc(CbcAlg::Aes128), IntegAlg::Hmac(HmacAlg::Sha1_96)),
            Suite::TripleDesSha1 => {
                (EncrAlg::Cbc(CbcAlg::TripleDes), IntegAlg::Hmac(HmacAlg::Sha1_96))
            }
            Suite::AesGcm => (EncrAlg::Aead(AeadAlg::Aes128Gcm), IntegAlg::None),
        };
        EspSuite { encr, integ }
    }

    /// Encryption key length (an AEAD's 4-octet salt included, RFC 4106 §8.1) and integrity
    /// key length.
    fn key_lens(self) -> (usize, usize) {
        match self {
            Suite::AesCbcSha1 => (16, 20),
            Suite::TripleDesSha1 => (24, 20),
            Suite::AesGcm => (20, 0),
        }
    }
}

/// Direction of an SA of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Binding Updates: mobile node (home address) → home agent; the home agent's `sa-in`.
    Bu,
    /// Binding Acknowledgements: home agent → mobile node; the home agent's `sa-out`.
    Ba,
}

/// Mobile node `i`'s home address.
pub fn home_address(i: u32) -> Ipv6Addr {
    mip6::workload::home_address(i)
}

/// Mobile node `i`'s care-of address (generation 0 of `mip6::workload`: 2001:db8:2::/64).
pub fn care_of_address(i: u32) -> Ipv6Addr {
    mip6::workload::care_of_address(i, 0)
}

/// The index of the mobile node whose SA has `spi` in direction `d`, if it is one of ours.
pub fn index_of(spi: Spi, d: Direction) -> Option<u32> {
    let base = match d {
        Direction::Bu => BU_SPI_BASE,
        Direction::Ba => BA_SPI_BASE,
    };
    spi.0.checked_sub(base).filter(|i| *i < BA_SPI_BASE - BU_SPI_BASE)
}

/// splitmix64: a fixed, well-mixed stream of key bytes from a seed (not a secret: lab keys).
fn key_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        out.extend_from_slice(&(z ^ (z >> 31)).to_be_bytes());
    }
    out.truncate(len);
    out
}

/// The SA of node `i` in direction `d` with `suite`.
pub fn sa(i: u32, d: Direction, suite: Suite) -> SaParams {
    let (spi, src, dst, tag) = match d {
        Direction::Bu => (BU_SPI_BASE + i, home_address(i), HOME_AGENT, 1u64),
        Direction::Ba => (BA_SPI_BASE + i, HOME_AGENT, home_address(i), 2u64),
    };
    let (ek, ak) = suite.key_lens();
    let seed = (u64::from(i) << 8) | (tag << 4) | suite as u64;
    SaParams {
        spi: Spi(spi),
        protocol: Protocol::Esp(suite.esp()),
        mode: Mode::Transport,
        src: IpAddr::V6(src),
        dst: IpAddr::V6(dst),
        enc_key: Zeroizing::new(key_bytes(seed, ek)),
        auth_key: Zeroizing::new(key_bytes(!seed, ak)),
        esn: false,
        replay_window: REPLAY_WINDOW,
        soft: Default::default(),
        hard: Default::default(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::from("0x"), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

/// One `[[sa]]`-style table of docs/sa-file.md for the home agent's config.
fn sa_table(out: &mut String, name: &str, p: &SaParams, suite: Suite) {
    let _ = write!(
        out,
        "[home-agent.mobile-node.{name}]\nsrc = \"{}\"\ndst = \"{}\"\nproto = \"esp\"\n\
         mode = \"transport\"\nspi = {}\nreplay-window = {REPLAY_WINDOW}\n",
        p.src, p.dst, p.spi.0
    );
    match suite {
        Suite::AesGcm => {
            let _ = writeln!(out, "aead = \"aes128gcm\"\nkey = \"{}\"", hex(&p.enc_key));
        }
        Suite::AesCbcSha1 | Suite::TripleDesSha1 => {
            let enc = if suite == Suite::AesCbcSha1 { "aes128cbc" } else { "3des" };
            let _ = writeln!(
                out,
                "enc = \"{enc}\"\nauth = \"sha1\"\nenc-key = \"{}\"\nauth-key = \"{}\"",
                hex(&p.enc_key),
                hex(&p.auth_key)
            );
        }
    }
}

/// The `[home-agent]` section (docs/mip6.md) serving mobile nodes `0..nodes` with `suite` on
/// `interface`, binding cache room for `capacity`. Duplicate Address Detection is off: the
/// generated home addresses are on no link, and the binding rate measures the Binding Update
/// path, not the kernel's one-second DAD per new home address (RFC 6275 §10.3.1).
pub fn home_agent_toml(interface: &str, nodes: u32, suite: Suite, capacity: usize) -> String {
    let mut s = format!(
        "[home-agent]\ninterface = \"{interface}\"\naddress = \"{HOME_AGENT}\"\n\
         home-prefix = \"{HOME_PREFIX}\"\nmax-lifetime = 600\ncapacity = {capacity}\n\
         duplicate-address-detection = false\n"
    );
    for i in 0..nodes {
        let _ = write!(s, "\n[[home-agent.mobile-node]]\nhome-address = \"{}\"\n", home_address(i));
        sa_table(&mut s, "sa-in", &sa(i, Direction::Bu, suite), suite);
        sa_table(&mut s, "sa-out", &sa(i, Direction::Ba, suite), suite);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spis_map_back_to_their_node_and_keys_differ() {
        assert_eq!(index_of(Spi(BU_SPI_BASE + 7), Direction::Bu), Some(7));
        assert_eq!(index_of(Spi(BA_SPI_BASE + 7), Direction::Ba), Some(7));
        assert_eq!(index_of(Spi(5), Direction::Ba), None);
        let (a, b) = (sa(1, Direction::Bu, Suite::AesGcm), sa(1, Direction::Ba, Suite::AesGcm));
        assert_eq!(a.enc_key.len(), 20);
        assert_ne!(*a.enc_key, *b.enc_key);
        let t = home_agent_toml("l0", 2, Suite::TripleDesSha1, 10);
        assert_eq!(t.matches("[[home-agent.mobile-node]]").count(), 2);
        assert!(t.contains("enc = \"3des\""));
    }
}
