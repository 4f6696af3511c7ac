//! The node configuration file (TOML): interface, transport endpoints, control socket, manually
//! keyed SAs and the SPD (RFC 4301 §4.4.1 selectors, §4.4.2 SA fields), and the operations
//! sections `[metrics]` and `[log]`. Example: docs/node-example.toml.
//! Every error names the file, line, column and field; the node refuses to start on any of them.

pub mod certs;
pub mod connection;
pub mod eap;
pub mod error;
pub mod filter;
pub mod guard;
pub mod hip;
pub mod home_agent;
pub mod host_identity;
pub mod ike_limits;
pub mod keys;
pub mod mip6_sa;
pub mod mobile_node;
pub mod policy;
pub mod pools;
pub mod proposal;
pub mod sa;
pub mod safile;
pub mod warnings;

use error::Ctx;
pub use error::{ConfigError, Problem};
use ipsec::spd::Prefix;
use policy::RawPolicy;
pub use policy::{PolicyAction, PolicyConf};
pub use sa::DEFAULT_UDP_PORT;
use sa::{Direction, SaConf};
use safile::RawSa;
use serde::Deserialize;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A checked node configuration.
#[derive(Debug)]
pub struct NodeConfig {
    /// The file it came from.
    pub file: PathBuf,
    /// The TUN interface.
    pub interface: InterfaceConf,
    /// How ESP/AH packets travel.
    pub transport: Transport,
    /// Device that packets the SPD bypasses leave by, in clear (`[network] bypass-device`);
    /// without it they are dropped and counted (`bypass_unforwarded`).
    pub bypass_device: Option<String>,
    /// Control socket path, if any.
    pub control_socket: Option<PathBuf>,
    /// SAs, in file order.
    pub sas: Vec<SaConf>,
    /// SPD entries, in file order (first match wins).
    pub policies: Vec<PolicyConf>,
    /// Packet filter on the TUN side, if any.
    pub filter: Option<filter::FilterConf>,
    /// Address of the Prometheus metrics endpoint (`[metrics] listen`), if any.
    pub metrics_listen: Option<SocketAddr>,
    /// Log format and level (`[log]`; text at info when absent).
    pub log: crate::log::LogConf,
    /// How the data-path threads are scheduled (`[data-path] scheduling`).
    pub scheduling: Scheduling,
    /// IKEv2 peers (`[[connection]]`, with keys from `[secrets]`).
    pub connections: Vec<connection::ConnectionConf>,
    /// Road warriors' address pools (`[pools.NAME]`).
    pub pools: Vec<ike::pool::PoolConfig>,
    /// The IKE responder's flood limits (`[ike]`).
    pub ike: ike_limits::IkeLimits,
    /// The file has `[secrets.*]` (PSKs), used or not: it must be private.
    pub has_secrets: bool,
    /// HIP (`[hip]`): our identity file and the peers we know.
    pub hip: Option<hip::HipConf>,
    /// Mobile IPv6 home agent (`[home-agent]`): its address, home prefix and mobile nodes.
    pub home_agent: Option<home_agent::HomeAgentConf>,
    /// Mobile IPv6 mobile node (`[mobile-node]`): home address, home agent, care-of interface.
    pub mobile_node: Option<mobile_node::MobileNodeConf>,
    /// Whether the kernel keeps protected traffic off other routes (`[guard]`, `crate::guard`).
    pub guard: guard::GuardConf,
    /// Where the outbound sequence numbers of the manual SAs are checkpointed (`[state] file`).
    pub sequence_state: Option<PathBuf>,
    /// Start manual SAs without a usable checkpoint at sequence number 1 (`--reset-sequence`,
    /// never set from the file).
    pub reset_sequence: bool,
    /// Keep every IKE SA's keys for `hipsec ike wireshark-keys` (a debug switch of
    /// `hipsec run`, never set from the file: keys leave the node only when asked at start).
    pub export_ike_keys: bool,
    /// Keep the ESP keys of every HIP association for `hipsec hip wireshark-keys` (a debug
    /// switch of `hipsec run`, never set from the file).
    pub export_hip_keys: bool,
}

/// Scheduling class of the data-path threads (`[data-path] scheduling`, sched(7)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scheduling {
    /// SCHED_FIFO at the lowest real-time priority (1), the default: the data path runs ahead of
    /// the applications whose packets it carries, as a kernel IPsec does in softirq context, so
    /// an application woken by a packet the node just wrote does not preempt the node in the
    /// middle of its batch. It still sleeps in poll(2) whenever it has nothing to do, and the
    /// kernel's real-time throttling (`kernel.sched_rt_runtime_us`) leaves other threads their
    /// share under overload. Falls back to `Other` (with a warning) without CAP_SYS_NICE.
    #[default]
    Fifo,
    /// SCHED_OTHER: an ordinary thread.
    Other,
}

impl Scheduling {
    /// The word used in the config file and in `status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheduling::Fifo => "fifo",
            Scheduling::Other => "other",
        }
    }
}

/// The TUN interface.
#[derive(Debug, Clone)]
pub struct InterfaceConf {
    /// Device name (at most 15 bytes).
    pub name: String,
    /// MTU of the underlying link; the TUN MTU is this minus the IPsec overhead.
    pub link_mtu: u16,
    /// Addresses with prefix lengths.
    pub addresses: Vec<Prefix>,
    /// TUN queues, one data-path lane each (`queues`, default 1; see `crate::datapath::lanes`).
    pub queues: usize,
    /// Routes for the protect policies' remote prefixes (`install_routes`; `crate::routes`).
    pub routes: Option<RouteConf>,
}

/// Where `install_routes` puts its routes: `route_table` (default 254, main) and
/// `route_metric` (default 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteConf {
    /// Routing table id.
    pub table: u32,
    /// Route metric (priority; lower wins).
    pub metric: u32,
}

/// The carrier of protected packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// ESP in UDP (RFC 3948).
    Udp {
        /// Local address and port to bind.
        local: SocketAddr,
        /// Where outbound ESP goes when its SA names no `peer` of its own (optional: a node
        /// with many peers gives each SA its endpoint).
        peer: Option<SocketAddr>,
    },
    /// Raw IP sockets for ESP (50) and AH (51).
    Raw {
        /// Local address.
        local: IpAddr,
        /// Where packets go whose SA names no endpoint of its own (required with `[[sa]]`
        /// tables; a Mobile IPv6 home agent's tunnels each have their care-of address).
        peer: Option<IpAddr>,
    },
}

impl Transport {
    /// Local address.
    pub fn local_ip(&self) -> IpAddr {
        match self {
            Transport::Udp { local, .. } => local.ip(),
            Transport::Raw { local, .. } => *local,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    interface: RawInterface,
    network: Spanned<RawNetwork>,
    control: Option<RawControl>,
    #[serde(default)]
    sa: Vec<Spanned<RawSa>>,
    #[serde(default)]
    policy: Vec<Spanned<RawPolicy>>,
    filter: Option<RawFilter>,
    metrics: Option<RawMetrics>,
    log: Option<RawLog>,
    #[serde(rename = "data-path")]
    data_path: Option<RawDataPath>,
    #[serde(default)]
    connection: Vec<Spanned<connection::RawConnection>>,
    #[serde(default)]
    secrets: std::collections::BTreeMap<String, connection::RawSecret>,
    #[serde(default)]
    pools: std::collections::BTreeMap<String, pools::RawPool>,
    hip: Option<Spanned<hip::RawHip>>,
    #[serde(rename = "home-agent")]
    home_agent: Option<Spanned<home_agent::RawHomeAgent>>,
    #[serde(rename = "mobile-node")]
    mobile_node: Option<Spanned<mobile_node::RawMobileNode>>,
    guard: Option<guard::RawGuard>,
    ike: Option<ike_limits::RawIke>,
    state: Option<guard::RawState>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDataPath {
    scheduling: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFilter {
    rules: Spanned<String>,
    engine: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetrics {
    listen: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLog {
    format: Option<Spanned<String>>,
    level: Option<Spanned<String>>,
    filter: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInterface {
    name: Spanned<String>,
    mtu: Option<Spanned<i64>>,
    #[serde(default)]
    addresses: Vec<Spanned<String>>,
    queues: Option<Spanned<i64>>,
    install_routes: Option<bool>,
    route_table: Option<Spanned<i64>>,
    route_metric: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawNetwork {
    transport: Option<Spanned<String>>,
    local: Spanned<String>,
    peer: Option<Spanned<String>>,
    bypass_device: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawControl {
    socket: String,
}

/// The permission bits of a file holding keys if users other than its owner may read it
/// (group or others; `wg` warns the same way), else None.
pub fn readable_by_others(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o044 != 0).then_some(mode)
}

/// Reads and checks a configuration file.
pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|source| ConfigError::Io { file: file.clone(), source })?;
    let mut c = parse(&file, &text)?;
    c.file = path.to_path_buf();
    Ok(c)
}

/// Parses and checks configuration text; `file` names it in error messages.
pub fn parse(file: &str, text: &str) -> Result<NodeConfig, ConfigError> {
    let ctx = Ctx::new(file, text);
    let raw: RawFile = ctx.deserialize()?;
    let interface = interface(&ctx, &raw.interface)?;
    let transport = network(&ctx, raw.network.get_ref())?;
    let bypass_device = match &raw.network.get_ref().bypass_device {
        None => None,
        Some(d) => {
            let n = d.get_ref();
            if n.is_empty() || n.len() > 15 || n.contains(['/', ' ', '\0']) {
                return Err(ctx.err(
                    d.span(),
                    "bypass-device",
                    "want a device name of 1..=15 bytes",
                ));
            }
            // Sent back into the TUN device, a bypassed packet would come round again forever.
            if *n == interface.name {
                return Err(ctx.err(
                    d.span(),
                    "bypass-device",
                    "must not be the TUN device itself",
                ));
            }
            Some(n.clone())
        }
    };
    let sas = sa::parse_all(&ctx, &raw.sa)?;
    if let Transport::Raw { local, peer } = transport {
        match (peer, raw.sa.first()) {
            (Some(peer), _) => sa::check_raw_addresses(&ctx, &raw.sa, &sas, local, peer)?,
            (None, Some(first)) => {
                // The SA file's SAs have no endpoint of their own over raw IP.
                return Err(ctx.err(
                    first.span(),
                    "peer",
                    "[[sa]] over transport = \"raw\" needs [network] peer",
                ));
            }
            (None, None) => {}
        }
    }
    let mut policies = Vec::with_capacity(raw.policy.len());
    for p in &raw.policy {
        policies.push(policy::policy(&ctx, p, &sas)?);
    }
    check_lanes(&ctx, &raw, &interface, &transport, &sas, &policies)?;
    let filter = raw.filter.as_ref().map(|f| filter_conf(&ctx, f)).transpose()?;
    let metrics_listen = raw.metrics.as_ref().map(|m| metrics_listen(&ctx, m)).transpose()?;
    let log = raw.log.as_ref().map(|l| log_conf(&ctx, l)).transpose()?.unwrap_or_default();
    let scheduling = match raw.data_path.as_ref().and_then(|d| d.scheduling.as_ref()) {
        None => Scheduling::default(),
        Some(s) => match s.get_ref().as_str() {
            "fifo" => Scheduling::Fifo,
            "other" => Scheduling::Other,
            _ => return Err(ctx.err(s.span(), "scheduling", "want \"fifo\" or \"other\"")),
        },
    };
    let connections =
        connection::parse_all(&ctx, &raw.connection, &raw.secrets, transport.local_ip())?;
    let spans: Vec<_> = raw.connection.iter().map(|c| c.span()).collect();
    let pools = pools::parse(&ctx, &raw.pools, &connections, &spans)?;
    // Several lanes (`crate::keying::plane::EVERY_LANE`): the kernel steers ESP in UDP to a
    // lane by SPI; raw ESP would reach every lane's raw socket, so ESP goes in UDP always.
    if interface.queues > 1 {
        if let Some((r, c)) = raw.connection.iter().zip(&connections).find(|(_, c)| !c.encap) {
            return Err(ctx.err(
                r.span(),
                "encap",
                format!(
                    "connection {:?}: with [interface] queues = {} ESP must go in UDP (the \
                     kernel hands it to a lane by SPI): set encap = true",
                    c.name, interface.queues
                ),
            ));
        }
    }
    // Connections whose child keys Mobile IPv6 signalling (RFC 4877 §4.4) never reach the
    // data path, so they work over the raw carrier the Mobile IPv6 tunnels want.
    let ike_children: Vec<String> = connections
        .iter()
        .filter(|c| c.children.iter().any(|ch| ch.mip6))
        .map(|c| c.name.clone())
        .collect();
    let data_path_ike =
        raw.connection.iter().zip(&connections).find(|(_, c)| c.children.iter().any(|ch| !ch.mip6));
    if let (Some((c, _)), Transport::Raw { .. }) = (data_path_ike, &transport) {
        return Err(ctx.err(
            c.span(),
            "connection",
            "IKE connections need transport = \"udp\" (ESP in UDP, IKE on 500 and 4500)",
        ));
    }
    let hip = match &raw.hip {
        None => None,
        Some(h) => {
            if interface.queues > 1 {
                return Err(ctx.err(
                    h.span(),
                    "hip",
                    "HIP needs [interface] queues = 1 (SAs change at run time)",
                ));
            }
            if matches!(transport, Transport::Raw { .. }) {
                return Err(ctx.err(
                    h.span(),
                    "hip",
                    "HIP needs transport = \"udp\" (its port carries ESP in UDP with [hip] encap = true)",
                ));
            }
            let local = transport.local_ip();
            // A wildcard IPv4 local is fine (the IPv4 header tells each packet's destination);
            // an IPv6 raw socket does not show it, so a wildcard there cannot check checksums.
            if local.is_ipv6() && local.is_unspecified() {
                return Err(ctx.err(
                    h.span(),
                    "hip",
                    "HIP needs a specific [network] local IPv6 address (a wildcard works for IPv4)",
                ));
            }
            Some(hip::parse(&ctx, h.get_ref(), local)?)
        }
    };
    let home_agent = raw
        .home_agent
        .as_ref()
        .map(|h| home_agent::parse(&ctx, h.get_ref(), &ike_children))
        .transpose()?;
    let mobile_node =
        raw.mobile_node.as_ref().map(|m| mobile_node::parse(&ctx, m, &ike_children)).transpose()?;
    // RFC 4877 §4.4: which mobile node each signalling connection keys.
    let named: Option<Vec<&str>> = match (&home_agent, &mobile_node) {
        (Some(h), _) => {
            Some(h.mobile_nodes.iter().filter_map(|m| m.keys.ike_connection()).collect())
        }
        (None, Some(m)) => Some(m.keys.ike_connection().into_iter().collect()),
        (None, None) => None,
    };
    mip6_sa::check_connections(&ctx, &raw.connection, &connections, named.as_deref())?;
    if let (Some(_), Some(m)) = (&home_agent, &raw.mobile_node) {
        return Err(ctx.err(m.span(), "mobile-node", "a node is a home agent or a mobile node"));
    }
    // The tunnels are ESP straight over IPv6 (RFC 4877 §4.3) to addresses that change: the raw
    // carrier sends each SA's packets to its own endpoint.
    let tunnels =
        home_agent.as_ref().is_some_and(|h| h.mobile_nodes.iter().any(|m| m.tunnel.is_some()))
            || mobile_node.is_some();
    if let (Some(m), Some(r)) = (&mobile_node, &raw.mobile_node) {
        // §11.1: the mobile node's applications use the home address; it lives on the TUN.
        if !interface.addresses.iter().any(|p| p.addr == IpAddr::V6(m.home_address)) {
            return Err(ctx.err(
                r.span(),
                "home-address",
                format!("{} is not among [interface] addresses", m.home_address),
            ));
        }
    }
    if tunnels && !matches!(transport, Transport::Raw { local: IpAddr::V6(_), .. }) {
        let span = raw.network.span();
        return Err(ctx.err(
            span,
            "transport",
            "Mobile IPv6 tunnels want transport = \"raw\" over IPv6",
        ));
    }
    Ok(NodeConfig {
        mobile_node,
        file: PathBuf::from(file),
        hip,
        home_agent,
        interface,
        transport,
        bypass_device,
        control_socket: raw.control.map(|c| PathBuf::from(c.socket)),
        sas,
        policies,
        filter,
        metrics_listen,
        log,
        scheduling,
        connections,
        pools,
        guard: guard::parse(raw.guard.as_ref()),
        ike: ike_limits::parse(&ctx, raw.ike.as_ref())?,
        sequence_state: guard::state_file(&ctx, raw.state.as_ref())?,
        reset_sequence: false,
        has_secrets: !raw.secrets.is_empty(),
        export_ike_keys: false,
        export_hip_keys: false,
    })
}

/// Lanes (`[interface] queues` > 1, see `crate::datapath::lanes`): ESP in UDP only (raw sockets would each
/// get every packet); every SA in a lane below `queues`; an inbound SA's SPI ≡ its lane mod
/// `queues` (the kernel picks the receiving lane by SPI); and every SA a policy names has a
/// counterpart of the same name in each lane, since each lane seals with its own SAs (RFC 9611).
fn check_lanes(
    ctx: &Ctx<'_>,
    raw: &RawFile,
    iface: &InterfaceConf,
    transport: &Transport,
    sas: &[SaConf],
    policies: &[PolicyConf],
) -> Result<(), ConfigError> {
    let n = iface.queues;
    for (r, c) in raw.sa.iter().zip(sas) {
        let lane_span = r.get_ref().lane.as_ref().map_or(r.span(), |l| l.span());
        if c.lane >= n {
            return Err(ctx.err(
                lane_span,
                "lane",
                format!("lane {} but [interface] queues = {n} (lanes 0..{n})", c.lane),
            ));
        }
        if n > 1 && c.direction == Direction::In && c.params.spi.0 as usize % n != c.lane {
            return Err(ctx.err(
                r.get_ref().spi.span(),
                "spi",
                format!(
                    "{}: with queues = {n} the receiving lane is SPI mod {n}, so an inbound SA \
                     of lane {} needs an SPI that leaves {} (this one leaves {})",
                    c.params.spi,
                    c.lane,
                    c.lane,
                    c.params.spi.0 as usize % n
                ),
            ));
        }
    }
    if n == 1 {
        return Ok(());
    }
    if !matches!(transport, Transport::Udp { .. }) {
        let span = raw.network.get_ref().transport.as_ref().map_or(0..0, |t| t.span());
        return Err(ctx.err(
            span,
            "transport",
            format!("queues = {n} needs transport = \"udp\" (every raw socket gets every packet)"),
        ));
    }
    for (p, rp) in policies.iter().zip(&raw.policy) {
        let named: Vec<usize> = match &p.action {
            PolicyAction::Protect(v) => v.iter().chain(&p.in_sas).copied().collect(),
            _ => continue,
        };
        for i in named {
            let sa = &sas[i];
            let field = if sa.direction == Direction::Out { "sas" } else { "in-sas" };
            let span = rp.span();
            let Some(name) = &sa.name else {
                return Err(ctx.err(
                    span,
                    field,
                    format!(
                        "SA {} has no name: with queues = {n} policies name SAs, and each lane \
                         has its own SA of that name",
                        sa.params.spi
                    ),
                ));
            };
            for lane in 1..n {
                if sa::counterpart(sas, i, lane).is_none() {
                    return Err(ctx.err(
                        span,
                        field,
                        format!("no SA named {name:?} with lane = {lane} (queues = {n})"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `[metrics] listen`: `ADDR:PORT` or `[V6ADDR]:PORT`, port not 0 (a scraper must know it).
/// Whether it can be bound is found out at start (`crate::run::run_tuned`), which refuses to run
/// without it.
fn metrics_listen(ctx: &Ctx<'_>, r: &RawMetrics) -> Result<SocketAddr, ConfigError> {
    let t = r.listen.get_ref().trim();
    t.parse::<SocketAddr>().ok().filter(|a| a.port() != 0).ok_or_else(|| {
        ctx.err(r.listen.span(), "listen", format!("{t:?} is not ADDR:PORT or [V6ADDR]:PORT"))
    })
}

/// `[log]`: `format` ("text" or "json", default text), `level` ("debug", "info", "warn" or
/// "error", default info) and `filter` (a `RUST_LOG`-style filter, which overrides `level`).
fn log_conf(ctx: &Ctx<'_>, r: &RawLog) -> Result<crate::log::LogConf, ConfigError> {
    use crate::log::{Level, LogConf, LogFormat};
    let mut c = LogConf::default();
    if let Some(f) = &r.format {
        c.format = LogFormat::from_name(f.get_ref())
            .ok_or_else(|| ctx.err(f.span(), "format", "want \"text\" or \"json\""))?;
    }
    if let Some(l) = &r.level {
        c.level = Level::from_name(l.get_ref()).ok_or_else(|| {
            ctx.err(l.span(), "level", "want \"debug\", \"info\", \"warn\" or \"error\"")
        })?;
    }
    if let Some(f) = &r.filter {
        crate::log::check_filter(f.get_ref()).map_err(|e| ctx.err(f.span(), "filter", e))?;
        c.filter = Some(f.get_ref().clone());
    }
    Ok(c)
}

/// `[filter]`: the rule file (relative paths are relative to the config file) and the engine;
/// the rules are loaded here so that a bad rule file stops the node from starting.
fn filter_conf(ctx: &Ctx<'_>, r: &RawFilter) -> Result<filter::FilterConf, ConfigError> {
    use filter::{FilterConf, FilterEngine};
    let engine = match &r.engine {
        None => FilterEngine::Classifier,
        Some(e) => FilterEngine::from_name(e.get_ref())
            .ok_or_else(|| ctx.err(e.span(), "engine", "want \"classifier\" or \"linear\""))?,
    };
    let path = PathBuf::from(r.rules.get_ref());
    let rules = match std::path::Path::new(ctx.file).parent() {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    };
    let conf = FilterConf { rules, engine };
    filter::check(&conf).map_err(|e| ctx.err(r.rules.span(), "rules", e))?;
    Ok(conf)
}

fn interface(ctx: &Ctx<'_>, r: &RawInterface) -> Result<InterfaceConf, ConfigError> {
    let name = r.name.get_ref();
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', '\0']) {
        return Err(ctx.err(r.name.span(), "name", "want 1 to 15 characters, no '/' or spaces"));
    }
    let link_mtu = match &r.mtu {
        None => 1500,
        Some(m) => u16::try_from(*m.get_ref())
            .ok()
            .filter(|v| (576..=65535).contains(v))
            .ok_or_else(|| ctx.err(m.span(), "mtu", "want a link MTU in 576..=65535"))?,
    };
    let mut addresses = Vec::new();
    for a in &r.addresses {
        let p: Prefix = a.get_ref().parse().map_err(|e| ctx.err(a.span(), "addresses", e))?;
        addresses.push(p);
    }
    let queues = match &r.queues {
        None => 1,
        Some(q) => {
            usize::try_from(*q.get_ref())
                .ok()
                .filter(|v| (1..=sa::MAX_LANES).contains(v))
                .ok_or_else(|| ctx.err(q.span(), "queues", format!("want 1..={}", sa::MAX_LANES)))?
        }
    };
    let num = |v: &Option<Spanned<i64>>, field: &'static str, default: u32| match v {
        None => Ok(default),
        Some(n) => u32::try_from(*n.get_ref())
            .ok()
            .filter(|t| field != "route_table" || (1..=0xffff_fffe).contains(t))
            .ok_or_else(|| ctx.err(n.span(), field, "want a number in 1..=4294967294")),
    };
    let routes = match r.install_routes {
        Some(true) => Some(RouteConf {
            table: num(&r.route_table, "route_table", crate::routes::DEFAULT_TABLE)?,
            metric: num(&r.route_metric, "route_metric", crate::routes::DEFAULT_METRIC)?,
        }),
        _ => None,
    };
    Ok(InterfaceConf { name: name.clone(), link_mtu, addresses, queues, routes })
}

/// `[network] peer` if given, read by `read` (an address, or an address and port, with the
/// address alone beside it), of `local`'s IP version.
fn optional_peer<T>(
    ctx: &Ctx<'_>,
    peer: &Option<Spanned<String>>,
    local: IpAddr,
    read: impl Fn(&Spanned<String>) -> Result<(T, IpAddr), ConfigError>,
) -> Result<Option<T>, ConfigError> {
    let Some(p) = peer else { return Ok(None) };
    let (v, ip) = read(p)?;
    if ip.is_ipv4() != local.is_ipv4() {
        return Err(ctx.err(p.span(), "peer", "local and peer differ in IP version"));
    }
    Ok(Some(v))
}

fn network(ctx: &Ctx<'_>, r: &RawNetwork) -> Result<Transport, ConfigError> {
    let kind = r.transport.as_ref().map_or("udp", |t| t.get_ref().as_str());
    match kind {
        "udp" => {
            let local = sa::endpoint(ctx, &r.local, "local")?;
            let peer = optional_peer(ctx, &r.peer, local.ip(), |p| {
                sa::endpoint(ctx, p, "peer").map(|e| (e, e.ip()))
            })?;
            Ok(Transport::Udp { local, peer })
        }
        "raw" => {
            let addr = |s: &Spanned<String>, f: &'static str| {
                s.get_ref().parse::<IpAddr>().map_err(|_| {
                    ctx.err(s.span(), f, format!("{:?} is not an IP address", s.get_ref()))
                })
            };
            let local = addr(&r.local, "local")?;
            let peer = optional_peer(ctx, &r.peer, local, |p| addr(p, "peer").map(|a| (a, a)))?;
            Ok(Transport::Raw { local, peer })
        }
        other => {
            let span = r.transport.as_ref().map_or(0..0, |t| t.span());
            Err(ctx.err(span, "transport", format!("{other:?}: use \"udp\" or \"raw\"")))
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
