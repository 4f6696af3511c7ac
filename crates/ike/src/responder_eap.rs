//! IKE_AUTH with EAP on the responder (RFC 7296 §2.16, §3.16). Read §2.16 first:
//!
//! ```text
//!   HDR, SK {IDi, [CERTREQ,] [IDr,] SAi2, TSi, TSr}  -->   (no AUTH: the peer wants EAP)
//!                    <--  HDR, SK {IDr, [CERT,] AUTH, EAP}
//!   HDR, SK {EAP}  -->
//!                    <--  HDR, SK {EAP (Request)}        ... one round per EAP Request
//!   HDR, SK {EAP}  -->
//!                    <--  HDR, SK {EAP (Success)}
//!   HDR, SK {AUTH} -->
//!                    <--  HDR, SK {AUTH, SAr2, TSi, TSr}
//! ```
//!
//! (the diagram paraphrased from §2.16). Both final AUTHs are §2.15's shared-key form keyed by
//! the method's MSK, §2.16: "For EAP methods that create a shared key as a side effect of
//! authentication, that shared key MUST be used by both the initiator and responder to
//! generate AUTH payloads in messages 7 and 8 using the syntax for shared secrets specified in
//! Section 2.15. The shared key from EAP is the field from the EAP specification named MSK."
//! The CHILD SA, CP(CFG_REPLY) and traffic selectors come from
//! the first request, answered in the last response; the identity that is authenticated (and
//! leases an address) is the EAP user, not IDi.

use crate::auth::{make_auth, psk_auth};
use crate::cfg;
use crate::eap::{EapConfig, EapServer, EapStep};
use crate::error::{Error, PeerMisbehaved};
use crate::keys::Secret;
use crate::responder::{AuthOutcome, ResponderAuth};
use crate::sa::{Rejected, missing, notify, random, take_payload};
use wire::ikev2::{Auth, AuthMethod, ExchangeType, Id, NotifyType, Payload};

/// Where the EAP conversation is.
enum Phase {
    /// The method runs.
    Method(EapServer),
    /// EAP Success sent: the next request carries the peer's AUTH keyed by `msk`.
    Authenticated { user: Vec<u8>, msk: Secret },
}

/// The responder between IKE_AUTH rounds of EAP: our first response (IDr, CERT, AUTH) is
/// sent; each request carries the peer's next EAP Response, the last one its AUTH.
pub struct ResponderEap {
    auth: ResponderAuth,
    /// The first IKE_AUTH request's payloads (SA, TSi, TSr, CP, notifies): the CHILD SA and
    /// the address are answered from them at the end.
    first: Vec<Payload>,
    phase: Phase,
    /// The last request and our response to it, for a retransmission (§2.1).
    last: (Vec<u8>, Vec<u8>),
}

impl std::fmt::Debug for ResponderEap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let phase = match &self.phase {
            Phase::Method(_) => "method",
            Phase::Authenticated { .. } => "authenticated",
        };
        f.debug_struct("ResponderEap")
            .field("auth", &self.auth)
            .field("phase", &phase)
            .finish_non_exhaustive()
    }
}

/// The EAP user as an IKE identity, the way strongSwan reads an identity string: an address
/// with `@` is ID_RFC822_ADDR, anything else ID_FQDN.
pub fn eap_identity(user: &[u8]) -> Id {
    let id_type = if user.contains(&b'@') {
        wire::ikev2::IdType::ID_RFC822_ADDR
    } else {
        wire::ikev2::IdType::ID_FQDN
    };
    Id { id_type, data: user.to_vec() }
}

fn refuse(
    st: &mut ResponderAuth,
    ty: NotifyType,
    error: Error,
) -> Result<AuthOutcome, Rejected<ResponderAuth>> {
    match st.respond(&[notify(ty, Vec::new())]) {
        Ok(reply) => Ok(AuthOutcome::Failed(error, reply)),
        Err(e) => Err(Rejected::Failed(e)),
    }
}

impl ResponderEap {
    /// The first IKE_AUTH request (`bytes`, opened into `payloads`) on a connection whose peer
    /// authenticates with EAP: answered with IDr, CERT, our signature AUTH and EAP
    /// Request/Identity.
    pub(crate) fn start(
        mut auth: ResponderAuth,
        bytes: &[u8],
        payloads: Vec<Payload>,
        eap: EapConfig,
    ) -> Result<AuthOutcome, Rejected<ResponderAuth>> {
        let ex = ExchangeType::IKE_AUTH;
        let Some(idi) = take_payload!(payloads, IdI).cloned() else {
            return refuse(&mut auth, NotifyType::INVALID_SYNTAX, missing(ex, "IDi"));
        };
        // §2.16 (paraphrased): an initiator asks for EAP by leaving AUTH out of its first
        // IKE_AUTH message. This connection authenticates its peers by EAP only.
        if take_payload!(payloads, Auth).is_some() {
            let e = PeerMisbehaved::Eap("AUTH sent where EAP is required").into();
            return refuse(&mut auth, NotifyType::AUTHENTICATION_FAILED, e);
        }
        if auth.config.remote_id.as_ref().is_some_and(|r| *r != idi) {
            let e = PeerMisbehaved::UnexpectedIdentity.into();
            return refuse(&mut auth, NotifyType::AUTHENTICATION_FAILED, e);
        }
        let result = (|| {
            let c = &auth.config;
            let prf = auth.ike.suite.prf;
            let sig =
                make_auth(&c.auth, prf, &auth.msg2, &auth.ni, &auth.ike.keys.sk_pr, &c.local_id)?;
            let [identifier] = random::<1>(auth.provider)?;
            let (server, request) = EapServer::start(eap, identifier);
            let mut inner = auth.identity_payloads(sig);
            inner.push(Payload::Eap(request));
            Ok::<_, Error>((server, auth.respond(&inner)?))
        })();
        match result {
            Ok((server, reply)) => {
                auth.msg_id += 1;
                let st = ResponderEap {
                    auth,
                    first: payloads,
                    phase: Phase::Method(server),
                    last: (bytes.to_vec(), reply.clone()),
                };
                Ok(AuthOutcome::Eap(Box::new(st), reply))
            }
            Err(e) => Err(Rejected::Failed(e)),
        }
    }

    /// When the driver should forget it (the half-open timeout runs on through EAP).
    pub fn expires_ms(&self) -> u64 {
        self.auth.expires_ms()
    }

    /// The address families the first request's CP(CFG_REQUEST) asked for (see
    /// [`ResponderAuth::requested_families`]).
    pub fn requested_families(&self) -> Option<Vec<bool>> {
        cfg::requested_families(&self.first)
    }

    /// The EAP user once EAP succeeded and no address answer is set yet: the endpoint leases
    /// under this identity ([`ResponderEap::set_address_answer`]) before the AUTH request.
    pub fn wants_address(&self) -> Option<Id> {
        match &self.phase {
            Phase::Authenticated { user, .. } if self.auth.address.is_none() => {
                Some(eap_identity(user))
            }
            _ => None,
        }
    }

    /// What the last response answers about addresses.
    pub fn set_address_answer(&mut self, answer: Option<cfg::AddressAnswer>) {
        self.auth.set_address_answer(answer);
    }

    fn next(
        mut self: Box<Self>,
        bytes: &[u8],
        inner: &[Payload],
    ) -> Result<AuthOutcome, Rejected<Self>> {
        match self.auth.respond(inner) {
            Ok(reply) => {
                self.auth.msg_id += 1;
                self.last = (bytes.to_vec(), reply.clone());
                Ok(AuthOutcome::Eap(self, reply))
            }
            Err(e) => Err(Rejected::Failed(e)),
        }
    }

    fn refuse(&mut self, ty: NotifyType, error: Error) -> Result<AuthOutcome, Rejected<Self>> {
        refuse(&mut self.auth, ty, error).map_err(|e| Rejected::Failed(e.error().clone()))
    }

    /// The next IKE_AUTH request.
    pub fn handle(self: Box<Self>, bytes: &[u8]) -> Result<AuthOutcome, Rejected<Self>> {
        if bytes == self.last.0.as_slice() {
            let reply = self.last.1.clone();
            return Ok(AuthOutcome::Eap(self, reply));
        }
        let payloads = match self.auth.auth_request(bytes) {
            Ok(p) => p,
            Err(error) => return Err(Rejected::Dropped { state: self, error }),
        };
        let mut st = self;
        let ex = ExchangeType::IKE_AUTH;
        match std::mem::replace(
            &mut st.phase,
            Phase::Authenticated { user: Vec::new(), msk: Secret::default() },
        ) {
            Phase::Method(server) => {
                let Some(eap) = take_payload!(payloads, Eap) else {
                    return st.refuse(NotifyType::INVALID_SYNTAX, missing(ex, "EAP"));
                };
                let challenge = match random::<16>(st.auth.provider) {
                    Ok(c) => c,
                    Err(e) => return Err(Rejected::Failed(e)),
                };
                match server.handle(eap, challenge) {
                    EapStep::Request(server, req) => {
                        st.phase = Phase::Method(server);
                        st.next(bytes, &[Payload::Eap(req)])
                    }
                    EapStep::Success { eap, user, msk } => {
                        st.phase = Phase::Authenticated { user, msk };
                        st.next(bytes, &[Payload::Eap(eap)])
                    }
                    // The EAP Failure, then AUTHENTICATION_FAILED for the IKE SA (§2.21.2).
                    EapStep::Failure(eap, error) => {
                        let n = notify(NotifyType::AUTHENTICATION_FAILED, Vec::new());
                        match st.auth.respond(&[Payload::Eap(eap), n]) {
                            Ok(reply) => Ok(AuthOutcome::Failed(error, reply)),
                            Err(e) => Err(Rejected::Failed(e)),
                        }
                    }
                }
            }
            Phase::Authenticated { user, msk } => st.authenticated(&payloads, &user, &msk),
        }
    }

    /// The request after EAP Success: the peer's AUTH keyed by the MSK, then ours and the
    /// CHILD SA.
    fn authenticated(
        mut self: Box<Self>,
        payloads: &[Payload],
        user: &[u8],
        msk: &Secret,
    ) -> Result<AuthOutcome, Rejected<Self>> {
        let Some(got) = take_payload!(payloads, Auth) else {
            return self
                .refuse(NotifyType::INVALID_SYNTAX, missing(ExchangeType::IKE_AUTH, "AUTH"));
        };
        let Some(idi) = take_payload!(self.first, IdI).cloned() else {
            return Err(Rejected::Failed(missing(ExchangeType::IKE_AUTH, "IDi")));
        };
        let a = &self.auth;
        let prf = a.ike.suite.prf;
        // §2.15 with the MSK as the shared secret: the initiator's SignedOctets are its
        // IKE_SA_INIT message, our nonce and prf(SK_pi, IDi).
        let want = psk_auth(prf, msk, &a.msg1, &a.nr, &a.ike.keys.sk_pi, &idi);
        let ok = got.method == AuthMethod::SHARED_KEY_MIC
            && crypto::provider::constant_time_eq(&want, &got.data);
        if !ok {
            let e = PeerMisbehaved::AuthenticationFailed(got.method.0).into();
            return self.refuse(NotifyType::AUTHENTICATION_FAILED, e);
        }
        let ours = psk_auth(prf, msk, &a.msg2, &a.ni, &a.ike.keys.sk_pr, &a.config.local_id);
        let head =
            vec![Payload::Auth(Auth { method: AuthMethod::SHARED_KEY_MIC, data: ours.to_vec() })];
        let ResponderEap { auth, first, .. } = *self;
        auth.finish(&first, eap_identity(user), head)
            .map_err(|r| Rejected::Failed(r.error().clone()))
    }
}
