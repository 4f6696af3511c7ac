//! One HIP association and its states (RFC 7401 §4.4.2, §4.4.4): I1-SENT and I2-SENT hold the
//! exchange's typed states ([`I1Sent`], [`I2Sent`]) and their retransmission; R2-SENT,
//! ESTABLISHED and CLOSING hold the [`Up`] association (keys, pairs, UPDATEs under way);
//! CLOSED keeps just enough to answer a repeated CLOSE. UNASSOCIATED is no entry at all, and
//! E-FAILED is the entry's removal with [`DownReason::SetupTimedOut`] (a retry, if wanted, is a
//! new entry). UPDATE's handling is in `updates.rs`.

use super::endpoint::Stats;
use super::schedule::Resend;
use super::updates::{Check, Rekey};
use super::{DownReason, Event, Timers, Transmit};
use crate::bex::Established;
use crate::bex::initiator::{I1Sent, I2Sent};
use crate::error::Error;
use crate::esp::EspKeys;
use crate::hit::HostIdentityTag;
use crate::identity::LocalHost;
use crypto::Provider;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::time::Duration;
use wire::Time;
use wire::hip::PacketType;

/// What an association step needs of its endpoint: the host, the clock's settings, where
/// packets and events go.
pub(crate) struct Ctx<'a> {
    pub(crate) host: &'a LocalHost,
    pub(crate) provider: &'static dyn Provider,
    pub(crate) timers: &'a Timers,
    /// Our locator now.
    pub(crate) local: IpAddr,
    pub(crate) transmits: &'a mut VecDeque<Transmit>,
    pub(crate) events: &'a mut VecDeque<Event>,
    /// The next UPDATE ID (RFC 7401 §5.2.13: each new UPDATE that wants an acknowledgement
    /// carries a larger ID than the one before).
    pub(crate) next_seq: &'a mut u32,
    pub(crate) stats: &'a mut Stats,
    /// The puzzle search, when not the single-threaded one.
    pub(crate) solver: Option<crate::puzzle::Solver<'a>>,
}

impl Ctx<'_> {
    pub(crate) fn send(&mut self, to: IpAddr, payload: Vec<u8>) {
        self.transmits.push_back(Transmit { from: self.local, to, payload });
    }

    /// Sends a stored packet again, its checksum refilled for our locator now and `to` (either
    /// end may have moved since it was built).
    pub(crate) fn resend(&mut self, to: IpAddr, bytes: &[u8]) {
        let mut b = bytes.to_vec();
        if wire::hip::fill_checksum(self.local, to, &mut b).is_ok() {
            self.stats.retransmits += 1;
            self.send(to, b);
        }
    }

    pub(crate) fn seq(&mut self) -> u32 {
        let s = *self.next_seq;
        *self.next_seq = self.next_seq.wrapping_add(1);
        s
    }

    pub(crate) fn nonce(&self) -> Result<Vec<u8>, Error> {
        let mut n = vec![0u8; 16];
        self.provider.fill_random(&mut n)?;
        Ok(n)
    }

    /// The whole retransmission chain: how long a peer may keep resending one packet.
    pub(crate) fn chain(&self) -> Duration {
        (1..=self.timers.tries).map(|n| self.timers.retransmit.wait(n)).sum()
    }
}

/// A copy of an ESP pair's keys for an event (the association keeps its own).
pub(crate) fn copy_keys(k: &EspKeys) -> EspKeys {
    EspKeys {
        suite: k.suite,
        spi_in: k.spi_in,
        spi_out: k.spi_out,
        enc_in: k.enc_in.clone(),
        auth_in: k.auth_in.clone(),
        enc_out: k.enc_out.clone(),
        auth_out: k.auth_out.clone(),
    }
}

/// An association past the base exchange.
pub(crate) struct Up {
    pub(crate) est: Established,
    /// Pairs in the data path, (inbound SPI, outbound SPI).
    pub(crate) pairs: Vec<(u32, u32)>,
    /// The inbound SPI of the pair traffic is sent on.
    pub(crate) sending: Option<u32>,
    pub(crate) rekey: Option<Rekey>,
    /// Our LOCATOR_SET announcement and its update ID, until acknowledged.
    pub(crate) announce: Option<(u32, Resend)>,
    /// The peer's announced locator, being checked.
    pub(crate) check: Option<Check>,
    /// A Responder's (I2, R2): a repeated I2 gets the same R2 (§6.9).
    pub(crate) r2: Option<(Vec<u8>, Vec<u8>)>,
}

impl Up {
    pub(crate) fn new(est: Established) -> Up {
        Up {
            est,
            pairs: Vec::new(),
            sending: None,
            rekey: None,
            announce: None,
            check: None,
            r2: None,
        }
    }

    /// Installs the association's current keys as a pair.
    pub(crate) fn install(&mut self, ctx: &mut Ctx<'_>, peer: HostIdentityTag, locator: IpAddr) {
        let k = &self.est.esp;
        self.pairs.push((k.spi_in, k.spi_out));
        let keys = Box::new(copy_keys(k));
        ctx.events.push_back(Event::InstallPair { peer, keys, locator });
    }

    pub(crate) fn switch(&mut self, ctx: &mut Ctx<'_>, peer: HostIdentityTag) {
        let (spi_in, spi_out) = (self.est.esp.spi_in, self.est.esp.spi_out);
        self.sending = Some(spi_in);
        ctx.events.push_back(Event::SwitchOutbound { peer, spi_in, spi_out });
    }

    pub(crate) fn remove(&mut self, ctx: &mut Ctx<'_>, peer: HostIdentityTag, spi_in: u32) {
        if let Some(at) = self.pairs.iter().position(|p| p.0 == spi_in) {
            let (spi_in, spi_out) = self.pairs.remove(at);
            if self.sending == Some(spi_in) {
                self.sending = None;
            }
            ctx.events.push_back(Event::RemovePair { peer, spi_in, spi_out });
        }
    }

    /// Every pair out of the data path, the sending one last (until then the peer's traffic
    /// still has its SA).
    pub(crate) fn remove_all(&mut self, ctx: &mut Ctx<'_>, peer: HostIdentityTag) {
        let others: Vec<u32> =
            self.pairs.iter().map(|p| p.0).filter(|s| Some(*s) != self.sending).collect();
        for s in others {
            self.remove(ctx, peer, s);
        }
        if let Some(s) = self.sending {
            self.remove(ctx, peer, s);
        }
    }
}

/// The states of RFC 7401 §4.4.2 that hold something.
pub(crate) enum State {
    /// I1-SENT.
    I1Sent { st: Box<I1Sent>, resend: Resend },
    /// I2-SENT.
    I2Sent { st: Box<I2Sent>, resend: Resend },
    /// R2-SENT: our pair is in, outbound not switched until the Initiator shows it has R2.
    R2Sent { up: Box<Up>, until: Time },
    /// ESTABLISHED.
    Established(Box<Up>),
    /// CLOSING: our CLOSE with `nonce` is out.
    Closing { up: Box<Up>, nonce: Vec<u8>, resend: Resend },
    /// CLOSED: we acknowledged the peer's CLOSE; a repeated CLOSE is answered until `until`.
    Closed { up: Box<Up>, until: Time },
    /// Between two states within one step (never seen outside it).
    Moving,
}

impl State {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            State::I1Sent { .. } => "I1-SENT",
            State::I2Sent { .. } => "I2-SENT",
            State::R2Sent { .. } => "R2-SENT",
            State::Established(_) => "ESTABLISHED",
            State::Closing { .. } => "CLOSING",
            State::Closed { .. } => "CLOSED",
            State::Moving => "-",
        }
    }

    pub(crate) fn up(&self) -> Option<&Up> {
        match self {
            State::R2Sent { up, .. }
            | State::Established(up)
            | State::Closing { up, .. }
            | State::Closed { up, .. } => Some(up),
            _ => None,
        }
    }

    pub(crate) fn up_mut(&mut self) -> Option<&mut Up> {
        match self {
            State::R2Sent { up, .. }
            | State::Established(up)
            | State::Closing { up, .. }
            | State::Closed { up, .. } => Some(up),
            _ => None,
        }
    }
}

/// How a step left the association.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It goes on.
    No,
    /// It is over; its pairs were removed and its last event queued. `retry`: a wanted
    /// association should be set up again.
    Yes { retry: bool },
    /// The peer closed it (it stays for CLOSED's wait): we no longer want it either.
    PeerClosed,
}

/// One peer's association.
pub(crate) struct Association {
    pub(crate) peer: HostIdentityTag,
    /// The peer's locator (where we send).
    pub(crate) locator: IpAddr,
    pub(crate) state: State,
}

impl Association {
    /// What status shows of it.
    pub(crate) fn view(&self) -> super::AssocView {
        let up = self.state.up();
        super::AssocView {
            peer: self.peer,
            state: self.state.name(),
            locator: self.locator,
            rekey: up.and_then(|u| u.rekey.as_ref()).map(super::updates::Rekey::step),
            announcing: up.is_some_and(|u| u.announce.is_some()),
            checking: up.and_then(|u| u.check.as_ref()).map(|c| c.locator),
        }
    }

    /// Makes the Diffie-Hellman key of an I1-SENT exchange (after its I1 left).
    pub(crate) fn prepare_dh(&mut self) -> Result<(), Error> {
        match &mut self.state {
            State::I1Sent { st, .. } => st.prepare_dh(),
            _ => Ok(()),
        }
    }

    /// A new exchange as Initiator; the I1 goes out.
    pub(crate) fn initiate(
        ctx: &mut Ctx<'_>,
        now: Time,
        peer: HostIdentityTag,
        locator: IpAddr,
        config: crate::bex::Config,
    ) -> Result<Association, Error> {
        let st = I1Sent::start(ctx.host, peer, config, ctx.local, locator)?;
        let i1 = st.i1().to_vec();
        ctx.send(locator, i1.clone());
        let resend = Resend::new(now, i1, &ctx.timers.retransmit);
        Ok(Association { peer, locator, state: State::I1Sent { st: Box::new(st), resend } })
    }

    /// A Responder's association after a valid I2: pair in, R2 out, R2-SENT.
    pub(crate) fn responded(
        ctx: &mut Ctx<'_>,
        now: Time,
        locator: IpAddr,
        est: Established,
        i2: &[u8],
        r2: Vec<u8>,
    ) -> Association {
        let peer = est.peer.hit();
        let mut up = Up::new(est);
        up.install(ctx, peer, locator);
        up.r2 = Some((i2.to_vec(), r2.clone()));
        ctx.send(locator, r2);
        let until = now + ctx.timers.r2_sent;
        Association { peer, locator, state: State::R2Sent { up: Box::new(up), until } }
    }

    /// When its next timer runs.
    pub(crate) fn poll_timeout(&self) -> Option<Time> {
        let own = match &self.state {
            State::I1Sent { resend, .. }
            | State::I2Sent { resend, .. }
            | State::Closing { resend, .. } => Some(resend.at),
            State::R2Sent { until, .. } | State::Closed { until, .. } => Some(*until),
            State::Established(_) | State::Moving => None,
        };
        let up = self.state.up().filter(|_| matches!(self.state, State::Established(_)));
        let upd = up.into_iter().flat_map(|u| {
            [
                u.rekey.as_ref().map(|r| r.resend().at),
                u.announce.as_ref().map(|a| a.1.at),
                u.check.as_ref().map(|c| c.resend.at),
            ]
        });
        own.into_iter().chain(upd.flatten()).min()
    }

    /// Ends it without a message: pairs out, then the `Down` event.
    pub(crate) fn down(&mut self, ctx: &mut Ctx<'_>, reason: DownReason) -> Ended {
        let peer = self.peer;
        if let Some(up) = self.state.up_mut() {
            up.remove_all(ctx, peer);
        }
        let retry = !matches!(reason, DownReason::Replaced);
        ctx.events.push_back(Event::Down { peer, reason });
        Ended::Yes { retry }
    }

    /// R2-SENT → ESTABLISHED (§4.4.2: on the Initiator's first ESP packet or UPDATE, or when
    /// the R2-SENT timer runs out): outbound moves to the pair.
    pub(crate) fn confirm(&mut self, ctx: &mut Ctx<'_>) {
        let State::R2Sent { .. } = self.state else { return };
        let old = std::mem::replace(&mut self.state, State::Moving);
        if let State::R2Sent { mut up, .. } = old {
            up.switch(ctx, self.peer);
            ctx.events.push_back(Event::Established {
                peer: self.peer,
                locator: self.locator,
                initiator: false,
            });
            self.state = State::Established(up);
        }
    }

    /// A packet for this association (I1 and I2 are the endpoint's).
    pub(crate) fn handle(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: Time,
        from: IpAddr,
        ty: PacketType,
        bytes: &[u8],
    ) -> Result<Ended, Error> {
        match ty {
            PacketType::R1 => self.on_r1(ctx, now, from, bytes).map(|()| Ended::No),
            PacketType::R2 => self.on_r2(ctx, from, bytes).map(|()| Ended::No),
            PacketType::UPDATE => self.on_update(ctx, now, from, bytes),
            PacketType::CLOSE => self.on_close(ctx, now, from, bytes),
            PacketType::CLOSE_ACK => self.on_close_ack(ctx, from, bytes),
            _ => Err(Error::Peer(format!("a {ty} is not handled"))),
        }
    }

    fn on_r1(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: Time,
        from: IpAddr,
        r1: &[u8],
    ) -> Result<(), Error> {
        // §4.4.2: R1 moves I1-SENT only; elsewhere it is dropped.
        let State::I1Sent { .. } = self.state else { return Err(not_now("R1")) };
        let old = std::mem::replace(&mut self.state, State::Moving);
        let State::I1Sent { st, resend } = old else { return Err(not_now("R1")) };
        let r = match ctx.solver {
            Some(solve) => st.on_r1_solving(ctx.host, ctx.provider, r1, from, ctx.local, solve),
            None => st.on_r1(ctx.host, ctx.provider, r1, from, ctx.local),
        };
        match r {
            Ok((st2, _work)) => {
                let i2 = st2.i2().to_vec();
                ctx.send(self.locator, i2.clone());
                let resend = Resend::new(now, i2, &ctx.timers.retransmit);
                self.state = State::I2Sent { st: Box::new(st2), resend };
                Ok(())
            }
            Err(rej) => {
                self.state = State::I1Sent { st: rej.state, resend };
                Err(rej.error)
            }
        }
    }

    fn on_r2(&mut self, ctx: &mut Ctx<'_>, from: IpAddr, r2: &[u8]) -> Result<(), Error> {
        let State::I2Sent { .. } = self.state else { return Err(not_now("R2")) };
        let old = std::mem::replace(&mut self.state, State::Moving);
        let State::I2Sent { st, resend } = old else { return Err(not_now("R2")) };
        match st.on_r2(r2, from, ctx.local) {
            Ok(est) => {
                // The Responder installed its pair before R2 left: ours in, outbound at once.
                let mut up = Up::new(est);
                up.install(ctx, self.peer, self.locator);
                up.switch(ctx, self.peer);
                ctx.events.push_back(Event::Established {
                    peer: self.peer,
                    locator: self.locator,
                    initiator: true,
                });
                self.state = State::Established(Box::new(up));
                Ok(())
            }
            Err(rej) => {
                self.state = State::I2Sent { st: rej.state, resend };
                Err(rej.error)
            }
        }
    }

    /// Our CLOSE (§6.14): ESTABLISHED (or R2-SENT) → CLOSING.
    pub(crate) fn close(&mut self, ctx: &mut Ctx<'_>, now: Time) -> Result<(), Error> {
        let up = match &self.state {
            State::Established(_) | State::R2Sent { .. } => {
                self.state.up().ok_or_else(|| not_now("close"))?
            }
            _ => return Err(not_now("close")),
        };
        let nonce = ctx.nonce()?;
        let bytes = crate::close::close(ctx.host, &up.est, &nonce, ctx.local, self.locator)?;
        ctx.send(self.locator, bytes.clone());
        let resend = Resend::new(now, bytes, &ctx.timers.retransmit);
        let old = std::mem::replace(&mut self.state, State::Moving);
        if let State::Established(up) | State::R2Sent { up, .. } = old {
            self.state = State::Closing { up, nonce, resend };
        }
        Ok(())
    }

    fn on_close(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: Time,
        from: IpAddr,
        bytes: &[u8],
    ) -> Result<Ended, Error> {
        let up = self.state.up().ok_or_else(|| not_now("CLOSE"))?;
        // §6.14: a valid CLOSE is answered with CLOSE_ACK echoing its ECHO_REQUEST_SIGNED, and
        // the association goes (to CLOSED, which answers a repeated CLOSE).
        let ack = crate::close::on_close(ctx.host, &up.est, bytes, from, ctx.local)?;
        ctx.send(from, ack);
        if matches!(self.state, State::Closed { .. }) {
            return Ok(Ended::No);
        }
        let peer = self.peer;
        let until = now + ctx.chain();
        let old = std::mem::replace(&mut self.state, State::Moving);
        if let Some(mut up) = match old {
            State::R2Sent { up, .. } | State::Established(up) | State::Closing { up, .. } => {
                Some(up)
            }
            _ => None,
        } {
            up.remove_all(ctx, peer);
            up.rekey = None;
            up.announce = None;
            up.check = None;
            self.state = State::Closed { up, until };
        }
        ctx.events.push_back(Event::Closed { peer });
        Ok(Ended::PeerClosed)
    }

    fn on_close_ack(
        &mut self,
        ctx: &mut Ctx<'_>,
        from: IpAddr,
        bytes: &[u8],
    ) -> Result<Ended, Error> {
        let State::Closing { up, nonce, .. } = &mut self.state else {
            return Err(not_now("CLOSE_ACK"));
        };
        crate::close::on_close_ack(&up.est, nonce, bytes, from, ctx.local)?;
        let peer = self.peer;
        up.remove_all(ctx, peer);
        ctx.events.push_back(Event::Closed { peer });
        // Wanted again only if `initiate` came while it was closing.
        Ok(Ended::Yes { retry: true })
    }

    /// Runs the timers due at `now`.
    pub(crate) fn handle_timeout(&mut self, ctx: &mut Ctx<'_>, now: Time) -> Ended {
        let (b, tries, to) = (ctx.timers.retransmit, ctx.timers.tries, self.locator);
        match &mut self.state {
            State::I1Sent { resend, .. } | State::I2Sent { resend, .. } if resend.at <= now => {
                match resend.fire(now, &b, tries) {
                    Some(p) => {
                        let p = p.to_vec();
                        ctx.resend(to, &p);
                    }
                    None => return self.down(ctx, DownReason::SetupTimedOut),
                }
            }
            State::Closing { resend, .. } if resend.at <= now => {
                match resend.fire(now, &b, tries) {
                    Some(p) => {
                        let p = p.to_vec();
                        ctx.resend(to, &p);
                    }
                    // RFC 7401 §4.4 CLOSING, paraphrased (text not reachable): on timeout, to UNASSOCIATED.
                    None => return self.down(ctx, DownReason::CloseTimedOut),
                }
            }
            State::R2Sent { until, .. } if *until <= now => self.confirm(ctx),
            State::Closed { until, .. } if *until <= now => return Ended::Yes { retry: true },
            State::Established(_) => return self.update_timers(ctx, now),
            _ => {}
        }
        Ended::No
    }
}

pub(crate) fn not_now(what: &str) -> Error {
    Error::Peer(format!("{what}: not in this state"))
}
