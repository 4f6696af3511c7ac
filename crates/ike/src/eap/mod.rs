//! The EAP authenticator (RFC 3748 §2: the IKE responder is the authenticator, the road warrior
//! the peer) for EAP-MSCHAPv2 (draft-kamath-pppext-eap-mschapv2, RFC 2759), sans-IO: each
//! Response the peer sends moves it one state on and gives the next Request, or the EAP
//! Success with the authenticated user and the MSK, or the EAP Failure. The IKE side (which
//! IKE_AUTH message carries what) is in [`crate::responder_eap`].
//!
//! Order, as strongSwan's charon expects it as a client: Request/Identity (RFC 3748 §5.1),
//! then the MS-CHAPv2 Challenge, the peer's Response, our Success request with the
//! authenticator response, the peer's Success ack, and EAP Success. A wrong password ends with
//! EAP Failure at once: no retry (RFC 2759 §10: "the authenticator SHOULD limit the number of
//! password retries allowed to make brute-force password guessing attacks more difficult").

pub mod mschapv2;

use crate::error::{Error, PeerMisbehaved};
use crate::keys::Secret;
use std::sync::Arc;
use wire::ikev2::{Eap, EapCode, EapType, MsChapV2};
use zeroize::Zeroizing;

/// The name we send in the MS-CHAPv2 Challenge (RFC 2759 §3: the authenticator's name).
pub const AUTHENTICATOR_NAME: &[u8] = b"hipsec";

/// One user EAP-MSCHAPv2 authenticates (swanctl's `secrets { eap-NAME { id = ... secret = ... } }`).
#[derive(Clone)]
pub struct EapUser {
    /// The EAP identity (the MS-CHAPv2 user name), as the peer sends it.
    pub identity: Vec<u8>,
    /// The password's NtPasswordHash (RFC 2759 §8.3): all MS-CHAPv2 needs of it.
    pub password_hash: Zeroizing<[u8; 16]>,
}

impl EapUser {
    /// A user with its password (hashed here; the password itself is not kept).
    pub fn new(identity: &str, password: &str) -> EapUser {
        EapUser {
            identity: identity.as_bytes().to_vec(),
            password_hash: mschapv2::nt_password_hash(password),
        }
    }
}

impl std::fmt::Debug for EapUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EapUser")
            .field("identity", &String::from_utf8_lossy(&self.identity))
            .finish_non_exhaustive()
    }
}

/// How the peer authenticates with EAP (swanctl's `remote { auth = eap-mschapv2 }`): the
/// method and its users.
#[derive(Debug, Clone)]
pub struct EapConfig {
    /// The users and their password hashes.
    pub users: Arc<Vec<EapUser>>,
}

impl EapConfig {
    fn user(&self, name: &[u8]) -> Option<&EapUser> {
        let user = mschapv2::user_part(name);
        let find = |n: &[u8]| self.users.iter().find(|u| u.identity == n);
        find(name).or_else(|| find(user))
    }
}

/// Where the authenticator is.
enum Phase {
    /// Request/Identity sent.
    Identity,
    /// Challenge sent.
    Challenge { challenge: [u8; 16], mschap_id: u8 },
    /// Success request sent; the peer's ack ends the method.
    SuccessSent { user: Vec<u8>, msk: Secret },
}

/// The authenticator between two Requests.
pub struct EapServer {
    config: EapConfig,
    identifier: u8,
    phase: Phase,
}

// By hand: the MSK stays out of Debug output (logs).
impl std::fmt::Debug for EapServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let phase = match &self.phase {
            Phase::Identity => "identity",
            Phase::Challenge { .. } => "challenge",
            Phase::SuccessSent { .. } => "success sent",
        };
        f.debug_struct("EapServer")
            .field("identifier", &self.identifier)
            .field("phase", &phase)
            .finish_non_exhaustive()
    }
}

/// What the peer's Response leads to.
pub enum EapStep {
    /// The next Request.
    Request(EapServer, Eap),
    /// EAP Success: the user that authenticated and the MSK (RFC 7296 §2.16's AUTH key).
    Success {
        /// The EAP Success packet.
        eap: Eap,
        /// The authenticated user name.
        user: Vec<u8>,
        /// The method's MSK.
        msk: Secret,
    },
    /// EAP Failure, and why.
    Failure(Eap, Error),
}

impl std::fmt::Debug for EapStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EapStep::Request(s, eap) => f.debug_tuple("Request").field(s).field(eap).finish(),
            EapStep::Success { eap, user, .. } => f
                .debug_struct("Success")
                .field("eap", eap)
                .field("user", &String::from_utf8_lossy(user))
                .finish_non_exhaustive(),
            EapStep::Failure(eap, e) => f.debug_tuple("Failure").field(eap).field(e).finish(),
        }
    }
}

fn eap_error(what: &'static str) -> Error {
    PeerMisbehaved::Eap(what).into()
}

impl EapServer {
    /// Starts with Request/Identity; `identifier` is the first Identifier (random).
    pub fn start(config: EapConfig, identifier: u8) -> (EapServer, Eap) {
        let req = Eap::request(identifier, EapType::IDENTITY, Vec::new());
        (EapServer { config, identifier, phase: Phase::Identity }, req)
    }

    fn fail(&self, error: Error) -> EapStep {
        EapStep::Failure(Eap::result(self.identifier, false), error)
    }

    /// The peer's next EAP packet. `challenge` is 16 fresh random octets (used when the
    /// Identity response arrives).
    pub fn handle(mut self, eap: &Eap, challenge: [u8; 16]) -> EapStep {
        // RFC 3748 §4.1: a Response answers the Request with the same Identifier.
        if eap.code != EapCode::RESPONSE {
            return self.fail(eap_error("not a Response"));
        }
        if eap.identifier != self.identifier {
            return self.fail(eap_error("Identifier does not match the Request"));
        }
        let next_id = self.identifier.wrapping_add(1);
        match (std::mem::replace(&mut self.phase, Phase::Identity), eap.eap_type()) {
            (Phase::Identity, Some(EapType::IDENTITY)) => {
                // The identity is a hint only: the MS-CHAPv2 Response's Name is what the
                // password is checked for.
                let mschap_id = next_id;
                let m = MsChapV2::Challenge {
                    id: mschap_id,
                    challenge,
                    name: AUTHENTICATOR_NAME.to_vec(),
                };
                self.request(next_id, &m, Phase::Challenge { challenge, mschap_id })
            }
            (Phase::Challenge { challenge, mschap_id }, Some(EapType::MSCHAPV2)) => {
                let m = match MsChapV2::parse(eap.code, eap.type_data()) {
                    Ok(m) => m,
                    Err(e) => return self.fail(Error::InvalidMessage(e)),
                };
                let MsChapV2::Response { id, peer_challenge, nt_response, name, .. } = m else {
                    return self.fail(eap_error("MS-CHAPv2 Response expected"));
                };
                if id != mschap_id {
                    return self.fail(eap_error("MS-CHAPv2-ID does not match the Challenge"));
                }
                // An unknown user fails as a wrong password does, so that user names cannot
                // be probed.
                let Some(u) = self.config.user(&name) else {
                    return self.fail(PeerMisbehaved::EapAuthenticationFailed.into());
                };
                let hash = u.password_hash.clone();
                let want =
                    mschapv2::generate_nt_response(&challenge, &peer_challenge, &name, &hash);
                if !crypto::provider::constant_time_eq(&want, &nt_response) {
                    return self.fail(PeerMisbehaved::EapAuthenticationFailed.into());
                }
                let a = mschapv2::authenticator_response(
                    &hash,
                    &nt_response,
                    &peer_challenge,
                    &challenge,
                    &name,
                );
                let msk = mschapv2::msk(&hash, &nt_response);
                let message = mschapv2::success_message(&a, "welcome");
                let user = u.identity.clone();
                let m = MsChapV2::SuccessRequest { id: mschap_id, message };
                self.request(next_id, &m, Phase::SuccessSent { user, msk })
            }
            (Phase::SuccessSent { user, msk }, Some(EapType::MSCHAPV2)) => {
                match MsChapV2::parse(eap.code, eap.type_data()) {
                    Ok(MsChapV2::SuccessResponse) => {
                        EapStep::Success { eap: Eap::result(eap.identifier, true), user, msk }
                    }
                    Ok(_) => self.fail(eap_error("MS-CHAPv2 Success ack expected")),
                    Err(e) => self.fail(Error::InvalidMessage(e)),
                }
            }
            // A Nak (RFC 3748 §5.3) or any other type: the peer will not do MS-CHAPv2.
            _ => self.fail(eap_error("unexpected EAP type (EAP-MSCHAPv2 only)")),
        }
    }

    fn request(mut self, identifier: u8, m: &MsChapV2, phase: Phase) -> EapStep {
        self.identifier = identifier;
        match m.to_bytes() {
            Ok(data) => {
                self.phase = phase;
                let req = Eap::request(identifier, EapType::MSCHAPV2, data);
                EapStep::Request(self, req)
            }
            Err(e) => self.fail(Error::Emit(e)),
        }
    }
}
