//! What an operator and the data path ask of the IKE driver besides datagrams and time:
//! trap policies and their acquires (RFC 4301 §4.4.1.1, swanctl `start_action = trap`),
//! `hipsec terminate` and `rekey`, and the Wireshark key tables.

use super::{IkeDriver, KeyLog, Transmit, install};
use crate::config::connection::StartAction;
use crate::keying::plane::ControlPlane;
use ike::assoc::Target;
use ipsec::spd_table::PolicyId;

impl IkeDriver {
    /// Installs the trap policies of `start_action = trap` children (once).
    pub fn install_traps(&mut self, plane: &mut ControlPlane) {
        if std::mem::replace(&mut self.traps_installed, true) {
            return;
        }
        for (i, c) in self.conns.iter().enumerate() {
            let Some(peer) = c.remote_addr else { continue };
            for ch in c.children.iter().filter(|ch| ch.start_action == StartAction::Trap) {
                let ps = install::trap_policies(&ch.local_ts, &ch.remote_ts, peer);
                let ids: Vec<PolicyId> =
                    (0..ps.len() as u64).map(|k| self.next_policy + k).collect();
                self.next_policy += ps.len() as u64;
                match plane.set_policies(ids.iter().copied().zip(ps).collect()) {
                    Ok(()) => {
                        self.traps.extend(ids.iter().map(|id| (*id, i)));
                        tracing::info!(connection = %c.name, child = %ch.name, policies = ids.len(), "ike-trap");
                    }
                    Err(e) => {
                        tracing::warn!(connection = %c.name, why = e.to_string(), "ike-trap-failed");
                    }
                }
            }
        }
    }

    /// An acquire for `policy`: if it is a trap, bring its connection up (nothing new starts
    /// while it is up or being set up).
    pub fn acquire(&mut self, plane: &mut ControlPlane, policy: PolicyId) -> Vec<Transmit> {
        let Some(&ci) = self.traps.get(&policy) else { return Vec::new() };
        let name = self.conns[ci].name.clone();
        if self.endpoint.setups_in_flight(&name) > 0 || self.assocs.values().any(|a| a.conn == ci) {
            return Vec::new();
        }
        tracing::info!(connection = %name, policy = %policy, "ike-acquire");
        let now = self.now();
        let _ = self.endpoint.initiate(now, &name);
        self.drain(plane)
    }

    /// tshark's key tables for every IKE SA and CHILD SA so far (rekeyed and failed ones
    /// too), or `None` unless the node was started to export keys.
    pub fn wireshark_keys(&self) -> Option<&KeyLog> {
        self.key_log.as_ref()
    }

    /// Deletes connection `name`'s IKE SAs (and with them their CHILD SAs, §1.4.1), or only
    /// its CHILD SA `child`; a pending setup retry is cancelled. Returns the datagrams to send
    /// and how many IKE SAs it touched.
    pub fn terminate(
        &mut self,
        plane: &mut ControlPlane,
        name: &str,
        child: Option<&str>,
    ) -> Result<(Vec<Transmit>, usize), String> {
        let ci = self.connection(name).ok_or_else(|| format!("no connection {name:?}"))?;
        let n = self.assocs.values().filter(|a| a.conn == ci).count();
        let target = child.map_or(Target::All, |c| Target::Child(c.to_owned()));
        let now = self.now();
        self.endpoint.terminate(now, name, &target).map_err(|e| e.to_string())?;
        tracing::info!(connection = %name, ike_sas = n, "ike-terminate");
        Ok((self.drain(plane), n))
    }

    /// Rekeys connection `name`'s CHILD SA (its newest pair without a successor; `child`
    /// names it, default the first) or, with `ike`, its IKE SA, now.
    pub fn rekey(
        &mut self,
        plane: &mut ControlPlane,
        name: &str,
        child: Option<&str>,
        ike: bool,
    ) -> Result<(Vec<Transmit>, usize), String> {
        let ci = self.connection(name).ok_or_else(|| format!("no connection {name:?}"))?;
        let now = self.now();
        let r = if ike {
            self.endpoint.rekey_ike(now, name)
        } else {
            let first = self.conns[ci].children.first().map(|c| c.name.clone());
            let child = child.map(str::to_owned).or(first).unwrap_or_default();
            self.endpoint.rekey_child(now, name, &child)
        };
        r.map_err(|e| e.to_string())?;
        Ok((self.drain(plane), 1))
    }
}
