//! What the driver gives the exchanges (a connection's configuration and the datagram's
//! addresses) and what it gets back when an IKE SA with its first CHILD SA is up: the install
//! request for the data path. Modelled on swanctl.conf's connection/children sections.

use crate::cert::TrustStore;
use crate::error::ConfigError;
use crate::keys::Secret;
use crate::suite::{ChildSuite, IkeSuite};
use crypto::{SignatureAlg, SigningKey};
use std::net::SocketAddr;
use std::sync::Arc;
use wire::ikev2::{Id, TrafficSelector};

/// How the two ends prove who they are (RFC 7296 §2.15, RFC 7427).
#[derive(Clone)]
pub enum AuthConfig {
    /// A pre-shared key, used for both directions (AUTH method 2).
    Psk(Secret),
    /// Digital signatures (AUTH method 14, RFC 7427): our private key, and the peer's public
    /// key, configured (no certificates yet).
    Signature {
        /// Our signing key.
        key: Arc<SigningKey>,
        /// The peer's raw public key (32 bytes Ed25519, 65-byte uncompressed P-256 point).
        peer_public_key: Vec<u8>,
        /// The algorithm the peer signs with.
        peer_alg: SignatureAlg,
    },
    /// X.509 certificates (RFC 7296 §3.6–3.8): our key signs AUTH (method 14, RFC 7427) and
    /// our chain goes in CERT payloads; the peer's chain must validate to one of `trust`'s
    /// anchors, name the peer's identity, and its end entity's key must verify the peer's AUTH.
    Certificate {
        /// Our signing key (the one our end-entity certificate certifies).
        key: Arc<SigningKey>,
        /// Our chain, DER, end entity first, then intermediates (not the root).
        chain: Vec<Vec<u8>>,
        /// Trust anchors and CRLs for the peer's chain.
        trust: Arc<TrustStore>,
        /// The Unix time, in seconds, of the driver's time zero: certificate validity is
        /// checked at this plus the exchange's time.
        epoch_unix_s: u64,
    },
}

impl std::fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthConfig::Psk(_) => f.write_str("Psk(..)"),
            AuthConfig::Signature { key, peer_alg, .. } => f
                .debug_struct("Signature")
                .field("alg", &key.alg())
                .field("peer_alg", peer_alg)
                .finish_non_exhaustive(),
            AuthConfig::Certificate { key, chain, .. } => f
                .debug_struct("Certificate")
                .field("alg", &key.alg())
                .field("chain_len", &chain.len())
                .finish_non_exhaustive(),
        }
    }
}

/// ESP encapsulation mode of the CHILD SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Tunnel mode (the default of §1.3.1).
    Tunnel,
    /// Transport mode, asked for with USE_TRANSPORT_MODE.
    Transport,
}

/// One connection: identities, credentials, proposals and the first CHILD SA's selectors.
#[derive(Debug, Clone)]
pub struct Config {
    /// Our identity (IDi as initiator, IDr as responder).
    pub local_id: Id,
    /// The peer's identity we accept; `None` accepts any the PSK authenticates.
    pub remote_id: Option<Id>,
    /// Our credentials, and the peer's (the PSK is shared).
    pub auth: AuthConfig,
    /// IKE SA proposals in our order of preference; the first one's group is sent in KE.
    pub ike_suites: Vec<IkeSuite>,
    /// CHILD SA proposals in our order of preference (no PFS in IKE_AUTH, §1.2).
    pub child_suites: Vec<ChildSuite>,
    /// Traffic we protect on our side (TSi as initiator).
    pub local_ts: Vec<TrafficSelector>,
    /// Traffic we protect on the peer's side.
    pub remote_ts: Vec<TrafficSelector>,
    /// Tunnel or transport.
    pub mode: Mode,
    /// Further CHILD SAs of the connection, in the config's order: made with CREATE_CHILD_SA
    /// after IKE_AUTH (§1.3.1) when we initiate, and picked by their selectors when the peer
    /// asks for one.
    pub more_children: Vec<ChildPolicy>,
    /// The peer authenticates with EAP (RFC 7296 §2.16) instead of AUTH (swanctl's `remote {
    /// auth = eap-mschapv2 }`), as responder only; we still sign our AUTH with `auth`'s key.
    pub peer_eap: Option<crate::eap::EapConfig>,
}

/// A CHILD SA's selectors, mode and proposals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildPolicy {
    /// Its proposals in our order of preference (with their PFS groups).
    pub suites: Vec<ChildSuite>,
    /// Traffic we protect on our side.
    pub local_ts: Vec<TrafficSelector>,
    /// Traffic we protect on the peer's side.
    pub remote_ts: Vec<TrafficSelector>,
    /// Tunnel or transport.
    pub mode: Mode,
}

impl Config {
    /// Every CHILD SA policy of the connection: the first (IKE_AUTH's), then the others.
    pub fn child_policies(&self) -> Vec<ChildPolicy> {
        let first = ChildPolicy {
            suites: self.child_suites.clone(),
            local_ts: self.local_ts.clone(),
            remote_ts: self.remote_ts.clone(),
            mode: self.mode,
        };
        std::iter::once(first).chain(self.more_children.iter().cloned()).collect()
    }

    /// Checks the configuration once, before any exchange.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.ike_suites.is_empty() || self.child_suites.is_empty() {
            return Err(ConfigError::NoProposals);
        }
        for s in &self.ike_suites {
            s.validate()?;
        }
        for c in &self.child_suites {
            c.to_proposal(1, 0x100)?;
        }
        if self.local_ts.is_empty() || self.remote_ts.is_empty() {
            return Err(ConfigError::UnsupportedAlgorithm("empty traffic selectors"));
        }
        // §2.16, of EAP methods: "these protocols are typically used to authenticate the
        // initiator to the responder and MUST be used in conjunction with a
        // public-key-signature-based authentication of the responder to the initiator." EAP
        // behind a PSK (or EAP-only, RFC 5998) is not offered.
        if self.peer_eap.is_some() && matches!(self.auth, AuthConfig::Psk(_)) {
            return Err(ConfigError::UnsupportedAlgorithm(
                "EAP needs our certificate or signature key, not a PSK",
            ));
        }
        for c in &self.more_children {
            if c.suites.is_empty() {
                return Err(ConfigError::NoProposals);
            }
            for s in &c.suites {
                s.to_proposal(1, 0x100)?;
            }
            if c.local_ts.is_empty() || c.remote_ts.is_empty() {
                return Err(ConfigError::UnsupportedAlgorithm("empty traffic selectors"));
            }
        }
        Ok(())
    }
}

/// The addresses a datagram travelled between, as the driver's socket saw them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoints {
    /// Our address and port.
    pub local: SocketAddr,
    /// The peer's address and port.
    pub remote: SocketAddr,
}

/// What NAT detection found (§2.23).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NatStatus {
    /// Our address is translated: we should float to port 4500 and send keepalives.
    pub local_behind_nat: bool,
    /// The peer's address is translated.
    pub remote_behind_nat: bool,
}

/// The request to install one CHILD SA pair in the data path: SPIs, suite, keys (AEAD keys end
/// in their 4-byte salt) and selectors. "In" is the SA we receive on, "out" the one we send on.
pub struct ChildSaKeys {
    /// Algorithms, ESN.
    pub suite: ChildSuite,
    /// Tunnel or transport.
    pub mode: Mode,
    /// SPI of the inbound SA (chosen by us).
    pub spi_in: u32,
    /// SPI of the outbound SA (chosen by the peer).
    pub spi_out: u32,
    /// Encryption key of the inbound SA.
    pub enc_key_in: Secret,
    /// Integrity key of the inbound SA (empty with an AEAD).
    pub auth_key_in: Secret,
    /// Encryption key of the outbound SA.
    pub enc_key_out: Secret,
    /// Integrity key of the outbound SA.
    pub auth_key_out: Secret,
    /// Our side's traffic, as narrowed by the exchange.
    pub local_ts: Vec<TrafficSelector>,
    /// The peer's side's traffic.
    pub remote_ts: Vec<TrafficSelector>,
}

impl std::fmt::Debug for ChildSaKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildSaKeys")
            .field("suite", &self.suite)
            .field("mode", &self.mode)
            .field("spi_in", &format_args!("{:#010x}", self.spi_in))
            .field("spi_out", &format_args!("{:#010x}", self.spi_out))
            .field("local_ts", &self.local_ts)
            .field("remote_ts", &self.remote_ts)
            .finish_non_exhaustive()
    }
}
