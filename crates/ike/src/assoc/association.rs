//! One IKE SA with one peer, from its first message to its end: the initial exchange states of
//! either role, then the established [`Session`] with its timers (CHILD and IKE rekeys with
//! retries, hard lifetimes, DPD) and the make-before-break translation of its events for the
//! data path (RFC 7296 §1.3, §2.4, §2.8).

use super::sink::Sink;
use super::up::{Pair, Up};
use super::{AssocId, ConnectionConfig, DownReason, Event, Transmit};
use crate::error::Error;
use crate::initiator::{InitiatorAuth, InitiatorSaInit, SaInitNext};
use crate::responder::{AuthOutcome, ResponderAuth};
use crate::responder_eap::ResponderEap;
use crate::sa::{Established, Rejected};
use crate::session::{self, Output, Request, Session};
use crate::sk::Role;
use crate::time::Time;
use crypto::Provider;
use std::net::SocketAddr;
use wire::ikev2::Id;

/// Whether an IKE message is a response (its R flag, RFC 7296 §3.1).
fn is_response(b: &[u8]) -> bool {
    wire::ikev2::Packet::new_checked(b).is_ok_and(|p| p.flags().response)
}

pub(crate) enum State {
    InitSent(Box<InitiatorSaInit>),
    AuthSent(Box<InitiatorAuth>),
    HalfOpen(Box<ResponderAuth>),
    /// IKE_AUTH with EAP under way (RFC 7296 §2.16): one state per round.
    Eap(Box<ResponderEap>),
    Up(Box<Up>),
    /// Over: the endpoint removes it (its `Down` event is queued).
    Gone,
}

pub(crate) struct Association {
    pub(crate) id: AssocId,
    pub(crate) conn: usize,
    pub(crate) peer: SocketAddr,
    pub(crate) local: SocketAddr,
    pub(crate) state: State,
    /// The authenticated peer identity, once up.
    pub(crate) peer_id: Option<Id>,
    /// We started it (a setup failure counts against the connection's retry chain).
    pub(crate) initiated: bool,
    /// When it was made.
    pub(crate) created: Time,
}

/// What a step of an association tells the endpoint.
#[derive(Default)]
pub(crate) struct Step {
    /// Just established, and the peer sent INITIAL_CONTACT: drop other IKE SAs with it.
    pub(crate) initial_contact: bool,
    /// New local IKE SPIs to route to this association (after setup or an IKE rekey).
    pub(crate) new_spis: Vec<u64>,
    /// It ended: `true` if the connection should set up again (lost, or the setup failed).
    pub(crate) ended: Option<bool>,
}

fn ms(now: Time) -> u64 {
    now.as_millis()
}

impl Association {
    fn send(&self, sink: &mut Sink<'_>, payload: Vec<u8>) {
        sink.transmits.push_back(Transmit { from: self.local, to: self.peer, payload });
    }

    pub(crate) fn is_up(&self) -> bool {
        matches!(self.state, State::Up(_))
    }

    pub(crate) fn is_setting_up(&self) -> bool {
        matches!(self.state, State::InitSent(_) | State::AuthSent(_))
    }

    fn down(&mut self, cfg: &ConnectionConfig, sink: &mut Sink<'_>, reason: DownReason) -> Step {
        if let State::Up(up) = &mut self.state {
            // The sending pair goes last: traffic never points at a pair already removed.
            let mut pairs = std::mem::take(&mut up.pairs);
            pairs.sort_by_key(|p| up.sending(p));
            for p in pairs {
                sink.events.push_back(Event::RemoveChild {
                    assoc: self.id,
                    child: cfg.child_name(p.child),
                    spi_in: p.spi_in,
                    spi_out: p.spi_out,
                });
            }
        }
        if matches!(reason, DownReason::SetupFailed(_) | DownReason::HalfOpenExpired) {
            sink.stats.failed += 1;
        }
        let again = match &reason {
            DownReason::SetupFailed(_) => self.initiated,
            DownReason::PeerDead => true,
            _ => false,
        };
        self.state = State::Gone;
        sink.events.push_back(Event::Down { assoc: self.id, conn: cfg.name.clone(), reason });
        Step { ended: Some(again), ..Step::default() }
    }

    /// A datagram for this association, from `from` to our `local` (when the driver knows
    /// which of its addresses it came to).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn handle(
        &mut self,
        now: Time,
        (local, from): (Option<SocketAddr>, SocketAddr),
        bytes: &[u8],
        cfg: &ConnectionConfig,
        provider: &'static dyn Provider,
        initial_contact: bool,
        sink: &mut Sink<'_>,
    ) -> Result<Step, Error> {
        match std::mem::replace(&mut self.state, State::Gone) {
            State::InitSent(st) => match st.handle(ms(now), bytes) {
                Ok(SaInitNext::Resend(st, b)) => {
                    self.state = State::InitSent(Box::new(st));
                    self.send(sink, b);
                    Ok(Step::default())
                }
                Ok(SaInitNext::Auth(st, b)) => {
                    // §2.23: "An IPsec endpoint that discovers a NAT between it and its
                    // correspondent (as described below) MUST send all subsequent traffic from
                    // port 4500" (the sentence's head): from IKE_AUTH on. `encap` moves
                    // whatever was found.
                    let n = st.nat();
                    if let Some(port) = cfg.natt_port {
                        if cfg.encap || n.local_behind_nat || n.remote_behind_nat {
                            self.local.set_port(port);
                            self.peer.set_port(port);
                        }
                    }
                    sink.keys(self.id, st.decryption_line());
                    self.state = State::AuthSent(Box::new(st));
                    self.send(sink, b);
                    Ok(Step::default())
                }
                Err(Rejected::Dropped { state, error }) => {
                    self.state = State::InitSent(state);
                    Err(error)
                }
                Err(Rejected::Failed(e)) => Ok(self.down(cfg, sink, DownReason::SetupFailed(e))),
            },
            State::AuthSent(st) => match st.handle(bytes) {
                Ok(est) => {
                    self.peer = from;
                    Ok(self.establish(now, est, cfg, provider, sink))
                }
                Err(Rejected::Dropped { state, error }) => {
                    self.state = State::AuthSent(state);
                    Err(error)
                }
                Err(Rejected::Failed(e)) => Ok(self.down(cfg, sink, DownReason::SetupFailed(e))),
            },
            State::HalfOpen(mut st) => {
                st.set_initial_contact(initial_contact);
                // The IKE_AUTH request's source, which moved to port 4500 behind a NAT (§2.23).
                self.peer = from;
                if let Some(l) = local {
                    self.local = l;
                }
                match st.handle(bytes) {
                    Ok(outcome) => Ok(self.auth_outcome(now, outcome, cfg, provider, sink)),
                    Err(Rejected::Dropped { state, error }) => {
                        self.state = State::HalfOpen(state);
                        Err(error)
                    }
                    Err(Rejected::Failed(e)) => {
                        Ok(self.down(cfg, sink, DownReason::SetupFailed(e)))
                    }
                }
            }
            State::Eap(st) => {
                self.peer = from;
                match st.handle(bytes) {
                    Ok(outcome) => Ok(self.auth_outcome(now, outcome, cfg, provider, sink)),
                    Err(Rejected::Dropped { state, error }) => {
                        self.state = State::Eap(state);
                        Err(error)
                    }
                    Err(Rejected::Failed(e)) => {
                        Ok(self.down(cfg, sink, DownReason::SetupFailed(e)))
                    }
                }
            }
            State::Up(mut up) => {
                let r = up.session.handle(ms(now), bytes);
                let out = match r {
                    Ok(out) => out,
                    Err(e) => {
                        self.state = State::Up(up);
                        return Err(e);
                    }
                };
                // Heard from the peer: the liveness check waits again (§2.4).
                up.dpd_at = (!cfg.dpd_delay.is_zero()).then(|| now + cfg.dpd_delay);
                self.state = State::Up(up);
                // §2.11: a response goes "to the IP address and port from whence" the request
                // came (a mobile node asks from its new care-of address); our own requests go
                // to the peer we know.
                let mut out = out;
                for b in std::mem::take(&mut out.send) {
                    let to = if is_response(&b) { from } else { self.peer };
                    sink.transmits.push_back(Transmit { from: self.local, to, payload: b });
                }
                let mut step = self.apply(now, out, cfg, sink);
                if step.ended.is_none() && self.session_closed() {
                    let reason = if self.terminating() {
                        DownReason::Terminated
                    } else {
                        DownReason::DeletedByPeer
                    };
                    let s = self.down(cfg, sink, reason);
                    step.ended = s.ended;
                }
                Ok(step)
            }
            State::Gone => Ok(Step::default()),
        }
    }

    /// Sends the responder's IKE_AUTH response and moves on: up, refused, or on to the next
    /// EAP round.
    fn auth_outcome(
        &mut self,
        now: Time,
        outcome: AuthOutcome,
        cfg: &ConnectionConfig,
        provider: &'static dyn Provider,
        sink: &mut Sink<'_>,
    ) -> Step {
        match outcome {
            AuthOutcome::Established(est, reply) => {
                self.send(sink, reply);
                self.establish(now, *est, cfg, provider, sink)
            }
            AuthOutcome::Failed(e, reply) => {
                self.send(sink, reply);
                self.down(cfg, sink, DownReason::SetupFailed(e))
            }
            AuthOutcome::Eap(st, reply) => {
                self.send(sink, reply);
                self.state = State::Eap(st);
                Step::default()
            }
        }
    }

    fn session_closed(&self) -> bool {
        matches!(&self.state, State::Up(up) if up.session.is_closed())
    }

    fn terminating(&self) -> bool {
        matches!(&self.state, State::Up(up) if up.terminating)
    }

    fn establish(
        &mut self,
        now: Time,
        est: Established,
        cfg: &ConnectionConfig,
        provider: &'static dyn Provider,
        sink: &mut Sink<'_>,
    ) -> Step {
        let initial_contact = est.initial_contact;
        let mut est = est;
        let est_child_error = est.child_error.take();
        sink.stats.established += 1;
        self.peer_id = Some(est.peer_id.clone());
        let vip = std::mem::take(&mut est.vip);
        let mut ike_cfg = cfg.ike.clone();
        crate::cfg::restrict(&mut ike_cfg, &vip, self.initiated);
        let (session, first) = Session::new(ike_cfg, provider, est);
        let ike = session.ike();
        let (spi_i, spi_r) = (ike.spi_i, ike.spi_r);
        let local_spi = if ike.role == Role::Initiator { spi_i } else { spi_r };
        let mut up = Up::new(
            session,
            cfg.ike_lifetimes.rekey_at(now, sink.rng),
            (!cfg.dpd_delay.is_zero()).then(|| now + cfg.dpd_delay),
        );
        if !vip.addrs.is_empty() {
            sink.events.push_back(Event::VirtualIp {
                assoc: self.id,
                conn: cfg.name.clone(),
                ours: self.initiated,
                addrs: vip.addrs,
                dns: vip.dns,
            });
        }
        sink.events.push_back(Event::Established {
            assoc: self.id,
            conn: cfg.name.clone(),
            peer: self.peer,
            spi_i,
            spi_r,
        });
        match (first, est_child_error) {
            (Some(first), _) => up.install(self.id, now, first, None, cfg, sink),
            (None, error) => {
                let error = error.unwrap_or(Error::Superseded("no CHILD SA in IKE_AUTH"));
                let child = cfg.child_name(0);
                sink.events.push_back(Event::ChildFailed { assoc: self.id, child, error });
            }
        }
        // The other children, in the config's order, each by its own CREATE_CHILD_SA (§1.3.1;
        // the session queues them behind one another, §2.3) — as initiator only: the
        // initiator of the IKE SA asks for every child, as strongSwan does.
        let mut more = Output::default();
        if self.initiated {
            for i in 1..=cfg.more_children.len() {
                let o = up.ask(now, Request::NewChild(i), cfg);
                more.send.extend(o.send);
                more.events.extend(o.events);
            }
        }
        self.state = State::Up(Box::new(up));
        let mut step = self.apply(now, more, cfg, sink);
        step.initial_contact = initial_contact;
        step.new_spis.push(local_spi);
        step
    }

    /// Acts on a session's output.
    fn apply(
        &mut self,
        now: Time,
        out: Output,
        cfg: &ConnectionConfig,
        sink: &mut Sink<'_>,
    ) -> Step {
        let mut step = Step::default();
        for b in out.send {
            self.send(sink, b);
        }
        let id = self.id;
        let State::Up(up) = &mut self.state else { return step };
        for e in out.events {
            match e {
                session::Event::InstallChild { keys, rekeys } => {
                    up.install(id, now, *keys, rekeys, cfg, sink)
                }
                session::Event::RemoveChild { spi_in, .. } => up.remove(id, spi_in, cfg, sink),
                session::Event::PeerAlive => {}
                session::Event::IkeRekeyed { spi_i, spi_r } => {
                    sink.keys(id, crate::wireshark::ikev2_decryption_line(up.session.ike()));
                    up.ike_rekey_at = cfg.ike_lifetimes.rekey_at(now, sink.rng);
                    up.ike_rekey_failures = 0;
                    let ours = up.session.ike().role == Role::Initiator;
                    step.new_spis.push(if ours { spi_i } else { spi_r });
                    sink.events.push_back(Event::IkeRekeyed { assoc: id, spi_i, spi_r });
                }
                session::Event::RequestFailed { request: Request::NewChild(i), error } => {
                    let child = cfg.child_name(i);
                    if !matches!(error, Error::Superseded(_)) {
                        // Asked again with the rekey back-off while the IKE SA lasts: a peer
                        // that refused (TS_UNACCEPTABLE, NO_PROPOSAL_CHOSEN, TEMPORARY_FAILURE
                        // during its own rekey) may take it later.
                        let n = up.child_retry.get(&i).map_or(0, |r| r.1).saturating_add(1);
                        up.child_retry.insert(i, (Some(now + cfg.rekey_retry.wait(n)), n));
                    }
                    sink.events.push_back(Event::ChildFailed { assoc: id, child, error });
                }
                session::Event::RequestFailed { request, error } => {
                    let superseded = matches!(error, Error::Superseded(_));
                    if !superseded && matches!(request, Request::RekeyChild(_) | Request::RekeyIke)
                    {
                        sink.stats.rekeys_failed += 1;
                    }
                    up.request_failed(now, request, superseded, cfg);
                }
                session::Event::IkeClosed => {}
            }
        }
        step
    }

    /// The earliest instant this association wants [`Association::handle_timeout`].
    pub(crate) fn poll_timeout(&mut self) -> Option<Time> {
        match &mut self.state {
            State::InitSent(st) => Some(Time::from_millis(st.retransmit().deadline_ms())),
            State::AuthSent(st) => Some(Time::from_millis(st.retransmit().deadline_ms())),
            State::HalfOpen(st) => Some(Time::from_millis(st.expires_ms())),
            State::Eap(st) => Some(Time::from_millis(st.expires_ms())),
            State::Up(up) => up.poll_timeout(),
            State::Gone => None,
        }
    }

    pub(crate) fn handle_timeout(
        &mut self,
        now: Time,
        cfg: &ConnectionConfig,
        sink: &mut Sink<'_>,
    ) -> Step {
        let t = ms(now);
        let setup_timeout = |r: Result<Option<&[u8]>, Error>| match r {
            Ok(b) => Ok(b.map(<[u8]>::to_vec)),
            Err(e) => Err(e),
        };
        match &mut self.state {
            State::InitSent(st) => match setup_timeout(st.retransmit().on_timeout(t)) {
                Ok(Some(b)) => self.send(sink, b),
                Ok(None) => {}
                Err(e) => return self.down(cfg, sink, DownReason::SetupFailed(e)),
            },
            State::AuthSent(st) => match setup_timeout(st.retransmit().on_timeout(t)) {
                Ok(Some(b)) => self.send(sink, b),
                Ok(None) => {}
                Err(e) => return self.down(cfg, sink, DownReason::SetupFailed(e)),
            },
            // The half-open timeout runs on through the EAP rounds.
            State::HalfOpen(_) | State::Eap(_) => {
                if self.poll_timeout().is_some_and(|e| now >= e) {
                    return self.down(cfg, sink, DownReason::HalfOpenExpired);
                }
            }
            State::Up(up) => {
                let out = up.on_timeout(now, cfg, sink, self.id);
                let mut step = self.apply(now, out, cfg, sink);
                if self.session_closed() {
                    let reason = if self.terminating() {
                        DownReason::Terminated
                    } else {
                        DownReason::PeerDead
                    };
                    step.ended = self.down(cfg, sink, reason).ended;
                }
                return step;
            }
            State::Gone => {}
        }
        Step::default()
    }

    /// Asks the session for `req` now (an operator's command).
    pub(crate) fn request(
        &mut self,
        now: Time,
        req: Request,
        cfg: &ConnectionConfig,
        sink: &mut Sink<'_>,
    ) -> Step {
        let State::Up(up) = &mut self.state else { return Step::default() };
        match req {
            Request::RekeyChild(s) => {
                // A pair with a successor is not rekeyed again (§2.8: the peer's rekey of it
                // was answered; another would make a second successor the peer would take
                // for a collision).
                let replaced = up.pairs.iter().find(|p| p.spi_in == s).is_none_or(|p| p.replaced);
                if replaced || !up.rekeying.insert(s) {
                    return Step::default();
                }
                if let Some(p) = up.pairs.iter_mut().find(|p| p.spi_in == s) {
                    p.rekey_at = None;
                }
                let c = up.pairs.iter().find(|p| p.spi_in == s).map_or(0, |p| p.child);
                let child = cfg.child_name(c);
                sink.events.push_back(Event::RekeyStarted { assoc: self.id, child, spi_in: s });
            }
            Request::DeleteIke => {
                // Traffic stops now, not when the peer answers (or its 63 s of silence end):
                // the pairs leave the data path, the DELETE exchange follows (§1.4.1).
                up.terminating = true;
                let (mut pairs, sending): (Vec<Pair>, Vec<Pair>) =
                    std::mem::take(&mut up.pairs).into_iter().partition(|p| !up.sending(p));
                pairs.extend(sending);
                up.pairs = pairs;
                let spis: Vec<u32> = up.pairs.iter().map(|p| p.spi_in).collect();
                for s in spis {
                    up.remove(self.id, s, cfg, sink);
                }
            }
            _ => {}
        }
        let out = up.ask(now, req, cfg);
        let mut step = self.apply(now, out, cfg, sink);
        if self.session_closed() {
            step.ended = self.down(cfg, sink, DownReason::Terminated).ended;
        }
        step
    }

    /// Ends it here without a word to the peer: it came back with INITIAL_CONTACT
    /// ([`DownReason::Replaced`]), or we terminate a setup not finished.
    pub(crate) fn end(&mut self, cfg: &ConnectionConfig, sink: &mut Sink<'_>, why: DownReason) {
        self.down(cfg, sink, why);
    }

    /// The pair of child `child` an operator's rekey goes to: its newest without a successor.
    pub(crate) fn rekey_target(&self, child: usize) -> Option<u32> {
        let State::Up(up) = &self.state else { return None };
        up.pairs.iter().rev().find(|p| p.child == child && !p.replaced).map(|p| p.spi_in)
    }

    /// Whether our rekey of the pair with inbound SPI `spi_in` is under way.
    pub(crate) fn rekeying(&self, spi_in: u32) -> bool {
        matches!(&self.state, State::Up(up) if up.rekeying.contains(&spi_in))
    }

    /// Its state's name, as `swanctl --list-sas` would put it.
    pub(crate) fn state_name(&self) -> &'static str {
        match &self.state {
            State::InitSent(_) => "IKE_SA_INIT sent",
            State::AuthSent(_) => "IKE_AUTH sent",
            State::HalfOpen(_) => "half-open",
            State::Eap(_) => "IKE_AUTH (EAP)",
            State::Up(up) if up.terminating => "deleting",
            State::Up(_) => "established",
            State::Gone => "gone",
        }
    }

    /// The established IKE SA.
    pub(crate) fn ike_sa(&self) -> Option<&crate::sa::IkeSa> {
        match &self.state {
            State::Up(up) => Some(up.session.ike()),
            _ => None,
        }
    }

    /// The pairs in the data path, each with whether its child's traffic is sent on it.
    pub(crate) fn pairs(&self) -> Vec<(&Pair, bool)> {
        match &self.state {
            State::Up(up) => up.pairs.iter().map(|p| (p, up.sending(p))).collect(),
            _ => Vec::new(),
        }
    }
}
