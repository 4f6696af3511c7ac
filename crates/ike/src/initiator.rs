//! The initiator of the initial exchanges (RFC 7296 §1.2): IKE_SA_INIT with NAT detection
//! (§2.23), answering a COOKIE (§2.6) or INVALID_KE_PAYLOAD (§1.2) by sending the request again,
//! then IKE_AUTH with a pre-shared key (§2.15) carrying the first CHILD SA (§1.2, §2.9, §2.17).
//! Each state is a type; `handle` consumes it and one message and returns the next state, or
//! gives it back untouched with the reason the message was dropped.

use crate::auth::{
    PeerCredentials, SIGNATURE_HASH_ALGORITHMS, cert_payloads, make_auth, nat_hash, peer_certs,
    ts_within, verify_auth,
};
use crate::config::{ChildSaKeys, Config, Endpoints, Mode, NatStatus};
use crate::error::{ConfigError, Error, PeerMisbehaved};
use crate::keys::{ChildKeyMat, IkeSaKeys, skeyseed};
use crate::sa::{
    Established, IkeSa, NONCE_LEN, Rejected, Retransmit, emit, error_notify, find_notify, header,
    missing, notify, random, random_ike_spi, take_payload,
};
use crate::sk::{Role, SkKeys};
use crate::suite::{ChildSuite, IkeSuite};
use crypto::{DhGroup, KeyExchange, Provider};
use wire::ikev2::{ExchangeType, Ke, Message, NotifyType, Payload, Sa, Ts};

const MAX_RETRIES: u8 = 3;

/// Waiting for the IKE_SA_INIT response.
pub struct InitiatorSaInit {
    config: Config,
    provider: &'static dyn Provider,
    ep: Endpoints,
    spi_i: u64,
    ni: Vec<u8>,
    ke: KeyExchange,
    cookie: Option<Vec<u8>>,
    retries: u8,
    retransmit: Retransmit,
    initial_contact: bool,
    /// Virtual IPs to ask for in IKE_AUTH (§2.19); empty: no CP payload.
    vips: Vec<std::net::IpAddr>,
}

impl std::fmt::Debug for InitiatorSaInit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitiatorSaInit")
            .field("spi_i", &format_args!("{:016x}", self.spi_i))
            .finish_non_exhaustive()
    }
}

/// What an IKE_SA_INIT response leads to.
#[derive(Debug)]
pub enum SaInitNext {
    /// The responder asked for a cookie or another group: send these bytes, keep waiting.
    Resend(InitiatorSaInit, Vec<u8>),
    /// Keys are up: send this IKE_AUTH request.
    Auth(InitiatorAuth, Vec<u8>),
}

/// Waiting for the IKE_AUTH response.
pub struct InitiatorAuth {
    config: Config,
    ike: IkeSa,
    ni: Vec<u8>,
    nr: Vec<u8>,
    /// The responder's IKE_SA_INIT message, which its AUTH covers (§2.15).
    msg2: Vec<u8>,
    spi_in: u32,
    retransmit: Retransmit,
    /// When the IKE_SA_INIT response came: the time the peer's certificates are checked at.
    init_ms: u64,
    /// Virtual IPs asked for (§2.19).
    vips: Vec<std::net::IpAddr>,
}

impl std::fmt::Debug for InitiatorAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitiatorAuth").field("ike", &self.ike).finish_non_exhaustive()
    }
}

/// Starts an IKE SA: returns the waiting state and the IKE_SA_INIT request to send.
pub fn start(
    config: Config,
    provider: &'static dyn Provider,
    ep: Endpoints,
    now_ms: u64,
) -> Result<(InitiatorSaInit, Vec<u8>), Error> {
    config.validate()?;
    let group = config.ike_suites.first().map(|s| s.dh).ok_or(ConfigError::NoProposals)?;
    let mut s = InitiatorSaInit {
        spi_i: random_ike_spi(provider)?,
        ni: random::<NONCE_LEN>(provider)?.to_vec(),
        ke: KeyExchange::generate(group)?,
        cookie: None,
        retries: 0,
        retransmit: Retransmit::new(Vec::new(), now_ms),
        initial_contact: false,
        vips: Vec::new(),
        config,
        provider,
        ep,
    };
    let req = s.request()?;
    s.retransmit = Retransmit::new(req.clone(), now_ms);
    Ok((s, req))
}

fn dropped<S>(state: S, error: impl Into<Error>) -> Rejected<S> {
    Rejected::Dropped { state: Box::new(state), error: error.into() }
}

impl InitiatorSaInit {
    /// The IKE_SA_INIT request (§1.2): [N(COOKIE),] SA, KE, Ni, N(NAT_DETECTION_*).
    fn request(&self) -> Result<Vec<u8>, Error> {
        let mut payloads = Vec::new();
        if let Some(c) = &self.cookie {
            payloads.push(notify(NotifyType::COOKIE, c.clone()));
        }
        let mut proposals = Vec::new();
        for (n, s) in self.config.ike_suites.iter().enumerate() {
            proposals.push(s.to_proposal(u8::try_from(n + 1).unwrap_or(u8::MAX), Vec::new())?);
        }
        payloads.push(Payload::Sa(Sa { proposals }));
        let data = self.ke.public_key().to_vec();
        payloads.push(Payload::Ke(Ke { dh_group: self.ke.group().ike_id(), data }));
        payloads.push(Payload::Nonce(self.ni.clone()));
        let src = nat_hash(self.spi_i, 0, self.ep.local).to_vec();
        let dst = nat_hash(self.spi_i, 0, self.ep.remote).to_vec();
        payloads.push(notify(NotifyType::NAT_DETECTION_SOURCE_IP, src));
        payloads.push(notify(NotifyType::NAT_DETECTION_DESTINATION_IP, dst));
        let hashes = SIGNATURE_HASH_ALGORITHMS.to_vec();
        payloads.push(notify(NotifyType::SIGNATURE_HASH_ALGORITHMS, hashes));
        let h = header(self.spi_i, 0, ExchangeType::IKE_SA_INIT, Role::Initiator, false, 0);
        emit(&Message { header: h, payloads })
    }

    /// Our IKE SA initiator SPI (the driver's key for this exchange).
    pub fn spi_i(&self) -> u64 {
        self.spi_i
    }

    /// The retransmission timer (§2.1).
    pub fn retransmit(&mut self) -> &mut Retransmit {
        &mut self.retransmit
    }

    /// Whether our IKE_AUTH request carries INITIAL_CONTACT (§2.4): set it when we hold no
    /// other IKE SA with the peer, so that it drops any it still holds with us.
    pub fn set_initial_contact(&mut self, on: bool) {
        self.initial_contact = on;
    }

    /// Virtual IPs to ask for with CP(CFG_REQUEST) in IKE_AUTH (§2.19: "Since the IKE_AUTH
    /// exchange creates an IKE SA and a Child SA, the IRAC MUST request the IRAS-controlled
    /// address (and optionally other information concerning the protected network) in the
    /// IKE_AUTH exchange."); `0.0.0.0` or `::` asks for any one.
    pub fn set_virtual_ips(&mut self, vips: Vec<std::net::IpAddr>) {
        self.vips = vips;
    }

    fn resend(mut self, now_ms: u64) -> Result<SaInitNext, Rejected<Self>> {
        self.retries += 1;
        match self.request() {
            Ok(req) => {
                self.retransmit = Retransmit::new(req.clone(), now_ms);
                Ok(SaInitNext::Resend(self, req))
            }
            Err(error) => Err(Rejected::Failed(error)),
        }
    }

    /// Handles a datagram that should be the IKE_SA_INIT response.
    pub fn handle(self, now_ms: u64, bytes: &[u8]) -> Result<SaInitNext, Rejected<Self>> {
        let m = match Message::parse(bytes) {
            Ok(m) => m,
            Err(e) => return Err(dropped(self, Error::InvalidMessage(e))),
        };
        let h = &m.header;
        if h.exchange_type != ExchangeType::IKE_SA_INIT
            || !h.flags.response
            || h.flags.initiator
            || h.message_id != 0
            || h.spi_i != self.spi_i
        {
            return Err(dropped(
                self,
                PeerMisbehaved::UnexpectedMessage("not our IKE_SA_INIT response"),
            ));
        }
        if let Some(c) = find_notify(&m.payloads, NotifyType::COOKIE) {
            if self.retries >= MAX_RETRIES || c.data.is_empty() || c.data.len() > 64 {
                return Err(dropped(
                    self,
                    PeerMisbehaved::UnexpectedMessage("cookie loop or bad cookie"),
                ));
            }
            let mut s = self;
            s.cookie = Some(c.data.clone());
            return s.resend(now_ms);
        }
        if let Some(n) = find_notify(&m.payloads, NotifyType::INVALID_KE_PAYLOAD) {
            let want = <[u8; 2]>::try_from(n.data.as_slice()).ok().map(u16::from_be_bytes);
            let ours = want.filter(|g| self.config.ike_suites.iter().any(|s| s.dh.ike_id() == *g));
            let group = ours.and_then(DhGroup::from_ike_id).filter(|g| *g != self.ke.group());
            let (Some(group), true) = (group, self.retries < MAX_RETRIES) else {
                return Err(dropped(
                    self,
                    PeerMisbehaved::ErrorNotify(NotifyType::INVALID_KE_PAYLOAD),
                ));
            };
            let mut s = self;
            s.ke = match KeyExchange::generate(group) {
                Ok(ke) => ke,
                Err(e) => return Err(Rejected::Failed(e.into())),
            };
            return s.resend(now_ms);
        }
        if let Some(ty) = error_notify(&m.payloads) {
            // §2.21.1: unauthenticated, but nothing else will come; give up.
            return Err(Rejected::Failed(PeerMisbehaved::ErrorNotify(ty).into()));
        }
        let (suite, ke_r, nr) = match self.check_response(&m) {
            Ok(v) => v,
            Err(e) => return Err(dropped(self, e)),
        };
        self.into_auth(now_ms, &m, bytes, suite, &ke_r, nr).map_err(Rejected::Failed)
    }

    fn check_response(&self, m: &Message) -> Result<(IkeSuite, Vec<u8>, Vec<u8>), Error> {
        let ex = ExchangeType::IKE_SA_INIT;
        let sa = take_payload!(m.payloads, Sa).ok_or_else(|| missing(ex, "SA"))?;
        let ke = take_payload!(m.payloads, Ke).ok_or_else(|| missing(ex, "KE"))?;
        let nr = take_payload!(m.payloads, Nonce).ok_or_else(|| missing(ex, "Nonce"))?;
        let [p] = sa.proposals.as_slice() else {
            return Err(PeerMisbehaved::ProposalNotOffered("not exactly one proposal").into());
        };
        let suite = IkeSuite::from_chosen(p)?;
        if !self.config.ike_suites.contains(&suite) || m.header.spi_r == 0 {
            return Err(PeerMisbehaved::ProposalNotOffered("suite").into());
        }
        let mine = self.ke.group();
        if suite.dh != mine || ke.dh_group != mine.ike_id() || ke.data.len() != mine.public_len() {
            return Err(PeerMisbehaved::KeMismatch { got: ke.dh_group, want: mine.ike_id() }.into());
        }
        Ok((suite, ke.data.clone(), nr.clone()))
    }

    /// Derives the keys (§2.14), checks NAT (§2.23) and builds the IKE_AUTH request.
    fn into_auth(
        self,
        now_ms: u64,
        m: &Message,
        msg2: &[u8],
        suite: IkeSuite,
        ke_r: &[u8],
        nr: Vec<u8>,
    ) -> Result<SaInitNext, Error> {
        let InitiatorSaInit {
            config,
            provider,
            ep,
            spi_i,
            ni,
            ke,
            retransmit,
            initial_contact,
            vips,
            ..
        } = self;
        let spi_r = m.header.spi_r;
        let g_ir = ke.agree(ke_r).map_err(|_| PeerMisbehaved::BadPublicValue)?;
        let seed = skeyseed(suite.prf, &ni, &nr, g_ir.as_bytes());
        let keys = IkeSaKeys::derive(&suite, &seed, &ni, &nr, spi_i, spi_r)?;
        let sk = SkKeys::new(provider, &suite, &keys, Role::Initiator)?;
        let differs = |ty, addr| {
            find_notify(&m.payloads, ty).is_some_and(|n| n.data != nat_hash(spi_i, spi_r, addr))
        };
        let nat = NatStatus {
            remote_behind_nat: differs(NotifyType::NAT_DETECTION_SOURCE_IP, ep.remote),
            local_behind_nat: differs(NotifyType::NAT_DETECTION_DESTINATION_IP, ep.local),
        };
        let ike = IkeSa {
            role: Role::Initiator,
            spi_i,
            spi_r,
            suite,
            nat,
            keys,
            sk,
            next_request_id: 2,
            next_peer_request_id: 0,
            last_response: None,
        };
        let spi_in = crypto::random_spi(provider)?;
        let msg1 = retransmit.request().to_vec();
        let mut st = InitiatorAuth {
            config,
            ike,
            ni,
            nr,
            msg2: msg2.to_vec(),
            spi_in,
            retransmit: Retransmit::new(Vec::new(), now_ms),
            init_ms: now_ms,
            vips,
        };
        let req = st.request(provider, &msg1, initial_contact)?;
        st.retransmit = Retransmit::new(req.clone(), now_ms);
        Ok(SaInitNext::Auth(st, req))
    }
}

impl InitiatorAuth {
    /// The IKE_AUTH request (§1.2): SK {IDi, [CERT,] [CERTREQ,] [N(INITIAL_CONTACT),] [IDr,]
    /// AUTH, [N(USE_TRANSPORT_MODE),] SA, TSi, TSr}.
    fn request(
        &mut self,
        provider: &dyn Provider,
        msg1: &[u8],
        initial_contact: bool,
    ) -> Result<Vec<u8>, Error> {
        let c = &self.config;
        let prf = self.ike.suite.prf;
        let auth = make_auth(&c.auth, prf, msg1, &self.nr, &self.ike.keys.sk_pi, &c.local_id)?;
        let mut inner = vec![Payload::IdI(c.local_id.clone())];
        // §1.2: "The initiator ... MAY send its certificate(s) in CERT payload(s) and a list
        // of its trust anchors in CERTREQ payload(s)." We always send the chain (swanctl's
        // send_cert = always), so a peer without our certificate configured can check it.
        inner.extend(cert_payloads(&c.auth));
        if initial_contact {
            inner.push(notify(NotifyType::INITIAL_CONTACT, Vec::new()));
        }
        if let Some(r) = &c.remote_id {
            inner.push(Payload::IdR(r.clone()));
        }
        inner.push(Payload::Auth(auth));
        // §2.19: "In all cases, the CP payload MUST be inserted before the SA payload."
        if !self.vips.is_empty() {
            inner.push(crate::cfg::request(&self.vips));
        }
        if c.mode == Mode::Transport {
            inner.push(notify(NotifyType::USE_TRANSPORT_MODE, Vec::new()));
        }
        let mut proposals = Vec::new();
        for (n, s) in c.child_suites.iter().enumerate() {
            let s = ChildSuite { pfs: None, ..*s };
            proposals.push(s.to_proposal(u8::try_from(n + 1).unwrap_or(u8::MAX), self.spi_in)?);
        }
        inner.push(Payload::Sa(Sa { proposals }));
        inner.push(Payload::TsI(Ts { selectors: c.local_ts.clone() }));
        inner.push(Payload::TsR(Ts { selectors: c.remote_ts.clone() }));
        let h = header(
            self.ike.spi_i,
            self.ike.spi_r,
            ExchangeType::IKE_AUTH,
            Role::Initiator,
            false,
            1,
        );
        self.ike.sk.seal(provider, &h, &inner)
    }

    /// What NAT detection found: the driver floats to port 4500 when either side is translated.
    pub fn nat(&self) -> NatStatus {
        self.ike.nat
    }

    /// The IKE SA's tshark `ikev2_decryption_table` line (its keys exist from IKE_SA_INIT on,
    /// so a failed IKE_AUTH can be read too).
    pub fn decryption_line(&self) -> Option<String> {
        crate::wireshark::ikev2_decryption_line(&self.ike)
    }

    /// The retransmission timer (§2.1).
    pub fn retransmit(&mut self) -> &mut Retransmit {
        &mut self.retransmit
    }

    /// Handles a datagram that should be the IKE_AUTH response.
    pub fn handle(self, bytes: &[u8]) -> Result<Established, Rejected<Self>> {
        let opened = wire::ikev2::Packet::new_checked(bytes)
            .map_err(Error::InvalidMessage)
            .and_then(|p| {
                let ok = p.spi_i() == self.ike.spi_i
                    && p.spi_r() == self.ike.spi_r
                    && p.exchange_type() == ExchangeType::IKE_AUTH
                    && p.flags().response
                    && p.message_id() == 1;
                if ok {
                    Ok(())
                } else {
                    Err(PeerMisbehaved::UnexpectedMessage("not our IKE_AUTH response").into())
                }
            })
            .and_then(|()| self.ike.sk.open(bytes));
        let payloads = match opened {
            Ok((_, payloads)) => payloads,
            Err(e) => return Err(dropped(self, e)),
        };
        // Authenticated from here on: any failure ends the exchange (§2.21.2).
        self.finish(&payloads).map_err(Rejected::Failed)
    }

    fn finish(self, payloads: &[Payload]) -> Result<Established, Error> {
        let ex = ExchangeType::IKE_AUTH;
        let error = error_notify(payloads);
        let (idr, auth) = match (take_payload!(payloads, IdR), take_payload!(payloads, Auth)) {
            (Some(idr), Some(auth)) => (idr, auth),
            _ => {
                return Err(match error {
                    Some(ty) => PeerMisbehaved::ErrorNotify(ty).into(),
                    None => missing(ex, "IDr or AUTH"),
                });
            }
        };
        let c = &self.config;
        if c.remote_id.as_ref().is_some_and(|want| want != idr) {
            return Err(PeerMisbehaved::UnexpectedIdentity.into());
        }
        let prf = self.ike.suite.prf;
        let certs = peer_certs(payloads);
        let peer = PeerCredentials { certs: &certs, now_ms: self.init_ms };
        verify_auth(&c.auth, prf, &self.msg2, &self.ni, &self.ike.keys.sk_pr, idr, auth, peer)?;
        let initial_contact = find_notify(payloads, NotifyType::INITIAL_CONTACT).is_some();
        // §2.21.3: the responder authenticated but refused the CHILD SA (IDr, AUTH and an error
        // notify, no SA): the IKE SA stands without it.
        if let Some(ty) = error {
            return Ok(Established {
                ike: self.ike,
                child: None,
                child_error: Some(PeerMisbehaved::ErrorNotify(ty).into()),
                peer_id: idr.clone(),
                initial_contact,
                vip: Default::default(),
            });
        }
        let sa = take_payload!(payloads, Sa).ok_or_else(|| missing(ex, "SA"))?;
        let tsi = take_payload!(payloads, TsI).ok_or_else(|| missing(ex, "TSi"))?;
        let tsr = take_payload!(payloads, TsR).ok_or_else(|| missing(ex, "TSr"))?;
        let [p] = sa.proposals.as_slice() else {
            return Err(PeerMisbehaved::ProposalNotOffered("not exactly one child proposal").into());
        };
        let (suite, spi_out) = ChildSuite::from_chosen(p)?;
        if suite.pfs.is_some()
            || !c.child_suites.iter().any(|s| ChildSuite { pfs: None, ..*s } == suite)
        {
            return Err(PeerMisbehaved::ProposalNotOffered("child suite").into());
        }
        if !ts_within(&tsi.selectors, &c.local_ts) || !ts_within(&tsr.selectors, &c.remote_ts) {
            return Err(PeerMisbehaved::TrafficSelectorsNotNarrowed.into());
        }
        let transport = find_notify(payloads, NotifyType::USE_TRANSPORT_MODE).is_some();
        let mode =
            if transport && c.mode == Mode::Transport { Mode::Transport } else { Mode::Tunnel };
        let km =
            ChildKeyMat::derive(prf, &self.ike.keys.sk_d, &suite.esp, None, &self.ni, &self.nr)?;
        let child = ChildSaKeys {
            suite,
            mode,
            spi_in: self.spi_in,
            spi_out,
            enc_key_in: km.encr_r,
            auth_key_in: km.integ_r,
            enc_key_out: km.encr_i,
            auth_key_out: km.integ_i,
            local_ts: tsi.selectors.clone(),
            remote_ts: tsr.selectors.clone(),
        };
        Ok(Established {
            ike: self.ike,
            child: Some(child),
            child_error: None,
            peer_id: idr.clone(),
            initial_contact,
            vip: crate::cfg::read_reply(payloads),
        })
    }
}
