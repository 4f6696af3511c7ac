//! The tables of [`Engine`] and the calls that change them while traffic flows: SAs installed
//! and removed (the SAD by SPI and protocol, outbound SAs by handle, slots reused only once no
//! policy names them), and the outbound and inbound SPDs (RFC 4301 §4.4). The control plane
//! (`node::keying`) makes these calls between batches; the per-packet paths are in
//! `engine.rs` and `engine_batch.rs`.

use super::{Engine, EngineError, SaHandle};
use crate::admitted::{Tail, generation_wraps};
use crate::sa::{SaParams, SecurityAssociation};
use crate::sad::{SadEntry, sad_key};
use crate::spd::{Action, SpdEntry};
use crate::spd_table::{PolicyId, SpdTable};
use crate::types::{Spi, Time, put_in_slot};

impl Engine {
    /// Installs an outbound SA.
    pub fn add_outbound(&mut self, p: &SaParams, now: Time) -> Result<SaHandle, EngineError> {
        let sa = SecurityAssociation::new(p, self.provider, now)?;
        Ok(self.insert_outbound(sa))
    }

    /// Installs an outbound SA built elsewhere (by the control plane, off the data path): the
    /// engine only files it. Reuses the slot of a removed SA that no policy names any more.
    pub fn insert_outbound(&mut self, sa: SecurityAssociation) -> SaHandle {
        let slot = take_free(&mut self.free_out, &self.outbound, &self.spd);
        SaHandle(put_in_slot(&mut self.outbound, slot, sa))
    }

    /// Removes an outbound SA; policies that name it then drop with `no_sa` (fail closed) and
    /// raise an acquire.
    pub fn remove_outbound(&mut self, h: SaHandle) -> Option<SecurityAssociation> {
        let sa = self.outbound.get_mut(h.0).and_then(Option::take)?;
        self.free_out.push(h.0);
        Some(sa)
    }

    /// Installs an inbound SA, keyed by SPI and protocol.
    pub fn add_inbound(&mut self, p: &SaParams, now: Time) -> Result<SaHandle, EngineError> {
        let key = sad_key(p.spi.0, p.protocol.number());
        if self.sad.contains_key(&key) {
            return Err(EngineError::DuplicateSpi { spi: p.spi, proto: p.protocol.name() });
        }
        let sa = SecurityAssociation::new(p, self.provider, now)?;
        self.insert_inbound(sa)
    }

    /// Installs an inbound SA built elsewhere; refuses an SPI and protocol already in the SAD.
    pub fn insert_inbound(&mut self, mut sa: SecurityAssociation) -> Result<SaHandle, EngineError> {
        let key = sad_key(sa.spi.0, sa.protocol.number());
        if self.sad.contains_key(&key) {
            return Err(EngineError::DuplicateSpi { spi: sa.spi, proto: sa.protocol.name() });
        }
        let slot = take_free(&mut self.free_in, &self.inbound, &self.spd_in);
        // Worked out once, when the SA was built (`SecurityAssociation::key_lines`).
        let (key_at, key_lines, sa_lines) = (sa.tail.key_at(), sa.key_nlines, sa.open_lines());
        // From here on line 1's tail is opening's: no flow admitted yet.
        sa.tail = Tail::opening();
        let idx = put_in_slot(&mut self.inbound, slot, sa);
        let Ok(idx32) = u32::try_from(idx) else {
            // Not reachable with memory as it is (4 G SAs of 512 bytes), but never truncated.
            self.inbound[idx] = None;
            self.free_in.push(idx);
            return Err(EngineError::TooManySas);
        };
        self.sad.insert(key, SadEntry { idx: idx32, key_lines, sa_lines, key_at });
        Ok(SaHandle(idx))
    }

    /// Removes an inbound SA, found as [`Engine::inbound_handle`] finds it: by SPI and protocol
    /// number (50 ESP, 51 AH).
    pub fn remove_inbound(&mut self, spi: Spi, protocol: u8) -> Option<SecurityAssociation> {
        let idx = self.sad.remove(&sad_key(spi.0, protocol))?.idx as usize;
        self.last_in = None;
        let sa = self.inbound.get_mut(idx).and_then(Option::take)?;
        self.free_in.push(idx);
        Some(sa)
    }

    /// The handle of the inbound SA with this SPI and protocol number.
    pub fn inbound_handle(&self, spi: Spi, protocol: u8) -> Option<SaHandle> {
        self.sad.get(&sad_key(spi.0, protocol)).map(|e| SaHandle(e.idx as usize))
    }

    /// An inbound SA by handle.
    pub fn inbound_sa(&self, h: SaHandle) -> Option<&SecurityAssociation> {
        self.inbound.get(h.0).and_then(Option::as_ref)
    }

    /// An outbound SA by handle.
    pub fn outbound_sa(&self, h: SaHandle) -> Option<&SecurityAssociation> {
        self.outbound.get(h.0).and_then(Option::as_ref)
    }

    /// Outbound SAs (removed ones are `None`).
    pub fn outbound_sas(&self) -> impl Iterator<Item = &SecurityAssociation> {
        self.outbound.iter().flatten()
    }

    /// An outbound SA, mutably (for tools that set its first sequence number).
    pub fn outbound_sa_mut(&mut self, h: SaHandle) -> Option<&mut SecurityAssociation> {
        self.outbound.get_mut(h.0).and_then(Option::as_mut)
    }

    /// Outbound SAs with their handles.
    pub fn outbound_entries(&self) -> impl Iterator<Item = (SaHandle, &SecurityAssociation)> {
        self.outbound.iter().enumerate().filter_map(|(i, s)| Some((SaHandle(i), s.as_ref()?)))
    }

    /// Inbound SAs with their handles.
    pub fn inbound_entries(&self) -> impl Iterator<Item = (SaHandle, &SecurityAssociation)> {
        self.inbound.iter().enumerate().filter_map(|(i, s)| Some((SaHandle(i), s.as_ref()?)))
    }

    /// Inbound SAs.
    pub fn inbound_sas(&self) -> impl Iterator<Item = &SecurityAssociation> {
        self.inbound.iter().flatten()
    }

    /// Appends an SPD entry (first match wins).
    pub fn add_policy(&mut self, e: SpdEntry) -> Result<(), EngineError> {
        append(&mut self.spd, self.outbound.len(), e)
    }

    /// Installs or replaces SPD entry `id` (see [`SpdTable::set`]: a replacement at the same
    /// priority keeps its place, so repointing a policy to a new SA is one step). A `Protect`
    /// with no SA, or naming a removed one, is allowed: its packets are dropped as `no_sa` and
    /// raise [`SaEvent::Acquire`](crate::lifetime::SaEvent::Acquire) (fail closed). Handles
    /// must have been issued.
    pub fn set_policy(
        &mut self,
        id: PolicyId,
        priority: u32,
        e: SpdEntry,
    ) -> Result<(), EngineError> {
        set(&mut self.spd, self.outbound.len(), id, priority, e)
    }

    /// Removes SPD entry `id`.
    pub fn remove_policy(&mut self, id: PolicyId) -> Result<(), EngineError> {
        self.spd.remove(id).map(|_| ()).ok_or(EngineError::NotFound("policy"))
    }

    /// The outbound SPD.
    pub fn policies(&self) -> &SpdTable {
        &self.spd
    }

    /// The inbound SPD.
    pub fn inbound_policies(&self) -> &SpdTable {
        &self.spd_in
    }

    /// Appends an inbound SPD entry (first match wins). `Protect` names the inbound SAs (handles
    /// from [`Engine::add_inbound`]) that may carry matching traffic; `Bypass` admits matching
    /// cleartext; `Discard` drops it. Once any entry exists, every decapsulated packet must match
    /// a `Protect` entry naming its outermost SA.
    pub fn add_inbound_policy(&mut self, e: SpdEntry) -> Result<(), EngineError> {
        let issued = self.inbound.len();
        self.change_spd_in(|spd| append(spd, issued, e))
    }

    /// Installs or replaces inbound SPD entry `id`. A `Protect` with an empty list admits
    /// traffic from any inbound SA (SAs installed later included).
    pub fn set_inbound_policy(
        &mut self,
        id: PolicyId,
        priority: u32,
        e: SpdEntry,
    ) -> Result<(), EngineError> {
        let issued = self.inbound.len();
        self.change_spd_in(|spd| set(spd, issued, id, priority, e))
    }

    /// Removes inbound SPD entry `id`.
    pub fn remove_inbound_policy(&mut self, id: PolicyId) -> Result<(), EngineError> {
        self.change_spd_in(|spd| spd.remove(id).map(|_| ()).ok_or(EngineError::NotFound("policy")))
    }

    /// Every change of the inbound SPD goes through here. An IPv4 memo keeps only the
    /// generation's low 16 bits (`admitted::memo_v4`), so when they come round (a change
    /// may count more than one) every memo is forgotten: one pass over the inbound SAs per
    /// 65,536 changes, not one per change.
    fn change_spd_in<R>(&mut self, change: impl FnOnce(&mut SpdTable) -> R) -> R {
        let before = self.spd_in.generation();
        let r = change(&mut self.spd_in);
        if generation_wraps(before, self.spd_in.generation()) {
            for sa in self.inbound.iter_mut().flatten() {
                sa.tail = Tail::opening();
            }
        }
        r
    }
}

/// Appends to `spd` under a fresh id; a `Protect` needs at least one SA, each handle issued
/// (`issued` of them).
fn append(spd: &mut SpdTable, issued: usize, e: SpdEntry) -> Result<(), EngineError> {
    if matches!(&e.action, Action::Protect(hs) if hs.is_empty()) {
        return Err(EngineError::EmptyBundle);
    }
    check_handles(&e, issued)?;
    spd.push(e);
    Ok(())
}

/// Installs or replaces entry `id` of `spd`; its handles must have been issued.
fn set(
    spd: &mut SpdTable,
    issued: usize,
    id: PolicyId,
    priority: u32,
    e: SpdEntry,
) -> Result<(), EngineError> {
    check_handles(&e, issued)?;
    spd.set(id, priority, e);
    Ok(())
}

/// Refuses a `Protect` naming a handle that was never issued.
fn check_handles(e: &SpdEntry, issued: usize) -> Result<(), EngineError> {
    match &e.action {
        Action::Protect(hs) => match hs.iter().find(|&&h| h >= issued) {
            Some(&bad) => Err(EngineError::UnknownSa(bad)),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// A slot of a removed SA that no policy names (a policy naming a removed SA must keep
/// dropping, not start using whatever SA takes the slot next).
fn take_free(
    free: &mut Vec<usize>,
    slots: &[Option<SecurityAssociation>],
    spd: &SpdTable,
) -> Option<usize> {
    let pos =
        free.iter().rposition(|&i| slots.get(i).is_some_and(Option::is_none) && !spd.names(i))?;
    Some(free.swap_remove(pos))
}
