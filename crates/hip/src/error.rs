//! What went wrong, and whose fault it is: a peer's packet or our own configuration.

use crypto::CryptoError;

/// A HIP error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The peer sent something the RFC forbids or we cannot use (names the field).
    #[error("peer: {0}")]
    Peer(String),
    /// A host identity, key file or setting of ours is unusable.
    #[error("config: {0}")]
    Config(String),
    /// The crypto library failed (not the peer's doing).
    #[error("crypto: {0}")]
    Crypto(#[from] CryptoError),
}
