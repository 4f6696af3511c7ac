//! Rekeying an association's ESP SA pair by UPDATE (RFC 7402 §6.8–§6.10; the sans-IO steps
//! are `hip::rekey`), make before break through the control plane:
//!
//! - `hipsec hip rekey HIT` (or the peer's UPDATE) starts it; the host that answers installs its
//!   new inbound SA beside the old one before its UPDATE names it;
//! - the host that started, on that answer, installs its new inbound SA and switches outbound
//!   to the new pair in one step (`ControlPlane::rekey`), then acknowledges;
//! - the answering host switches outbound on that acknowledgement. Each retires its old inbound
//!   SA after [`REKEY_GRACE`], so packets sealed before the peer switched still open.
//!
//! Lost UPDATEs: the first two are resent like the others (`RETRANSMIT_US`, `TRIES`), and a
//! repeated answer is acknowledged again.

use super::rekey_state::{Rekey, Step};
use super::{Assoc, HipDriver, RETRANSMIT_US, State, TRIES, Transmit, install, take_update_id};
use crate::keying::plane::{ControlPlane, in_key_of, out_key_of};
use crate::log::{Level, log_event};
use hip::HostIdentityTag;
use hip::esp::EspKeys;
use hip::update::UpdateIn;
use std::net::SocketAddr;
use std::time::Duration;

/// How long an old inbound SA outlives a rekey.
pub const REKEY_GRACE: Duration = Duration::from_secs(2);

impl HipDriver {
    /// `hipsec hip rekey HIT`: offers new SAs to an established peer.
    pub fn rekey(&mut self, peer: HostIdentityTag) -> Result<Vec<Transmit>, String> {
        let id = take_update_id(&mut self.next_update_id);
        let a = self.assocs.get_mut(&peer).ok_or_else(|| format!("no association with {peer}"))?;
        let State::Established { est, .. } = &a.state else {
            return Err(format!("the association with {peer} is not established"));
        };
        if a.rekey.is_some() {
            return Err(format!("a rekey with {peer} is already under way"));
        }
        let spi_in = hip::rekey::new_spi(est).map_err(|e| e.to_string())?;
        let bytes = hip::rekey::offer(&self.host, est, id, spi_in, a.local, a.locator)
            .map_err(|e| e.to_string())?;
        a.rekey = Some(Rekey {
            step: Step::Offered { seq: id, spi_in },
            bytes: bytes.clone(),
            resend_at_us: None,
            tries: 1,
        });
        log_event!(Level::Info, "hip-rekey-offered", "peer" => peer.to_string());
        Ok(vec![Transmit { to: a.locator, bytes }])
    }

    /// Resends unanswered rekey UPDATEs; gives up after [`TRIES`] (the old pair stays).
    pub(super) fn rekey_timers(&mut self, now_us: u64) -> Vec<Transmit> {
        let mut out = Vec::new();
        for (hit, a) in &mut self.assocs {
            let Some(r) = a.rekey.as_mut() else { continue };
            let at = *r.resend_at_us.get_or_insert(now_us + RETRANSMIT_US);
            if now_us < at {
                continue;
            }
            if r.tries >= TRIES {
                log_event!(Level::Warn, "hip-rekey-timeout", "peer" => hit.to_string());
                self.counters.rekey_failed += 1;
                a.rekey = None;
                continue;
            }
            r.tries += 1;
            r.resend_at_us = Some(now_us + (RETRANSMIT_US << (r.tries - 1).min(6)));
            out.push(Transmit { to: a.locator, bytes: r.bytes.clone() });
        }
        out
    }

    /// The rekey part of an authenticated UPDATE; `None` if it has none.
    pub(super) fn on_rekey_update(
        &mut self,
        plane: &mut ControlPlane,
        sender: HostIdentityTag,
        u: &UpdateIn,
    ) -> Option<Vec<Transmit>> {
        let port = self.esp_port;
        let a = self.assocs.get_mut(&sender)?;
        let info = u.esp_info.filter(hip::rekey::is_rekey);
        let r = match (a.rekey.take(), info) {
            // The peer offers: answer, with our new inbound SA in first.
            (None, Some(info)) if u.acks.is_empty() => {
                let id = take_update_id(&mut self.next_update_id);
                answer(&self.host, a, plane, port, id, &info, u)
            }
            // A repeated offer (our answer was lost): the same answer again.
            (Some(r @ Rekey { step: Step::Answered { .. }, .. }), Some(_)) if u.acks.is_empty() => {
                let again = vec![Transmit { to: a.locator, bytes: r.bytes.clone() }];
                a.rekey = Some(r);
                return Some(again);
            }
            // The answer to our offer: switch, acknowledge.
            (Some(Rekey { step: Step::Offered { seq, spi_in }, .. }), Some(info))
                if u.acks.contains(&seq) =>
            {
                conclude(&self.host, a, plane, port, spi_in, &info, u, sender)
            }
            // The acknowledgement of our answer: switch outbound.
            (Some(Rekey { step: Step::Answered { seq, keys, index }, .. }), None)
                if u.acks.contains(&seq) =>
            {
                switch(a, plane, port, *keys, index, sender)
            }
            // A repeated answer after we switched (our acknowledgement was lost).
            (None, Some(info)) => match (&a.state, u.seq) {
                (State::Established { est, .. }, Some(seq)) if info.new_spi == est.esp.spi_out => {
                    hip::rekey::acknowledge(&self.host, est, seq, a.local, a.locator)
                        .map(|b| Ok((vec![Transmit { to: a.locator, bytes: b }], false)))
                        .unwrap_or_else(|e| Err(e.to_string()))
                }
                _ => Err("a rekey UPDATE that matches no rekey".into()),
            },
            (pending, _) => {
                a.rekey = pending;
                return None;
            }
        };
        match r {
            Ok((out, done)) => {
                if done {
                    self.counters.rekeys += 1;
                }
                Some(out)
            }
            Err(e) => {
                self.counters.rekey_failed += 1;
                log_event!(Level::Warn, "hip-rekey-failed", "peer" => sender.to_string(), "why" => e);
                Some(Vec::new())
            }
        }
    }
}

type Step2 = Result<(Vec<Transmit>, bool), String>;

fn endpoint(a: &Assoc, port: u16) -> SocketAddr {
    SocketAddr::new(a.locator, port)
}

/// P: our new inbound SA beside the old one, then the answer.
fn answer(
    host: &hip::LocalHost,
    a: &mut Assoc,
    plane: &mut ControlPlane,
    port: u16,
    id: u32,
    info: &wire::hip::EspInfo,
    u: &UpdateIn,
) -> Step2 {
    let State::Established { est, in_key, .. } = &a.state else {
        return Err("not established".into());
    };
    if info.old_spi != est.esp.spi_out {
        return Err(format!("ESP_INFO's old SPI {:08x} is not the peer's", info.old_spi));
    }
    let seq = u.seq.ok_or("a rekey offer without SEQ")?;
    let index = hip::rekey::agreed_index(est, info.keymat_index);
    let spi_in = hip::rekey::new_spi(est).map_err(|e| e.to_string())?;
    let keys = hip::rekey::keys(est, index, spi_in, info.new_spi).map_err(|e| e.to_string())?;
    let (new_in, _) = install::pair(est, &keys, endpoint(a, port));
    plane.install_successor(*in_key, new_in).map_err(|e| e.to_string())?;
    let bytes = hip::rekey::answer(host, est, seq, id, index, spi_in, a.local, a.locator)
        .map_err(|e| e.to_string())?;
    a.rekey = Some(Rekey {
        step: Step::Answered { seq: id, keys: Box::new(keys), index },
        bytes: bytes.clone(),
        resend_at_us: None,
        tries: 1,
    });
    Ok((vec![Transmit { to: a.locator, bytes }], false))
}

/// R: the peer's new inbound SA is in; ours in and outbound switched in one step, then ACK.
#[allow(clippy::too_many_arguments, reason = "the association's parts")]
fn conclude(
    host: &hip::LocalHost,
    a: &mut Assoc,
    plane: &mut ControlPlane,
    port: u16,
    spi_in: u32,
    info: &wire::hip::EspInfo,
    u: &UpdateIn,
    peer: HostIdentityTag,
) -> Step2 {
    let ep = endpoint(a, port);
    let State::Established { est, in_key, out_key } = &mut a.state else {
        return Err("not established".into());
    };
    let index = usize::from(info.keymat_index);
    if index < est.next_keymat_index {
        return Err(format!("KEYMAT index {index} is behind ours ({})", est.next_keymat_index));
    }
    let seq = u.seq.ok_or("a rekey answer without SEQ")?;
    let keys = hip::rekey::keys(est, index, spi_in, info.new_spi).map_err(|e| e.to_string())?;
    let (new_in, new_out) = install::pair(est, &keys, ep);
    let (k_in, k_out) = (in_key_of(&new_in.params), out_key_of(&new_out.params));
    plane.rekey(*in_key, new_in, *out_key, new_out, REKEY_GRACE).map_err(|e| e.to_string())?;
    (*in_key, *out_key) = (k_in, k_out);
    hip::rekey::adopt(est, keys, index);
    rekeyed(peer, est, "offered");
    let bytes =
        hip::rekey::acknowledge(host, est, seq, a.local, a.locator).map_err(|e| e.to_string())?;
    Ok((vec![Transmit { to: a.locator, bytes }], true))
}

/// P: the acknowledgement came: outbound to the new pair, the old inbound retired later.
fn switch(
    a: &mut Assoc,
    plane: &mut ControlPlane,
    port: u16,
    keys: EspKeys,
    index: usize,
    peer: HostIdentityTag,
) -> Step2 {
    let ep = endpoint(a, port);
    let State::Established { est, in_key, out_key } = &mut a.state else {
        return Err("not established".into());
    };
    let (new_in, new_out) = install::pair(est, &keys, ep);
    let k_in = in_key_of(&new_in.params);
    let k_out = plane.switch_outbound(*out_key, new_out).map_err(|e| e.to_string())?;
    plane.retire_after(*in_key, REKEY_GRACE);
    (*in_key, *out_key) = (k_in, k_out);
    hip::rekey::adopt(est, keys, index);
    rekeyed(peer, est, "answered");
    Ok((Vec::new(), true))
}

/// The log line of a finished rekey; `side`: whether we "offered" or "answered" it.
fn rekeyed(peer: HostIdentityTag, est: &hip::bex::Established, side: &'static str) {
    log_event!(Level::Info, "hip-rekeyed", "peer" => peer.to_string(), "side" => side, "spi_in" => format!("{:08x}", est.esp.spi_in), "spi_out" => format!("{:08x}", est.esp.spi_out));
}

/// The rekey state of `status`.
pub(super) fn pending(a: &Assoc) -> Option<&'static str> {
    a.rekey.as_ref().map(Rekey::pending)
}
