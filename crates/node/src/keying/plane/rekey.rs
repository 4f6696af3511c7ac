//! Make-before-break (RFC 4301; DESIGN rule 4) as control-plane calls: a successor inbound SA
//! admitted beside the old one, outbound switched with its policies in one envelope, the old
//! inbound SA retired after a grace period, and [`ControlPlane::rekey`], all three in order.

use super::{ControlPlane, PlaneError, SaRecord, SaSpec, in_key_of, out_key_of, record};
use crate::datapath::mailbox::{InKey, InboundPeer, OutKey, PolicyAction, PolicySpec, Update};
use ipsec::{PolicyId, Spi};
use std::time::{Duration, Instant};

impl ControlPlane {
    /// Make-before-break, inbound half: installs `new` beside inbound SA `old` and adds it to
    /// every policy whose `in-sas` names `old`, in one envelope, so that traffic the peer seals
    /// with `new` passes the inbound policy check from its first packet.
    pub fn install_successor(&mut self, old: InKey, new: SaSpec) -> Result<(), PlaneError> {
        self.install_successor_with(old, new, None, Vec::new())
    }

    /// [`ControlPlane::install_successor`], and the new pair's outbound SA `out`, and policies
    /// `then` (e.g. repointed to `out`), all in the same envelope, applied in that order: one
    /// acknowledgement to wait for — a key manager's rekey is that much shorter.
    pub fn install_successor_with(
        &mut self,
        old: InKey,
        new: SaSpec,
        out: Option<SaSpec>,
        then: Vec<(PolicyId, PolicySpec)>,
    ) -> Result<(), PlaneError> {
        if !self.inbound.contains_key(&old) {
            return Err(PlaneError::field("succeeds", format!("no inbound SA {}", Spi(old.0))));
        }
        self.check_lane(&new, true, "")?;
        let key = in_key_of(&new.params);
        if self.inbound.contains_key(&key) {
            return Err(PlaneError::field(
                "spi",
                format!("an inbound SA {} exists", new.params.spi),
            ));
        }
        let sa = self.build(&new, "key")?;
        let endpoint = new.endpoint.or_else(|| self.inbound_endpoint(&new));
        let peer = InboundPeer { src: new.params.src, dst: new.params.dst, endpoint };
        let w = self.worker_for(new.lane, false)?;
        let mut per = self.empty();
        per[w].push(Update::AddInbound { sa, peer });
        // Policies `then` replaces take the new inbound SA too (they were made before it).
        let mut then = then;
        for (_, p) in &mut then {
            if p.in_sas.contains(&old) && !p.in_sas.contains(&key) {
                p.in_sas.push(key);
            }
        }
        let grown: Vec<(PolicyId, PolicySpec)> = self
            .policies
            .iter()
            .filter(|(id, p)| p.in_sas.contains(&old) && !then.iter().any(|(t, _)| t == *id))
            .map(|(id, p)| {
                let mut p = p.clone();
                p.in_sas.push(key);
                (*id, p)
            })
            .collect();
        Self::set_everywhere(&mut per, &grown);
        let mut out_rec = None;
        if let Some(o) = &out {
            self.check_lane(o, false, "out.")?;
            let okey = out_key_of(&o.params);
            if self.outbound.contains_key(&okey) {
                return Err(PlaneError::field("out.spi", "an outbound SA with this key exists"));
            }
            let workers = self.out_workers(o.lane)?;
            let sas = self.build_out(o, workers.len(), "out.key")?;
            let endpoint = o.endpoint.or_else(|| self.default_endpoint(&o.params, true));
            for (w, sa) in workers.into_iter().zip(sas) {
                per[w].push(Update::AddOutbound { key: okey, sa, endpoint, raw_ip: o.raw_ip });
            }
            out_rec = Some((okey, SaRecord { endpoint, ..record(o) }));
        }
        let new_out: Vec<OutKey> = out_rec.iter().map(|(k, _)| *k).collect();
        self.check_policies(&then, &new_out)?;
        Self::set_everywhere(&mut per, &then);
        self.send(per)?;
        self.policies.extend(then);
        self.inbound.insert(key, SaRecord { endpoint, ..record(&new) });
        self.policies.extend(grown);
        self.stats.installed += 1;
        if let Some((k, r)) = out_rec {
            self.outbound.insert(k, r);
            self.stats.installed += 1;
        }
        Ok(())
    }

    /// Make-before-break, outbound half: installs `new`, repoints every policy that names `old`
    /// to it and removes `old`, all in one envelope, so no packet finds neither SA.
    pub fn switch_outbound(&mut self, old: OutKey, new: SaSpec) -> Result<OutKey, PlaneError> {
        self.check_lane(&new, false, "new.")?;
        let r = self.outbound.get(&old).ok_or_else(|| {
            PlaneError::field("old.spi", format!("no outbound SA {}", Spi(old.spi)))
        })?;
        let key = out_key_of(&new.params);
        if key != old && self.outbound.contains_key(&key) {
            return Err(PlaneError::field("new.spi", "an outbound SA with this key exists"));
        }
        if (r.lane == super::EVERY_LANE) != (new.lane == super::EVERY_LANE) {
            return Err(PlaneError::field("new.lane", "a successor goes where its SA was"));
        }
        let workers = self.out_workers(r.lane)?;
        let sas = self.build_out(&new, workers.len(), "new.key")?;
        let endpoint =
            new.endpoint.or(r.endpoint).or_else(|| self.default_endpoint(&new.params, true));
        let mut repointed = Vec::new();
        for (id, p) in &self.policies {
            if let PolicyAction::Protect(keys) = &p.action {
                if keys.contains(&old) {
                    let keys = keys.iter().map(|k| if *k == old { key } else { *k }).collect();
                    repointed.push((
                        *id,
                        PolicySpec { action: PolicyAction::Protect(keys), ..p.clone() },
                    ));
                }
            }
        }
        let mut per = self.empty();
        for (w, sa) in workers.into_iter().zip(sas) {
            per[w].push(Update::AddOutbound { key, sa, endpoint, raw_ip: new.raw_ip });
            for (id, spec) in &repointed {
                per[w].push(Update::SetPolicy { id: *id, spec: spec.clone() });
            }
            if key != old {
                per[w].push(Update::DelOutbound { key: old });
            }
        }
        self.send(per)?;
        self.outbound.remove(&old);
        self.outbound.insert(key, SaRecord { endpoint, ..record(&new) });
        self.policies.extend(repointed);
        self.stats.installed += 1;
        self.stats.removed += u64::from(key != old);
        Ok(key)
    }

    /// Make-before-break rekey of one SA pair (RFC 4301; DESIGN rule 4): the new inbound SA is
    /// live first, then outbound switches (policies repointed at once), and the old inbound SA
    /// is retired after `grace` (packets the peer sealed with it before switching still open).
    pub fn rekey(
        &mut self,
        old_in: InKey,
        new_in: SaSpec,
        old_out: OutKey,
        new_out: SaSpec,
        grace: Duration,
    ) -> Result<(), PlaneError> {
        if !self.inbound.contains_key(&old_in) {
            return Err(PlaneError::field("old-in", format!("no inbound SA {}", Spi(old_in.0))));
        }
        if !self.outbound.contains_key(&old_out) {
            return Err(PlaneError::field(
                "old-out",
                format!("no outbound SA {}", Spi(old_out.spi)),
            ));
        }
        self.install_successor(old_in, new_in)?;
        self.switch_outbound(old_out, new_out)?;
        self.retire_after(old_in, grace);
        self.stats.rekeys += 1;
        Ok(())
    }

    /// Schedules the removal of inbound SA `k` after `grace` (at once if zero, at the next poll).
    pub fn retire_after(&mut self, k: InKey, grace: Duration) {
        self.retire.push((Instant::now() + grace, k));
    }
}
