//! Crypto for hipsec: the algorithm catalogue (IKEv2/ESP transform names), a provider trait
//! with in-place AEAD, CBC and HMAC operations, an aws-lc-rs provider, IKEv2's (EC)DH groups,
//! signatures, PRFs and the NAT-detection hash (`dh`, `sign`, `prf`, `digest`), RustCrypto for 3DES (the only
//! legacy suite aws-lc-rs does not expose) and a null provider for fuzzing and stack-cost benches.
//!
//! Read first: RFC 8221 (which algorithms are current, which legacy), RFC 4106, RFC 7634, RFC 4868.
#![forbid(unsafe_code)]

pub mod alg;
pub mod awslc;
pub mod dh;
pub mod digest;
pub mod ecdsa;
mod legacy;
mod modp;
pub mod null;
pub mod prf;
pub mod provider;
mod rng_pool;
pub mod rsa;
pub mod sign;
pub mod wireshark;
pub mod x509_algs;

pub use alg::{AeadAlg, CbcAlg, EncrAlg, EspSuite, HmacAlg, IntegAlg, SuiteError};
pub use awslc::AwsLcProvider;
pub use dh::{DhGroup, KeyExchange, SharedSecret};
pub use ecdsa::{EcCurve, EcdsaKey};
pub use null::NullProvider;
pub use prf::{Prf, PrfAlg};
pub use provider::{Aead, BlockCipher, CryptoError, Mac, Provider, random_spi};
pub use rsa::RsaKey;
pub use sign::{SignatureAlg, SigningKey};

/// The default provider: aws-lc-rs (with RustCrypto for 3DES).
pub fn default_provider() -> &'static dyn Provider {
    &AwsLcProvider
}
