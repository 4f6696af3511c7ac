//! The responder of the initial exchanges (RFC 7296 §1.2). IKE_SA_INIT is answered statelessly
//! when it must be refused: a COOKIE when the driver says half-open SAs are too many (§2.6),
//! INVALID_KE_PAYLOAD naming our group (§1.2), NO_PROPOSAL_CHOSEN. Otherwise a half-open state
//! waits for IKE_AUTH, which is checked (§2.15 PSK), narrowed (§2.9) and answered. A peer that
//! authenticates with EAP (§2.16) goes on in [`crate::responder_eap`].

use crate::auth::{
    CookieSecret, PeerCredentials, SIGNATURE_HASH_ALGORITHMS, cert_payloads, certreq, make_auth,
    nat_hash, peer_certs, ts_narrow, verify_auth,
};
use crate::cfg::{self, AddressAnswer};
use crate::config::AuthConfig;
use crate::config::{ChildSaKeys, Config, Endpoints, Mode, NatStatus};
use crate::error::{ConfigError, Error, PeerMisbehaved};
use crate::keys::{ChildKeyMat, IkeSaKeys, skeyseed};
use crate::sa::{
    Established, HALF_OPEN_TIMEOUT_MS, IkeSa, NONCE_LEN, Rejected, emit, find_notify, header,
    missing, notify, random, random_ike_spi, take_payload,
};
use crate::sk::{Role, SkKeys};
use crate::suite::{ChildSuite, IkeSuite};
use crypto::{KeyExchange, Provider};
use wire::ikev2::{ExchangeType, Header, Id, Ke, Message, NotifyType, Payload, Sa, Ts};

/// A responder for one configuration: stateless until a valid IKE_SA_INIT arrives.
pub struct Responder {
    config: Config,
    provider: &'static dyn Provider,
    cookie: CookieSecret,
    previous_cookie: Option<CookieSecret>,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responder").field("local_id", &self.config.local_id).finish_non_exhaustive()
    }
}

/// What an IKE_SA_INIT request leads to.
#[derive(Debug)]
pub enum InitOutcome {
    /// Refused without keeping state: send this reply (COOKIE, INVALID_KE_PAYLOAD or
    /// NO_PROPOSAL_CHOSEN). The error says which.
    Reply(Vec<u8>, Error),
    /// Dropped without an answer (malformed, or not an initial request).
    Drop(Error),
    /// A half-open IKE SA: keep the state (keyed by SPIi and the peer's address) and send this.
    HalfOpen(Box<ResponderAuth>, Vec<u8>),
}

/// Half-open: keys derived, waiting for IKE_AUTH.
pub struct ResponderAuth {
    pub(crate) config: Config,
    pub(crate) ike: IkeSa,
    pub(crate) ni: Vec<u8>,
    pub(crate) nr: Vec<u8>,
    pub(crate) msg1: Vec<u8>,
    pub(crate) msg2: Vec<u8>,
    expires_ms: u64,
    /// When IKE_SA_INIT came: the time the peer's certificates are checked at.
    init_ms: u64,
    pub(crate) provider: &'static dyn Provider,
    initial_contact: bool,
    /// The endpoint's answer to a CFG_REQUEST (connections with pools only).
    pub(crate) address: Option<AddressAnswer>,
    /// The message ID of the IKE_AUTH request expected (1; one more per EAP round, §2.16).
    pub(crate) msg_id: u32,
}

impl std::fmt::Debug for ResponderAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponderAuth").field("ike", &self.ike).finish_non_exhaustive()
    }
}

/// The end of IKE_AUTH on the responder.
#[derive(Debug)]
pub enum AuthOutcome {
    /// Up: install the CHILD SA, send the response.
    Established(Box<Established>, Vec<u8>),
    /// Refused after decrypting: send the response (AUTHENTICATION_FAILED, NO_PROPOSAL_CHOSEN,
    /// TS_UNACCEPTABLE), drop the IKE SA.
    Failed(Error, Vec<u8>),
    /// The peer authenticates with EAP (§2.16): send the response (our IDr, CERT and AUTH and
    /// the first EAP Request); the state takes the next IKE_AUTH request.
    Eap(Box<crate::responder_eap::ResponderEap>, Vec<u8>),
}

impl Responder {
    /// A responder; the driver supplies the cookie secret and rotates it with [`Responder::rotate_cookie`].
    pub fn new(
        config: Config,
        provider: &'static dyn Provider,
        cookie: CookieSecret,
    ) -> Result<Responder, Error> {
        config.validate()?;
        Ok(Responder { config, provider, cookie, previous_cookie: None })
    }

    /// Starts using a new cookie secret; cookies of the previous one stay valid until the next rotation.
    pub fn rotate_cookie(&mut self, next: CookieSecret) {
        self.previous_cookie = Some(std::mem::replace(&mut self.cookie, next));
    }

    fn reply(h: &Header, ty: NotifyType, data: Vec<u8>, why: Error) -> InitOutcome {
        let rh = header(h.spi_i, 0, ExchangeType::IKE_SA_INIT, Role::Responder, true, 0);
        match emit(&Message { header: rh, payloads: vec![notify(ty, data)] }) {
            Ok(bytes) => InitOutcome::Reply(bytes, why),
            Err(e) => InitOutcome::Drop(e),
        }
    }

    /// An IKE_SA_INIT request that failed to parse: answered with UNSUPPORTED_CRITICAL_PAYLOAD
    /// when an unknown payload marked critical was the fault (§2.5, the notify's data the
    /// one-octet payload type), dropped otherwise.
    fn unsupported_critical(bytes: &[u8], e: Error) -> InitOutcome {
        let Some(t) = e.unsupported_critical() else { return InitOutcome::Drop(e) };
        let Ok(p) = wire::ikev2::Packet::new_checked(bytes) else { return InitOutcome::Drop(e) };
        let h = Header::parse(&p);
        let request = h.exchange_type == ExchangeType::IKE_SA_INIT
            && !h.flags.response
            && h.flags.initiator
            && h.message_id == 0
            && h.spi_r == 0
            && h.spi_i != 0;
        if !request {
            return InitOutcome::Drop(e);
        }
        Self::reply(&h, NotifyType::UNSUPPORTED_CRITICAL_PAYLOAD, vec![t], e)
    }

    /// Handles a datagram that should be an IKE_SA_INIT request. `require_cookie`: the driver's
    /// verdict that half-open SAs passed its threshold (§2.6).
    pub fn handle_init(
        &self,
        now_ms: u64,
        ep: Endpoints,
        bytes: &[u8],
        require_cookie: bool,
    ) -> InitOutcome {
        let m = match Message::parse(bytes) {
            Ok(m) => m,
            Err(e) => return Self::unsupported_critical(bytes, Error::InvalidMessage(e)),
        };
        let h = m.header;
        if h.exchange_type != ExchangeType::IKE_SA_INIT
            || h.flags.response
            || !h.flags.initiator
            || h.message_id != 0
            || h.spi_r != 0
            || h.spi_i == 0
        {
            return InitOutcome::Drop(
                PeerMisbehaved::UnexpectedMessage("not an IKE_SA_INIT request").into(),
            );
        }
        let ex = ExchangeType::IKE_SA_INIT;
        let (Some(sa), Some(ke), Some(ni)) = (
            take_payload!(m.payloads, Sa),
            take_payload!(m.payloads, Ke),
            take_payload!(m.payloads, Nonce),
        ) else {
            return InitOutcome::Drop(missing(ex, "SA, KE or Nonce"));
        };
        if require_cookie {
            let ip = ep.remote.ip();
            let ok = find_notify(&m.payloads, NotifyType::COOKIE).is_some_and(|c| {
                self.cookie.verify(&c.data, ni, ip, h.spi_i)
                    || self
                        .previous_cookie
                        .as_ref()
                        .is_some_and(|p| p.verify(&c.data, ni, ip, h.spi_i))
            });
            if !ok {
                let why = PeerMisbehaved::UnexpectedMessage("cookie required").into();
                return Self::reply(
                    &h,
                    NotifyType::COOKIE,
                    self.cookie.cookie(ni, ip, h.spi_i),
                    why,
                );
            }
        }
        let same_group: Vec<IkeSuite> = self
            .config
            .ike_suites
            .iter()
            .filter(|s| s.dh.ike_id() == ke.dh_group)
            .copied()
            .collect();
        let (num, suite) = match IkeSuite::select(&sa.proposals, &same_group) {
            Some(c) => c,
            None => {
                let why = PeerMisbehaved::ErrorNotify(NotifyType::NO_PROPOSAL_CHOSEN).into();
                return match IkeSuite::select(&sa.proposals, &self.config.ike_suites) {
                    Some((_, s)) => {
                        let data = s.dh.ike_id().to_be_bytes().to_vec();
                        let why =
                            PeerMisbehaved::KeMismatch { got: ke.dh_group, want: s.dh.ike_id() }
                                .into();
                        Self::reply(&h, NotifyType::INVALID_KE_PAYLOAD, data, why)
                    }
                    None => Self::reply(&h, NotifyType::NO_PROPOSAL_CHOSEN, Vec::new(), why),
                };
            }
        };
        if ke.data.len() != suite.dh.public_len() {
            return InitOutcome::Drop(
                PeerMisbehaved::KeMismatch { got: ke.dh_group, want: suite.dh.ike_id() }.into(),
            );
        }
        match self.half_open(now_ms, ep, &m, bytes, num, suite, ni) {
            Ok((st, resp)) => InitOutcome::HalfOpen(Box::new(st), resp),
            Err(e) => InitOutcome::Drop(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn half_open(
        &self,
        now_ms: u64,
        ep: Endpoints,
        m: &Message,
        msg1: &[u8],
        num: u8,
        suite: IkeSuite,
        ni: &[u8],
    ) -> Result<(ResponderAuth, Vec<u8>), Error> {
        let p = self.provider;
        let spi_i = m.header.spi_i;
        let spi_r = random_ike_spi(p)?;
        let nr = random::<NONCE_LEN>(p)?.to_vec();
        let ke = KeyExchange::generate(suite.dh)?;
        let ke_pub = ke.public_key().to_vec();
        let ke_i = take_payload!(m.payloads, Ke).map(|k| k.data.as_slice()).unwrap_or_default();
        let g_ir = ke.agree(ke_i).map_err(|_| PeerMisbehaved::BadPublicValue)?;
        let seed = skeyseed(suite.prf, ni, &nr, g_ir.as_bytes());
        let keys = IkeSaKeys::derive(&suite, &seed, ni, &nr, spi_i, spi_r)?;
        let sk = SkKeys::new(p, &suite, &keys, Role::Responder)?;
        // §2.23: the initiator hashed with SPIr = 0.
        let differs = |ty, addr| {
            find_notify(&m.payloads, ty).is_some_and(|n| n.data != nat_hash(spi_i, 0, addr))
        };
        let nat = NatStatus {
            remote_behind_nat: differs(NotifyType::NAT_DETECTION_SOURCE_IP, ep.remote),
            local_behind_nat: differs(NotifyType::NAT_DETECTION_DESTINATION_IP, ep.local),
        };
        let mut payloads = vec![
            Payload::Sa(Sa { proposals: vec![suite.to_proposal(num, Vec::new())?] }),
            Payload::Ke(Ke { dh_group: suite.dh.ike_id(), data: ke_pub }),
            Payload::Nonce(nr.clone()),
            notify(NotifyType::NAT_DETECTION_SOURCE_IP, nat_hash(spi_i, spi_r, ep.local).to_vec()),
            notify(
                NotifyType::NAT_DETECTION_DESTINATION_IP,
                nat_hash(spi_i, spi_r, ep.remote).to_vec(),
            ),
        ];
        // RFC 7427 §4: answer the initiator's list with ours.
        if find_notify(&m.payloads, NotifyType::SIGNATURE_HASH_ALGORITHMS).is_some() {
            let hashes = SIGNATURE_HASH_ALGORITHMS.to_vec();
            payloads.push(notify(NotifyType::SIGNATURE_HASH_ALGORITHMS, hashes));
        }
        // §1.2: HDR, SAr1, KEr, Nr, [CERTREQ]: the anchors we will validate the initiator's
        // certificate against (§3.7).
        // (None when the store is empty: a server for EAP road warriors, which present no
        // certificate.)
        if let AuthConfig::Certificate { trust, .. } = &self.config.auth {
            if !trust.certreq_hashes().is_empty() {
                payloads.push(certreq(trust));
            }
        }
        let h = header(spi_i, spi_r, ExchangeType::IKE_SA_INIT, Role::Responder, true, 0);
        let msg2 = emit(&Message { header: h, payloads })?;
        let ike = IkeSa {
            role: Role::Responder,
            spi_i,
            spi_r,
            suite,
            nat,
            keys,
            sk,
            next_request_id: 0,
            next_peer_request_id: 2,
            last_response: None,
        };
        let st = ResponderAuth {
            config: self.config.clone(),
            ike,
            ni: ni.to_vec(),
            nr,
            msg1: msg1.to_vec(),
            msg2: msg2.clone(),
            expires_ms: now_ms.saturating_add(HALF_OPEN_TIMEOUT_MS),
            init_ms: now_ms,
            provider: p,
            initial_contact: false,
            address: None,
            msg_id: 1,
        };
        Ok((st, msg2))
    }
}

impl ResponderAuth {
    /// Whether the peer authenticates with EAP (§2.16): its address is leased under the EAP
    /// user, later.
    pub fn uses_eap(&self) -> bool {
        self.config.peer_eap.is_some()
    }

    /// When the driver should forget this half-open SA.
    pub fn expires_ms(&self) -> u64 {
        self.expires_ms
    }

    /// Our responder SPI.
    pub fn spi_r(&self) -> u64 {
        self.ike.spi_r
    }

    /// The IKE_SA_INIT response again, if `bytes` is a retransmission of the request (§2.1).
    pub fn retransmitted_init(&self, bytes: &[u8]) -> Option<&[u8]> {
        (bytes == self.msg1.as_slice()).then_some(self.msg2.as_slice())
    }

    /// What NAT detection found.
    pub fn nat(&self) -> NatStatus {
        self.ike.nat
    }

    /// The half-open IKE SA's tshark `ikev2_decryption_table` line.
    pub fn decryption_line(&self) -> Option<String> {
        crate::wireshark::ikev2_decryption_line(&self.ike)
    }

    /// Whether our IKE_AUTH response carries INITIAL_CONTACT (§2.4: "in the first IKE_AUTH
    /// request or response"): set it when we hold no other IKE SA with the peer.
    pub fn set_initial_contact(&mut self, on: bool) {
        self.initial_contact = on;
    }

    pub(crate) fn respond(&mut self, inner: &[Payload]) -> Result<Vec<u8>, Error> {
        let h = header(
            self.ike.spi_i,
            self.ike.spi_r,
            ExchangeType::IKE_AUTH,
            Role::Responder,
            true,
            self.msg_id,
        );
        self.ike.sk.seal(self.provider, &h, inner)
    }

    /// The identity (IDi) an IKE_AUTH request claims, read without acting on it: a responder
    /// with several connections open to any peer picks the one configured for this identity
    /// (then [`ResponderAuth::reconfigure`]) before [`ResponderAuth::handle`] verifies it.
    /// `None` if the datagram is not this SA's IKE_AUTH request or does not decrypt.
    pub fn peer_id(&self, bytes: &[u8]) -> Option<Id> {
        self.auth_request(bytes).ok().and_then(|payloads| take_payload!(payloads, IdI).cloned())
    }

    /// The address families (`true`: IPv4) the IKE_AUTH request's CP(CFG_REQUEST) asks for
    /// (§3.15), read without acting on it, for the endpoint to lease from its pools; `None` if
    /// there is no CFG_REQUEST or the datagram is not this SA's IKE_AUTH request.
    pub fn requested_families(&self, bytes: &[u8]) -> Option<Vec<bool>> {
        self.auth_request(bytes).ok().and_then(|payloads| cfg::requested_families(&payloads))
    }

    /// What IKE_AUTH answers about addresses: a CFG_REPLY with a lease, or the notify that
    /// replaces the CHILD SA (§3.10.1).
    pub fn set_address_answer(&mut self, answer: Option<AddressAnswer>) {
        self.address = answer;
    }

    /// Continues the exchange under `config` (another connection's identities, credentials and
    /// CHILD SA policy) instead of the one IKE_SA_INIT was answered with. Refused if `config`
    /// does not offer the IKE suite already negotiated, which its own proposals would have had
    /// to choose.
    pub fn reconfigure(&mut self, config: Config) -> Result<(), Error> {
        config.validate()?;
        if !config.ike_suites.contains(&self.ike.suite) {
            return Err(ConfigError::UnsupportedAlgorithm(
                "the negotiated IKE suite is not among this connection's proposals",
            )
            .into());
        }
        self.config = config;
        Ok(())
    }

    /// The payloads of this SA's IKE_AUTH request (header checked, SK opened).
    pub(crate) fn auth_request(&self, bytes: &[u8]) -> Result<Vec<Payload>, Error> {
        wire::ikev2::Packet::new_checked(bytes)
            .map_err(Error::InvalidMessage)
            .and_then(|p| {
                let ok = p.spi_i() == self.ike.spi_i
                    && p.spi_r() == self.ike.spi_r
                    && p.exchange_type() == ExchangeType::IKE_AUTH
                    && !p.flags().response
                    && p.flags().initiator
                    && p.message_id() == self.msg_id;
                if ok {
                    Ok(())
                } else {
                    Err(PeerMisbehaved::UnexpectedMessage("not an IKE_AUTH request").into())
                }
            })
            .and_then(|()| self.ike.sk.open(bytes))
            .map(|(_, payloads)| payloads)
    }

    /// Handles a datagram that should be the IKE_AUTH request.
    pub fn handle(mut self, bytes: &[u8]) -> Result<AuthOutcome, Rejected<Self>> {
        let opened = self.auth_request(bytes);
        let payloads = match opened {
            Ok(payloads) => payloads,
            Err(error) => match error.unsupported_critical() {
                // §2.5, after SK verified: the IKE_AUTH request is rejected with the notify.
                Some(t) => {
                    let n = notify(NotifyType::UNSUPPORTED_CRITICAL_PAYLOAD, vec![t]);
                    return match self.respond(&[n]) {
                        Ok(reply) => Ok(AuthOutcome::Failed(error, reply)),
                        Err(e) => Err(Rejected::Failed(e)),
                    };
                }
                None => return Err(Rejected::Dropped { state: Box::new(self), error }),
            },
        };
        let refuse = |st: &mut Self, ty: NotifyType, error: Error| match st
            .respond(&[notify(ty, Vec::new())])
        {
            Ok(reply) => Ok(AuthOutcome::Failed(error, reply)),
            Err(e) => Err(Rejected::Failed(e)),
        };
        let ex = ExchangeType::IKE_AUTH;
        if let Some(eap) = self.config.peer_eap.clone() {
            return crate::responder_eap::ResponderEap::start(self, bytes, payloads, eap);
        }
        let (Some(idi), Some(auth)) = (take_payload!(payloads, IdI), take_payload!(payloads, Auth))
        else {
            return refuse(&mut self, NotifyType::INVALID_SYNTAX, missing(ex, "IDi or AUTH"));
        };
        let c = &self.config;
        let prf = self.ike.suite.prf;
        let id_ok = c.remote_id.as_ref().is_none_or(|r| r == idi);
        let certs = peer_certs(&payloads);
        let peer = PeerCredentials { certs: &certs, now_ms: self.init_ms };
        let auth_res =
            verify_auth(&c.auth, prf, &self.msg1, &self.nr, &self.ike.keys.sk_pi, idi, auth, peer);
        if !id_ok || auth_res.is_err() {
            // §2.21.2: the answer is AUTHENTICATION_FAILED, whichever of the two failed.
            let why = match auth_res {
                _ if !id_ok => PeerMisbehaved::UnexpectedIdentity.into(),
                Err(e @ Error::PeerMisbehaved(_)) => e,
                _ => PeerMisbehaved::AuthenticationFailed(auth.method.0).into(),
            };
            return refuse(&mut self, NotifyType::AUTHENTICATION_FAILED, why);
        }
        let signed = (|| {
            let c = &self.config;
            let my_auth =
                make_auth(&c.auth, prf, &self.msg2, &self.ni, &self.ike.keys.sk_pr, &c.local_id)?;
            Ok::<_, Error>(self.identity_payloads(my_auth))
        })();
        let head = match signed {
            Ok(h) => h,
            Err(e) => return Err(Rejected::Failed(e)),
        };
        let peer_id = idi.clone();
        self.finish(&payloads, peer_id, head)
    }

    /// Our IDr, CERT chain, INITIAL_CONTACT (when set) and `auth`: what the first IKE_AUTH
    /// response opens with.
    pub(crate) fn identity_payloads(&self, auth: wire::ikev2::Auth) -> Vec<Payload> {
        let c = &self.config;
        let mut inner = vec![Payload::IdR(c.local_id.clone())];
        // §1.2: the responder "MAY send its certificate(s) in CERT payload(s)"; the
        // CERTREQ was in IKE_SA_INIT, so only the chain goes here.
        inner.extend(cert_payloads(&c.auth).into_iter().filter(|p| matches!(p, Payload::Cert(_))));
        if self.initial_contact {
            inner.push(notify(NotifyType::INITIAL_CONTACT, Vec::new()));
        }
        inner.push(Payload::Auth(auth));
        inner
    }

    /// The peer is authenticated as `peer_id`: the CHILD SA from the request's `payloads`
    /// (the first IKE_AUTH request's, with EAP), answered with `head` (IDr, CERT, AUTH; after
    /// EAP the MSK's AUTH alone), then CP(CFG_REPLY), SA, TSi and TSr.
    pub(crate) fn finish(
        mut self,
        payloads: &[Payload],
        peer_id: Id,
        head: Vec<Payload>,
    ) -> Result<AuthOutcome, Rejected<Self>> {
        let refuse = |st: &mut Self, ty: NotifyType, error: Error| match st
            .respond(&[notify(ty, Vec::new())])
        {
            Ok(reply) => Ok(AuthOutcome::Failed(error, reply)),
            Err(e) => Err(Rejected::Failed(e)),
        };
        let prf = self.ike.suite.prf;
        // §2.21.3: a CHILD SA refused in IKE_AUTH (NO_PROPOSAL_CHOSEN, TS_UNACCEPTABLE) leaves
        // the IKE SA up: the response carries IDr and AUTH and the notify instead of SA, TSi
        // and TSr (§1.2: "If creating the Child SA during the IKE_AUTH exchange fails for some
        // reason, the IKE SA is still created as usual").
        let grant = match self.address.take() {
            Some(AddressAnswer::Granted(g)) => Some(g),
            Some(a) => {
                let ty = a.refusal().unwrap_or(NotifyType::INTERNAL_ADDRESS_FAILURE);
                let e = PeerMisbehaved::ErrorNotify(ty).into();
                return self.without_child(payloads, peer_id, head, ty, e);
            }
            None => None,
        };
        let child = self.child(payloads, grant.as_ref());
        let (num, suite, spi_out, tsi, tsr, mode) = match child {
            Ok(v) => v,
            Err((ty, e)) if ty == NotifyType::INVALID_SYNTAX => return refuse(&mut self, ty, e),
            Err((ty, e)) => return self.without_child(payloads, peer_id, head, ty, e),
        };
        let result = (|| {
            let spi_in = crypto::random_spi(self.provider)?;
            let mut inner = head;
            // §3.15.4's example: "CP(CFG_REPLY)" right after AUTH, before SA, TSi and TSr.
            if let Some(g) = &grant {
                inner.push(cfg::reply(g));
            }
            if mode == Mode::Transport {
                inner.push(notify(NotifyType::USE_TRANSPORT_MODE, Vec::new()));
            }
            inner.push(Payload::Sa(Sa { proposals: vec![suite.to_proposal(num, spi_in)?] }));
            inner.push(Payload::TsI(Ts { selectors: tsi.clone() }));
            inner.push(Payload::TsR(Ts { selectors: tsr.clone() }));
            let reply = self.respond(&inner)?;
            let km = ChildKeyMat::derive(
                prf,
                &self.ike.keys.sk_d,
                &suite.esp,
                None,
                &self.ni,
                &self.nr,
            )?;
            let child = ChildSaKeys {
                suite,
                mode,
                spi_in,
                spi_out,
                enc_key_in: km.encr_i,
                auth_key_in: km.integ_i,
                enc_key_out: km.encr_r,
                auth_key_out: km.integ_r,
                local_ts: tsr,
                remote_ts: tsi,
            };
            Ok::<_, Error>((child, reply))
        })();
        match result {
            Ok((child, reply)) => {
                let mut ike = self.ike;
                ike.last_response = Some(reply.clone());
                let initial_contact = find_notify(payloads, NotifyType::INITIAL_CONTACT).is_some();
                let e = Established {
                    ike,
                    child: Some(child),
                    child_error: None,
                    peer_id,
                    initial_contact,
                    vip: grant.unwrap_or_default(),
                };
                Ok(AuthOutcome::Established(Box::new(e), reply))
            }
            Err(e) => Err(Rejected::Failed(e)),
        }
    }

    /// The IKE SA up without the CHILD SA it was asked for: `head` (IDr, CERT and AUTH —
    /// our chain as with a CHILD SA: without it a peer that authenticates us by certificate
    /// cannot verify the AUTH that keeps the IKE SA up) and the notify `ty`.
    fn without_child(
        mut self,
        payloads: &[Payload],
        peer_id: Id,
        head: Vec<Payload>,
        ty: NotifyType,
        error: Error,
    ) -> Result<AuthOutcome, Rejected<Self>> {
        let result = {
            let mut inner = head;
            inner.push(notify(ty, Vec::new()));
            self.respond(&inner)
        };
        match result {
            Ok(reply) => {
                let mut ike = self.ike;
                ike.last_response = Some(reply.clone());
                let initial_contact = find_notify(payloads, NotifyType::INITIAL_CONTACT).is_some();
                let e = Established {
                    ike,
                    child: None,
                    child_error: Some(error),
                    peer_id,
                    initial_contact,
                    vip: Default::default(),
                };
                Ok(AuthOutcome::Established(Box::new(e), reply))
            }
            Err(e) => Err(Rejected::Failed(e)),
        }
    }

    /// Chooses the CHILD SA: proposal (§2.7), mode (§1.3.1), narrowed selectors (§2.9).
    #[allow(clippy::type_complexity)]
    fn child(
        &self,
        payloads: &[Payload],
        grant: Option<&crate::pool::Grant>,
    ) -> Result<
        (
            u8,
            ChildSuite,
            u32,
            Vec<wire::ikev2::TrafficSelector>,
            Vec<wire::ikev2::TrafficSelector>,
            Mode,
        ),
        (NotifyType, Error),
    > {
        let ex = ExchangeType::IKE_AUTH;
        let syntax = |what| (NotifyType::INVALID_SYNTAX, missing(ex, what));
        let sa = take_payload!(payloads, Sa).ok_or_else(|| syntax("SA"))?;
        let tsi = take_payload!(payloads, TsI).ok_or_else(|| syntax("TSi"))?;
        let tsr = take_payload!(payloads, TsR).ok_or_else(|| syntax("TSr"))?;
        let ours: Vec<ChildSuite> =
            self.config.child_suites.iter().map(|s| ChildSuite { pfs: None, ..*s }).collect();
        let no_proposal = (
            NotifyType::NO_PROPOSAL_CHOSEN,
            PeerMisbehaved::ErrorNotify(NotifyType::NO_PROPOSAL_CHOSEN).into(),
        );
        let (num, suite, spi_out) = ChildSuite::select(&sa.proposals, &ours).ok_or(no_proposal)?;
        let mut tsi_n = ts_narrow(&tsi.selectors, &self.config.remote_ts);
        // §2.9: a road warrior proposes TSi 0.0.0.0/0 (or its old address); the responder
        // narrows it to the address it just leased.
        if let Some(g) = grant {
            let hosts: Vec<_> =
                g.addrs.iter().map(|&(a, _)| wire::ikev2::TrafficSelector::host(a)).collect();
            tsi_n = ts_narrow(&tsi_n, &hosts);
        }
        let tsr_n = ts_narrow(&tsr.selectors, &self.config.local_ts);
        if tsi_n.is_empty() || tsr_n.is_empty() {
            let e = PeerMisbehaved::ErrorNotify(NotifyType::TS_UNACCEPTABLE).into();
            return Err((NotifyType::TS_UNACCEPTABLE, e));
        }
        let transport = find_notify(payloads, NotifyType::USE_TRANSPORT_MODE).is_some()
            && self.config.mode == Mode::Transport;
        Ok((
            num,
            suite,
            spi_out,
            tsi_n,
            tsr_n,
            if transport { Mode::Transport } else { Mode::Tunnel },
        ))
    }
}
