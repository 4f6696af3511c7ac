//! The endpoint's commands (an operator's or the node's): bring a connection up, rekey a
//! child or the IKE SA now, and terminate all of a connection or one child (RFC 7296 §1.3.2,
//! §1.3.3, §1.4.1).

use super::association::Association;
use super::endpoint::Endpoint;
use super::{AssocId, CommandError, DownReason, Target};
use crate::session::Request;
use crate::time::Time;

impl Endpoint {
    pub(super) fn conn_index(&self, name: &str) -> Result<usize, CommandError> {
        self.conns
            .iter()
            .position(|c| c.cfg.name == name)
            .ok_or_else(|| CommandError::NoConnection(name.to_owned()))
    }

    fn up_assoc(&self, conn: usize) -> Option<AssocId> {
        self.assocs.values().rev().find(|a| a.conn == conn && a.is_up()).map(|a| a.id)
    }

    /// Brings the connection up. Nothing new starts while it is up or being set up; a pending
    /// retry is brought forward to `now` in the same chain (its back-off count kept).
    pub fn initiate(&mut self, now: Time, conn: &str) -> Result<(), CommandError> {
        let i = self.conn_index(conn)?;
        self.conns[i].wanted = true;
        let busy = self.assocs.values().any(|a| a.conn == i && (a.is_up() || a.is_setting_up()));
        if busy {
            return Ok(());
        }
        if self.conns[i].retry_at.is_some() {
            self.conns[i].retry_at = Some(now);
            return Ok(());
        }
        self.start_setup(now, i);
        Ok(())
    }

    fn ask(
        &mut self,
        now: Time,
        conn: &str,
        req: impl Fn(&Association) -> Option<Request>,
    ) -> Result<(), CommandError> {
        let i = self.conn_index(conn)?;
        let id = self.up_assoc(i).ok_or_else(|| CommandError::NotEstablished(conn.to_owned()))?;
        let (mut sink, assocs, conns) = self.sink();
        let Some(a) = assocs.get_mut(&id) else { return Ok(()) };
        let Some(r) = req(a) else { return Ok(()) };
        let step = a.request(now, r, &conns[i].cfg, &mut sink);
        self.after(now, id, step);
        Ok(())
    }

    /// Rekeys the child's newest pair now (§1.3.3; one the peer has just rekeyed is left alone).
    pub fn rekey_child(&mut self, now: Time, conn: &str, child: &str) -> Result<(), CommandError> {
        let i = self.conn_index(conn)?;
        let c = self.conns[i]
            .cfg
            .child_index(child)
            .ok_or_else(|| CommandError::NoChild(child.to_owned()))?;
        self.ask(now, conn, |a| a.rekey_target(c).map(Request::RekeyChild))
    }

    /// Rekeys the IKE SA now (§1.3.2).
    pub fn rekey_ike(&mut self, now: Time, conn: &str) -> Result<(), CommandError> {
        self.ask(now, conn, |_| Some(Request::RekeyIke))
    }

    /// Ends what `target` names. `All`: the pending retry is cancelled, the connection is no
    /// longer wanted, and every IKE SA of it is DELETEd (§1.4.1; its CHILD SAs go with it).
    pub fn terminate(
        &mut self,
        now: Time,
        conn: &str,
        target: &Target,
    ) -> Result<(), CommandError> {
        let i = self.conn_index(conn)?;
        match target {
            Target::All => {
                let c = &mut self.conns[i];
                c.wanted = false;
                c.retry_at = None;
                c.failures = 0;
                let ids: Vec<AssocId> =
                    self.assocs.values().filter(|a| a.conn == i).map(|a| a.id).collect();
                for id in ids {
                    let up = self.assocs.get(&id).is_some_and(Association::is_up);
                    if up {
                        let (mut sink, assocs, conns) = self.sink();
                        if let Some(a) = assocs.get_mut(&id) {
                            let step = a.request(now, Request::DeleteIke, &conns[i].cfg, &mut sink);
                            self.after(now, id, step);
                        }
                    } else if let Some(mut a) = self.assocs.remove(&id) {
                        // Not up yet: forgotten (the peer's half-open state times out).
                        let (mut sink, _, conns) = self.sink();
                        a.end(&conns[i].cfg, &mut sink, DownReason::Terminated);
                        self.by_spi.retain(|_, x| *x != id);
                        self.pools.release(id, now);
                    }
                }
                Ok(())
            }
            Target::Child(name) => {
                let c = self.conns[i]
                    .cfg
                    .child_index(name)
                    .ok_or_else(|| CommandError::NoChild(name.clone()))?;
                let i_up = self.up_assoc(i);
                let Some(id) = i_up else {
                    return Err(CommandError::NotEstablished(conn.to_owned()));
                };
                let spis: Vec<u32> = self
                    .assocs
                    .get(&id)
                    .map(|a| {
                        a.pairs()
                            .iter()
                            .filter(|(p, _)| p.child == c)
                            .map(|(p, _)| p.spi_in)
                            .collect()
                    })
                    .unwrap_or_default();
                for s in spis {
                    self.ask(now, conn, |_| Some(Request::DeleteChild(s)))?;
                }
                Ok(())
            }
        }
    }
}
