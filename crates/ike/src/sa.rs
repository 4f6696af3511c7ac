//! What the initial exchanges share: an established IKE SA (RFC 7296 §2.14 keys, §2.23 NAT
//! status), the request retransmission timer on a virtual clock (§2.1: the initiator
//! retransmits with back-off; times are milliseconds given by the driver), the "message dropped,
//! state kept" result, and small builders.

use crate::config::{ChildSaKeys, NatStatus};
use crate::error::{Error, PeerMisbehaved};
use crate::keys::IkeSaKeys;
use crate::sk::{Role, SkKeys};
use crate::suite::IkeSuite;
use crypto::Provider;
use wire::ikev2::{ExchangeType, Flags, Header, Message, Notify, NotifyType, Payload};

/// First retransmission after this long (§2.1 leaves the timing to us; strongSwan uses 4 s).
pub const RETRANSMIT_BASE_MS: u64 = 1_000;
/// Retransmissions before giving up.
pub const RETRANSMIT_TRIES: u32 = 5;
/// How long a responder keeps a half-open IKE SA waiting for IKE_AUTH.
pub const HALF_OPEN_TIMEOUT_MS: u64 = 30_000;
/// Nonce length we send (§2.10: at least half the PRF key size; 32 covers SHA2-512's 64/2).
pub const NONCE_LEN: usize = 32;

/// Why a state did not move on.
#[derive(Debug)]
pub enum Rejected<S> {
    /// The message was dropped and the state is given back unchanged (count it; §2.21:
    /// nothing is sent back for an unauthenticated bad message).
    Dropped {
        /// The unchanged state.
        state: Box<S>,
        /// Why the message was dropped.
        error: Error,
    },
    /// The exchange failed for good; the state is gone.
    Failed(Error),
}

impl<S> Rejected<S> {
    /// The reason.
    pub fn error(&self) -> &Error {
        match self {
            Rejected::Dropped { error, .. } | Rejected::Failed(error) => error,
        }
    }

    /// The state, if the exchange goes on.
    pub fn into_state(self) -> Option<S> {
        match self {
            Rejected::Dropped { state, .. } => Some(*state),
            Rejected::Failed(_) => None,
        }
    }
}

/// The retransmission timer of an outstanding request.
#[derive(Debug, Clone)]
pub struct Retransmit {
    request: Vec<u8>,
    next_ms: u64,
    tries: u32,
}

impl Retransmit {
    /// A request sent at `now_ms`.
    pub fn new(request: Vec<u8>, now_ms: u64) -> Retransmit {
        Retransmit { request, next_ms: now_ms.saturating_add(RETRANSMIT_BASE_MS), tries: 0 }
    }

    /// When the driver should call [`Retransmit::on_timeout`] next.
    pub fn deadline_ms(&self) -> u64 {
        self.next_ms
    }

    /// The request bytes, as last sent.
    pub fn request(&self) -> &[u8] {
        &self.request
    }

    /// At or after the deadline: the bytes to send again (doubling the wait each time), or
    /// `Err` once the tries are used up and the exchange has failed. Before it: `Ok(None)`.
    pub fn on_timeout(&mut self, now_ms: u64) -> Result<Option<&[u8]>, Error> {
        if now_ms < self.next_ms {
            return Ok(None);
        }
        if self.tries >= RETRANSMIT_TRIES {
            return Err(
                PeerMisbehaved::UnexpectedMessage("no response after all retransmissions").into()
            );
        }
        self.tries += 1;
        self.next_ms = now_ms.saturating_add(RETRANSMIT_BASE_MS << self.tries);
        Ok(Some(&self.request))
    }
}

/// An established IKE SA.
pub struct IkeSa {
    /// Which end we are.
    pub role: Role,
    /// Initiator's SPI.
    pub spi_i: u64,
    /// Responder's SPI.
    pub spi_r: u64,
    /// Negotiated transforms.
    pub suite: IkeSuite,
    /// What NAT detection found.
    pub nat: NatStatus,
    /// The seven keys (SK_d derives CHILD SA keys and the next SKEYSEED).
    pub keys: IkeSaKeys,
    /// The SK payload keys.
    pub sk: SkKeys,
    /// Message ID of our next request (§2.2: IKE_SA_INIT is 0, IKE_AUTH 1).
    pub next_request_id: u32,
    /// Message ID we expect of the peer's next request.
    pub next_peer_request_id: u32,
    /// The last response we sent, for answering a retransmitted request (§2.1).
    pub last_response: Option<Vec<u8>>,
}

impl std::fmt::Debug for IkeSa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IkeSa")
            .field("role", &self.role)
            .field("spi_i", &format_args!("{:016x}", self.spi_i))
            .field("spi_r", &format_args!("{:016x}", self.spi_r))
            .field("suite", &self.suite)
            .field("nat", &self.nat)
            .finish_non_exhaustive()
    }
}

/// An IKE SA with its first CHILD SA, ready for the data path.
#[derive(Debug)]
pub struct Established {
    /// The IKE SA (kept by the driver for CREATE_CHILD_SA and INFORMATIONAL, not yet here).
    pub ike: IkeSa,
    /// The CHILD SA to install; `None` when it failed and the IKE SA stands without it
    /// (§1.2: "If creating the Child SA during the IKE_AUTH exchange fails for some reason, the
    /// IKE SA is still created as usual").
    pub child: Option<ChildSaKeys>,
    /// Why the CHILD SA of IKE_AUTH failed (the error notify either way), when it did.
    pub child_error: Option<Error>,
    /// The identity the peer authenticated (its IDi or IDr).
    pub peer_id: wire::ikev2::Id,
    /// The peer's IKE_AUTH message carried INITIAL_CONTACT (§2.4): it holds no other IKE SA
    /// with us, so every other one we hold with this identity is stale.
    pub initial_contact: bool,
    /// Virtual IPs (RFC 7296 §2.19): as responder, what we leased to the peer; as initiator,
    /// what the peer's CFG_REPLY granted us. Empty without a CP exchange.
    pub vip: crate::pool::Grant,
}

pub(crate) fn random<const N: usize>(p: &dyn Provider) -> Result<[u8; N], Error> {
    let mut b = [0u8; N];
    p.fill_random(&mut b)?;
    Ok(b)
}

/// A non-zero random IKE SPI.
pub(crate) fn random_ike_spi(p: &dyn Provider) -> Result<u64, Error> {
    loop {
        let s = u64::from_be_bytes(random(p)?);
        if s != 0 {
            return Ok(s);
        }
    }
}

pub(crate) fn header(
    spi_i: u64,
    spi_r: u64,
    ex: ExchangeType,
    role: Role,
    response: bool,
    id: u32,
) -> Header {
    Header {
        spi_i,
        spi_r,
        exchange_type: ex,
        flags: Flags { initiator: role == Role::Initiator, version: false, response },
        message_id: id,
    }
}

pub(crate) fn emit(m: &Message) -> Result<Vec<u8>, Error> {
    m.to_vec().map_err(Error::Emit)
}

pub(crate) fn notify(ty: NotifyType, data: Vec<u8>) -> Payload {
    Payload::Notify(Notify::new(ty, data))
}

/// The first error notify among `payloads`, if any (§3.10.1: types below 16384).
pub(crate) fn error_notify(payloads: &[Payload]) -> Option<NotifyType> {
    payloads.iter().find_map(|p| match p {
        Payload::Notify(n) if n.notify_type.is_error() => Some(n.notify_type),
        _ => None,
    })
}

pub(crate) fn find_notify(payloads: &[Payload], ty: NotifyType) -> Option<&Notify> {
    payloads.iter().find_map(|p| match p {
        Payload::Notify(n) if n.notify_type == ty => Some(n),
        _ => None,
    })
}

macro_rules! take_payload {
    ($payloads:expr, $variant:ident) => {
        $payloads.iter().find_map(|p| match p {
            wire::ikev2::Payload::$variant(x) => Some(x),
            _ => None,
        })
    };
}
pub(crate) use take_payload;

pub(crate) fn missing(ex: ExchangeType, payload: &'static str) -> Error {
    PeerMisbehaved::MissingPayload { exchange: ex.to_string(), payload }.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retransmit_backs_off_then_gives_up() {
        let mut r = Retransmit::new(vec![1, 2, 3], 10_000);
        assert_eq!(r.on_timeout(10_999).unwrap(), None);
        let mut at = r.deadline_ms();
        assert_eq!(at, 11_000);
        let mut gaps = Vec::new();
        for _ in 0..RETRANSMIT_TRIES {
            assert_eq!(r.on_timeout(at).unwrap(), Some(&[1u8, 2, 3][..]));
            gaps.push(r.deadline_ms() - at);
            at = r.deadline_ms();
        }
        assert_eq!(gaps, vec![2_000, 4_000, 8_000, 16_000, 32_000]);
        assert!(r.on_timeout(at).is_err());
    }
}
