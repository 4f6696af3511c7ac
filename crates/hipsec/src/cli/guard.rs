//! `hipsec guard show|remove`: the nftables table a node leaves in the kernel so that the traffic
//! its policies protect never leaves in clear, also while the node is down (docs/restarts.md).

use clap::{Args, Subcommand};

pub(crate) const GUARD_HELP: &str = "\
A node whose policies protect or discard traffic installs, before it opens its TUN device, an
nftables table `inet hipsec_guard` in its network namespace: traffic to a protected destination
that would leave by any device but the node's TUN is dropped, and that traffic's replies arriving
in clear are dropped too (the node's own ESP, AH, HIP and IKE/ESP-in-UDP ports pass). The table
stays when the node stops, crashes or is killed, so a restart or an outage never sends that
traffic in clear by the default route; the next start replaces it in one step. Turn it off with
`[guard] enabled = false` in the node's config. Run these in the node's namespace.

Examples:
  hipsec guard show                  # the table with each rule's drop counter
  hipsec guard show --json           # nft -j's document, for scripts
  hipsec guard remove                # the whole table: protected traffic may leave in clear
  hipsec guard remove --interface hipsec0
  nft delete table inet hipsec_guard # the same by hand";

#[derive(Debug, Subcommand)]
pub(crate) enum GuardCommand {
    /// Print the guard table and its counters.
    Show(ShowArgs),
    /// Remove the guard (all of it, or one TUN device's chains).
    Remove(RemoveArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// Print nft's JSON document instead of its text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RemoveArgs {
    /// Remove only this TUN device's chains.
    #[arg(long, value_name = "NAME")]
    interface: Option<String>,
}

pub(crate) fn run(c: GuardCommand) -> Result<(), String> {
    match c {
        GuardCommand::Show(a) => match node::guard::show(a.json).map_err(|e| e.to_string())? {
            Some(text) => {
                print!("{text}");
                Ok(())
            }
            None if a.json => {
                println!("{{\"nftables\":[]}}");
                Ok(())
            }
            None => {
                println!("no guard in this network namespace (table inet {})", node::guard::TABLE);
                Ok(())
            }
        },
        GuardCommand::Remove(a) => {
            let removed = node::guard::remove(a.interface.as_deref()).map_err(|e| e.to_string())?;
            let what = match &a.interface {
                Some(i) => format!("the guard of {i}"),
                None => format!("table inet {}", node::guard::TABLE),
            };
            if removed {
                println!("removed {what}");
            } else {
                println!("no {what} to remove");
            }
            Ok(())
        }
    }
}
