//! What an operator and the data path ask of the IKE driver besides datagrams and time:
//! trap policies and their acquires (RFC 4301 §4.4.1.1, swanctl `start_action = trap`),
//! `hipsec terminate` and `rekey`, and the Wireshark key table.

use super::{IkeDriver, State, Transmit, install};
use crate::config::connection::StartAction;
use crate::keying::plane::ControlPlane;
use crate::log::{Level, log_event};
use ipsec::spd_table::PolicyId;

impl IkeDriver {
    /// Installs the trap policies of `start_action = trap` children (once).
    pub fn install_traps(&mut self, plane: &mut ControlPlane) {
        if std::mem::replace(&mut self.traps_installed, true) {
            return;
        }
        for (i, c) in self.conns.iter().enumerate() {
            let Some(peer) = c.conf.remote_addr else { continue };
            for ch in c.conf.children.iter().filter(|ch| ch.start_action == StartAction::Trap) {
                let ps = install::trap_policies(&ch.local_ts, &ch.remote_ts, peer);
                let ids: Vec<PolicyId> =
                    (0..ps.len() as u64).map(|k| self.next_policy + k).collect();
                self.next_policy += ps.len() as u64;
                match plane.set_policies(ids.iter().copied().zip(ps).collect()) {
                    Ok(()) => {
                        self.traps.extend(ids.iter().map(|id| (*id, i)));
                        log_event!(Level::Info, "ike-trap", "connection" => c.conf.name, "child" => ch.name, "policies" => ids.len());
                    }
                    Err(e) => {
                        log_event!(Level::Warn, "ike-trap-failed", "connection" => c.conf.name, "why" => e.to_string());
                    }
                }
            }
        }
    }

    /// An acquire for `policy`: if it is a trap whose connection has no IKE SA yet (or in
    /// progress), initiate it.
    pub fn acquire(&mut self, policy: PolicyId, now_ms: u64) -> Vec<Transmit> {
        let Some(&ci) = self.traps.get(&policy) else { return Vec::new() };
        if self.sas.values().any(|e| e.conn == ci) {
            return Vec::new();
        }
        log_event!(Level::Info, "ike-acquire", "connection" => self.conns[ci].conf.name, "policy" => policy);
        self.initiate(ci, now_ms).unwrap_or_default()
    }

    /// tshark's `ikev2_decryption_table` lines of every IKE SA so far (rekeyed ones too), or
    /// `None` unless the node was started to export keys.
    pub fn wireshark_keys(&self) -> Option<&[String]> {
        self.key_log.as_deref()
    }

    /// Deletes connection `name`'s IKE SAs (and with them their CHILD SAs, §1.4.1); half-open
    /// exchanges are dropped. Returns the datagrams to send and how many IKE SAs it touched.
    pub fn terminate(
        &mut self,
        plane: &mut ControlPlane,
        name: &str,
        now_ms: u64,
    ) -> Result<(Vec<Transmit>, usize), String> {
        let ci = self.connection(name).ok_or_else(|| format!("no connection {name:?}"))?;
        self.retry.retain(|(_, c)| *c != ci);
        let keys: Vec<u64> =
            self.sas.iter().filter(|(_, e)| e.conn == ci).map(|(k, _)| *k).collect();
        let mut out = Vec::new();
        for k in &keys {
            let Some(mut e) = self.sas.remove(k) else { continue };
            if let State::Up(mut up) = std::mem::replace(&mut e.state, State::Taken) {
                let sent = self.with_ctx(plane, &e, now_ms, |cx| {
                    // Our pairs go at once: fail closed even if the peer never answers.
                    up.remove_all(cx);
                    up.request(ike::session::Request::DeleteIke, cx)
                });
                let (natt, to) = (e.natt, e.peer);
                out.extend(sent.into_iter().map(|bytes| Transmit { natt, to, bytes }));
            }
            self.alias.retain(|_, v| v != k);
        }
        log_event!(Level::Info, "ike-terminate", "connection" => name, "ike_sas" => keys.len());
        Ok((out, keys.len()))
    }

    /// Rekeys connection `name`'s newest CHILD SA (or, with `ike`, its IKE SA) now.
    pub fn rekey(
        &mut self,
        plane: &mut ControlPlane,
        name: &str,
        ike: bool,
        now_ms: u64,
    ) -> Result<(Vec<Transmit>, usize), String> {
        let ci = self.connection(name).ok_or_else(|| format!("no connection {name:?}"))?;
        let keys: Vec<u64> = self
            .sas
            .iter()
            .filter(|(_, e)| e.conn == ci && matches!(e.state, State::Up(_)))
            .map(|(k, _)| *k)
            .collect();
        if keys.is_empty() {
            return Err(format!("connection {name:?} has no established IKE SA"));
        }
        let mut out = Vec::new();
        for k in &keys {
            let Some(mut e) = self.sas.remove(k) else { continue };
            if let State::Up(mut up) = std::mem::replace(&mut e.state, State::Taken) {
                let sent = self.with_ctx(plane, &e, now_ms, |cx| {
                    let r = if ike {
                        Some(ike::session::Request::RekeyIke)
                    } else {
                        up.child_spis().last().map(|s| ike::session::Request::RekeyChild(*s))
                    };
                    r.map(|r| up.request(r, cx)).unwrap_or_default()
                });
                let (natt, to) = (e.natt, e.peer);
                out.extend(sent.into_iter().map(|bytes| Transmit { natt, to, bytes }));
                e.state = State::Up(up);
            }
            self.file(*k, e);
        }
        Ok((out, keys.len()))
    }
}
