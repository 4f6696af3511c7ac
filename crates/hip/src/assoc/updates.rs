//! UPDATE on an ESTABLISHED association (RFC 7401 §6.11–§6.12): rekeying the ESP pair from
//! KEYMAT (RFC 7402 §6.8–§6.10, the steps in `crate::rekey`) and mobility (RFC 8046 §3.2.1,
//! the steps in `crate::update`), each UPDATE that carries a SEQ resent until acknowledged.
//!
//! Rekey, make-before-break: the answering host installs its new pair before its answer names
//! it and switches outbound on the acknowledgement (or on the first ESP packet on the new
//! inbound SA, should the acknowledgement be lost); the host that offered installs and
//! switches on the answer, which shows the peer's new inbound SA is in. Each removes its old
//! pair after switching (the driver keeps the old inbound SA for a grace period). When both
//! offer at once, the offer of the host with the greater HIT goes on and the other host
//! answers it (after HIP's own rule for crossing I2s, §4.4.2).

use super::association::{Association, Ctx, Ended, State, Up, copy_keys, not_now};
use super::schedule::Resend;
use super::{CommandError, DownReason, Event};
use crate::error::Error;
use crate::esp::EspKeys;
use crate::update::UpdateIn;
use std::net::IpAddr;
use wire::Time;

/// A rekey under way on one side.
pub(crate) enum Rekey {
    /// We offered (update ID `seq`) to receive on `spi_in`.
    Offered { seq: u32, spi_in: u32, resend: Resend },
    /// We answered (update ID `seq`): the new pair is installed; outbound waits for the ACK.
    Answered { seq: u32, keys: Box<EspKeys>, index: usize, resend: Resend },
}

impl Rekey {
    /// Where it stands, for status.
    pub(crate) fn step(&self) -> &'static str {
        match self {
            Rekey::Offered { .. } => "offered",
            Rekey::Answered { .. } => "answered",
        }
    }

    pub(crate) fn resend(&self) -> &Resend {
        match self {
            Rekey::Offered { resend, .. } | Rekey::Answered { resend, .. } => resend,
        }
    }
}

/// A peer's announced locator being checked with a signed echo (RFC 7401 §5.4 / RFC 8046
/// §3.2.1: a locator is used only once the peer answered there).
pub(crate) struct Check {
    pub(crate) locator: IpAddr,
    pub(crate) nonce: Vec<u8>,
    pub(crate) seq: u32,
    pub(crate) resend: Resend,
}

fn local(e: Error) -> CommandError {
    CommandError::Local(e.to_string())
}

impl Association {
    fn established(&mut self) -> Option<&mut Up> {
        match &mut self.state {
            State::Established(up) => Some(up),
            _ => None,
        }
    }

    /// Offers new ESP SAs from KEYMAT (RFC 7402 §6.8).
    pub(crate) fn rekey(&mut self, ctx: &mut Ctx<'_>, now: Time) -> Result<(), CommandError> {
        let (peer, to) = (self.peer, self.locator);
        let up = self.established().ok_or(CommandError::NotEstablished(peer))?;
        if up.rekey.is_some() {
            return Err(CommandError::RekeyPending(peer));
        }
        if !crate::rekey::keys_left(&up.est, up.est.next_keymat_index) {
            return Err(CommandError::KeymatExhausted(peer));
        }
        let spi_in = fresh_spi(ctx, up).map_err(local)?;
        let seq = ctx.seq();
        let bytes =
            crate::rekey::offer(ctx.host, &up.est, seq, spi_in, ctx.local, to).map_err(local)?;
        ctx.send(to, bytes.clone());
        let resend = Resend::new(now, bytes, &ctx.timers.retransmit);
        up.rekey = Some(Rekey::Offered { seq, spi_in, resend });
        Ok(())
    }

    /// Our locator changed to `new` (we are already at it): tell the peer (RFC 8046 §3.2.1).
    pub(crate) fn announce(&mut self, ctx: &mut Ctx<'_>, now: Time, new: IpAddr) {
        let to = self.locator;
        // In R2-SENT too: the Initiator is ESTABLISHED and must hear of it (the resends start
        // once R2-SENT is over).
        let (State::Established(up) | State::R2Sent { up, .. }) = &mut self.state else {
            return;
        };
        let seq = ctx.seq();
        if let Ok(b) = crate::update::announce(ctx.host, &up.est, seq, new, new, to) {
            ctx.send(to, b.clone());
            up.announce = Some((seq, Resend::new(now, b, &ctx.timers.retransmit)));
        }
    }

    /// ESP arrived on inbound SPI `spi` of this association.
    pub(crate) fn esp_received(&mut self, ctx: &mut Ctx<'_>, spi: u32) {
        if let State::R2Sent { up, .. } = &self.state {
            if up.pairs.iter().any(|p| p.0 == spi) {
                self.confirm(ctx);
            }
        }
        let peer = self.peer;
        let Some(up) = self.established() else { return };
        if let Some(Rekey::Answered { keys, .. }) = &up.rekey {
            if keys.spi_in == spi {
                // The peer sends on the new pair: it has our answer, its ACK was lost.
                finish_answered(ctx, up, peer);
            }
        }
    }

    /// An UPDATE on an ESTABLISHED association (or one in R2-SENT, which it moves on).
    pub(crate) fn on_update(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: Time,
        from: IpAddr,
        bytes: &[u8],
    ) -> Result<Ended, Error> {
        let u = match &self.state {
            State::Established(up) | State::R2Sent { up, .. } => {
                crate::update::read(&up.est, bytes, from, ctx.local)?
            }
            _ => return Err(not_now("UPDATE")),
        };
        // RFC 7401 §4.4 R2-SENT, paraphrased (text not reachable): a processed UPDATE moves
        // to ESTABLISHED: the Initiator has R2.
        self.confirm(ctx);
        let (peer, to) = (self.peer, self.locator);
        let up = self.established().ok_or_else(|| not_now("UPDATE"))?;
        if let Some(info) = u.esp_info.filter(crate::rekey::is_rekey) {
            on_rekey(ctx, now, up, peer, to, &u, &info)?;
        } else if let (Some(Rekey::Answered { seq, .. }), None) = (&up.rekey, &u.esp_info) {
            if u.acks.contains(seq) {
                finish_answered(ctx, up, peer);
            }
        }
        // Mobility (RFC 8046 §3.2.1).
        if up.announce.as_ref().is_some_and(|(s, _)| u.acks.contains(s)) {
            up.announce = None;
        }
        let moved = u
            .locators
            .first()
            .copied()
            .filter(|_| u.esp_info.is_some_and(|i| !crate::rekey::is_rekey(&i)));
        if let (Some(new), Some(seq)) = (moved, u.seq) {
            let nonce = ctx.nonce()?;
            let me = ctx.seq();
            let b = crate::update::acknowledge_and_check(
                ctx.host, &up.est, seq, me, &nonce, ctx.local, new,
            )?;
            ctx.send(new, b.clone());
            let resend = Resend::new(now, b, &ctx.timers.retransmit);
            up.check = Some(Check { locator: new, nonce, seq: me, resend });
        }
        if let Some(echo) = &u.echo_request {
            let b = crate::update::echo_back(
                ctx.host,
                &up.est,
                u.seq.unwrap_or(0),
                echo,
                ctx.local,
                from,
            )?;
            ctx.send(from, b);
        }
        // RFC 7401 §6.12.1, paraphrased (text not reachable): the SEQ of a received UPDATE is
        // acknowledged by an UPDATE carrying it in ACK. The rekey, move and echo paths above
        // answer with an ACK of their own; an UPDATE asking for nothing else (cutehip sends
        // SEQ alone) gets a bare ACK, again each time it is repeated.
        let rekey = u.esp_info.is_some_and(|i| crate::rekey::is_rekey(&i));
        if let (false, None, None, Some(seq)) = (rekey, moved, &u.echo_request, u.seq) {
            let b = crate::rekey::acknowledge(ctx.host, &up.est, seq, ctx.local, to)?;
            ctx.send(to, b);
        }
        let verified = match (&u.echo_response, &up.check) {
            (Some(r), Some(c)) if u.acks.contains(&c.seq) => {
                crypto::provider::constant_time_eq(r, &c.nonce).then_some(c.locator)
            }
            _ => None,
        };
        if let Some(new) = verified {
            up.check = None;
            self.locator = new;
            ctx.events.push_back(Event::PeerMoved { peer, locator: new });
        }
        Ok(Ended::No)
    }

    /// UPDATE resends on an ESTABLISHED association; an UPDATE of ours that the peer never
    /// acknowledged means the peer is gone.
    pub(crate) fn update_timers(&mut self, ctx: &mut Ctx<'_>, now: Time) -> Ended {
        let (b, tries, to) = (ctx.timers.retransmit, ctx.timers.tries, self.locator);
        let Some(up) = self.established() else { return Ended::No };
        let mut lost = false;
        if let Some(r) = &mut up.rekey {
            let resend = match r {
                Rekey::Offered { resend, .. } | Rekey::Answered { resend, .. } => resend,
            };
            if resend.at <= now {
                match resend.fire(now, &b, tries) {
                    Some(p) => {
                        let p = p.to_vec();
                        ctx.resend(to, &p);
                    }
                    None => lost = true,
                }
            }
        }
        if let Some((_, r)) = &mut up.announce {
            if r.at <= now {
                match r.fire(now, &b, tries) {
                    Some(p) => {
                        let p = p.to_vec();
                        ctx.resend(to, &p);
                    }
                    None => lost = true,
                }
            }
        }
        if let Some(c) = &mut up.check {
            if c.resend.at <= now {
                match c.resend.fire(now, &b, tries) {
                    Some(p) => {
                        let (p, at) = (p.to_vec(), c.locator);
                        ctx.resend(at, &p);
                    }
                    // The new locator never answered: it is not used (the peer may still
                    // reach us from it; its UPDATEs are authenticated anyway).
                    None => up.check = None,
                }
            }
        }
        if lost {
            ctx.stats.rekeys_failed += u64::from(up.rekey.is_some());
            return self.down(ctx, DownReason::PeerLost);
        }
        Ended::No
    }
}

fn fresh_spi(ctx: &Ctx<'_>, up: &Up) -> Result<u32, Error> {
    loop {
        let spi = crypto::random_spi(ctx.provider)?;
        if !up.pairs.iter().any(|p| p.0 == spi) {
            return Ok(spi);
        }
    }
}

/// The rekey part of an UPDATE whose ESP_INFO asks for new SAs.
fn on_rekey(
    ctx: &mut Ctx<'_>,
    now: Time,
    up: &mut Up,
    peer: crate::HostIdentityTag,
    to: IpAddr,
    u: &UpdateIn,
    info: &wire::hip::EspInfo,
) -> Result<(), Error> {
    let est = &up.est;
    match &up.rekey {
        // The answer to our offer: the peer's new inbound SA is in. Ours in, outbound to
        // the new pair, the old pair out, then the ACK.
        Some(Rekey::Offered { seq, spi_in, .. }) if u.acks.contains(seq) => {
            let index = usize::from(info.keymat_index);
            if index < est.next_keymat_index {
                return Err(Error::Peer(format!(
                    "KEYMAT index {index} is behind ours ({})",
                    est.next_keymat_index
                )));
            }
            let useq = u.seq.ok_or_else(|| Error::Peer("a rekey answer without SEQ".into()))?;
            let keys = crate::rekey::keys(est, index, *spi_in, info.new_spi)?;
            let ack = crate::rekey::acknowledge(ctx.host, est, useq, ctx.local, to)?;
            let old = est.esp.spi_in;
            crate::rekey::adopt(&mut up.est, keys, index);
            up.rekey = None;
            up.install(ctx, peer, to);
            up.switch(ctx, peer);
            up.remove(ctx, peer, old);
            ctx.events.push_back(Event::Rekeyed {
                peer,
                old_spi_in: old,
                spi_in: up.est.esp.spi_in,
            });
            ctx.stats.rekeys += 1;
            ctx.send(to, ack);
            Ok(())
        }
        // Both offered at once and ours wins (greater HIT): theirs waits for our offer's
        // answer, which they will send.
        Some(Rekey::Offered { .. }) if u.acks.is_empty() && est.local_hit.0 > peer.0 => Ok(()),
        // A repeated offer (our answer was lost): the same answer again.
        Some(Rekey::Answered { resend, .. }) if u.acks.is_empty() => {
            let b = resend.bytes.clone();
            ctx.resend(to, &b);
            Ok(())
        }
        // A new offer (ours, if any, loses): our new pair in first, then the answer.
        None | Some(Rekey::Offered { .. }) if u.acks.is_empty() => {
            if info.old_spi != est.esp.spi_out {
                // A repeated answer to a rekey we finished (our ACK was lost) would carry
                // ACKs; this is an offer naming a pair we do not send on.
                return Err(Error::Peer(format!(
                    "ESP_INFO's old SPI {:08x} is not the peer's",
                    info.old_spi
                )));
            }
            let useq = u.seq.ok_or_else(|| Error::Peer("a rekey offer without SEQ".into()))?;
            let index = crate::rekey::agreed_index(est, info.keymat_index);
            let spi_in = fresh_spi(ctx, up)?;
            let keys = crate::rekey::keys(est, index, spi_in, info.new_spi)?;
            let seq = ctx.seq();
            let b = crate::rekey::answer(ctx.host, est, useq, seq, index, spi_in, ctx.local, to)?;
            up.pairs.push((keys.spi_in, keys.spi_out));
            let ev = Box::new(copy_keys(&keys));
            ctx.events.push_back(Event::InstallPair { peer, keys: ev, locator: to });
            ctx.send(to, b.clone());
            let resend = Resend::new(now, b, &ctx.timers.retransmit);
            up.rekey = Some(Rekey::Answered { seq, keys: Box::new(keys), index, resend });
            Ok(())
        }
        // A repeated answer after we switched (our ACK was lost): acknowledge again.
        None if info.new_spi == est.esp.spi_out => {
            let useq = u.seq.ok_or_else(|| Error::Peer("a rekey answer without SEQ".into()))?;
            let ack = crate::rekey::acknowledge(ctx.host, est, useq, ctx.local, to)?;
            ctx.send(to, ack);
            Ok(())
        }
        _ => Err(Error::Peer("a rekey UPDATE that matches no rekey".into())),
    }
}

/// The answering side's last step: outbound to the new pair, the old pair out.
fn finish_answered(ctx: &mut Ctx<'_>, up: &mut Up, peer: crate::HostIdentityTag) {
    let Some(Rekey::Answered { keys, index, .. }) = up.rekey.take() else { return };
    let old = up.est.esp.spi_in;
    crate::rekey::adopt(&mut up.est, *keys, index);
    up.switch(ctx, peer);
    up.remove(ctx, peer, old);
    ctx.events.push_back(Event::Rekeyed { peer, old_spi_in: old, spi_in: up.est.esp.spi_in });
    ctx.stats.rekeys += 1;
}
