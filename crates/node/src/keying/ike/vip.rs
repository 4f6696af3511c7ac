//! Virtual IPs of road warriors (RFC 7296 §2.19) in the kernel: an address a responder's
//! CFG_REPLY granted us goes on the TUN device (`ip addr add A/32 dev TUN`), so applications
//! send from it and the CHILD SA's local selector (narrowed to it, §2.9) matches; it leaves
//! the device when the IKE SA goes (one `ip` command each: once per IKE SA, not per packet).
//! An address we leased to a peer needs nothing here: its pool is routed into the device from
//! the start (`crate::routes`), so the answers to it reach the CHILD SA.

use super::IkeDriver;
use ike::assoc::AssocId;
use std::net::IpAddr;
use std::process::{Command, Stdio};
use wire::ikev2::{Id, IdType};

/// An identity as text for status: the name, the address, or hex.
pub(super) fn id_text(id: &Id) -> String {
    match id.id_type {
        IdType::ID_FQDN | IdType::ID_RFC822_ADDR => String::from_utf8_lossy(&id.data).into_owned(),
        _ => id.ip_addr().map_or_else(
            || id.data.iter().map(|x| format!("{x:02x}")).collect(),
            |a| a.to_string(),
        ),
    }
}

fn ip(args: &[String]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        let why = String::from_utf8_lossy(&out.stderr);
        Err(format!("ip {}: {}", args.join(" "), why.trim()))
    }
}

/// `A/len` of a virtual IP as the kernel takes it: a host (an IPv4 lease carries no netmask,
/// and an IPv6 one's prefix is the pool's, which is not on this link).
fn host(a: IpAddr) -> String {
    format!("{a}/{}", if a.is_ipv4() { 32 } else { 128 })
}

impl IkeDriver {
    /// The TUN device virtual IPs go on and leases are routed into.
    pub fn set_tun(&mut self, name: &str) {
        self.tun = Some(name.to_owned());
    }

    /// The `[pools.*]` the endpoint leases from.
    pub fn set_pools(&mut self, pools: Vec<ike::pool::PoolConfig>) {
        self.endpoint.set_pools(pools);
    }

    pub(super) fn virtual_ip(
        &mut self,
        assoc: AssocId,
        conn: &str,
        ours: bool,
        addrs: Vec<(IpAddr, u8)>,
        dns: &[IpAddr],
    ) {
        let list: Vec<String> = addrs.iter().map(|(a, l)| format!("{a}/{l}")).collect();
        let dns: Vec<String> = dns.iter().map(ToString::to_string).collect();
        let what = if ours { "virtual-ip" } else { "lease" };
        tracing::info!(connection = %conn, addresses = %list.join(","), dns = %dns.join(","), "{}", what);
        if let (Some(tun), true) = (&self.tun, ours) {
            for (a, _) in &addrs {
                let args: Vec<String> =
                    vec!["addr".into(), "replace".into(), host(*a), "dev".into(), tun.clone()];
                if let Err(why) = ip(&args) {
                    tracing::warn!(connection = %conn, why = why.to_string(), "virtual-ip-failed");
                }
            }
        }
        if !ours {
            self.leased.push(assoc);
        }
        self.vips.push((assoc, addrs));
    }

    /// The IKE SA `assoc` is gone: its virtual IPs leave the device (a lease's pool route stays).
    pub(super) fn drop_virtual_ips(&mut self, assoc: AssocId) {
        let leased = self.leased.contains(&assoc);
        self.leased.retain(|a| *a != assoc);
        let (gone, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.vips).into_iter().partition(|(a, _)| *a == assoc);
        self.vips = kept;
        let Some(tun) = &self.tun else { return };
        if leased {
            return;
        }
        for (_, addrs) in gone {
            for (a, _) in addrs {
                let args: Vec<String> =
                    vec!["addr".into(), "del".into(), host(a), "dev".into(), tun.clone()];
                if let Err(why) = ip(&args) {
                    tracing::warn!(why = why.to_string(), "virtual-ip-failed");
                }
            }
        }
    }
}
