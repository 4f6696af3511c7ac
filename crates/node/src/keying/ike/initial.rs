//! The initial exchanges in the driver (RFC 7296 §1.2): IKE_SA_INIT requests to the
//! responder (cookies once too many IKE SAs are half open, §2.6; a retransmitted request gets
//! the same answer, §2.1), the initiator's two responses (NAT-T float to 4500, §2.23), and
//! IKE_AUTH at the responder. A dropped message keeps the state (§2.21); a failed exchange
//! ends it.

use super::{COOKIE_THRESHOLD, Entry, IkeDriver, State, Transmit};
use crate::keying::plane::ControlPlane;
use crate::log::{Level, log_event};
use ike::Endpoints;
use ike::initiator::{InitiatorAuth, InitiatorSaInit, SaInitNext};
use ike::responder::{AuthOutcome, InitOutcome, ResponderAuth};
use ike::sa::Rejected;
use std::net::SocketAddr;

impl IkeDriver {
    pub(super) fn init_request(
        &mut self,
        from: SocketAddr,
        natt: bool,
        bytes: &[u8],
        spi_i: u64,
        now_ms: u64,
    ) -> Vec<Transmit> {
        if let Some(st) = self.half_open.get(&(spi_i, from)).and_then(|r| self.sas.get(r)) {
            // A retransmitted IKE_SA_INIT: the same response again (§2.1).
            if let State::HalfOpen(h) = &st.state {
                if let Some(r) = h.retransmitted_init(bytes) {
                    self.stats.resent += 1;
                    return vec![Transmit { natt, to: from, bytes: r.to_vec() }];
                }
            }
            self.stats.dropped += 1;
            return Vec::new();
        }
        // The connection whose peer this is: by address, else one open to any peer, else the
        // only one.
        let Some(ci) = self
            .conns
            .iter()
            .position(|c| c.conf.remote_addr == Some(from.ip()))
            .or_else(|| self.conns.iter().position(|c| c.conf.remote_addr.is_none()))
            .or((self.conns.len() == 1).then_some(0))
        else {
            self.stats.dropped += 1;
            return Vec::new();
        };
        let port = if natt { self.natt_port } else { self.ike_port };
        let local = SocketAddr::new(self.conns[ci].conf.local_addr.unwrap_or(self.local_ip), port);
        let busy = self.half_open.len() >= COOKIE_THRESHOLD;
        match self.conns[ci].responder.handle_init(
            now_ms,
            Endpoints { local, remote: from },
            bytes,
            busy,
        ) {
            InitOutcome::Reply(r, why) => {
                self.stats.init_refused += 1;
                // The responder's reason for a COOKIE reply (ike::responder::handle_init).
                if why.to_string().contains("cookie required") {
                    self.stats.cookies += 1;
                }
                log_event!(Level::Debug, "ike-init-refused", "peer" => from, "why" => why.to_string());
                vec![Transmit { natt, to: from, bytes: r }]
            }
            InitOutcome::Drop(why) => {
                self.stats.dropped += 1;
                log_event!(Level::Debug, "ike-dropped", "peer" => from, "why" => why.to_string());
                Vec::new()
            }
            InitOutcome::HalfOpen(st, r) => {
                let spi_r = st.spi_r();
                self.half_open.insert((spi_i, from), spi_r);
                self.sas.insert(
                    spi_r,
                    Entry {
                        conn: ci,
                        peer: from,
                        natt,
                        state: State::HalfOpen(st),
                        created_ms: now_ms,
                        spi_i,
                        initiator: false,
                    },
                );
                vec![Transmit { natt, to: from, bytes: r }]
            }
        }
    }

    pub(super) fn on_init_response(
        &mut self,
        e: &mut Entry,
        st: InitiatorSaInit,
        bytes: &[u8],
        now_ms: u64,
        out: &mut Vec<Transmit>,
    ) -> bool {
        match st.handle(now_ms, bytes) {
            Ok(SaInitNext::Resend(st, r)) => {
                // COOKIE or INVALID_KE_PAYLOAD: IKE_SA_INIT again (§2.6, §1.3).
                out.push(Transmit { natt: e.natt, to: e.peer, bytes: r });
                e.state = State::InitSent(Box::new(st));
                true
            }
            Ok(SaInitNext::Auth(st, r)) => {
                // §2.23: behind a NAT (or told to encapsulate), float to 4500 from IKE_AUTH on.
                let n = st.nat();
                if !e.natt
                    && (n.local_behind_nat || n.remote_behind_nat || self.conns[e.conn].conf.encap)
                {
                    e.natt = true;
                    e.peer.set_port(self.natt_port);
                }
                out.push(Transmit { natt: e.natt, to: e.peer, bytes: r });
                e.state = State::AuthSent(Box::new(st));
                true
            }
            Err(rej) => self.rejected(e, rej, |s| State::InitSent(Box::new(s))),
        }
    }

    pub(super) fn on_auth_response(
        &mut self,
        plane: &mut ControlPlane,
        e: &mut Entry,
        st: InitiatorAuth,
        bytes: &[u8],
        from: SocketAddr,
        now_ms: u64,
    ) -> bool {
        match st.handle(bytes) {
            Ok(est) => {
                e.peer = from;
                self.established(plane, e, est, now_ms);
                true
            }
            Err(rej) => self.rejected(e, rej, |s| State::AuthSent(Box::new(s))),
        }
    }

    /// `msg`: the datagram, its sender, whether it came on 4500, and our SPI.
    pub(super) fn on_auth_request(
        &mut self,
        plane: &mut ControlPlane,
        e: &mut Entry,
        st: ResponderAuth,
        msg: (&[u8], SocketAddr, bool, u64),
        now_ms: u64,
        out: &mut Vec<Transmit>,
    ) -> bool {
        let (bytes, from, natt, ours) = msg;
        self.half_open.remove(&(e.spi_i, e.peer));
        let mut st = st;
        self.pick_by_identity(e, &mut st, bytes, from);
        match st.handle(bytes) {
            Ok(AuthOutcome::Established(est, reply)) => {
                e.peer = from;
                e.natt = natt;
                // Inbound live before the response leaves (DESIGN rule 4).
                self.established(plane, e, *est, now_ms);
                out.push(Transmit { natt, to: from, bytes: reply });
                true
            }
            Ok(AuthOutcome::Failed(why, reply)) => {
                self.stats.failed += 1;
                log_event!(Level::Warn, "ike-failed", "connection" => self.conns[e.conn].conf.name, "peer" => from, "why" => why.to_string());
                out.push(Transmit { natt, to: from, bytes: reply });
                false
            }
            Err(rej) => {
                let keep = self.rejected(e, rej, |s| State::HalfOpen(Box::new(s)));
                if keep {
                    self.half_open.insert((e.spi_i, e.peer), ours);
                }
                keep
            }
        }
    }

    /// IKE_SA_INIT carries no identity, so it was answered with the first connection open to
    /// this peer. When several are (a home agent's `%any` connection per mobile node), the
    /// IKE_AUTH request's IDi picks the one whose `remote.id` it is, as strongSwan picks its
    /// config; the exchange continues under that connection's credentials and CHILD SA policy.
    fn pick_by_identity(
        &mut self,
        e: &mut Entry,
        st: &mut ResponderAuth,
        bytes: &[u8],
        from: SocketAddr,
    ) {
        let open_to = |c: &super::Conn| c.conf.remote_addr.is_none_or(|a| a == from.ip());
        if self.conns.iter().filter(|c| open_to(c)).count() < 2 {
            return;
        }
        let Some(id) = st.peer_id(bytes) else { return };
        let by_id = |c: &super::Conn| open_to(c) && c.conf.remote_id.as_ref() == Some(&id);
        // A connection for this very address first, then one open to any peer.
        let found = self
            .conns
            .iter()
            .position(|c| by_id(c) && c.conf.remote_addr.is_some())
            .or_else(|| self.conns.iter().position(by_id));
        let Some(ci) = found.filter(|&ci| ci != e.conn) else { return };
        match st.reconfigure(self.conns[ci].config.clone()) {
            Ok(()) => {
                log_event!(Level::Debug, "ike-connection-switched", "from" => self.conns[e.conn].conf.name, "to" => self.conns[ci].conf.name);
                e.conn = ci;
            }
            Err(why) => {
                log_event!(Level::Warn, "ike-connection-not-switched", "to" => self.conns[ci].conf.name, "why" => why.to_string());
            }
        }
    }

    /// A dropped message keeps the state (§2.21); a failed exchange ends it.
    pub(super) fn rejected<S>(
        &mut self,
        e: &mut Entry,
        rej: Rejected<S>,
        back: impl FnOnce(S) -> State,
    ) -> bool {
        let why = rej.error().to_string();
        match rej.into_state() {
            Some(s) => {
                self.stats.dropped += 1;
                log_event!(Level::Debug, "ike-dropped", "connection" => self.conns[e.conn].conf.name, "why" => why);
                e.state = back(s);
                true
            }
            None => {
                self.stats.failed += 1;
                log_event!(Level::Warn, "ike-failed", "connection" => self.conns[e.conn].conf.name, "peer" => e.peer, "why" => why);
                self.retry_later(e);
                false
            }
        }
    }
}
