//! `[[connection]]` sections: IKEv2 peers (RFC 7296) with their CHILD SAs, named and shaped as
//! swanctl.conf's `connections { NAME { ... children { ... } } }` so that a strongSwan user
//! recognises every field, and `[secrets.NAME]` for pre-shared keys (swanctl's `secrets`).
//! Example: docs/node-example.toml.

use super::error::{ConfigError, Ctx};
use super::proposal;
use ike::suite::{ChildSuite, IkeSuite};
use ipsec::spd::Prefix;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;
use toml::Spanned;
use wire::ikev2::{Id, TrafficSelector};
use zeroize::Zeroizing;

/// What starts a CHILD SA (swanctl `start_action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAction {
    /// Wait for the peer to initiate (or `hipsec initiate`).
    None,
    /// Install a trap policy: the first packet that needs the SA raises an acquire, which
    /// starts the exchange (RFC 4301 §4.4.1.1).
    Trap,
    /// Initiate when the node starts.
    Start,
}

/// One CHILD SA of a connection (swanctl `children.NAME`).
#[derive(Debug, Clone)]
pub struct ChildConf {
    /// Its name.
    pub name: String,
    /// Our side's traffic.
    pub local_ts: Vec<TrafficSelector>,
    /// The peer's side's traffic.
    pub remote_ts: Vec<TrafficSelector>,
    /// ESP proposals, in order.
    pub esp_proposals: Vec<ChildSuite>,
    /// Tunnel or transport.
    pub mode: ike::Mode,
    /// Rekey this long after the CHILD SA came up (swanctl default 1 h).
    pub rekey_time: Duration,
    /// Hard lifetime (default: rekey_time + 10 %, as swanctl).
    pub life_time: Duration,
    /// Random time subtracted from `rekey_time`, so that both ends do not rekey at once.
    pub rand_time: Duration,
    /// What starts it.
    pub start_action: StartAction,
    /// `mip6 = "signalling"`: the ESP transport-mode SAs of a mobile node's Binding Updates
    /// and its home agent's Acknowledgements (RFC 4877 §4.4). Their keys go to the
    /// `[home-agent]` or `[mobile-node]` role (`keying::handover`), never to the data path; the
    /// selectors are one IPv6 address each side, Mobility Header only (protocol 135).
    pub mip6: bool,
}

/// Authentication of a connection (swanctl `local.auth` / `remote.auth`).
#[derive(Debug, Clone)]
pub enum AuthConf {
    /// `auth = "psk"` on both sides: the key from `[secrets]` matching the peer's id.
    Psk(Zeroizing<Vec<u8>>),
    /// `auth = "pubkey"` on both sides (RFC 7427 signatures): `local.key` is our private key,
    /// `remote.pubkeys` the peer's public key.
    Pubkey {
        /// Ours.
        key: std::sync::Arc<crypto::SigningKey>,
        /// The peer's algorithm.
        peer_alg: crypto::SignatureAlg,
        /// The peer's raw public key.
        peer_public_key: Vec<u8>,
    },
    /// `auth = "pubkey"` with `local.certs`: X.509 certificates (RFC 7296 §3.6–3.8). Our
    /// private key `local.key`, our chain `local.certs`, the peer's trust anchors
    /// `remote.cacerts` and CRLs `remote.crls`.
    Certificate {
        /// Ours.
        key: std::sync::Arc<crypto::SigningKey>,
        /// Our chain, DER, end entity first.
        chain: Vec<Vec<u8>>,
        /// Anchors and CRLs.
        trust: std::sync::Arc<ike::cert::TrustStore>,
    },
}

/// One IKE peer (swanctl `connections.NAME`).
#[derive(Debug, Clone)]
pub struct ConnectionConf {
    /// Its name.
    pub name: String,
    /// Our address (default: `[network] local`).
    pub local_addr: Option<IpAddr>,
    /// The peer's address; `None` (`remote_addrs = "%any"`): any peer may initiate this
    /// connection, which then only responds.
    pub remote_addr: Option<IpAddr>,
    /// IKE proposals, in order.
    pub proposals: Vec<IkeSuite>,
    /// Our identity (default: our address).
    pub local_id: Option<Id>,
    /// The peer's identity (default: any the key authenticates).
    pub remote_id: Option<Id>,
    /// How both ends authenticate.
    pub auth: AuthConf,
    /// Our private key file (`local.key`, auth = "pubkey"), kept to check who may read it.
    pub local_key_file: Option<std::path::PathBuf>,
    /// IKE SA rekey interval (swanctl default 4 h); zero: never.
    pub rekey_time: Duration,
    /// Liveness check interval (RFC 7296 §2.4); zero: off.
    pub dpd_delay: Duration,
    /// Send IKE and ESP on UDP 4500 from the start (swanctl `encap`; strongSwan's user-space
    /// ESP needs it).
    pub encap: bool,
    /// CHILD SAs.
    pub children: Vec<ChildConf>,
    /// Pools that lease road warriors their virtual IP (`[pools.NAME]`, RFC 7296 §2.19).
    pub pools: Vec<String>,
    /// `remote.auth = "eap-mschapv2"`: road warriors authenticate with EAP-MSCHAPv2 as the
    /// users of `[secrets]` with `eap_id` (RFC 7296 §2.16); we sign with our certificate.
    pub eap: Option<ike::eap::EapConfig>,
    /// Virtual IPs we ask the responder for (`0.0.0.0` / `::`: any).
    pub vips: Vec<IpAddr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConnection {
    pub(super) name: Spanned<String>,
    local_addrs: Option<Spanned<String>>,
    remote_addrs: Spanned<String>,
    #[serde(default)]
    proposals: Vec<Spanned<String>>,
    rekey_time: Option<Spanned<String>>,
    dpd_delay: Option<Spanned<String>>,
    encap: Option<bool>,
    version: Option<Spanned<i64>>,
    pub(super) local: Option<RawAuth>,
    pub(super) remote: Option<RawAuth>,
    #[serde(default)]
    children: BTreeMap<String, Spanned<RawChild>>,
    #[serde(default)]
    pools: Vec<String>,
    #[serde(default)]
    vips: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuth {
    auth: Option<Spanned<String>>,
    id: Option<Spanned<String>>,
    /// `local`: our private key file (PKCS#8).
    pub(super) key: Option<Spanned<String>>,
    /// `remote`: the peer's public key file (SubjectPublicKeyInfo), swanctl's name.
    pubkeys: Option<Spanned<String>>,
    /// `local`: our certificate chain files, end entity first.
    pub(super) certs: Option<Spanned<super::certs::Paths>>,
    /// `remote`: trust anchors, a directory (swanctl's `x509ca/`) or files.
    pub(super) cacerts: Option<Spanned<super::certs::Paths>>,
    /// `remote`: CRL files (swanctl's `x509crl/`), a directory or files.
    pub(super) crls: Option<Spanned<super::certs::Paths>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChild {
    #[serde(default)]
    local_ts: Vec<Spanned<String>>,
    #[serde(default)]
    remote_ts: Vec<Spanned<String>>,
    #[serde(default)]
    esp_proposals: Vec<Spanned<String>>,
    mode: Option<Spanned<String>>,
    rekey_time: Option<Spanned<String>>,
    life_time: Option<Spanned<String>>,
    rand_time: Option<Spanned<String>>,
    start_action: Option<Spanned<String>>,
    mip6: Option<Spanned<String>>,
}

/// `[secrets.NAME]`: `id` (one identity or a list) and `secret` (text, `0x` hex or `0s`
/// base64-free text as swanctl's quoted string).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSecret {
    #[serde(default)]
    id: IdList,
    /// An EAP user's name (swanctl's `id` in an `eap-` secret): the secret is its password.
    pub(super) eap_id: Option<Spanned<String>>,
    pub(super) secret: Spanned<String>,
}

#[derive(Deserialize, Default)]
#[serde(untagged)]
enum IdList {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

/// A duration as swanctl writes it: a number with `s`, `m`, `h` or `d` (seconds if bare),
/// or `ms`.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = num.parse().map_err(|_| format!("{s:?}: want a number with s, m, h or d"))?;
    let ms = match unit {
        "" | "s" => n.checked_mul(1000),
        "ms" => Some(n),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        "d" => n.checked_mul(86_400_000),
        _ => None,
    };
    ms.map(Duration::from_millis).ok_or_else(|| format!("{s:?}: want a number with s, m, h or d"))
}

/// An identity as swanctl reads one: an IP address, `user@host` (RFC822), `@name` or a name
/// (FQDN), `@#hex` (KEY_ID).
pub fn identity(s: &str) -> Result<Id, String> {
    if let Ok(a) = s.parse::<IpAddr>() {
        return Ok(Id::ip(a));
    }
    if let Some(h) = s.strip_prefix("@#") {
        let b = hex::decode(h).map_err(|_| format!("{s:?}: @# takes hex"))?;
        return Ok(Id::key_id(&b));
    }
    if let Some(n) = s.strip_prefix('@') {
        return Ok(Id::fqdn(n));
    }
    if s.is_empty() {
        return Err("empty identity".into());
    }
    Ok(if s.contains('@') { Id::rfc822(s) } else { Id::fqdn(s) })
}

/// A traffic selector as swanctl writes one: a prefix (`10.1.0.0/16`, `2001:db8::/32`) or
/// an address, optionally `[proto/port]` (`10.1.0.0/16[tcp/80]`, `[udp]`).
pub fn traffic_selector(s: &str) -> Result<TrafficSelector, String> {
    let (net, extra) = match s.split_once('[') {
        Some((n, rest)) => {
            (n, Some(rest.strip_suffix(']').ok_or_else(|| format!("{s:?}: missing ']'"))?))
        }
        None => (s, None),
    };
    let p: Prefix = if net.contains('/') {
        net.parse().map_err(|e| format!("{s:?}: {e}"))?
    } else {
        let a: IpAddr = net.parse().map_err(|_| format!("{s:?}: not an address or prefix"))?;
        Prefix { addr: a, len: if a.is_ipv4() { 32 } else { 128 } }
    };
    let (start_addr, end_addr) = prefix_range(&p);
    let mut ts =
        TrafficSelector { ip_protocol: 0, start_port: 0, end_port: 65535, start_addr, end_addr };
    if let Some(x) = extra {
        let (proto, port) = x.split_once('/').unwrap_or((x, ""));
        ts.ip_protocol = match proto {
            "" | "any" => 0,
            "tcp" => 6,
            "udp" => 17,
            "icmp" => 1,
            "ipv6-icmp" | "icmp6" => 58,
            // /etc/protocols' names for the Mobility Header (RFC 6275 §6.1).
            "mobility-header" | "ipv6-mh" | "mh" => 135,
            n => n.parse().map_err(|_| format!("{s:?}: unknown protocol {n:?}"))?,
        };
        if !port.is_empty() && port != "any" {
            let (lo, hi) = port.split_once('-').unwrap_or((port, port));
            ts.start_port = lo.parse().map_err(|_| format!("{s:?}: bad port {lo:?}"))?;
            ts.end_port = hi.parse().map_err(|_| format!("{s:?}: bad port {hi:?}"))?;
            if ts.start_port > ts.end_port {
                return Err(format!("{s:?}: port range runs backwards"));
            }
        }
    }
    Ok(ts)
}

fn prefix_range(p: &Prefix) -> (IpAddr, IpAddr) {
    match p.addr {
        IpAddr::V4(a) => {
            let bits = u32::from(a);
            let mask = if p.len == 0 { 0 } else { u32::MAX << (32 - p.len as u32) };
            (
                std::net::Ipv4Addr::from(bits & mask).into(),
                std::net::Ipv4Addr::from(bits | !mask).into(),
            )
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a);
            let mask = if p.len == 0 { 0 } else { u128::MAX << (128 - p.len as u32) };
            (
                std::net::Ipv6Addr::from(bits & mask).into(),
                std::net::Ipv6Addr::from(bits | !mask).into(),
            )
        }
    }
}

fn secret_bytes(s: &str) -> Result<Zeroizing<Vec<u8>>, String> {
    match s.strip_prefix("0x") {
        Some(h) => hex::decode(h).map(Zeroizing::new).map_err(|_| "0x takes hex".to_string()),
        None if s.is_empty() => Err("empty secret".into()),
        None => Ok(Zeroizing::new(s.as_bytes().to_vec())),
    }
}

/// Checks every `[[connection]]` against `[secrets]`; `local` is `[network] local`'s address.
pub(super) fn parse_all(
    ctx: &Ctx<'_>,
    raw: &[Spanned<RawConnection>],
    secrets: &BTreeMap<String, RawSecret>,
    local: IpAddr,
) -> Result<Vec<ConnectionConf>, ConfigError> {
    let mut out: Vec<ConnectionConf> = Vec::with_capacity(raw.len());
    for r in raw {
        let c = connection(ctx, r.get_ref(), secrets, local)?;
        if out.iter().any(|o| o.name == c.name) {
            return Err(ctx.err(r.get_ref().name.span(), "name", "two connections of this name"));
        }
        out.push(c);
    }
    Ok(out)
}

fn connection(
    ctx: &Ctx<'_>,
    r: &RawConnection,
    secrets: &BTreeMap<String, RawSecret>,
    local: IpAddr,
) -> Result<ConnectionConf, ConfigError> {
    let name = r.name.get_ref().clone();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(ctx.err(r.name.span(), "name", "want a name without spaces"));
    }
    if let Some(v) = &r.version {
        if *v.get_ref() != 2 {
            return Err(ctx.err(v.span(), "version", "only IKEv2 (version = 2)"));
        }
    }
    let addr = |s: &Spanned<String>, f: &'static str| {
        s.get_ref()
            .trim()
            .parse::<IpAddr>()
            .map_err(|_| ctx.err(s.span(), f, format!("{:?}: want one IP address", s.get_ref())))
    };
    let remote_addr = match r.remote_addrs.get_ref().trim() {
        "%any" => None,
        _ => Some(addr(&r.remote_addrs, "remote_addrs")?),
    };
    let local_addr = r.local_addrs.as_ref().map(|s| addr(s, "local_addrs")).transpose()?;
    if remote_addr.is_some_and(|a| a.is_ipv4() != local_addr.unwrap_or(local).is_ipv4()) {
        return Err(ctx.err(
            r.remote_addrs.span(),
            "remote_addrs",
            "the peer and our address differ in IP version",
        ));
    }
    let mut proposals = Vec::new();
    for p in &r.proposals {
        proposals.extend(
            proposal::ike_suites(p.get_ref()).map_err(|e| ctx.err(p.span(), "proposals", e))?,
        );
    }
    if proposals.is_empty() {
        proposals = proposal::ike_suites("aes128gcm16-prfsha256-x25519-ecp256")
            .map_err(|e| ctx.err(r.name.span(), "proposals", e))?;
    }
    let dur = |d: &Option<Spanned<String>>, f: &'static str, default: Duration| match d {
        None => Ok(default),
        Some(s) => duration(s.get_ref()).map_err(|e| ctx.err(s.span(), f, e)),
    };
    let rekey_time = dur(&r.rekey_time, "rekey_time", Duration::from_secs(4 * 3600))?;
    let dpd_delay = dur(&r.dpd_delay, "dpd_delay", Duration::ZERO)?;
    let id = |a: &Option<RawAuth>, f: &'static str| -> Result<Option<Id>, ConfigError> {
        let Some(a) = a else { return Ok(None) };
        a.id.as_ref()
            .map(|s| identity(s.get_ref()).map_err(|e| ctx.err(s.span(), f, e)))
            .transpose()
    };
    let local_id = id(&r.local, "local.id")?;
    let remote_id = id(&r.remote, "remote.id")?;
    let remote_auth = r.remote.as_ref().and_then(|a| a.auth.as_ref());
    let eap = match remote_auth.filter(|m| m.get_ref() == super::eap::EAP_MSCHAPV2) {
        Some(m) => Some(super::eap::users(ctx, m.span(), secrets)?),
        None => None,
    };
    let auth = auth(ctx, r, secrets, remote_id.as_ref(), remote_addr, eap.is_some())?;
    let local_key_file = match &auth {
        AuthConf::Pubkey { .. } | AuthConf::Certificate { .. } => {
            r.local.as_ref().and_then(|a| a.key.as_ref()).map(|k| key_path(ctx, k))
        }
        AuthConf::Psk(_) => None,
    };
    // In the order written (the first is made in IKE_AUTH, the others after it, in turn),
    // not the table's alphabetical one.
    let mut written: Vec<(&String, &Spanned<RawChild>)> = r.children.iter().collect();
    written.sort_by_key(|(_, c)| c.span().start);
    let mut children = Vec::new();
    for (cname, c) in written {
        children.push(child(ctx, cname, c)?);
    }
    if children.is_empty() {
        return Err(ctx.err(r.name.span(), "children", "a connection needs at least one child"));
    }
    if remote_addr.is_none() && children.iter().any(|c| c.start_action != StartAction::None) {
        return Err(ctx.err(
            r.remote_addrs.span(),
            "remote_addrs",
            "%any only responds: its children need start_action = \"none\"",
        ));
    }
    if let (Some(m), true) = (remote_auth, eap.is_some()) {
        if children.iter().any(|c| c.start_action != StartAction::None) {
            return Err(ctx.err(
                m.span(),
                "remote.auth",
                "with eap-mschapv2 hipsec only responds: its children need start_action = \"none\"",
            ));
        }
    }
    Ok(ConnectionConf {
        name,
        local_addr,
        remote_addr,
        proposals,
        local_id,
        remote_id,
        auth,
        local_key_file,
        rekey_time,
        dpd_delay,
        encap: r.encap.unwrap_or(false),
        children,
        pools: r.pools.clone(),
        eap,
        vips: r.vips.iter().map(|v| addr(v, "vips")).collect::<Result<_, _>>()?,
    })
}

/// Both sides' `auth` (the same method: "psk" by default, or "pubkey"), and the keys.
fn auth(
    ctx: &Ctx<'_>,
    r: &RawConnection,
    secrets: &BTreeMap<String, RawSecret>,
    remote_id: Option<&Id>,
    remote_addr: Option<IpAddr>,
    eap: bool,
) -> Result<AuthConf, ConfigError> {
    let method = |a: &Option<RawAuth>, f: &'static str| -> Result<&'static str, ConfigError> {
        match a.as_ref().and_then(|a| a.auth.as_ref()) {
            None => Ok("psk"),
            Some(m) if m.get_ref() == "psk" => Ok("psk"),
            Some(m) if m.get_ref() == "pubkey" => Ok("pubkey"),
            Some(m) => Err(ctx.err(
                m.span(),
                f,
                format!(
                    "{:?}: want \"psk\" or \"pubkey\" (or \"eap-mschapv2\" as remote.auth)",
                    m.get_ref()
                ),
            )),
        }
    };
    if eap {
        return super::eap::server_auth(ctx, r, method(&r.local, "local.auth")?);
    }
    let (l, rm) = (method(&r.local, "local.auth")?, method(&r.remote, "remote.auth")?);
    if l != rm {
        return Err(ctx.err(r.name.span(), "remote.auth", "both sides use the same method here"));
    }
    if l == "psk" {
        let s = find_secret(secrets, remote_id, remote_addr).ok_or_else(|| {
            ctx.err(
                r.name.span(),
                "secrets",
                format!(
                    "no [secrets.NAME] with an id matching the peer of connection {:?} (its \
                     remote.id, or its address when remote.id is not set)",
                    r.name.get_ref()
                ),
            )
        })?;
        let psk =
            secret_bytes(s.secret.get_ref()).map_err(|e| ctx.err(s.secret.span(), "secret", e))?;
        return Ok(AuthConf::Psk(psk));
    }
    let path = |s: &Spanned<String>| key_path(ctx, s);
    let key = r.local.as_ref().and_then(|a| a.key.as_ref()).ok_or_else(|| {
        ctx.err(r.name.span(), "local.key", "auth = \"pubkey\" needs our private key file")
    })?;
    if let Some(certs) = r.local.as_ref().and_then(|a| a.certs.as_ref()) {
        let remote = r.remote.as_ref();
        let cacerts = remote.and_then(|a| a.cacerts.as_ref()).ok_or_else(|| {
            ctx.err(
                r.name.span(),
                "remote.cacerts",
                "certificates need the trust anchors that the peer's chain must reach",
            )
        })?;
        let sk = super::keys::private_key(&path(key))
            .map_err(|e| ctx.err(key.span(), "local.key", e))?;
        let crls = remote.and_then(|a| a.crls.as_ref());
        let (chain, trust) = super::certs::load(ctx, certs, cacerts, crls)?;
        return Ok(AuthConf::Certificate { key: std::sync::Arc::new(sk), chain, trust });
    }
    let pubkeys = r.remote.as_ref().and_then(|a| a.pubkeys.as_ref()).ok_or_else(|| {
        ctx.err(
            r.name.span(),
            "remote.pubkeys",
            "auth = \"pubkey\" needs the peer's public key file",
        )
    })?;
    let sk =
        super::keys::private_key(&path(key)).map_err(|e| ctx.err(key.span(), "local.key", e))?;
    let (peer_alg, peer_public_key) = super::keys::public_key(&path(pubkeys))
        .map_err(|e| ctx.err(pubkeys.span(), "remote.pubkeys", e))?;
    Ok(AuthConf::Pubkey { key: std::sync::Arc::new(sk), peer_alg, peer_public_key })
}

/// A key file's path: relative paths are relative to the config file.
pub(super) fn key_path(ctx: &Ctx<'_>, s: &Spanned<String>) -> std::path::PathBuf {
    let p = std::path::PathBuf::from(s.get_ref());
    match std::path::Path::new(ctx.file).parent() {
        Some(dir) if p.is_relative() => dir.join(p),
        _ => p,
    }
}

fn find_secret<'a>(
    secrets: &'a BTreeMap<String, RawSecret>,
    remote_id: Option<&Id>,
    remote_addr: Option<IpAddr>,
) -> Option<&'a RawSecret> {
    let want = remote_id.cloned().or_else(|| remote_addr.map(Id::ip))?;
    let matches = |s: &str| identity(s).is_ok_and(|i| i == want);
    secrets.values().filter(|s| s.eap_id.is_none()).find(|s| match &s.id {
        IdList::None => false,
        IdList::One(i) => matches(i),
        IdList::Many(v) => v.iter().any(|i| matches(i)),
    })
}

/// The address of a selector that names exactly one IPv6 address, if it does.
pub fn single_v6(ts: &[TrafficSelector]) -> Option<std::net::Ipv6Addr> {
    match ts {
        [t] if t.start_addr == t.end_addr => match t.start_addr {
            IpAddr::V6(a) => Some(a),
            IpAddr::V4(_) => None,
        },
        _ => None,
    }
}

/// RFC 4877 §4.4 (after RFC 3776 §4.1): the SA protecting Binding Updates is ESP in transport
/// mode between the home address and the home agent's address, for the Mobility Header.
fn mip6_signalling(
    ctx: &Ctx<'_>,
    at: std::ops::Range<usize>,
    local: &[TrafficSelector],
    remote: &[TrafficSelector],
    mode: ike::Mode,
    start: StartAction,
) -> Result<(), ConfigError> {
    if mode != ike::Mode::Transport {
        return Err(ctx.err(at, "mode", "mip6 = \"signalling\" wants mode = \"transport\""));
    }
    if start == StartAction::Trap {
        // Its packets never meet the data path's policies, so a trap would never fire.
        return Err(ctx.err(at, "start_action", "mip6 signalling starts with none or start"));
    }
    for (ts, field) in [(local, "local_ts"), (remote, "remote_ts")] {
        if single_v6(ts).is_none() || ts.iter().any(|t| t.ip_protocol != 135) {
            return Err(ctx.err(
                at.clone(),
                field,
                "mip6 signalling wants one IPv6 address for the Mobility Header, as \
                 \"2001:db8:1::100[mobility-header]\" (RFC 4877 §4.4)",
            ));
        }
    }
    Ok(())
}

fn child(ctx: &Ctx<'_>, name: &str, c: &Spanned<RawChild>) -> Result<ChildConf, ConfigError> {
    let r = c.get_ref();
    let ts =
        |v: &[Spanned<String>], f: &'static str| -> Result<Vec<TrafficSelector>, ConfigError> {
            if v.is_empty() {
                return Err(ctx.err(c.span(), f, format!("child {name:?} needs {f}")));
            }
            v.iter()
                .map(|s| traffic_selector(s.get_ref()).map_err(|e| ctx.err(s.span(), f, e)))
                .collect()
        };
    let local_ts = ts(&r.local_ts, "local_ts")?;
    let remote_ts = ts(&r.remote_ts, "remote_ts")?;
    let mut esp_proposals = Vec::new();
    for p in &r.esp_proposals {
        esp_proposals.extend(
            proposal::esp_suites(p.get_ref()).map_err(|e| ctx.err(p.span(), "esp_proposals", e))?,
        );
    }
    if esp_proposals.is_empty() {
        esp_proposals = proposal::esp_suites("aes128gcm16")
            .map_err(|e| ctx.err(c.span(), "esp_proposals", e))?;
    }
    let mode = match r.mode.as_ref().map(|m| (m, m.get_ref().as_str())) {
        None | Some((_, "tunnel")) => ike::Mode::Tunnel,
        Some((_, "transport")) => ike::Mode::Transport,
        Some((m, other)) => {
            return Err(ctx.err(m.span(), "mode", format!("{other:?}: want tunnel or transport")));
        }
    };
    let dur = |d: &Option<Spanned<String>>, f: &'static str| {
        d.as_ref().map(|s| duration(s.get_ref()).map_err(|e| ctx.err(s.span(), f, e))).transpose()
    };
    let rekey_time = dur(&r.rekey_time, "rekey_time")?.unwrap_or(Duration::from_secs(3600));
    let life_time = dur(&r.life_time, "life_time")?.unwrap_or(rekey_time + rekey_time / 10);
    let rand_time = dur(&r.rand_time, "rand_time")?
        .unwrap_or((life_time.saturating_sub(rekey_time)).min(rekey_time / 10));
    if !rekey_time.is_zero() && life_time <= rekey_time {
        let span = r.life_time.as_ref().map_or(c.span(), |s| s.span());
        return Err(ctx.err(span, "life_time", "must be longer than rekey_time"));
    }
    if rand_time >= rekey_time && !rekey_time.is_zero() {
        let span = r.rand_time.as_ref().map_or(c.span(), |s| s.span());
        return Err(ctx.err(span, "rand_time", "must be shorter than rekey_time"));
    }
    let start_action = match r.start_action.as_ref().map(|m| (m, m.get_ref().as_str())) {
        None | Some((_, "none")) => StartAction::None,
        Some((_, "trap")) => StartAction::Trap,
        Some((_, "start")) => StartAction::Start,
        Some((m, other)) => {
            return Err(ctx.err(
                m.span(),
                "start_action",
                format!("{other:?}: want none, trap or start"),
            ));
        }
    };
    let mip6 = match &r.mip6 {
        None => false,
        Some(m) if m.get_ref() == "signalling" => {
            mip6_signalling(ctx, m.span(), &local_ts, &remote_ts, mode, start_action)?;
            true
        }
        Some(m) => {
            return Err(ctx.err(
                m.span(),
                "mip6",
                format!("{:?}: want \"signalling\"", m.get_ref()),
            ));
        }
    };
    Ok(ChildConf {
        name: name.to_string(),
        local_ts,
        remote_ts,
        esp_proposals,
        mode,
        rekey_time,
        life_time,
        rand_time,
        start_action,
        mip6,
    })
}
