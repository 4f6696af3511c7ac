//! Keeps the kernel's IPv6 stack away from the packets the home agent reads off the link
//! (`super::socket`). A kernel without `CONFIG_IPV6_MIP6` meets the Home Address option
//! (type 201, action bits 11) in its Destination Options processing, after the input hook, and
//! answers ICMPv6 Parameter Problem (RFC 8200 §4.2); the mobile node would see that next to our
//! Binding Acknowledgement. An nftables table of our own drops, at prerouting, every IPv6
//! packet to the home agent's address that starts with a Destination Options header (the
//! AF_PACKET tap has copied it by then). The table goes when the home agent stops.

use crate::nft::apply as nft;
use std::io;
use std::net::Ipv6Addr;

/// The table's name (family ip6); one home agent per network namespace.
pub const TABLE: &str = "hipsec_mip6";
/// The mobile node's table: one mobile node per network namespace.
pub const MOBILE_TABLE: &str = "hipsec_mip6_mn";

/// The installed table; dropping it deletes the table.
#[derive(Debug)]
pub struct KernelSilencer {
    table: &'static str,
}

/// The rules for `addr` (a table made afresh: a previous run's leftover is replaced).
pub fn script(addr: Ipv6Addr) -> String {
    format!(
        "table ip6 {TABLE}\ndelete table ip6 {TABLE}\n\
         table ip6 {TABLE} {{\n  chain prerouting {{\n    \
         type filter hook prerouting priority raw; policy accept;\n    \
         ip6 daddr {addr} ip6 nexthdr 60 counter drop comment \"mobile ipv6 binding updates: read by hipsec from the link\"\n  \
         }}\n}}\n"
    )
}

/// The mobile node's rules: a Binding Acknowledgement comes with a type 2 routing header
/// (RFC 6275 §6.4), which a kernel without `CONFIG_IPV6_MIP6` answers with Parameter Problem
/// (its Segments Left is 1); every such packet is dropped at prerouting, after the mobile
/// node's AF_PACKET tap has copied it.
pub fn mobile_script() -> String {
    let t = MOBILE_TABLE;
    format!(
        "table ip6 {t}\ndelete table ip6 {t}\n\
         table ip6 {t} {{\n  chain prerouting {{\n    \
         type filter hook prerouting priority raw; policy accept;\n    \
         rt type 2 counter drop comment \"mobile ipv6 binding acknowledgements: read by hipsec from the link\"\n  \
         }}\n}}\n"
    )
}

impl KernelSilencer {
    /// Installs the table for the home agent's address.
    pub fn install(addr: Ipv6Addr) -> io::Result<KernelSilencer> {
        nft(&script(addr))?;
        Ok(KernelSilencer { table: TABLE })
    }

    /// Installs the mobile node's table ([`mobile_script`]).
    pub fn install_mobile() -> io::Result<KernelSilencer> {
        nft(&mobile_script())?;
        Ok(KernelSilencer { table: MOBILE_TABLE })
    }
}

impl Drop for KernelSilencer {
    fn drop(&mut self) {
        let _ = nft(&format!("delete table ip6 {}\n", self.table));
    }
}
