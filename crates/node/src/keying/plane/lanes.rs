//! Outbound SAs on every lane at once, for key managers whose SAs come and go at run time
//! (IKEv2 CHILD SAs) on a node with several lanes. A lane seals what its TUN queue reads, and
//! the kernel spreads flows over the queues by hash, so any lane may need any CHILD SA. An SA
//! installed with `lane` = [`EVERY_LANE`] is built once per lane, each copy with its own key
//! schedule and usage counts, all taking their sequence numbers from one counter
//! (`SecurityAssociation::share_sequence`): no two packets carry the same number, and the
//! numbers reach the wire in about the order they were taken — each lane sends what it sealed
//! at once, a batch at a time, so two lanes' packets interleave by at most a batch, which the
//! peer's replay window (RFC 4303 §3.4.3; 32 or more packets by default in Linux and
//! strongSwan) absorbs. Policies naming such SAs are the same on every lane, so they may change
//! at run time too. Inbound SAs need none of this: the kernel hands each ESP packet to the lane
//! its SPI says (`crate::datapath::lanes`).

use super::{ControlPlane, PlaneError, SaSpec};
use crate::datapath::mailbox::{OutKey, PolicyAction, PolicySpec};
use ipsec::{PolicyId, SecurityAssociation};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// `SaSpec::lane` (and `SaRecord::lane`) of an outbound SA every lane holds a copy of.
pub const EVERY_LANE: usize = usize::MAX;

impl ControlPlane {
    /// The workers an outbound SA of `lane` lives on.
    pub(super) fn out_workers(&self, lane: usize) -> Result<Vec<usize>, PlaneError> {
        if lane != EVERY_LANE {
            return Ok(vec![self.worker_for(lane, true)?]);
        }
        Ok(self.workers.iter().enumerate().filter(|(_, w)| w.out).map(|(i, _)| i).collect())
    }

    /// Outbound SA `s` built for each of `n` workers: one SA, or on several lanes copies that
    /// share one sequence counter.
    // Boxed: each goes to its lane as the `Box` that `Update::AddOutbound` carries.
    #[allow(clippy::vec_box)]
    pub(super) fn build_out(
        &self,
        s: &SaSpec,
        n: usize,
        field: &str,
    ) -> Result<Vec<Box<SecurityAssociation>>, PlaneError> {
        if n <= 1 {
            return Ok(vec![self.build(s, field)?]);
        }
        let counter = Arc::new(AtomicU64::new(0));
        (0..n)
            .map(|_| {
                let mut sa = self.build(s, field)?;
                sa.share_sequence(Arc::clone(&counter));
                Ok(sa)
            })
            .collect()
    }

    /// Whether policies `ps` may change at run time: always with one lane; with several, only
    /// if every SA they protect with that exists is on every lane (`new`: keys of such SAs in
    /// the same request). A key no lane has yet is the same on every lane: it raises acquires.
    pub(super) fn check_policies(
        &self,
        ps: &[(PolicyId, PolicySpec)],
        new: &[OutKey],
    ) -> Result<(), PlaneError> {
        if self.lanes <= 1 {
            return Ok(());
        }
        for (id, p) in ps {
            let PolicyAction::Protect(keys) = &p.action else { continue };
            for k in keys {
                let on_one_lane =
                    self.outbound.get(k).is_some_and(|r| r.lane != EVERY_LANE) && !new.contains(k);
                if on_one_lane {
                    return Err(PlaneError::other(format!(
                        "policy {id}: with several lanes a policy changed at run time must \
                         protect with SAs on every lane; SA {} is on lane {} only",
                        ipsec::Spi(k.spi),
                        self.outbound.get(k).map_or(0, |r| r.lane)
                    )));
                }
            }
        }
        Ok(())
    }
}
