//! Sans-IO IKEv2 (RFC 7296): algorithm suites and proposal selection, the key schedule, the
//! encrypted payload, and the exchanges that set up an IKE SA and its first CHILD SA. No sockets,
//! threads or clocks: the driver (in `node`) feeds datagrams in and sends what comes out.
//!
//! Read first: RFC 7296 §1.2 (the initial exchanges), §2.13–2.18 (keys), §3.14 (SK payload).
//!
//! The driver's loop for the initiator: [`initiator::start`] gives an [`InitiatorSaInit`] and the
//! first datagram; each datagram from the peer goes to the state's `handle`, which returns the
//! next state and the datagram to send, or [`Rejected`] (`Dropped`: count it and keep the
//! state; `Failed`: the exchange is over). The responder: [`Responder::handle_init`] for
//! IKE_SA_INIT (stateless refusals, or a half-open [`ResponderAuth`]), whose `handle` takes
//! IKE_AUTH. Both ends finish with an [`Established`]: the IKE SA and a [`ChildSaKeys`] install
//! request. Times are milliseconds the driver passes in ([`Retransmit`] for §2.1 back-off).
//!
//! Authentication: PSK (§2.15), or RFC 7427 signatures with configured raw public keys
//! (Ed25519, ECDSA P-256) or with X.509 certificates (§3.6–3.8: CERT and CERTREQ payloads, the
//! peer's chain validated by [`cert::TrustStore`] and its identity matched to the certificate). Once up, [`Session::new`] takes the IKE SA: the driver passes it datagrams
//! ([`Session::handle`]), deadlines ([`Session::on_timeout`]) and [`Request`]s (liveness,
//! DELETE, a new CHILD SA, CHILD SA rekey with optional PFS, IKE SA rekey) and acts on its
//! [`Event`]s (install/remove CHILD SA pairs make-before-break, new IKE SPIs after a rekey).
//!
//! The whole life of an IKE SA is in [`assoc`]: an [`assoc::Endpoint`] owns every connection
//! and association, in quinn-proto's shape (`handle`, `handle_timeout`, `poll_timeout`,
//! `poll_transmit`, `poll_event`, and the commands `initiate`, `rekey_child`, `rekey_ike`,
//! `terminate`), with the rekey schedule, retries with back-off, DPD and INITIAL_CONTACT; its
//! clock is [`Time`], microseconds since an epoch the caller owns. `tests/sim/` is the simulated
//! network that tests it over thousands of seeds.
//!
//! EAP (§2.16) as responder: [`ResponderAuth::handle`] answers an IKE_AUTH request without
//! AUTH with our signature and an EAP Request ([`AuthOutcome::Eap`]); the [`ResponderEap`]
//! state takes the further IKE_AUTH rounds ([`eap`]: EAP-MSCHAPv2) and the AUTH keyed by the MSK.
//!
//! Road warriors (§2.19, §3.15): [`pool`] leases virtual IPs per peer identity and [`mod@cfg`]
//! answers CP(CFG_REQUEST) in IKE_AUTH with them (or asks for one, as initiator).
//!
//! Not here yet: simultaneous IKE SA rekeys (§2.8.2), message-ID windows above
//! one, and keeping the IKE SA up when only its first CHILD SA fails (§2.21.3: here the whole
//! exchange fails).
#![forbid(unsafe_code)]

pub mod assoc;
pub mod auth;
pub mod cert;
pub mod cfg;
pub mod config;
mod create_child;
pub mod eap;
pub mod error;
mod ike_rekey;
pub mod initiator;
pub mod keys;
pub mod pool;
pub mod responder;
pub mod responder_eap;
pub mod sa;
pub mod session;
pub mod sk;
pub mod suite;
pub mod time;
pub mod wireshark;

pub use config::{AuthConfig, ChildPolicy, ChildSaKeys, Config, Endpoints, Mode, NatStatus};
pub use error::{ConfigError, Error, PeerMisbehaved};
pub use initiator::{InitiatorAuth, InitiatorSaInit, SaInitNext};
pub use keys::{ChildKeyMat, IkeSaKeys, Secret};
pub use responder::{AuthOutcome, InitOutcome, Responder, ResponderAuth};
pub use responder_eap::ResponderEap;
pub use sa::{Established, IkeSa, Rejected, Retransmit};
pub use session::{ChildSa, Event, Output, Request, Session};
pub use sk::Role;
pub use suite::{ChildSuite, IkeSuite};
pub use time::Time;
