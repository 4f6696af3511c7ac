//! An established IKE SA at work (RFC 7296 §1.3–1.4, §2.1–2.2): message IDs with a window of
//! one, retransmission of our outstanding request and cached answers to the peer's
//! retransmitted ones, INFORMATIONAL exchanges (DELETE §1.4.1, liveness §2.4), and the
//! CREATE_CHILD_SA exchanges of `create_child.rs`. The driver feeds datagrams and time in and
//! gets datagrams and [`Event`]s out; the data path is told what to install and remove.

use crate::config::{ChildSaKeys, Config, Mode};
use crate::error::{Error, PeerMisbehaved};
use crate::sa::{Established, IkeSa, Retransmit, header, notify};
use crate::sk::Role;
use crate::suite::ChildSuite;
use crypto::{KeyExchange, Provider};
use std::collections::VecDeque;
use wire::ikev2::{Delete, ExchangeType, NotifyType, Packet, Payload, ProtocolId, TrafficSelector};

/// A CHILD SA pair as the session remembers it (the keys went to the data path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildSa {
    /// Algorithms.
    pub suite: ChildSuite,
    /// Tunnel or transport.
    pub mode: Mode,
    /// SPI we receive on.
    pub spi_in: u32,
    /// SPI we send with.
    pub spi_out: u32,
    /// Our side's selectors.
    pub local_ts: Vec<TrafficSelector>,
    /// The peer's side's selectors.
    pub remote_ts: Vec<TrafficSelector>,
}

impl ChildSa {
    pub(crate) fn of(keys: &ChildSaKeys) -> ChildSa {
        ChildSa {
            suite: keys.suite,
            mode: keys.mode,
            spi_in: keys.spi_in,
            spi_out: keys.spi_out,
            local_ts: keys.local_ts.clone(),
            remote_ts: keys.remote_ts.clone(),
        }
    }
}

/// What the driver must do besides sending datagrams.
#[derive(Debug)]
pub enum Event {
    /// Install this CHILD SA pair. Make-before-break (DESIGN rule 4): install the inbound SA at
    /// once. `rekeys` names the inbound SPI of the pair it succeeds, whose removal follows as a
    /// [`Event::RemoveChild`]; who started the rekey says when outbound traffic moves to it:
    ///
    /// - our own rekey (the driver asked [`Request::RekeyChild`] of `rekeys` and has had no
    ///   `InstallChild` with that `rekeys` nor a [`Event::RequestFailed`] for it since): the peer
    ///   installed its inbound SA before answering, so outbound switches to this pair at once;
    /// - the peer's rekey: outbound switches when the old pair is removed (the peer's DELETE
    ///   of it follows once the peer has read our answer and installed its own inbound SA).
    ///
    /// The session keeps that bookkeeping exact, so the driver may go by its own requests: a
    /// rekey of ours still queued when the peer's rekey of the same pair arrives is dropped
    /// and reported failed first (in the same [`Output`], before this event); when both
    /// requests are in flight at once (a simultaneous rekey, §2.8.1) the peer's pair comes
    /// with `rekeys: None` (not to be switched to yet: which pair survives is known only with
    /// our answer), then either ours with `rekeys: Some(old)` (ours survives: switch at once; the
    /// peer deletes its pair) or a [`Event::RequestFailed`] with [`Error::Superseded`] (the
    /// peer's survives: ours is deleted without ever being installed here, the peer deletes the
    /// old pair, and outbound falls to the newest pair left, the peer's). A pair with `rekeys:
    /// None` is never switched to except when the pair sending is removed.
    InstallChild {
        /// The keys and selectors.
        keys: Box<ChildSaKeys>,
        /// Inbound SPI of the pair this one replaces.
        rekeys: Option<u32>,
    },
    /// Remove this CHILD SA pair (after a DELETE, §1.4.1).
    RemoveChild {
        /// Its inbound SPI.
        spi_in: u32,
        /// Its outbound SPI.
        spi_out: u32,
    },
    /// The peer answered: it is alive (§2.4).
    PeerAlive,
    /// The IKE SA was rekeyed (§2.18): these are its new SPIs; the old ones stay valid until
    /// the old IKE SA's DELETE is done. The CHILD SAs are unchanged.
    IkeRekeyed {
        /// New initiator SPI.
        spi_i: u64,
        /// New responder SPI.
        spi_r: u64,
    },
    /// The peer refused or botched our request, or it came to nothing ([`Error::Superseded`]: a
    /// rekey that lost a simultaneous one, §2.8.1, or a queued rekey of a pair the peer rekeyed
    /// first); the IKE SA goes on (a rekey can be retried).
    RequestFailed {
        /// What we asked.
        request: Request,
        /// Why it failed (an error notify of the peer, or what was wrong with its answer).
        error: Error,
    },
    /// The IKE SA is gone (deleted by either side, or the peer stopped answering); remove
    /// every CHILD SA of it.
    IkeClosed,
}

/// Datagrams to send and events to act on.
#[derive(Debug, Default)]
pub struct Output {
    /// Datagrams, in order.
    pub send: Vec<Vec<u8>>,
    /// Events, in order.
    pub events: Vec<Event>,
}

/// A request this end wants to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// An empty INFORMATIONAL: is the peer alive? (§2.4)
    Liveness,
    /// DELETE the CHILD SA pair with this inbound SPI (§1.4.1).
    DeleteChild(u32),
    /// DELETE the IKE SA and with it every CHILD SA.
    DeleteIke,
    /// Rekey the CHILD SA pair with this inbound SPI (§1.3.3), with PFS if its suite says so.
    RekeyChild(u32),
    /// Rekey the IKE SA itself (§1.3.2, §2.18); the CHILD SAs move to the new one.
    RekeyIke,
    /// A further CHILD SA pair (§1.3.1) of child policy N (0: the first, as in IKE_AUTH; then
    /// [`Config::more_children`](crate::Config) in order): its selectors, mode and first
    /// suite (with its PFS group).
    NewChild(usize),
}

/// Our outstanding request: what we asked, and what we must remember to read the answer.
pub(crate) enum Pending {
    Liveness,
    DeleteChild(u32),
    DeleteIke,
    CreateChild(Box<ChildRequest>),
    RekeyIke { new_spi: u64, ni: Vec<u8>, ke: KeyExchange },
}

/// What our CREATE_CHILD_SA request for a CHILD SA asked, to read the answer (§1.3.1, §1.3.3).
pub(crate) struct ChildRequest {
    /// The pair it rekeys (its inbound SPI), or `None` for a new pair.
    pub(crate) rekeys: Option<u32>,
    /// The child policy (index into `Config::child_policies`).
    pub(crate) policy: usize,
    pub(crate) new_spi_in: u32,
    /// The suite of our KE (the first proposal).
    pub(crate) suite: ChildSuite,
    /// Every suite the request offers, `suite` first.
    pub(crate) offered: Vec<ChildSuite>,
    pub(crate) mode: Mode,
    pub(crate) ni: Vec<u8>,
    pub(crate) ke: Option<KeyExchange>,
    pub(crate) local_ts: Vec<TrafficSelector>,
    pub(crate) remote_ts: Vec<TrafficSelector>,
    /// Already the request sent again with the group of the peer's INVALID_KE_PAYLOAD.
    pub(crate) ke_retried: bool,
}

/// A peer's rekey of a CHILD SA pair we were rekeying ourselves (§2.8.1): the pair and the
/// nonces of the peer's exchange, to find the redundant pair once ours completes.
pub(crate) struct Collision {
    pub(crate) old_spi_in: u32,
    pub(crate) ni: Vec<u8>,
    pub(crate) nr: Vec<u8>,
}

/// The IKE SA a rekey replaced, kept until its DELETE is done (§2.18).
pub(crate) struct Retiring {
    pub(crate) ike: IkeSa,
    /// Our DELETE of it (when we started the rekey): message ID and its timer.
    pub(crate) delete: Option<(u32, Retransmit)>,
}

/// Whether our DELETE of the pair with inbound SPI `spi_in` is on its way (outstanding or
/// queued): the pair is being closed (§2.25).
pub(crate) fn deleting(o: Option<&Outstanding>, queue: &VecDeque<Request>, spi_in: u32) -> bool {
    o.is_some_and(|o| matches!(o.pending, Pending::DeleteChild(s) if s == spi_in))
        || queue.contains(&Request::DeleteChild(spi_in))
}

pub(crate) struct Outstanding {
    pub(crate) id: u32,
    pub(crate) pending: Pending,
    pub(crate) retransmit: Retransmit,
}

/// An established IKE SA with its CHILD SAs.
pub struct Session {
    pub(crate) config: Config,
    pub(crate) provider: &'static dyn Provider,
    pub(crate) ike: IkeSa,
    pub(crate) children: Vec<ChildSa>,
    pub(crate) outstanding: Option<Outstanding>,
    pub(crate) queue: VecDeque<Request>,
    pub(crate) closed: bool,
    /// The old IKE SA after a rekey, until its DELETE is done.
    pub(crate) retiring: Option<Retiring>,
    /// A new IKE SA from a rekey we answered, switched to once the answer is sealed.
    pub(crate) rekeyed: Option<IkeSa>,
    /// A simultaneous CHILD SA rekey in progress (§2.8.1).
    pub(crate) collision: Option<Collision>,
    /// Inbound SPIs of pairs our rekeys made that are not wanted (the redundant pair of a
    /// simultaneous rekey, or the old pair was gone): never installed here, but the peer has
    /// them, so they are DELETEd ahead of the queued requests.
    pub(crate) unwanted: Vec<u32>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("ike", &self.ike)
            .field("children", &self.children)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Takes over an IKE SA from the initial exchanges; gives back the first CHILD SA's keys for
    /// the caller to install (the session remembers the pair, not its keys), if IKE_AUTH made
    /// one.
    pub fn new(
        config: Config,
        provider: &'static dyn Provider,
        established: Established,
    ) -> (Session, Option<ChildSaKeys>) {
        let Established { ike, child, .. } = established;
        let s = Session {
            children: child.iter().map(ChildSa::of).collect(),
            config,
            provider,
            ike,
            outstanding: None,
            queue: VecDeque::new(),
            closed: false,
            retiring: None,
            rekeyed: None,
            collision: None,
            unwanted: Vec::new(),
        };
        (s, child)
    }

    /// The IKE SA.
    pub fn ike(&self) -> &IkeSa {
        &self.ike
    }

    /// The CHILD SA pairs, oldest first.
    pub fn children(&self) -> &[ChildSa] {
        &self.children
    }

    /// True once the IKE SA is deleted or dead; the driver drops the session.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// When [`Session::on_timeout`] should run next, if a request is outstanding.
    pub fn deadline_ms(&self) -> Option<u64> {
        let ours = self.outstanding.as_ref().map(|o| o.retransmit.deadline_ms());
        let retiring =
            self.retiring.as_ref().and_then(|r| r.delete.as_ref()).map(|(_, t)| t.deadline_ms());
        match (ours, retiring) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Retransmits the outstanding request at its deadline; after the last try the peer is
    /// taken for dead (§2.4) and the IKE SA closes.
    pub fn on_timeout(&mut self, now_ms: u64) -> Output {
        let mut out = Output::default();
        if let Some((_, t)) = self.retiring.as_mut().and_then(|r| r.delete.as_mut()) {
            match t.on_timeout(now_ms) {
                Ok(Some(bytes)) => out.send.push(bytes.to_vec()),
                Ok(None) => {}
                // The old IKE SA's peer half is gone or will time out: forget it.
                Err(_) => self.retiring = None,
            }
        }
        let Some(o) = self.outstanding.as_mut() else { return out };
        match o.retransmit.on_timeout(now_ms) {
            Ok(Some(bytes)) => out.send.push(bytes.to_vec()),
            Ok(None) => {}
            Err(_) => self.close(&mut out),
        }
        out
    }

    /// Asks for `req`: sent now if no request is outstanding (window of one, §2.3), else queued.
    pub fn request(&mut self, now_ms: u64, req: Request) -> Result<Output, Error> {
        let mut out = Output::default();
        if self.closed {
            return Ok(out);
        }
        self.queue.push_back(req);
        self.send_next(now_ms, &mut out)?;
        Ok(out)
    }

    pub(crate) fn close(&mut self, out: &mut Output) {
        if !self.closed {
            self.closed = true;
            self.outstanding = None;
            self.queue.clear();
            out.events.push(Event::IkeClosed);
        }
    }

    fn send_next(&mut self, now_ms: u64, out: &mut Output) -> Result<(), Error> {
        while self.outstanding.is_none() && !self.closed {
            let id = self.ike.next_request_id;
            // A pair of ours the peer has and we never installed: its DELETE goes first.
            let (req, unwanted) = match self.unwanted.pop() {
                Some(spi_in) => (Request::DeleteChild(spi_in), true),
                None => match self.queue.pop_front() {
                    Some(req) => (req, false),
                    None => return Ok(()),
                },
            };
            let (ex, inner, pending) = match req {
                Request::Liveness => (ExchangeType::INFORMATIONAL, Vec::new(), Pending::Liveness),
                Request::DeleteChild(spi_in) => {
                    if !unwanted && !self.children.iter().any(|c| c.spi_in == spi_in) {
                        continue;
                    }
                    let d = Delete { protocol_id: ProtocolId::ESP, spis: vec![spi_in] };
                    (
                        ExchangeType::INFORMATIONAL,
                        vec![Payload::Delete(d)],
                        Pending::DeleteChild(spi_in),
                    )
                }
                Request::DeleteIke => {
                    let d = Delete { protocol_id: ProtocolId::IKE, spis: Vec::new() };
                    (ExchangeType::INFORMATIONAL, vec![Payload::Delete(d)], Pending::DeleteIke)
                }
                Request::RekeyChild(spi_in) => match self.child_request(Some(spi_in), None, 0)? {
                    Some((inner, pending)) => (ExchangeType::CREATE_CHILD_SA, inner, pending),
                    None => {
                        // Deleted (or rekeyed away) while the request waited: say so, so that
                        // the driver stops waiting for it.
                        out.events.push(Event::RequestFailed {
                            request: req,
                            error: Error::Superseded("the CHILD SA to rekey is gone"),
                        });
                        continue;
                    }
                },
                Request::NewChild(policy) => match self.child_request(None, None, policy)? {
                    Some((inner, pending)) => (ExchangeType::CREATE_CHILD_SA, inner, pending),
                    None => continue,
                },
                Request::RekeyIke => {
                    if self.retiring.is_some() {
                        continue;
                    }
                    let (inner, pending) = self.rekey_ike_request()?;
                    (ExchangeType::CREATE_CHILD_SA, inner, pending)
                }
            };
            let bytes = self.seal(ex, false, id, &inner)?;
            self.ike.next_request_id = id.wrapping_add(1);
            out.send.push(bytes.clone());
            self.outstanding =
                Some(Outstanding { id, pending, retransmit: Retransmit::new(bytes, now_ms) });
        }
        Ok(())
    }

    pub(crate) fn seal(
        &mut self,
        ex: ExchangeType,
        response: bool,
        id: u32,
        inner: &[Payload],
    ) -> Result<Vec<u8>, Error> {
        let h = header(self.ike.spi_i, self.ike.spi_r, ex, self.ike.role, response, id);
        self.ike.sk.seal(self.provider, &h, inner)
    }

    /// Handles a datagram for this IKE SA: a request of the peer (answered), or the response to
    /// ours. A message that is not for us, stale, or does not verify is dropped: `Err` says why
    /// and nothing changed.
    pub fn handle(&mut self, now_ms: u64, bytes: &[u8]) -> Result<Output, Error> {
        let p = Packet::new_checked(bytes).map_err(Error::InvalidMessage)?;
        if self
            .retiring
            .as_ref()
            .is_some_and(|r| r.ike.spi_i == p.spi_i() && r.ike.spi_r == p.spi_r())
        {
            return self.handle_retiring(bytes);
        }
        let peer_is_initiator = self.ike.role == Role::Responder;
        if self.closed
            || p.spi_i() != self.ike.spi_i
            || p.spi_r() != self.ike.spi_r
            || p.flags().initiator != peer_is_initiator
        {
            return Err(PeerMisbehaved::UnexpectedMessage("not for this IKE SA").into());
        }
        let (id, ex, response) = (p.message_id(), p.exchange_type(), p.flags().response);
        let mut out = Output::default();
        if response {
            if self.outstanding.as_ref().is_none_or(|o| o.id != id) {
                return Err(
                    PeerMisbehaved::UnexpectedMessage("response to no request of ours").into()
                );
            }
            let (_, payloads) = self.ike.sk.open(bytes)?;
            let Some(o) = self.outstanding.take() else { return Ok(out) };
            self.on_response(now_ms, o.pending, &payloads, &mut out)?;
            self.send_next(now_ms, &mut out)?;
            return Ok(out);
        }
        // §2.1/§2.3: the peer's next request, or a retransmission of its last one.
        let expected = self.ike.next_peer_request_id;
        if id.wrapping_add(1) == expected {
            // A retransmission verifies before the cached answer goes again; one that was
            // answered with UNSUPPORTED_CRITICAL_PAYLOAD (§2.5) fails to parse the same way.
            if let Err(e) = self.ike.sk.open(bytes) {
                if e.unsupported_critical().is_none() {
                    return Err(e);
                }
            }
            out.send.extend(self.ike.last_response.clone());
            return Ok(out);
        }
        if id != expected {
            return Err(PeerMisbehaved::UnexpectedMessage("message ID outside the window").into());
        }
        let opened = self.ike.sk.open(bytes);
        let inner = match (opened, ex) {
            (Ok((_, payloads)), ExchangeType::INFORMATIONAL) => {
                self.on_informational(&payloads, &mut out)
            }
            (Ok((_, payloads)), ExchangeType::CREATE_CHILD_SA) => {
                self.on_create_child(&payloads, &mut out)?
            }
            (Ok(_), _) => {
                return Err(PeerMisbehaved::UnexpectedMessage(
                    "exchange type in an established IKE SA",
                )
                .into());
            }
            // §2.5: the request is rejected and its response carries the notify, whose data
            // is the one-octet payload type (after SK verified: nothing else of it is acted on).
            (Err(e), _) => match e.unsupported_critical() {
                Some(t) => vec![notify(NotifyType::UNSUPPORTED_CRITICAL_PAYLOAD, vec![t])],
                None => return Err(e),
            },
        };
        let reply = self.seal(ex, true, id, &inner)?;
        self.ike.next_peer_request_id = expected.wrapping_add(1);
        self.ike.last_response = Some(reply.clone());
        out.send.push(reply);
        self.switch_to_rekeyed(&mut out);
        if self.closed {
            out.events.push(Event::IkeClosed);
        }
        Ok(out)
    }

    /// A peer's INFORMATIONAL request: DELETEs are answered with our halves (§1.4.1), an empty
    /// one is a liveness check (§2.4). Returns the response's payloads.
    fn on_informational(&mut self, payloads: &[Payload], out: &mut Output) -> Vec<Payload> {
        let mut ours = Vec::new();
        for p in payloads {
            let Payload::Delete(d) = p else { continue };
            if d.protocol_id == ProtocolId::IKE {
                self.closed = true;
                self.outstanding = None;
                self.queue.clear();
                return Vec::new();
            }
            for spi_out in &d.spis {
                if let Some(i) = self.children.iter().position(|c| c.spi_out == *spi_out) {
                    let c = self.children.remove(i);
                    ours.push(c.spi_in);
                    out.events.push(Event::RemoveChild { spi_in: c.spi_in, spi_out: c.spi_out });
                }
            }
        }
        if ours.is_empty() {
            Vec::new()
        } else {
            vec![Payload::Delete(Delete { protocol_id: ProtocolId::ESP, spis: ours })]
        }
    }

    fn on_response(
        &mut self,
        now_ms: u64,
        pending: Pending,
        payloads: &[Payload],
        out: &mut Output,
    ) -> Result<(), Error> {
        match pending {
            Pending::Liveness => out.events.push(Event::PeerAlive),
            Pending::DeleteIke => self.close(out),
            Pending::DeleteChild(spi_in) => {
                if let Some(i) = self.children.iter().position(|c| c.spi_in == spi_in) {
                    let c = self.children.remove(i);
                    out.events.push(Event::RemoveChild { spi_in: c.spi_in, spi_out: c.spi_out });
                }
            }
            Pending::RekeyIke { new_spi, ni, ke } => {
                self.on_rekey_ike_response(now_ms, new_spi, &ni, ke, payloads, out)?
            }
            Pending::CreateChild(req) => match self.invalid_ke_retry(&req, payloads) {
                // §1.3: "the initiator will probably retry the exchange with a Diffie-Hellman
                // proposal and KE payload that the responder gave in the INVALID_KE_PAYLOAD";
                // a new request (new message ID, nonce, SPI and key share).
                Some(g) => match self.child_request(req.rekeys, Some(g), req.policy)? {
                    Some((inner, pending)) => {
                        let id = self.ike.next_request_id;
                        let bytes = self.seal(ExchangeType::CREATE_CHILD_SA, false, id, &inner)?;
                        self.ike.next_request_id = id.wrapping_add(1);
                        out.send.push(bytes.clone());
                        let retransmit = Retransmit::new(bytes, now_ms);
                        self.outstanding = Some(Outstanding { id, pending, retransmit });
                    }
                    None => self.on_child_response(*req, payloads, out),
                },
                None => self.on_child_response(*req, payloads, out),
            },
        }
        Ok(())
    }
}
