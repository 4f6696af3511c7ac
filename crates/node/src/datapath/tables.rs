//! What each half of a lane keeps beside its engine so that the control plane can change SAs
//! and policies by name while packets flow: SA keys → engine handles, the policies as given
//! (SAs by key) so that they can be resolved again when an SA they name comes or goes, and per
//! outbound SA the peer endpoint its packets go to. Applied between batches (`super::mailbox`).
//!
//! Resolution fails closed: a protect policy naming an SA that is not installed gets an empty
//! bundle outbound (its packets drop as `no_sa` and raise an acquire, RFC 4301 §4.4.1.1) and a
//! discard entry inbound (nothing may arrive for it).

use super::mailbox::{InKey, InboundPeer, OutKey, PolicyAction, PolicySpec, Update};
use ipsec::spd::{Action, Selector, SpdEntry};
use ipsec::{Engine, PolicyId, SaHandle, SecurityAssociation};
use std::collections::HashMap;
use std::net::SocketAddr;

/// The key an outbound SA is known by.
pub fn out_key(sa: &SecurityAssociation) -> OutKey {
    OutKey { spi: sa.spi().0, proto: sa.protocol().number(), dst: sa.addrs().1 }
}

/// The outbound half's tables.
#[derive(Debug, Default)]
pub struct OutTables {
    handles: HashMap<OutKey, SaHandle>,
    /// Per handle: where its packets go (ESP in UDP); `None`: the default peer.
    endpoints: Vec<Option<SocketAddr>>,
    /// Per handle: sent over the lane's raw-IP carrier beside its UDP one.
    raw_ip: Vec<bool>,
    policies: HashMap<PolicyId, PolicySpec>,
    /// Which policies name each key.
    users: HashMap<OutKey, Vec<PolicyId>>,
}

/// The inbound half's tables.
#[derive(Debug, Default)]
pub struct InTables {
    /// Inbound SAs' header addresses and peer endpoints, by (SPI, protocol).
    pub peers: HashMap<InKey, InboundPeer>,
    policies: HashMap<PolicyId, PolicySpec>,
    users: HashMap<InKey, Vec<PolicyId>>,
}

fn mirrored(s: &Selector) -> Selector {
    Selector {
        src: s.dst,
        dst: s.src,
        proto: s.proto,
        src_ports: s.dst_ports,
        dst_ports: s.src_ports,
    }
}

fn unlink<K: std::hash::Hash + Eq>(users: &mut HashMap<K, Vec<PolicyId>>, k: &K, id: PolicyId) {
    if let Some(v) = users.get_mut(k) {
        v.retain(|&x| x != id);
        if v.is_empty() {
            users.remove(k);
        }
    }
}

impl OutTables {
    /// Tables for an engine built from the config (its SAs and policies, `keying::manual`).
    pub fn from_engine(e: &Engine) -> OutTables {
        let mut t = OutTables::default();
        let mut keys = HashMap::new();
        for (h, sa) in e.outbound_entries() {
            t.handles.insert(out_key(sa), h);
            keys.insert(h.0, out_key(sa));
            t.set_endpoint(h, None);
        }
        for (id, priority, entry) in e.policies().iter() {
            let action = match &entry.action {
                Action::Bypass => PolicyAction::Bypass,
                Action::Discard => PolicyAction::Discard,
                Action::Protect(hs) => {
                    PolicyAction::Protect(hs.iter().filter_map(|h| keys.get(h).copied()).collect())
                }
            };
            let spec =
                PolicySpec { selector: entry.selector.clone(), action, in_sas: vec![], priority };
            t.link(id, &spec);
            t.policies.insert(id, spec);
        }
        t
    }

    fn set_endpoint(&mut self, h: SaHandle, ep: Option<SocketAddr>) {
        if self.endpoints.len() <= h.0 {
            self.endpoints.resize(h.0 + 1, None);
        }
        self.endpoints[h.0] = ep;
    }

    fn set_raw_ip(&mut self, h: SaHandle, raw: bool) {
        if self.raw_ip.len() <= h.0 {
            self.raw_ip.resize(h.0 + 1, false);
        }
        self.raw_ip[h.0] = raw;
    }

    /// Whether outbound SA `h` goes over raw IP beside a UDP carrier.
    pub fn raw_ip(&self, h: SaHandle) -> bool {
        self.raw_ip.get(h.0).copied().unwrap_or(false)
    }

    /// Where the packets of outbound SA `h` go; `None`: the default peer.
    pub fn endpoint(&self, h: SaHandle) -> Option<SocketAddr> {
        self.endpoints.get(h.0).copied().flatten()
    }

    /// The SA's key → handle table.
    pub fn handle(&self, k: &OutKey) -> Option<SaHandle> {
        self.handles.get(k).copied()
    }

    fn link(&mut self, id: PolicyId, spec: &PolicySpec) {
        if let PolicyAction::Protect(keys) = &spec.action {
            for k in keys {
                let v = self.users.entry(*k).or_default();
                if !v.contains(&id) {
                    v.push(id);
                }
            }
        }
    }

    fn resolve(&self, spec: &PolicySpec) -> SpdEntry {
        let action = match &spec.action {
            PolicyAction::Bypass => Action::Bypass,
            PolicyAction::Discard => Action::Discard,
            PolicyAction::Protect(keys) => {
                let hs: Option<Vec<usize>> =
                    keys.iter().map(|k| self.handles.get(k).map(|h| h.0)).collect();
                // One SA missing: the whole bundle is (fail closed, acquire).
                Action::Protect(hs.unwrap_or_default())
            }
        };
        SpdEntry { selector: spec.selector.clone(), action }
    }

    /// Resolves again every policy that names `k` (an SA came or went).
    fn refresh(&mut self, e: &mut Engine, k: &OutKey) -> Result<(), String> {
        for id in self.users.get(k).cloned().unwrap_or_default() {
            if let Some(spec) = self.policies.get(&id) {
                e.set_policy(id, spec.priority, self.resolve(spec)).map_err(|x| x.to_string())?;
            }
        }
        Ok(())
    }

    /// Applies an update that concerns the outbound half; `default_peer` moves with a NAT
    /// rebinding too. Others are ignored.
    pub fn apply(
        &mut self,
        e: &mut Engine,
        u: Update,
        default_peer: &mut Option<SocketAddr>,
    ) -> Result<(), String> {
        match u {
            Update::AddOutbound { key, sa, endpoint, raw_ip } => {
                if let Some(old) = self.handles.remove(&key) {
                    e.remove_outbound(old);
                }
                let h = e.insert_outbound(*sa);
                self.handles.insert(key, h);
                self.set_endpoint(h, endpoint);
                self.set_raw_ip(h, raw_ip);
                self.refresh(e, &key)
            }
            Update::DelOutbound { key } => {
                let h = self.handles.remove(&key).ok_or("no such outbound SA")?;
                self.refresh(e, &key)?;
                e.remove_outbound(h);
                Ok(())
            }
            Update::SetPolicy { id, spec } => {
                if let Some(old) = self.policies.remove(&id) {
                    if let PolicyAction::Protect(keys) = &old.action {
                        keys.iter().for_each(|k| unlink(&mut self.users, k, id));
                    }
                }
                e.set_policy(id, spec.priority, self.resolve(&spec)).map_err(|x| x.to_string())?;
                self.link(id, &spec);
                self.policies.insert(id, spec);
                Ok(())
            }
            Update::DelPolicy { id } => {
                if let Some(PolicyAction::Protect(keys)) =
                    self.policies.remove(&id).map(|p| p.action)
                {
                    keys.iter().for_each(|k| unlink(&mut self.users, k, id));
                }
                e.remove_policy(id).map_err(|x| x.to_string())
            }
            Update::SetEndpoint { key, endpoint } => {
                let h = *self.handles.get(&key).ok_or("no such outbound SA")?;
                self.set_endpoint(h, Some(endpoint));
                Ok(())
            }
            Update::MoveEndpoint { from, to } => {
                for ep in self.endpoints.iter_mut().filter(|ep| **ep == Some(from)) {
                    *ep = Some(to);
                }
                if *default_peer == Some(from) {
                    *default_peer = Some(to);
                }
                Ok(())
            }
            Update::AddInbound { .. } | Update::DelInbound { .. } => Ok(()),
        }
    }
}

impl InTables {
    /// Tables for an engine built from the config, with its SAs' header addresses.
    pub fn from_engine(e: &Engine, peers: HashMap<InKey, InboundPeer>) -> InTables {
        let mut t = InTables { peers, ..InTables::default() };
        let keys: HashMap<usize, InKey> = e
            .inbound_entries()
            .map(|(h, sa)| (h.0, (sa.spi().0, sa.protocol().number())))
            .collect();
        for (id, priority, entry) in e.inbound_policies().iter() {
            let (action, in_sas) = match &entry.action {
                Action::Bypass => (PolicyAction::Bypass, vec![]),
                Action::Discard => (PolicyAction::Discard, vec![]),
                Action::Protect(hs) => (
                    PolicyAction::Protect(vec![]),
                    hs.iter().filter_map(|h| keys.get(h).copied()).collect(),
                ),
            };
            // Stored as the control plane gives it: outbound selectors.
            let spec = PolicySpec { selector: mirrored(&entry.selector), action, in_sas, priority };
            t.link(id, &spec);
            t.policies.insert(id, spec);
        }
        t
    }

    fn link(&mut self, id: PolicyId, spec: &PolicySpec) {
        for k in &spec.in_sas {
            let v = self.users.entry(*k).or_default();
            if !v.contains(&id) {
                v.push(id);
            }
        }
    }

    fn resolve(&self, e: &Engine, spec: &PolicySpec) -> SpdEntry {
        let action = match &spec.action {
            PolicyAction::Bypass => Action::Bypass,
            PolicyAction::Discard => Action::Discard,
            PolicyAction::Protect(_) if spec.in_sas.is_empty() => Action::Protect(vec![]),
            PolicyAction::Protect(_) => {
                let hs: Vec<usize> = spec
                    .in_sas
                    .iter()
                    .filter_map(|k| e.inbound_handle(ipsec::Spi(k.0), k.1).map(|h| h.0))
                    .collect();
                // None of its SAs is installed: nothing may arrive for it.
                if hs.is_empty() { Action::Discard } else { Action::Protect(hs) }
            }
        };
        SpdEntry { selector: mirrored(&spec.selector), action }
    }

    fn refresh(&mut self, e: &mut Engine, k: &InKey) -> Result<(), String> {
        for id in self.users.get(k).cloned().unwrap_or_default() {
            if let Some(spec) = self.policies.get(&id) {
                let entry = self.resolve(e, spec);
                e.set_inbound_policy(id, spec.priority, entry).map_err(|x| x.to_string())?;
            }
        }
        Ok(())
    }

    /// Applies an update that concerns the inbound half; others are ignored.
    pub fn apply(&mut self, e: &mut Engine, u: Update) -> Result<(), String> {
        match u {
            Update::AddInbound { sa, peer } => {
                let key = (sa.spi().0, sa.protocol().number());
                e.remove_inbound(sa.spi(), key.1);
                e.insert_inbound(*sa).map_err(|x| x.to_string())?;
                self.peers.insert(key, peer);
                self.refresh(e, &key)
            }
            Update::DelInbound { key } => {
                e.remove_inbound(ipsec::Spi(key.0), key.1).ok_or("no such inbound SA")?;
                self.peers.remove(&key);
                self.refresh(e, &key)
            }
            Update::SetPolicy { id, spec } => {
                if let Some(old) = self.policies.remove(&id) {
                    old.in_sas.iter().for_each(|k| unlink(&mut self.users, k, id));
                }
                let entry = self.resolve(e, &spec);
                e.set_inbound_policy(id, spec.priority, entry).map_err(|x| x.to_string())?;
                self.link(id, &spec);
                self.policies.insert(id, spec);
                Ok(())
            }
            Update::DelPolicy { id } => {
                if let Some(old) = self.policies.remove(&id) {
                    old.in_sas.iter().for_each(|k| unlink(&mut self.users, k, id));
                    // Protect-less policies may have had no inbound entry; both are fine.
                    let _ = e.remove_inbound_policy(id);
                }
                Ok(())
            }
            Update::MoveEndpoint { from, to } => {
                for p in self.peers.values_mut().filter(|p| p.endpoint == Some(from)) {
                    p.endpoint = Some(to);
                }
                Ok(())
            }
            Update::SetEndpoint { .. } => Ok(()),
            Update::AddOutbound { .. } | Update::DelOutbound { .. } => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "tables_tests.rs"]
mod tests;
