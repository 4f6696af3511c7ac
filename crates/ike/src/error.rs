//! Errors of the IKEv2 core, split by who is at fault (the rustls shape): the peer's bytes did not
//! parse, the peer broke a protocol rule, our configuration cannot do what was asked, or the
//! crypto library failed. `Display` names the field or rule. Read RFC 7296 §2.21 for which of
//! these a peer is told about (and with which notify).

use crypto::CryptoError;
use wire::ikev2::{IkeError, NotifyType};

/// A protocol rule the peer broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerMisbehaved {
    /// The SK payload's ICV or AEAD tag did not verify (§3.14).
    #[error("encrypted payload: integrity check failed")]
    IntegrityCheckFailed,
    /// The decrypted SK payload's pad length points outside it (§3.14).
    #[error("encrypted payload: pad length {0} exceeds the plaintext")]
    BadPadLength(usize),
    /// The SK payload is shorter than IV + ICV, or not whole cipher blocks (§3.14).
    #[error("encrypted payload: {0} bytes do not fit IV, whole blocks and ICV")]
    BadSkLength(usize),
    /// A message that must be encrypted has no SK payload, or one that must not, has one.
    #[error("message {exchange}: encrypted payload missing or misplaced")]
    SkMissing {
        /// Exchange type, by name.
        exchange: String,
    },
    /// A payload the exchange requires is absent.
    #[error("message {exchange}: required {payload} payload missing")]
    MissingPayload {
        /// Exchange type, by name.
        exchange: String,
        /// Payload type, by name.
        payload: &'static str,
    },
    /// The peer's chosen proposal is not one we offered, or has more than one transform per type.
    #[error("sa: the responder chose a proposal we did not offer ({0})")]
    ProposalNotOffered(&'static str),
    /// The KE payload's group differs from the one in the chosen proposal, or its data length.
    #[error("ke: group {got} or its length does not match the proposal's group {want}")]
    KeMismatch {
        /// Group in the KE payload.
        got: u16,
        /// Group of the chosen proposal.
        want: u16,
    },
    /// The AUTH payload did not verify (§2.15).
    #[error("auth: the peer's AUTH payload does not verify (method {0})")]
    AuthenticationFailed(u8),
    /// The peer's certificate chain was refused (expired, unknown issuer, revoked serial,
    /// identity not in the certificate, ...).
    #[error("certificate: {0}")]
    Certificate(crate::cert::CertError),
    /// The peer's identity is not the one configured.
    #[error("id: peer identity does not match the configured remote id")]
    UnexpectedIdentity,
    /// A message arrived that this state does not expect (exchange, flags or message ID).
    #[error("unexpected message: {0}")]
    UnexpectedMessage(&'static str),
    /// The peer answered with an error notify.
    #[error("peer sent error notify {0}")]
    ErrorNotify(NotifyType),
    /// The peer's public value was refused by the group (not on the curve, all-zero result).
    #[error("ke: public value refused by the group")]
    BadPublicValue,
    /// The peer broke the EAP exchange (RFC 3748, or the EAP method's rules).
    #[error("eap: {0}")]
    Eap(&'static str),
    /// The EAP method refused the peer's credentials (an unknown user or a wrong password).
    #[error("eap: authentication failed")]
    EapAuthenticationFailed,
    /// The narrowed traffic selectors are not within what we proposed (§2.9).
    #[error("ts: the responder's traffic selectors are not within ours")]
    TrafficSelectorsNotNarrowed,
}

/// Something our configuration cannot do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A transform or combination we do not implement was configured.
    #[error("unsupported algorithm: {0}")]
    UnsupportedAlgorithm(&'static str),
    /// A key has the wrong length for its algorithm.
    #[error("{what}: key is {got} bytes, want {want}")]
    KeyLength {
        /// Which key.
        what: &'static str,
        /// Length supplied.
        got: usize,
        /// Length wanted.
        want: usize,
    },
    /// No proposal configured.
    #[error("no proposals configured")]
    NoProposals,
}

/// Any error of the IKE core.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The peer's bytes are not a valid message (peer at fault).
    #[error("peer sent an invalid message: {0}")]
    InvalidMessage(IkeError),
    /// The peer broke a protocol rule (peer at fault).
    #[error("peer misbehaved: {0}")]
    PeerMisbehaved(#[from] PeerMisbehaved),
    /// Our configuration is at fault.
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    /// The crypto library failed, or refused a key we built (our fault).
    #[error("crypto: {0}")]
    Crypto(#[from] CryptoError),
    /// We built a message the codec refused (a bug here).
    #[error("building a message: {0}")]
    Emit(IkeError),
    /// Our request came to nothing through no one's fault: our CHILD SA rekey lost a
    /// simultaneous rekey of the same pair by the peer (§2.8.1: the peer's pair replaces it),
    /// or the pair went away meanwhile (§2.25). The pair our exchange made is deleted.
    #[error("request superseded: {0}")]
    Superseded(&'static str),
}

impl Error {
    /// True when the peer is at fault (the message should be dropped and counted, §2.21).
    pub fn is_peer_fault(&self) -> bool {
        matches!(self, Error::InvalidMessage(_) | Error::PeerMisbehaved(_))
    }

    /// The payload type of an unknown payload marked critical, when that is what is wrong
    /// with the message (§2.5: a request is answered with UNSUPPORTED_CRITICAL_PAYLOAD).
    pub fn unsupported_critical(&self) -> Option<u8> {
        match self {
            Error::InvalidMessage(IkeError::UnsupportedCriticalPayload { payload_type }) => {
                Some(*payload_type)
            }
            _ => None,
        }
    }
}
